//! The lab's estimator ([`zmem_lab::sample::estimate`]) on stored lengths instead of pages: the
//! advisor compresses each sampled page once, as it is read, and keeps only the length zram
//! would store for each candidate, so a 10,000-page sample costs kilobytes, not 40 MB, and a
//! re-judgement compresses nothing. The arithmetic is the lab's own function
//! (`zmem_lab::sample::from_lengths`; the test below checks the two give the same numbers on the
//! same pages), so the advisor's interval and the lab's are comparable:
//!
//! - same-filled pages are one stratum known exactly (mm_stat `same_pages`), costing no pool;
//! - the other `N_o` pages are sampled: class `k`'s count is `N_o m_k / n_o`, the pool zsmalloc's
//!   closed form `sum_k ceil(N_k / objs_per_zspage_k) x pages_per_zspage_k x page_size`;
//! - the interval is +- 1.96 standard errors of the per-page cost under simple random sampling,
//!   with the finite-population correction.

use zmem_lab::sample::Interval;
use zmem_pool::zsmalloc::class::ClassTable;

/// The stratified design: what the sample stands for (the lab's).
pub use zmem_lab::sample::Population;

/// One candidate's estimate for every page the device stores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolEstimate {
    pub pool_bytes: Interval,
    pub compressed_bytes: Interval,
}

/// The size classes of zram's zsmalloc (the lab's chain size).
pub fn classes(page_size: usize) -> Option<ClassTable> {
    ClassTable::new(page_size, zmem_zram::ZramConfig::default().chain_size).ok()
}

/// The length zram stores for a page compressing to `len` bytes: a page compressing to
/// `huge_class_size` or more is stored whole (drivers/block/zram/zram_drv.c
/// `zram_write_page()`).
pub fn stored_len(classes: &ClassTable, page_size: usize, len: usize) -> usize {
    if len >= classes.huge_class_size() { page_size } else { len }
}

/// The estimate from the stored lengths of the `n_o` sampled pages that are not same-filled:
/// the lab's arithmetic itself ([`zmem_lab::sample::from_lengths`]). `None` when the population
/// has pages to estimate and the sample none.
pub fn estimate(
    classes: &ClassTable,
    page_size: usize,
    population: Population,
    lens: &[u32],
) -> Option<PoolEstimate> {
    if population.pages > population.same_filled && lens.is_empty() {
        return None;
    }
    let lens: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
    let f = zmem_lab::sample::from_lengths(classes, page_size, population, &lens);
    Some(PoolEstimate { pool_bytes: f.pool_bytes, compressed_bytes: f.compressed_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_lab::sample::draw;

    /// On the same sampled pages, the lab's estimator and this one give the same pool and
    /// compressed bytes, and the same intervals: the advisor's numbers are the lab's.
    #[test]
    fn the_same_numbers_as_the_labs_estimator() {
        // Typical anonymous memory: same-filled, incompressible and compressible pages.
        let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 3000, 4096, 3)
            .unwrap();
        let (pages, design) = draw(&set, 400, 1);
        let classes = classes(4096).unwrap();
        for algo in ["lzo-rle", "lz4", "zstd"] {
            let lab = zmem_lab::sample::estimate(&pages, 4096, design, &[algo]).unwrap();
            let lab = &lab.rows[0];
            let mut c = zmem_comp::create(algo, &zmem_comp::Params::default(), 4096).unwrap();
            let mut buf = vec![0u8; zmem_comp::compress_bound(4096)];
            let lens: Vec<u32> = pages
                .chunks_exact(4096)
                .filter(|p| zmem_zram::same_filled(p).is_none())
                .map(|p| stored_len(&classes, 4096, c.compress(p, &mut buf).unwrap()) as u32)
                .collect();
            let pop = Population {
                pages: design.population_pages,
                same_filled: design.population_same_filled,
            };
            let ours = estimate(&classes, 4096, pop, &lens).unwrap();
            assert_eq!(ours.pool_bytes, lab.pool_bytes, "{algo}");
            assert_eq!(ours.compressed_bytes, lab.compressed_bytes, "{algo}");
            assert!(ours.pool_bytes.low < ours.pool_bytes.high, "{algo}: a sample has width");
        }
    }

    /// A sample of every page has no width; an empty sample of a population that has pages to
    /// estimate gives nothing; a device of same-filled pages only needs no pool.
    #[test]
    fn edges() {
        let classes = classes(4096).unwrap();
        let pop = Population { pages: 3, same_filled: 0 };
        let e = estimate(&classes, 4096, pop, &[100, 2000, 4096]).unwrap();
        assert_eq!(e.pool_bytes.low, e.pool_bytes.high);
        assert_eq!(e.compressed_bytes.estimate, 6196.0);
        assert!(estimate(&classes, 4096, pop, &[]).is_none());
        let e = estimate(&classes, 4096, Population { pages: 5, same_filled: 5 }, &[]).unwrap();
        assert_eq!(e.pool_bytes.estimate, 0.0);
    }
}
