//! The allocators' memory-pressure shrinkers (6.18 mm/zsmalloc.c `zs_shrinker_count` /
//! `zs_shrinker_scan`): zsmalloc counts the pages compaction could free and compacts when
//! scanned; zbud and z3fold register none.

use zmem_pool::{PoolConfig, ZPool, ZsPool, create};

/// `zs_can_compact` summed over the classes, from the debugfs columns alone.
fn closed_form(pool: &dyn ZPool) -> u64 {
    pool.class_stats()
        .iter()
        .filter(|c| c.objs_allocated > c.objs_inuse)
        .map(|c| {
            (c.objs_allocated - c.objs_inuse) / c.objs_per_zspage as u64 * c.pages_per_zspage as u64
        })
        .sum()
}

#[test]
fn zsmalloc_counts_what_compaction_can_free_and_scanning_compacts() {
    // docs/REFERENCES.md [zsmalloc-accounting]: 1000 objects of 1000 B fill 250 one-page
    // zspages of 4; with every second one freed, 500 idle slots make 125 whole zspages.
    let pool = ZsPool::new(&PoolConfig::default()).unwrap();
    assert_eq!(pool.shrinker_count(), 0, "an empty pool has nothing to compact");
    let hs: Vec<_> = (0..1000).map(|_| pool.malloc(1000).unwrap()).collect();
    assert_eq!(pool.shrinker_count(), 0, "full zspages");
    for h in hs.iter().step_by(2) {
        pool.free(*h).unwrap();
    }
    assert_eq!(pool.shrinker_count(), 125);
    assert_eq!(pool.shrinker_count(), closed_form(&pool));
    assert_eq!((pool.total_pages(), pool.pages_compacted()), (250, 0));

    assert_eq!(pool.shrinker_scan(), Some(125));
    assert_eq!((pool.total_pages(), pool.pages_compacted()), (125, 125));
    assert_eq!(pool.shrinker_count(), 0);
    assert_eq!(pool.shrinker_scan(), None, "nothing freed: SHRINK_STOP");
    assert_eq!(pool.pages_compacted(), 125);
    pool.audit().unwrap();
}

#[test]
fn zsmalloc_count_sums_every_class_and_multi_page_zspages() {
    // Sizes across classes, some with zspages of several pages; free two in three of each.
    let pool = ZsPool::new(&PoolConfig::default()).unwrap();
    let sizes = [100usize, 700, 1000, 1500, 2500, 3000];
    let mut hs = Vec::new();
    for i in 0..3000 {
        hs.push(pool.malloc(sizes[i % sizes.len()]).unwrap());
    }
    for (i, h) in hs.iter().enumerate() {
        if !(i / sizes.len()).is_multiple_of(3) {
            pool.free(*h).unwrap();
        }
    }
    let want = closed_form(&pool);
    assert!(
        pool.class_stats()
            .iter()
            .any(|c| c.pages_per_zspage > 1 && c.objs_allocated > c.objs_inuse),
        "a multi-page class has idle slots"
    );
    assert!(want > 0);
    assert_eq!(pool.shrinker_count(), want);
    let before = pool.total_pages();
    let freed = pool.shrinker_scan().expect("compaction frees pages");
    assert!(freed > 0 && freed <= want, "{freed} of {want}");
    assert_eq!(pool.total_pages(), before - freed);
    assert_eq!(pool.pages_compacted(), freed);
    assert_eq!(pool.shrinker_count(), closed_form(&pool));
    pool.audit().unwrap();
}

#[test]
fn zbud_and_z3fold_have_no_shrinker() {
    for name in ["zbud", "z3fold"] {
        let pool = create(name, &PoolConfig::default()).unwrap();
        let hs: Vec<_> = (0..300).map(|i| pool.malloc(200 + (i % 7) * 300).unwrap()).collect();
        for h in hs.iter().step_by(2) {
            pool.free(*h).unwrap();
        }
        assert_eq!(pool.shrinker_count(), 0, "{name}");
        let pages = pool.total_pages();
        assert_eq!(pool.shrinker_scan(), None, "{name}");
        assert_eq!((pool.total_pages(), pool.pages_compacted()), (pages, 0), "{name}");
    }
}
