//! Seed 004's `zram-perf` synthetic pattern (docs/REFERENCES.md [seed-004]):
//! `uint32_t val = rand() & 0xffff; pattern[i] = val + i;`
//!
//! Each page is 32-bit little-endian words counting up from a random 16-bit start: page `p` draws
//! its own `val` (the seed's `rand()` is SplitMix64 here) and word `i` of the page is
//! `val + i` (wrapping). The pages are alike but not identical, so a compressor sees no same-filled
//! pages yet a lot of regularity; seed 004 used it as its synthetic data source and found that
//! results on it do not predict real memory, which is why [`super::mixed`] exists.

use crate::pageset::PageSetBuilder;
use crate::prng::SplitMix64;
use crate::{PageSet, PagesError};

/// `pages` pages of the zram-perf pattern.
pub fn generate(pages: usize, page_size: usize, seed: u64) -> Result<PageSet, PagesError> {
    let mut rng = SplitMix64::new(seed);
    let mut b = PageSetBuilder::new(page_size, false)?;
    b.reserve(pages);
    for _ in 0..pages {
        let val = rng.next_u32() & 0xffff;
        b.push_with(|page| {
            for (i, w) in page.chunks_exact_mut(4).enumerate() {
                w.copy_from_slice(&val.wrapping_add(i as u32).to_le_bytes());
            }
        });
    }
    Ok(b.finish())
}
