//! [`DamonPageout`] against fake sysfs trees (`record::damon::fake`): the files the kernel would
//! make when the `nr_*` files are written are there from the start, each value different from
//! what `start` writes, so every write is seen.

use super::*;
use crate::record::damon::fake::Fake;

const S: &str = "kdamonds/0/contexts/0/schemes/0";
const REGIONS: &str = "kdamonds/0/contexts/0/targets/0/regions";

/// /proc/iomem as root sees it: two System RAM ranges, one nested entry that is not top-level.
const IOMEM: &str = "00000000-00000fff : Reserved
00001000-0009fbff : System RAM
000f0000-000fffff : Reserved
00100000-bffdffff : System RAM
  01000000-01ffffff : Kernel code
  02000000-020fffff : System RAM
100000000-63fffffff : System RAM
";

/// A free interface, with the pageout scheme's files and `filters` filter directories.
fn tree(avail: &str, filters: usize) -> Fake {
    let f = Fake::new(1, avail, &[]);
    f.put("kdamonds/0/pid", "4242");
    f.put(&format!("{REGIONS}/nr_regions"), "0");
    for i in 0..3 {
        f.put(&format!("{REGIONS}/{i}/start"), "7");
        f.put(&format!("{REGIONS}/{i}/end"), "7");
    }
    for (file, v) in [
        ("quotas/ms", "7"),
        ("quotas/bytes", "7"),
        ("quotas/reset_interval_ms", "7"),
        ("quotas/goals/nr_goals", "0"),
        ("quotas/goals/0/target_metric", "user_input"),
        ("quotas/goals/0/target_value", "7"),
        ("filters/nr_filters", "0"),
    ] {
        f.put(&format!("{S}/{file}"), v);
    }
    for i in 0..filters {
        for (file, v) in [("type", "young"), ("memcg_path", ""), ("matching", "N"), ("allow", "N")]
        {
            f.put(&format!("{S}/filters/{i}/{file}"), v);
        }
    }
    f
}

fn scheme(exclude: &[&str]) -> DamonPageout {
    DamonPageout {
        cold_age_secs: 120,
        cpu_budget_percent: 0.5,
        psi_some_limit_percent: 0.1,
        exclude_cgroups: exclude.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn system_ram_is_the_top_level_ranges_end_exclusive() {
    let r = system_ram(IOMEM);
    assert_eq!(r, [(0x1000, 0x9fc00), (0x100000, 0xbffe0000), (0x1_0000_0000, 0x6_4000_0000)]);
    // What a reader without CAP_SYS_ADMIN sees: every address 0.
    assert!(system_ram("00000000-00000000 : System RAM\n").is_empty());
    assert!(system_ram("garbage\nzz-yy : System RAM\n").is_empty());
}

#[test]
fn start_writes_the_scheme_and_stop_removes_only_ours() {
    let f = tree("vaddr fvaddr paddr", 2);
    let pid = scheme(&["/system.slice"]).start(f.admin(), IOMEM).expect("started");
    assert_eq!(pid, 4242);
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "1");
    assert_eq!(f.get("kdamonds/0/contexts/0/operations"), "paddr");
    assert_eq!(f.get("kdamonds/0/contexts/0/monitoring_attrs/intervals/aggr_us"), "100000");
    assert_eq!(f.get(&format!("{REGIONS}/nr_regions")), "3");
    assert_eq!(f.get(&format!("{REGIONS}/1/start")), 0x100000.to_string());
    assert_eq!(f.get(&format!("{REGIONS}/2/end")), 0x6_4000_0000u64.to_string());
    assert_eq!(f.get(&format!("{S}/action")), "pageout");
    let pattern = |w: &str, m: &str| f.get(&format!("{S}/access_pattern/{w}/{m}"));
    assert_eq!(
        (pattern("nr_accesses", "min"), pattern("nr_accesses", "max")),
        ("0".into(), "0".into())
    );
    assert_eq!(pattern("age", "min"), "1200", "120 s in 100 ms aggregation intervals");
    assert_eq!(f.get(&format!("{S}/quotas/ms")), "5", "0.5 % of 1000 ms");
    assert_eq!(f.get(&format!("{S}/quotas/reset_interval_ms")), "1000");
    assert_eq!(f.get(&format!("{S}/quotas/goals/0/target_metric")), "some_mem_psi_us");
    assert_eq!(f.get(&format!("{S}/quotas/goals/0/target_value")), "1000", "0.1 % of 1 s in us");
    assert_eq!(f.get(&format!("{S}/filters/nr_filters")), "2");
    let filter = |i: usize, w: &str| f.get(&format!("{S}/filters/{i}/{w}"));
    assert_eq!(
        [filter(0, "type"), filter(0, "memcg_path"), filter(0, "matching"), filter(0, "allow")],
        ["memcg", "/system.slice", "Y", "N"]
    );
    assert_eq!([filter(1, "type"), filter(1, "matching"), filter(1, "allow")], ["anon", "Y", "Y"]);
    assert_eq!(f.get("kdamonds/0/state"), "on");
    // The lab reads it back as a scheme that pages out some anonymous memory (the cgroup
    // filter depends on the page) idle for T.
    let seen = crate::record::damon::anon_pageout(f.admin());
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].min_age_secs, seen[0].all), (120.0, false));
    // Another pid is not ours: nothing is touched.
    assert!(!stop(f.admin(), 4243).expect("read"));
    assert_eq!(
        (f.get("kdamonds/0/state"), f.get("kdamonds/nr_kdamonds")),
        ("on".into(), "1".into())
    );
    assert!(stop(f.admin(), 4242).expect("stopped"));
    assert_eq!(
        (f.get("kdamonds/0/state"), f.get("kdamonds/nr_kdamonds")),
        ("off".into(), "0".into())
    );
    // Without exclusions every anonymous page passes: the lab then says the machine reclaims
    // its anonymous memory already, and adds nothing.
    scheme(&[]).start(f.admin(), IOMEM).expect("started again");
    assert!(crate::record::damon::anon_pageout(f.admin()).iter().all(|a| a.all));
    assert!(stop(f.admin(), 4242).expect("stopped"));
    // Gone already: nothing to do.
    assert!(!stop(f.admin(), 4242).expect("read"));
}

#[test]
fn a_kdamond_of_someone_else_is_never_touched() {
    let f = tree("paddr", 1);
    f.put("kdamonds/nr_kdamonds", "1");
    f.put("kdamonds/0/state", "on");
    let e = scheme(&[]).start(f.admin(), IOMEM).expect_err("taken").to_string();
    assert!(e.contains("kdamond 0 is running"), "{e}");
    assert_eq!(
        (f.get("kdamonds/0/state"), f.get("kdamonds/nr_kdamonds")),
        ("on".into(), "1".into())
    );
    assert_eq!(f.get(&format!("{S}/action")), "pageout", "the fake's, unwritten");
    assert_eq!(f.get(&format!("{S}/quotas/ms")), "7");
}

#[test]
fn a_failure_midway_removes_what_was_made() {
    // No paddr: refused once the context shows its operations, and ours removed.
    let f = tree("vaddr", 1);
    let e = scheme(&[]).start(f.admin(), IOMEM).expect_err("no paddr").to_string();
    assert!(e.contains("no paddr"), "{e}");
    assert_eq!(
        (f.get("kdamonds/0/state"), f.get("kdamonds/nr_kdamonds")),
        ("off".into(), "0".into())
    );
    // A filter directory the kernel did not make (one exclusion more than the tree has).
    let f = tree("paddr", 1);
    let e = scheme(&["/a"]).start(f.admin(), IOMEM).expect_err("no filters/1").to_string();
    assert!(e.contains("filters/1/type"), "{e}");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
    // No System RAM: refused before anything is written.
    let f = tree("paddr", 1);
    let e = scheme(&[]).start(f.admin(), "").expect_err("no RAM").to_string();
    assert!(e.contains("System RAM"), "{e}");
    assert_eq!(f.get("kdamonds/0/contexts/nr_contexts"), "0");
}

#[test]
fn numbers_out_of_range_are_refused_before_any_write() {
    let f = tree("paddr", 1);
    for bad in [
        DamonPageout { cold_age_secs: 0, ..scheme(&[]) },
        DamonPageout { cpu_budget_percent: 0.0, ..scheme(&[]) },
        DamonPageout { psi_some_limit_percent: f64::NAN, ..scheme(&[]) },
        DamonPageout { cpu_budget_percent: 101.0, ..scheme(&[]) },
    ] {
        assert!(bad.start(f.admin(), IOMEM).is_err(), "{bad:?}");
        assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
    }
    // The least quota is 1 ms: a budget under 0.1 % does not round to none.
    let tiny = DamonPageout { cpu_budget_percent: 0.01, ..scheme(&[]) };
    tiny.start(f.admin(), IOMEM).expect("started");
    assert_eq!(f.get(&format!("{S}/quotas/ms")), "1");
}

#[test]
fn a_pid_that_cannot_be_recorded_stops_the_kdamond_again() {
    let f = tree("paddr", 1);
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("run/zmem/damon.pid");
    let pid = scheme(&[]).start_recorded(f.admin(), IOMEM, &pid_file).expect("started");
    assert_eq!(recorded_pid(&pid_file).expect("recorded"), pid);
    assert!(stop(f.admin(), pid).expect("stopped"));
    // Its directory is a file: the record fails, and the kdamond does not stay.
    std::fs::write(dir.path().join("blocked"), "").unwrap();
    let e = scheme(&[])
        .start_recorded(f.admin(), IOMEM, &dir.path().join("blocked/damon.pid"))
        .expect_err("cannot record")
        .to_string();
    assert!(e.contains("stopped again"), "{e}");
    assert_eq!(
        (f.get("kdamonds/0/state"), f.get("kdamonds/nr_kdamonds")),
        ("off".into(), "0".into())
    );
    std::fs::write(&pid_file, "-1\n").unwrap();
    assert!(recorded_pid(&pid_file).is_err());
}

#[test]
fn a_tasks_cpu_is_its_user_and_system_ticks() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("77")).unwrap();
    // Fields after the name: state, ppid, ... utime is the 12th, stime the 13th.
    let stat = "77 (kdamond.0 x) S 2 0 0 0 -1 2129984 0 0 0 0 250 150 0 0 20 0 1 0 9 0 0\n";
    std::fs::write(d.path().join("77/stat"), stat).unwrap();
    // SAFETY: as in task_cpu_seconds.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    assert_eq!(task_cpu_seconds(d.path(), 77), Some(400.0 / hz));
    assert_eq!(task_cpu_seconds(d.path(), 78), None, "gone");
    // This process's own, read from the real /proc: it has run.
    let me = i64::from(std::process::id());
    assert!(task_cpu_seconds(Path::new("/proc"), me).is_some());
}
