//! The apply script run for real: as root, on a kernel with zram, the lab's decision for
//! this machine is written as a script, pointed at a scratch zram device this test hot-adds
//! (`ZMEM_ZRAM_DEVICE`), and run now only (`--no-persist`: nothing installed under /etc).
//! The device must end configured as decided (its `comp_algorithm` shows the algorithm in
//! brackets, its `disksize` follows the size rule) and be an active swap area. The scratch
//! device is swapped off, reset and hot-removed afterwards, also on failure (a Drop guard).
//! Nothing else is touched: no module is loaded, no other device is read or written.
//!
//! Live tests (`#[ignore]`, run by scripts/test's live pass): skipped, reported by
//! zmem-testkit, when not root or when zram is not loaded.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use zmem_lab::{self as lab, LabOptions};
use zmem_render as report;

mod common;

const CONTROL: &str = "/sys/class/zram-control";

/// A zram device this test made: swapped off, reset and removed when dropped.
struct Scratch {
    id: u32,
}

impl Scratch {
    fn add() -> Result<Self, String> {
        let text = fs::read_to_string(format!("{CONTROL}/hot_add"))
            .map_err(|e| format!("hot_add: {e}"))?;
        let id = zmem_kernel::caps::parse_hot_add(&text).map_err(|e| e.to_string())?;
        Ok(Self { id })
    }

    fn name(&self) -> String {
        format!("zram{}", self.id)
    }

    fn sys(&self, attr: &str) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}/{attr}", self.id))
    }
}

fn is_swap(dev: &str) -> bool {
    fs::read_to_string("/proc/swaps")
        .map(|t| t.lines().any(|l| l.split_whitespace().next() == Some(&format!("/dev/{dev}"))))
        .unwrap_or(false)
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let dev = self.name();
        if is_swap(&dev) {
            // Moves what the kernel (DAMON's kdamond included) swapped onto it back into RAM.
            let _ = Command::new("swapoff").arg(format!("/dev/{dev}")).status();
        }
        let _ = fs::write(self.sys("reset"), "1");
        // udev may hold the fresh device open a moment (zram_drv.c: zram_remove refuses it).
        for _ in 0..40 {
            if fs::write(format!("{CONTROL}/hot_remove"), self.id.to_string()).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn skip_reason() -> Option<String> {
    match fs::metadata("/proc/self") {
        Ok(m) if m.uid() == 0 => {}
        _ => return Some("not root".into()),
    }
    if !std::path::Path::new(CONTROL).is_dir() {
        return Some(format!("no {CONTROL}: zram not loaded (this test loads no module)"));
    }
    if Command::new("mkswap").arg("--version").output().is_err() {
        return Some("no mkswap".into());
    }
    None
}

/// The lab's decision for this machine's kernel, on a small generated set (no dictionary: the
/// script would install it under /etc), and its apply script.
fn script_for_this_machine() -> (String, lab::Policy) {
    let kernel = zmem_kernel::caps::read();
    let policies =
        lab::candidates(lab::DEFAULT_ALGORITHM).into_iter().filter(|p| !p.dict).collect();
    let opts = LabOptions { policies, kernel: Some(kernel), ..common::quick() };
    let r = common::lab_run(1024, 5, &opts);
    // The decision's configuration: a zram one (no zswap reading was given), that this kernel
    // runs.
    let d = &r.decision;
    assert_eq!(d.kind, lab::Kind::Zram, "{d:?}");
    let c = d.chosen(&r.candidates).expect("a chosen candidate");
    assert!(c.available, "{:?}", c.unavailable_reason);
    let lab::Config::Zram { policy } = &c.config else { panic!("no zram decision: {d:?}") };
    (report::render_apply_script(&r).expect("an apply script"), policy.clone())
}

/// Runs the script now on `dev`, nothing persisted; panics with its output unless it succeeds.
fn run_sysfs_only(script: &str, dev: &str) {
    let dir = std::env::temp_dir().join(format!("zmem-apply-root-{}-{dev}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("apply.sh");
    fs::write(&path, script).unwrap();
    // Now only (nothing written under /etc), its undo state in the scratch directory.
    let out = Command::new("sh")
        .arg(&path)
        .arg("--no-persist")
        .env("ZMEM_ZRAM_DEVICE", dev)
        .env("ZMEM_STATE", dir.join("state"))
        .env("ZMEM_ROOT", dir.join("root"))
        .output()
        .expect("sh");
    let _ = fs::remove_dir_all(&dir);
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `dev`'s swap priority in /proc/swaps, if it is an active swap area.
fn swap_priority(dev: &str) -> Option<i32> {
    fs::read_to_string("/proc/swaps").ok()?.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.first() == Some(&format!("/dev/{dev}").as_str())).then(|| f.get(4)?.parse().ok())?
    })
}

/// A fresh device that is not swap: configured as decided and swapped on.
#[test]
#[ignore = "live: needs root, kernel zram and mkswap (scripts/test runs it)"]
fn the_apply_script_configures_a_scratch_device_as_decided() {
    let Some(_live) = zmem_testkit::live(skip_reason()) else { return };
    let scratch = Scratch::add().expect("hot_add a scratch zram device");
    let dev = scratch.name();
    let (script, policy) = script_for_this_machine();
    run_sysfs_only(&script, &dev);

    let comp = fs::read_to_string(scratch.sys("comp_algorithm")).unwrap();
    assert!(comp.split_whitespace().any(|a| a == format!("[{}]", policy.algo)), "{comp}");
    let mem_kb: u64 = fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let want_mib = (mem_kb / 2048).min(4096);
    let disksize: u64 =
        fs::read_to_string(scratch.sys("disksize")).unwrap().trim().parse().unwrap();
    assert_eq!(disksize, want_mib << 20, "size rule: min(ram / 2, 4096) MiB");
    assert!(is_swap(&dev), "/dev/{dev} is not in /proc/swaps");
    if let Some(secondary) = policy.recomp.first() {
        let recomp = fs::read_to_string(scratch.sys("recomp_algorithm")).unwrap();
        assert!(recomp.contains(&format!("[{secondary}]")), "{recomp}");
    }
}

/// Two more states: a zram swap in use (swapped off, reconfigured, swapped on again) and
/// another swap area active (left alone; the new one goes above it).
#[test]
#[ignore = "live: needs root, kernel zram and mkswap (scripts/test runs it)"]
fn the_apply_script_handles_a_swap_in_use_and_another_swap_area() {
    let Some(_live) = zmem_testkit::live(skip_reason()) else { return };
    let a = Scratch::add().expect("hot_add a scratch zram device");
    let b = Scratch::add().expect("hot_add a second scratch zram device");
    let (script, policy) = script_for_this_machine();
    run_sysfs_only(&script, &a.name());
    let prio_a = swap_priority(&a.name()).expect("a is swap");
    // Another swap area (a) is active: b goes above it, a stays as it is.
    run_sysfs_only(&script, &b.name());
    let prio_b = swap_priority(&b.name()).expect("b is swap");
    assert_eq!(swap_priority(&a.name()), Some(prio_a), "a was left alone");
    assert!(prio_b > prio_a || prio_a == 32767, "b {prio_b} not above a {prio_a}");
    // a is a swap in use: swapped off, reconfigured, on again, now above b.
    run_sysfs_only(&script, &a.name());
    let again = swap_priority(&a.name()).expect("a is swap again");
    assert!(again > prio_b || prio_b == 32767, "a {again} not above b {prio_b}");
    let comp = fs::read_to_string(a.sys("comp_algorithm")).unwrap();
    assert!(comp.contains(&format!("[{}]", policy.algo)), "{comp}");
}

/// A decision sized from the operating point (memory not short, 3 MiB idle at the cold age):
/// the script sets the size and mem_limit the decision names.
#[test]
#[ignore = "live: needs root, kernel zram and mkswap (scripts/test runs it)"]
fn the_apply_script_sizes_the_device_as_decided() {
    let Some(_live) = zmem_testkit::live(skip_reason()) else { return };
    let scratch = Scratch::add().expect("hot_add a scratch zram device");
    let dev = scratch.name();
    // 90 % of 100 MiB idle at the cold age.
    let mut cold = common::curve();
    cold.anon_bytes = 100 << 20;
    cold.cold_bytes_at_age = vec![95 << 20, 92 << 20, 90 << 20];
    let policies = vec![lab::Policy::single(lab::DEFAULT_ALGORITHM)];
    let opts = LabOptions {
        policies,
        kernel: Some(zmem_kernel::caps::read()),
        pressure: Some(lab::PressureReading { now: common::calm(), window: None }),
        operating: lab::operating::OperatingInput {
            cold: Some(cold),
            this_machine: true,
            ..Default::default()
        },
        ..common::quick()
    };
    let r = common::lab_run(1024, 5, &opts);
    let size = r.decision.sizing.expect("a size from the cold age");
    // 1.25 x 90 MiB, in 64 MiB steps.
    assert_eq!(size.disksize_bytes, 128 << 20);
    run_sysfs_only(&report::render_apply_script(&r).expect("an apply script"), &dev);
    let disksize: u64 =
        fs::read_to_string(scratch.sys("disksize")).unwrap().trim().parse().unwrap();
    assert_eq!(disksize, size.disksize_bytes);
    // mem_limit is write-only; mm_stat's fourth field reads it back.
    let mm = fs::read_to_string(scratch.sys("mm_stat")).unwrap();
    let limit: u64 = mm.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(limit, size.mem_limit_bytes, "{mm}");
    assert!(is_swap(&dev), "/dev/{dev} is not in /proc/swaps");
}
