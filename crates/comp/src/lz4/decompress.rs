//! The LZ4 block decoder (`LZ4_decompress_safe`, and `LZ4_decompress_safe_continue` after
//! `LZ4_setStreamDecode(dict)` when a dictionary precedes the output).
//!
//! Every length is checked against both buffers before anything is copied, so malformed input
//! ends in [`CompError::Corrupt`] (or [`CompError::OutputTooSmall`] when the block describes
//! more bytes than the destination holds), never in a read or write outside the slices.
//!
//! # Why two loops
//! Real pages decode as ~300 sequences of ~13 bytes each, so the cost is per sequence, not per
//! byte. [`decompress_block`] runs most of a block through a loop on raw pointers that tests
//! one input and one output margin per sequence and then copies with fixed-size (wild) moves
//! that may write a few bytes past the sequence, as liblz4 does; this is what brings it level
//! with `LZ4_decompress_safe` (bounds-checked slice copies alone reach about 0.65x). The last
//! sequences of a block, and anything unusual, go through the exact path, which checks every
//! length. [`decompress_block_checked`] uses a bounds-checked version of the fast loop and is
//! the reference the unsafe one is tested (proptest, fuzz target `decode_lz4`) against.

use super::NAME;
use crate::CompError;
use crate::wild::{copy_long_match, copy_pattern, copy_short_match};
use std::ptr;

const MIN_MATCH: usize = 4;

fn corrupt(at: usize, what: &'static str) -> CompError {
    CompError::corrupt(NAME, at, what)
}

/// Reads a length extension (the bytes after a nibble of 15).
#[inline(always)]
fn read_ext(src: &[u8], ip: &mut usize) -> Result<usize, CompError> {
    let mut len = 0usize;
    loop {
        let Some(&b) = src.get(*ip) else {
            return Err(corrupt(*ip, "truncated length"));
        };
        *ip += 1;
        len += b as usize;
        if b != 255 {
            return Ok(len);
        }
        // A length longer than the input is already invalid; stop before it can overflow.
        if len > src.len().saturating_mul(255) {
            return Err(corrupt(*ip, "length overflow"));
        }
    }
}

/// `to.copy_from_slice(from)` without a call to `memcpy` for the short copies near the end
/// of a block (the fast loop's wild copies cannot reach there): up to 16 bytes as two
/// overlapping fixed-size words.
#[inline(always)]
fn copy_exact(to: &mut [u8], from: &[u8]) {
    let n = from.len();
    if n > 16 || n != to.len() {
        to.copy_from_slice(from);
    } else if n >= 8 {
        to[..8].copy_from_slice(&from[..8]);
        to[n - 8..].copy_from_slice(&from[n - 8..]);
    } else if n >= 4 {
        to[..4].copy_from_slice(&from[..4]);
        to[n - 4..].copy_from_slice(&from[n - 4..]);
    } else {
        for (t, f) in to.iter_mut().zip(from) {
            *t = *f;
        }
    }
}

/// Copies `len` bytes from `op - offset` to `op` inside `dst`, with the overlap semantics of
/// LZ4 (a short offset repeats the last `offset` bytes). The caller has checked the bounds.
#[inline(always)]
fn copy_match(dst: &mut [u8], op: usize, offset: usize, len: usize) {
    let from = op - offset;
    if offset >= len {
        let (done, rest) = dst.split_at_mut(op);
        copy_exact(&mut rest[..len], &done[from..from + len]);
        return;
    }
    // Overlapping: the bytes are periodic with period `offset`; copy whole periods, doubling.
    let mut done = 0;
    while done < len {
        let chunk = (offset + done).min(len - done);
        dst.copy_within(from..from + chunk, op + done);
        done += chunk;
    }
}

/// Copies 16 bytes from `src[from..]` to `dst[to..]` as one load and one store.
#[inline(always)]
fn copy16(dst: &mut [u8], to: usize, src: &[u8], from: usize) {
    let mut chunk = [0u8; 16];
    chunk.copy_from_slice(&src[from..from + 16]);
    dst[to..to + 16].copy_from_slice(&chunk);
}

/// Room the fast loop keeps at the end of both buffers, so that its fixed-size (wild) copies
/// stay inside them: a short literal run (<= 14 bytes) is copied as 16 bytes, and a match of
/// `len` bytes may write up to 15 bytes past its end.
const FAST_MARGIN_IN: usize = 16 + 2;
const FAST_MARGIN_OUT: usize = 14 + 18 + 16;

/// Copies `len` bytes from `at - distance` to `at` in 8-byte chunks; `distance` >= 8, so each
/// chunk reads only final bytes. May write up to 7 bytes past `at + len`.
#[inline(always)]
fn copy8_chunks(dst: &mut [u8], at: usize, distance: usize, len: usize) {
    let from = at - distance;
    let mut done = 0;
    while done < len {
        let mut chunk = [0u8; 8];
        chunk.copy_from_slice(&dst[from + done..from + done + 8]);
        dst[at + done..at + done + 8].copy_from_slice(&chunk);
        done += 8;
    }
}

/// For an offset below 8: the smallest multiple of it that is at least 8.
const PERIOD_AT_LEAST_8: [usize; 8] = [0, 8, 8, 9, 8, 10, 12, 14];

/// A match copy that may write up to 15 bytes past `op + len` (the caller keeps that room).
#[inline(always)]
fn wild_copy_match(dst: &mut [u8], op: usize, offset: usize, len: usize) {
    let from = op - offset;
    if offset >= 16 {
        // Each 16-byte chunk reads only bytes that are already final.
        let mut done = 0;
        while done < len {
            let mut chunk = [0u8; 16];
            chunk.copy_from_slice(&dst[from + done..from + done + 16]);
            dst[op + done..op + done + 16].copy_from_slice(&chunk);
            done += 16;
        }
    } else if offset >= 8 {
        copy8_chunks(dst, op, offset, len);
    } else if offset == 1 {
        let b = dst[from];
        dst[op..op + len].fill(b);
    } else {
        // Write the first 8 bytes one by one; from there the output repeats at a distance
        // of at least 8, so the rest goes in 8-byte chunks.
        for k in 0..8 {
            dst[op + k] = dst[from + k];
        }
        if len > 8 {
            copy8_chunks(dst, op + 8, PERIOD_AT_LEAST_8[offset], len - 8);
        }
    }
}

/// Decodes sequences with wild copies while both buffers have room to spare, and returns at
/// the first sequence it cannot take that way (a long one near the end, one reaching into the
/// dictionary, the last one, or a malformed one), leaving `ip`/`op` at its token.
#[inline(always)]
fn decode_fast(
    src: &[u8],
    dst: &mut [u8],
    ip: &mut usize,
    op: &mut usize,
) -> Result<(), CompError> {
    while src.len() - *ip > FAST_MARGIN_IN && dst.len() - *op > FAST_MARGIN_OUT {
        let token = src[*ip];
        let lit = (token >> 4) as usize;
        let ml = (token & 15) as usize;
        if lit < 15 && ml < 15 {
            // Short literal run and short match: the common case.
            copy16(dst, *op, src, *ip + 1);
            let lit_end = *ip + 1 + lit;
            let offset = u16::from_le_bytes([src[lit_end], src[lit_end + 1]]) as usize;
            if offset == 0 || offset > *op + lit || src.len() - lit_end < 2 + 1 {
                return Ok(());
            }
            *op += lit;
            wild_copy_match(dst, *op, offset, ml + MIN_MATCH);
            *op += ml + MIN_MATCH;
            *ip = lit_end + 2;
            continue;
        }
        // A long literal run or match: exact literal copy, wild match copy if it fits.
        let mut i = *ip + 1;
        let mut l = lit;
        if l == 15 {
            l += read_ext(src, &mut i)?;
        }
        if l > dst.len() - *op || src.len() - i < l + 2 + 1 {
            return Ok(());
        }
        let offset = u16::from_le_bytes([src[i + l], src[i + l + 1]]) as usize;
        let mut j = i + l + 2;
        let mut m = ml;
        if m == 15 {
            m += read_ext(src, &mut j)?;
        }
        m += MIN_MATCH;
        if offset == 0 || offset > *op + l || m + 16 > dst.len() - *op - l || j >= src.len() {
            return Ok(());
        }
        dst[*op..*op + l].copy_from_slice(&src[i..i + l]);
        *op += l;
        wild_copy_match(dst, *op, offset, m);
        *op += m;
        *ip = j;
    }
    Ok(())
}

/// Decodes one sequence with exact bounds checks; returns the decoded length if it was the
/// last one.
#[inline(always)]
fn decode_exact(
    src: &[u8],
    dst: &mut [u8],
    dict: &[u8],
    ip: &mut usize,
    op: &mut usize,
) -> Result<Option<usize>, CompError> {
    let token = src[*ip];
    *ip += 1;

    // Literals.
    let mut lit = (token >> 4) as usize;
    if lit == 15 {
        lit += read_ext(src, ip)?;
    }
    if lit > src.len() - *ip {
        return Err(corrupt(*ip, "literals past the end of the input"));
    }
    if lit > dst.len() - *op {
        return Err(CompError::OutputTooSmall { capacity: dst.len() });
    }
    copy_exact(&mut dst[*op..*op + lit], &src[*ip..*ip + lit]);
    *op += lit;
    *ip += lit;
    if *ip == src.len() {
        return Ok(Some(*op));
    }

    // Match.
    if src.len() - *ip < 2 {
        return Err(corrupt(*ip, "truncated offset"));
    }
    let offset = u16::from_le_bytes([src[*ip], src[*ip + 1]]) as usize;
    *ip += 2;
    let mut len = (token & 15) as usize;
    if len == 15 {
        len += read_ext(src, ip)?;
    }
    len += MIN_MATCH;
    if offset == 0 {
        return Err(corrupt(*ip - 2, "zero offset"));
    }
    if offset > *op + dict.len() {
        return Err(corrupt(*ip - 2, "offset before the start of the output"));
    }
    if len > dst.len() - *op {
        return Err(CompError::OutputTooSmall { capacity: dst.len() });
    }
    let mut len_left = len;
    if offset > *op {
        // Starts in the dictionary, may continue into the output.
        let back = offset - *op;
        let from = dict.len() - back;
        let n = back.min(len_left);
        dst[*op..*op + n].copy_from_slice(&dict[from..from + n]);
        *op += n;
        len_left -= n;
    }
    if len_left > 0 {
        copy_match(dst, *op, offset, len_left);
        *op += len_left;
    }
    if *ip >= src.len() {
        return Err(corrupt(*ip, "block ends with a match"));
    }
    Ok(None)
}

/// Reads a length extension like [`read_ext`], with `None` for a truncated one (the fast loop
/// then hands the sequence to [`decode_exact`], which reports the error). It gives up past
/// [`EXT_CAP`] too: such a length exceeds any buffer the fast loop could copy it into, and a
/// constant bound keeps a register free in the loop.
#[inline(always)]
fn read_ext_opt(src: &[u8], ip: &mut usize) -> Option<usize> {
    let mut len = 0usize;
    loop {
        let b = *src.get(*ip)?;
        *ip += 1;
        len += b as usize;
        if b != 255 {
            return Some(len);
        }
        if len > EXT_CAP {
            return None;
        }
    }
}

/// Largest length extension the fast loop reads (1 GiB).
const EXT_CAP: usize = 1 << 30;

/// Marks the branch that calls it as unlikely, so the common sequence runs straight through.
#[cold]
#[inline(always)]
fn unlikely_path() {}

/// Input the raw fast loop needs after a token's position: the token, 16 bytes read for a short
/// literal run (which hold the run, <= 14 bytes, and the 2 offset bytes), and the next token.
const RAW_MARGIN_IN: usize = 1 + 16 + 1;
/// Output the raw fast loop needs at a sequence's start: a short literal run is written as 16
/// bytes, and a short match (<= 18 bytes, after <= 14 literals) may write up to 15 bytes past
/// its end (three 8-byte words, or pattern stores).
const RAW_MARGIN_OUT: usize = 14 + 18 + 16;
/// Room past their end that a long literal run (16-byte chunks) and a long match (16-byte
/// chunks or pattern stores) may write into, and a long run may read from.
const RAW_SLACK_LONG: usize = 16;

/// The fast loop on raw pointers, without per-copy bounds checks: one input and one output
/// margin test per sequence (the `RAW_MARGIN_*` constants) makes every fixed-size copy of a
/// short sequence safe; long runs are measured against both buffers before they are copied.
/// Anything else (a malformed sequence, one reaching into the dictionary, the end of the
/// block) leaves `ip`/`op` at its token for [`decode_exact`]. [`decode_fast`] is the
/// bounds-checked equivalent the tests compare it with. Not inlined: on its own it keeps all
/// its state in registers (measured: about 10% faster than inlined into the block loop).
#[inline(never)]
fn decode_fast_raw(src: &[u8], dst: &mut [u8], ip: usize, op: usize) -> (usize, usize) {
    let (src_len, dst_len) = (src.len(), dst.len());
    if src_len < RAW_MARGIN_IN || dst_len < RAW_MARGIN_OUT {
        return (ip, op);
    }
    // The last token and output positions at which the margins still hold.
    let i_last = src_len - RAW_MARGIN_IN;
    let o_last = dst_len - RAW_MARGIN_OUT;
    let s = src.as_ptr();
    let d = dst.as_mut_ptr();
    let mut i = ip;
    let mut o = op;
    while i <= i_last && o <= o_last {
        // SAFETY: `i < src_len` by the loop condition.
        let token = unsafe { *s.add(i) } as usize;
        let mut j = i + 1;
        let mut lit = token >> 4;
        if lit != 15 {
            // SAFETY: `j + 16 = i + 17 <= src_len` and `o + 16 <= dst_len` (the margins);
            // `src` and `dst` are distinct slices, so they cannot overlap.
            unsafe { ptr::copy_nonoverlapping(s.add(j), d.add(o), 16) };
            j += lit;
        } else {
            unlikely_path();
            let Some(more) = read_ext_opt(src, &mut j) else { break };
            lit += more;
            // The run read in 16-byte chunks, followed by the offset and the next token, in
            // `src`; the run written in chunks and a short match with its slack in `dst`.
            if lit + RAW_SLACK_LONG + 3 > src_len - j || lit + RAW_MARGIN_OUT > dst_len - o {
                break;
            }
            // Two 16-byte chunks cover the common 15..=32, a `memcpy` the rest (a chunk loop
            // would be turned into one anyway).
            // SAFETY: `lit >= 15`, so `j + 32 <= j + lit + 17 <= src_len` and `o + 32 <= o +
            // lit + 48 <= dst_len`, by the checks above; the tail ends at `j + lit` and `o +
            // lit`; distinct slices.
            unsafe {
                ptr::copy_nonoverlapping(s.add(j), d.add(o), 16);
                ptr::copy_nonoverlapping(s.add(j + 16), d.add(o + 16), 16);
                if lit > 32 {
                    ptr::copy_nonoverlapping(s.add(j + 32), d.add(o + 32), lit - 32);
                }
            }
            j += lit;
        }
        let lo = o + lit;
        // SAFETY: `j + 2 <= src_len`: for a short run `j <= i + 15` and `i + 18 <= src_len`,
        // for a long one it was checked.
        let offset = u16::from_le(unsafe { ptr::read_unaligned(s.add(j).cast::<u16>()) }) as usize;
        j += 2;
        let ml = token & 15;
        if ml != 15 {
            let len = ml + MIN_MATCH;
            // `lo + 18 + 16 <= dst_len` here: `lo <= o + 14` and the output margin, or the
            // long-run check. A next token exists at `j < src_len` by the same arguments.
            if offset >= 8 && offset <= lo {
                // SAFETY: `8 <= offset <= lo` and `lo + 18 <= dst_len`.
                unsafe { copy_short_match(d, lo, offset) };
            } else if offset != 0 && offset <= lo {
                unlikely_path();
                // SAFETY: `1 <= offset <= 7`, `offset <= lo`, and `lo + len + 15 <= lo + 33
                // < dst_len`.
                unsafe { copy_pattern(d, lo, offset, len) };
            } else {
                break;
            }
            o = lo + len;
            i = j;
            continue;
        }
        unlikely_path();
        let Some(more) = read_ext_opt(src, &mut j) else { break };
        let len = 15 + MIN_MATCH + more;
        if offset == 0 || offset > lo || j >= src_len || len + RAW_SLACK_LONG > dst_len - lo {
            break;
        }
        // SAFETY: `1 <= offset <= lo` and `lo + len + 16 <= dst_len`, just checked.
        unsafe { copy_long_match(d, lo, offset, len) };
        o = lo + len;
        i = j;
    }
    (i, o)
}

/// Decodes the block `src` into `dst`, with `dict` as the bytes preceding the output (empty
/// for none), and returns the decoded length.
pub fn decompress_block(src: &[u8], dst: &mut [u8], dict: &[u8]) -> Result<usize, CompError> {
    decompress_with(src, dst, dict, |s, d, ip, op| {
        // Near the end of the block the margins fail for good: skip the call.
        if s.len() - *ip >= RAW_MARGIN_IN && d.len() - *op >= RAW_MARGIN_OUT {
            (*ip, *op) = decode_fast_raw(s, d, *ip, *op);
        }
        Ok(())
    })
}

/// [`decompress_block`] with only bounds-checked copies; the reference the fast path is tested
/// against.
pub fn decompress_block_checked(
    src: &[u8],
    dst: &mut [u8],
    dict: &[u8],
) -> Result<usize, CompError> {
    decompress_with(src, dst, dict, decode_fast)
}

#[inline(always)]
fn decompress_with(
    src: &[u8],
    dst: &mut [u8],
    dict: &[u8],
    fast: impl Fn(&[u8], &mut [u8], &mut usize, &mut usize) -> Result<(), CompError>,
) -> Result<usize, CompError> {
    if src.is_empty() {
        return Err(corrupt(0, "empty block"));
    }
    let mut ip = 0usize;
    let mut op = 0usize;
    loop {
        fast(src, dst, &mut ip, &mut op)?;
        if let Some(n) = decode_exact(src, dst, dict, &mut ip, &mut op)? {
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lz4::{Tables, compress, compress_bound};
    use proptest::prelude::*;

    /// Inputs with short and long runs, small and large offsets (so every copy path is hit).
    fn page_like() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            (1usize..300).prop_map(|n| vec![0u8; n]),
            (any::<u8>(), 1usize..200).prop_map(|(b, n)| vec![b; n]),
            (proptest::collection::vec(any::<u8>(), 2..16), 1usize..40)
                .prop_map(|(w, n)| w.repeat(n)),
            proptest::collection::vec(any::<u8>(), 1..200),
            proptest::collection::vec(0u8..3, 1..200),
        ];
        proptest::collection::vec(piece, 0..30).prop_map(|p| {
            let mut v = p.concat();
            v.truncate(8192);
            v
        })
    }

    fn both(src: &[u8], cap: usize, dict: &[u8]) {
        let mut a = vec![0u8; cap];
        let mut b = vec![0u8; cap];
        let ra = decompress_block(src, &mut a, dict);
        let rb = decompress_block_checked(src, &mut b, dict);
        assert_eq!(ra, rb);
        if let Ok(n) = ra {
            assert!(a[..n] == b[..n], "fast and checked decoders disagree");
        }
    }

    /// Appends a length nibble's extension bytes (for a value of 15 or more in the nibble).
    fn push_ext(block: &mut Vec<u8>, mut rest: usize) {
        while rest >= 255 {
            block.push(255);
            rest -= 255;
        }
        block.push(rest as u8);
    }

    /// Every offset from 1 to 40 with matches of every size class (short, just long, several
    /// 16-byte chunks) after short and long literal runs, far from the block's end so the raw
    /// fast loop's pattern, short-match and long-match copies all run; each output is checked
    /// against the byte-by-byte definition of a match and against the checked decoder.
    #[test]
    fn every_small_offset_and_length_class_decodes_by_definition() {
        for offset in 1usize..=40 {
            for len in [4usize, 5, 7, 8, 9, 12, 16, 17, 18, 19, 20, 31, 32, 33, 47, 100, 300] {
                for lit in [offset, offset + 20, offset + 40] {
                    let literals: Vec<u8> = (0..lit).map(|k| (k * 7 + offset) as u8).collect();
                    let mut block = Vec::new();
                    let mut want = literals.clone();
                    let ml = len - MIN_MATCH;
                    block.push(((lit.min(15) << 4) | ml.min(15)) as u8);
                    if lit >= 15 {
                        push_ext(&mut block, lit - 15);
                    }
                    block.extend_from_slice(&literals);
                    block.extend_from_slice(&(offset as u16).to_le_bytes());
                    if ml >= 15 {
                        push_ext(&mut block, ml - 15);
                    }
                    for _ in 0..len {
                        want.push(want[want.len() - offset]);
                    }
                    // A last run long enough that the match above is decoded by the fast loop.
                    let tail: Vec<u8> = (0..40u8).collect();
                    block.push(0xf0);
                    push_ext(&mut block, tail.len() - 15);
                    block.extend_from_slice(&tail);
                    want.extend_from_slice(&tail);

                    let mut out = vec![0u8; want.len() + 64];
                    let n = decompress_block(&block, &mut out, &[]).unwrap();
                    assert!(out[..n] == want[..], "offset {offset} len {len} lit {lit}");
                    both(&block, want.len(), &[]);
                    both(&block, want.len() + 64, &[]);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn fast_path_equals_checked_path_on_valid_blocks(
            input in page_like(),
            slack in 0usize..64,
            dict in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut tables = Tables::new_boxed();
            let mut comp = vec![0u8; compress_bound(input.len())];
            let n = compress(&mut tables, &input, &mut comp, 1).unwrap();
            both(&comp[..n], input.len() + slack, &dict);
            both(&comp[..n], input.len().saturating_sub(slack), &dict);
            let mut out = vec![0u8; input.len()];
            prop_assert_eq!(decompress_block(&comp[..n], &mut out, &dict), Ok(input.len()));
            prop_assert!(out == input);
        }

        #[test]
        fn fast_path_equals_checked_path_on_damaged_blocks(
            input in page_like(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            dict in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut tables = Tables::new_boxed();
            let mut comp = vec![0u8; compress_bound(input.len())];
            let n = compress(&mut tables, &input, &mut comp, 1).unwrap();
            let mut bad = comp[..n].to_vec();
            for (at, b) in flips {
                let i = at.index(bad.len());
                bad[i] = b;
            }
            both(&bad, input.len() + 40, &dict);
            both(&bad, 8192, &dict);
        }

        #[test]
        fn fast_path_equals_checked_path_on_garbage(
            junk in proptest::collection::vec(any::<u8>(), 0..2000),
            cap in 0usize..9000,
        ) {
            both(&junk, cap, &[]);
        }
    }
}
