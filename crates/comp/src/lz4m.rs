//! `lz4m`: LZ4 re-cut for memory pages (Kwon, Kim, Kim, Kim, ICCE 2017; the layout follows the
//! Huawei kernel implementation; docs/REFERENCES.md [lz4m-paper], [lz4m-huawei]).
//!
//! Why it differs from LZ4: memory is made of aligned 32-bit and 64-bit values, so matches almost
//! always start on a word boundary and cover whole words. Working in words lets the compressor
//! probe a quarter of the positions LZ4 does, and lets the format count lengths and offsets in
//! words, so one 16-bit token describes a whole sequence (LZ4 needs a token byte plus a 16-bit
//! offset):
//!
//! ```text
//! token (u16, little-endian)
//!   bits 15..13  literal length in words   (7 = extended)
//!   bits 12..10  match length in words     (7 = extended; no bias, a match is >= 1 word;
//!                                            0 marks the last sequence)
//!   bits  9..0   match offset in words     (1..=1023, from the current output position)
//! sequence = token | literal-length extension | literals (4 * L bytes) | match-length extension
//! ```
//!
//! An extension is LZ4's 255-run: when the 3-bit field is 7, bytes follow and are added to it
//! until one is below 255. The match-length extension comes *after* the literals (so the decoder
//! can copy the literals before it needs the match length).
//!
//! The stream ends with a sequence whose match length field is 0: its literals are the rest of the
//! input (the compressor always leaves the last three words as literals, `MFLIMIT`). Our one
//! extension over the Huawei format: inputs need not be a multiple of 4 bytes. The last
//! sequence's offset field, unused there (always 0), holds the number of trailing bytes (0..=3)
//! that follow its literals verbatim. For whole-word inputs the stream is exactly the Huawei one.
//! Any input length works: offsets are limited to 1023 words, so longer inputs simply find no
//! matches further back than that.
//!
//! The compressor keeps a 1024-entry table from the hash of a word ((w * 2654435761) >> 22) to the
//! low 16 bits of the last word index with that hash; a candidate is taken when it is 1..=1023
//! words back and holds the same word, then extended forward and caught up backwards word by word.

use crate::{CompError, Compressor};

const NAME: &str = "lz4m";
const HASH_BITS: u32 = 10;
const HASH_SIZE: usize = 1 << HASH_BITS;
/// The last this many words are always literals.
const MFLIMIT: usize = 3;
/// Largest offset the 10-bit field holds, in words.
const MAX_OFFSET: usize = (1 << 10) - 1;
/// 3-bit length fields: this value means "an extension follows".
const RUN_MASK: usize = 7;
/// After this many consecutive misses the search stride grows by one word (LZ4's skip trigger,
/// scaled to words): incompressible pages are crossed quickly.
const SKIP_TRIGGER: u32 = 5;

/// An lz4m stream: the hash table (reset for every page) and a word copy of the input.
pub struct Lz4m {
    table: [u16; HASH_SIZE],
    /// The input as native-endian words (grown once to the largest input seen).
    words: Vec<u32>,
}

impl std::fmt::Debug for Lz4m {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lz4m").finish_non_exhaustive()
    }
}

impl Default for Lz4m {
    fn default() -> Self {
        Self::new()
    }
}

impl Lz4m {
    /// A fresh stream.
    pub fn new() -> Self {
        Lz4m { table: [0; HASH_SIZE], words: vec![0; 1024] }
    }
}

#[inline(always)]
fn hash(w: u32) -> usize {
    (w.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

/// Bytes a 255-run extension of `len` (the full length, >= 7) takes.
#[inline(always)]
fn ext_len(len: usize) -> usize {
    if len >= RUN_MASK { (len - RUN_MASK) / 255 + 1 } else { 0 }
}

#[inline(always)]
fn put_ext(dst: &mut [u8], mut op: usize, len: usize) -> usize {
    if len >= RUN_MASK {
        let mut rem = len - RUN_MASK;
        while rem >= 255 {
            dst[op] = 255;
            op += 1;
            rem -= 255;
        }
        dst[op] = rem as u8;
        op += 1;
    }
    op
}

/// Copies `len` bytes from `src[from..]` to `dst[to..]`. When both sides have 16 bytes of slack
/// past the end it copies whole 16-byte blocks (one vector move each, no call to `memcpy`),
/// writing up to 15 bytes of junk past `to + len` that the caller overwrites or ignores.
#[inline(always)]
fn wild_copy(dst: &mut [u8], to: usize, src: &[u8], from: usize, len: usize) {
    if to + len + 16 <= dst.len() && from + len + 16 <= src.len() {
        let mut k = 0;
        while k < len {
            dst[to + k..to + k + 16].copy_from_slice(&src[from + k..from + k + 16]);
            k += 16;
        }
    } else {
        dst[to..to + len].copy_from_slice(&src[from..from + len]);
    }
}

/// Writes one sequence: the literal words `src[lit_from..lit_to]`, then a match of `mlen` words
/// at `offset` words, or, with `mlen == 0`, the last sequence whose offset field is the tail
/// length.
#[inline(always)]
fn put_sequence(
    dst: &mut [u8],
    op: usize,
    src: &[u8],
    (lit_from, lit_to): (usize, usize),
    mlen: usize,
    offset: usize,
) -> Result<usize, CompError> {
    let lbytes = lit_to - lit_from;
    let llen = lbytes / 4;
    // Short lengths (the common case) need no extension bytes; only long ones pay for the exact
    // size computation.
    let need = if llen < RUN_MASK && mlen < RUN_MASK {
        2 + lbytes
    } else {
        2 + ext_len(llen) + lbytes + ext_len(mlen)
    };
    if dst.len() - op < need {
        return Err(CompError::OutputTooSmall { capacity: dst.len() });
    }
    let token = (llen.min(RUN_MASK) << 13) | (mlen.min(RUN_MASK) << 10) | offset;
    dst[op..op + 2].copy_from_slice(&(token as u16).to_le_bytes());
    let op = put_ext(dst, op + 2, llen);
    wild_copy(dst, op, src, lit_from, lbytes);
    Ok(put_ext(dst, op + lbytes, mlen))
}

/// The destination size from which [`Lz4m::compress`] takes the unchecked path: the largest
/// stream `len` bytes can give plus a wild copy's slack.
///
/// Proof of the bound. Let `n = len / 4`. A match sequence of `L` literal words and `M >= 1`
/// match words writes `2 + ext_len(M) <= 4M` bytes of token and match extension (`ext_len(M)` is
/// 0 below 7 and at most `M - 6` from 7) and `4L + ext_len(L)` of literals, with
/// `ext_len(L) <= L / 7` (it is 0 below 7, and `(L - 7) / 255 + 1 <= L / 7` from 7). The last
/// sequence writes `2 + 4L + ext_len(L)` and the tail (at most 3 bytes). Summed over words that
/// are each a literal or a match word at most once: `4n + n / 7 + 2 + 3 + ...`, and with
/// `n / 7 <= len / 28 <= len / 16`, the stream is at most `len + len / 16 + 5` bytes. The fast
/// path's literal copies write in 16-byte blocks, up to 12 bytes past a run's end; 64 bytes
/// cover the rest with room to spare.
pub(crate) const fn fast_bound(len: usize) -> usize {
    len + len / 16 + 64
}

/// The native-endian word `k` of `s` (`4k .. 4k + 4`), as the checked path's
/// word copy reads it.
///
/// # Safety
/// `4k + 4` bytes must be readable from `s`.
#[inline(always)]
unsafe fn word_at(s: *const u8, k: usize) -> u32 {
    // SAFETY: the caller's guarantee; `read_unaligned` needs no alignment.
    unsafe { s.add(4 * k).cast::<u32>().read_unaligned() }
}

/// Two native-endian words `k` and `k + 1` as one 64-bit load.
///
/// # Safety
/// `4k + 8` bytes must be readable from `s`.
#[inline(always)]
unsafe fn words2_at(s: *const u8, k: usize) -> u64 {
    // SAFETY: the caller's guarantee.
    unsafe { s.add(4 * k).cast::<u64>().read_unaligned() }
}

/// A 255-run extension at `d + op` for a full length `len` (nothing below [`RUN_MASK`]).
///
/// # Safety
/// `ext_len(len)` bytes must be writable from `d + op`.
#[inline(always)]
unsafe fn put_ext_raw(d: *mut u8, mut op: usize, len: usize) -> usize {
    if len >= RUN_MASK {
        let mut rem = len - RUN_MASK;
        while rem >= 255 {
            // SAFETY: one of the `ext_len(len)` bytes.
            unsafe { *d.add(op) = 255 };
            op += 1;
            rem -= 255;
        }
        // SAFETY: the last of them.
        unsafe { *d.add(op) = rem as u8 };
        op += 1;
    }
    op
}

/// Inputs of at most this many words take the page probe ([`compress_fast`] with `PAGE`): every
/// position the search probes is below `n - MFLIMIT`, so every distance the table can give
/// (from a position stored earlier, or the cleared table's 0) is at most `n - MFLIMIT - 1 <=
/// 1023` words, inside the offset field; only position 0 has no candidate.
const PAGE_WORDS: usize = MAX_OFFSET + 1 + MFLIMIT;

/// The unchecked compressor for destinations of at least [`fast_bound`]: the checked path's
/// search and bytes, with the words loaded straight from `src`, matches extended two words per
/// compare, and sequences written with no room checks (the bound covers every write) and
/// literals copied in 16-byte blocks.
fn compress_fast(table: &mut [u16; HASH_SIZE], src: &[u8], dst: &mut [u8]) -> usize {
    assert!(dst.len() >= fast_bound(src.len()));
    if src.len() / 4 <= PAGE_WORDS {
        compress_fast_generic::<true>(table, src, dst)
    } else {
        compress_fast_generic::<false>(table, src, dst)
    }
}

/// [`compress_fast`]'s loop. With `PAGE` (inputs of at most [`PAGE_WORDS`] words: a 4 KiB page
/// is 1024) the probe needs no distance test: the table's entry is the candidate itself, one
/// compare and one branch per position (the general probe's distance and range tests were a
/// quarter of the loop's instructions). Position 0, whose cleared entry would be itself, is
/// not probed: the general probe's first step there is always a miss (distance 0).
#[inline(always)]
fn compress_fast_generic<const PAGE: bool>(
    table: &mut [u16; HASH_SIZE],
    src: &[u8],
    dst: &mut [u8],
) -> usize {
    let n = src.len() / 4;
    let tail = src.len() - n * 4;
    let s = src.as_ptr();
    let d = dst.as_mut_ptr();
    let mut op = 0;
    let mut anchor = 0;
    if n > MFLIMIT {
        table.fill(0);
        let limit = n - MFLIMIT;
        // The page probe starts past position 0 with that position's miss counted (its table
        // entry, 0, is already there).
        let (mut i, mut misses) = if PAGE { (1, 1u32) } else { (0, 0u32) };
        while i < limit {
            // SAFETY: `i < limit < n`.
            let w = unsafe { word_at(s, i) };
            let h = hash(w);
            let (dist, cand);
            if PAGE {
                // `PAGE_WORDS`: the entry is a position below `i`, at most 1023 words back.
                cand = table[h] as usize;
                table[h] = i as u16;
                dist = i - cand;
                // SAFETY: `cand < i < n`.
                if unsafe { word_at(s, cand) } != w {
                    misses += 1;
                    i += 1 + (misses >> SKIP_TRIGGER) as usize;
                    continue;
                }
            } else {
                dist = (i as u16).wrapping_sub(table[h]) as usize;
                table[h] = i as u16;
                cand = i.wrapping_sub(dist);
                let valid = dist.wrapping_sub(1) < MAX_OFFSET && cand < i;
                // SAFETY: `cand < i < n` when valid, else word `i` itself is read (and ignored).
                let cw = unsafe { word_at(s, if valid { cand } else { i }) };
                // One unpredictable branch per position: `&`, not `&&`.
                if !(valid & (cw == w)) {
                    misses += 1;
                    i += 1 + (misses >> SKIP_TRIGGER) as usize;
                    continue;
                }
            }
            misses = 0;
            let (mut start, mut c) = (i, cand);
            // SAFETY: `c - 1 < start - 1 < n`.
            while start > anchor && c > 0 && unsafe { word_at(s, start - 1) == word_at(s, c - 1) } {
                start -= 1;
                c -= 1;
            }
            let mut end = i + 1;
            loop {
                if end + 2 <= limit {
                    // SAFETY: words `end - dist < end` and `end + 1 < limit < n`.
                    let x = unsafe { words2_at(s, end) ^ words2_at(s, end - dist) };
                    if x == 0 {
                        end += 2;
                        continue;
                    }
                    // The word at the lower address (`end`) is equal: the second one differs.
                    let low_equal = if cfg!(target_endian = "little") {
                        x as u32 == 0
                    } else {
                        (x >> 32) as u32 == 0
                    };
                    end += low_equal as usize;
                } else if end < limit {
                    // SAFETY: `end - dist < end < limit < n`.
                    let equal = unsafe { word_at(s, end) == word_at(s, end - dist) };
                    end += equal as usize;
                }
                break;
            }
            // The sequence: token, literal-length extension, literals, match extension.
            let llen = start - anchor;
            let mlen = end - start;
            let token = (llen.min(RUN_MASK) << 13) | (mlen.min(RUN_MASK) << 10) | dist;
            // SAFETY: every write below is inside the stream's bound (`fast_bound`'s proof), and
            // a literal block's 16 bytes end at most 12 bytes past the literals, inside the 64
            // bytes of slack; its reads end at most at byte `4 * start + 12 <= 4 * n` (a match
            // starts at least `MFLIMIT` words before the end). `src` and `dst` do not overlap.
            unsafe {
                d.add(op).cast::<[u8; 2]>().write_unaligned((token as u16).to_le_bytes());
                op = put_ext_raw(d, op + 2, llen);
                let (from, to) = (s.add(4 * anchor), d.add(op));
                let lbytes = 4 * llen;
                let mut k = 0;
                while k < lbytes {
                    std::ptr::copy_nonoverlapping(from.add(k), to.add(k), 16);
                    k += 16;
                }
                op = put_ext_raw(d, op + lbytes, mlen);
            }
            anchor = end;
            i = end;
        }
    }
    // The last sequence: the rest of the words and the tail, copied exactly.
    let llen = n - anchor;
    let token = (llen.min(RUN_MASK) << 13) | tail;
    // SAFETY: inside the bound, as above; reads end at `src.len()`.
    unsafe {
        d.add(op).cast::<[u8; 2]>().write_unaligned((token as u16).to_le_bytes());
        op = put_ext_raw(d, op + 2, llen);
        let rest = src.len() - 4 * anchor;
        std::ptr::copy_nonoverlapping(s.add(4 * anchor), d.add(op), rest);
        op + rest
    }
}

impl Lz4m {
    /// The checked compressor, for destinations under [`fast_bound`]: every write's room is
    /// tested and a short destination is [`CompError::OutputTooSmall`]. The reference the fast
    /// path is tested against.
    fn compress_checked(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let n = src.len() / 4;
        let tail = &src[n * 4..];
        // The page as words, so the search loop does one bounds check per access.
        if self.words.len() < n {
            self.words.resize(n, 0);
        }
        let words = &mut self.words[..n];
        for (w, b) in words.iter_mut().zip(src.chunks_exact(4)) {
            *w = u32::from_ne_bytes(b.try_into().unwrap_or_default());
        }
        let words = &self.words[..n];
        let mut op = 0;
        let mut anchor = 0;
        if n > MFLIMIT {
            self.table.fill(0);
            // Matches start before `limit` and end at or before it.
            let limit = n - MFLIMIT;
            let mut i = 0;
            let mut misses = 0u32;
            'search: while i < limit {
                let w = words[i];
                let h = hash(w);
                // The table keeps the low 16 bits of positions; only distances 1..=1023 count.
                let dist = (i as u16).wrapping_sub(self.table[h]) as usize;
                self.table[h] = i as u16;
                let cand = i.wrapping_sub(dist);
                // One unpredictable branch per position, not three: an invalid candidate reads
                // as a word that cannot match.
                let valid = dist.wrapping_sub(1) < MAX_OFFSET && cand < i;
                let cw = if valid { words[cand.min(i)] } else { !w };
                if cw != w {
                    misses += 1;
                    i += 1 + (misses >> SKIP_TRIGGER) as usize;
                    continue 'search;
                }
                misses = 0;
                let (mut start, mut cand) = (i, cand);
                while start > anchor && cand > 0 && words[start - 1] == words[cand - 1] {
                    start -= 1;
                    cand -= 1;
                }
                let mut end = i + 1;
                while end < limit && words[end] == words[end - dist] {
                    end += 1;
                }
                op = put_sequence(dst, op, src, (anchor * 4, start * 4), end - start, dist)?;
                anchor = end;
                i = end;
            }
        }
        op = put_sequence(dst, op, src, (anchor * 4, n * 4), 0, tail.len())?;
        if dst.len() - op < tail.len() {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        dst[op..op + tail.len()].copy_from_slice(tail);
        Ok(op + tail.len())
    }
}

/// Reads a 255-run extension starting at `ip`, adding it to `base`.
#[inline(always)]
fn get_ext(src: &[u8], mut ip: usize, base: usize) -> Result<(usize, usize), CompError> {
    let mut len = base;
    loop {
        let Some(&b) = src.get(ip) else {
            return Err(CompError::corrupt(NAME, ip, "length extension runs past the end"));
        };
        ip += 1;
        len += b as usize;
        if b != 255 {
            return Ok((len, ip));
        }
    }
}

/// Decodes an lz4m stream into `dst`; the safe reference decoder.
pub(crate) fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
    let mut ip = 0;
    let mut op = 0;
    loop {
        let Some(tb) = src.get(ip..ip + 2) else {
            return Err(CompError::corrupt(NAME, ip, "stream ends without a last sequence"));
        };
        let token = u16::from_le_bytes([tb[0], tb[1]]) as usize;
        let token_at = ip;
        ip += 2;
        let mut llen = token >> 13;
        let mut mlen = (token >> 10) & RUN_MASK;
        let offset = token & MAX_OFFSET;
        if llen == RUN_MASK {
            (llen, ip) = get_ext(src, ip, llen)?;
        }
        let lbytes = llen * 4;
        if src.len() - ip < lbytes {
            return Err(CompError::corrupt(NAME, ip, "literals run past the end of the input"));
        }
        if dst.len() - op < lbytes {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        wild_copy(dst, op, src, ip, lbytes);
        ip += lbytes;
        op += lbytes;
        if mlen == 0 {
            // The last sequence: `offset` trailing bytes, then the end of the stream.
            if offset > 3 {
                return Err(CompError::corrupt(NAME, token_at, "tail longer than 3 bytes"));
            }
            if src.len() - ip != offset {
                return Err(CompError::corrupt(NAME, ip, "data after the last sequence"));
            }
            if dst.len() - op < offset {
                return Err(CompError::OutputTooSmall { capacity: dst.len() });
            }
            dst[op..op + offset].copy_from_slice(&src[ip..]);
            return Ok(op + offset);
        }
        if mlen == RUN_MASK {
            (mlen, ip) = get_ext(src, ip, mlen)?;
        }
        let back = offset * 4;
        if back == 0 || back > op {
            return Err(CompError::corrupt(NAME, token_at, "match offset before the output start"));
        }
        let mbytes = mlen * 4;
        if dst.len() - op < mbytes {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        let from = op - back;
        if back >= 16 && op + mbytes + 16 <= dst.len() {
            // Blocks of 16 bytes never overlap their source at this distance.
            let mut k = 0;
            while k < mbytes {
                dst.copy_within(from + k..from + k + 16, op + k);
                k += 16;
            }
        } else {
            // Word by word: each word's source (at least one word back) is already written, so
            // this is also right for overlapping matches (runs of a repeated word or pattern).
            let mut k = 0;
            while k < mbytes {
                dst.copy_within(from + k..from + k + 4, op + k);
                k += 4;
            }
        }
        op += mbytes;
    }
}

impl Compressor for Lz4m {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        if dst.len() >= fast_bound(src.len()) {
            Ok(compress_fast(&mut self.table, src, dst))
        } else {
            self.compress_checked(src, dst)
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        decompress(src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compress(src: &[u8]) -> Vec<u8> {
        let mut dst = vec![0u8; crate::compress_bound(src.len())];
        let n = Lz4m::new().compress(src, &mut dst).unwrap();
        dst.truncate(n);
        dst
    }

    /// The checked path's stream (a destination just under the fast path's bound).
    fn compress_checked(src: &[u8]) -> Vec<u8> {
        let mut dst = vec![0u8; fast_bound(src.len()) - 1];
        let n = Lz4m::new().compress(src, &mut dst).unwrap();
        dst.truncate(n);
        dst
    }

    /// Both paths give the same bytes, and the fast path writes nothing past its bound.
    fn same_on_both_paths(src: &[u8]) {
        let fast = compress(src);
        assert_eq!(fast, compress_checked(src));
        let mut exact = vec![0u8; fast_bound(src.len())];
        let n = Lz4m::new().compress(src, &mut exact).unwrap();
        assert_eq!(&exact[..n], &fast[..]);
        assert_eq!(decode(&fast, src.len()).unwrap(), src);
    }

    fn decode(comp: &[u8], len: usize) -> Result<Vec<u8>, CompError> {
        let mut out = vec![0u8; len];
        let n = decompress(comp, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    #[test]
    fn empty_input_is_one_empty_last_sequence() {
        assert_eq!(compress(&[]), [0, 0]);
        assert_eq!(decode(&[0, 0], 0).unwrap(), b"");
    }

    #[test]
    fn short_input_is_literal_words_and_tail() {
        // 2 words + 3 tail bytes: token = (2 << 13) | (0 << 10) | 3 = 0x4003.
        let src = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
        let c = compress(&src);
        assert_eq!(c, [0x03, 0x40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(decode(&c, 11).unwrap(), src);
    }

    #[test]
    fn repeated_word_is_one_overlapping_match() {
        // 8 words of the same value: literal word 0, then a match of 4 words at offset 1 (the last
        // three words stay literal), then the last sequence with 3 literal words.
        let src = 0xdead_beef_u32.to_le_bytes().repeat(8);
        let c = compress(&src);
        let t0 = (1 << 13) | (4 << 10) | 1;
        let mut want = u16::to_le_bytes(t0).to_vec();
        want.extend_from_slice(&src[..4]);
        want.extend_from_slice(&u16::to_le_bytes(3 << 13));
        want.extend_from_slice(&src[..12]);
        assert_eq!(c, want);
        assert_eq!(decode(&c, 32).unwrap(), src);
    }

    #[test]
    fn long_lengths_use_255_runs_with_match_extension_after_literals() {
        // 300 distinct words then 300 copies of the first 300: literal run 300 = 7 + 255 + 38,
        // match 297 words (the last 3 are literal) = 7 + 255 + 35.
        let mut src: Vec<u8> =
            (0..300u32).flat_map(|i| (i.wrapping_mul(0x9e37_79b9) | 1).to_le_bytes()).collect();
        src.extend_from_within(..);
        let c = compress(&src);
        let token = u16::from_le_bytes([c[0], c[1]]);
        assert_eq!(token, (7 << 13) | (7 << 10) | 300);
        assert_eq!(&c[2..4], [255, 38]);
        assert_eq!(&c[4..4 + 1200], &src[..1200]);
        assert_eq!(&c[1204..1206], [255, 35]);
        assert_eq!(decode(&c, src.len()).unwrap(), src);
    }

    #[test]
    fn corrupt_streams_are_errors() {
        // Offset reaching before the start.
        assert!(decode(&[0x01, 0x04], 64).is_err());
        // A match sequence that ends where its extension should be.
        assert!(decode(&[0x00, 0x1c], 64).is_err());
        // Literals past the end.
        assert!(decode(&[0x00, 0x20, 1, 2], 64).is_err());
        // Tail field above 3.
        assert!(decode(&[0x04, 0x00, 1, 2, 3, 4], 64).is_err());
        // Trailing garbage after the last sequence.
        assert!(decode(&[0x00, 0x00, 9], 64).is_err());
        // Nothing at all.
        assert!(decode(&[], 64).is_err());
    }

    #[test]
    fn offsets_never_exceed_ten_bits_on_long_inputs() {
        // A word repeated 2000 words apart cannot be referenced; the stream must still decode.
        let mut src = vec![0u8; 16384];
        src[..4].copy_from_slice(&7u32.to_le_bytes());
        src[8000..8004].copy_from_slice(&7u32.to_le_bytes());
        let c = compress(&src);
        assert_eq!(decode(&c, src.len()).unwrap(), src);
    }

    #[test]
    fn fast_and_checked_paths_agree_on_every_branch() {
        // Short inputs, one-word and long matches (match-length extensions, an odd word count
        // left for the single-word compare), long literal runs (literal extensions), far
        // candidates (no match past 1023 words), skips over noise, tails of 0-3 bytes.
        let mut x = 0x1234_5678_u32;
        let mut noise = |k: usize| -> Vec<u8> {
            (0..k)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x.to_le_bytes()
                })
                .collect()
        };
        let mut page = noise(300);
        page.extend_from_within(..1200);
        page.extend(7u32.to_le_bytes().repeat(301));
        page.extend(noise(200));
        page.extend_from_within(400..1000);
        for k in 0..60 {
            page.extend(((k % 5) as u32).to_le_bytes());
            page.extend(noise(k % 3));
        }
        for cut in [0, 1, 5, 12, 13, 16, 17, 100, 1001, page.len() - 3, page.len()] {
            same_on_both_paths(&page[..cut]);
        }
        // Too small a destination is an error on the checked path, never a short write.
        let mut small = vec![0u8; 20];
        assert!(Lz4m::new().compress(&page, &mut small).is_err());
    }

    #[test]
    fn page_probe_and_general_probe_meet_at_the_largest_offset() {
        // [X, Y, ..., Y, X, 3 literal words]: after the run of Y the search probes X at
        // position n - 4, whose candidate is position 0, n - 4 words back: a match up to 1023
        // (page probe, n <= PAGE_WORDS), none from 1024 (general probe).
        for n in [PAGE_WORDS - 2, PAGE_WORDS - 1, PAGE_WORDS, PAGE_WORDS + 1, PAGE_WORDS + 2] {
            let (x, y) = (0x0bad_cafe_u32, 0x1234_5678_u32);
            let mut words = vec![y; n];
            words[0] = x;
            words[n - 4] = x;
            let src: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            same_on_both_paths(&src);
            // With the match, the sequence before the last is its token alone: no literals, one
            // word at offset n - 4; the last sequence is 3 literal words.
            let c = compress(&src);
            let last_at = c.len() - 2 - 12;
            let before = u16::from_le_bytes([c[last_at - 2], c[last_at - 1]]) as usize;
            assert_eq!(before == (1 << 10) | (n - 4), n - 4 <= MAX_OFFSET, "n = {n}");
        }
    }

    proptest! {
        #[test]
        fn fast_path_equals_checked_path(
            words in proptest::collection::vec(prop_oneof![0u32..4, any::<u32>()], 0..1100),
            tail in proptest::collection::vec(any::<u8>(), 0..4),
        ) {
            let mut src: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            src.extend_from_slice(&tail);
            same_on_both_paths(&src);
        }

        #[test]
        fn every_match_offset_is_within_ten_bits_and_round_trips(
            words in proptest::collection::vec(0u32..6, 0..3000),
            tail in proptest::collection::vec(any::<u8>(), 0..4),
        ) {
            let mut src: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            src.extend_from_slice(&tail);
            let c = compress(&src);
            prop_assert_eq!(decode(&c, src.len()).unwrap(), src.clone());
            // The last three whole words are always literals: they end the stream verbatim.
            let n = src.len() / 4;
            if n >= 3 {
                let lit_end = c.len() - tail.len();
                prop_assert_eq!(&c[lit_end - 12..lit_end], &src[(n - 3) * 4..n * 4]);
            }
        }
    }
}
