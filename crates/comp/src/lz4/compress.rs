//! The v1.7.3 match finder and sequence writer (`LZ4_compress_generic`).
//!
//! Positions live in one index space: index `cur + i` is byte `i` of the input, and with a
//! dictionary of `D` bytes, index `cur - D + j` is byte `j` of the dictionary (the kernel's
//! `base`/`currentOffset` arithmetic). A hash table maps the hash of the 4 (or 5) bytes at a
//! position to the last index inserted there; a zero entry is index 0, which is a real
//! candidate without a dictionary (the input's first byte) and rejected with one.

use super::{MAX_INPUT_SIZE, NAME, compress_bound};
use crate::CompError;

/// `MINMATCH`.
const MIN_MATCH: usize = 4;
/// `MFLIMIT`: no match starts within the last 12 bytes.
const MF_LIMIT: usize = 12;
/// `LASTLITERALS`: the last 5 bytes are always literals.
const LAST_LITERALS: usize = 5;
/// `LZ4_minLength`: shorter inputs are stored as literals only.
const MIN_LENGTH: usize = MF_LIMIT + 1;
/// `LZ4_64Klimit`: inputs below this use the 16-bit table.
pub(super) const LIMIT_64K: usize = 65536 + MF_LIMIT - 1;
/// `MAX_DISTANCE`.
const MAX_DISTANCE: usize = 65535;
/// `LZ4_SKIPTRIGGER`.
const SKIP_TRIGGER: u32 = 6;
/// `RUN_MASK` / `ML_MASK`: a nibble of 15 means extension bytes follow.
const RUN_MASK: usize = 15;
const ML_MASK: usize = 15;

/// Entries of the `byU16` table (hash log 13) and of the `byU32` table (hash log 12): both are
/// the kernel's 16 KiB `LZ4_MEM_COMPRESS`.
const U16_ENTRIES: usize = 1 << 13;
pub(super) const U32_ENTRIES: usize = 1 << 12;

/// The compressor's scratch memory: the kernel's `LZ4_stream_t` hash table, seen as 16-bit or
/// 32-bit positions depending on the input size. Reset before every block.
pub struct Tables {
    pub(super) by_u16: [u16; U16_ENTRIES],
    pub(super) by_u32: [u32; U32_ENTRIES],
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tables").finish_non_exhaustive()
    }
}

impl Tables {
    /// Zeroed tables on the heap (32 KiB).
    pub fn new_boxed() -> Box<Self> {
        Box::new(Tables { by_u16: [0; U16_ENTRIES], by_u32: [0; U32_ENTRIES] })
    }
}

#[inline(always)]
pub(super) fn read32(s: &[u8], i: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[i..i + 4]);
    u32::from_le_bytes(b)
}

/// [`read32`] without the bounds check, for the match finder's hot loads.
///
/// # Safety
///
/// `i + 4 <= s.len()`.
#[inline(always)]
unsafe fn read32_unchecked(s: &[u8], i: usize) -> u32 {
    debug_assert!(i + 4 <= s.len());
    // SAFETY: the caller's guarantee; `read_unaligned` has no alignment requirement.
    u32::from_le(unsafe { s.as_ptr().add(i).cast::<u32>().read_unaligned() })
}

/// [`read64`] without the bounds check.
///
/// # Safety
///
/// `i + 8 <= s.len()`.
#[inline(always)]
unsafe fn read64_unchecked(s: &[u8], i: usize) -> u64 {
    debug_assert!(i + 8 <= s.len());
    // SAFETY: the caller's guarantee; `read_unaligned` has no alignment requirement.
    u64::from_le(unsafe { s.as_ptr().add(i).cast::<u64>().read_unaligned() })
}

#[inline(always)]
fn read64(s: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[i..i + 8]);
    u64::from_le_bytes(b)
}

/// One of the two table layouts (`byU16` with `LZ4_hash4`, `byU32` with `LZ4_hash5`).
trait Table {
    /// Whether candidates must be checked against `MAX_DISTANCE` (not needed for `byU16`,
    /// whose inputs are shorter than 64 KiB + 11).
    const CHECK_DISTANCE: bool;
    fn hash(src: &[u8], pos: usize) -> usize;
    /// [`Table::hash`] without bounds checks.
    ///
    /// # Safety
    ///
    /// `pos + 8 <= src.len()` (the longest read, `LZ4_hash5`'s).
    unsafe fn hash_unchecked(src: &[u8], pos: usize) -> usize;
    fn get(&self, h: usize) -> usize;
    fn put(&mut self, h: usize, idx: usize);
}

struct ByU16<'a>(&'a mut [u16; U16_ENTRIES]);
struct ByU32<'a>(&'a mut [u32; U32_ENTRIES]);

impl Table for ByU16<'_> {
    const CHECK_DISTANCE: bool = false;
    #[inline(always)]
    fn hash(src: &[u8], pos: usize) -> usize {
        hash4(read32(src, pos))
    }
    #[inline(always)]
    unsafe fn hash_unchecked(src: &[u8], pos: usize) -> usize {
        // SAFETY: the caller's guarantee covers 4 bytes.
        hash4(unsafe { read32_unchecked(src, pos) })
    }
    #[inline(always)]
    fn get(&self, h: usize) -> usize {
        self.0[h & (U16_ENTRIES - 1)] as usize
    }
    #[inline(always)]
    fn put(&mut self, h: usize, idx: usize) {
        // Indices are below 65536 + 11 - 12, so the cast is exact (the kernel's `(U16)`).
        self.0[h & (U16_ENTRIES - 1)] = idx as u16;
    }
}

/// `LZ4_hash4` with the `byU16` table's hash log (13).
#[inline(always)]
fn hash4(v: u32) -> usize {
    (v.wrapping_mul(2_654_435_761) >> (32 - 13)) as usize
}

/// `LZ4_hash5` for 64-bit little-endian machines: the low 5 bytes times a 5-byte prime.
#[inline(always)]
pub(super) fn hash5(src: &[u8], pos: usize) -> usize {
    hash5_of(read64(src, pos))
}

#[inline(always)]
fn hash5_of(v: u64) -> usize {
    ((v << 24).wrapping_mul(889_523_592_379) >> (64 - 12)) as usize
}

impl Table for ByU32<'_> {
    const CHECK_DISTANCE: bool = true;
    #[inline(always)]
    fn hash(src: &[u8], pos: usize) -> usize {
        hash5(src, pos)
    }
    #[inline(always)]
    unsafe fn hash_unchecked(src: &[u8], pos: usize) -> usize {
        // SAFETY: the caller's guarantee.
        hash5_of(unsafe { read64_unchecked(src, pos) })
    }
    #[inline(always)]
    fn get(&self, h: usize) -> usize {
        self.0[h & (U32_ENTRIES - 1)] as usize
    }
    #[inline(always)]
    fn put(&mut self, h: usize, idx: usize) {
        self.0[h & (U32_ENTRIES - 1)] = idx as u32;
    }
}

/// What precedes the input in index space: nothing, or an external dictionary.
#[derive(Clone, Copy)]
pub(super) struct Window<'a> {
    /// The dictionary bytes the indices below `cur` refer to (at most 64 KiB).
    pub dict: &'a [u8],
    /// Index of the input's first byte (`currentOffset`).
    pub cur: usize,
    /// `dictSmall`: reject candidates below `cur - dict.len()` (`lowRefLimit`).
    pub dict_small: bool,
}

/// Number of equal bytes between `a[i..limit]` and `b[j..]` (`LZ4_count`). `b` must hold at
/// least `limit - i` bytes from `j`.
#[inline(always)]
fn count(a: &[u8], mut i: usize, b: &[u8], mut j: usize, limit: usize) -> usize {
    let start = i;
    while i + 8 <= limit {
        let diff = read64(a, i) ^ read64(b, j);
        if diff != 0 {
            return i - start + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
        j += 8;
    }
    while i < limit && a[i] == b[j] {
        i += 1;
        j += 1;
    }
    i - start
}

/// [`count`] within `src` alone, without bounds checks (the no-dictionary match extension).
///
/// # Safety
///
/// `j < i` and `limit <= src.len()`.
#[inline(always)]
unsafe fn count_unchecked(src: &[u8], mut i: usize, mut j: usize, limit: usize) -> usize {
    debug_assert!(j < i && limit <= src.len());
    let start = i;
    while i + 8 <= limit {
        // SAFETY: `j < i` and `i + 8 <= limit <= src.len()`.
        let diff = unsafe { read64_unchecked(src, i) ^ read64_unchecked(src, j) };
        if diff != 0 {
            return i - start + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
        j += 8;
    }
    // SAFETY: as above, one byte at a time.
    while i < limit && unsafe { src.get_unchecked(i) == src.get_unchecked(j) } {
        i += 1;
        j += 1;
    }
    i - start
}

/// Writes a length extension (after a nibble of 15): 255s, then the remainder.
#[inline(always)]
fn write_ext(dst: &mut [u8], mut op: usize, mut len: usize) -> usize {
    while len >= 255 {
        dst[op] = 255;
        op += 1;
        len -= 255;
    }
    dst[op] = len as u8;
    op + 1
}

/// Bytes a length extension of `len` (the part above 15) takes.
#[inline(always)]
const fn ext_bytes(len: usize) -> usize {
    len / 255 + 1
}

/// `LZ4_compress_fast`: a fresh table, `byU16` under `LZ4_64Klimit`, else `byU32`.
pub(super) fn compress_fast(
    tables: &mut Tables,
    src: &[u8],
    dst: &mut [u8],
    acceleration: u32,
) -> Result<usize, CompError> {
    if src.len() > MAX_INPUT_SIZE {
        return Err(CompError::InputTooLarge { algo: NAME, len: src.len(), max: MAX_INPUT_SIZE });
    }
    let window = Window { dict: &[], cur: 0, dict_small: false };
    if src.len() < LIMIT_64K {
        tables.by_u16.fill(0);
        compress_generic::<ByU16, false>(ByU16(&mut tables.by_u16), src, dst, acceleration, window)
    } else {
        tables.by_u32.fill(0);
        compress_generic::<ByU32, false>(ByU32(&mut tables.by_u32), src, dst, acceleration, window)
    }
}

/// `LZ4_compress_fast_continue` on a stream holding only a dictionary: the `byU32` table must
/// already hold the dictionary's positions (a copy of the template).
pub(super) fn compress_ext_dict(
    tables: &mut Tables,
    src: &[u8],
    dst: &mut [u8],
    acceleration: u32,
    window: Window<'_>,
) -> Result<usize, CompError> {
    if src.len() > MAX_INPUT_SIZE {
        return Err(CompError::InputTooLarge { algo: NAME, len: src.len(), max: MAX_INPUT_SIZE });
    }
    compress_generic::<ByU32, true>(ByU32(&mut tables.by_u32), src, dst, acceleration, window)
}

fn too_small(dst: &[u8]) -> CompError {
    CompError::OutputTooSmall { capacity: dst.len() }
}

/// `LZ4_compress_generic`. `EXT` is `usingExtDict` (else `noDict`, where `window.cur` is 0).
///
/// Output checks follow the kernel's `limitedOutput` rules (which never fail when
/// `dst.len() >= compress_bound(src.len())`), plus exact checks so no write can go past `dst`.
#[inline(always)]
fn compress_generic<T: Table, const EXT: bool>(
    mut table: T,
    src: &[u8],
    dst: &mut [u8],
    acceleration: u32,
    w: Window<'_>,
) -> Result<usize, CompError> {
    let n = src.len();
    let cap = dst.len();
    let limited = cap < compress_bound(n);
    let cur = w.cur;
    let dict = w.dict;
    let dict_start = cur - dict.len(); // index of dict[0]; `lowRefLimit` when dict_small
    let mut op = 0usize;
    let mut anchor = 0usize;

    'main: {
        if n < MIN_LENGTH {
            break 'main;
        }
        let mf_limit = n - MF_LIMIT;
        let match_limit = n - LAST_LITERALS;

        table.put(T::hash(src, 0), cur);
        let mut ip = 1usize;
        let mut forward_h = T::hash(src, ip);

        loop {
            // Find a match: probe with a step that grows every 64 misses.
            let mut m;
            {
                let mut forward_ip = ip;
                let mut step = 1usize;
                let mut search_nb = acceleration << SKIP_TRIGGER;
                loop {
                    let h = forward_h;
                    ip = forward_ip;
                    forward_ip += step;
                    step = (search_nb >> SKIP_TRIGGER) as usize;
                    search_nb = search_nb.wrapping_add(1);
                    if forward_ip > mf_limit {
                        break 'main;
                    }
                    m = table.get(h);
                    // SAFETY: `forward_ip <= mf_limit`, 12 bytes before the end.
                    forward_h = unsafe { T::hash_unchecked(src, forward_ip) };
                    table.put(h, cur + ip);
                    if EXT && w.dict_small && m < dict_start {
                        continue;
                    }
                    if T::CHECK_DISTANCE && m + MAX_DISTANCE < cur + ip {
                        continue;
                    }
                    let candidate = if EXT && m < cur {
                        read32(dict, m - dict_start)
                    } else if EXT {
                        read32(src, m - cur)
                    } else {
                        // SAFETY: without a dictionary the table was cleared for this input
                        // and holds only 0 and positions this loop and the match loop put
                        // there, all at most `mf_limit`.
                        unsafe { read32_unchecked(src, m - cur) }
                    };
                    // SAFETY: `ip < forward_ip <= mf_limit`.
                    if candidate == unsafe { read32_unchecked(src, ip) } {
                        break;
                    }
                }
            }

            // Catch up: extend the match backwards over equal literals.
            if EXT && m < cur {
                let mut j = m - dict_start;
                while ip > anchor && j > 0 && src[ip - 1] == dict[j - 1] {
                    ip -= 1;
                    j -= 1;
                }
                m = dict_start + j;
            } else {
                let mut p = m - cur;
                while ip > anchor && p > 0 && src[ip - 1] == src[p - 1] {
                    ip -= 1;
                    p -= 1;
                }
                m = cur + p;
            }

            // Literals.
            let lit = ip - anchor;
            let mut token_pos = op;
            op += 1;
            if limited && op + lit + (2 + 1 + LAST_LITERALS) + lit / 255 > cap {
                return Err(too_small(dst));
            }
            let need = lit + 2 + if lit >= RUN_MASK { ext_bytes(lit - RUN_MASK) } else { 0 };
            if op + need > cap {
                return Err(too_small(dst));
            }
            if lit >= RUN_MASK {
                dst[token_pos] = (RUN_MASK << 4) as u8;
                op = write_ext(dst, op, lit - RUN_MASK);
            } else {
                dst[token_pos] = (lit << 4) as u8;
            }
            if lit <= 32 && n - anchor >= 32 && cap - op >= 32 {
                // Most runs are short: one or two 16-byte copies instead of a call to `memcpy`,
                // as the kernel's `LZ4_wildCopy`. The bytes past the run are overwritten by
                // what follows (or lie past the block's end, where `dst` holds nothing of ours).
                // SAFETY: 32 bytes are readable from `anchor` and writable from `op`, just
                // checked; `src` and `dst` do not overlap (`&` and `&mut`).
                unsafe {
                    let (from, to) = (src.as_ptr().add(anchor), dst.as_mut_ptr().add(op));
                    std::ptr::copy_nonoverlapping(from, to, 16);
                    if lit > 16 {
                        std::ptr::copy_nonoverlapping(from.add(16), to.add(16), 16);
                    }
                }
            } else {
                dst[op..op + lit].copy_from_slice(&src[anchor..ip]);
            }
            op += lit;

            // Matches, as long as the position right after one starts another.
            loop {
                let offset = cur + ip - m;
                dst[op..op + 2].copy_from_slice(&(offset as u16).to_le_bytes());
                op += 2;

                let mut ml;
                if EXT && m < cur {
                    let j = m - dict_start;
                    let limit = (ip + (dict.len() - j)).min(match_limit);
                    ml = count(src, ip + MIN_MATCH, dict, j + MIN_MATCH, limit);
                    ip += MIN_MATCH + ml;
                    if ip == limit {
                        let more = count(src, ip, src, 0, match_limit);
                        ml += more;
                        ip += more;
                    }
                } else {
                    let p = m - cur;
                    // SAFETY: `p < ip`: the table holds only positions put before this one
                    // (a dictionary template's are below `cur`), and `match_limit < n`.
                    ml =
                        unsafe { count_unchecked(src, ip + MIN_MATCH, p + MIN_MATCH, match_limit) };
                    ip += MIN_MATCH + ml;
                }

                if limited && op + (1 + LAST_LITERALS) + (ml >> 8) > cap {
                    return Err(too_small(dst));
                }
                if ml >= ML_MASK {
                    if op + ext_bytes(ml - ML_MASK) > cap {
                        return Err(too_small(dst));
                    }
                    dst[token_pos] += ML_MASK as u8;
                    op = write_ext(dst, op, ml - ML_MASK);
                } else {
                    dst[token_pos] += ml as u8;
                }
                anchor = ip;

                if ip > mf_limit {
                    break 'main;
                }

                // Fill the table, then test the next position for an immediate match.
                table.put(T::hash(src, ip - 2), cur + ip - 2);
                let h = T::hash(src, ip);
                m = table.get(h);
                table.put(h, cur + ip);
                let acceptable =
                    !(EXT && w.dict_small && m < dict_start) && m + MAX_DISTANCE >= cur + ip;
                let equal = acceptable
                    && if EXT && m < cur {
                        read32(dict, m - dict_start) == read32(src, ip)
                    } else {
                        read32(src, m - cur) == read32(src, ip)
                    };
                if !equal {
                    break;
                }
                if op + 3 > cap {
                    return Err(too_small(dst));
                }
                token_pos = op;
                dst[op] = 0;
                op += 1;
            }

            ip += 1;
            forward_h = T::hash(src, ip);
        }
    }

    // Last literals.
    let last = n - anchor;
    let need = 1 + last + if last >= RUN_MASK { ext_bytes(last - RUN_MASK) } else { 0 };
    if op + need > cap {
        return Err(too_small(dst));
    }
    if last >= RUN_MASK {
        dst[op] = (RUN_MASK << 4) as u8;
        op = write_ext(dst, op + 1, last - RUN_MASK);
    } else {
        dst[op] = (last << 4) as u8;
        op += 1;
    }
    dst[op..op + last].copy_from_slice(&src[anchor..]);
    Ok(op + last)
}
