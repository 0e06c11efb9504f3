//! The kernel's LZO1X-1 compressor (`lzo1x_1_compress`, `lzorle1x_1_compress`), reproduced.
//!
//! Input is cut into chunks of at most 0xc000 bytes (v0) or 0xbfff (v1) so every distance fits
//! an M4 offset; a 4 KiB page is one chunk. Within a chunk the compressor walks a probe position
//! `ip`, hashes the 4 bytes there into a 13-bit dictionary of u16 offsets (cleared per chunk, so
//! an empty slot points at the chunk start) and stores `ip` there *before* checking the candidate.
//! A candidate whose 4 bytes equal the probe's is a match; there is no distance check. Without a
//! match, `ip` advances by 1 + (literals pending / 32), so incompressible data is skimmed.
//! Matches are extended 8 bytes at a time (the kernel's `ctz` path); the end test is made only
//! after each 8 equal bytes, so a match may run up to 7 bytes into the 20-byte tail that is
//! otherwise always emitted as literals. lzo-rle first checks whether the 4 probe bytes are zero
//! and, if so, measures the zero run (at most 2051 bytes, never past the 20-byte tail) and emits
//! the RLE instruction without touching the dictionary.
//!
//! Two paths give the same bytes. A destination of at least `fast_bound` bytes (the worst case;
//! zram's two pages) takes `compress_fast`: no room checks, no bounds checks (a proof in
//! `compress_chunk_fast`, asserted in debug builds), positions as offsets from the chunk start
//! so the dictionary stores the probe position itself, literals in 16-byte blocks, and a probe
//! loop whose step-to-step chain is a single add over the first 32 bytes of a literal run (the
//! skip is 1 there) and otherwise works on `ip - ii` alone. A smaller destination takes
//! `compress_chunk`, where too little room gives [`CompError::OutputTooSmall`], as the kernel's
//! `lzo1x_1_compress_safe` returns `LZO_E_OUTPUT_OVERRUN`: the room check is made once per
//! sequence (literals and the match after them); where the sequence certainly fits, its bytes
//! are written without bounds checks, and near the end each write is checked.
//! `compress_checked` (tests) checks every load and write.

use super::compress_fast::{compress_fast, fast_bound};
use super::{D_BITS, Dict, RLE_VERSION, VERSION_MARKER, Variant};
use crate::CompError;

const M2_MAX_LEN: usize = 8;
pub(super) const M3_MAX_LEN: usize = 33;
pub(super) const M4_MAX_LEN: usize = 9;
const M2_MAX_OFFSET: usize = 0x0800;
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

#[inline(always)]
fn read_u32(src: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(src[at..at + 4].try_into().unwrap())
}

#[inline(always)]
fn read_u64(src: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(src[at..at + 8].try_into().unwrap())
}

/// The probe loop's and the match extension's loads: bounds-checked when `CHECKED`, otherwise
/// unchecked on the strength of the chunk invariants (see the call sites). Both are compiled;
/// the tests compare the two paths' output.
#[inline(always)]
fn load_u32<const CHECKED: bool>(src: &[u8], at: usize) -> u32 {
    if CHECKED {
        return read_u32(src, at);
    }
    debug_assert!(at + 4 <= src.len());
    // SAFETY: every caller passes `at + 4 <= src.len()`: probes are below `ip_end`, which is 20
    // bytes before the chunk end, and candidates are at or before the probe (the dictionary is
    // cleared per chunk and only ever given offsets of earlier probes).
    u32::from_le(unsafe { src.as_ptr().add(at).cast::<u32>().read_unaligned() })
}

#[inline(always)]
fn load_u64<const CHECKED: bool>(src: &[u8], at: usize) -> u64 {
    if CHECKED {
        return read_u64(src, at);
    }
    debug_assert!(at + 8 <= src.len());
    // SAFETY: every caller passes `at + 8 <= src.len()`: match extension reads at
    // `ip + m_len` with `ip + m_len < ip_end + 12 <= chunk end - 8` (the end test runs after
    // every 8 bytes) and at `m_pos + m_len` with `m_pos < ip`.
    u64::from_le(unsafe { src.as_ptr().add(at).cast::<u64>().read_unaligned() })
}

/// The output's free space: [`CompError::OutputTooSmall`] unless `n` bytes fit at `op`.
#[inline(always)]
fn need(dst: &[u8], op: usize, n: usize) -> Result<(), CompError> {
    if dst.len() - op >= n {
        Ok(())
    } else {
        Err(CompError::OutputTooSmall { capacity: dst.len() })
    }
}

/// Writes `bytes` at `op`, checked, and returns the new write position.
#[inline(always)]
fn put<const N: usize>(dst: &mut [u8], op: usize, bytes: [u8; N]) -> Result<usize, CompError> {
    let capacity = dst.len();
    let Some(w) = dst.get_mut(op..op + N) else {
        return Err(CompError::OutputTooSmall { capacity });
    };
    w.copy_from_slice(&bytes);
    Ok(op + N)
}

/// The number of bytes [`extension`] writes for `len` (>= 1).
#[inline(always)]
fn extension_len(len: usize) -> usize {
    len.div_ceil(255)
}

/// Writes `len` as the zero-byte extension: `len / 255` zero bytes (minus one when the remainder
/// would be zero), then the remainder; returns the new write position. The room was reserved
/// with [`need`]. Out of line: long runs are the rare case.
#[inline(never)]
fn extension(dst: &mut [u8], mut op: usize, mut len: usize) -> usize {
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
fn literals_checked(
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

/// Room [`sequence_fits`] asks for beyond the literals themselves: the literal header (at most
/// 2 + t / 128 bytes: one byte plus the extension of t - 18, which is `ceil((t - 18) / 255)`),
/// the 16-byte blocks' overshoot (15) and one 4-byte store for the short match or RLE
/// instruction that follows (4) — 2 + 15 + 4.
const FAST_ROOM: usize = 21;

/// Whether `t` literals and a short match (or RLE instruction) certainly fit at `op`, so that
/// the unchecked writes of [`literals_unchecked`] and [`store`] stay inside `dst`.
#[inline(always)]
fn sequence_fits(dst: &[u8], op: usize, t: usize) -> bool {
    dst.len() - op >= t + (t >> 7) + FAST_ROOM
}

/// `dst[at..at + N] = bytes` without a bounds check.
///
/// # Safety
///
/// `at + N <= dst.len()`.
#[inline(always)]
unsafe fn store<const N: usize>(dst: &mut [u8], at: usize, bytes: [u8; N]) {
    debug_assert!(at + N <= dst.len());
    // SAFETY: the caller guarantees `at + N <= dst.len()`; `[u8; N]` has alignment 1.
    unsafe { dst.as_mut_ptr().add(at).cast::<[u8; N]>().write(bytes) }
}

/// [`literals_checked`] without bounds checks: the header, then the literals copied in 16-byte
/// blocks, as the kernel's `COPY8` pairs do (the overshoot is overwritten by what follows or lies
/// past the returned length).
///
/// # Safety
///
/// [`sequence_fits`]`(dst, op, t)`, and `from + t.next_multiple_of(16) <= src.len()` (true for
/// literals that end before `ip_end`: the chunk's 20-byte tail follows them).
#[inline(always)]
unsafe fn literals_unchecked(
    src: &[u8],
    dst: &mut [u8],
    mut op: usize,
    back: usize,
    from: usize,
    t: usize,
) -> usize {
    const BLOCK: usize = 16;
    debug_assert!(sequence_fits(dst, op, t) && from + t.next_multiple_of(BLOCK) <= src.len());
    if t <= 3 {
        if t != 0 {
            or_literal_count(dst, op, back, t);
            // SAFETY: `from + 4 <= src.len()` and `op + 4 <= dst.len()`, both implied by the
            // conditions above.
            unsafe {
                let word = src.as_ptr().add(from).cast::<[u8; 4]>().read();
                store(dst, op, word);
            }
        }
        return op + t;
    } else if t <= 18 {
        // SAFETY: `sequence_fits` leaves room for the header byte.
        unsafe { store(dst, op, [t as u8 - 3]) };
        op += 1;
    } else {
        let mut rest = t - 18;
        // SAFETY: these `1 + ceil((t - 18) / 255) <= 2 + t / 128` header bytes are what
        // `FAST_ROOM` reserves for the header.
        unsafe { store(dst, op, [0]) };
        op += 1;
        while rest > 255 {
            rest -= 255;
            // SAFETY: as above.
            unsafe { store(dst, op, [0]) };
            op += 1;
        }
        // SAFETY: as above.
        unsafe { store(dst, op, [rest as u8]) };
        op += 1;
    }
    let mut k = 0;
    while k < t {
        // SAFETY: `k < t`, so `from + k + 16 <= from + t.next_multiple_of(16) <= src.len()` and,
        // with the header written, `op + k + 16 <= op + t + 15 + (header) <= dst.len()` by
        // `sequence_fits`.
        unsafe {
            let block = src.as_ptr().add(from + k).cast::<[u8; BLOCK]>().read();
            store(dst, op + k, block);
        }
        k += BLOCK;
    }
    op + t
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

/// Compresses `src` into `dst` as the kernel does and returns the compressed length.
///
/// `dict` is the stream's work memory; its content on entry does not matter.
pub fn compress(
    src: &[u8],
    dst: &mut [u8],
    dict: &mut Dict,
    variant: Variant,
) -> Result<usize, CompError> {
    compress_with::<false>(src, dst, dict, variant)
}

/// [`compress`] with every load and every write bounds-checked: the reference the unchecked
/// paths are tested against.
#[cfg(test)]
pub(super) fn compress_checked(
    src: &[u8],
    dst: &mut [u8],
    dict: &mut Dict,
    variant: Variant,
) -> Result<usize, CompError> {
    compress_with::<true>(src, dst, dict, variant)
}

#[inline(always)]
fn compress_with<const CHECKED: bool>(
    src: &[u8],
    dst: &mut [u8],
    dict: &mut Dict,
    variant: Variant,
) -> Result<usize, CompError> {
    if !CHECKED && dst.len() >= fast_bound(variant, src.len()) {
        // SAFETY: just checked.
        return unsafe {
            match variant {
                Variant::Lzo => compress_fast::<false>(src, dst, dict),
                Variant::LzoRle => compress_fast::<true>(src, dst, dict),
            }
        };
    }
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
            compress_chunk::<true, CHECKED>(src, chunk, dict, dst, op, back)?
        } else {
            compress_chunk::<false, CHECKED>(src, chunk, dict, dst, op, back)?
        };
        pos += len;
        left -= len;
    }
    finish(src, dst, op, back, data_start, pending + left)
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

/// One chunk: `src[base..base + len]`, with `carried` literals pending that end at `base`.
#[derive(Clone, Copy)]
pub(super) struct Chunk {
    pub(super) base: usize,
    pub(super) len: usize,
    pub(super) carried: usize,
}

/// Compresses one chunk (`lzo1x_1_do_compress`), writing from `op` on. Returns the number of
/// literals left pending at the chunk's end, the write position and `back` (see
/// [`compress_with`]).
///
/// Each sequence (literals, then a match or zero run) is written without bounds checks when
/// [`sequence_fits`] says it fits, and checked write by write otherwise (a destination smaller
/// than the worst case, near its end), so both give the same bytes and a destination that is too
/// small still gives [`CompError::OutputTooSmall`].
#[inline(always)]
fn compress_chunk<const RLE: bool, const CHECKED: bool>(
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
            let dv = load_u32::<CHECKED>(src, ip);
            if RLE && dv == 0 {
                break (0, zero_run(src, ip, ip_end));
            }
            let h = hash(dv);
            let cand = base + dict[h] as usize;
            dict[h] = (ip - base) as u16;
            if load_u32::<CHECKED>(src, cand) == dv {
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
        let fast = !CHECKED && sequence_fits(dst, op, t);
        if fast {
            // SAFETY: `sequence_fits` just held, and the literals end at `ip < ip_end`, 20
            // bytes before the chunk's end, so the source blocks stay in `src`.
            op = unsafe { literals_unchecked(src, dst, op, back, ii, t) };
        } else if t != 0 {
            op = literals_checked(src, dst, op, back, ii, t)?;
        }

        if RLE && run != 0 {
            ip += run;
            let rl = (run - MIN_ZERO_RUN_LENGTH) as u32;
            let code = ((rl << 21) | 0x00ff_fc18 | (rl & 7)).to_le_bytes();
            if fast {
                // SAFETY: `sequence_fits` reserved 4 bytes after the literals.
                unsafe { store(dst, op, code) };
                op += 4;
            } else {
                op = put(dst, op, code)?;
            }
            back = 3;
            ii = ip;
            continue;
        }

        let m_len = match_len::<CHECKED>(src, ip, m_pos, ip_end);
        let m_off = ip - m_pos;
        if let Some((code, n)) = short_match(m_len, m_off) {
            if fast {
                // SAFETY: `sequence_fits` reserved 4 bytes after the literals; the bytes past
                // `n` are overwritten by what follows or lie past the returned length.
                unsafe { store(dst, op, code.to_le_bytes()) };
            } else {
                need(dst, op, n)?;
                dst[op..op + n].copy_from_slice(&code.to_le_bytes()[..n]);
            }
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

/// The length of the match at `ip` against `m_pos` (whose first 4 bytes are equal): extended 8
/// bytes at a time, with the end test only after each 8 equal bytes, as the kernel's `ctz` path.
#[inline(always)]
pub(super) fn match_len<const CHECKED: bool>(
    src: &[u8],
    ip: usize,
    m_pos: usize,
    ip_end: usize,
) -> usize {
    let mut m_len = 4;
    loop {
        let v = load_u64::<CHECKED>(src, ip + m_len) ^ load_u64::<CHECKED>(src, m_pos + m_len);
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
