//! The LZO1X decoder's fast loop: raw pointers, one margin test per instruction, wild copies.
//!
//! Real pages decode as a few hundred short instructions each, so the checked decoder's cost is
//! its per-read and per-copy bounds checks, not the bytes. This loop tests, once per
//! instruction, that the instruction and everything it may read (its operands and four bytes
//! for the 0-3 trailing literals) lie in the input and that everything it may write (the match
//! or run plus the slack of a wild copy) lies in the output; then it copies with fixed-size
//! unaligned moves from [`crate::wild`]. Whatever it cannot take that way (an end marker, a
//! match reaching before the output, a length that runs too close to either end) it leaves at
//! the instruction's first byte, with the output position and state, for the checked decoder,
//! which finishes the stream and reports any error exactly as if it had decoded it all. So the
//! two paths give the same result on every input, which the tests and the `decode_lzo` fuzz
//! target check against [`super::decompress::decompress_checked`].

use std::ptr;

use crate::wild::{copy_long_match, copy_pattern};

/// Input needed at an instruction's first byte: the opcode, up to 3 operand bytes (the
/// lzo-rle zero run has 3), and a 4-byte word read for the trailing literals.
const MARGIN_IN: usize = 1 + 3 + 4;
/// Output needed at an instruction's start for the short forms (M1, M2: at most 8 bytes): the
/// match, the 15 bytes a wild match copy may write past it; the trailing-literal word fits in
/// those 15.
const MARGIN_OUT: usize = 8 + 16;
/// Room a copy of `len` bytes needs behind `op` in the output: the copy's own wild slack.
const WILD_SLACK: usize = 16;
/// The longest length extension the loop reads (lengths past it exceed every output anyway).
const EXT_CAP: usize = 1 << 24;

/// Marks the branch that calls it as unlikely, so the common instruction runs straight through.
#[cold]
#[inline(always)]
fn unlikely_path() {}

/// Decodes instructions from `ip` (an instruction's first byte) with output at `op` and the
/// previous instruction's literal count `state` (0-4), until the margins fail or an
/// instruction needs the checked decoder; returns where it stopped, as the same three values.
/// `RLE` enables lzo-rle's zero-run instruction (a versioned stream).
#[inline(never)]
pub(super) fn decode_fast_raw<const RLE: bool>(
    src: &[u8],
    dst: &mut [u8],
    ip: usize,
    op: usize,
    state: usize,
) -> (usize, usize, usize) {
    let (src_len, dst_len) = (src.len(), dst.len());
    if src_len < MARGIN_IN || dst_len < MARGIN_OUT {
        return (ip, op, state);
    }
    let i_last = src_len - MARGIN_IN;
    let o_last = dst_len - MARGIN_OUT;
    let s = src.as_ptr();
    let d = dst.as_mut_ptr();
    let (mut i, mut o, mut state) = (ip, op, state);
    // Reads at the opcode `at` reach at most `at + 4 < at + MARGIN_IN <= src_len`; after a
    // length extension the next 6 bytes are checked before they are read.
    while i <= i_last && o <= o_last {
        let at = i;
        // SAFETY: `i <= i_last < src_len`.
        let inst = unsafe { *s.add(i) } as usize;
        let (len, dist, ss);
        if inst >= 64 {
            // M2: 3-8 bytes, distance 1..=2048. The output margin holds any M2 and its slack,
            // so only the distance is tested, and the copy is one word (or a pattern).
            // SAFETY: `at + 1`, under the input margin.
            let h = unsafe { *s.add(i + 1) } as usize;
            i += 2;
            let len = (inst >> 5) + 1;
            let dist = (h << 3) + ((inst >> 2) & 7) + 1;
            if dist > o {
                return (at, o, state);
            }
            // SAFETY: `1 <= dist <= o` and `o + 8 + 16 <= dst_len` (the output margin), so the
            // word's `o - dist .. o + 8` and a pattern's `o - dist .. o + len + 15` are inside;
            // then as the shared tail below.
            unsafe {
                if dist >= 8 {
                    let w = ptr::read_unaligned(d.add(o - dist).cast::<u64>());
                    ptr::write_unaligned(d.add(o).cast::<u64>(), w);
                } else {
                    copy_pattern(d, o, dist, len);
                }
                o += len;
                ptr::copy_nonoverlapping(s.add(i), d.add(o), 4);
            }
            let ss = inst & 3;
            i += ss;
            o += ss;
            state = ss;
            continue;
        } else if inst >= 32 {
            // M3, with a length extension when its 5 bits are zero.
            let mut l = inst & 31;
            i += 1;
            if l == 0 {
                unlikely_path();
                let Some(e) = read_ext(src, &mut i) else { return (at, o, state) };
                l = 31 + e;
                if src_len - i < 2 + 4 {
                    return (at, o, state);
                }
            }
            // SAFETY: `at + 1 .. at + 3` under the margin, or checked after the extension.
            let w = unsafe { le16(s, i) };
            i += 2;
            len = l + 2;
            dist = (w >> 2) + 1;
            ss = w & 3;
        } else if inst >= 16 {
            // SAFETY: `at + 1 .. at + 3`, under the input margin.
            let w = unsafe { le16(s, i + 1) };
            if RLE && (inst & 0xf8) == 0x18 && (w & 0xfffc) == 0xfffc {
                // A zero run of up to 2051 bytes, then 0-3 literals.
                // SAFETY: `at + 3`, under the input margin.
                let x = unsafe { *s.add(i + 3) } as usize;
                let run = ((x << 3) | (inst & 7)) + 4;
                if run + WILD_SLACK > dst_len - o {
                    return (at, o, state);
                }
                // SAFETY: `o + k + 16 <= o + run + 15 < dst_len` for every `k < run` written
                // (`run >= 4`). The first two blocks are written outright: a loop of them alone
                // became a call to `memset` per run (most runs are short).
                unsafe {
                    ptr::write_unaligned(d.add(o).cast::<[u8; 16]>(), [0; 16]);
                    if run > 16 {
                        ptr::write_unaligned(d.add(o + 16).cast::<[u8; 16]>(), [0; 16]);
                        let mut k = 32;
                        while k < run {
                            ptr::write_unaligned(d.add(o + k).cast::<[u8; 16]>(), [0; 16]);
                            k += 16;
                        }
                    }
                }
                o += run;
                i += 4;
                let ss = w & 3;
                // SAFETY: `i + 4 = at + 8 <= src_len` (the input margin) and `o + 4 <= dst_len`
                // (the run's slack, checked above); distinct slices.
                unsafe { ptr::copy_nonoverlapping(s.add(i), d.add(o), 4) };
                i += ss;
                o += ss;
                state = ss;
                continue;
            }
            // M4, with a length extension when its 3 bits are zero; distance 16384 and more.
            let mut l = inst & 7;
            i += 1;
            let mut w = w;
            if l == 0 {
                unlikely_path();
                let Some(e) = read_ext(src, &mut i) else { return (at, o, state) };
                l = 7 + e;
                if src_len - i < 2 + 4 {
                    return (at, o, state);
                }
                // SAFETY: `i + 6 <= src_len`, just checked.
                w = unsafe { le16(s, i) };
            }
            let far = ((inst & 8) << 11) + (w >> 2);
            if far == 0 {
                // The end marker: the checked decoder validates what follows it.
                return (at, o, state);
            }
            i += 2;
            len = l + 2;
            dist = far + 0x4000;
            ss = w & 3;
        } else if state == 0 {
            // A literal run of 3 + L bytes (L = 0: 18 + extension).
            let mut t = inst + 3;
            i += 1;
            if inst == 0 {
                unlikely_path();
                let Some(e) = read_ext(src, &mut i) else { return (at, o, state) };
                t = 18 + e;
            }
            // The run is read and written in 16-byte chunks: up to 15 bytes past it.
            if t + WILD_SLACK > src_len - i || t + WILD_SLACK > dst_len - o {
                return (at, o, state);
            }
            // SAFETY: `i + k + 16 <= i + t + 15 < src_len` and likewise in `dst`, by the check
            // above, for every `k < t` copied (`t >= 4`); distinct slices. As for zero runs, the
            // first two blocks are copied outright, not through a `memcpy` call.
            unsafe {
                ptr::copy_nonoverlapping(s.add(i), d.add(o), 16);
                if t > 16 {
                    ptr::copy_nonoverlapping(s.add(i + 16), d.add(o + 16), 16);
                    let mut k = 32;
                    while k < t {
                        ptr::copy_nonoverlapping(s.add(i + k), d.add(o + k), 16);
                        k += 16;
                    }
                }
            }
            i += t;
            o += t;
            state = 4;
            continue;
        } else {
            // M1: 2 bytes after 1-3 literals, 3 bytes at distance 2049+ after 4 or more.
            // SAFETY: `at + 1`, under the input margin.
            let h = unsafe { *s.add(i + 1) } as usize;
            i += 2;
            if state < 4 {
                len = 2;
                dist = (h << 2) + (inst >> 2) + 1;
            } else {
                len = 3;
                dist = (h << 2) + (inst >> 2) + 2049;
            }
            ss = inst & 3;
        }
        // M1 and M2 fit the output margin; M3 and M4 may be long.
        if dist > o || len + WILD_SLACK > dst_len - o {
            return (at, o, state);
        }
        // SAFETY: `1 <= dist <= o` and `o + len + 15 < dst_len`, just checked.
        unsafe {
            if dist >= 8 && len <= 8 {
                let w = ptr::read_unaligned(d.add(o - dist).cast::<u64>());
                ptr::write_unaligned(d.add(o).cast::<u64>(), w);
            } else if dist >= 8 {
                copy_long_match(d, o, dist, len);
            } else {
                copy_pattern(d, o, dist, len);
            }
        }
        o += len;
        // SAFETY: `i + 4 <= src_len`: at most 3 operand bytes follow the opcode, under the
        // input margin, or the check after an extension; `o + 4 <= dst_len` by the match's
        // slack. Distinct slices.
        unsafe { ptr::copy_nonoverlapping(s.add(i), d.add(o), 4) };
        i += ss;
        o += ss;
        state = ss;
    }
    (i, o, state)
}

/// A little-endian u16 at `k`.
///
/// # Safety
/// `k .. k + 2` must lie inside the buffer `s` points to.
#[inline(always)]
unsafe fn le16(s: *const u8, k: usize) -> usize {
    // SAFETY: inside the buffer by the contract.
    u16::from_le(unsafe { ptr::read_unaligned(s.add(k).cast::<u16>()) }) as usize
}

/// The zero-byte length extension (255 per zero byte, then the first non-zero byte), or `None`
/// if the input ends inside it or it exceeds [`EXT_CAP`]; the checked decoder then retakes the
/// instruction and reports the error.
#[inline(always)]
fn read_ext(src: &[u8], i: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    loop {
        let b = *src.get(*i)? as usize;
        *i += 1;
        if b != 0 {
            return Some(n + b);
        }
        n += 255;
        if n > EXT_CAP {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Variant;
    use super::super::decompress::{decompress, decompress_checked};
    use super::super::tests::{compress_vec, page_like};
    use super::decode_fast_raw;
    use proptest::prelude::*;

    /// The fast path (raw loop, then the checked decoder) and the checked decoder alone give
    /// the same result, and the same bytes when they succeed.
    fn both(src: &[u8], cap: usize) {
        let mut a = vec![0u8; cap];
        let mut b = vec![0u8; cap];
        let ra = decompress(src, &mut a);
        let rb = decompress_checked(src, &mut b);
        assert_eq!(ra, rb);
        if let Ok(n) = ra {
            assert!(a[..n] == b[..n], "fast and checked decoders disagree");
        }
    }

    /// Pseudo-random bytes (xorshift), so a test's input is incompressible where it must be.
    fn noise(n: usize, mut x: u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn far_matches_and_long_extensions_decode_through_the_fast_loop() {
        // Noise, the same noise again 20,000 bytes later (an M4 match with a long length
        // extension), a long zero run, and small-period runs.
        let block = noise(3000, 7);
        let mut src = block.clone();
        src.extend(noise(17_000, 11));
        src.extend(&block);
        src.extend(vec![0u8; 5000]);
        src.extend(b"abcabcab".repeat(200));
        src.extend(noise(100, 3));
        for variant in [Variant::Lzo, Variant::LzoRle] {
            let comp = compress_vec(variant, &src);
            let mut out = vec![0u8; src.len()];
            assert_eq!(decompress(&comp, &mut out), Ok(src.len()));
            assert!(out == src);
            both(&comp, src.len());
            both(&comp, src.len() + 100);
            // The raw loop itself takes everything but the stream's last instructions.
            let start = if variant == Variant::LzoRle { 2 } else { 0 };
            // A run this long is a 0000LLLL instruction, not the first-byte form.
            assert!(comp[start] < 16, "stream starts with a long literal run");
            let mut dst = vec![0u8; src.len()];
            let (ip, op, _) = if variant == Variant::LzoRle {
                decode_fast_raw::<true>(&comp, &mut dst, start, 0, 0)
            } else {
                decode_fast_raw::<false>(&comp, &mut dst, start, 0, 0)
            };
            assert!(op + 200 > src.len(), "{variant:?}: raw loop stopped at {op}");
            // The last literal run (100 bytes, then the end marker) is left to the checked loop.
            assert!(ip + 120 > comp.len(), "{variant:?}: raw loop stopped at input {ip}");
            assert!(dst[..op] == src[..op]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn fast_path_equals_checked_path_on_valid_streams(input in page_like(), slack in 0usize..64) {
            for variant in [Variant::Lzo, Variant::LzoRle] {
                let comp = compress_vec(variant, &input);
                both(&comp, input.len() + slack);
                both(&comp, input.len().saturating_sub(slack));
                let mut out = vec![0u8; input.len()];
                prop_assert_eq!(decompress(&comp, &mut out), Ok(input.len()));
                prop_assert!(out == input);
            }
        }

        #[test]
        fn fast_path_equals_checked_path_on_damaged_streams(
            input in page_like(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ) {
            for variant in [Variant::Lzo, Variant::LzoRle] {
                let mut bad = compress_vec(variant, &input);
                for (at, b) in &flips {
                    let i = at.index(bad.len());
                    bad[i] = *b;
                }
                both(&bad, input.len() + 40);
                both(&bad, 8192);
            }
        }

        #[test]
        fn fast_path_equals_checked_path_on_garbage(
            junk in proptest::collection::vec(any::<u8>(), 0..2000),
            cap in 0usize..9000,
            rle_header in any::<bool>(),
        ) {
            let mut src = junk;
            if rle_header && src.len() >= 2 {
                src[0] = 17;
                src[1] = 1;
            }
            both(&src, cap);
        }
    }
}
