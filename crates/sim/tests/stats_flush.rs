//! Reclaim reads the memcg's statistics as of their last flush (`ReplayConfig::stats_flush`,
//! 6.18 mm/memcontrol.c `lruvec_page_state()`): between flushes it decides whether to
//! deactivate active pages from old list sizes. Measured on this machine's kernel
//! (docs/BENCHMARKS.md, "Statistics reclaim reads"): a new memcg left to the kernel's own
//! flushes OOM-killed a player in all five runs where one flushed every 2 ms ran, with its
//! inactive list empty and every page active at the kill.

#[allow(dead_code)] // Not every test file uses every helper.
mod common;

use common::{pages, zswap_pool};
use zmem_pages::trace::generate;
use zmem_sim::NoProgress;
use zmem_sim::replay::{self, Access, ReplayConfig, StatsFlush, SwapKind};

const RAM: u64 = 256;
const N: u64 = 1024;

/// `zmem trace gen`'s Zipf trace over `N` pages: a working set of a quarter of them per
/// phase, 10 us between accesses, no idle time, as the measured runs' traces.
fn zipf(accesses: u64, seed: u64) -> Vec<Access> {
    let o = generate::Options {
        pages: N,
        accesses,
        working_set: N / 4,
        idle_ns: 0,
        seed,
        ..generate::Options::default()
    };
    replay::accesses(&generate::generate(&o).unwrap())
}

fn cfg(flush: StatsFlush) -> ReplayConfig {
    ReplayConfig {
        ram_pages: RAM,
        swap: SwapKind::Zram,
        stats_flush: flush,
        ..ReplayConfig::default()
    }
}

fn swap_outs(t: &[Access], flush: StatsFlush) -> u64 {
    let r = replay::run(&pages(N as usize, 1), t, &cfg(flush), &NoProgress).unwrap();
    assert!(r.verified);
    r.swap_outs
}

/// A new memcg's statistics read empty until the first flush: no list looks low and no
/// refault activation is seen, so nothing is deactivated and new pages are evicted before
/// they are referenced twice. Over a run shorter than the flusher's first pass that is the
/// whole run: it swaps far more than with current statistics, as the kernel did (12,350-12,457
/// swap-outs left to its own flushes, 6,944-7,036 flushed every 2 ms, docs/BENCHMARKS.md).
#[test]
fn a_new_memcg_deactivates_nothing_before_the_first_flush() {
    let t = zipf(60_000, 2);
    let (stale, fresh) =
        (swap_outs(&t, StatsFlush::KERNEL_NEW_MEMCG), swap_outs(&t, StatsFlush::Always));
    assert!(t.last().unwrap().time_ns < 1_000_000_000, "the run ends before the first flush");
    assert!(stale > fresh * 3 / 2, "{stale} vs {fresh}");
}

/// Flushes keep reclaim deactivating: the same run with the flusher every 20 ms (2,000
/// accesses) swaps a small part of what the never-flushed run does.
#[test]
fn periodic_flushes_bring_reclaim_back_to_the_lists() {
    let t = zipf(60_000, 2);
    let every = |interval_ns, first| StatsFlush::Periodic { interval_ns, first_ns: first };
    let never = swap_outs(&t, every(u64::MAX / 4, Some(u64::MAX / 4)));
    let often = swap_outs(&t, every(20_000_000, Some(0)));
    assert!(often * 4 < never, "{often} vs {never}");
}

/// A workload that ran before the trace (`StatsFlush::KERNEL`, the lab's) warms up with
/// current statistics: a run that ends before the flusher's first pass after RAM filled is
/// the fresh run exactly. Over a longer run its statistics go stale between flushes, and it
/// no longer is.
#[test]
fn a_running_workload_warms_up_with_current_statistics() {
    let p = pages(N as usize, 1);
    let run =
        |t: &[Access], f| replay::run(&p, t, &cfg(f), &NoProgress).map(|r| common::counts(&r));
    let short = zipf(60_000, 2);
    assert_eq!(run(&short, StatsFlush::KERNEL).unwrap(), run(&short, StatsFlush::Always).unwrap());
    // Six seconds: stale between flushes, it swaps otherwise, or runs dry (the OOM killer).
    let long = zipf(600_000, 3);
    let fresh = run(&long, StatsFlush::Always).unwrap();
    match run(&long, StatsFlush::KERNEL) {
        Ok(stale) => assert_ne!(stale, fresh),
        Err(e) => assert!(matches!(e, zmem_sim::SimError::OutOfMemory { .. }), "{e}"),
    }
}

/// zswap's shrinker flushes the memcg's statistics each time reclaim counts it
/// (`zswap_shrinker_count()` → `mem_cgroup_flush_stats()`), whether or not it then writes
/// anything back (on cgroup v1 it finds nothing to): with it on, a new memcg's run swaps
/// within a few per cent of the run with current statistics; with it off, as stale as zram's.
#[test]
fn zswaps_shrinker_flushes_the_statistics() {
    let t = zipf(60_000, 2);
    let outs = |shrinker_enabled, f| {
        let c = ReplayConfig {
            swap: SwapKind::Zswap,
            zswap: zmem_zswap::ZswapParams { shrinker_enabled, ..zswap_pool(100) },
            ..cfg(f)
        };
        let r = replay::run(&pages(N as usize, 1), &t, &c, &NoProgress).unwrap();
        assert!(r.verified);
        r.swap_outs
    };
    let fresh = outs(true, StatsFlush::Always);
    let on = outs(true, StatsFlush::KERNEL_NEW_MEMCG);
    let off = outs(false, StatsFlush::KERNEL_NEW_MEMCG);
    assert!(on.abs_diff(fresh) * 20 < fresh, "{on} vs {fresh}");
    assert!(off > 2 * on, "{off} vs {on}");
}
