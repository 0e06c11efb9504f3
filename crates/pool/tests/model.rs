//! Model-based tests: random sequences of malloc / write / free / compact against a HashMap of
//! what every live object must contain. After every step each live object's bytes are intact,
//! freed handles are refused, and the allocator's own invariants hold (zsmalloc: `audit`;
//! zbud / z3fold: at most 2 / 3 objects per page, inside the page, not overlapping).

use proptest::prelude::*;
use zmem_pool::{
    ArenaKind, Handle, MapMethod, MapMode, PoolConfig, PoolError, Z3foldPool, ZPool, ZbudPool,
    ZsPool,
};

#[derive(Debug, Clone)]
enum Op {
    /// Allocate `frac` of the maximum size (squared: small sizes are common) and fill it.
    Malloc {
        frac: f64,
        seed: u8,
    },
    /// Free the `pick`-th live object (modulo the count).
    Free {
        pick: usize,
    },
    /// Rewrite a live object with new bytes.
    Write {
        pick: usize,
        seed: u8,
    },
    /// Read a live object through the mapping API (zsmalloc) or `read`.
    Map {
        pick: usize,
    },
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0.0f64..1.0, any::<u8>()).prop_map(|(frac, seed)| Op::Malloc { frac, seed }),
        4 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(pick, seed)| Op::Write { pick, seed }),
        1 => any::<usize>().prop_map(|pick| Op::Map { pick }),
        1 => Just(Op::Compact),
    ]
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect()
}

/// Which pool is under test, with the checks only it offers.
#[allow(clippy::large_enum_variant)] // one per test case
enum Under {
    Zs(ZsPool, Option<MapMethod>),
    Zbud(ZbudPool),
    Z3fold(Z3foldPool),
}

impl Under {
    fn pool(&self) -> &dyn ZPool {
        match self {
            Under::Zs(p, _) => p,
            Under::Zbud(p) => p,
            Under::Z3fold(p) => p,
        }
    }

    fn check_structure(&self) -> Result<(), TestCaseError> {
        let (layout, most, page) = match self {
            Under::Zs(p, _) => {
                p.audit().map_err(TestCaseError::fail)?;
                return Ok(());
            }
            Under::Zbud(p) => (p.page_layout(), 2, p.page_size()),
            Under::Z3fold(p) => (p.page_layout(), 3, p.page_size()),
        };
        let pages = self.pool().total_pages() as usize;
        prop_assert!(
            layout.len() <= pages,
            "{} pages with objects, {} counted",
            layout.len(),
            pages
        );
        for mut objs in layout {
            prop_assert!(objs.len() <= most, "{} objects in one page", objs.len());
            objs.sort_unstable();
            for w in objs.windows(2) {
                prop_assert!(w[0].0 + w[0].1 <= w[1].0, "overlap {:?}", w);
            }
            for &(off, len) in &objs {
                prop_assert!(off + len <= page, "object {off}+{len} past the page");
            }
        }
        Ok(())
    }

    fn read_back(&self, h: Handle, len: usize) -> Result<Vec<u8>, PoolError> {
        if let Under::Zs(p, Some(m)) = self {
            return p.map_object(h, *m, MapMode::ReadOnly, |b| b.to_vec());
        }
        let mut out = vec![0; len];
        self.pool().read(h, &mut out)?;
        Ok(out)
    }
}

/// The object as `read_with` hands it to its closure (in place or through `scratch`).
fn read_with(pool: &dyn ZPool, h: Handle, len: usize) -> Result<Vec<u8>, TestCaseError> {
    let mut scratch = vec![0u8; len];
    let mut seen = None;
    pool.read_with(h, &mut scratch, &mut |b| seen = Some(b.to_vec()))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    seen.ok_or_else(|| TestCaseError::fail("read_with never called its closure"))
}

fn run(under: Under, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let pool = under.pool();
    let max = pool.max_alloc_size();
    let mut live: Vec<(Handle, Vec<u8>)> = Vec::new();
    let mut freed: Vec<Handle> = Vec::new();
    for op in ops {
        match op {
            Op::Malloc { frac, seed } => {
                let size = ((frac * frac * max as f64) as usize).clamp(1, max);
                let data = bytes(size, seed);
                let h = pool.store(&data).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(pool.object_size(h), Ok(size));
                live.push((h, data));
            }
            Op::Free { pick } if !live.is_empty() => {
                let (h, _) = live.swap_remove(pick % live.len());
                prop_assert_eq!(pool.free(h), Ok(()));
                freed.push(h);
            }
            Op::Write { pick, seed } if !live.is_empty() => {
                let i = pick % live.len();
                let data = bytes(live[i].1.len(), seed);
                prop_assert_eq!(pool.write(live[i].0, &data), Ok(()));
                live[i].1 = data;
            }
            Op::Map { pick } if !live.is_empty() => {
                let (h, data) = &live[pick % live.len()];
                prop_assert_eq!(&under.read_back(*h, data.len()).unwrap(), data);
                prop_assert_eq!(&read_with(pool, *h, data.len())?, data);
            }
            Op::Compact => {
                let before = pool.total_pages();
                let freed_pages = pool.compact();
                prop_assert_eq!(pool.total_pages(), before - freed_pages);
            }
            _ => {}
        }
        under.check_structure()?;
        prop_assert_eq!(pool.objects(), live.len());
        let stat_pages: u64 = pool.class_stats().iter().map(|c| c.pages).sum();
        prop_assert_eq!(stat_pages, pool.total_pages());
    }
    for (h, data) in &live {
        prop_assert_eq!(&under.read_back(*h, data.len()).unwrap(), data);
        prop_assert_eq!(&read_with(pool, *h, data.len())?, data);
    }
    for h in freed {
        prop_assert_eq!(pool.free(h), Err(PoolError::BadHandle(h.0)));
        prop_assert!(pool.read(h, &mut [0; 8]).is_err());
    }
    // Freeing everything gives every page back.
    for (h, _) in live {
        pool.free(h).unwrap();
    }
    prop_assert_eq!(pool.total_pages(), 0);
    under.check_structure()?;
    Ok(())
}

fn page_size() -> impl Strategy<Value = usize> {
    prop::sample::select(zmem_pool::PAGE_SIZES.to_vec())
}

fn cfg(page_size: usize) -> PoolConfig {
    PoolConfig { page_size, ..PoolConfig::default() }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn zsmalloc_keeps_every_object(
        ps in page_size(), chain in 4usize..=16, ops in prop::collection::vec(op(), 1..300),
    ) {
        let pool = ZsPool::new(&PoolConfig { chain_size: chain, ..cfg(ps) }).unwrap();
        run(Under::Zs(pool, Some(MapMethod::Copy)), ops)?;
    }

    /// A few sizes only, so zspages fill up, empty out and get compacted often.
    #[test]
    fn zsmalloc_compaction_keeps_every_object(
        ops in prop::collection::vec(op(), 1..600),
    ) {
        // Squared fractions of 4096 that land on 1000 B, 1632 B and 2900 B.
        let fracs = [(1000.0f64 / 4096.0).sqrt(), (1632.0f64 / 4096.0).sqrt(), (2900.0f64 / 4096.0).sqrt()];
        let ops = ops.into_iter().map(|o| match o {
            Op::Malloc { frac, seed } => Op::Malloc { frac: fracs[(frac * 3.0) as usize], seed },
            o => o,
        }).collect();
        run(Under::Zs(ZsPool::new(&PoolConfig::default()).unwrap(), None), ops)?;
    }

    #[test]
    fn zbud_keeps_every_object(ps in page_size(), ops in prop::collection::vec(op(), 1..300)) {
        run(Under::Zbud(ZbudPool::new(&cfg(ps)).unwrap()), ops)?;
    }

    #[test]
    fn z3fold_keeps_every_object(ps in page_size(), ops in prop::collection::vec(op(), 1..300)) {
        run(Under::Z3fold(Z3foldPool::new(&cfg(ps)).unwrap()), ops)?;
    }
}

#[cfg(not(miri))]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// The mapped window reads what the copy path reads, on the memfd arena.
    #[test]
    fn zsmalloc_window_method_keeps_every_object(
        ps in page_size(), ops in prop::collection::vec(op(), 1..200),
    ) {
        let pool = ZsPool::new(&PoolConfig { arena: ArenaKind::Memfd, ..cfg(ps) }).unwrap();
        run(Under::Zs(pool, Some(MapMethod::Window)), ops)?;
    }
}

#[test]
fn bad_requests_are_errors_not_panics() {
    for name in ["zsmalloc", "zbud", "z3fold"] {
        let p = zmem_pool::create(name, &PoolConfig::default()).unwrap();
        assert_eq!(p.malloc(0), Err(PoolError::ZeroSize));
        assert!(matches!(p.malloc(p.max_alloc_size() + 1), Err(PoolError::TooLarge { .. })));
        assert!(matches!(p.free(Handle(0)), Err(PoolError::BadHandle(0))));
        assert!(p.free(Handle(u64::MAX)).is_err());
        let h = p.malloc(100).unwrap();
        assert!(matches!(p.write(h, &[0; 101]), Err(PoolError::BadLength { .. })));
        assert!(matches!(p.read(h, &mut [0; 99]), Err(PoolError::BadLength { .. })));
        assert_eq!(p.read(h, &mut [0; 200]), Ok(100));
    }
}

#[test]
fn the_page_limit_is_an_error_and_leaves_the_pool_usable() {
    for name in ["zsmalloc", "zbud", "z3fold"] {
        let p =
            zmem_pool::create(name, &PoolConfig { max_pages: Some(16), ..PoolConfig::default() })
                .unwrap();
        let mut hs = Vec::new();
        let err = loop {
            match p.malloc(3000) {
                Ok(h) => hs.push(h),
                Err(e) => break e,
            }
        };
        assert!(matches!(err, PoolError::NoMemory { limit: 16 }), "{name}: {err}");
        assert!(p.total_pages() <= 16);
        p.free(hs.pop().unwrap()).unwrap();
        assert!(p.malloc(3000).is_ok(), "{name}");
    }
}

#[test]
fn a_shared_pool_serves_many_threads() {
    let pool: std::sync::Arc<dyn ZPool> =
        zmem_pool::create("zsmalloc", &PoolConfig::default()).unwrap();
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..300usize {
                    let data = bytes(1 + (i * 37 + usize::from(t) * 101) % 3000, t);
                    mine.push((pool.store(&data).unwrap(), data));
                    if i % 3 == 0 {
                        let (h, _) = mine.swap_remove(i % mine.len());
                        pool.free(h).unwrap();
                    }
                }
                for (h, data) in &mine {
                    let mut out = vec![0; data.len()];
                    pool.read(*h, &mut out).unwrap();
                    assert_eq!(&out, data);
                }
                mine.len()
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(pool.objects(), total);
}

/// Reads `h` through `read_with` with no scratch space at all: `Some(true)` if it was handed out
/// in place (and equals `data`), `Some(false)` if it needed a copy (and failed for want of
/// scratch, as only a copy can), after checking a copy with room reads it right.
fn in_place(pool: &ZsPool, h: Handle, data: &[u8]) -> bool {
    let mut seen = None;
    match pool.read_with(h, &mut [], &mut |b| seen = Some(b.to_vec())) {
        Ok(()) => {
            assert_eq!(seen.as_deref(), Some(data));
            true
        }
        Err(e) => {
            assert!(pool.is_straddling(h).unwrap(), "an object inside one page was copied: {e}");
            assert_eq!(e, PoolError::BadLength { len: 0, size: data.len() });
            assert!(seen.is_none());
            let mut scratch = vec![0; data.len()];
            pool.read_with(h, &mut scratch, &mut |b| seen = Some(b.to_vec())).unwrap();
            assert_eq!(seen.as_deref(), Some(data));
            false
        }
    }
}

/// zsmalloc hands `read_with`'s closure an object in place when its bytes are contiguous in the
/// arena: inside one page, or across pages that sit side by side, as a fresh zspage's do. Frames
/// reused from the arena's free list come back in reverse order, so the zspages built from them
/// are not contiguous and their straddling objects are copied.
#[test]
fn zsmalloc_reads_contiguous_objects_in_place() {
    let pool = ZsPool::new(&cfg(4096)).unwrap();
    let objects = |round: u8| -> Vec<(Handle, Vec<u8>)> {
        (0..150usize)
            .map(|k| {
                // Five size classes, whose objects often cross a page boundary.
                let data = bytes([1100, 1500, 1700, 2500, 3000][k % 5] - k % 7, k as u8 ^ round);
                (pool.store(&data).unwrap(), data)
            })
            .collect()
    };
    // Fresh frames, all in the arena's first 2 MiB chunk: every object in place, many of them
    // across a page boundary.
    let fresh = objects(0);
    assert!(pool.total_pages() <= 512, "{} pages: more than one chunk", pool.total_pages());
    let straddling = fresh.iter().filter(|(h, _)| pool.is_straddling(*h).unwrap()).count();
    assert!(fresh.iter().all(|(h, d)| in_place(&pool, *h, d)));
    assert!(straddling > 30, "only {straddling} objects cross a page boundary");
    for (h, _) in fresh {
        pool.free(h).unwrap();
    }
    // Reused frames: the straddling objects need a copy.
    let reused = objects(1);
    let copied = reused.iter().filter(|(h, d)| !in_place(&pool, *h, d)).count();
    assert!(copied > 30, "only {copied} objects needed a copy");
}
