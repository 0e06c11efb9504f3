//! The LZO1X encoder's vocabulary, shared by both compress paths
//! ([`compress_fast`](mod@super::compress_fast) and
//! [`compress_checked`](mod@super::compress_checked)): the instruction markers and limits, the
//! probe hash, the chunk, the short-match encodings, and the checked writers of literals and of a
//! stream's end ([`finish`]), which both paths use for the last bytes of a stream. Safe code
//! only.

#![forbid(unsafe_code)]

use super::D_BITS;
use crate::CompError;

pub(super) const M2_MAX_LEN: usize = 8;
pub(super) const M3_MAX_LEN: usize = 33;
pub(super) const M4_MAX_LEN: usize = 9;
pub(super) const M2_MAX_OFFSET: usize = 0x0800;
pub(super) const M3_MAX_OFFSET: usize = 0x4000;
pub(super) const M4_MAX_OFFSET_V0: usize = 0xbfff;
pub(super) const M4_MAX_OFFSET_V1: usize = 0xbffe;
pub(super) const M3_MARKER: u8 = 32;
pub(super) const M4_MARKER: u8 = 16;
pub(super) const MIN_ZERO_RUN_LENGTH: usize = 4;
pub(super) const MAX_ZERO_RUN_LENGTH: usize = 2047 + MIN_ZERO_RUN_LENGTH;
/// Inputs (and chunks) of this many bytes or fewer are only literals; the last this many bytes
/// of a chunk are never probed.
pub(super) const TAIL: usize = 20;

/// The multiplicative hash of the 4 probe bytes (`dv * 0x1824429d >> (32 - D_BITS)`).
#[inline(always)]
pub(super) fn hash(dv: u32) -> usize {
    (dv.wrapping_mul(0x1824_429d) >> (32 - D_BITS)) as usize
}

/// One chunk: `src[base..base + len]`, with `carried` literals pending that end at `base`.
#[derive(Clone, Copy)]
pub(super) struct Chunk {
    pub(super) base: usize,
    pub(super) len: usize,
    pub(super) carried: usize,
}

/// The output's free space: [`CompError::OutputTooSmall`] unless `n` bytes fit at `op`.
#[inline(always)]
pub(super) fn need(dst: &[u8], op: usize, n: usize) -> Result<(), CompError> {
    if dst.len() - op >= n {
        Ok(())
    } else {
        Err(CompError::OutputTooSmall { capacity: dst.len() })
    }
}

/// Writes `bytes` at `op`, checked, and returns the new write position.
#[inline(always)]
pub(super) fn put<const N: usize>(
    dst: &mut [u8],
    op: usize,
    bytes: [u8; N],
) -> Result<usize, CompError> {
    let capacity = dst.len();
    let Some(w) = dst.get_mut(op..op + N) else {
        return Err(CompError::OutputTooSmall { capacity });
    };
    w.copy_from_slice(&bytes);
    Ok(op + N)
}

/// The number of bytes [`extension`] writes for `len` (>= 1).
#[inline(always)]
pub(super) fn extension_len(len: usize) -> usize {
    len.div_ceil(255)
}

/// Writes `len` as the zero-byte extension: `len / 255` zero bytes (minus one when the remainder
/// would be zero), then the remainder; returns the new write position. The room was reserved
/// with [`need`]. Out of line: long runs are the rare case.
#[inline(never)]
pub(super) fn extension(dst: &mut [u8], mut op: usize, mut len: usize) -> usize {
    while len > 255 {
        len -= 255;
        dst[op] = 0;
        op += 1;
    }
    dst[op] = len as u8;
    op + 1
}

/// Bytes before `t` literals: none (the count goes into the last instruction), one (`t - 3`), or
/// a zero and the extension of `t - 18`. The tail's `17 + t` form is one byte as well.
#[inline(always)]
pub(super) fn literal_header_len(t: usize) -> usize {
    match t {
        0..=3 => 0,
        4..=18 => 1,
        _ => 1 + extension_len(t - 18),
    }
}

/// ORs a count of 1-3 literals into the SS bits of the last instruction, `back` bytes before
/// `op` (2 after a match, its distance's low byte; 3 after an RLE instruction).
#[inline(always)]
fn or_literal_count(dst: &mut [u8], op: usize, back: usize, t: usize) {
    // The kernel writes here blindly; on a stream's very first instruction there is nothing
    // before it, but `t <= 3` literals cannot be pending then (probing starts 5 bytes in).
    if let Some(at) = op.checked_sub(back) {
        dst[at] |= t as u8;
    }
}

/// Emits `t` literals from `src[from..]` with their header, every write checked; returns the
/// new write position. The first-instruction form (`17 + t`) is the caller's.
#[inline(always)]
pub(super) fn literals_checked(
    src: &[u8],
    dst: &mut [u8],
    mut op: usize,
    back: usize,
    from: usize,
    t: usize,
) -> Result<usize, CompError> {
    need(dst, op, t + literal_header_len(t))?;
    if t <= 3 {
        or_literal_count(dst, op, back, t);
    } else if t <= 18 {
        dst[op] = t as u8 - 3;
        op += 1;
    } else {
        dst[op] = 0;
        op = extension(dst, op + 1, t - 18);
    }
    dst[op..op + t].copy_from_slice(&src[from..from + t]);
    Ok(op + t)
}

/// The encoding of an M2 match or an M3 match without length extension, as a little-endian u32
/// of which the first `n` bytes count, and `n`; `None` for the longer or farther ones.
#[inline(always)]
pub(super) fn short_match(m_len: usize, m_off: usize) -> Option<(u32, usize)> {
    let d = (m_off - 1) as u32;
    if m_len <= M2_MAX_LEN && m_off <= M2_MAX_OFFSET {
        Some(((((m_len as u32 - 1) << 5) | ((d & 7) << 2)) | ((d >> 3) << 8), 2))
    } else if m_off <= M3_MAX_OFFSET && m_len <= M3_MAX_LEN {
        Some((u32::from(M3_MARKER) | (m_len as u32 - 2) | ((d << 2) << 8), 3))
    } else {
        None
    }
}

/// Emits the last `t` literals of `src` (the first-instruction form `17 + t` if nothing else was
/// written) and the end marker, every write checked; returns the compressed length.
#[inline(always)]
pub(super) fn finish(
    src: &[u8],
    dst: &mut [u8],
    mut op: usize,
    back: usize,
    data_start: usize,
    t: usize,
) -> Result<usize, CompError> {
    if t > 0 {
        let from = src.len() - t;
        if op == data_start && t <= 238 {
            need(dst, op, 1 + t)?;
            dst[op] = 17 + t as u8;
            dst[op + 1..op + 1 + t].copy_from_slice(&src[from..]);
            op += 1 + t;
        } else {
            op = literals_checked(src, dst, op, back, from, t)?;
        }
    }
    put(dst, op, [M4_MARKER | 1, 0, 0])
}
