//! Stores that take their objects from an `ObjectSource` against stores that compress: random
//! swap-out / swap-in / invalidate / writeback sequences run on two caches side by side, one
//! compressing each page on its pool's stream, the other given the object a separate stream of
//! the same algorithm made of the page beforehand (as the lab's compressor table makes them:
//! its own stream, a `compress_bound` destination). Every step must come out the same: the
//! outcome, the counters, the pool's pages, the entries, the pages loaded back and the swap
//! file's traffic.

mod common;

use std::cell::Cell;

use common::*;
use proptest::prelude::*;
use zmem_comp::Params;
use zmem_zswap::{
    Incompressible, ObjectSource, StoreOutcome, SwapLayer, Zswap, ZswapConfig, ZswapStats,
};

const SLOTS: u64 = 24;

/// Every compressor 6.18 offers zswap (its crypto API's compressors).
const COMPRESSORS: [&str; 7] = ["lzo", "lzo-rle", "lz4", "lz4hc", "zstd", "deflate", "842"];

/// The object of one page at one offset, for one algorithm at its default parameters; counts
/// how often the store asked.
struct One<'a> {
    offset: u64,
    algo: &'a str,
    object: &'a [u8],
    asked: Cell<u32>,
}

impl ObjectSource for One<'_> {
    fn object(&self, index: u64, algo: &str, params: &Params) -> Option<&[u8]> {
        if index != self.offset || algo != self.algo || *params != Params::default() {
            return None;
        }
        self.asked.set(self.asked.get() + 1);
        Some(self.object)
    }
}

/// What `algo`'s own stream (the table's: a fresh one, a `compress_bound` destination) makes of
/// `page`.
fn object_of(algo: &str, page: &[u8]) -> Vec<u8> {
    let mut c = zmem_comp::create(algo, &Params::default(), PS).unwrap();
    let mut out = vec![0u8; zmem_comp::compress_bound(PS)];
    let n = c.compress(page, &mut out).unwrap();
    out.truncate(n);
    out
}

#[derive(Debug, Clone)]
enum Op {
    Store { offset: u64, kind: u8, seed: u64 },
    Load { offset: u64 },
    Invalidate { offset: u64 },
    WritebackOne,
    ShrinkerScan(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..SLOTS, 0u8..3, any::<u64>())
            .prop_map(|(offset, kind, seed)| Op::Store { offset, kind, seed }),
        3 => (0..SLOTS).prop_map(|offset| Op::Load { offset }),
        1 => (0..SLOTS).prop_map(|offset| Op::Invalidate { offset }),
        1 => Just(Op::WritebackOne),
        1 => (0u64..6).prop_map(Op::ShrinkerScan),
    ]
}

fn cfg(algo: &str, zpool: &str, incompressible: Incompressible, writeback: bool) -> ZswapConfig {
    // A pool of a few pages: the limit, the hysteresis and the shrink worker take part.
    let mut cfg = ZswapConfig { writeback, incompressible, ..config(zpool, 40, 20, 50) };
    cfg.module.compressor = algo.into();
    cfg.module.shrinker_enabled = true;
    cfg
}

/// Everything observable of a cache.
fn state(z: &Zswap) -> (ZswapStats, u64, usize, u64, u64, u64) {
    let f = z.swap_file();
    (z.stats(), z.total_pages(), z.nr_entries(), z.max_pool_pages(), f.reads(), f.writes())
}

/// Runs `ops` on both caches; `label` makes the given objects another algorithm's (so the two
/// must differ) when it is not `algo`.
fn run(algo: &str, label: &str, zcfg: &ZswapConfig, ops: &[Op]) -> Result<u32, TestCaseError> {
    let (made, given) = (build(zcfg, SLOTS), build(zcfg, SLOTS));
    let (mut a, mut b) = (vec![0u8; PS], vec![0u8; PS]);
    let mut asked = 0;
    for (step, o) in ops.iter().enumerate() {
        match *o {
            Op::Store { offset, kind, seed } => {
                let p = page(kind, seed);
                let object = object_of(label, &p);
                let one = One { offset, algo, object: &object, asked: Cell::new(0) };
                let x = made.store_folio(offset, &p).unwrap();
                let y = given.store_folio_with(offset, &p, Some(&one)).unwrap();
                prop_assert_eq!(x, y, "step {} {:?}", step, o);
                asked += one.asked.get();
                made.run_pending_work();
                given.run_pending_work();
            }
            Op::Load { offset } => {
                let x = made.load(offset, &mut a).unwrap();
                let y = given.load(offset, &mut b).unwrap();
                prop_assert_eq!(x, y, "step {}", step);
                prop_assert!(a == b, "step {}: page {} loaded differently", step, offset);
            }
            Op::Invalidate { offset } => {
                prop_assert_eq!(made.invalidate(offset), given.invalidate(offset));
            }
            Op::WritebackOne => prop_assert_eq!(made.writeback_one(), given.writeback_one()),
            Op::ShrinkerScan(n) => {
                prop_assert_eq!(made.shrinker_count(), given.shrinker_count());
                prop_assert_eq!(made.shrinker_scan(n), given.shrinker_scan(n));
            }
        }
        prop_assert_eq!(state(&made), state(&given), "step {} {:?}", step, o);
    }
    for offset in 0..SLOTS {
        let x = made.load(offset, &mut a).unwrap();
        let y = given.load(offset, &mut b).unwrap();
        prop_assert_eq!(x, y);
        prop_assert!(a == b, "page {} loaded differently", offset);
    }
    Ok(asked)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_store_taking_objects_is_a_store_that_compresses(
        algo in proptest::sample::select(COMPRESSORS.to_vec()),
        zpool in proptest::sample::select(vec!["zsmalloc", "zbud", "z3fold"]),
        reject in any::<bool>(),
        writeback in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let inc = if reject { Incompressible::Reject } else { Incompressible::StoreAsIs };
        let asked = run(algo, algo, &cfg(algo, zpool, inc, writeback), &ops)?;
        // The objects were taken wherever a page was compressed.
        let stores = ops.iter().filter(|o| matches!(o, Op::Store { .. })).count();
        prop_assert!(asked as usize <= stores);
    }
}

/// Objects are asked for exactly where the cache compresses, and taken: a source handing
/// another algorithm's bytes under this one's name changes what is stored (so the comparison
/// above sees what a store takes).
#[test]
fn the_objects_are_what_the_cache_stores() {
    let ops: Vec<Op> = (0..8)
        .map(|i| Op::Store { offset: i, kind: (i % 2) as u8, seed: i })
        .chain((0..8).map(|offset| Op::Load { offset }))
        .collect();
    let zcfg = cfg("lzo", "zsmalloc", Incompressible::StoreAsIs, true);
    let zcfg = ZswapConfig { total_ram_pages: 1 << 20, ..zcfg };
    assert_eq!(run("lzo", "lzo", &zcfg, &ops).unwrap(), 8);
    assert!(run("lzo", "deflate", &zcfg, &ops).is_err(), "deflate's bytes stored as lzo's");
}

/// A source without the pool's compressor (or with other parameters) is not used: the cache
/// compresses.
#[test]
fn a_source_for_another_compressor_is_not_asked_twice_nor_used() {
    let z = build(&cfg("lz4", "zsmalloc", Incompressible::StoreAsIs, true), SLOTS);
    let p = half_page(7);
    let wrong = object_of("lzo", &p);
    let one = One { offset: 3, algo: "lzo", object: &wrong, asked: Cell::new(0) };
    let out = z.store_folio_with(3, &p, Some(&one)).unwrap();
    assert_eq!(one.asked.get(), 0);
    assert_eq!(out, StoreOutcome::Stored { length: object_of("lz4", &p).len() });
    let mut back = vec![0u8; PS];
    assert!(z.load(3, &mut back).unwrap());
    assert_eq!(back, p);
}

/// Through the swap layer: a zero page never asks (the zeromap takes it), a page zswap keeps
/// does, and what comes back is the page.
#[test]
fn the_swap_layer_passes_the_source_to_zswap() {
    let layer = SwapLayer::with_zswap(build(
        &ZswapConfig {
            total_ram_pages: 1 << 20,
            ..cfg("lzo-rle", "zsmalloc", Incompressible::StoreAsIs, true)
        },
        SLOTS,
    ));
    let zero = vec![0u8; PS];
    let none: &[u8] = &[];
    let one = One { offset: 1, algo: "lzo-rle", object: none, asked: Cell::new(0) };
    layer.swap_out_with(1, &zero, Some(&one), &mut ()).unwrap();
    assert_eq!(one.asked.get(), 0);
    let p = small(5);
    let object = object_of("lzo-rle", &p);
    let one = One { offset: 2, algo: "lzo-rle", object: &object, asked: Cell::new(0) };
    layer.swap_out_with(2, &p, Some(&one), &mut ()).unwrap();
    assert_eq!(one.asked.get(), 1);
    let mut back = vec![0u8; PS];
    layer.swap_in(2, &mut back, &mut ()).unwrap();
    assert_eq!(back, p);
}
