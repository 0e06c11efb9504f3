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
//! Every write is checked against the destination: a destination that is too small gives
//! [`CompError::OutputTooSmall`], as the kernel's `lzo1x_1_compress_safe` returns
//! `LZO_E_OUTPUT_OVERRUN`.

use super::{D_BITS, Dict, RLE_VERSION, VERSION_MARKER, Variant};
use crate::CompError;

const M2_MAX_LEN: usize = 8;
const M3_MAX_LEN: usize = 33;
const M4_MAX_LEN: usize = 9;
const M2_MAX_OFFSET: usize = 0x0800;
const M3_MAX_OFFSET: usize = 0x4000;
const M4_MAX_OFFSET_V0: usize = 0xbfff;
const M4_MAX_OFFSET_V1: usize = 0xbffe;
const M3_MARKER: u8 = 32;
const M4_MARKER: u8 = 16;
const MIN_ZERO_RUN_LENGTH: usize = 4;
const MAX_ZERO_RUN_LENGTH: usize = 2047 + MIN_ZERO_RUN_LENGTH;
/// Inputs (and chunks) of this many bytes or fewer are only literals; the last this many bytes
/// of a chunk are never probed.
const TAIL: usize = 20;

/// The multiplicative hash of the 4 probe bytes (`dv * 0x1824429d >> (32 - D_BITS)`).
#[inline(always)]
fn hash(dv: u32) -> usize {
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

/// The destination and the write position, with every write checked.
struct Out<'a> {
    buf: &'a mut [u8],
    op: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn room(&self) -> usize {
        self.buf.len() - self.op
    }

    #[inline(always)]
    fn need(&self, n: usize) -> Result<(), CompError> {
        if self.room() >= n {
            Ok(())
        } else {
            Err(CompError::OutputTooSmall { capacity: self.buf.len() })
        }
    }

    /// Writes one byte whose room was reserved by [`Out::need`].
    #[inline(always)]
    fn push(&mut self, b: u8) {
        self.buf[self.op] = b;
        self.op += 1;
    }

    /// The number of bytes [`Out::extension`] writes for `len` (>= 1).
    #[inline(always)]
    fn extension_len(len: usize) -> usize {
        len.div_ceil(255)
    }

    /// Writes `len` as the zero-byte extension: `len / 255` zero bytes (minus one when the
    /// remainder would be zero), then the remainder. Out of line: long runs are the rare case.
    #[inline(never)]
    fn extension(&mut self, mut len: usize) {
        while len > 255 {
            len -= 255;
            self.push(0);
        }
        self.push(len as u8);
    }

    /// Writes `N` bytes at once, checking the room once.
    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) -> Result<(), CompError> {
        let capacity = self.buf.len();
        let Some(w) = self.buf.get_mut(self.op..self.op + N) else {
            return Err(CompError::OutputTooSmall { capacity });
        };
        w.copy_from_slice(&bytes);
        self.op += N;
        Ok(())
    }

    /// Copies `t` literals from `src[from..]` (room reserved by [`Out::need`]). Where both
    /// buffers have room past the `t` bytes (in `src` the chunk's 20-byte tail guarantees it),
    /// the copy is done in 16-byte blocks, as the kernel's `COPY8` pairs do; the excess is
    /// overwritten by what follows.
    #[inline(always)]
    fn copy_literals(&mut self, src: &[u8], from: usize, t: usize) {
        const BLOCK: usize = 16;
        let padded = t.next_multiple_of(BLOCK);
        if self.room() >= padded && src.len() - from >= padded {
            let mut k = 0;
            while k < t {
                let block: &[u8; BLOCK] = src[from + k..from + k + BLOCK].try_into().unwrap();
                self.buf[self.op + k..self.op + k + BLOCK].copy_from_slice(block);
                k += BLOCK;
            }
        } else {
            self.buf[self.op..self.op + t].copy_from_slice(&src[from..from + t]);
        }
        self.op += t;
    }
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

/// [`compress`] with every load bounds-checked: the reference the unchecked loads are tested
/// against.
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
    let mut out = Out { buf: dst, op: 0 };
    let rle = variant == Variant::LzoRle;
    let m4_max_offset = if rle {
        out.need(2)?;
        out.push(VERSION_MARKER);
        out.push(RLE_VERSION);
        M4_MAX_OFFSET_V1
    } else {
        M4_MAX_OFFSET_V0
    };
    let data_start = out.op;
    let mut state = State { back: 2 };

    let mut pos = 0;
    let mut left = src.len();
    let mut pending = 0; // literals not yet emitted, ending at `pos`
    while left > TAIL {
        let len = left.min(m4_max_offset + 1);
        pending = if rle {
            compress_chunk::<true, CHECKED>(src, pos, len, pending, dict, &mut out, &mut state)?
        } else {
            compress_chunk::<false, CHECKED>(src, pos, len, pending, dict, &mut out, &mut state)?
        };
        pos += len;
        left -= len;
    }
    let t = pending + left;

    if t > 0 {
        let first = out.op == data_start && t <= 238;
        out.need(t + if first { 1 } else { literal_header_len(t) })?;
        if first {
            out.push(17 + t as u8);
        } else if t <= 3 {
            state.or_literal_count(&mut out, t);
        } else if t <= 18 {
            out.push(t as u8 - 3);
        } else {
            out.push(0);
            out.extension(t - 18);
        }
        out.copy_literals(src, src.len() - t, t);
    }
    out.need(3)?;
    out.push(M4_MARKER | 1);
    out.push(0);
    out.push(0);
    Ok(out.op)
}

/// Bytes before `t` literals: none (the count goes into the last instruction), one (`t - 3`), or
/// a zero and the extension of `t - 18`. The tail's `17 + t` form is one byte as well.
#[inline(always)]
fn literal_header_len(t: usize) -> usize {
    match t {
        0..=3 => 0,
        4..=18 => 1,
        _ => 1 + Out::extension_len(t - 18),
    }
}

/// Where the SS bits of the last instruction are, counted back from the write position: 2 after
/// a match (its last two bytes are the distance, SS in the first), 3 after an RLE instruction.
struct State {
    back: usize,
}

impl State {
    #[inline(always)]
    fn or_literal_count(&self, out: &mut Out<'_>, t: usize) {
        // The kernel writes here blindly; on a stream's very first instruction there is nothing
        // before it, but `t <= 3` literals cannot be pending then (probing starts 5 bytes in).
        if let Some(at) = out.op.checked_sub(self.back) {
            out.buf[at] |= t as u8;
        }
    }
}

/// Compresses one chunk `src[base..base + len]` (`lzo1x_1_do_compress`). `carried` literals end
/// at `base`; returns the number of literals left pending at the chunk's end.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn compress_chunk<const RLE: bool, const CHECKED: bool>(
    src: &[u8],
    base: usize,
    len: usize,
    carried: usize,
    dict: &mut Dict,
    out: &mut Out<'_>,
    state: &mut State,
) -> Result<usize, CompError> {
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

        // Emit the literals pending before `ip` (those carried from the last chunk included).
        ii -= ti;
        ti = 0;
        let t = ip - ii;

        if t != 0 {
            out.need(t + literal_header_len(t))?;
            if t <= 3 {
                state.or_literal_count(out, t);
            } else if t <= 18 {
                out.push(t as u8 - 3);
            } else {
                out.push(0);
                out.extension(t - 18);
            }
            out.copy_literals(src, ii, t);
        }

        if run != 0 {
            ip += run;
            let rl = (run - MIN_ZERO_RUN_LENGTH) as u32;
            out.put(((rl << 21) | 0x00ff_fc18 | (rl & 7)).to_le_bytes())?;
            state.back = 3;
            ii = ip;
            continue;
        }

        let mut m_len = match_len::<CHECKED>(src, ip, m_pos, ip_end);

        let m_off = ip - m_pos;
        ip += m_len;
        if m_len <= M2_MAX_LEN && m_off <= M2_MAX_OFFSET {
            let d = m_off - 1;
            out.put([(((m_len - 1) << 5) | ((d & 7) << 2)) as u8, (d >> 3) as u8])?;
        } else if m_off <= M3_MAX_OFFSET {
            let d = m_off - 1;
            if m_len <= M3_MAX_LEN {
                out.put([M3_MARKER | (m_len - 2) as u8, (d << 2) as u8, (d >> 6) as u8])?;
            } else {
                out.need(3 + Out::extension_len(m_len - M3_MAX_LEN))?;
                out.push(M3_MARKER);
                out.extension(m_len - M3_MAX_LEN);
                out.push((d << 2) as u8);
                out.push((d >> 6) as u8);
            }
        } else {
            let d = m_off - 0x4000;
            out.need(3 + Out::extension_len(m_len.saturating_sub(M4_MAX_LEN)))?;
            let h_bit = ((d >> 11) & 8) as u8;
            if m_len <= M4_MAX_LEN {
                out.push(M4_MARKER | h_bit | (m_len - 2) as u8);
            } else {
                // lzo-rle: lengths 261..=264 at distances with these bits set would read as an
                // RLE instruction; the kernel shortens such matches to 260.
                if RLE && (d & 0x403f) == 0x403f && (261..=264).contains(&m_len) {
                    ip -= m_len - 260;
                    m_len = 260;
                }
                out.push(M4_MARKER | h_bit);
                out.extension(m_len - M4_MAX_LEN);
            }
            out.push((d << 2) as u8);
            out.push((d >> 6) as u8);
        }
        state.back = 2;
        ii = ip;
    }
    Ok(in_end - (ii - ti))
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
