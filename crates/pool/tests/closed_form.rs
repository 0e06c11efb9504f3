//! zsmalloc's page count for allocation-only streams against the closed-form model of
//! docs/REFERENCES.md [zsmalloc-accounting], written here independently of the pool's own class
//! table.
//!
//! The model: add the 8-byte handle; raw index 0 if the size is at most 32, else
//! ceil((size - 32) / delta), clamped to the last index; a run of neighbouring indices with equal
//! (pages per zspage, objects per zspage) is one class, named by its largest index; a class with
//! n objects costs ceil(n / objs) * pages. pages per zspage = the chain length with the least
//! waste, first minimum, 1 for powers of two.

use std::collections::HashMap;

use proptest::prelude::*;
use zmem_pool::{PoolConfig, ZPool, ZsPool};

struct Model {
    page: usize,
    delta: usize,
    last: usize,
    chain: usize,
}

impl Model {
    fn new(page: usize, chain: usize) -> Self {
        let delta = page >> 8;
        Self { page, delta, last: (page - 32).div_ceil(delta), chain }
    }

    fn slot(&self, i: usize) -> usize {
        (32 + i * self.delta).min(self.page)
    }

    /// (pages per zspage, objects per zspage) of raw index `i`.
    fn shape(&self, i: usize) -> (usize, usize) {
        let size = self.slot(i);
        let pages = if size & (size - 1) == 0 {
            1
        } else {
            let waste = |k: usize| (k * self.page) % size;
            (1..=self.chain).fold(1, |best, k| if waste(k) < waste(best) { k } else { best })
        };
        (pages, pages * self.page / size)
    }

    /// The class (its largest raw index) a request of `req` bytes lands in.
    fn class_of(&self, req: usize) -> usize {
        let s = req + 8;
        let mut i = if s <= 32 { 0 } else { (s - 32).div_ceil(self.delta) }.min(self.last);
        let shape = self.shape(i);
        while i < self.last && self.shape(i + 1) == shape {
            i += 1;
        }
        i
    }

    fn pages(&self, requests: &[usize]) -> u64 {
        let mut per_class: HashMap<usize, u64> = HashMap::new();
        for &r in requests {
            *per_class.entry(self.class_of(r)).or_default() += 1;
        }
        per_class
            .iter()
            .map(|(&c, &n)| {
                let (pages, objs) = self.shape(c);
                n.div_ceil(objs as u64) * pages as u64
            })
            .sum()
    }

    /// Largest request that stays out of the one-object-per-page classes.
    fn huge_class_size(&self) -> usize {
        (0..=self.last)
            .rev()
            .find(|&i| {
                let (p, o) = self.shape(i);
                p != 1 && o != 1
            })
            .map(|i| self.slot(i) - 7)
            .unwrap()
    }
}

#[test]
fn huge_class_size_for_4k_chain_8_is_3625() {
    let pool = ZsPool::new(&PoolConfig::default()).unwrap();
    assert_eq!(pool.huge_class_size(), 3625);
    assert_eq!(Model::new(4096, 8).huge_class_size(), 3625);
    // 3624 B is kept in the 8-page class; 3625 B takes a page of its own.
    let a = pool.malloc(3624).unwrap();
    assert_eq!(pool.total_pages(), 8);
    pool.free(a).unwrap();
    pool.malloc(3625).unwrap();
    assert_eq!(pool.total_pages(), 1);
}

#[test]
fn huge_class_size_matches_the_model_everywhere() {
    for page in zmem_pool::PAGE_SIZES {
        for chain in 4..=16 {
            let cfg = PoolConfig { page_size: page, chain_size: chain, ..PoolConfig::default() };
            let pool = ZsPool::new(&cfg).unwrap();
            assert_eq!(pool.huge_class_size(), Model::new(page, chain).huge_class_size());
        }
    }
}

#[test]
fn the_measured_live_kernel_workloads() {
    // docs/REFERENCES.md [live-zsmalloc], measured on Linux 6.18.44 through zram (4 KiB, chain 8).
    let cases: &[(&[(usize, usize)], u64)] = &[
        (&[(982, 1)], 8),
        (&[(982, 33)], 8),
        (&[(982, 34)], 16),
        (&[(1000, 40)], 10),
        (&[(1000, 41)], 11),
        (&[(1000, 2), (1002, 2)], 1),
        (&[(3524, 9)], 14),
        (&[(3624, 10)], 16),
        (&[(4096, 3)], 3),
        (&[(150, 1)], 5),
        (&[(573, 1)], 8),
        (&[(1101, 1)], 8),
        (&[(2149, 1)], 8),
        (&[(3198, 1)], 4),
    ];
    for (reqs, pages) in cases {
        let pool = ZsPool::new(&PoolConfig::default()).unwrap();
        for &(size, n) in reqs.iter() {
            for _ in 0..n {
                pool.malloc(size).unwrap();
            }
        }
        assert_eq!(pool.total_pages(), *pages, "{reqs:?}");
    }
}

fn config() -> impl Strategy<Value = (usize, usize)> {
    (prop::sample::select(zmem_pool::PAGE_SIZES.to_vec()), 4usize..=16)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn allocation_only_streams_cost_the_closed_form_pages(
        (page, chain) in config(),
        fracs in prop::collection::vec((0.0f64..1.0, 1u32..40), 1..40),
    ) {
        let cfg = PoolConfig { page_size: page, chain_size: chain, ..PoolConfig::default() };
        let pool = ZsPool::new(&cfg).unwrap();
        let model = Model::new(page, chain);
        let mut reqs = Vec::new();
        for (frac, count) in fracs {
            // Sizes spread over the whole range, a run of equal ones at a time.
            let size = ((frac * frac * page as f64) as usize).clamp(1, page);
            for _ in 0..count {
                pool.malloc(size).unwrap();
                reqs.push(size);
            }
            prop_assert_eq!(pool.total_pages(), model.pages(&reqs));
        }
        let stats_pages: u64 = pool.class_stats().iter().map(|c| c.pages).sum();
        prop_assert_eq!(stats_pages, pool.total_pages());
    }
}
