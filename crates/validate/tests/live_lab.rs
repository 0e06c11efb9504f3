//! `validate lab` end to end on the live kernel: a small page set (8 MiB of zmem's `mixed`
//! pages) and a Zipf trace, played by this test re-executed as its player (zmem-testkit), once per
//! configuration of the lab's candidate list the running kernel can run, plus the baseline.
//!
//! Asserts what must hold whatever the lab's accuracy: every configuration run is one of the
//! lab's candidates that the kernel runs (by `zmem_kernel::caps::read()`), every other candidate
//! is listed as not run with a reason, the kernel really swapped and timed swap-ins for each,
//! the errors are the two sides' relative differences, the JSON has the documented keys, the
//! orders are permutations of the configurations run, and nothing was left behind (the zram
//! devices and /proc/swaps are as before, every cgroup made is gone). Skips, printing why,
//! without root, kernel zram or a memory cgroup.

use std::time::Duration;

use zmem_kernel::harness as live;
use zmem_lab::NoProgress;
use zmem_pages::access::accesses;
use zmem_pages::generate::mixed;
use zmem_pages::trace::generate::{Options, generate};
use zmem_validate::lab::{self as validate_lab, LabValidateConfig};
use zmem_validate::replay::relative_error;

/// The player: the kernel's side of the run, on this process's stdin and stdout.
fn player() {
    if let Err(e) = zmem_validate::player::run_stdio() {
        eprintln!("player: {e}");
        std::process::exit(2);
    }
}

fn zram_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "live: needs root, kernel zram and a memory cgroup (scripts/test runs it)"]
fn validate_lab_on_the_live_kernel() {
    zmem_testkit::child("player", |_| player());
    let Some(_live) = zmem_testkit::live(live::unavailable_reason()) else { return };
    let n = 2048;
    let set = mixed::generate(n, 4096, 13).unwrap();
    let trace = generate(&Options {
        pages: n as u64,
        accesses: 20_000,
        working_set: 1024,
        phases: 2,
        zipf: 0.9,
        write_fraction: 0.3,
        mean_gap_ns: 1000,
        bursts_per_phase: 1,
        idle_ns: 0,
        seed: 9,
        ..Options::default()
    })
    .unwrap();
    let trace = accesses(&trace);
    let mut seen = std::collections::HashSet::new();
    let touched = trace.iter().filter(|a| seen.insert(a.page)).count() as u64;
    let cfg = LabValidateConfig {
        // Half the touched pages, plus room for the player (this test binary) itself.
        ram_bytes: touched / 2 * 4096 + (1 << 20),
        page_size: 4096,
        timeout: Duration::from_secs(120),
        kernel_runs: 1,
        flush_stats: true,
        primary: "lzo-rle".into(),
        zswap: Vec::new(),
        swap_dir: std::path::PathBuf::from("/var/tmp"),
    };
    let player = zmem_testkit::reexec_fn("player", "");
    let caps = zmem_kernel::caps::read();
    let (devices0, swaps0) = (zram_devices(), std::fs::read_to_string("/proc/swaps").unwrap());
    let go = std::sync::atomic::AtomicBool::new(false);
    let v = validate_lab::run(set.bytes(), &trace, &cfg, &caps, &player, &go, &NoProgress)
        .expect("validate lab");
    eprintln!("{}", serde_json::to_string_pretty(&v).unwrap());

    // Every candidate is either run (and runnable here) or listed with a reason.
    let candidates = zmem_lab::candidates("lzo-rle");
    assert_eq!(v.configurations.len() + v.not_run.len(), candidates.len());
    assert!(!v.configurations.is_empty());
    for c in &v.configurations {
        let p = candidates.iter().find(|p| p.name == c.config).expect("a lab candidate");
        assert!(validate_lab::runnable(p, &caps).is_ok(), "{} is not runnable here", c.config);
        assert!(caps.zram_algorithms.contains(&p.algo), "{}", c.config);
        assert!(c.kernel.swap_outs > 0, "{}: the kernel swapped nothing: {:?}", c.config, c.kernel);
        assert!(c.kernel.peak_pool_bytes >= c.kernel.final_pool_bytes);
        assert!(c.kernel_run.timed_swap_ins > 0 && c.kernel.swap_in_p50_ns > 0, "{}", c.config);
        assert!(c.kernel.swap_in_p99_ns >= c.kernel.swap_in_p50_ns);
        assert!(c.kernel_run.player_cpu_secs > 0.0);
        assert!(c.predicted.swap_outs > 0 && c.predicted.cpu_seconds > 0.0, "{}", c.config);
        assert!(c.verified, "{}", c.config);
        assert!(c.kernel_set_pool_bytes > 0, "{}", c.config);
        assert_eq!(c.lab_pool_error, relative_error(c.lab_pool_bytes, c.kernel_set_pool_bytes));
        assert_eq!(c.error.swap_ins, relative_error(c.predicted.swap_ins, c.kernel.swap_ins));
        assert_eq!(c.error.pool_bytes, relative_error(c.predicted.pool_bytes, c.kernel.pool_bytes));
        assert!(
            !std::path::Path::new(&c.kernel_run.cgroup).exists(),
            "{} left",
            c.kernel_run.cgroup
        );
    }
    for r in &v.not_run {
        let p = candidates.iter().find(|p| p.name == r.config).expect("a lab candidate");
        assert!(validate_lab::runnable(p, &caps).is_err() && !r.reason.is_empty());
    }
    let mut names: Vec<&str> = v.configurations.iter().map(|c| c.config.as_str()).collect();
    names.sort_unstable();
    for o in [&v.lab_order, &v.kernel_order] {
        let mut o: Vec<&str> = o.iter().map(String::as_str).collect();
        o.sort_unstable();
        assert_eq!(o, names);
    }
    assert_eq!(v.baseline.swap_outs, 0, "the baseline must not reclaim");
    // The kernel's own swap work, measured on same-filled pages: they swapped, and the
    // measurement is a time per swap-out and per swap-in fault, beside the model's figures.
    let o = &v.swap_overhead;
    assert!(!o.runs.is_empty() && o.runs.iter().all(|r| r.swap_outs > 0), "{o:?}");
    let m = o.measured.expect("same-filled pages swapped, so the overhead is measured");
    assert!(m.fault_ns_per_swap_in > 0.0 && m.reclaim_ns_per_swap_out >= 0.0, "{m:?}");
    assert_eq!(o.model, zmem_lab::speed::kernel_speed().overhead);
    assert!(o.probe_ns.is_some(), "this machine's fault probe ran: {o:?}");
    for c in &v.configurations {
        assert_eq!(c.kernel_runs_cpu_secs.len(), c.kernel_runs.len(), "{}", c.config);
        assert_eq!(c.baseline_runs_fault_cpu_secs.len(), c.kernel_runs.len(), "{}", c.config);
    }

    let json = serde_json::to_value(&v).unwrap();
    let figures = [
        "pool_bytes",
        "peak_pool_bytes",
        "final_pool_bytes",
        "swap_outs",
        "swap_ins",
        "cpu_seconds",
        "swap_in_p50_ns",
        "swap_in_p99_ns",
    ];
    for c in json["configurations"].as_array().unwrap() {
        assert!(c["config"].is_string());
        for side in ["predicted", "kernel", "error"] {
            for key in figures {
                assert!(c[side].get(key).is_some(), "{side}.{key} missing: {c}");
            }
        }
    }
    assert!(json["same_order"].is_boolean());

    // Nothing of ours is left: the same zram devices and swap areas as before.
    assert_eq!(zram_devices(), devices0, "zram devices left behind");
    assert_eq!(std::fs::read_to_string("/proc/swaps").unwrap(), swaps0, "swap areas left on");
}
