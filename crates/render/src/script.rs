//! The one generated part of an apply script: a block of validated, shell-quoted assignments
//! at its top. The code that reads them is fixed text in `templates/` (loaded with
//! `include_str!`, checked by shellcheck in the tests), so no value is ever spliced into code.
//!
//! Every value is checked against its grammar before a script is made ([`zram_device`],
//! [`algorithm`], [`path`], ...), else the script is refused with a one-line [`ScriptError`]
//! naming the field; what passes is single-quoted all the same. Free text (the decision's
//! words, warnings) goes only into comments and quoted strings, with control characters
//! removed ([`sanitize`]), so a newline cannot end a comment and start a command.

use std::fmt;

/// A value that cannot go into a script: the field it came from, the value, and the grammar it
/// breaks. One line: the value is written with Rust's escapes (`"zram0\ntouch /tmp/X"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub field: String,
    pub value: String,
    pub grammar: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}: {}", self.field, self.value, self.grammar)
    }
}

impl std::error::Error for ScriptError {}

pub(crate) fn refuse(field: &str, value: &str, grammar: &str) -> ScriptError {
    ScriptError { field: field.into(), value: value.into(), grammar: grammar.into() }
}

/// Whether `c` may stay in text a person reads or a comment holds: no control character
/// (newline, CR and escape included) and no bidirectional override that reorders what is shown.
fn printable(c: char) -> bool {
    !c.is_control()
        && !matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// `s` with every control character removed (bidirectional overrides too): safe on one line of a
/// comment, a terminal or a quoted string.
pub fn sanitize(s: &str) -> String {
    s.chars().filter(|c| printable(*c)).collect()
}

/// Text for a terminal: every control character removed but line breaks and tabs (an escape
/// sequence from a page set's metadata cannot move the cursor or retitle the window).
pub fn terminal(s: &str) -> String {
    s.chars().filter(|c| matches!(c, '\n' | '\t') || printable(*c)).collect()
}

/// `s` as HTML text or a quoted attribute value: control characters (but line breaks and tabs,
/// which `<pre>` shows) removed, and `& < > " '` escaped.
pub fn html_text(s: &str) -> String {
    terminal(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `s` in single quotes, for sh: nothing inside is expanded; a `'` becomes `'\''`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// One comment line (`# text`), its text sanitized.
pub fn comment(text: &str) -> String {
    let t = sanitize(text);
    if t.is_empty() { "#\n".into() } else { format!("# {t}\n") }
}

/// A zram device name: `zram[0-9]+` (a leading `/dev/` is taken off first).
pub fn zram_device(field: &str, v: &str) -> Result<String, ScriptError> {
    let name = v.strip_prefix("/dev/").unwrap_or(v);
    match name.strip_prefix("zram") {
        Some(n) if !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(name.to_string())
        }
        _ => Err(refuse(field, v, "not a zram device name (zram[0-9]+)")),
    }
}

/// A compressor by its kernel name, one of zmem's own list (the lab's
/// [`zmem_lab::policy::KERNEL_ALGORITHMS`], which holds zswap's [`zmem_lab::zswap::ZMEM_COMPRESSORS`]).
pub fn algorithm(field: &str, v: &str) -> Result<String, ScriptError> {
    if zmem_lab::policy::KERNEL_ALGORITHMS.contains(&v) {
        Ok(v.to_string())
    } else {
        let list = zmem_lab::policy::KERNEL_ALGORITHMS.join(", ");
        Err(refuse(field, v, &format!("not a compressor zmem knows ({list})")))
    }
}

/// What is written to zram's `recompress`: `key=value` words (`type=idle`, `max_pages=100`),
/// lower-case letters, digits and `_` only.
pub fn recompress_args(field: &str, v: &str) -> Result<String, ScriptError> {
    let word = |w: &str| {
        let ok = |s: &str| {
            !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        w.split_once('=').is_some_and(|(k, val)| ok(k) && ok(val))
    };
    if !v.is_empty() && v.split(' ').all(word) {
        Ok(v.to_string())
    } else {
        Err(refuse(field, v, "not recompress arguments (key=value words: [a-z0-9_]+=[a-z0-9_]+)"))
    }
}

/// A path the script hands to swapon, mkswap or awk: absolute, at most 4095 bytes, of
/// letters, digits and `/ . _ - + : @ ,` only (no whitespace, quote, `$`, backquote, glob or
/// control character: quoting would make them inert, but a swap area has no need of them),
/// and no `..` component.
pub fn path(field: &str, v: &str) -> Result<String, ScriptError> {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"/._-+:@,".contains(&b);
    let ok = v.starts_with('/')
        && v.len() < 4096
        && v.bytes().all(safe)
        && !v.split('/').any(|c| c == "..");
    if ok {
        Ok(v.to_string())
    } else {
        Err(refuse(
            field,
            v,
            "not an absolute path of letters, digits and / . _ - + : @ , (without ..)",
        ))
    }
}

/// A file name beside the script: letters, digits and `. _ -`, not starting with `.` or `-`.
pub fn file_name(field: &str, v: &str) -> Result<String, ScriptError> {
    let ok = !v.is_empty()
        && !v.starts_with(['.', '-'])
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok { Ok(v.to_string()) } else { Err(refuse(field, v, "not a plain file name")) }
}

/// A swap priority swapon takes: -1 to 32767 (mm/swapfile.c: SWAP_FLAG_PRIO_MASK).
pub fn swap_priority(field: &str, v: i32) -> Result<i32, ScriptError> {
    if (-1..=32767).contains(&v) {
        Ok(v)
    } else {
        Err(refuse(field, &v.to_string(), "not a swap priority (-1 to 32767)"))
    }
}

/// A percentage zswap takes: 0 to 100.
pub fn percent(field: &str, v: u32) -> Result<u32, ScriptError> {
    if v <= 100 { Ok(v) } else { Err(refuse(field, &v.to_string(), "not a percentage (0 to 100)")) }
}

/// A period in whole seconds (at least 1) from `secs`, which must be finite and positive.
pub fn period_secs(field: &str, secs: f64) -> Result<u64, ScriptError> {
    if secs.is_finite() && secs > 0.0 && secs < 1e12 {
        Ok((secs.round() as u64).max(1))
    } else {
        Err(refuse(field, &secs.to_string(), "not a period in seconds (positive, finite)"))
    }
}

/// A number with fractions, from 0 to `max`, written with six decimals (no exponent).
pub fn number(field: &str, v: f64, max: f64) -> Result<String, ScriptError> {
    if v.is_finite() && (0.0..=max).contains(&v) {
        Ok(format!("{v:.6}"))
    } else {
        Err(refuse(field, &v.to_string(), &format!("not a number from 0 to {max}")))
    }
}

/// One entry of the agent's `--exclude` list: a pid, a process name (letters, digits and
/// `. _ - + :`, at most 15 bytes) or a cgroup path (`/` then letters, digits and `/ . _ - + : @`):
/// nothing a shell, a comma-separated list or a systemd ExecStart line would read otherwise.
pub fn exclude_entry(field: &str, v: &str) -> Result<String, ScriptError> {
    let name = |b: u8| b.is_ascii_alphanumeric() || b"._-+:".contains(&b);
    let ok = match v.strip_prefix('/') {
        Some(rest) => v.len() < 4096 && rest.bytes().all(|b| name(b) || b"/@".contains(&b)),
        None => !v.is_empty() && v.len() <= 15 && v.bytes().all(name) && !v.starts_with('-'),
    };
    if ok {
        Ok(v.to_string())
    } else {
        Err(refuse(field, v, "not a pid, a process name or a cgroup path of safe characters"))
    }
}

/// The assignment block: `NAME='value'` lines, numbers bare. Names are the templates' own.
#[derive(Debug, Default)]
pub struct Assignments(String);

impl Assignments {
    /// A checked string value, single-quoted. Where it holds `$`, a backquote or a backslash,
    /// a directive tells shellcheck that it is meant literally (SC2016 asks whether it should
    /// expand, SC1003 whether `\'` was meant to escape a quote).
    pub fn text(mut self, name: &str, value: &str) -> Self {
        let value = sanitize(value);
        let mut codes = Vec::new();
        if value.contains(['$', '`']) {
            codes.push("SC2016");
        }
        if value.contains('\\') {
            codes.push("SC1003");
        }
        if !codes.is_empty() {
            self.0 += &format!(
                "# shellcheck disable={} # literal text: single quotes keep it so\n",
                codes.join(",")
            );
        }
        self.0 += &format!("{name}={}\n", quote(&value));
        self
    }

    /// A number, bare.
    pub fn int(mut self, name: &str, value: impl Into<i64>) -> Self {
        self.0 += &format!("{name}={}\n", value.into());
        self
    }

    /// A flag: 1 or 0.
    pub fn flag(self, name: &str, on: bool) -> Self {
        self.int(name, i64::from(on))
    }

    /// These assignments followed by `more`.
    pub fn and(mut self, more: Assignments) -> Self {
        self.0 += &more.0;
        self
    }

    /// The block with its opening comment.
    pub fn block(&self) -> String {
        format!(
            "# The decision's values, checked by zmem and quoted; every line after them is fixed \
             text.\n{}",
            self.0
        )
    }
}

/// SHA-256 (FIPS 180-4) of `data`, as lower-case hex: the dictionary's hash in the script,
/// which `sha256sum` checks before the dictionary is installed (RustCrypto's `sha2`).
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_fips_180_vectors_and_sha256sum() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(
            sha256_hex(long),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // Lengths around the padding's block edge, against coreutils.
        for n in [55usize, 56, 63, 64, 65, 1000] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            let mut child = std::process::Command::new("sha256sum")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("sha256sum");
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&data).unwrap();
            let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
            assert_eq!(out.split(' ').next().unwrap(), sha256_hex(&data), "{n} bytes");
        }
    }

    #[test]
    fn hostile_values_are_refused_naming_the_field() {
        let e = zram_device("now.config.device", "zram0\ntouch /tmp/X").unwrap_err();
        assert_eq!(
            e.to_string(),
            "now.config.device: \"zram0\\ntouch /tmp/X\": not a zram device name (zram[0-9]+)"
        );
        assert!(!e.to_string().contains('\n'));
        for bad in ["zram", "zram0;x", "zram$(x)", "zram`x`", "zram0 ", "ram0", "zram-1", ""] {
            assert!(zram_device("f", bad).is_err(), "{bad:?}");
        }
        assert_eq!(zram_device("f", "/dev/zram12").unwrap(), "zram12");
        assert!(algorithm("policy.algo", "lz4").is_ok());
        for bad in ["lz4;x", "lz4'", "$(x)", "zstd\n", "LZ4"] {
            let e = algorithm("policy.algo", bad).unwrap_err();
            assert!(e.to_string().starts_with("policy.algo: "), "{e}");
        }
        assert!(recompress_args("r", "type=idle").is_ok());
        assert!(recompress_args("r", "type=huge max_pages=10").is_ok());
        for bad in ["type=idle'", "type=$(x)", "", "type", "type=idle;x", "a=b\nc=d"] {
            assert!(recompress_args("r", bad).is_err(), "{bad:?}");
        }
        assert!(path("p", "/var/lib/zmem/swapfile").is_ok());
        for bad in
            ["rel/x", "/a b", "/a\nb", "/a'b", "/a\"b", "/$(x)", "/`x`", "/a;b", "/a\\b", "/a/../b"]
        {
            assert!(path("p", bad).is_err(), "{bad:?}");
        }
        assert!(file_name("f", "zmem-zram.dict").is_ok());
        for bad in ["../x", "a/b", ".x", "-x", "a b", ""] {
            assert!(file_name("f", bad).is_err(), "{bad:?}");
        }
        assert!(swap_priority("p", 32768).is_err() && swap_priority("p", -2).is_err());
        assert!(percent("p", 101).is_err() && period_secs("p", f64::NAN).is_err());
    }

    #[test]
    fn quoting_and_comments_cannot_be_broken_out_of() {
        assert_eq!(quote("a'b"), "'a'\\''b'");
        assert_eq!(comment("x\ntouch /tmp/X\r\x1b[2J"), "# xtouch /tmp/X[2J\n");
        assert_eq!(terminal("a\x1b]0;t\x07\nb\r"), "a]0;t\nb");
        let block = Assignments::default().text("ZMEM_CONFIG", "a'\n$(x)").int("N", 3).block();
        assert!(block.ends_with("ZMEM_CONFIG='a'\\''$(x)'\nN=3\n"), "{block}");
    }
}
