//! [`Kdamond`] against fake sysfs trees: plain files cannot react to writes, so a tree holds
//! from the start the directories the kernel would make when the `nr_*` files are written, and
//! `tried_regions` already holds the regions an update would bring. Other values start
//! different from what `start` writes, so the tests see each write.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Attrs, Kdamond};
use zmem_pages::trace::convert::DamonRegion;

pub(crate) struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    /// No kdamond (`nr_kdamonds` 0), a kdamond 0 tree with `targets` targets and `avail` as
    /// `avail_operations`, and `tried` regions (number, start, end, nr_accesses).
    pub(crate) fn new(targets: usize, avail: &str, tried: &[(u32, u64, u64, u32)]) -> Self {
        let f = Self { dir: tempfile::tempdir().unwrap() };
        f.put("kdamonds/nr_kdamonds", "0");
        f.put("kdamonds/0/state", "off");
        f.put("kdamonds/0/pid", "-1");
        f.put("kdamonds/0/contexts/nr_contexts", "0");
        let c = "kdamonds/0/contexts/0";
        f.put(&format!("{c}/avail_operations"), avail);
        f.put(&format!("{c}/operations"), "paddr");
        for (file, v) in [
            ("intervals/sample_us", "1"),
            ("intervals/aggr_us", "1"),
            ("intervals/update_us", "1"),
            ("nr_regions/min", "1"),
            ("nr_regions/max", "1"),
        ] {
            f.put(&format!("{c}/monitoring_attrs/{file}"), v);
        }
        f.put(&format!("{c}/targets/nr_targets"), "0");
        for i in 0..targets {
            f.put(&format!("{c}/targets/{i}/pid_target"), "0");
            f.put(&format!("{c}/targets/{i}/regions/nr_regions"), "0");
        }
        f.put(&format!("{c}/schemes/nr_schemes"), "0");
        let s = format!("{c}/schemes/0");
        f.put(&format!("{s}/action"), "pageout");
        for what in ["sz", "nr_accesses", "age"] {
            f.put(&format!("{s}/access_pattern/{what}/min"), "7");
            f.put(&format!("{s}/access_pattern/{what}/max"), "7");
        }
        f.put(&format!("{s}/tried_regions/total_bytes"), "0");
        for (n, start, end, nr) in tried {
            let r = format!("{s}/tried_regions/{n}");
            f.put(&format!("{r}/start"), &start.to_string());
            f.put(&format!("{r}/end"), &end.to_string());
            f.put(&format!("{r}/nr_accesses"), &nr.to_string());
            f.put(&format!("{r}/age"), "3");
        }
        f
    }

    pub(crate) fn admin(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn put(&self, rel: &str, value: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{value}\n")).unwrap();
    }

    pub(crate) fn get(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap().trim().to_string()
    }
}

const CTX: &str = "kdamonds/0/contexts/0";
const SCHEME: &str = "kdamonds/0/contexts/0/schemes/0";

fn attrs() -> Attrs {
    Attrs::for_interval(Duration::from_millis(100))
}

#[test]
fn start_writes_what_the_kernel_expects_and_drop_removes_it() {
    let f = Fake::new(2, "vaddr fvaddr paddr", &[]);
    let k = Kdamond::start(f.admin(), &[41, 42], &attrs()).unwrap();
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "1");
    assert_eq!(f.get("kdamonds/0/contexts/nr_contexts"), "1");
    assert_eq!(f.get(&format!("{CTX}/operations")), "vaddr");
    let ma = format!("{CTX}/monitoring_attrs");
    assert_eq!(f.get(&format!("{ma}/intervals/sample_us")), "5000");
    assert_eq!(f.get(&format!("{ma}/intervals/aggr_us")), "100000");
    assert_eq!(f.get(&format!("{ma}/intervals/update_us")), "1000000");
    assert_eq!(f.get(&format!("{ma}/nr_regions/min")), "10");
    assert_eq!(f.get(&format!("{ma}/nr_regions/max")), "1000");
    assert_eq!(f.get(&format!("{CTX}/targets/nr_targets")), "2");
    assert_eq!(f.get(&format!("{CTX}/targets/0/pid_target")), "41");
    assert_eq!(f.get(&format!("{CTX}/targets/1/pid_target")), "42");
    assert_eq!(f.get(&format!("{CTX}/schemes/nr_schemes")), "1");
    assert_eq!(f.get(&format!("{SCHEME}/action")), "stat");
    for (what, max) in [("sz", u64::MAX), ("nr_accesses", 4294967295), ("age", 4294967295)] {
        assert_eq!(f.get(&format!("{SCHEME}/access_pattern/{what}/min")), "0", "{what}");
        assert_eq!(f.get(&format!("{SCHEME}/access_pattern/{what}/max")), max.to_string());
    }
    assert_eq!(f.get("kdamonds/0/state"), "on");
    assert_eq!(k.max_nr_accesses(), 20);
    assert_eq!(k.pids(), [41, 42]);
    drop(k);
    assert_eq!(f.get("kdamonds/0/state"), "off");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
}

#[test]
fn snapshot_reads_the_regions_in_number_order_and_gives_each_its_target() {
    // Numbers 0, 1, 2, 10 (read as numbers, not names) with 3 missing; the address order
    // restarts at 10, where the second target begins.
    let tried = [
        (10, 0x1000, 0x3000, 4),
        (0, 0x5555_0000, 0x5556_0000, 20),
        (2, 0x7ff0_0000, 0x7fff_0000, 0),
        (1, 0x5556_0000, 0x6000_0000, 1),
    ];
    let f = Fake::new(2, "vaddr", &tried);
    let k = Kdamond::start(f.admin(), &[41, 42], &attrs()).unwrap();
    let r = k.snapshot().unwrap();
    let region = |pid, start, end, nr_accesses| DamonRegion { pid, start, end, nr_accesses };
    assert_eq!(
        r,
        [
            region(41, 0x5555_0000, 0x5556_0000, 20),
            region(41, 0x5556_0000, 0x6000_0000, 1),
            region(41, 0x7ff0_0000, 0x7fff_0000, 0),
            region(42, 0x1000, 0x3000, 4),
        ]
    );
    // The last command written: the regions are freed after reading.
    assert_eq!(f.get("kdamonds/0/state"), "clear_schemes_tried_regions");
    drop(k);
    assert_eq!(f.get("kdamonds/0/state"), "off");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
}

#[test]
fn a_malformed_region_file_is_an_error_naming_it() {
    let f = Fake::new(1, "vaddr", &[(0, 0x1000, 0x2000, 1), (1, 0x2000, 0x3000, 1)]);
    f.put(&format!("{SCHEME}/tried_regions/1/nr_accesses"), "lots");
    let k = Kdamond::start(f.admin(), &[41], &attrs()).unwrap();
    let e = k.snapshot().unwrap_err().to_string();
    assert!(e.contains("tried_regions/1/nr_accesses") && e.contains("lots"), "{e}");
    f.put(&format!("{SCHEME}/tried_regions/1/nr_accesses"), "1");
    f.put(&format!("{SCHEME}/tried_regions/1/end"), "4096");
    let e = k.snapshot().unwrap_err().to_string();
    assert!(e.contains("tried_regions/1") && e.contains("before its start"), "{e}");
    std::fs::remove_file(f.path(&format!("{SCHEME}/tried_regions/1/start"))).unwrap();
    let e = k.snapshot().unwrap_err().to_string();
    assert!(e.contains("tried_regions/1/start"), "{e}");
}

#[test]
fn a_stopped_kdamond_gives_no_snapshot_and_is_not_stopped_again() {
    let f = Fake::new(1, "vaddr", &[]);
    let k = Kdamond::start(f.admin(), &[41], &attrs()).unwrap();
    f.put("kdamonds/0/state", "off");
    let e = k.snapshot().unwrap_err().to_string();
    assert!(e.contains("has stopped"), "{e}");
    drop(k);
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
}

#[test]
fn start_refuses_where_a_kdamond_exists_and_writes_nothing() {
    for (state, says) in [("on", "kdamond 0 is running"), ("off", "would delete their")] {
        let f = Fake::new(1, "vaddr", &[]);
        f.put("kdamonds/nr_kdamonds", "1");
        f.put("kdamonds/0/state", state);
        let e = Kdamond::start(f.admin(), &[41], &attrs()).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
        assert_eq!(f.get("kdamonds/nr_kdamonds"), "1");
        assert_eq!(f.get("kdamonds/0/state"), state);
        assert_eq!(f.get("kdamonds/0/contexts/nr_contexts"), "0");
        assert_eq!(f.get(&format!("{CTX}/operations")), "paddr");
    }
}

#[test]
fn start_without_vaddr_removes_the_kdamond_it_made() {
    let f = Fake::new(1, "paddr", &[]);
    let e = Kdamond::start(f.admin(), &[41], &attrs()).unwrap_err().to_string();
    assert!(e.contains("CONFIG_DAMON_VADDR") && e.contains("avail_operations: paddr"), "{e}");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
    assert_eq!(f.get("kdamonds/0/state"), "off");
    assert_eq!(f.get(&format!("{CTX}/operations")), "paddr");
}

#[test]
fn a_failed_write_during_start_removes_the_kdamond_it_made() {
    let f = Fake::new(1, "vaddr", &[]);
    // Two targets asked for, but the tree has only target 0: writing target 1's pid fails.
    let e = Kdamond::start(f.admin(), &[41, 42], &attrs()).unwrap_err().to_string();
    assert!(e.contains("targets/1/pid_target"), "{e}");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
    assert_eq!(f.get("kdamonds/0/state"), "off");
}

#[test]
fn drop_leaves_a_list_someone_else_changed() {
    let f = Fake::new(1, "vaddr", &[]);
    let k = Kdamond::start(f.admin(), &[41], &attrs()).unwrap();
    f.put("kdamonds/nr_kdamonds", "2");
    drop(k);
    assert_eq!(f.get("kdamonds/0/state"), "off");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "2");
}

#[test]
fn attributes_follow_the_interval_and_bad_ones_are_refused_before_any_write() {
    let a = Attrs::for_interval(Duration::from_millis(2));
    assert_eq!((a.sample_us, a.aggr_us, a.update_us), (2000, 2000, 20000));
    a.check().unwrap();
    let f = Fake::new(1, "vaddr", &[]);
    for bad in [
        Attrs { sample_us: 0, ..attrs() },
        Attrs { sample_us: 200_000, ..attrs() },
        Attrs { min_nr_regions: 2, ..attrs() },
        Attrs { min_nr_regions: 2000, ..attrs() },
    ] {
        let e = Kdamond::start(f.admin(), &[41], &bad).unwrap_err().to_string();
        assert!(e.starts_with("DAMON attributes"), "{e}");
    }
    let e = Kdamond::start(f.admin(), &[], &attrs()).unwrap_err().to_string();
    assert!(e.contains("no process"), "{e}");
    assert_eq!(f.get("kdamonds/nr_kdamonds"), "0");
    assert_eq!(f.get("kdamonds/0/contexts/nr_contexts"), "0");
}
