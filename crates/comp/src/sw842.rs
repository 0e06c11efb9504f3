//! `842`: the kernel's software implementation of IBM's 842 format (lib/842, zram `842`;
//! docs/REFERENCES.md [842-kernel]).
//!
//! Why it looks the way it does: 842 was designed for a hardware engine (POWER7+ NX) that works on
//! 8-byte blocks and remembers recent data in three ring buffers of 2-, 4- and 8-byte entries.
//! Each block becomes one 5-bit template that splits it into 2/4/8-byte pieces, each either
//! literal data or an index into the matching ring, so a block costs between 5+8 bits (one I8)
//! and 5+64 bits (D8).
//!
//! Bitstream (MSB first: each field's high bit comes first, fields follow without alignment):
//!
//! ```text
//! 0x00..=0x19  template: up to 4 actions adding up to 8 bytes
//!              D2/D4/D8: 16/32/64 data bits (the input bytes in order)
//!              I2: 8-bit index (ring of 256 x 2 B), I4: 9 bits (512 x 4 B), I8: 8 bits (256 x 8 B)
//! 0x1B         repeat: 6-bit N, the previous 8 bytes again N + 1 times
//! 0x1C         zeros: 8 zero bytes
//! 0x1D         short data: 3-bit N (1..=7), N bytes (software only; ends an odd-length input)
//! 0x1E         end, followed by the 32-bit crc32_be(0, original) (MSB first, poly 0x04C11DB7,
//!              no inversion), then zero bits to a byte and zero bytes to a multiple of 8 bytes
//! ```
//!
//! An index names a ring slot, not a distance: slot i of the 2-byte ring is output offset 2i
//! within the current 512-byte section of the output, or of the previous section when that
//! position has not been reached yet in the current one (`__do_index`).
//!
//! The compressor reproduces the kernel's choices so its output is byte-identical: blocks are
//! checked for repeat (up to 64) and zero first, then templates are tried in the kernel's order
//! (cheapest first) and the first whose indices all exist wins, D8 being the fallback. An index
//! exists when a ring slot holds the value; among several, the kernel's hash chains return the
//! slot most recently written (later sub-slots of one block count as more recent). The rings are
//! updated after every 8-byte block, repeat and zero blocks included. Here each ring is a chained
//! hash table with the same head-insertion order; the hash function itself does not matter.

use crate::{CompError, Compressor};

const NAME: &str = "842";

const OP_REPEAT: u64 = 0x1b;
const OP_ZEROS: u64 = 0x1c;
const OP_SHORT_DATA: u64 = 0x1d;
const OP_END: u64 = 0x1e;
const OP_BITS: u32 = 5;
const REPEAT_BITS: u32 = 6;
const REPEAT_MAX: u32 = 64;
const SHORT_DATA_BITS: u32 = 3;
const CRC_BITS: u32 = 32;
const I2_BITS: u32 = 8;
const I4_BITS: u32 = 9;
const I8_BITS: u32 = 8;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    D2,
    D4,
    D8,
    I2,
    I4,
    I8,
}

impl Op {
    const fn size(self) -> usize {
        match self {
            Op::D2 | Op::I2 => 2,
            Op::D4 | Op::I4 => 4,
            Op::D8 | Op::I8 => 8,
        }
    }
}

use Op::{D2, D4, D8, I2, I4, I8};

/// Decoder templates, indexed by template code.
static DECOMP_OPS: [&[Op]; 26] = [
    &[D8],
    &[D4, D2, I2],
    &[D4, I2, D2],
    &[D4, I2, I2],
    &[D4, I4],
    &[D2, I2, D4],
    &[D2, I2, D2, I2],
    &[D2, I2, I2, D2],
    &[D2, I2, I2, I2],
    &[D2, I2, I4],
    &[I2, D2, D4],
    &[I2, D4, I2],
    &[I2, D2, I2, D2],
    &[I2, D2, I2, I2],
    &[I2, D2, I4],
    &[I2, I2, D4],
    &[I2, I2, D2, I2],
    &[I2, I2, I2, D2],
    &[I2, I2, I2, I2],
    &[I2, I2, I4],
    &[I4, D4],
    &[I4, D2, I2],
    &[I4, I2, D2],
    &[I4, I2, I2],
    &[I4, I4],
    &[I8],
];

/// The compressor's trial order (fewest output bits first), as template codes.
static COMP_ORDER: [u8; 26] = [
    0x19, 0x18, 0x17, 0x13, 0x12, 0x16, 0x15, 0x0e, 0x09, 0x11, 0x10, 0x0d, 0x08, 0x14, 0x04, 0x0f,
    0x0c, 0x0b, 0x07, 0x06, 0x03, 0x0a, 0x05, 0x02, 0x01, 0x00,
];

/// `crc32_be` lookup table (MSB-first CRC-32, polynomial 0x04C11DB7).
static CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 { (c << 1) ^ 0x04c1_1db7 } else { c << 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// The kernel's `crc32_be(crc, data)`: no reflection, no final inversion.
pub fn crc32_be(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = (crc << 8) ^ CRC_TABLE[((crc >> 24) as u8 ^ b) as usize];
    }
    crc
}

const NONE: u16 = u16::MAX;

/// One ring of the compressor: `SLOTS` entries, findable by value, most recently written first.
struct Ring<const SLOTS: usize, const BUCKETS: usize> {
    data: [u64; SLOTS],
    next: [u16; SLOTS],
    prev: [u16; SLOTS],
    bucket_of: [u16; SLOTS],
    heads: [u16; BUCKETS],
}

impl<const SLOTS: usize, const BUCKETS: usize> Ring<SLOTS, BUCKETS> {
    fn new() -> Self {
        Ring {
            data: [0; SLOTS],
            next: [NONE; SLOTS],
            prev: [NONE; SLOTS],
            bucket_of: [NONE; SLOTS],
            heads: [NONE; BUCKETS],
        }
    }

    fn reset(&mut self) {
        self.bucket_of.fill(NONE);
        self.heads.fill(NONE);
    }

    #[inline(always)]
    fn bucket(v: u64) -> usize {
        (v.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize % BUCKETS
    }

    /// The most recently written slot holding `v`.
    #[inline]
    fn find(&self, v: u64) -> Option<u16> {
        let mut n = self.heads[Self::bucket(v)];
        while n != NONE {
            if self.data[n as usize] == v {
                return Some(n);
            }
            n = self.next[n as usize];
        }
        None
    }

    /// Overwrites `slot` with `v` and makes it the most recent holder of `v`.
    #[inline]
    fn replace(&mut self, slot: usize, v: u64) {
        let b = self.bucket_of[slot];
        if b != NONE {
            let (p, n) = (self.prev[slot], self.next[slot]);
            if p == NONE {
                self.heads[b as usize] = n;
            } else {
                self.next[p as usize] = n;
            }
            if n != NONE {
                self.prev[n as usize] = p;
            }
        }
        let b = Self::bucket(v);
        let head = self.heads[b];
        self.data[slot] = v;
        self.prev[slot] = NONE;
        self.next[slot] = head;
        if head != NONE {
            self.prev[head as usize] = slot as u16;
        }
        self.heads[b] = slot as u16;
        self.bucket_of[slot] = b as u16;
    }
}

/// MSB-first bit writer into a caller's buffer.
struct BitWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
    acc: u64,
    nbits: u32,
}

impl BitWriter<'_> {
    /// Appends the low `n` (<= 32) bits of `v`.
    #[inline]
    fn put(&mut self, v: u64, n: u32) -> Result<(), CompError> {
        self.acc = (self.acc << n) | (v & ((1u64 << n) - 1));
        self.nbits += n;
        while self.nbits >= 8 {
            self.nbits -= 8;
            let Some(b) = self.out.get_mut(self.pos) else {
                return Err(CompError::OutputTooSmall { capacity: self.out.len() });
            };
            *b = (self.acc >> self.nbits) as u8;
            self.pos += 1;
        }
        Ok(())
    }

    fn put64(&mut self, v: u64) -> Result<(), CompError> {
        self.put(v >> 32, 32)?;
        self.put(v & 0xffff_ffff, 32)
    }

    /// Pads with zero bits to a byte, then zero bytes to a multiple of 8; returns the length.
    fn finish(mut self) -> Result<usize, CompError> {
        if self.nbits > 0 {
            self.put(0, 8 - self.nbits)?;
        }
        while !self.pos.is_multiple_of(8) {
            self.put(0, 8)?;
        }
        Ok(self.pos)
    }
}

/// MSB-first bit reader; running past the end is corruption.
struct BitReader<'a> {
    src: &'a [u8],
    bit: usize,
}

impl BitReader<'_> {
    #[inline]
    fn get(&mut self, n: u32) -> Result<u64, CompError> {
        if self.bit + n as usize > self.src.len() * 8 {
            return Err(CompError::corrupt(NAME, self.bit / 8, "bitstream ends early"));
        }
        let at = self.bit / 8;
        let mut w = [0u8; 8];
        let avail = (self.src.len() - at).min(8);
        w[..avail].copy_from_slice(&self.src[at..at + avail]);
        let v = (u64::from_be_bytes(w) << (self.bit % 8)) >> (64 - n);
        self.bit += n as usize;
        Ok(v)
    }
}

/// A 842 stream: the three rings of the compressor (the decompressor needs no state).
pub struct Sw842 {
    ring8: Box<Ring<256, 1024>>,
    ring4: Box<Ring<512, 2048>>,
    ring2: Box<Ring<256, 1024>>,
}

impl std::fmt::Debug for Sw842 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sw842").finish_non_exhaustive()
    }
}

impl Default for Sw842 {
    fn default() -> Self {
        Self::new()
    }
}

/// Index lookups of one block, done lazily as the kernel does (`INDEX_NOT_CHECKED`).
#[derive(Clone, Copy)]
enum Lookup {
    Unchecked,
    Missing,
    Found(u16),
}

impl Sw842 {
    /// A fresh stream.
    pub fn new() -> Self {
        Sw842 {
            ring8: Box::new(Ring::new()),
            ring4: Box::new(Ring::new()),
            ring2: Box::new(Ring::new()),
        }
    }

    fn lookup(&self, cache: &mut [Lookup; 7], op: Op, at: usize, block: &[u8]) -> Option<u16> {
        // Cache slots: 0 = 8-byte, 1..=2 = 4-byte halves, 3..=6 = 2-byte quarters.
        let (k, v) = match op {
            I8 => (0, u64::from_be_bytes(block[..8].try_into().ok()?)),
            I4 => (1 + at / 4, u32::from_be_bytes(block[at..at + 4].try_into().ok()?) as u64),
            I2 => (3 + at / 2, u16::from_be_bytes([block[at], block[at + 1]]) as u64),
            _ => return None,
        };
        let r = match cache[k] {
            Lookup::Found(i) => return Some(i),
            Lookup::Missing => return None,
            Lookup::Unchecked => match op {
                I8 => self.ring8.find(v),
                I4 => self.ring4.find(v),
                _ => self.ring2.find(v),
            },
        };
        cache[k] = r.map_or(Lookup::Missing, Lookup::Found);
        r
    }

    /// Emits the first template (in the kernel's order) whose indices all exist.
    fn process_block(&self, block: &[u8], w: &mut BitWriter<'_>) -> Result<(), CompError> {
        let mut cache = [Lookup::Unchecked; 7];
        let mut chosen = 0u8;
        'templates: for &code in &COMP_ORDER {
            let mut at = 0;
            for &op in DECOMP_OPS[code as usize] {
                if matches!(op, I2 | I4 | I8) && self.lookup(&mut cache, op, at, block).is_none() {
                    continue 'templates;
                }
                at += op.size();
            }
            chosen = code;
            break;
        }
        w.put(chosen as u64, OP_BITS)?;
        let mut at = 0;
        for &op in DECOMP_OPS[chosen as usize] {
            let index = |c: &mut [Lookup; 7]| self.lookup(c, op, at, block).unwrap_or(0) as u64;
            match op {
                D2 => w.put(u16::from_be_bytes([block[at], block[at + 1]]) as u64, 16)?,
                D4 => {
                    let v = u32::from_be_bytes([
                        block[at],
                        block[at + 1],
                        block[at + 2],
                        block[at + 3],
                    ]);
                    w.put(v as u64, 32)?
                }
                D8 => w.put64(u64::from_be_bytes([
                    block[0], block[1], block[2], block[3], block[4], block[5], block[6], block[7],
                ]))?,
                I2 => w.put(index(&mut cache), I2_BITS)?,
                I4 => w.put(index(&mut cache), I4_BITS)?,
                I8 => w.put(index(&mut cache), I8_BITS)?,
            }
            at += op.size();
        }
        Ok(())
    }

    /// Writes the block at byte offset `pos` into the rings (`update_hashtables`).
    fn update_rings(&mut self, pos: usize, block: &[u8]) {
        let be16 = |i: usize| u16::from_be_bytes([block[i], block[i + 1]]) as u64;
        let be32 = |i: usize| {
            u32::from_be_bytes([block[i], block[i + 1], block[i + 2], block[i + 3]]) as u64
        };
        let n8 = (pos >> 3) % 256;
        let n4 = (pos >> 2) % 512;
        let n2 = (pos >> 1) % 256;
        self.ring8.replace(n8, (be32(0) << 32) | be32(4));
        self.ring4.replace(n4, be32(0));
        self.ring4.replace(n4 + 1, be32(4));
        for k in 0..4 {
            self.ring2.replace(n2 + k, be16(2 * k));
        }
    }
}

fn write_repeat(w: &mut BitWriter<'_>, count: u32) -> Result<(), CompError> {
    w.put(OP_REPEAT, OP_BITS)?;
    w.put((count - 1) as u64, REPEAT_BITS)
}

impl Compressor for Sw842 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        if u32::try_from(src.len()).is_err() {
            return Err(CompError::InputTooLarge {
                algo: NAME,
                len: src.len(),
                max: u32::MAX as usize,
            });
        }
        self.ring8.reset();
        self.ring4.reset();
        self.ring2.reset();
        let mut w = BitWriter { out: dst, pos: 0, acc: 0, nbits: 0 };
        let blocks = src.chunks_exact(8);
        let short = blocks.remainder();
        if let Some(first) = src.get(..8) {
            // The first block must not count as a repeat.
            let mut last = !u64::from_ne_bytes(first.try_into().unwrap_or_default());
            let mut repeat = 0u32;
            for (b, block) in blocks.enumerate() {
                let next = u64::from_ne_bytes(block.try_into().unwrap_or_default());
                let mut emitted = false;
                if next == last {
                    repeat += 1;
                    emitted = repeat < REPEAT_MAX;
                }
                if !emitted && repeat > 0 {
                    write_repeat(&mut w, repeat)?;
                    repeat = 0;
                    // A full repeat run includes this block.
                    emitted = next == last;
                }
                if !emitted {
                    if next == 0 {
                        w.put(OP_ZEROS, OP_BITS)?;
                    } else {
                        self.process_block(block, &mut w)?;
                    }
                }
                last = next;
                self.update_rings(b * 8, block);
            }
            if repeat > 0 {
                write_repeat(&mut w, repeat)?;
            }
        }
        if !short.is_empty() {
            w.put(OP_SHORT_DATA, OP_BITS)?;
            w.put(short.len() as u64, SHORT_DATA_BITS)?;
            for &b in short {
                w.put(b as u64, 8)?;
            }
        }
        w.put(OP_END, OP_BITS)?;
        w.put(crc32_be(0, src) as u64, CRC_BITS)?;
        w.finish()
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        decompress(src, dst)
    }
}

/// Decodes a 842 stream into `dst` and checks its CRC. Bits after the CRC (padding) are ignored,
/// as the kernel does.
pub(crate) fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
    let mut r = BitReader { src, bit: 0 };
    let mut op = 0usize;
    let no_room = |dst: &[u8]| CompError::OutputTooSmall { capacity: dst.len() };
    loop {
        let at = r.bit / 8;
        let code = r.get(OP_BITS)?;
        match code {
            OP_REPEAT => {
                let n = r.get(REPEAT_BITS)? as usize + 1;
                if op < 8 {
                    return Err(CompError::corrupt(NAME, at, "repeat without 8 previous bytes"));
                }
                if dst.len() - op < 8 * n {
                    return Err(no_room(dst));
                }
                for _ in 0..n {
                    dst.copy_within(op - 8..op, op);
                    op += 8;
                }
            }
            OP_ZEROS => {
                if dst.len() - op < 8 {
                    return Err(no_room(dst));
                }
                dst[op..op + 8].fill(0);
                op += 8;
            }
            OP_SHORT_DATA => {
                let n = r.get(SHORT_DATA_BITS)? as usize;
                if n == 0 {
                    return Err(CompError::corrupt(NAME, at, "short data of zero bytes"));
                }
                if dst.len() - op < n {
                    return Err(no_room(dst));
                }
                for _ in 0..n {
                    dst[op] = r.get(8)? as u8;
                    op += 1;
                }
            }
            OP_END => break,
            c if (c as usize) < DECOMP_OPS.len() => {
                if dst.len() - op < 8 {
                    return Err(no_room(dst));
                }
                for &action in DECOMP_OPS[c as usize] {
                    let size = action.size();
                    match action {
                        D2 | D4 => {
                            let v = r.get(8 * size as u32)?;
                            dst[op..op + size].copy_from_slice(&v.to_be_bytes()[8 - size..]);
                        }
                        D8 => {
                            let hi = r.get(32)?;
                            let lo = r.get(32)?;
                            dst[op..op + 8].copy_from_slice(&(hi << 32 | lo).to_be_bytes());
                        }
                        I2 | I4 | I8 => {
                            let (bits, fifo) = match action {
                                I2 => (I2_BITS, 512),
                                I4 => (I4_BITS, 2048),
                                _ => (I8_BITS, 2048),
                            };
                            let index = r.get(bits)? as usize;
                            let total = op & !7;
                            let mut offset = index * size;
                            if total > fifo {
                                let mut section = total - total % fifo;
                                if offset >= total % fifo {
                                    section -= fifo;
                                }
                                offset += section;
                            }
                            if offset + size > total {
                                return Err(CompError::corrupt(NAME, at, "index past the output"));
                            }
                            dst.copy_within(offset..offset + size, op);
                        }
                    }
                    op += size;
                }
            }
            _ => return Err(CompError::corrupt(NAME, at, "undefined template code")),
        }
    }
    let crc = r.get(CRC_BITS)? as u32;
    if crc != crc32_be(0, &dst[..op]) {
        return Err(CompError::corrupt(NAME, r.bit / 8, "CRC mismatch"));
    }
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compress(src: &[u8]) -> Vec<u8> {
        let mut dst = vec![0u8; crate::compress_bound(src.len())];
        let n = Sw842::new().compress(src, &mut dst).unwrap();
        dst.truncate(n);
        dst
    }

    fn decode(comp: &[u8], len: usize) -> Result<Vec<u8>, CompError> {
        let mut out = vec![0u8; len];
        let n = decompress(comp, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// Reference bit-at-a-time CRC, to check the table.
    fn crc_bitwise(data: &[u8]) -> u32 {
        let mut crc = 0u32;
        for &b in data {
            crc ^= (b as u32) << 24;
            for _ in 0..8 {
                crc = if crc & 1 << 31 != 0 { crc << 1 ^ 0x04c1_1db7 } else { crc << 1 };
            }
        }
        crc
    }

    #[test]
    fn crc32_be_matches_the_catalogue() {
        // CRC-32/CKSUM (init 0, xorout 0xffffffff) of "123456789" is 0x765e7680; the kernel's
        // crc32_be(0, ..) is the same without the final inversion.
        assert_eq!(crc32_be(0, b"123456789"), !0x765e_7680);
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        assert_eq!(crc32_be(0, &data), crc_bitwise(&data));
    }

    #[test]
    fn eight_zero_bytes() {
        // zeros 11100, end 11110, crc of zeros = 0 (32 bits): 42 bits -> 6 bytes -> padded to 8.
        let c = compress(&[0; 8]);
        assert_eq!(c, [0xe7, 0x80, 0, 0, 0, 0, 0, 0]);
        assert_eq!(decode(&c, 8).unwrap(), [0; 8]);
    }

    #[test]
    fn empty_and_short_inputs_use_short_data() {
        // end (11110) + crc 0 -> 37 bits -> 5 bytes -> 8.
        assert_eq!(compress(&[]), [0xf0, 0, 0, 0, 0, 0, 0, 0]);
        // short data 11101, count 001, byte 0xab, end 11110, crc.
        let c = compress(&[0xab]);
        let crc = crc32_be(0, &[0xab]) as u64;
        let bits: u128 =
            (0b11101u128 << 11 | 0b001 << 8 | 0xab) << 37 | 0b11110 << 32 | crc as u128;
        let nbits = 16 + 5 + 32;
        let want = (bits << (128 - nbits)).to_be_bytes();
        assert_eq!(&c[..7], &want[..7]);
        assert_eq!(c.len(), 8);
        assert_eq!(decode(&c, 1).unwrap(), [0xab]);
    }

    #[test]
    fn repeat_and_i8_index_by_hand() {
        // Block A, block A (repeat, N = 0), block B, block A again. Both I8 slots 0 and 1 hold A
        // (the repeated block updates the rings too); the most recently written, 1, is chosen.
        let a = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let b = [9u8, 10, 11, 12, 13, 14, 15, 16];
        let src = [a, a, b, a].concat();
        let c = compress(&src);
        let mut w = Vec::new();
        let mut push = |v: u64, n: u32| w.extend((0..n).rev().map(|i| (v >> i) & 1 == 1));
        push(0x00, 5);
        push(u64::from_be_bytes(a), 64);
        push(OP_REPEAT, 5);
        push(0, 6);
        push(0x00, 5);
        push(u64::from_be_bytes(b), 64);
        push(0x19, 5);
        push(1, 8); // slot 1 (the repeat) is the most recent holder of A
        push(OP_END, 5);
        push(crc32_be(0, &src) as u64, 32);
        let mut bytes: Vec<u8> = w
            .chunks(8)
            .map(|c| c.iter().fold(0u8, |a, &b| a << 1 | b as u8) << (8 - c.len()))
            .collect();
        bytes.resize(bytes.len().div_ceil(8) * 8, 0);
        assert_eq!(c, bytes);
        assert_eq!(decode(&c, 32).unwrap(), src);
    }

    #[test]
    fn sixty_six_equal_blocks_are_a_literal_and_two_repeats() {
        let block = [7u8, 0, 0, 0, 0, 0, 0, 1];
        let src = block.repeat(66);
        let c = compress(&src);
        // D8 block, repeat 64 (N = 63), repeat 1 (N = 0), end, crc: 5+64+11+11+5+32 = 128 bits.
        assert_eq!(c.len(), 16);
        let v = u128::from_be_bytes(c[..16].try_into().unwrap());
        let field = |end: u32, n: u32| (v >> (128 - end)) & ((1 << n) - 1);
        assert_eq!(field(5, 5), 0x00);
        assert_eq!(field(69, 64), u64::from_be_bytes(block) as u128);
        assert_eq!((field(74, 5), field(80, 6)), (0x1b, 63));
        assert_eq!((field(85, 5), field(91, 6)), (0x1b, 0));
        assert_eq!(field(96, 5), 0x1e);
        assert_eq!(field(128, 32), crc32_be(0, &src) as u128);
        assert_eq!(decode(&c, src.len()).unwrap(), src);
    }

    #[test]
    fn corrupt_crc_is_rejected() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut c = compress(&src);
        assert_eq!(decode(&c, 4096).unwrap(), src);
        // Flip one bit of the first data value: the stream still parses, the CRC does not match.
        c[1] ^= 0x01;
        let e = decode(&c, 4096).unwrap_err();
        assert!(matches!(e, CompError::Corrupt { what: "CRC mismatch", .. }), "{e}");
    }

    #[test]
    fn bad_codes_and_indices_are_errors() {
        // 0x1a is undefined; repeat with no previous output; I8 index into empty output.
        assert!(decode(&[0x1a << 3, 0, 0, 0, 0, 0, 0, 0], 64).is_err());
        assert!(decode(&[0x1b << 3, 0, 0, 0, 0, 0, 0, 0], 64).is_err());
        assert!(decode(&[0x19 << 3, 0, 0, 0, 0, 0, 0, 0], 64).is_err());
        assert!(decode(&[], 64).is_err());
    }

    proptest! {
        #[test]
        fn indices_across_ring_sections_round_trip(
            vals in proptest::collection::vec(any::<u16>(), 1..12),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..3000),
        ) {
            // Few distinct 2-byte values over more than one 2 KiB section: every index kind hits
            // and the section arithmetic of the decoder is exercised.
            let src: Vec<u8> =
                picks.iter().flat_map(|p| vals[p.index(vals.len())].to_be_bytes()).collect();
            let c = compress(&src);
            prop_assert_eq!(c.len() % 8, 0);
            prop_assert_eq!(decode(&c, src.len()).unwrap(), src);
        }
    }
}
