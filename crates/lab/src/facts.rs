//! What the judgement reads of the pages themselves: facts about each page, never its bytes.
//!
//! The measuring phase runs on the pages; the judgement after it ([`crate::judge`]) needs of
//! them only what a store does with each: whether it is same-filled or zero (zram keeps a
//! same-filled page as its word, 6.18's swap layer keeps a zero page in its zeromap and never
//! offers it to zswap), and how long its object is with each compressor (zram's huge rule and
//! size class, zswap's size checks and size class follow from the length). These facts are what
//! an evidence file carries ([`crate::findings`]): a person cannot read a page back from them.
//! The lengths come from the compressor table's own pass (zmem-experiments'
//! `comp_bench::algo_row_lengths`), so no page is compressed again for them.

use serde::{Deserialize, Serialize};
use zmem_pool::zsmalloc::class::ClassTable;
use zmem_zram::same_filled;

use crate::LabError;

/// [`PageFacts::flags`]: the page is one 8-byte word repeated (zram stores the word alone).
pub const SAME: u8 = 1;
/// [`PageFacts::flags`]: every byte is zero (also [`SAME`]).
pub const ZERO: u8 = 2;

/// Each page's facts, in page order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageFacts {
    pub page_size: usize,
    /// One per page: [`SAME`] and [`ZERO`] bits.
    pub flags: Vec<u8>,
    /// Per compressor (its kernel name, at its default parameters), each page's compressed
    /// length as the compressor's stream writes it (before any store's huge rule).
    pub lengths: Vec<CodecLengths>,
}

/// One compressor's length for every page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodecLengths {
    pub algo: String,
    pub lengths: Vec<u32>,
}

impl PageFacts {
    /// The flags of `pages` (whole pages of `ps`), with no lengths yet.
    pub fn new(pages: &[u8], ps: usize) -> Self {
        let flags = pages
            .chunks_exact(ps)
            .map(|p| match same_filled(p) {
                Some(0) => SAME | ZERO,
                Some(_) => SAME,
                None => 0,
            })
            .collect();
        Self { page_size: ps, flags, lengths: Vec::new() }
    }

    /// The facts of `pages` with each of `algos`' lengths, each page compressed once per
    /// compressor (for callers outside the lab's measuring phase).
    pub fn of_pages(pages: &[u8], ps: usize, algos: &[&str]) -> Result<Self, LabError> {
        let mut f = Self::new(pages, ps);
        for &algo in algos {
            let mut stream = zmem_comp::create(algo, &zmem_comp::Params::default(), ps)?;
            let mut buf = vec![0u8; zmem_comp::compress_bound(ps)];
            let lengths = pages
                .chunks_exact(ps)
                .enumerate()
                .map(|(i, page)| {
                    let err = |err| LabError::Page { algo: algo.into(), page: i as u64, err };
                    stream.compress(page, &mut buf).map(|n| n as u32).map_err(err)
                })
                .collect::<Result<_, _>>()?;
            f.lengths.push(CodecLengths { algo: algo.into(), lengths });
        }
        Ok(f)
    }

    /// Pages described.
    pub fn pages(&self) -> usize {
        self.flags.len()
    }

    /// Whether page `i` is all zeros.
    pub fn is_zero(&self, i: usize) -> bool {
        self.flags.get(i).is_some_and(|f| f & ZERO != 0)
    }

    /// Each page's compressed length with `algo`, or an error naming what is missing.
    pub fn raw(&self, algo: &str) -> Result<&[u32], LabError> {
        self.lengths.iter().find(|c| c.algo == algo).map(|c| c.lengths.as_slice()).ok_or_else(
            || LabError::Setup(format!("the page facts hold no compressed lengths for {algo}")),
        )
    }

    /// What each page takes in zram with `algo`: 0 when same-filled, the page when its object
    /// reaches zsmalloc's huge class size (zram_drv.c `zram_write_page()` stores it whole).
    pub fn stored(&self, algo: &str) -> Result<Vec<u64>, LabError> {
        let ps = self.page_size;
        let huge = ClassTable::new(ps, zmem_zram::ZramConfig::default().chain_size)
            .map_err(|e| LabError::Setup(format!("size classes: {e}")))?
            .huge_class_size();
        let raw = self.raw(algo)?;
        Ok(self
            .flags
            .iter()
            .zip(raw)
            .map(|(&f, &len)| match (f & SAME != 0, len as usize >= huge) {
                (true, _) => 0,
                (false, true) => ps as u64,
                (false, false) => u64::from(len),
            })
            .collect())
    }

    /// Checks facts read from a file: a page size zmem measures, one flag and one length per
    /// page for every compressor, no unknown flag, no length a stream could not write.
    pub fn check(&self) -> Result<(), String> {
        let ps = self.page_size;
        if !ps.is_power_of_two() || !(4096..=65536).contains(&ps) {
            return Err(format!("page size {ps} is not a power of two from 4096 to 65536"));
        }
        if let Some(i) = self.flags.iter().position(|&f| f & !(SAME | ZERO) != 0) {
            return Err(format!("page {i} has unknown flags {:#x}", self.flags[i]));
        }
        if let Some(i) = self.flags.iter().position(|&f| f & ZERO != 0 && f & SAME == 0) {
            return Err(format!("page {i} is zero but not same-filled"));
        }
        let bound = zmem_comp::compress_bound(ps) as u32;
        for c in &self.lengths {
            if c.lengths.len() != self.flags.len() {
                return Err(format!(
                    "{} lengths for {}, but {} pages",
                    c.lengths.len(),
                    c.algo,
                    self.flags.len()
                ));
            }
            if let Some(i) = c.lengths.iter().position(|&l| l == 0 || l > bound) {
                return Err(format!(
                    "page {i}'s length with {} is {}, outside 1..={bound}",
                    c.algo, c.lengths[i]
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages() -> Vec<u8> {
        let mut v = vec![0u8; 4096];
        v.extend(std::iter::repeat_n(7u8, 4096));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        v.extend((0..4096).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        }));
        v.extend(b"text page ".iter().cycle().take(4096));
        v
    }

    #[test]
    fn flags_and_stored_lengths_follow_zrams_rules() {
        let f = PageFacts::of_pages(&pages(), 4096, &["lz4"]).unwrap();
        assert_eq!(f.flags, [SAME | ZERO, SAME, 0, 0]);
        assert!(f.is_zero(0) && !f.is_zero(1) && !f.is_zero(9));
        let raw = f.raw("lz4").unwrap();
        // The random page does not compress: its object reaches the huge class and zram
        // stores the page.
        assert!(raw[2] as usize > 3000, "{raw:?}");
        assert!(raw[3] < 100, "{raw:?}");
        let stored = f.stored("lz4").unwrap();
        assert_eq!(stored, [0, 0, 4096, u64::from(raw[3])]);
        assert!(f.check().is_ok());
        assert!(matches!(f.raw("zstd"), Err(LabError::Setup(m)) if m.contains("zstd")));
    }

    #[test]
    fn facts_that_do_not_add_up_are_refused() {
        let good = PageFacts::of_pages(&pages(), 4096, &["lzo-rle"]).unwrap();
        let mut f = good.clone();
        f.lengths[0].lengths.pop();
        assert!(f.check().unwrap_err().contains("3 lengths for lzo-rle, but 4 pages"));
        let mut f = good.clone();
        f.lengths[0].lengths[1] = 0;
        assert!(f.check().unwrap_err().contains("page 1's length"));
        let mut f = good.clone();
        f.lengths[0].lengths[1] = 100_000;
        assert!(f.check().is_err());
        let mut f = good.clone();
        f.flags[2] = 0x80;
        assert!(f.check().unwrap_err().contains("unknown flags"));
        let mut f = good.clone();
        f.flags[2] = ZERO;
        assert!(f.check().unwrap_err().contains("zero but not same-filled"));
        let mut f = good;
        f.page_size = 4000;
        assert!(f.check().unwrap_err().contains("page size"));
    }
}
