//! Replay and allocator study: determinism, integrity through every swap path, and the
//! accounting identities between the simulator's counts and the engines' counters.

mod common;

use common::{PS, counts, pages, trace, zswap_pool};
use zmem_sim::replay::{self, Access, Readahead, ReplayConfig, ReplayResult, SwapKind};
use zmem_sim::{NoProgress, SimError};
use zmem_zswap::{Incompressible, ZswapParams};

fn counter(r: &ReplayResult, name: &str) -> u64 {
    assert!(r.counters.iter().any(|c| c.name == name), "no counter {name}");
    r.counter(name)
}

#[test]
fn replay_is_deterministic_and_verifies_every_swap_in() {
    let p = pages(400, 1);
    let t = trace(400, 6000, 2);
    for swap in [SwapKind::Zswap, SwapKind::Zram] {
        for pool in ["zsmalloc", "zbud", "z3fold"] {
            if swap == SwapKind::Zram && pool == "zbud" {
                continue; // below
            }
            let cfg = ReplayConfig {
                ram_pages: 64,
                swap,
                pool: pool.into(),
                zswap: ZswapParams { shrinker_enabled: true, ..zswap_pool(50) },
                ..ReplayConfig::default()
            };
            let a = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
            let b = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
            assert_eq!(counts(&a), counts(&b), "{swap:?} {pool}");
            assert!(a.verified, "{swap:?} {pool}");
            assert_eq!(a.reads + a.writes, 6000);
            assert!(a.swap_ins > 100 && a.swap_outs > 100, "the trace must cause pressure");
            // Every non-zero swap-out was timed as a store, every non-zero swap-in as a load.
            assert_eq!(a.store_hist.count, a.swap_outs - a.zero_swap_outs);
            assert_eq!(a.stored + a.rejected, a.swap_outs - a.zero_swap_outs);
        }
    }
}

#[test]
fn zswap_replay_accounts_for_every_page_it_wrote_to_disk() {
    let p = pages(400, 3);
    let t = trace(400, 8000, 4);
    // A pool of 10 % of 64 pages: the limit, rejections and writeback all happen.
    let cfg = ReplayConfig { ram_pages: 64, zswap: zswap_pool(10), ..ReplayConfig::default() };
    let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    assert!(r.verified);
    let wb = counter(&r, "written_back_pages");
    assert!(r.rejected > 0 && wb > 0 && counter(&r, "pool_limit_hit") > 0);
    assert_eq!(r.disk_writes, r.rejected + wb, "disk writes are rejections plus writebacks");
    assert_eq!(counter(&r, "zswpout"), r.stored);
    assert!(r.max_pool_bytes <= (64 / 10 + 1) * PS as u64 * 2, "the pool stays near its cap");
    // Loads from zswap plus reads from disk are all the non-zero swap-ins and read-ahead pages
    // (readahead: `zswpin` counts every `zswap_load()` that found its page, read-ahead or not).
    assert!(r.swap_ra > 0, "the trace must read ahead");
    assert_eq!(
        counter(&r, "zswpin") + r.disk_reads,
        r.load_hist.count + r.swap_in_hists.readahead.count
    );
}

/// zswap writes back through the swap cache (6.18 `zswap_writeback_entry()` →
/// `__read_swap_cache_async()`): each page written back comes back into RAM, charged, clean
/// and unmapped at the inactive tail; a fault that finds it there is minor (no read, and not a
/// `swap_ra_hit`), and reclaim drops the rest without a write. A skewed trace comes back to
/// some of them before the next reclaim.
#[test]
fn zswap_writes_back_through_the_swap_cache() {
    let p = pages(400, 3);
    let t = trace(400, 8000, 4);
    let cfg = ReplayConfig {
        ram_pages: 64,
        zswap: zswap_pool(10),
        page_cluster: 0,
        ..ReplayConfig::default()
    };
    let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    assert!(r.verified);
    let wb = counter(&r, "written_back_pages");
    assert!(wb > 0 && r.writeback_cached > 0 && r.writeback_cached <= wb, "{}", counts(&r));
    assert!(r.writeback_cache_hits > 0, "{}", counts(&r));
    assert!(r.writeback_cache_hits <= r.writeback_cached);
    assert_eq!((r.swap_ra, r.swap_ra_hit), (0, 0), "no readahead: no readahead hit");
    // The pages dropped from the swap cache were written once, by the writeback.
    assert_eq!(r.disk_writes, r.rejected + wb);
}

/// zswap's shrink worker is queued work on its own kworker (mm/zswap.c `zswap_store()` ->
/// `queue_work()`, which does nothing while the work is pending): the stores rejected before
/// it runs queue it once. The replay runs it every `SHRINK_WORK_REJECTED_STORES` rejected
/// stores and when a reclaim ends, not after every rejected store (all of this trace's
/// rejections are at the pool limit: the pages compress and the allocator has room).
#[test]
fn zswaps_shrink_worker_runs_once_for_several_rejected_stores() {
    let p = pages(400, 3);
    let t = trace(400, 8000, 4);
    let cfg = ReplayConfig { ram_pages: 64, zswap: zswap_pool(10), ..ReplayConfig::default() };
    let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    let n = u64::from(replay::SHRINK_WORK_REJECTED_STORES);
    assert!(r.rejected > 4 * n && r.shrink_worker_runs > 0, "{}", counts(&r));
    assert!(
        r.shrink_worker_runs < r.rejected,
        "{} runs, {} rejected",
        r.shrink_worker_runs,
        r.rejected
    );
    // At least one run per n rejections (the others end a reclaim that left it queued).
    assert!(r.shrink_worker_runs >= r.rejected / n, "{} runs", r.shrink_worker_runs);
}

#[test]
fn zram_replay_keeps_everything_in_the_device() {
    let p = pages(200, 5);
    let t = trace(200, 3000, 6);
    let cfg = ReplayConfig { ram_pages: 32, swap: SwapKind::Zram, ..ReplayConfig::default() };
    let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    assert!(r.verified && r.rejected == 0 && r.disk_writes == 0);
    assert_eq!(r.stored, r.swap_outs - r.zero_swap_outs);
    assert!(r.max_pool_bytes > 0 && r.max_pool_bytes == counter(&r, "mem_used_max"));
}

#[test]
fn zram_on_zbud_fails_clearly_on_a_page_it_cannot_hold() {
    // zram stores incompressible pages raw (a whole page); zbud's largest object is 62/64 of a
    // page, so the device's write fails and the replay reports it instead of guessing.
    let p = pages(100, 10);
    let t = trace(100, 2000, 11);
    let cfg = ReplayConfig {
        ram_pages: 8,
        swap: SwapKind::Zram,
        pool: "zbud".into(),
        ..ReplayConfig::default()
    };
    let e = replay::run(&p, &t, &cfg, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("zbud"), "{e}");
}

#[test]
fn replay_refuses_traces_past_the_page_set() {
    let p = pages(10, 7);
    let t = [Access { page: 10, write: false, file: false, time_ns: 0 }];
    let e = replay::run(&p, &t, &ReplayConfig::default(), &NoProgress).unwrap_err();
    assert!(e.to_string().contains("page 10"), "{e}");
}

/// 6.18's `swap_writeout()`: with `memory.zswap.writeback=0` a page zswap rejects stays in RAM
/// (activated) and nothing reaches the swap file; reclaim takes another victim.
#[test]
fn with_writeback_disabled_rejected_pages_stay_in_ram() {
    const POOL_PCT: u32 = 1600;
    // A few noise pages: 6.18 rejects them whenever writeback is off (-EINVAL), so they stay
    // in RAM; too many of them at once would be an OOM (the next test). The pool (1600 % of
    // RAM: a partly filled zspage of up to 8 pages per size class, for a few pages each, is a
    // large share of 64 pages) holds everything else.
    let p: Vec<u8> = pages(250, 12)
        .chunks(PS)
        .enumerate()
        .filter(|(i, _)| i % 5 != 3 || (i / 5) % 5 == 0)
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    let n = (p.len() / PS) as u64;
    let t = trace(n, 8000, 13);
    let cfg = ReplayConfig {
        ram_pages: 64,
        zswap: zswap_pool(POOL_PCT),
        writeback: false,
        ..ReplayConfig::default()
    };
    let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    assert!(r.verified);
    assert!(r.kept_in_ram > 0, "the small pool must reject some pages");
    assert_eq!(r.rejected, r.kept_in_ram, "every rejection stayed in RAM");
    assert_eq!((r.disk_writes, r.disk_reads), (0, 0), "nothing went to the swap file");
    assert_eq!(counter(&r, "written_back_pages"), 0);
    assert_eq!(r.stored, counter(&r, "zswpout"));
    assert_eq!(r.stored + r.zero_swap_outs, r.swap_outs);
    // With writeback allowed, 6.18 stores the noise pages as-is: nothing is kept back.
    let wb = replay::run(&p, &t, &ReplayConfig { writeback: true, ..cfg }, &NoProgress).unwrap();
    assert!(wb.verified);
    assert_eq!((wb.kept_in_ram, wb.rejected), (0, 0));
}

/// When zswap rejects everything and writeback is off, nothing can leave RAM: the replay stops
/// with the error the kernel's OOM killer stands for, instead of looping.
#[test]
fn with_writeback_disabled_and_nothing_storable_the_replay_runs_out_of_memory() {
    // Only noise pages (every fifth page is noise; take those), rejected as incompressible.
    let all = pages(200, 14);
    let noise: Vec<u8> = all.chunks(PS).skip(3).step_by(5).flatten().copied().collect();
    let n = (noise.len() / PS) as u64;
    let t = trace(n, 2000, 15);
    let cfg = ReplayConfig {
        ram_pages: 8,
        incompressible: Incompressible::Reject,
        writeback: false,
        ..ReplayConfig::default()
    };
    let e = replay::run(&noise, &t, &cfg, &NoProgress).unwrap_err();
    assert!(matches!(e, SimError::OutOfMemory { .. }), "{e}");
}

/// The device behind the swap file changes what swap-ins cost, never what happens: with a disk
/// every zswap miss costs milliseconds, with NVMe tens of microseconds, and every count, counter
/// and charge tally is the same.
#[test]
fn a_slow_swap_device_makes_misses_slower_and_changes_no_count() {
    use zmem_sim::swap_device::{SwapDevice, profile};
    let p = pages(400, 3);
    let t = trace(400, 8000, 4);
    let run = |name: &str| {
        let cfg = ReplayConfig {
            ram_pages: 64,
            zswap: zswap_pool(10),
            device: SwapDevice::from_profile(profile(name).unwrap()),
            ..ReplayConfig::default()
        };
        replay::run(&p, &t, &cfg, &NoProgress).unwrap()
    };
    let (fast, slow) = (run("nvme"), run("hdd"));
    assert_eq!(counts(&fast), counts(&slow));
    assert_eq!(slow.device.name, "hdd");
    let (fm, sm) = (&fast.swap_in_hists.zswap_miss, &slow.swap_in_hists.zswap_miss);
    assert!(fm.count > 10, "the trace must miss zswap");
    assert_eq!((fm.count, fast.disk_reads), (sm.count, slow.disk_reads));
    // Every device read is a fault's miss or a read-ahead page's miss (read-ahead loads that
    // hit zswap are the rest of the read-ahead histogram).
    let ra_zswap = counter(&fast, "zswpin") - fast.swap_in_hists.zswap_hit.count;
    let ra_device = fast.swap_in_hists.readahead.count - ra_zswap;
    assert_eq!(fm.count + ra_device, fast.disk_reads);
    assert!(sm.p50_ns > 10 * fm.p50_ns, "miss p50 {} (hdd) vs {} (nvme)", sm.p50_ns, fm.p50_ns);
    // A miss costs at least a device read: the nvme profile's p50 is 60 us.
    assert!(fm.p50_ns > 20_000, "{}", fm.p50_ns);
    // Hits never touch the device: they stay in the microseconds either way.
    let (fh, sh) = (&fast.swap_in_hists.zswap_hit, &slow.swap_in_hists.zswap_hit);
    assert_eq!(fh.count, sh.count);
    assert_eq!(fh.count + fm.count, fast.load_hist.count);
    assert!(sh.p50_ns < 1_000_000, "a hit p50 of {} ns", sh.p50_ns);
    // Every device read and write is charged, writebacks included.
    for r in [&fast, &slow] {
        assert_eq!(r.device_reads_charged, r.disk_reads);
        assert_eq!(r.device_writes_charged, r.disk_writes);
        assert_eq!(r.device_write_hist.count, r.disk_writes);
    }
    assert!(slow.device_secs > 10.0 * fast.device_secs);
    // The same device charges the same latencies on every run.
    let again = run("hdd");
    assert_eq!(again.swap_in_hists.zswap_miss.buckets.len(), sm.buckets.len());
    assert_eq!(again.device_secs, slow.device_secs);
}

/// zram's slots written back to its backing device cost a device read when swapped in: the
/// swap-in is reported apart, end to end, and the writeback's writes are charged.
#[test]
fn zram_written_back_slots_are_charged_a_device_read() {
    let p = pages(64, 9);
    let cfg = ReplayConfig {
        ram_pages: 8,
        swap: SwapKind::Zram,
        zram_backing: true,
        ..ReplayConfig::default()
    };
    let mut sim = replay::Simulator::new(&p, &cfg).unwrap();
    // Touch every page once, so most are swapped out to zram.
    for page in 0..64 {
        sim.access(Access { page, write: false, file: false, time_ns: page }).unwrap();
    }
    let written = sim.zram_writeback_idle().unwrap();
    assert!(written > 0, "some slots were written back");
    // Back from the backing device; then once more, from zram's memory (RAM holds 8 pages, so
    // the second pass swapped them out again, and nothing wrote them back this time).
    for pass in 1..3 {
        for page in 0..64 {
            sim.access(Access { page, write: false, file: false, time_ns: pass * 100 + page })
                .unwrap();
        }
    }
    let r = sim.finish(Default::default());
    assert!(r.verified);
    let h = &r.swap_in_hists;
    assert!(h.zram_written_back.count > 0 && h.zram.count > 0);
    assert_eq!(h.zram.count + h.zram_written_back.count, r.load_hist.count);
    // The nvme profile's read p50 is 60 us; an in-memory zram read is far below it.
    assert!(h.zram_written_back.p50_ns > 20_000 && h.zram.p50_ns < h.zram_written_back.p50_ns);
    assert_eq!(r.device_reads_charged, h.zram_written_back.count);
    assert_eq!(r.device_writes_charged, written);
}

/// Pages no two alike, all compressible and none zero.
fn text_pages(n: usize) -> Vec<u8> {
    (0..n * PS).map(|j| b"zmem readahead "[(j + j / PS) % 15] ^ (j / PS) as u8 | 1).collect()
}

/// `t` over `p` with RAM for 64 pages in front of a zswap pool that holds every page (zswap's
/// 32 allocator pools each start their own zspages), reading ahead as `readahead`.
fn run_all_in_zswap(p: &[u8], t: &[Access], readahead: Readahead) -> ReplayResult {
    let cfg = ReplayConfig {
        ram_pages: 64,
        zswap: zswap_pool(1600),
        readahead,
        ..ReplayConfig::default()
    };
    replay::run(p, t, &cfg, &NoProgress).unwrap()
}

/// Two sequential passes over `n` pages.
fn two_passes(n: u64) -> Vec<Access> {
    (0..2 * n).map(|k| Access { page: k % n, write: false, file: false, time_ns: k }).collect()
}

/// 6.18 `swapin_readahead()`: a sequential second pass over zswap (a swap file is not
/// `SWP_SYNCHRONOUS_IO`) reads ahead, VMA-based or cluster-based, and most of the pass's faults
/// find their page read ahead (`swap_ra_hit`, minor faults). Without readahead, every page of
/// the pass is a major fault.
#[test]
fn a_sequential_pass_over_zswap_reads_ahead_and_hits() {
    let n = 256;
    let p = text_pages(n);
    let t = two_passes(n as u64);
    let run = |readahead| run_all_in_zswap(&p, &t, readahead);
    let none = run(Readahead::None);
    assert!(none.verified);
    assert_eq!((none.swap_ra, none.swap_ra_hit, none.swap_ins), (0, 0, n as u64));
    for mode in [Readahead::Vma, Readahead::Cluster] {
        let r = run(mode);
        assert!(r.verified, "{mode}");
        assert_eq!(r.readahead, mode);
        // Every page of the second pass was out of RAM: a major fault, or a read-ahead hit.
        assert_eq!(r.swap_ins + r.swap_ra_hit, n as u64, "{mode}");
        // A read-ahead page is hit, reclaimed first (unmapped, so unaccessed: when reclaim has
        // rotated every page the pass touched once, the window's unhit pages go first; all were
        // read from zswap, so none is dropped clean), or still in the swap cache at the end.
        assert!(r.swap_ra_hit + r.ra_reclaimed <= r.swap_ra, "{mode}");
        assert_eq!(r.ra_dropped, 0, "{mode}");
        // Sequential: the window grows to page_cluster's 8, so at most one fault in 8 is major
        // once it has (4 for its growth), and each read-ahead page reclaimed before its fault
        // makes one more; nearly every read-ahead page is hit.
        let bound = n as u64 / 8 + 4 + r.ra_reclaimed;
        assert!(r.swap_ins <= bound, "{mode}: {} major faults", r.swap_ins);
        assert!(r.swap_ra >= n as u64 * 7 / 8 - 4, "{mode}: swap_ra {}", r.swap_ra);
        // Read-ahead loads are zswap loads: zswpin counts them with the faults' own.
        assert_eq!(counter(&r, "zswpin"), r.swap_ins + r.swap_ra, "{mode}");
    }
}

/// 6.18 `do_swap_page()`: zram is `SWP_SYNCHRONOUS_IO` and every entry here has a swap count
/// of 1, so its faults skip the swap cache and readahead, whatever `vm.page-cluster` says.
#[test]
fn zram_swap_in_faults_read_only_their_own_page() {
    let n = 256;
    let p = text_pages(n);
    let t = two_passes(n as u64);
    for readahead in [Readahead::Vma, Readahead::Cluster] {
        let cfg = ReplayConfig {
            ram_pages: 64,
            swap: SwapKind::Zram,
            readahead,
            page_cluster: 5,
            ..ReplayConfig::default()
        };
        let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
        assert!(r.verified);
        assert_eq!((r.swap_ra, r.swap_ra_hit), (0, 0));
        assert_eq!(r.readahead, Readahead::None);
        assert_eq!(r.swap_ins, n as u64);
    }
}

/// `vm.page-cluster=0`: `swapin_nr_pages()` and `swap_vma_ra_win()` return a window of one page,
/// so the replay is the one without readahead, count for count.
#[test]
fn page_cluster_0_reads_nothing_ahead() {
    let p = pages(400, 21);
    let t = trace(400, 6000, 22);
    let run = |readahead, page_cluster| {
        let cfg =
            ReplayConfig { ram_pages: 64, readahead, page_cluster, ..ReplayConfig::default() };
        replay::run(&p, &t, &cfg, &NoProgress).unwrap()
    };
    let off = run(Readahead::None, 3);
    for mode in [Readahead::Vma, Readahead::Cluster] {
        let r = run(mode, 0);
        assert_eq!((r.swap_ra, r.swap_ra_hit, r.readahead), (0, 0, Readahead::None));
        assert_eq!(counts(&r), counts(&off), "{mode}");
        assert!(run(mode, 3).swap_ra > 0, "{mode}: the same trace reads ahead at 3");
    }
}

/// `zswap_load()` of a folio in the swap cache (every read-ahead page) frees the zswap entry
/// (mm/zswap.c): the entries drop and `zswpin` counts each read-ahead page; reclaimed before any
/// fault, such a page (dirty) is stored in zswap again, and comes back from there.
#[test]
fn read_ahead_pages_leave_zswap_and_are_stored_again_when_reclaimed() {
    let p = text_pages(128);
    let cfg = ReplayConfig { ram_pages: 16, zswap: zswap_pool(1600), ..ReplayConfig::default() };
    let mut sim = replay::Simulator::new(&p, &cfg).unwrap();
    let mut k = 0;
    let mut touch = |sim: &mut replay::Simulator, page| {
        k += 1;
        sim.access(Access { page, write: false, file: false, time_ns: k }).unwrap();
    };
    let zswap = |sim: &replay::Simulator| {
        let z = sim.swap_layer().zswap().unwrap();
        (z.nr_entries(), z.stats().zswpin, z.stats().zswpout)
    };
    // 64 first touches through 16 pages of RAM, reclaimed 16 at a time: 0..48 are in zswap.
    for page in 0..64 {
        touch(&mut sim, page);
    }
    assert_eq!(zswap(&sim), (48, 0, 48));
    // A fault on 10, the VMA's first: hits 4 -> a window of 8, centred: 7..15. Reading 7 finds
    // RAM full (48..64). A memcg of 16 pages scans a page or two at priority 1 and the whole
    // inactive list at 0 (`SCAN_EQUAL`), one look each: pages accessed since their last look
    // rotate, so each reclaim frees a few. All 16 of 48..64 go to zswap, and so do two of the
    // window's read-ahead pages, unaccessed and dirty (their entries freed by the load),
    // taken by a reclaim before the window was read: 8 loads, 18 stores.
    touch(&mut sim, 10);
    assert_eq!(zswap(&sim), (48 + 18 - 8, 8, 66));
    // 16 first touches: 16 more stores, the other 5 read-ahead pages (never faulted, dirty)
    // among them.
    for page in 64..80 {
        touch(&mut sim, page);
    }
    assert_eq!(zswap(&sim), (58 + 16, 8, 82));
    // A fault on 8 (window: 2 pages not adjacent to 10 -> 1, but at least 8 / 2 -> 4, centred
    // 7..11): 7, 9, 10 read ahead and 8 itself, all from zswap again.
    touch(&mut sim, 8);
    assert_eq!(zswap(&sim), (74 - 4, 12, 82));
    let r = sim.finish(Default::default());
    assert!(r.verified, "the pages stored again came back intact");
    assert_eq!((r.swap_ra, r.swap_ra_hit, r.ra_reclaimed, r.ra_dropped), (10, 0, 7, 0));
    assert_eq!(r.swap_ins, 2);
    assert_eq!(r.stored, 82);
}

/// Two passes over `n` pages in one scattered order (page `k * 97 % n`; `n` a power of two, so
/// every page once a pass), the first writing.
fn two_scattered_passes(n: u64) -> Vec<Access> {
    (0..2 * n).map(|k| Access { page: k * 97 % n, write: k < n, file: false, time_ns: k }).collect()
}

/// 6.18 hands out swap slots in reclaim order (mm/swapfile.c `cluster_alloc_swap_entry()`), so
/// cluster readahead (`swap_cluster_readahead()`) reads the pages reclaimed next to the faulting
/// one, whatever their addresses: a second pass in the first pass's scattered order is
/// sequential in the swap area and nearly every fault finds its page read ahead, while VMA
/// readahead, which reads address neighbours, hits far less. (With slots at the page ids, as
/// before the allocator, cluster readahead fared as badly as VMA readahead here.)
#[test]
fn cluster_readahead_reads_the_pages_reclaimed_together() {
    let n = 256;
    let p = text_pages(n);
    let t = two_scattered_passes(n as u64);
    let run = |readahead| run_all_in_zswap(&p, &t, readahead);
    let cluster = run(Readahead::Cluster);
    assert!(cluster.verified);
    assert_eq!(cluster.swap_ins + cluster.swap_ra_hit, n as u64);
    assert!(cluster.swap_ins <= n as u64 / 8 + 4, "{} major faults", cluster.swap_ins);
    let vma = run(Readahead::Vma);
    assert!(vma.verified);
    assert!(vma.swap_ins > n as u64 / 2, "VMA readahead: {} major faults", vma.swap_ins);
}

/// Through the swap cache (zswap's swap file) a read fault keeps the page's slot
/// (`should_try_to_free_swap()`: no write, swap not full), and a page read from the device and
/// not written since is dropped by reclaim without a write, its slot still holding it: every
/// page is written to the device once. A write fault frees the slot, so the page is written
/// again; so does a swap area more than half full (`vm_swap_full()`).
#[test]
fn a_clean_swapped_in_page_keeps_its_slot_and_is_not_written_again() {
    let n = 256u64;
    let p = text_pages(n as usize);
    let passes = |second_writes: bool| -> Vec<Access> {
        (0..3 * n)
            .map(|k| Access {
                page: k % n,
                write: k < n || (second_writes && k < 2 * n),
                file: false,
                time_ns: k,
            })
            .collect()
    };
    let run = |t: &[Access], swap_pages| {
        // zswap holds nothing (a pool of 0 %): every swap-out goes to the swap file.
        let cfg = ReplayConfig {
            ram_pages: 64,
            zswap: zswap_pool(0),
            readahead: Readahead::None,
            swap_pages,
            ..ReplayConfig::default()
        };
        replay::run(&p, t, &cfg, &NoProgress).unwrap()
    };
    let read = run(&passes(false), None);
    assert!(read.verified);
    assert_eq!(read.disk_writes, n, "each page written once");
    assert_eq!(read.swap_outs, n);
    assert!(read.clean_dropped >= n, "{} dropped clean", read.clean_dropped);
    assert_eq!(read.disk_reads, read.swap_ins);
    let written = run(&passes(true), None);
    assert!(written.verified);
    assert_eq!(written.swap_ins, read.swap_ins);
    assert!(written.disk_writes >= 2 * n - 64, "{} device writes", written.disk_writes);
    // An area of the pages and the header only: more than half full from the first pass on,
    // so every swap-in frees its slot and every eviction writes.
    let full = run(&passes(false), Some(n + 1));
    assert!(full.verified);
    assert_eq!(full.clean_dropped, 0);
    assert_eq!(full.disk_writes, full.swap_outs);
    assert!(full.disk_writes > read.disk_writes);
}

/// The replay's zswap counts its entries for the shrinker only on cgroup v2: on v1 6.18
/// charges nothing to the memcg, and `zswap_shrinker_count()` reads its 0 stored pages.
#[test]
fn the_zswap_shrinker_counts_the_memcgs_entries_on_cgroup_v2_only() {
    let p = pages(64, 9);
    let count = |cgroup| {
        let cfg = ReplayConfig {
            cgroup,
            zswap: ZswapParams { shrinker_enabled: true, ..zswap_pool(50) },
            ..ReplayConfig::default()
        };
        let mut layer = zmem_zswap::SwapLayer::with_zswap(replay::build_zswap(&cfg, 64).unwrap());
        layer.set_slab_reclaim(None);
        for (i, page) in p.chunks(PS).enumerate() {
            layer.swap_out(i as u64, page, &mut ()).unwrap();
        }
        let z = layer.zswap().unwrap();
        assert!(z.nr_entries() > 40, "{}", z.nr_entries());
        z.shrinker_count()
    };
    assert_eq!(count(replay::CgroupVersion::V1), 0);
    assert!(count(replay::CgroupVersion::V2) > 0);
}

/// zswap's pool limit is `max_pool_percent` of the machine's RAM (mm/zswap.c
/// `zswap_max_pages()` of `totalram_pages()`), not of the memcg's: the run whose pool hits
/// 10 % of its 64 pages of RAM never hits 10 % of a machine of 6,400 pages.
#[test]
fn zswaps_pool_limit_is_a_share_of_the_machines_ram() {
    let p = pages(400, 3);
    let t = trace(400, 8000, 4);
    let run = |total_ram_pages| {
        let cfg = ReplayConfig {
            ram_pages: 64,
            zswap: zswap_pool(10),
            total_ram_pages,
            ..ReplayConfig::default()
        };
        replay::run(&p, &t, &cfg, &NoProgress).unwrap()
    };
    let memcg = run(None);
    assert!(counter(&memcg, "pool_limit_hit") > 0);
    let machine = run(Some(6400));
    assert_eq!(counter(&machine, "pool_limit_hit"), 0);
    assert_eq!(counter(&machine, "written_back_pages"), 0);
    assert!(machine.max_pool_bytes > memcg.max_pool_bytes);
}
