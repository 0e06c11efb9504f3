//! "Typical anonymous memory": a mix of the page kinds found in dumps of live processes, with
//! proportions calibrated against the live kernel so that lzo and lz4 ratios land where real
//! memory does (2.5-3x; the project's 408 MB capture of Python, Node and JVM processes gave
//! lzo 2.93, lzo-rle 2.87, lz4 2.65, docs/REFERENCES.md [live-zram-oracle]).
//!
//! Why these kinds: a resident anonymous page is almost never all random and rarely all zero.
//! Real dumps hold (1) a few same-filled pages (zram's SAME pages, ~1 % in the capture),
//! (2) a few incompressible ones (compressed or encrypted buffers, hash tables; zram's HUGE
//! pages, ~5 %), and in between (3) heap pages of small objects: allocator headers, type
//! pointers repeated per object, pointers into the same arena sharing their high bytes, small
//! integer fields; (4) arrays of small integers and counters; (5) strings, Latin-1 and UTF-16;
//! (6) floating-point arrays; (7) mostly-empty pages with a little live data. Each page draws
//! its kind from [`WEIGHTS`] and then its content, all from one SplitMix64 stream, so a seed
//! fixes the whole set.
//!
//! The weights were tuned by writing sets with `zmem gen --kind mixed` and `zmem export --raw`
//! and reading the kernel's mm_stat (`kernel-zram-mmstat lzo|lz4 FILE`, ratio =
//! orig_data_size / compr_data_size); docs/FORMATS.md records the figures.

use crate::pageset::PageSetBuilder;
use crate::prng::SplitMix64;
use crate::{PageSet, PagesError};

/// One kind of page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// All zero.
    Zero,
    /// One repeated non-zero 8-byte word.
    Filled,
    /// Heap objects: headers, type pointers, arena pointers, small fields.
    Heap,
    /// Arrays of small integers and counters.
    Ints,
    /// Text: ASCII words, sometimes as UTF-16.
    Text,
    /// Arrays of doubles.
    Float,
    /// Mostly zero with a few islands of heap data.
    Sparse,
    /// Uniformly random bytes.
    Random,
}

/// Relative weights of the page kinds (sum 1000): per-mille of pages.
pub const WEIGHTS: [(PageKind, u32); 8] = [
    (PageKind::Zero, 10),
    (PageKind::Filled, 3),
    (PageKind::Heap, 465),
    (PageKind::Ints, 150),
    (PageKind::Text, 110),
    (PageKind::Float, 70),
    (PageKind::Sparse, 167),
    (PageKind::Random, 25),
];

/// `pages` pages of typical anonymous memory.
pub fn generate(pages: usize, page_size: usize, seed: u64) -> Result<PageSet, PagesError> {
    let mut rng = SplitMix64::new(seed);
    let mut b = PageSetBuilder::new(page_size, false)?;
    b.reserve(pages);
    let total: u32 = WEIGHTS.iter().map(|w| w.1).sum();
    for _ in 0..pages {
        let kind = pick(&mut rng, total);
        b.push_with(|page| fill(kind, &mut rng, page));
    }
    Ok(b.finish())
}

fn pick(rng: &mut SplitMix64, total: u32) -> PageKind {
    let mut x = rng.below(u64::from(total)) as u32;
    for &(kind, w) in &WEIGHTS {
        if x < w {
            return kind;
        }
        x -= w;
    }
    PageKind::Random
}

/// Fills one zeroed page with content of `kind`.
pub fn fill(kind: PageKind, rng: &mut SplitMix64, page: &mut [u8]) {
    match kind {
        PageKind::Zero => {}
        PageKind::Filled => {
            let word = FILL_WORDS[rng.below(FILL_WORDS.len() as u64) as usize].to_le_bytes();
            for c in page.chunks_exact_mut(8) {
                c.copy_from_slice(&word);
            }
        }
        PageKind::Heap => heap(rng, page),
        PageKind::Ints => ints(rng, page),
        PageKind::Text => text(rng, page),
        PageKind::Float => float(rng, page),
        PageKind::Sparse => sparse(rng, page),
        PageKind::Random => rng.fill(page),
    }
}

const FILL_WORDS: [u64; 4] =
    [u64::MAX, 0x0101_0101_0101_0101, 0xdead_beef_dead_beef, 0x2020_2020_2020_2020];

fn put_u64(page: &mut [u8], at: usize, v: u64) {
    if let Some(dst) = page.get_mut(at..at + 8) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

/// An arena of a process's heap: pointers into it share their high bytes.
#[derive(Debug, Clone, Copy)]
struct Arena {
    base: u64,
    span: u64,
}

impl Arena {
    fn new(rng: &mut SplitMix64) -> Self {
        // brk heaps sit above the executable (0x55..), mmap arenas and JIT heaps below the stack
        // (0x7f..).
        let base = if rng.chance(0.5) {
            0x0000_5555_5555_0000 + (rng.below(1 << 12) << 16)
        } else {
            0x0000_7f00_0000_0000 + (rng.below(1 << 24) << 16)
        };
        Self { base, span: 1 << rng.range(16, 24) }
    }

    fn pointer(&self, rng: &mut SplitMix64) -> u64 {
        self.base + (rng.below(self.span) & !0xf)
    }
}

/// The field kinds of a simulated object type.
#[derive(Debug, Clone, Copy)]
enum Field {
    Zero,
    Pointer,
    Small(u64),
    Counter,
    Hash,
    Constant(u64),
}

#[derive(Debug, Clone)]
struct ObjType {
    type_ptr: u64,
    fields: Vec<Field>,
}

impl ObjType {
    fn new(rng: &mut SplitMix64, arena: &Arena) -> Self {
        let n = rng.range(1, 11) as usize;
        let fields = (0..n)
            .map(|_| match rng.below(16) {
                0..=3 => Field::Pointer,
                4..=6 => Field::Zero,
                7..=10 => Field::Small(1 << rng.range(1, 12)),
                11 => Field::Counter,
                12 => Field::Hash,
                _ => Field::Constant(rng.below(1 << 20)),
            })
            .collect();
        Self { type_ptr: arena.pointer(rng) | 0x8, fields }
    }

    /// Bytes of one object including the allocator's 8-byte size header.
    fn size(&self) -> usize {
        16 + 8 * self.fields.len()
    }
}

/// Writes heap objects into `page[start..end]` (8-byte aligned).
fn objects(rng: &mut SplitMix64, page: &mut [u8], start: usize, end: usize) {
    let arena = Arena::new(rng);
    let types: Vec<ObjType> = (0..rng.range(1, 4)).map(|_| ObjType::new(rng, &arena)).collect();
    let mut counter = rng.below(1 << 16);
    let mut at = start;
    while at + 8 <= end {
        let t = &types[rng.below(types.len() as u64) as usize];
        let size = t.size() as u64;
        // malloc's chunk header: size with the in-use bit.
        put_u64(page, at, size | 1);
        if rng.chance(0.1) {
            // A freed chunk: header and a free-list pointer, the rest stale zeros.
            put_u64(page, at + 8, arena.pointer(rng));
            at += size as usize;
            continue;
        }
        put_u64(page, at + 8, t.type_ptr);
        for (k, f) in t.fields.iter().enumerate() {
            let v = match *f {
                Field::Zero => 0,
                Field::Pointer => {
                    if rng.chance(0.15) {
                        0
                    } else {
                        arena.pointer(rng)
                    }
                }
                Field::Small(max) => rng.below(max),
                Field::Counter => {
                    counter += rng.range(1, 3);
                    counter
                }
                Field::Hash => rng.next_u64(),
                Field::Constant(c) => c,
            };
            if at + 16 + 8 * k + 8 <= end {
                put_u64(page, at + 16 + 8 * k, v);
            }
        }
        at += size as usize;
    }
}

fn heap(rng: &mut SplitMix64, page: &mut [u8]) {
    let len = page.len();
    objects(rng, page, 0, len);
}

fn sparse(rng: &mut SplitMix64, page: &mut [u8]) {
    let len = page.len();
    for _ in 0..rng.range(1, 6) {
        let size = (rng.range(16, (len / 8) as u64) as usize) & !7;
        let start = (rng.below((len - size) as u64) as usize) & !7;
        match rng.below(4) {
            0 => ints(rng, &mut page[start..start + size]),
            1 => text(rng, &mut page[start..start + size]),
            _ => objects(rng, page, start, start + size),
        }
    }
}

fn ints(rng: &mut SplitMix64, page: &mut [u8]) {
    let width = if rng.chance(0.5) { 4 } else { 8 };
    let regime = rng.below(3);
    let max = 1u64 << rng.range(2, 16);
    let mut v = rng.below(max);
    for c in page.chunks_exact_mut(width) {
        let x = match regime {
            // Counters and sorted keys: small steps.
            0 => {
                v += rng.below(4);
                v
            }
            // Small values with many zeros (flags, lengths, enum tags).
            1 => {
                if rng.chance(0.4) {
                    0
                } else {
                    rng.below(max)
                }
            }
            // Runs of a repeated value.
            _ => {
                if rng.chance(0.1) {
                    v = rng.below(max);
                }
                v
            }
        };
        c.copy_from_slice(&x.to_le_bytes()[..width]);
    }
}

const WORDS: [&str; 64] = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "at",
    "by",
    "this",
    "from",
    "or",
    "an",
    "are",
    "not",
    "have",
    "which",
    "one",
    "all",
    "were",
    "when",
    "can",
    "there",
    "use",
    "each",
    "memory",
    "page",
    "process",
    "value",
    "name",
    "type",
    "error",
    "request",
    "user",
    "object",
    "string",
    "function",
    "return",
    "class",
    "import",
    "self",
    "data",
    "index",
    "length",
    "java",
    "lang",
    "node",
    "module",
    "http",
    "json",
    "true",
    "false",
    "null",
    "undefined",
    "buffer",
    "list",
    "map",
];

fn text(rng: &mut SplitMix64, page: &mut [u8]) {
    let utf16 = rng.chance(0.3);
    let mut at = 0;
    while at < page.len() {
        let word = WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes();
        let sep: &[u8] = match rng.below(10) {
            0 => b"\n",
            1 => b", ",
            2 => b"\": \"",
            3 => b"/",
            4 => b"_",
            5 => b".",
            _ => b" ",
        };
        let number = rng.chance(0.1).then(|| rng.below(100_000).to_string());
        for &ch in word.iter().chain(number.iter().flat_map(|n| n.as_bytes())).chain(sep) {
            if at >= page.len() {
                break;
            }
            page[at] = ch;
            at += if utf16 { 2 } else { 1 };
        }
    }
}

fn float(rng: &mut SplitMix64, page: &mut [u8]) {
    let regime = rng.below(3);
    let mut x = rng.unit() * 100.0;
    let step = (rng.below(8) + 1) as f64 * 0.25;
    for (i, c) in page.chunks_exact_mut(8).enumerate() {
        let v = match regime {
            // Measured values: full-entropy mantissas.
            0 => {
                x += rng.unit() - 0.5;
                x
            }
            // Grid coordinates and counts stored as doubles: short mantissas.
            1 => i as f64 * step,
            // Mostly small whole numbers, some measurements.
            _ => {
                if rng.chance(0.7) {
                    rng.below(64) as f64
                } else {
                    rng.unit()
                }
            }
        };
        c.copy_from_slice(&v.to_le_bytes());
    }
}
