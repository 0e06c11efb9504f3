//! The kernel's string parsers as zram's sysfs handlers use them, so that every attribute accepts
//! and rejects exactly what the kernel does: lib/cmdline.c `memparse()` (lenient: a number with
//! an optional K/M/G/T/P/E suffix, garbage after it ignored, no number = 0), the strict
//! lib/kstrtox.c `kstrto*()` family (optional `+`, digits, at most one trailing newline),
//! lib/string_helpers.c `sysfs_streq()`, and lib/cmdline.c `next_arg()`, the `key=value`
//! tokenizer of `algorithm_params`, `recompress` and `writeback`.

use crate::errno::{Errno, ZramError, err};

/// Splits off a radix prefix as lib/kstrtox.c `_parse_integer_fixup_radix()` does: for base 0,
/// `0x` followed by a hex digit is hex, another leading `0` octal; for base 16 a `0x` is
/// skipped.
fn fixup_radix(s: &str, base: u32) -> (&str, u32) {
    let b = s.as_bytes();
    let hex_prefix = b.len() >= 2 && b[0] == b'0' && (b[1] | 0x20) == b'x';
    match base {
        0 if hex_prefix && b.len() > 2 && b[2].is_ascii_hexdigit() => (&s[2..], 16),
        0 if b.first() == Some(&b'0') => (s, 8),
        0 => (s, 10),
        16 if hex_prefix => (&s[2..], 16),
        _ => (s, base),
    }
}

/// Parses the longest run of digits; returns (value, digits consumed, overflowed). As
/// lib/kstrtox.c `_parse_integer_limit()`: an overflowing value keeps wrapping.
fn parse_digits(s: &str, base: u32) -> (u64, usize, bool) {
    let mut value: u64 = 0;
    let mut overflow = false;
    let mut n = 0;
    for c in s.chars() {
        let Some(d) = c.to_digit(base) else { break };
        match value.checked_mul(base as u64).and_then(|v| v.checked_add(d as u64)) {
            Some(v) => value = v,
            None => {
                overflow = true;
                value = value.wrapping_mul(base as u64).wrapping_add(d as u64);
            }
        }
        n += 1;
    }
    (value, n, overflow)
}

/// The shift of one of `memparse`'s binary suffixes (K, M, G, T, P, E, either case).
fn suffix_shift(c: char) -> Option<u32> {
    match c.to_ascii_uppercase() {
        'K' => Some(10),
        'M' => Some(20),
        'G' => Some(30),
        'T' => Some(40),
        'P' => Some(50),
        'E' => Some(60),
        _ => None,
    }
}

/// lib/cmdline.c `memparse()`: `simple_strtoull(ptr, &end, 0)` (base from its prefix; no sign,
/// no leading space) with an optional binary suffix. Never fails; what cannot be read reads as
/// 0, as in the kernel, and callers decide what 0 means.
pub fn memparse(s: &str) -> u64 {
    let (digits, base) = fixup_radix(s, 0);
    let (value, n, _) = parse_digits(digits, base);
    let shift = digits[n..].chars().next().and_then(suffix_shift).unwrap_or(0);
    // Bits shifted out of 64 are lost, as in the kernel's repeated `ret <<= 10`.
    value << shift
}

/// A size as `memparse` reads it, strictly, for sizes given on a command line: the same number
/// (decimal, `0x` hex or `0` octal) and K/M/G/T/P/E suffix (1024-based, either case), but text
/// that is not a whole size is an error instead of 0 or ignored garbage, and so is a size past
/// 64 bits. Surrounding whitespace, a leading `+` and spaces before the suffix are allowed.
pub fn parse_size(s: &str) -> Result<u64, ZramError> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let (digits, base) = fixup_radix(t, 0);
    let (value, n, overflow) = parse_digits(digits, base);
    if n == 0 {
        return err(Errno::EINVAL, format!("{s:?} is not a size (a number with K, M, G or T)"));
    }
    let rest = digits[n..].trim_start();
    let mut chars = rest.chars();
    let shift = match (chars.next(), chars.next()) {
        (None, _) => 0,
        (Some(c), None) => match suffix_shift(c) {
            Some(shift) => shift,
            None => {
                return err(
                    Errno::EINVAL,
                    format!("{s:?}: unknown suffix {c:?} (use K, M, G, T, P or E)"),
                );
            }
        },
        _ => return err(Errno::EINVAL, format!("{s:?}: trailing {rest:?} after the size")),
    };
    match value.checked_mul(1 << shift) {
        Some(v) if !overflow => Ok(v),
        _ => err(Errno::ERANGE, format!("size {s:?} does not fit in 64 bits")),
    }
}

/// lib/kstrtox.c `kstrtoull(s, base)`: strict unsigned parse (one leading `+`; ERANGE on
/// overflow, EINVAL for no digit or anything but one `\n` after them).
pub fn kstrtoull(s: &str, base: u32) -> Result<u64, ZramError> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, base) = fixup_radix(s, base);
    let (value, n, overflow) = parse_digits(digits, base);
    if n == 0 {
        return err(Errno::EINVAL, format!("{s:?} is not a number"));
    }
    if overflow {
        return err(Errno::ERANGE, format!("{s:?} is out of range"));
    }
    match &digits[n..] {
        "" | "\n" => Ok(value),
        rest => err(Errno::EINVAL, format!("trailing {rest:?} after the number")),
    }
}

/// lib/kstrtox.c `kstrtoll(s, base)`: strict signed parse (a leading `-`, then `kstrtoull`).
pub fn kstrtoll(s: &str, base: u32) -> Result<i64, ZramError> {
    match s.strip_prefix('-') {
        Some(rest) => {
            let v = kstrtoull(rest, base)?;
            if v > i64::MAX as u64 + 1 {
                return err(Errno::ERANGE, format!("-{rest:?} is out of range"));
            }
            Ok((v as i64).wrapping_neg())
        }
        None => {
            let v = kstrtoull(s, base)?;
            i64::try_from(v).or_else(|_| err(Errno::ERANGE, format!("{s:?} is out of range")))
        }
    }
}

/// `kstrtoint`, `kstrtouint`, `kstrtou16`: a strict parse narrowed to the type, ERANGE outside.
///
/// As in lib/kstrtox.c, the signed wrappers go through `kstrtoll` (a leading `-` allowed) and
/// the unsigned ones through `kstrtoull`, where `-` is no digit: `kstrtou16("-1")` is EINVAL,
/// not ERANGE.
pub fn kstrto<T: TryFrom<i64> + TryFrom<u64>>(s: &str, base: u32) -> Result<T, ZramError> {
    let signed = <T as TryFrom<i64>>::try_from(-1).is_ok();
    if !signed {
        return kstrtou(s, base);
    }
    let v = kstrtoll(s, base)?;
    T::try_from(v).or_else(|_| err(Errno::ERANGE, format!("{v} is out of range")))
}

/// Unsigned variant that accepts the whole u64 range (`kstrtoull` narrowed to `T`).
pub fn kstrtou<T: TryFrom<u64>>(s: &str, base: u32) -> Result<T, ZramError> {
    let v = kstrtoull(s, base)?;
    T::try_from(v).or_else(|_| err(Errno::ERANGE, format!("{v} is out of range")))
}

/// lib/string_helpers.c `sysfs_streq()`: equal, ignoring one trailing newline on either side.
pub fn sysfs_streq(a: &str, b: &str) -> bool {
    a.strip_suffix('\n').unwrap_or(a) == b.strip_suffix('\n').unwrap_or(b)
}

/// One `param[=value]` token of an argument string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg<'a> {
    pub param: &'a str,
    /// `None` when the token has no `=`.
    pub val: Option<&'a str>,
}

/// The kernel's `isspace()` (lib/ctype.c `_ctype[]`): space and `\t \n \v \f \r`. (Its
/// Latin-1 0xA0 cannot stand alone in a `&str`.)
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// lib/cmdline.c `next_arg()` over a whole string, after lib/string_helpers.c `skip_spaces()`:
/// `isspace()`-separated tokens, double quotes group spaces (and are stripped from the value),
/// `param=value` splits at the first `=`.
pub fn args(s: &str) -> Vec<Arg<'_>> {
    let mut out = Vec::new();
    let mut rest = s.trim_start_matches(is_space);
    while !rest.is_empty() {
        let mut in_quote = false;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                if c == '"' {
                    in_quote = !in_quote;
                }
                is_space(c) && !in_quote
            })
            .map_or(rest.len(), |(i, _)| i);
        let token = &rest[..end];
        let token = token.strip_prefix('"').map_or(token, |t| t.strip_suffix('"').unwrap_or(t));
        out.push(match token.split_once('=') {
            Some((param, val)) => {
                let val = val.strip_prefix('"').map_or(val, |v| v.strip_suffix('"').unwrap_or(v));
                Arg { param, val: Some(val) }
            }
            None => Arg { param: token, val: None },
        });
        rest = rest[end..].trim_start_matches(is_space);
    }
    out
}

/// Strips the trailing newline `echo` adds, as handlers that copy names do.
pub fn strip_newline(s: &str) -> &str {
    s.strip_suffix('\n').unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memparse_is_lenient() {
        assert_eq!(memparse("4G\n"), 4 << 30);
        assert_eq!(memparse("1k"), 1024);
        assert_eq!(memparse("0x10M"), 16 << 20);
        assert_eq!(memparse("010"), 8, "a leading 0 is octal");
        assert_eq!(memparse("12345"), 12345);
        assert_eq!(memparse("12abc"), 12);
        assert_eq!(memparse("abc"), 0);
        assert_eq!(memparse(""), 0);
        assert_eq!(memparse("-5"), 0);
    }

    #[test]
    fn parse_size_is_memparse_without_the_leniency() {
        for (text, want) in [
            ("4096", 4096),
            ("64K", 64 << 10),
            ("256m", 256 << 20),
            ("2G", 2 << 30),
            ("1t", 1 << 40),
            ("1P", 1 << 50),
            ("0x10M", 16 << 20),
            ("010", 8),
            ("0", 0),
            (" 64 K\n", 64 << 10),
            ("+5", 5),
            ("15E", 15 << 60),
        ] {
            assert_eq!(parse_size(text).unwrap(), want, "{text:?}");
            if !text.trim().contains(' ') {
                assert_eq!(memparse(text.trim().trim_start_matches('+')), want, "{text:?}");
            }
        }
        for bad in ["", " ", "M", "12Q", "12KB", "12abc", "-5", "0x", "1.5G", "4 4"] {
            assert_eq!(parse_size(bad).unwrap_err().errno, Errno::EINVAL, "{bad:?}");
        }
        for big in ["99999999999T", "16E", "18446744073709551616"] {
            assert_eq!(parse_size(big).unwrap_err().errno, Errno::ERANGE, "{big:?}");
        }
    }

    #[test]
    fn kstrto_is_strict() {
        assert_eq!(kstrtoull("42\n", 10).unwrap(), 42);
        assert_eq!(kstrtoull("+42", 10).unwrap(), 42);
        assert_eq!(kstrtoull("0x1f", 0).unwrap(), 31);
        assert_eq!(kstrtoull("42\n\n", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrtoull(" 42", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrtoull("4k", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrtoull("", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrtoull("18446744073709551616", 10).unwrap_err().errno, Errno::ERANGE);
        assert_eq!(kstrto::<u16>("65536", 10).unwrap_err().errno, Errno::ERANGE);
        // `kstrtou16` -> `kstrtoull`: a '-' is no digit.
        assert_eq!(kstrto::<u16>("-1", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrto::<u32>("-0", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrto::<u16>("+7", 10).unwrap(), 7);
        // `kstrtoint` -> `kstrtoll`: signed, "-+5" included (the sign, then `kstrtoull`).
        assert_eq!(kstrto::<i32>("-+5", 10).unwrap(), -5);
        assert_eq!(kstrto::<i32>("-2147483649", 10).unwrap_err().errno, Errno::ERANGE);
        assert_eq!(kstrto::<i32>("-", 10).unwrap_err().errno, Errno::EINVAL);
        assert_eq!(kstrto::<u64>("18446744073709551615", 10).unwrap(), u64::MAX);
        assert_eq!(kstrto::<i32>("-7\n", 10).unwrap(), -7);
        assert_eq!(kstrtou::<u32>("4294967296", 10).unwrap_err().errno, Errno::ERANGE);
    }

    #[test]
    fn streq_ignores_one_newline() {
        assert!(sysfs_streq("all\n", "all"));
        assert!(sysfs_streq("all", "all"));
        assert!(!sysfs_streq("all\n\n", "all"));
        assert!(!sysfs_streq("al", "all"));
    }

    #[test]
    fn args_split_like_next_arg() {
        let a = args("  algo=zstd level=8 dict=\"/tmp/a b\" idle\n");
        assert_eq!(
            a,
            vec![
                Arg { param: "algo", val: Some("zstd") },
                Arg { param: "level", val: Some("8") },
                Arg { param: "dict", val: Some("/tmp/a b") },
                Arg { param: "idle", val: None },
            ]
        );
        assert_eq!(args("x="), vec![Arg { param: "x", val: Some("") }]);
        assert!(args(" \n").is_empty());
    }

    /// lib/cmdline.c `next_arg()` and lib/string_helpers.c `skip_spaces()` split on the kernel's
    /// `isspace()`: space and \t \n \v \f \r (lib/ctype.c `_ctype[]`), so a vertical tab
    /// separates two pairs, and a Unicode space (U+2003) is part of a token, not a separator.
    #[test]
    fn args_split_on_the_kernels_isspace() {
        assert_eq!(
            args("\x0bpriority=1\x0balgo=zstd\x0c"),
            vec![
                Arg { param: "priority", val: Some("1") },
                Arg { param: "algo", val: Some("zstd") }
            ]
        );
        assert_eq!(args("\u{2003}a=1"), vec![Arg { param: "\u{2003}a", val: Some("1") }]);
    }
}
