//! Machine-wide reclaim in the replay (`ReplayConfig::watermarks`, src/replay/sim/kswapd.rs):
//! the page allocator wakes kswapd at the low mark and reclaims directly under the min mark
//! (6.18 mm/page_alloc.c `__alloc_pages()`); kswapd reclaims, priority by priority, until free
//! pages are over the high mark (mm/vmscan.c `balance_pgdat()`, `kswapd_shrink_node()`). The
//! node's free pages are RAM less resident pages and the swap's pool.

mod common;

use common::{counts, pages, trace, zswap_pool};
use zmem_sim::NoProgress;
use zmem_sim::replay::{self, ReplayConfig, Simulator, SwapKind, Watermarks};

const RAM: u64 = 512;

fn cfg(w: Option<Watermarks>) -> ReplayConfig {
    ReplayConfig { ram_pages: RAM, swap: SwapKind::Zram, watermarks: w, ..ReplayConfig::default() }
}

const MARKS: Watermarks = Watermarks { min: 16, low: 48, high: 80 };

/// Free pages never fall under the low mark after an access: a fault takes a page while free
/// pages are over it, and the one that finds them at it wakes kswapd, which refills past the
/// high mark at once. The pool grows with every swap-out, so each wake reclaims at least the
/// gap between the marks.
#[test]
fn kswapd_keeps_free_pages_between_the_marks() {
    let (p, t) = (pages(800, 5), trace(800, 8000, 6));
    let mut sim = Simulator::new(&p, &cfg(Some(MARKS))).unwrap();
    let mut lowest = RAM;
    for &a in &t {
        sim.access(a).unwrap();
        let free = sim.free_pages();
        lowest = lowest.min(free);
        assert!(free >= MARKS.low, "free {free}");
    }
    // Free pages are RAM less resident pages less the pool (zram's, not charged to the memcg).
    let pool = RAM - sim.free_pages() - sim.memcg_pages();
    assert!(pool > 50, "pool {pool} pages");
    assert_eq!(lowest, MARKS.low, "the fast path takes pages down to the low mark");
    let r = replay::run(&p, &t, &cfg(Some(MARKS)), &NoProgress).unwrap();
    assert!(r.verified);
    assert!(
        r.kswapd_wakes > 10 && r.kswapd_reclaimed > 0,
        "{} {}",
        r.kswapd_wakes,
        r.kswapd_reclaimed
    );
    let gap = MARKS.high - MARKS.low;
    assert!(r.kswapd_reclaimed > gap * r.kswapd_wakes, "{} {}", r.kswapd_reclaimed, r.kswapd_wakes);
    // kswapd keeps up: no allocation reaches the min mark.
    assert_eq!(r.direct_reclaimed, 0);
    assert_eq!(r.swap_outs, r.kswapd_reclaimed - r.clean_dropped);
}

/// Without watermarks the memcg reclaims only when full: none of kswapd's counters, and fewer
/// swap-outs than kswapd's headroom of free pages makes; zram and zswap alike.
#[test]
fn the_memcg_model_has_no_kswapd_and_keeps_less_free() {
    let (p, t) = (pages(800, 7), trace(800, 8000, 8));
    let zswap = |w| ReplayConfig { swap: SwapKind::Zswap, zswap: zswap_pool(100), ..cfg(w) };
    for (name, memcg, node) in
        [("zram", cfg(None), cfg(Some(MARKS))), ("zswap", zswap(None), zswap(Some(MARKS)))]
    {
        let memcg = replay::run(&p, &t, &memcg, &NoProgress).unwrap();
        let node = replay::run(&p, &t, &node, &NoProgress).unwrap();
        assert!(memcg.verified && node.verified, "{name}");
        let none = (memcg.kswapd_wakes, memcg.kswapd_reclaimed, memcg.direct_reclaimed);
        assert_eq!(none, (0, 0, 0), "{name}");
        assert!(node.kswapd_reclaimed > 0, "{name}: {}", counts(&node));
        assert!(
            node.swap_outs > memcg.swap_outs,
            "{name}: {} vs {}",
            node.swap_outs,
            memcg.swap_outs
        );
        assert!(node.swap_ins > memcg.swap_ins, "{name}: {} vs {}", node.swap_ins, memcg.swap_ins);
    }
}

/// A high mark at RAM's size leaves kswapd nothing to reach, and the marks must ascend.
#[test]
fn marks_out_of_order_or_over_ram_are_refused() {
    let p = pages(300, 9);
    for w in [
        Watermarks { min: 9, low: 8, high: 40 },
        Watermarks { min: 8, low: 41, high: 40 },
        Watermarks { min: 8, low: 24, high: RAM },
    ] {
        let e = Simulator::new(&p, &cfg(Some(w))).expect_err("refused");
        assert!(e.to_string().contains("do not hold"), "{e}");
    }
}

/// Direct reclaim: kswapd runs at once after the fault that woke it, so an allocation meets
/// the min mark only where min is the low mark itself; then each wake first reclaims directly,
/// and every page reclaimed is counted once, by kswapd or directly.
#[test]
fn allocations_under_the_min_mark_reclaim_directly() {
    let (p, t) = (pages(800, 11), trace(800, 8000, 12));
    // low == min: at the wake the allocation is already at min and reclaims directly first.
    let w = Watermarks { min: 16, low: 16, high: 16 };
    let r = replay::run(&p, &t, &cfg(Some(w)), &NoProgress).unwrap();
    assert!(r.verified);
    assert!(r.direct_reclaimed > 0, "{r:?}");
    assert_eq!(r.swap_outs + r.clean_dropped, r.direct_reclaimed + r.kswapd_reclaimed);
}
