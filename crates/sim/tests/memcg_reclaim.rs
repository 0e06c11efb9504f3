//! A memcg's reclaim walks the priorities as 6.18 `do_try_to_free_pages()` does: each
//! priority scans `size >> priority` of the anon lists (times the anon share), runs the
//! memcg-aware shrinkers, and the walk stops once `SWAP_CLUSTER_MAX` pages are freed.

use zmem_sim::NoProgress;
use zmem_sim::replay::{self, Access, CgroupVersion, ReplayConfig, SwapKind};
use zmem_zswap::ZswapParams;

const PS: usize = 4096;

/// `n` pages, each its own noise over a quarter (compressible, none zero, none alike).
fn distinct_pages(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * PS];
    let mut r = zmem_pages::prng::SplitMix64::new(5);
    for p in v.chunks_mut(PS) {
        r.fill(&mut p[..PS / 4]);
    }
    v
}

fn first_touches(n: u64) -> Vec<Access> {
    (0..n).map(|k| Access { page: k, write: false, file: false, time_ns: k }).collect()
}

/// 1,025 first touches through 1,024 pages of RAM at swappiness 200 (the anon lists get the
/// whole `size >> priority`): priorities 12 to 1 scan 1 + 2 + ... + 512 = 1,023 pages, each
/// accessed by its fault, so each is marked and rotated. Priority 0 (`SCAN_EQUAL`) scans the
/// list in chunks of 32: the one page never looked at rotates, the next 31 are taken; 31 is
/// short of 32, so a second chunk takes 32 more. One reclaim swaps out 63 pages, where a
/// single pass would stop at 32.
#[test]
fn one_reclaim_walks_down_to_priority_0_and_frees_what_its_last_chunk_gives() {
    let p = distinct_pages(1025);
    let cfg = ReplayConfig {
        ram_pages: 1024,
        swap: SwapKind::Zram,
        swappiness: 200,
        ..ReplayConfig::default()
    };
    let r = replay::run(&p, &first_touches(1025), &cfg, &NoProgress).unwrap();
    assert_eq!((r.first_touches, r.swap_outs, r.swap_ins), (1025, 63, 0));
    // At 60 the anon lists get less of each priority's scan, so more pages are looked at
    // before the walk reaches priority 0; it still ends there, freeing what a chunk gives.
    let cfg = ReplayConfig { swappiness: 60, ..cfg };
    let r = replay::run(&p, &first_touches(1025), &cfg, &NoProgress).unwrap();
    assert!((32..64).contains(&r.swap_outs), "{}", r.swap_outs);
}

/// Swappiness 0: a memcg's reclaim scans no anon page (`get_scan_count()`'s `SCAN_FILE`), so
/// a charge that needs room fails after `MAX_RECLAIM_RETRIES` and the memcg OOMs.
#[test]
fn at_swappiness_0_a_memcg_swaps_nothing_and_runs_out_of_memory() {
    let p = distinct_pages(65);
    let cfg = ReplayConfig { ram_pages: 64, swappiness: 0, ..ReplayConfig::default() };
    let e = replay::run(&p, &first_touches(65), &cfg, &NoProgress).unwrap_err();
    assert!(matches!(e, zmem_sim::SimError::OutOfMemory { accesses: 65 }), "{e}");
}

/// A memcg of 1,024 pages reaches low priorities on every reclaim, and each priority runs
/// zswap's shrinker (memcg-aware) at that priority: on cgroup v2, with the shrinker on, it
/// writes entries back long before the 4,096 entries a shrinker at `DEF_PRIORITY` needs to
/// scan anything. On v1 it counts nothing (no `MEMCG_ZSWAPPED`) and writes nothing back.
#[test]
fn each_priority_runs_zswaps_shrinker_at_that_priority() {
    let p = distinct_pages(3000);
    let t = first_touches(3000);
    let written_back = |cgroup| {
        let cfg = ReplayConfig {
            ram_pages: 1024,
            cgroup,
            zswap: ZswapParams {
                shrinker_enabled: true,
                max_pool_percent: 1600,
                ..ReplayConfig::default().zswap
            },
            ..ReplayConfig::default()
        };
        let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
        assert!(r.verified && r.swap_outs >= 1900, "{}", r.swap_outs);
        r.counter("written_back_pages")
    };
    assert_eq!(written_back(CgroupVersion::V1), 0);
    assert!(written_back(CgroupVersion::V2) > 100);
}

/// `shrink_folio_list()`'s `activate_locked`: a swapped-in page that kept its slot (read back
/// through the swap cache while swap was under half full) gives the slot back when reclaim
/// activates it once swap is over half full, so its next reclaim writes it again rather than
/// dropping it clean. Page 0 comes back from the device (zswap rejects the incompressible
/// pages) with a few of the area's 24 slots in use, then is accessed between every first
/// touch, so its second look activates it; by then more than 12 slots are in use.
#[test]
fn activation_frees_a_kept_slot_once_swap_is_over_half_full() {
    let n = 36;
    let mut p = vec![0u8; n * PS];
    zmem_pages::prng::SplitMix64::new(8).fill(&mut p);
    let cfg = ReplayConfig {
        ram_pages: 16,
        incompressible: zmem_zswap::Incompressible::Reject,
        readahead: replay::Readahead::None,
        swap_pages: Some(25),
        ..ReplayConfig::default()
    };
    let mut sim = replay::Simulator::new(&p, &cfg).unwrap();
    let mut k = 0;
    let mut touch = |sim: &mut replay::Simulator, page: u64| {
        k += 1;
        sim.access(Access { page, write: false, file: false, time_ns: k }).unwrap();
    };
    for page in 0..20 {
        touch(&mut sim, page);
    }
    assert!(sim.in_swap(0));
    touch(&mut sim, 0);
    for page in 20..n as u64 {
        touch(&mut sim, page);
        touch(&mut sim, 0);
    }
    let r = sim.finish(Default::default());
    assert!(r.verified);
    assert_eq!(r.swap_ins, 1, "page 0 stays resident once back");
    assert_eq!(r.activation_freed, 1, "{r:?}");
}
