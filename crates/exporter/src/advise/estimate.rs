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

/// The size classes of zswap's zsmalloc pool (zswap's chain size; 6.18 has zsmalloc only).
pub fn zswap_classes(page_size: usize) -> Option<ClassTable> {
    ClassTable::new(page_size, zmem_zswap::ZswapConfig::default().chain_size).ok()
}

/// The length zswap stores for a page its compressor made `len` bytes of (`None`: the
/// compressor failed): a page that does not compress below the page size is stored whole
/// (mm/zswap.c `zswap_compress()`: `comp_ret || !dlen || dlen >= PAGE_SIZE` stores `PAGE_SIZE`
/// bytes, where the memory cgroup allows writeback; otherwise it is rejected, left in RAM, and
/// costs no pool, which this estimate does not model).
pub fn zswap_stored_len(page_size: usize, len: Option<usize>) -> usize {
    match len {
        Some(l) if l > 0 && l < page_size => l,
        _ => page_size,
    }
}

/// zswap's estimate for `population` resident anonymous pages from a simple random sample of
/// them, `lens[i]` the stored length of sampled page `i` or 0 for a zero page. Zero pages never
/// reach zswap (since 6.12 the swap core keeps them in its zeromap: mm/page_io.c
/// `swap_writeout()` -> `is_folio_zero_filled()`), so they cost nothing; but unlike zram's
/// same-filled pages their number is not counted anywhere, so they are part of the sampled
/// stratum, each with cost 0 (the lab's [`zmem_lab::sample::from_lengths`] takes a length of 0
/// so). `None` for an empty sample of a population that has pages.
pub fn estimate_zswap(
    classes: &ClassTable,
    page_size: usize,
    population: u64,
    lens: &[u32],
) -> Option<PoolEstimate> {
    estimate(classes, page_size, Population { pages: population, same_filled: 0 }, lens)
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

    /// Without zero pages, zswap's estimate is the lab's arithmetic on zswap's classes, to the
    /// byte; zero pages in the sample cost nothing and widen the interval (their share is
    /// sampled, not counted); the bounds hold the estimate.
    #[test]
    fn the_zswap_estimate_is_the_labs_arithmetic_with_zero_pages_sampled() {
        let classes = zswap_classes(4096).unwrap();
        let mut rng = zmem_pages::prng::SplitMix64::new(5);
        let lens: Vec<u32> = (0..500).map(|_| 200 + rng.below(3897) as u32).collect();
        let pop = 40_000u64;
        let ours = estimate_zswap(&classes, 4096, pop, &lens).unwrap();
        let wide: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let lab = zmem_lab::sample::from_lengths(
            &classes,
            4096,
            Population { pages: pop, same_filled: 0 },
            &wide,
        );
        assert_eq!(ours.pool_bytes, lab.pool_bytes);
        assert_eq!(ours.compressed_bytes, lab.compressed_bytes);
        // A fifth of the sample zero pages: the pool shrinks by about a fifth, and the
        // interval is wider than the non-zero pages' alone would give.
        let mut with_zeros = lens[..400].to_vec();
        with_zeros.extend([0u32; 100]);
        let z = estimate_zswap(&classes, 4096, pop, &with_zeros).unwrap();
        let p = z.pool_bytes;
        assert!(p.low <= p.estimate && p.estimate <= p.high);
        let ratio = p.estimate / ours.pool_bytes.estimate;
        assert!((0.75..0.85).contains(&ratio), "{ratio}");
        let nz: Vec<usize> = lens[..400].iter().map(|&l| l as usize).collect();
        let cond = zmem_lab::sample::from_lengths(
            &classes,
            4096,
            Population { pages: pop, same_filled: pop / 5 },
            &nz,
        );
        assert!(p.high - p.low > cond.pool_bytes.high - cond.pool_bytes.low);
        // Incompressible pages are stored whole; a failed compression too.
        assert_eq!(zswap_stored_len(4096, Some(4096)), 4096);
        assert_eq!(zswap_stored_len(4096, Some(5000)), 4096);
        assert_eq!(zswap_stored_len(4096, None), 4096);
        assert_eq!(zswap_stored_len(4096, Some(1000)), 1000);
        // Every page sampled: no width; nothing sampled of something: no estimate.
        let all = estimate_zswap(&classes, 4096, 3, &[0, 100, 4096]).unwrap();
        assert_eq!(all.pool_bytes.low, all.pool_bytes.high);
        assert!(estimate_zswap(&classes, 4096, 3, &[]).is_none());
    }
}
