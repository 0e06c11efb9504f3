//! `wkdm`: Wilson-Kaplan direct-mapped compression in the format of Apple xnu's "new" WKdm
//! (docs/REFERENCES.md [wkdm-xnu], [wkdm-paper]).
//!
//! Why it works on memory: pages are full of zero words and of words that share their high bits
//! with a recent word (pointers into the same region, small integers, flags). WKdm classifies each
//! 32-bit word against a 16-word direct-mapped dictionary and spends 2 bits (zero), 6 bits (exact
//! hit), 16 bits (same high 22 bits: index + low 10 bits) or 34 bits (miss) on it. There is no
//! search at all, which is what makes it the fastest compressor of the family.
//!
//! Model: the dictionary starts all zero; a non-zero word x maps to dictionary slot
//! `HASH_LOOKUP_TABLE[(x >> 10) & 255]`. Tag 0 = zero word, 1 = partial (high 22 bits equal; the
//! slot is updated), 2 = miss (slot updated), 3 = exact.
//!
//! Layout of a page (all words little-endian):
//!
//! ```text
//! u32 header[3]   end offsets, in words from the start: [0] misses, [1] qpos, [2] low bits
//! tags            2 bits per word, N/4 bytes (256 for 4 KiB), packed interleaved (below)
//! misses          full 32-bit words, in page order
//! qpos            4-bit dictionary indices (tags 1 and 3), packed interleaved, zero-padded to 8
//! low bits        10-bit low halves (tag 1), three per word: l0 | l1 << 10 | l2 << 20
//! ```
//!
//! Interleaved packing: tags are packed 16 per word as `w0 | w1 << 2 | w2 << 4 | w3 << 6`, where
//! `wj` is the little-endian word made of tags 4j..4j+4 of the group (one tag per byte); qpos are
//! packed 8 per word as `w0 | w1 << 4` the same way. This is what the vector code in xnu does, and
//! it is cheap in scalar code too (whole-word shifts, no per-field masking).
//!
//! xnu's special page encodings are kept: a page whose words are all equal (zeros included) is
//! stored as that one word (4 bytes; xnu returns `SV_RETURN` and lets its caller keep the value);
//! a mostly-zero page is stored as `MZV_MAGIC` (17185) followed by `u32 value, u16 byte offset`
//! per non-zero word, chosen with xnu's own size estimate. xnu's early-abort checkpoint is not
//! kept: our callers give a destination large enough for any result and decide themselves what
//! counts as incompressible.
//!
//! Inputs that are not one page: WKdm exists for whole 4 KiB (and 16 KiB) pages, and the format
//! above has no length field. Any other input (other sizes, sizes that are not a multiple of 4,
//! 64 KiB pages, whose header offsets could collide with `MZV_MAGIC`) is stored in a
//! length-prefixed container: `u32 ANY_LEN_MAGIC`, `u32 byte length`, the layout above for its
//! whole words (tags area rounded up to whole words, offsets counted from the container's body),
//! then the 0..=3 trailing bytes verbatim. `ANY_LEN_MAGIC` is above any page header's first word,
//! so a decoder tells the three kinds apart from the first word.

use crate::{CompError, Compressor};

const NAME: &str = "wkdm";
/// xnu's marker of the mostly-zero encoding.
pub const MZV_MAGIC: u32 = 17185;
/// Our marker of a non-page input (ASCII "wkdm" read little-endian).
pub const ANY_LEN_MAGIC: u32 = u32::from_le_bytes(*b"wkdm");
const HEADER_WORDS: usize = 3;
/// Largest page that uses the xnu page format; larger pages use the container.
const MAX_NATIVE_PAGE: usize = 16384;

/// xnu's `hashLookupTable`, as dictionary indices.
#[rustfmt::skip]
static HASH_LOOKUP_TABLE: [u8; 256] = [
    0,13,2,14,4,3,7,5,1,9,12,6,11,10,8,15,2,3,7,5,1,15,4,9,6,12,11,8,13,14,10,3,
    2,12,4,13,15,7,14,8,5,6,9,10,11,1,2,10,15,8,5,11,1,9,13,6,4,14,12,3,7,4,2,10,
    9,7,8,3,1,11,13,5,6,12,15,14,10,12,2,8,7,9,1,11,5,14,15,6,13,4,3,3,1,12,5,2,
    13,4,15,6,9,11,7,14,10,8,9,5,6,15,10,11,13,4,8,1,12,2,7,14,3,7,8,10,13,9,4,5,
    12,2,1,15,6,14,11,3,2,9,6,7,4,15,5,14,8,10,12,3,1,11,13,11,10,3,14,2,9,6,15,7,
    12,1,8,5,4,13,15,3,6,9,2,1,4,14,12,11,10,13,8,5,7,8,3,9,7,6,14,10,4,13,11,1,
    5,15,2,12,12,13,3,5,8,11,9,7,1,10,6,2,14,15,4,9,8,2,10,1,13,6,11,5,3,7,12,14,
    4,15,1,13,15,12,5,4,14,11,6,2,10,3,8,7,9,6,8,3,1,5,4,15,9,7,2,13,10,12,11,14,
];

const TAG_ZERO: u8 = 0;
const TAG_PARTIAL: u8 = 1;
const TAG_MISS: u8 = 2;
const TAG_EXACT: u8 = 3;

#[inline(always)]
fn dict_index(x: u32) -> usize {
    HASH_LOOKUP_TABLE[((x >> 10) & 255) as usize] as usize
}

#[inline(always)]
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

/// Bytes of the tags area for `n` words: 16 tags per packed word.
const fn tag_bytes(n: usize) -> usize {
    n.div_ceil(16) * 4
}

/// Counts of one scan, enough to size and choose the encoding.
struct Scan {
    misses: usize,
    hits: usize,
    partials: usize,
}

/// A WKdm stream: the unpacked tags, indices, low bits and misses of the page being compressed.
pub struct Wkdm {
    page_size: usize,
    tags: Vec<u8>,
    qpos: Vec<u8>,
    low: Vec<u16>,
    misses: Vec<u32>,
}

impl std::fmt::Debug for Wkdm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wkdm").field("page_size", &self.page_size).finish_non_exhaustive()
    }
}

impl Wkdm {
    /// A stream for pages of `page_size` bytes.
    pub fn new(page_size: usize) -> Self {
        let mut s = Wkdm {
            page_size,
            tags: Vec::new(),
            qpos: Vec::new(),
            low: Vec::new(),
            misses: Vec::new(),
        };
        s.reserve(page_size / 4);
        s
    }

    /// Grows the scratch to `n` words (only for inputs longer than any seen so far).
    fn reserve(&mut self, n: usize) {
        // Tags are padded to whole groups of 16, qpos to groups of 8, low bits to groups of 3.
        let n_tags = n.div_ceil(16) * 16;
        if self.tags.len() < n_tags {
            self.tags.resize(n_tags, 0);
            self.qpos.resize(n.div_ceil(8) * 8, 0);
            self.low.resize(n.div_ceil(3) * 3, 0);
            self.misses.resize(n, 0);
        }
    }

    fn is_native_page(&self, len: usize) -> bool {
        len == self.page_size && len <= MAX_NATIVE_PAGE
    }

    /// Classifies every word of `words` (a whole number of words) into the scratch arrays.
    fn scan(&mut self, words: &[u8]) -> Scan {
        let n = words.len() / 4;
        let tags = &mut self.tags[..n];
        let qpos = &mut self.qpos[..n];
        let low = &mut self.low[..n];
        let misses = &mut self.misses[..n];
        let mut dict = [0u32; 16];
        let (mut nq, mut nl, mut nm) = (0usize, 0usize, 0usize);
        // The counters never pass the word index `i` (< n, the length of every array), and
        // `min(i)` tells the compiler so: the stores below need no bounds checks.
        for (i, (tag, w)) in tags.iter_mut().zip(words.chunks_exact(4)).enumerate() {
            // One 32-bit load (indexing the four bytes makes the compiler load them apart).
            let x = u32::from_le_bytes(w.try_into().unwrap_or_default());
            if x == 0 {
                *tag = TAG_ZERO;
                continue;
            }
            let idx = dict_index(x);
            let d = dict[idx];
            if d == x {
                *tag = TAG_EXACT;
                qpos[nq.min(i)] = idx as u8;
                nq += 1;
            } else if (d ^ x) >> 10 == 0 {
                *tag = TAG_PARTIAL;
                qpos[nq.min(i)] = idx as u8;
                nq += 1;
                low[nl.min(i)] = (x & 0x3ff) as u16;
                nl += 1;
                dict[idx] = x;
            } else {
                *tag = TAG_MISS;
                misses[nm.min(i)] = x;
                nm += 1;
                dict[idx] = x;
            }
        }
        Scan { misses: nm, hits: nq, partials: nl }
    }

    /// Packs the scanned words into `dst` in the page layout; returns the byte length.
    fn pack(&mut self, n: usize, s: &Scan, dst: &mut [u8]) -> Result<usize, CompError> {
        let tbytes = tag_bytes(n);
        let end_misses = HEADER_WORDS + tbytes / 4 + s.misses;
        let end_qpos = end_misses + s.hits.div_ceil(8);
        let end_low = end_qpos + s.partials.div_ceil(3);
        let total = end_low * 4;
        if dst.len() < total {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        let dst = &mut dst[..total];
        dst[0..4].copy_from_slice(&(end_misses as u32).to_le_bytes());
        dst[4..8].copy_from_slice(&(end_qpos as u32).to_le_bytes());
        dst[8..12].copy_from_slice(&(end_low as u32).to_le_bytes());

        // Tags: pad the last group with zero tags, then 16 tag bytes -> one packed word.
        self.tags[n..n.div_ceil(16) * 16].fill(0);
        let tag_area = &mut dst[12..12 + tbytes];
        for (out, g) in tag_area.chunks_exact_mut(4).zip(self.tags.chunks_exact(16)) {
            let p = le32(g, 0) | le32(g, 4) << 2 | le32(g, 8) << 4 | le32(g, 12) << 6;
            out.copy_from_slice(&p.to_le_bytes());
        }

        let mut op = 12 + tbytes;
        for (out, w) in dst[op..op + 4 * s.misses].chunks_exact_mut(4).zip(&self.misses) {
            out.copy_from_slice(&w.to_le_bytes());
        }
        op += 4 * s.misses;

        let qwords = s.hits.div_ceil(8);
        self.qpos[s.hits..qwords * 8].fill(0);
        for (out, g) in dst[op..op + 4 * qwords].chunks_exact_mut(4).zip(self.qpos.chunks_exact(8))
        {
            let p = le32(g, 0) | le32(g, 4) << 4;
            out.copy_from_slice(&p.to_le_bytes());
        }
        op += 4 * qwords;

        let lwords = s.partials.div_ceil(3);
        self.low[s.partials..lwords * 3].fill(0);
        for (out, g) in dst[op..op + 4 * lwords].chunks_exact_mut(4).zip(self.low.chunks_exact(3)) {
            let p = g[0] as u32 | (g[1] as u32) << 10 | (g[2] as u32) << 20;
            out.copy_from_slice(&p.to_le_bytes());
        }
        Ok(total)
    }

    fn compress_page(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let n = src.len() / 4;
        let s = self.scan(src);
        // Single-value page, detected from the counts as xnu does (the dictionary starts at zero,
        // so equal words give one miss, or one partial for values below 1024, then exact hits).
        let single = (s.misses == 0 && s.hits == 0)
            || (s.partials == 0 && s.hits == n - 1 && s.misses == 1 && self.tags[0] == TAG_MISS)
            || (s.partials == 1 && s.hits == n && self.tags[0] == TAG_PARTIAL);
        if single {
            if dst.len() < 4 {
                return Err(CompError::OutputTooSmall { capacity: dst.len() });
            }
            dst[..4].copy_from_slice(&src[..4]);
            return Ok(4);
        }
        // xnu's choice between the normal packer and the sparse (mostly-zero) one.
        let nonzero = s.misses + s.hits;
        let mzv_size = nonzero * 6 + 4;
        let estimate =
            ((2 * s.partials * 1365) >> 11) + 4 * s.misses + (s.hits >> 1) + 12 + tag_bytes(n);
        if estimate < mzv_size {
            return self.pack(n, &s, dst);
        }
        if dst.len() < mzv_size {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        dst[..4].copy_from_slice(&MZV_MAGIC.to_le_bytes());
        let mut op = 4;
        for (i, w) in src.chunks_exact(4).enumerate() {
            if w != [0; 4] {
                dst[op..op + 4].copy_from_slice(w);
                dst[op + 4..op + 6].copy_from_slice(&((i * 4) as u16).to_le_bytes());
                op += 6;
            }
        }
        Ok(op)
    }

    fn compress_any(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let len = u32::try_from(src.len()).map_err(|_| CompError::InputTooLarge {
            algo: NAME,
            len: src.len(),
            max: u32::MAX as usize,
        })?;
        let n = src.len() / 4;
        let (words, tail) = src.split_at(n * 4);
        if dst.len() < 8 {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        self.reserve(n);
        let s = self.scan(words);
        let body = self.pack(n, &s, &mut dst[8..])?;
        let end = 8 + body + tail.len();
        if dst.len() < end {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        dst[0..4].copy_from_slice(&ANY_LEN_MAGIC.to_le_bytes());
        dst[4..8].copy_from_slice(&len.to_le_bytes());
        dst[8 + body..end].copy_from_slice(tail);
        Ok(end)
    }
}

fn corrupt(at: usize, what: &'static str) -> CompError {
    CompError::corrupt(NAME, at, what)
}

/// Decodes the page layout in `src` (exactly its length) into `n` words of `dst`.
fn unpack(src: &[u8], n: usize, dst: &mut [u8]) -> Result<(), CompError> {
    if src.len() < 12 {
        return Err(corrupt(0, "shorter than the header"));
    }
    let end_misses = le32(src, 0) as usize;
    let end_qpos = le32(src, 4) as usize;
    let end_low = le32(src, 8) as usize;
    let tbytes = tag_bytes(n);
    let tags_end = 12 + tbytes;
    if end_low.checked_mul(4) != Some(src.len()) {
        return Err(corrupt(8, "header's end offset is not the stream length"));
    }
    if end_misses < tags_end / 4 || end_qpos < end_misses || end_low < end_qpos {
        return Err(corrupt(0, "header offsets out of order"));
    }
    let tags = &src[12..tags_end];
    let misses = &src[tags_end..end_misses * 4];
    let qpos = &src[end_misses * 4..end_qpos * 4];
    let low = &src[end_qpos * 4..end_low * 4];

    let mut dict = [0u32; 16];
    let (mut im, mut iq, mut il) = (0usize, 0usize, 0usize);
    let out = &mut dst[..n * 4];
    for (g, outg) in out.chunks_mut(64).enumerate() {
        let packed = le32(tags, g * 4);
        for (j, o) in outg.chunks_exact_mut(4).enumerate() {
            // Tag 4j'+k of the group sits in byte k, bits 2j'..2j'+1.
            let tag = (packed >> (8 * (j & 3) + 2 * (j >> 2))) & 3;
            let x = match tag as u8 {
                TAG_ZERO => 0,
                TAG_MISS => {
                    let Some(w) = misses.get(im * 4..im * 4 + 4) else {
                        return Err(corrupt(tags_end, "more misses tagged than stored"));
                    };
                    im += 1;
                    let x = le32(w, 0);
                    dict[dict_index(x)] = x;
                    x
                }
                t => {
                    let Some(&b) = qpos.get(iq / 8 * 4 + (iq & 3)) else {
                        return Err(corrupt(
                            end_misses * 4,
                            "more hits tagged than indices stored",
                        ));
                    };
                    let idx = ((b >> (4 * ((iq >> 2) & 1))) & 15) as usize;
                    iq += 1;
                    if t == TAG_EXACT {
                        dict[idx]
                    } else {
                        let Some(wb) = low.get(il / 3 * 4..il / 3 * 4 + 4) else {
                            return Err(corrupt(end_qpos * 4, "more partials than low bits"));
                        };
                        let l = (le32(wb, 0) >> (10 * (il % 3))) & 0x3ff;
                        il += 1;
                        let x = (dict[idx] & !0x3ff) | l;
                        dict[idx] = x;
                        x
                    }
                }
            };
            o.copy_from_slice(&x.to_le_bytes());
        }
    }
    if im * 4 != misses.len() || iq.div_ceil(8) * 4 != qpos.len() || il.div_ceil(3) * 4 != low.len()
    {
        return Err(corrupt(0, "areas do not match the tags"));
    }
    Ok(())
}

impl Compressor for Wkdm {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        if self.is_native_page(src.len()) {
            self.compress_page(src, dst)
        } else {
            self.compress_any(src, dst)
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        if src.len() < 4 {
            return Err(corrupt(0, "shorter than one word"));
        }
        let first = le32(src, 0);
        if first == ANY_LEN_MAGIC {
            if src.len() < 8 {
                return Err(corrupt(4, "container without a length"));
            }
            let len = le32(src, 4) as usize;
            if dst.len() < len {
                return Err(CompError::OutputTooSmall { capacity: dst.len() });
            }
            let (n, t) = (len / 4, len % 4);
            if src.len() < 8 + t {
                return Err(corrupt(8, "container shorter than its tail"));
            }
            let body = &src[8..src.len() - t];
            // The body must be able to hold the tags of `len` bytes before anything is written.
            if body.len() < 12 + tag_bytes(n) {
                return Err(corrupt(8, "container body shorter than its tags"));
            }
            unpack(body, n, dst)?;
            dst[n * 4..len].copy_from_slice(&src[src.len() - t..]);
            return Ok(len);
        }
        if self.page_size > MAX_NATIVE_PAGE {
            return Err(corrupt(0, "not a WKdm container"));
        }
        let page = self.page_size;
        if dst.len() < page {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        let out = &mut dst[..page];
        if src.len() == 4 {
            for w in out.chunks_exact_mut(4) {
                w.copy_from_slice(src);
            }
            return Ok(page);
        }
        if first == MZV_MAGIC {
            if !(src.len() - 4).is_multiple_of(6) {
                return Err(corrupt(4, "mostly-zero entries are not 6 bytes each"));
            }
            out.fill(0);
            let mut next = 0usize;
            for (k, e) in src[4..].chunks_exact(6).enumerate() {
                let off = u16::from_le_bytes([e[4], e[5]]) as usize;
                if !off.is_multiple_of(4) || off < next || off + 4 > page {
                    return Err(corrupt(4 + 6 * k, "mostly-zero offset out of order or range"));
                }
                out[off..off + 4].copy_from_slice(&e[..4]);
                next = off + 4;
            }
            return Ok(page);
        }
        unpack(src, page / 4, out)?;
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compress(w: &mut Wkdm, src: &[u8]) -> Vec<u8> {
        let mut dst = vec![0u8; crate::compress_bound(src.len())];
        let n = w.compress(src, &mut dst).unwrap();
        dst.truncate(n);
        dst
    }

    fn decode(w: &mut Wkdm, comp: &[u8], len: usize) -> Result<Vec<u8>, CompError> {
        let mut out = vec![0u8; len];
        let n = w.decompress(comp, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn zero_and_single_value_pages_are_one_word() {
        let mut w = Wkdm::new(4096);
        assert_eq!(compress(&mut w, &[0; 4096]), [0, 0, 0, 0]);
        let page = words(&[0x1234_5678; 1024]);
        assert_eq!(compress(&mut w, &page), 0x1234_5678u32.to_le_bytes());
        assert_eq!(decode(&mut w, &0x1234_5678u32.to_le_bytes(), 4096).unwrap(), page);
        // A value below 1024 is a partial hit against the zero dictionary: still single-value.
        let small = words(&[5; 1024]);
        assert_eq!(compress(&mut w, &small), [5, 0, 0, 0]);
    }

    #[test]
    fn mostly_zero_page_lists_value_and_offset() {
        let mut w = Wkdm::new(4096);
        let mut ws = vec![0u32; 1024];
        ws[3] = 0xaabb_ccdd;
        ws[1000] = 0x0102_0304;
        let page = words(&ws);
        let c = compress(&mut w, &page);
        let mut want = MZV_MAGIC.to_le_bytes().to_vec();
        want.extend_from_slice(&0xaabb_ccddu32.to_le_bytes());
        want.extend_from_slice(&12u16.to_le_bytes());
        want.extend_from_slice(&0x0102_0304u32.to_le_bytes());
        want.extend_from_slice(&4000u16.to_le_bytes());
        assert_eq!(c, want);
        assert_eq!(decode(&mut w, &c, 4096).unwrap(), page);
    }

    #[test]
    fn normal_page_layout_by_hand() {
        // Words: a miss, an exact hit, a partial hit (same high 22 bits), a zero, then a page of
        // distinct misses so the normal packer wins over the sparse one.
        let a = 0x0001_0400u32; // slot HASH[(a >> 10) & 255] = HASH[65] = 7
        let mut ws: Vec<u32> = vec![a, a, a | 0x3ff, 0];
        ws.extend((4..1024u32).map(|i| i << 18 | 0x3ff));
        let page = words(&ws);
        let mut w = Wkdm::new(4096);
        let c = compress(&mut w, &page);
        // Misses: word 0 and words 4..1024 (each has new high bits) = 1021.
        let end_misses = 3 + 64 + 1021;
        assert_eq!(le32(&c, 0), end_misses as u32);
        assert_eq!(le32(&c, 4), end_misses as u32 + 1); // 2 indices -> one packed word
        assert_eq!(le32(&c, 8), end_misses as u32 + 2); // 1 low-bits value -> one word
        assert_eq!(c.len(), (end_misses + 2) * 4);
        // Tags of group 0: words 0..4 = miss, exact, partial, zero; words 4..16 all misses.
        // Byte k holds tags k, 4+k, 8+k, 12+k at bits 0, 2, 4, 6.
        let t = [2u8, 3, 1, 0];
        let packed: Vec<u8> = (0..4).map(|k| t[k] | 2 << 2 | 2 << 4 | 2 << 6).collect();
        assert_eq!(&c[12..16], packed.as_slice());
        assert_eq!(le32(&c, 12 + 256), a); // first miss, right after the tags
        // qpos: two indices 7, 7 in bytes 0 and 1, low nibbles.
        assert_eq!(le32(&c, 4 * end_misses), 0x0707);
        assert_eq!(le32(&c, 4 * end_misses + 4), 0x3ff);
        assert_eq!(decode(&mut w, &c, 4096).unwrap(), page);
    }

    #[test]
    fn non_page_inputs_use_the_length_container() {
        let mut w = Wkdm::new(4096);
        let src = [9u8, 0, 0, 0, 9, 0, 0, 0, 1, 2];
        let c = compress(&mut w, &src);
        assert_eq!(le32(&c, 0), ANY_LEN_MAGIC);
        assert_eq!(le32(&c, 4), 10);
        // 9 is a partial hit on the zero dictionary, then an exact hit. Body: header, one tag
        // word, no misses, one qpos word, one low-bits word; then the 2 tail bytes.
        assert_eq!(c.len(), 8 + 4 * (3 + 1 + 1 + 1) + 2);
        assert_eq!(&c[c.len() - 2..], [1, 2]);
        assert_eq!(decode(&mut w, &c, 10).unwrap(), src);
    }

    #[test]
    fn corrupt_streams_are_errors() {
        let mut w = Wkdm::new(4096);
        let page: Vec<u8> =
            (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let c = compress(&mut w, &page);
        for cut in [0, 3, 12, 100, c.len() - 1] {
            assert!(decode(&mut w, &c[..cut], 4096).is_err(), "cut {cut}");
        }
        let mut bad = c.clone();
        bad[0] = bad[0].wrapping_add(1);
        assert!(decode(&mut w, &bad, 4096).is_err());
        // A 64 KiB stream has no native page format.
        let mut big = Wkdm::new(65536);
        assert!(decode(&mut big, &c, 65536).is_err());
    }

    proptest! {
        #[test]
        fn pages_of_few_values_round_trip(
            vals in proptest::collection::vec(prop_oneof![Just(0u32), any::<u32>(), 0u32..2048], 1..6),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 1024),
        ) {
            let page = words(&picks.iter().map(|p| vals[p.index(vals.len())]).collect::<Vec<_>>());
            let mut w = Wkdm::new(4096);
            let c = compress(&mut w, &page);
            // xnu's worst case (every word a miss) bounds every page.
            prop_assert!(c.len() <= 12 + 256 + 4096);
            prop_assert_eq!(decode(&mut w, &c, 4096).unwrap(), page);
        }

        #[test]
        fn sixteen_kib_pages_round_trip(seed in any::<u64>()) {
            let page: Vec<u8> = (0..4096u64)
                .flat_map(|i| (((seed ^ i).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as u32 * (i as u32 % 3)).to_le_bytes())
                .collect();
            let mut w = Wkdm::new(16384);
            let c = compress(&mut w, &page);
            prop_assert_ne!(le32(&c, 0), ANY_LEN_MAGIC);
            prop_assert_eq!(decode(&mut w, &c, 16384).unwrap(), page);
        }
    }
}
