//! The worst-case-destination path of the LZO1X-1 compressor: a destination of at least
//! [`fast_bound`] bytes (zram's two pages always are) is written with no room checks and no
//! bounds checks. Why no write leaves the destination is proved on [`compress_chunk_fast`] and
//! asserted in debug builds; the bytes are those of the safe, every-access-checked
//! [`compress_checked`](mod@super::compress_checked) path, its checked twin (tests and fuzz
//! targets compare them).

use super::encode::{
    Chunk, M3_MARKER, M3_MAX_LEN, M3_MAX_OFFSET, M4_MARKER, M4_MAX_LEN, M4_MAX_OFFSET_V0,
    M4_MAX_OFFSET_V1, MAX_ZERO_RUN_LENGTH, MIN_ZERO_RUN_LENGTH, TAIL, finish, hash,
    literal_header_len, short_match,
};
use super::{Dict, RLE_VERSION, VERSION_MARKER, Variant};
use crate::CompError;

/// The destination size from which [`super::compress()`] writes without any room check: a worst
/// case for `n` input bytes that [`compress_chunk_fast`] proves no write passes. For `lzo` it is
/// the kernel's `lzo1x_worst_compress` (`n + n/16 + 64 + 3`). For `lzo-rle` the same accounting
/// only gives `n + n/8` (a 4-byte zero run costs its 4 bytes, so 4 literals and a zero run are 9
/// bytes for 8), hence `n + n/8 + 64 + 3` plus the 2-byte header; real inputs stay far below (the
/// `x000` probes before such runs find matches), and zram's two-page destination exceeds both.
pub(super) const fn fast_bound(variant: Variant, n: usize) -> usize {
    match variant {
        Variant::Lzo => n + n / 16 + 64 + 3,
        Variant::LzoRle => n + n / 8 + 64 + 3 + 2,
    }
}

/// `compress_checked::compress_checked` for a destination of at least [`fast_bound`] bytes: the
/// chunks go through [`compress_chunk_fast`], the short tail through [`finish`].
///
/// # Safety
///
/// `dst.len() >= fast_bound(variant, src.len())` for the variant `RLE` selects.
#[inline(never)]
pub(super) unsafe fn compress_fast<const RLE: bool>(
    src: &[u8],
    dst: &mut [u8],
    dict: &mut Dict,
) -> Result<usize, CompError> {
    let (data_start, m4_max_offset) = if RLE {
        dst[..2].copy_from_slice(&[VERSION_MARKER, RLE_VERSION]);
        (2, M4_MAX_OFFSET_V1)
    } else {
        (0, M4_MAX_OFFSET_V0)
    };
    let out = dst.as_mut_ptr();
    // SAFETY: `data_start < dst.len()`, and one past the end is a valid pointer.
    let (mut op, end) = unsafe { (out.add(data_start), out.add(dst.len())) };
    let mut back = 2;
    let mut pos = 0;
    let mut left = src.len();
    let mut pending = 0;
    while left > TAIL {
        let len = left.min(m4_max_offset + 1);
        let chunk = Chunk { base: pos, len, carried: pending };
        // SAFETY: the caller's bound; the chunks are cut in order from `src`, `pending` are the
        // literals before `pos` not yet emitted, `op` and `back` what the last chunk returned.
        (pending, op) = unsafe {
            compress_chunk_fast::<RLE>(src, chunk, dict, op, &mut back, Bounds { out, end })
        };
        pos += len;
        left -= len;
    }
    // SAFETY: `op` only moved forward from `out` inside `dst`.
    let op = unsafe { op.offset_from(out) } as usize;
    finish(src, dst, op, back, data_start, pending + left)
}

/// The destination's start and end, for the debug assertions of [`compress_chunk_fast`].
#[derive(Clone, Copy)]
struct Bounds {
    out: *mut u8,
    end: *mut u8,
}

/// `compress_checked::compress_chunk` for a destination of at least [`fast_bound`] bytes: no room
/// checks, no bounds checks, positions as offsets from the chunk start (so the dictionary stores
/// the probe position itself) and the output position as a pointer.
///
/// # Why every write stays inside `dst`
///
/// Let `S` be 16 for `lzo` and 8 for `lzo-rle`, `D` the header length (0 or 2), `n = src.len()`
/// and `g` the position in `src` of the first literal not yet emitted. At the start of every
/// sequence (and of every chunk) `op <= D + g + g / S`:
///
/// - `t` literals cost `t + h(t)` bytes, with the header `h(t)` = 0 for `t <= 3`, 1 for
///   `t <= 18`, else `1 + ceil((t - 18) / 255)`. A match of `m >= 4` bytes costs at most `m - 1`
///   (M2: 2 bytes, M3/M4: 3 plus `ceil((len - 33 or 9) / 255)` extension bytes), a zero run of
///   `m >= 4` bytes costs 4 <= m.
/// - `h(t) - 1 <= (t + 4) / 16` and `h(t) <= (t + 4) / 8` for every `t` (equality at `t` = 4,
///   19; beyond, `h` grows by 1 per 255 literals), so a sequence of `t + m` input bytes adds at
///   most `t + m + (t + m) / S` bytes, and `(g / S) + ((t + m) / S) <= (g + t + m) / S` keeps the
///   invariant. Carried literals (a chunk's pending ones) are part of `g`, so it spans chunks.
///
/// Within a sequence whose match is found at the probe `ip` (global; `ip = g + t < n - 20`):
/// the literal header ends at or before `op + h(t) <= D + g + 1 + (ip + 4) / S`; the 16-byte
/// literal blocks write at most 15 bytes past the literals, ending at or before
/// `D + ip + 16 + (ip + 4) / S`; the 4-byte store of a short match or zero run ends at or before
/// `D + ip + 5 + (ip + 4) / S`; a long match writes exactly its `<= m - 1` bytes, ending at or
/// before `D + ip + m + (ip + 4) / S` with `ip + m <= n - 9` (the match extension stops at most
/// 11 bytes past `ip_end`). All of these are below `D + n + n / S < fast_bound(variant, n)`.
///
/// # Safety
///
/// `dst.len() >= fast_bound(variant, src.len())` for the variant `RLE` selects; `chunk` lies in
/// `src` and is longer than [`TAIL`]; its `carried` literals end at `chunk.base` and start at or
/// after the start of `src`; `op` points into `dst` and keeps the invariant above, and `op` and
/// `back` are what the previous chunk left (`D` and 2 for the first). Returns the number of
/// literals left pending at the chunk's end and the new write position, and updates `back`
/// (lzo-rle; for lzo it stays 2).
#[inline(never)]
unsafe fn compress_chunk_fast<const RLE: bool>(
    src: &[u8],
    chunk: Chunk,
    dict: &mut Dict,
    mut op: *mut u8,
    back: &mut usize,
    bounds: Bounds,
) -> (usize, *mut u8) {
    let Chunk { base, len, carried } = chunk;
    debug_assert!(base + len <= src.len() && len > TAIL && carried <= base);
    // The invariant above, and the room left before `n` more bytes are written (debug builds).
    let (header, slope) = if RLE { (2, 8) } else { (0, 16) };
    let keeps_invariant = |op: *mut u8, g: usize| {
        // SAFETY: `op` and `bounds.out` are in `dst`.
        unsafe { op.offset_from(bounds.out) as usize <= header + g + g / slope }
    };
    // SAFETY: as above.
    let fits = |op: *mut u8, n: usize| unsafe { bounds.end.offset_from(op) as usize >= n };
    // A cleared dictionary is what keeps every candidate at or before its probe.
    dict.fill(0);
    // SAFETY: `base + len <= src.len()`. For the whole function: every offset from `in_` used
    // below is at most `len`, every read ends inside the chunk (probes below `ip_end`, 20 bytes
    // before its end, read 4 bytes; see `match_len_fast`, `zero_run_fast` and `literals_fast` for
    // the longer reads), and every write into `dst` stays below `fast_bound` (see above).
    let in_ = unsafe { src.as_ptr().add(base) };
    let ip_end = len - TAIL;
    let mut ss_back = *back;
    let mut ip = 4usize.saturating_sub(carried);
    ip += 1 + (ip >> 5);
    // The first literal not yet emitted, as an offset from `in_` that wraps below zero for the
    // carried literals (the kernel's `ii - ti`). The skip of the first probe run counts from the
    // chunk start, later ones from `ii`.
    let mut ii = 0usize.wrapping_sub(carried);
    // SAFETY: see above.
    let mut found = unsafe { probe::<RLE>(in_, dict, &mut ip, 0, ip_end) };

    while let Some((m_pos, run)) = found {
        // The literals pending before `ip` (those carried from the last chunk included).
        let lits = in_.wrapping_add(ii);
        let t = ip.wrapping_sub(ii);
        if !RLE {
            ss_back = 2; // constant for lzo: every instruction is a match
        }
        debug_assert!(keeps_invariant(op, base.wrapping_add(ii)));
        debug_assert!(fits(op, literal_header_len(t) + t.next_multiple_of(16)));
        // SAFETY: the invariant and the bound above; the literals lie in `src` and end at
        // `ip < ip_end`, so their 16-byte blocks end inside the chunk; an instruction precedes
        // `op` whenever `t <= 3` (the first sequence of a stream has `t >= 5`).
        op = unsafe { literals_fast(op, ss_back, lits, t) };

        if RLE && run != 0 {
            ip += run;
            let rl = (run - MIN_ZERO_RUN_LENGTH) as u32;
            let code = (rl << 21) | 0x00ff_fc18 | (rl & 7);
            debug_assert!(fits(op, 4));
            // SAFETY: within the bound (4-byte store after the literals).
            unsafe {
                op.cast::<[u8; 4]>().write(code.to_le_bytes());
                op = op.add(4);
            }
            ss_back = 3;
        } else {
            // SAFETY: `m_pos < ip < ip_end` and their first 4 bytes are equal.
            let m_len = unsafe { match_len_fast(in_, ip, m_pos, ip_end) };
            let m_off = ip - m_pos;
            if let Some((code, n)) = short_match(m_len, m_off) {
                debug_assert!(fits(op, 4));
                // SAFETY: within the bound (4-byte store after the literals; the bytes past `n`
                // are overwritten by what follows or lie past the returned length).
                unsafe {
                    op.cast::<[u8; 4]>().write(code.to_le_bytes());
                    op = op.add(n);
                }
                ip += m_len;
            } else {
                let emitted;
                debug_assert!(fits(op, m_len - 1));
                // SAFETY: within the bound (a long match writes at most `m_len - 1` bytes).
                (op, emitted) = unsafe { long_match_fast::<RLE>(op, m_len, m_off) };
                ip += emitted;
            }
            ss_back = 2;
        }
        ii = ip;
        // SAFETY: see above.
        found = unsafe { probe::<RLE>(in_, dict, &mut ip, ii, ip_end) };
    }
    if RLE {
        *back = ss_back;
    }
    debug_assert!(keeps_invariant(op, base.wrapping_add(ii)));
    (len.wrapping_sub(ii), op)
}

/// The kernel's probe loop from `ip` on: hashes the 4 bytes at `ip`, stores `ip` in the
/// dictionary and compares with the candidate found there; without a match, skips ahead by
/// `1 + (ip - ii) / 32` and probes again. Returns the candidate (or, for lzo-rle, the zero run
/// at `ip`: `(0, run)`), with `ip` left at the probe; `None` once `ip` reaches `ip_end`.
///
/// # Safety
///
/// `ip_end + 20` bytes are readable from `in_`, `ii <= ip`, and every dictionary entry is 0 or
/// an earlier probe position.
#[inline(always)]
unsafe fn probe<const RLE: bool>(
    in_: *const u8,
    dict: &mut Dict,
    ip: &mut usize,
    ii: usize,
    ip_end: usize,
) -> Option<(usize, usize)> {
    // The loop runs on `d = ip - ii`: the skip depends only on it, so its chain from one probe
    // to the next is a shift and two adds (`ip` itself is `ii + d`, off that chain); over the
    // first 32 bytes the skip is 1, and a loop of its own makes that chain a single add.
    let mut d = *ip - ii;
    let limit = ip_end.saturating_sub(ii); // a match may end past `ip_end`
    // `Some(cand)` at a match, `Some(ZERO)` at 4 zero bytes (lzo-rle), measured after the loops
    // so that the zero-run scan exists once.
    const ZERO: usize = usize::MAX;
    let mut check = |d: usize| {
        let p = ii + d;
        // SAFETY: `p < ip_end`, which is 20 bytes before the chunk's end.
        let dv = unsafe { in_.add(p).cast::<u32>().read_unaligned() };
        if RLE && dv == 0 {
            return Some(ZERO);
        }
        let h = hash(dv);
        let cand = usize::from(dict[h]);
        dict[h] = p as u16;
        // SAFETY: `cand` is an earlier probe (or 0), so `cand < p`.
        if unsafe { in_.add(cand).cast::<u32>().read_unaligned() } == dv {
            return Some(cand);
        }
        None
    };
    let found = 'found: {
        let short = limit.min(32);
        while d < short {
            if let Some(m) = check(d) {
                break 'found m;
            }
            d += 1;
        }
        while d < limit {
            if let Some(m) = check(d) {
                break 'found m;
            }
            d += 1 + (d >> 5);
        }
        *ip = ii + d;
        return None;
    };
    let p = ii + d;
    *ip = p;
    if RLE && found == ZERO {
        // SAFETY: `p < ip_end` and the 4 bytes at `p` are zero.
        Some((0, unsafe { zero_run_fast(in_, p, ip_end) }))
    } else {
        Some((found, 0))
    }
}

/// `encode::literals_checked` on pointers, unchecked: `t` literals from `lits` with their header
/// at `op`, copied in 16-byte blocks as the kernel's `COPY8` pairs (the overshoot is overwritten
/// by what follows or lies past the returned length); returns the new `op`.
///
/// # Safety
///
/// `op + h(t) + t.next_multiple_of(16)` bytes are writable, `lits + t.next_multiple_of(16)`
/// readable, and for `1 <= t <= 3`, `op - back` is the SS byte of an instruction already written.
#[inline(always)]
unsafe fn literals_fast(mut op: *mut u8, back: usize, lits: *const u8, t: usize) -> *mut u8 {
    const BLOCK: usize = 16;
    // SAFETY: the caller's guarantees cover every access below.
    unsafe {
        if t <= 3 {
            if t != 0 {
                *op.sub(back) |= t as u8;
                op.cast::<[u8; 4]>().write(lits.cast::<[u8; 4]>().read());
            }
            return op.add(t);
        } else if t <= 18 {
            op.write(t as u8 - 3);
            op = op.add(1);
        } else if t <= 18 + 255 {
            op.cast::<[u8; 2]>().write([0, (t - 18) as u8]);
            op = op.add(2);
        } else {
            op.write(0);
            op = long_extension(op.add(1), t - 18);
        }
        let mut k = 0;
        while k < t {
            let block = lits.add(k).cast::<[u8; BLOCK]>().read_unaligned();
            op.add(k).cast::<[u8; BLOCK]>().write_unaligned(block);
            k += BLOCK;
        }
        op.add(t)
    }
}

/// `encode::extension` on a pointer (`len` = 0 writes one zero byte).
///
/// # Safety
///
/// `op + 1 + len / 255` bytes are writable.
#[inline(always)]
unsafe fn extension_fast(mut op: *mut u8, mut len: usize) -> *mut u8 {
    // SAFETY: the caller's guarantee.
    unsafe {
        while len > 255 {
            len -= 255;
            op.write(0);
            op = op.add(1);
        }
        op.write(len as u8);
        op.add(1)
    }
}

/// [`extension_fast`] out of line, for the rare literal runs of more than 273 bytes.
///
/// # Safety
///
/// As [`extension_fast`].
#[cold]
#[inline(never)]
unsafe fn long_extension(op: *mut u8, len: usize) -> *mut u8 {
    // SAFETY: the caller's guarantee.
    unsafe { extension_fast(op, len) }
}

/// `compress_checked::long_match` on a pointer, without room checks.
///
/// # Safety
///
/// `m_len - 1` bytes are writable at `op` (`m_len >= 4`).
#[cold]
#[inline(never)]
unsafe fn long_match_fast<const RLE: bool>(
    mut op: *mut u8,
    mut m_len: usize,
    m_off: usize,
) -> (*mut u8, usize) {
    // SAFETY: the caller's guarantee; at most `3 + ceil((m_len - 9) / 255) <= m_len - 1` bytes.
    unsafe {
        if m_off <= M3_MAX_OFFSET {
            let d = m_off - 1;
            op.write(M3_MARKER);
            op = extension_fast(op.add(1), m_len - M3_MAX_LEN);
            op.cast::<[u8; 2]>().write([(d << 2) as u8, (d >> 6) as u8]);
            return (op.add(2), m_len);
        }
        let d = m_off - 0x4000;
        let h_bit = ((d >> 11) & 8) as u8;
        if m_len <= M4_MAX_LEN {
            op.write(M4_MARKER | h_bit | (m_len - 2) as u8);
            op = op.add(1);
        } else {
            // lzo-rle: see `long_match`.
            if RLE && (d & 0x403f) == 0x403f && (261..=264).contains(&m_len) {
                m_len = 260;
            }
            op.write(M4_MARKER | h_bit);
            op = extension_fast(op.add(1), m_len - M4_MAX_LEN);
        }
        op.cast::<[u8; 2]>().write([(d << 2) as u8, (d >> 6) as u8]);
        (op.add(2), m_len)
    }
}

/// `compress_checked::match_len` on a pointer, unchecked.
///
/// # Safety
///
/// `m_pos < ip < ip_end`, `ip_end + 20` bytes readable from `in_`, and the 4 bytes at `ip` and at
/// `m_pos` equal. The returned length keeps `ip + m_len <= ip_end + 11`.
#[inline(always)]
pub(super) unsafe fn match_len_fast(
    in_: *const u8,
    ip: usize,
    m_pos: usize,
    ip_end: usize,
) -> usize {
    let mut m_len = 4;
    loop {
        // SAFETY: `ip + m_len < ip_end + 4` here (the test below runs after every 8 bytes), so
        // the 8 bytes end before `ip_end + 12`, inside the chunk; `m_pos < ip`.
        let v = unsafe {
            in_.add(ip + m_len).cast::<u64>().read_unaligned()
                ^ in_.add(m_pos + m_len).cast::<u64>().read_unaligned()
        };
        if v != 0 {
            return m_len + (u64::from_le(v).trailing_zeros() / 8) as usize;
        }
        m_len += 8;
        if ip + m_len >= ip_end {
            return m_len;
        }
    }
}

/// `compress_checked::zero_run` on a pointer, unchecked, 32 bytes at a time as the kernel's 64-bit
/// path.
///
/// # Safety
///
/// `ip < ip_end`, `ip_end` bytes readable from `in_`, and the 4 bytes at `ip` zero.
#[inline(always)]
unsafe fn zero_run_fast(in_: *const u8, ip: usize, ip_end: usize) -> usize {
    let limit = ip_end.min(ip + MAX_ZERO_RUN_LENGTH + 1);
    let mut ir = ip + 4;
    // SAFETY: every caller below reads 8 bytes ending at or before `limit <= ip_end`.
    let word = |at: usize| unsafe { in_.add(at).cast::<u64>().read_unaligned() };
    while ir + 32 <= limit {
        if word(ir) | word(ir + 8) | word(ir + 16) | word(ir + 24) != 0 {
            break;
        }
        ir += 32;
    }
    while ir + 8 <= limit {
        let v = u64::from_le(word(ir));
        if v != 0 {
            ir += (v.trailing_zeros() / 8) as usize;
            return (ir - ip).min(MAX_ZERO_RUN_LENGTH);
        }
        ir += 8;
    }
    // The kernel scans bytes up to `ip_end`; past `limit` the run is capped anyway.
    // SAFETY: `ir < limit`.
    while ir < limit && unsafe { *in_.add(ir) } == 0 {
        ir += 1;
    }
    (ir - ip).min(MAX_ZERO_RUN_LENGTH)
}
