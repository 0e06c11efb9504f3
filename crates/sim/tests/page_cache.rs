//! Page cache in the replay: file reads fault pages onto the file LRU lists, which a memcg's
//! reclaim balances against the anon lists as 6.18 does (`prepare_scan_control()`'s
//! `cache_trim_mode`, `get_scan_count()`, `workingset_refault()`).

use zmem_sim::NoProgress;
use zmem_sim::replay::{self, Access, ReplayConfig, ReplayResult, SwapKind, Watermarks};

const PS: usize = 4096;

fn pages(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * PS];
    let mut r = zmem_pages::prng::SplitMix64::new(9);
    for p in v.chunks_mut(PS) {
        r.fill(&mut p[..PS / 4]);
    }
    v
}

/// `rounds` rounds, each touching all `anon` pages and then reading `file_per_round` file
/// pages from `file_start(round)` on, wrapping at `file_pages`.
fn trace(
    anon: u64,
    rounds: u64,
    file_per_round: u64,
    file_pages: u64,
    stream: bool,
) -> Vec<Access> {
    let mut t = Vec::new();
    let mut now = 0;
    let mut at = |page, file: bool, t: &mut Vec<Access>| {
        now += 1;
        t.push(Access { page, write: !file, file, time_ns: now });
    };
    for round in 0..rounds {
        for p in 0..anon {
            at(p, false, &mut t);
        }
        let start = if stream { round * file_per_round } else { 0 };
        for k in 0..file_per_round {
            at((start + k) % file_pages, true, &mut t);
        }
    }
    t
}

fn run(t: &[Access], anon: usize, ram: u64) -> ReplayResult {
    replay::run(&pages(anon), t, &cfg(ram, None), &NoProgress).unwrap()
}

fn cfg(ram: u64, watermarks: Option<Watermarks>) -> ReplayConfig {
    ReplayConfig { ram_pages: ram, swap: SwapKind::Zram, watermarks, ..ReplayConfig::default() }
}

const MARKS: Watermarks = Watermarks { min: 16, low: 48, high: 80 };

/// Use-once file reads (a stream through 20,000 pages) beside 400 hot anonymous pages in
/// 1,024 pages of RAM: no file page is read twice, so no refault, and with plenty of inactive
/// file pages `cache_trim_mode` scans the file lists only. Nothing is swapped.
#[test]
fn streaming_file_reads_are_reclaimed_before_any_anonymous_page() {
    let t = trace(400, 20, 1000, 20_000, true);
    let r = run(&t, 400, 1024);
    assert_eq!((r.file_pages, r.file_reads, r.file_faults), (20_000, 20_000, 20_000));
    assert_eq!(r.file_refaults, 0);
    assert_eq!(r.swap_outs, 0, "cache_trim_mode keeps reclaim off the anon lists");
    assert!(r.file_evictions >= 20_000 - 1024 + 400, "{}", r.file_evictions);
}

/// The same 400 anonymous pages beside a file of 900 pages read over and over: RAM cannot
/// hold both, the file's pages come back (refaults), their shadows are recent, so they are
/// activated, `DEACTIVATE_FILE` turns `cache_trim_mode` off and reclaim takes its share from
/// the anon lists too: pages are swapped out.
#[test]
fn a_thrashing_file_turns_reclaim_onto_the_anon_lists() {
    let t = trace(400, 20, 900, 900, false);
    let r = run(&t, 400, 1024);
    assert_eq!(r.file_faults, 900 + r.file_refaults);
    assert!(r.file_refaults > 0);
    assert!(r.swap_outs > 0, "refaults end cache_trim_mode: anon is scanned");
    // Every fault puts a page in RAM and every eviction takes one out: what is left fits.
    let resident = r.file_faults.checked_sub(r.file_evictions).unwrap();
    assert!((1..=1024).contains(&resident), "{resident}");
}

/// A file read outside the replay's file is refused before any work.
#[test]
fn a_file_page_past_the_config_is_an_error_at_the_access() {
    let p = pages(4);
    let cfg = ReplayConfig { ram_pages: 4, file_pages: 2, ..ReplayConfig::default() };
    let mut sim = replay::Simulator::new(&p, &cfg).unwrap();
    sim.access(Access { page: 1, write: false, file: true, time_ns: 0 }).unwrap();
    let e = sim.access(Access { page: 2, write: false, file: true, time_ns: 1 }).unwrap_err();
    assert!(e.to_string().contains("file page 2"), "{e}");
}

/// Machine-wide (kswapd, `--watermarks`): the stream's use-once pages are what kswapd takes
/// (`cache_trim_mode` holds in `balance_pgdat()`'s passes as in a memcg's), so nothing is
/// swapped, no allocation reclaims directly, and every page reclaimed is a file page.
#[test]
fn kswapd_trims_a_streaming_page_cache_before_swapping() {
    let t = trace(400, 20, 1000, 20_000, true);
    let r = replay::run(&pages(400), &t, &cfg(1024, Some(MARKS)), &NoProgress).unwrap();
    assert_eq!(r.swap_outs, 0, "{r:?}");
    assert_eq!(r.direct_reclaimed, 0);
    assert!(r.kswapd_wakes > 0);
    assert_eq!(r.kswapd_reclaimed, r.file_evictions);
    assert!(r.file_evictions >= 20_000 - 1024 + 400, "{}", r.file_evictions);
}

/// Global reclaim swaps at swappiness 0 where the file is tiny (`prepare_scan_control()`'s
/// `file_is_tiny`: file and free pages under the high mark, `SCAN_ANON`), where a memcg's
/// reclaim at swappiness 0 scans the file lists only (`cgroup_reclaim() && !swappiness`).
#[test]
fn machine_wide_reclaim_swaps_at_swappiness_0_once_the_file_is_tiny() {
    let t = trace(1040, 10, 20, 20, false);
    let zero = |w| ReplayConfig { swappiness: 0, ..cfg(1024, w) };
    let r = replay::run(&pages(1040), &t, &zero(Some(MARKS)), &NoProgress).unwrap();
    assert!(r.swap_outs > 0, "{r:?}");
    let memcg = replay::run(&pages(1040), &t, &zero(None), &NoProgress);
    let e = memcg.expect_err("a memcg at swappiness 0 cannot swap: out of memory");
    assert!(e.to_string().contains("out of memory"), "{e}");
}
