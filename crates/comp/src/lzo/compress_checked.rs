//! The room-checked path of the LZO1X-1 compressor, in safe code: every load and every write is
//! bounds-checked, and too little room gives [`CompError::OutputTooSmall`], as the kernel's
//! `lzo1x_1_compress_safe` returns `LZO_E_OUTPUT_OVERRUN`. [`super::compress()`] takes it for a
//! destination smaller than [`super::compress_fast::fast_bound`] (never zram's or zswap's
//! two-page buffer), and it is the reference the unchecked
//! [`compress_fast`](mod@super::compress_fast) path is tested and fuzzed against: both give the
//! same bytes.

#![forbid(unsafe_code)]

use super::encode::{
    Chunk, M3_MARKER, M3_MAX_LEN, M3_MAX_OFFSET, M4_MARKER, M4_MAX_LEN, M4_MAX_OFFSET_V0,
    M4_MAX_OFFSET_V1, MAX_ZERO_RUN_LENGTH, MIN_ZERO_RUN_LENGTH, TAIL, extension, extension_len,
    finish, hash, literals_checked, need, put, short_match,
};
use super::{Dict, RLE_VERSION, VERSION_MARKER, Variant};
use crate::CompError;

#[inline(always)]
fn read_u32(src: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(src[at..at + 4].try_into().unwrap())
}

#[inline(always)]
fn read_u64(src: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(src[at..at + 8].try_into().unwrap())
}

/// Compresses `src` into `dst` as the kernel does, every access checked, and returns the
/// compressed length; [`CompError::OutputTooSmall`] if the stream does not fit.
///
/// `dict` is the stream's work memory; its content on entry does not matter.
pub(super) fn compress_checked(
    src: &[u8],
    dst: &mut [u8],
    dict: &mut Dict,
    variant: Variant,
) -> Result<usize, CompError> {
    let rle = variant == Variant::LzoRle;
    let mut op = 0;
    let m4_max_offset = if rle {
        op = put(dst, op, [VERSION_MARKER, RLE_VERSION])?;
        M4_MAX_OFFSET_V1
    } else {
        M4_MAX_OFFSET_V0
    };
    let data_start = op;
    // Where the SS bits of the last instruction are, counted back from `op`: 2 after a match
    // (its last two bytes are the distance, SS in the first), 3 after an RLE instruction.
    let mut back = 2;

    let mut pos = 0;
    let mut left = src.len();
    let mut pending = 0; // literals not yet emitted, ending at `pos`
    while left > TAIL {
        let len = left.min(m4_max_offset + 1);
        let chunk = Chunk { base: pos, len, carried: pending };
        (pending, op, back) = if rle {
            compress_chunk::<true>(src, chunk, dict, dst, op, back)?
        } else {
            compress_chunk::<false>(src, chunk, dict, dst, op, back)?
        };
        pos += len;
        left -= len;
    }
    finish(src, dst, op, back, data_start, pending + left)
}

/// Compresses one chunk (`lzo1x_1_do_compress`), writing from `op` on. Returns the number of
/// literals left pending at the chunk's end, the write position and `back` (see
/// [`compress_checked`]).
#[inline(always)]
fn compress_chunk<const RLE: bool>(
    src: &[u8],
    chunk: Chunk,
    dict: &mut Dict,
    dst: &mut [u8],
    mut op: usize,
    mut back: usize,
) -> Result<(usize, usize, usize), CompError> {
    let Chunk { base, len, carried } = chunk;
    // A cleared dictionary is what keeps every candidate at or before its probe.
    dict.fill(0);
    let in_end = base + len;
    let ip_end = in_end - TAIL;
    let mut ti = carried;
    let mut ii = base;
    let mut ip = base + 4usize.saturating_sub(ti);
    ip += 1 + ((ip - ii) >> 5);

    'chunk: loop {
        // Probe at `ip`; without a match (or zero run), skip ahead and probe again.
        let (m_pos, run) = loop {
            if ip >= ip_end {
                break 'chunk;
            }
            let dv = read_u32(src, ip);
            if RLE && dv == 0 {
                break (0, zero_run(src, ip, ip_end));
            }
            let h = hash(dv);
            let cand = base + dict[h] as usize;
            dict[h] = (ip - base) as u16;
            if read_u32(src, cand) == dv {
                break (cand, 0);
            }
            ip += 1 + ((ip - ii) >> 5);
        };

        // The literals pending before `ip` (those carried from the last chunk included).
        ii -= ti;
        ti = 0;
        let t = ip - ii;
        if !RLE {
            back = 2; // constant for lzo: every instruction is a match
        }
        if t != 0 {
            op = literals_checked(src, dst, op, back, ii, t)?;
        }

        if RLE && run != 0 {
            ip += run;
            let rl = (run - MIN_ZERO_RUN_LENGTH) as u32;
            op = put(dst, op, ((rl << 21) | 0x00ff_fc18 | (rl & 7)).to_le_bytes())?;
            back = 3;
            ii = ip;
            continue;
        }

        let m_len = match_len(src, ip, m_pos, ip_end);
        let m_off = ip - m_pos;
        if let Some((code, n)) = short_match(m_len, m_off) {
            need(dst, op, n)?;
            dst[op..op + n].copy_from_slice(&code.to_le_bytes()[..n]);
            op += n;
            ip += m_len;
        } else {
            let emitted;
            (op, emitted) = long_match::<RLE>(dst, op, m_len, m_off)?;
            ip += emitted;
        }
        back = 2;
        ii = ip;
    }
    Ok((in_end - (ii - ti), op, back))
}

/// Emits a match that [`short_match`] does not cover: M3 with a length extension or M4, every
/// write checked. Returns the new write position and the match length actually emitted (lzo-rle
/// shortens some). Out of line: on 4 KiB pages these are only the long matches.
#[cold]
#[inline(never)]
fn long_match<const RLE: bool>(
    dst: &mut [u8],
    mut op: usize,
    mut m_len: usize,
    m_off: usize,
) -> Result<(usize, usize), CompError> {
    if m_off <= M3_MAX_OFFSET {
        let d = m_off - 1;
        need(dst, op, 3 + extension_len(m_len - M3_MAX_LEN))?;
        dst[op] = M3_MARKER;
        op = extension(dst, op + 1, m_len - M3_MAX_LEN);
        dst[op] = (d << 2) as u8;
        dst[op + 1] = (d >> 6) as u8;
        return Ok((op + 2, m_len));
    }
    let d = m_off - 0x4000;
    need(dst, op, 3 + extension_len(m_len.saturating_sub(M4_MAX_LEN)))?;
    let h_bit = ((d >> 11) & 8) as u8;
    if m_len <= M4_MAX_LEN {
        dst[op] = M4_MARKER | h_bit | (m_len - 2) as u8;
        op += 1;
    } else {
        // lzo-rle: lengths 261..=264 at distances with these bits set would read as an RLE
        // instruction; the kernel shortens such matches to 260.
        if RLE && (d & 0x403f) == 0x403f && (261..=264).contains(&m_len) {
            m_len = 260;
        }
        dst[op] = M4_MARKER | h_bit;
        op = extension(dst, op + 1, m_len - M4_MAX_LEN);
    }
    dst[op] = (d << 2) as u8;
    dst[op + 1] = (d >> 6) as u8;
    Ok((op + 2, m_len))
}

/// The length of the match at `ip` against `m_pos` (whose first 4 bytes are equal): extended 8
/// bytes at a time, with the end test only after each 8 equal bytes, as the kernel's `ctz` path.
/// Each load ends before `ip_end + 12`, inside the chunk (the end test keeps `ip + m_len <
/// ip_end + 4` at every load), and `m_pos < ip`.
#[inline(always)]
pub(super) fn match_len(src: &[u8], ip: usize, m_pos: usize, ip_end: usize) -> usize {
    let mut m_len = 4;
    loop {
        let v = read_u64(src, ip + m_len) ^ read_u64(src, m_pos + m_len);
        if v != 0 {
            return m_len + (v.trailing_zeros() / 8) as usize;
        }
        m_len += 8;
        if ip + m_len >= ip_end {
            return m_len;
        }
    }
}

/// The length of the zero run at `ip` (whose first 4 bytes are zero), at most
/// [`MAX_ZERO_RUN_LENGTH`] and never reaching `ip_end`.
#[inline(always)]
fn zero_run(src: &[u8], ip: usize, ip_end: usize) -> usize {
    let limit = ip_end.min(ip + MAX_ZERO_RUN_LENGTH + 1);
    let mut ir = ip + 4;
    while ir + 8 < limit {
        let v = read_u64(src, ir);
        if v != 0 {
            ir += (v.trailing_zeros() / 8) as usize;
            return (ir - ip).min(MAX_ZERO_RUN_LENGTH);
        }
        ir += 8;
    }
    while ir < limit && src[ir] == 0 {
        ir += 1;
    }
    (ir - ip).min(MAX_ZERO_RUN_LENGTH)
}
