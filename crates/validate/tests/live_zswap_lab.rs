//! `validate lab` with one small zswap configuration on the live kernel, end to end: 8 MiB of
//! zmem's `mixed` pages and a Zipf trace played by this test re-executed as its player, the zram
//! candidates as before, then zswap (lzo, the kernel's defaults otherwise) in front of a swap
//! file on a loop device of the tool's.
//!
//! Asserts: the zswap configuration ran and swapped (zswpout > 0, stored pages > 0); the lab's
//! predicted `stored_pages` and `pool_total_size` lie within [`TOLERANCE`] of the range the
//! kernel's three runs spanned. Stated: the goal for zswap fields is 10 %, at the scale of
//! issue 43 (BENCHMARKS.md); these two are levels at the run's end that the kernel's reclaim
//! sets, and at this test's 8 MiB they vary from run to run and machine to machine (639 to
//! 718 stored pages over twelve runs on two machines of this kind, against the lab's 612), so
//! the test allows 20 % beyond the kernel's own range: a wrong compressor, size class or
//! replay is off by more. They are also system-wide, and the boot's kdamond may page other
//! processes out into our swap area during the run, which `foreign_pages_bound` bounds, so the
//! range is widened by those pages too. zswap's parameters
//! read the same after as before (and the run says `params_restored`); no swap area, loop
//! device or swap file is left; the debugfs counters were read (debugfs mounted for the run as
//! `--mount-debugfs` does); the verdict check names a pick on both sides. Skips, saying why,
//! without root, kernel zram, a memory cgroup or zswap, or where a swap area is active (the tool
//! refuses then: the refusal has its own test in crates/cli/tests/validate_zswap.rs).

use std::time::Duration;

use zmem_kernel::harness as live;
use zmem_lab::NoProgress;
use zmem_pages::access::accesses;
use zmem_pages::generate::mixed;
use zmem_pages::trace::generate::{Options, generate};
use zmem_validate::lab::{self as validate_lab, LabValidateConfig};
use zmem_validate::zswap_params;

/// How far beyond the kernel's range of runs the prediction of stored_pages and
/// pool_total_size may lie, relatively (module doc).
const TOLERANCE: f64 = 0.20;

fn player() {
    if let Err(e) = zmem_validate::player::run_stdio() {
        eprintln!("player: {e}");
        std::process::exit(2);
    }
}

fn why_not() -> Option<String> {
    live::unavailable_reason().or_else(|| {
        (!std::path::Path::new(zswap_params::PARAMS_DIR).is_dir())
            .then(|| "no zswap (CONFIG_ZSWAP off)".to_string())
    })
}

#[test]
#[ignore = "live: needs root, kernel zram, zswap, a loop device and a memory cgroup (scripts/test runs it)"]
fn one_zswap_configuration_end_to_end() {
    zmem_testkit::child("player", |_| player());
    let Some(live) = zmem_testkit::live(why_not()) else { return };
    if std::fs::read_to_string("/proc/swaps").unwrap().lines().count() > 1 {
        return live.skip_optional("a swap area is active: the zswap runs refuse then");
    }
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
        ram_bytes: touched / 2 * 4096 + (1 << 20),
        page_size: 4096,
        timeout: Duration::from_secs(120),
        // The kernel's figures are the median of three runs: one run's swap-outs vary by tens
        // of percent at this size (1,407 and 2,423 zswpout in two runs back to back).
        kernel_runs: 3,
        flush_stats: true,
        primary: "lzo-rle".into(),
        zswap: vec![zswap_params::parse("lzo").unwrap()],
        swap_dir: "/var/tmp".into(),
    };
    let player = zmem_testkit::reexec_fn("player", "");
    let caps = zmem_kernel::caps::read();
    let params0 = zswap_params::snapshot(std::path::Path::new(zswap_params::PARAMS_DIR)).unwrap();
    let swaps0 = std::fs::read_to_string("/proc/swaps").unwrap();
    let go = std::sync::atomic::AtomicBool::new(false);
    // debugfs mounted for the run where it is not (and unmounted after), as `--mount-debugfs`
    // does: the debugfs counters are what is checked (meminfo's stand-ins have a unit test).
    let (v, notes) = zmem_kernel::zswap_state::with_debugfs_mounted(|| {
        validate_lab::run(set.bytes(), &trace, &cfg, &caps, &player, &go, &NoProgress)
    });
    eprintln!("{notes:?}");
    let params1 = zswap_params::snapshot(std::path::Path::new(zswap_params::PARAMS_DIR)).unwrap();
    assert_eq!(params1, params0, "zswap's parameters not restored");
    assert_eq!(std::fs::read_to_string("/proc/swaps").unwrap(), swaps0, "swap areas left");
    let v = v.expect("validate lab");
    let z = v.zswap.as_ref().expect("the zswap part");
    eprintln!("{}", serde_json::to_string_pretty(z).unwrap());
    assert!(z.not_run.is_empty(), "{:?}", z.not_run);
    assert_eq!(z.configurations.len(), 1);
    let c = &z.configurations[0];
    let (p, k, r) = (&c.predicted, &c.kernel, &c.kernel_run);
    assert!(r.params_restored);
    assert!(r.missing.is_empty(), "{:?}", r.missing);
    assert!(r.stored_pages.is_some() && r.debugfs_deltas.contains_key("written_back_pages"));
    assert!(k.zswpout > 0 && k.stored_pages > 0, "the kernel stored nothing: {k:?}");
    assert!(p.stored_pages > 0 && c.verified, "{p:?}");
    let slack = r.foreign_pages_bound as f64;
    let within = |pred: u64, runs: &[u64], per_page: f64| {
        let (lo, hi) = (*runs.iter().min().unwrap() as f64, *runs.iter().max().unwrap() as f64);
        let pred = pred as f64;
        pred >= lo * (1.0 - TOLERANCE) - slack * per_page
            && pred <= hi * (1.0 + TOLERANCE) + slack * per_page
    };
    // Every run that did not fail is reported.
    let ran = c.kernel_runs_stored_pages.len();
    assert_eq!(ran + c.kernel_failures.len(), 3, "{c:?}");
    assert_eq!(c.kernel_runs_pool_total_size.len(), ran);
    assert!(c.kernel_runs_stored_pages.contains(&k.stored_pages));
    assert!(c.kernel_runs_pool_total_size.contains(&k.pool_total_size));
    let stored = &c.kernel_runs_stored_pages;
    assert!(within(p.stored_pages, stored, 1.0), "stored_pages {p:?} vs runs {stored:?}");
    let per_page = k.pool_total_size as f64 / k.stored_pages.max(1) as f64;
    let pools = &c.kernel_runs_pool_total_size;
    assert!(within(p.pool_total_size, pools, per_page), "pool {p:?} vs runs {pools:?}");
    // Nothing of the run is left: its loop device is detached and its file removed.
    assert!(!std::path::Path::new(&r.swap_file).exists(), "{} left", r.swap_file);
    let loops = std::process::Command::new("losetup").arg("-a").output().unwrap();
    assert!(!String::from_utf8_lossy(&loops.stdout).contains(&r.swap_file));
    let verdict = z.verdict.as_ref().expect("zram and zswap ran: a verdict check");
    for pick in [&verdict.lab_pick, &verdict.kernel_served_better] {
        assert!(["zram", "zswap", "tie"].contains(&pick.as_str()), "{verdict:?}");
    }
    let json = serde_json::to_value(&v).unwrap();
    for key in ["stored_pages", "pool_total_size", "written_back_pages", "zswpin", "zswpout"] {
        assert!(json["zswap"]["configurations"][0]["kernel"][key].is_u64(), "{key}");
        assert!(json["zswap"]["configurations"][0]["error"].get(key).is_some(), "{key}");
    }
}
