//! The swap device's measurement (`--swap-device PATH`): an O_DIRECT 4 KiB random read and write
//! measurement on a temporary file, which it removes; a place that is not a block device (tmpfs)
//! is refused with a clear error instead of measuring memory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use zmem_sim::swap_device::{DeviceSpec, SwapDevice, measure};

/// A fresh directory under the target directory (on the build's disk, not tmpfs).
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("swap-device-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn entries(d: &Path) -> usize {
    std::fs::read_dir(d).unwrap().count()
}

fn is_tmpfs(p: &Path) -> bool {
    // /proc/self/mounts: the mount point and type of every mount.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 2 && Path::new(f[1]) == p && f[2] == "tmpfs"
    })
}

#[test]
#[ignore = "live: needs a target directory on a block device with O_DIRECT (scripts/test runs it)"]
fn a_directory_on_a_block_device_is_measured_and_left_clean() {
    let live = zmem_testkit::may_skip();
    let dir = scratch("dir");
    if is_tmpfs(Path::new(env!("CARGO_TARGET_TMPDIR"))) {
        return live.skip_optional("the target directory is on tmpfs, which cannot be measured");
    }
    let d = match measure(&dir, Duration::from_millis(200)) {
        Ok(d) => d,
        Err(e) if e.to_string().contains("O_DIRECT") => {
            return live.skip_optional(format!("the target directory has no O_DIRECT: {e}"));
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(d.kind, "measured");
    assert_eq!(d.name, dir.display().to_string());
    assert!(d.read.p50_ns > 0 && d.read.p50_ns <= d.read.p99_ns, "{d:?}");
    assert!(d.write.p50_ns > 0 && d.write.p50_ns <= d.write.p99_ns, "{d:?}");
    assert!(d.note.contains("O_DIRECT"), "{}", d.note);
    assert_eq!(entries(&dir), 0, "the temporary file was removed");
    // Charges are drawn from the measured latencies: between the fastest and the slowest.
    let mut s = d.sampler(3);
    for _ in 0..100 {
        let r = s.read_ns();
        assert!(r > 0 && r < 10_000_000_000, "{r}");
    }
    // A file path measures its directory and leaves the file alone (here: it does not exist).
    let file = dir.join("swapfile");
    let f = measure(&file, Duration::from_millis(50)).unwrap();
    assert_eq!(f.kind, "measured");
    assert!(!file.exists() && entries(&dir) == 0);
    // The same through the parser the CLI uses.
    let spec: DeviceSpec = dir.to_str().unwrap().parse().unwrap();
    let r = SwapDevice::resolve(&spec, Duration::from_millis(50)).unwrap();
    assert_eq!(r.kind, "measured");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs /dev/shm on tmpfs (scripts/test runs it)"]
fn tmpfs_is_refused_with_a_clear_error() {
    let live = zmem_testkit::may_skip();
    let shm = Path::new("/dev/shm");
    if !is_tmpfs(shm) {
        return live.skip_optional("/dev/shm is not tmpfs here");
    }
    let e = measure(shm, Duration::from_millis(50)).unwrap_err().to_string();
    assert!(e.contains("tmpfs") && e.contains("/dev/shm"), "{e}");
    assert!(e.contains("nvme, ssd, emmc, hdd"), "the error names the alternative: {e}");
    assert!(!e.contains('\n'));
    let ours = std::fs::read_dir(shm)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().starts_with(".zmem-swap-device"));
    assert!(!ours, "nothing was left behind");
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let e = measure(Path::new("/nonexistent/zmem/dir/"), Duration::from_millis(50))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/zmem"), "{e}");
}
