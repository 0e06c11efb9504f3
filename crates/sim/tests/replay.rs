//! Replay and allocator study: determinism, integrity through every swap path, and the
//! accounting identities between the simulator's counts and the engines' counters.

use zmem_pages::prng::SplitMix64;
use zmem_sim::replay::{self, Access, ReplayConfig, ReplayResult, SwapKind};
use zmem_sim::{NoProgress, SimError};
use zmem_zswap::Incompressible;

const PS: usize = 4096;

/// Pages of five kinds: zero, text-like, half noise, noise, small noise.
fn pages(n: usize, seed: u64) -> Vec<u8> {
    let mut r = SplitMix64::new(seed);
    let mut v = vec![0u8; n * PS];
    for (i, p) in v.chunks_mut(PS).enumerate() {
        let noisy = match i % 5 {
            0 => 0,
            1 => {
                for (j, b) in p.iter_mut().enumerate() {
                    *b = b"the quick brown fox "[(j + i) % 20];
                }
                0
            }
            2 => PS / 2 + 200,
            3 => PS,
            _ => 500,
        };
        for b in &mut p[..noisy] {
            *b = r.next_u64() as u8;
        }
    }
    v
}

/// Skewed accesses: half of them to the first eighth of the pages.
fn trace(n: u64, len: usize, seed: u64) -> Vec<Access> {
    let mut r = SplitMix64::new(seed);
    (0..len)
        .map(|k| {
            let x = r.next_u64();
            let page = if x & 1 == 0 { (x >> 8) % (n / 8).max(1) } else { (x >> 8) % n };
            Access { page, write: x & 2 != 0, time_ns: k as u64 * 1000 }
        })
        .collect()
}

/// Everything but the timings.
fn counts(r: &ReplayResult) -> String {
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {:?} {}",
        r.reads,
        r.writes,
        r.first_touches,
        r.swap_outs,
        r.zero_swap_outs,
        r.swap_ins,
        r.stored,
        r.rejected,
        r.max_pool_bytes,
        r.disk_reads,
        r.disk_writes,
        r.store_hist.count + r.load_hist.count,
        r.counters,
        r.verified
    )
}

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
                max_pool_percent: 50,
                shrinker: true,
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
    let cfg = ReplayConfig { ram_pages: 64, max_pool_percent: 10, ..ReplayConfig::default() };
    let r = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    assert!(r.verified);
    let wb = counter(&r, "written_back_pages");
    assert!(r.rejected > 0 && wb > 0 && counter(&r, "pool_limit_hit") > 0);
    assert_eq!(r.disk_writes, r.rejected + wb, "disk writes are rejections plus writebacks");
    assert_eq!(counter(&r, "zswpout"), r.stored);
    assert!(r.max_pool_bytes <= (64 / 10 + 1) * PS as u64 * 2, "the pool stays near its cap");
    // Swap-ins from zswap plus those from disk are all the non-zero swap-ins.
    assert_eq!(counter(&r, "zswpin") + r.disk_reads, r.load_hist.count);
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
    let t = [Access { page: 10, write: false, time_ns: 0 }];
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
        max_pool_percent: POOL_PCT,
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
            max_pool_percent: 10,
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
    assert_eq!(fm.count, fast.disk_reads, "every device read is a miss");
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
        sim.access(Access { page, write: false, time_ns: page }).unwrap();
    }
    let written = sim.zram_writeback_idle().unwrap();
    assert!(written > 0, "some slots were written back");
    // Back from the backing device; then once more, from zram's memory (RAM holds 8 pages, so
    // the second pass swapped them out again, and nothing wrote them back this time).
    for pass in 1..3 {
        for page in 0..64 {
            sim.access(Access { page, write: false, time_ns: pass * 100 + page }).unwrap();
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
