//! `validate replay` end to end on the live kernel: a small page set (16 MiB of zmem's `mixed`
//! pages) and a Zipf trace, played by this test re-executed as its player (zmem-testkit) inside a
//! memory cgroup of half the touched pages (plus the player's own memory), with a fresh kernel zram swap; then the replay.
//!
//! Asserts what must hold whatever the model's accuracy: the kernel really swapped (swap-outs
//! and a pool), the errors are the two sides' relative differences, the JSON has the keys the
//! command documents, the replay read back every page it wrote out, and nothing was left behind
//! (our cgroup and device are gone), also after a run interrupted (as SIGINT or SIGTERM would) in
//! the middle of the player's accesses. A live test (`#[ignore]`, run by scripts/test's live pass): skips, reported by zmem-testkit, without root, kernel zram or a memory
//! cgroup.

use std::time::Duration;

use zmem_experiments::NoProgress;
use zmem_kernel::harness as live;
use zmem_pages::access::accesses;
use zmem_pages::generate::mixed;
use zmem_pages::trace::generate::{Options, generate};
use zmem_validate::replay::{self as validate, ValidateConfig, relative_error};

/// The player: the kernel's side of the run, on this process's stdin and stdout.
fn player() {
    if let Err(e) = validate::player::run_stdio() {
        eprintln!("player: {e}");
        std::process::exit(2);
    }
}

/// Half the touched pages, plus room for the player itself (this test binary: its code,
/// harness threads and stacks are charged to the cgroup too); one kernel run, lzo-rle.
fn half_the_touched(touched: u64) -> ValidateConfig {
    ValidateConfig {
        ram_bytes: touched / 2 * 4096 + (1 << 20),
        algorithm: "lzo-rle".into(),
        page_size: 4096,
        timeout: Duration::from_secs(120),
        kernel_runs: 1,
        flush_stats: true,
        flush_through_warm_up: false,
        file: None,
    }
}

/// One validation, this test re-executed as the player; its JSON printed.
fn run_once(
    pages: &[u8],
    trace: &[zmem_pages::access::Access],
    cfg: &ValidateConfig,
) -> validate::Validation {
    let player = zmem_testkit::reexec_fn("player", "");
    let go = std::sync::atomic::AtomicBool::new(false);
    let v = validate::run(pages, trace, cfg, &player, &go, &NoProgress).expect("validate");
    eprintln!("{}", serde_json::to_string_pretty(&v).unwrap());
    v
}

#[test]
#[ignore = "live: needs root, kernel zram and a memory cgroup (scripts/test runs it)"]
fn validate_replay_on_the_live_kernel() {
    zmem_testkit::child("player", |_| player());
    let Some(_live) = zmem_testkit::live(live::unavailable_reason()) else { return };
    let n = 4096;
    let set = mixed::generate(n, 4096, 11).unwrap();
    let trace = generate(&Options {
        pages: n as u64,
        accesses: 40_000,
        working_set: 2048,
        phases: 2,
        zipf: 0.9,
        write_fraction: 0.3,
        mean_gap_ns: 1000,
        bursts_per_phase: 1,
        idle_ns: 0,
        seed: 5,
        ..Options::default()
    })
    .unwrap();
    let trace = accesses(&trace);
    let mut seen = std::collections::HashSet::new();
    let touched = trace.iter().filter(|a| seen.insert(a.page)).count() as u64;
    let cfg = half_the_touched(touched);
    let player = zmem_testkit::reexec_fn("player", "");
    let v = run_once(set.bytes(), &trace, &cfg);

    assert_eq!(v.setup.touched_pages, touched);
    assert!(v.kernel.swap_outs > 0, "the kernel swapped nothing out: {:?}", v.kernel_run);
    assert!(v.kernel.peak_pool_bytes > 0);
    assert!(v.kernel.peak_pool_bytes >= v.kernel.final_pool_bytes);
    assert!(v.zmem.swap_outs > 0 && v.zmem.peak_pool_bytes > 0);
    assert!(v.verified);
    assert_eq!(v.error.swap_outs, relative_error(v.zmem.swap_outs, v.kernel.swap_outs));
    assert_eq!(v.error.swap_ins, relative_error(v.zmem.swap_ins, v.kernel.swap_ins));
    assert_eq!(
        v.error.peak_pool_bytes,
        relative_error(v.zmem.peak_pool_bytes, v.kernel.peak_pool_bytes)
    );
    assert_eq!(
        v.error.final_pool_bytes,
        relative_error(v.zmem.final_pool_bytes, v.kernel.final_pool_bytes)
    );

    let json = serde_json::to_value(&v).unwrap();
    for side in ["kernel", "zmem", "error"] {
        for key in ["swap_outs", "swap_ins", "peak_pool_bytes", "final_pool_bytes"] {
            assert!(json[side].get(key).is_some(), "{side}.{key} missing: {json}");
        }
    }
    assert_eq!(json["kernel"]["swap_outs"], v.kernel.swap_outs);
    // zram is SWP_SYNCHRONOUS_IO: the replay reads nothing ahead; the kernel's vmstat deltas
    // (system-wide) are read on both ends of the accesses.
    assert_eq!((v.readahead.zmem.swap_ra, v.readahead.zmem.swap_ra_hit), (0, 0));
    assert!(v.readahead.kernel.is_some(), "/proc/vmstat has swap_ra: {json}");
    assert!(json["readahead"]["kernel"]["swap_ra"].is_u64(), "{json}");

    // Nothing of ours is left: the cgroup directory is gone, the device is not swapped on.
    assert!(!std::path::Path::new(&v.kernel_run.cgroup).exists(), "{} left", v.kernel_run.cgroup);
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap();
    let dev = format!("{} ", v.kernel_run.device);
    assert!(!swaps.lines().any(|l| l.starts_with(&dev)), "{dev} left swapped on");

    // Interrupted while the player runs: the run fails with `Interrupted` and removes its
    // cgroup, swap area and device. Its cgroup is found by name (this process's id), its device
    // as the zram swap area that appeared meanwhile.
    let root = std::path::Path::new(&v.kernel_run.cgroup).parent().unwrap().to_path_buf();
    let prefix = format!("zmem-{}-", std::process::id());
    let zram_swaps = || -> Vec<String> {
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap();
        swaps
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|d| d.starts_with("/dev/zram"))
            .map(String::from)
            .collect()
    };
    let before = zram_swaps();
    // Ten times the trace, so the player is still busy when the stop comes.
    let long: Vec<_> = (0..10).flat_map(|_| trace.iter().copied()).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let seen: std::sync::Mutex<Option<(std::path::PathBuf, Vec<String>)>> = Default::default();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let until = std::time::Instant::now() + Duration::from_secs(60);
            while std::time::Instant::now() < until {
                let mine = std::fs::read_dir(&root).unwrap().flatten().find(|e| {
                    e.file_name().to_string_lossy().starts_with(&prefix)
                        && std::fs::read_to_string(e.path().join("cgroup.procs"))
                            .is_ok_and(|p| !p.trim().is_empty())
                });
                if let Some(e) = mine {
                    // The player is in its cgroup: let it run a moment, then interrupt.
                    std::thread::sleep(Duration::from_millis(100));
                    let new: Vec<String> =
                        zram_swaps().into_iter().filter(|d| !before.contains(d)).collect();
                    *seen.lock().unwrap() = Some((e.path(), new));
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        validate::run(set.bytes(), &long, &cfg, &player, &stop, &NoProgress)
    });
    assert!(
        matches!(r, Err(zmem_experiments::LabError::Kernel(zmem_kernel::KernelError::Interrupted))),
        "{r:?}"
    );
    let (cgroup, devices) = seen.into_inner().unwrap().expect("the player's cgroup was seen");
    assert!(!cgroup.exists(), "{} left after the interruption", cgroup.display());
    assert!(!devices.is_empty(), "no new zram swap area was seen during the run");
    for d in devices {
        assert!(!zram_swaps().contains(&d), "{d} left swapped on after the interruption");
        let block = format!("/sys/block/{}", d.trim_start_matches("/dev/"));
        assert!(!std::path::Path::new(&block).exists(), "{block} left after the interruption");
    }
}

/// Page cache: a trace that also reads a file of 2,048 pages. The player maps the file the run
/// made (out of the page cache at the start), and each of its file faults is either a page's
/// first read or a refault the cgroup counts (`workingset_refault_file`: every evicted page
/// left a shadow), up to the statistics' flush lag; both sides refault, and the file is
/// removed at the end.
#[test]
#[ignore = "live: needs root, kernel zram and a memory cgroup (scripts/test runs it)"]
fn validate_replay_with_page_cache_on_the_live_kernel() {
    zmem_testkit::child("player", |_| player());
    let Some(_live) = zmem_testkit::live(live::unavailable_reason()) else { return };
    let n = 2048;
    let set = mixed::generate(n, 4096, 12).unwrap();
    let o = Options {
        pages: n as u64,
        accesses: 40_000,
        working_set: 1024,
        phases: 2,
        bursts_per_phase: 1,
        idle_ns: 0,
        seed: 6,
        file_pages: 2048,
        file_fraction: 0.3,
        ..Options::default()
    };
    let trace = accesses(&generate(&o).unwrap());
    let mut seen = std::collections::HashSet::new();
    let touched = trace.iter().filter(|a| seen.insert((a.file, a.page))).count() as u64;
    let file_read = seen.iter().filter(|(file, _)| *file).count() as u64;
    let v = run_once(set.bytes(), &trace, &half_the_touched(touched));
    let k = &v.kernel_run;
    assert_eq!(k.file_reads, trace.iter().filter(|a| a.file).count() as u64);
    // Each file fault is a first read or a refault; memory.stat is flushed only once more
    // than `MEMCG_CHARGE_BATCH * num_online_cpus()` updates are pending (6.18 mm/memcontrol.c
    // `memcg_vmstats_needs_flush()`), so the count read may lag by that many.
    let lag = 64 * std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let refaults = k.file_faults.checked_sub(file_read).expect("a fault per first read");
    assert!(refaults.abs_diff(k.file_refaults) <= lag, "{refaults} refaults: {k:?}");
    assert!(k.file_refaults > 0 && v.zmem.file_refaults > 0, "{:?} {:?}", v.kernel, v.zmem);
    assert_eq!(v.zmem.file_faults, file_read + v.zmem.file_refaults);
    assert_eq!(v.error.file_refaults, relative_error(v.zmem.file_refaults, v.kernel.file_refaults));
    let file = format!("/var/tmp/zmem-validate-file-{}.pages", std::process::id());
    assert!(!std::path::Path::new(&file).exists(), "{file} left");
}
