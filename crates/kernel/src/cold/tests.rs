use std::path::Path;
use std::time::{Duration, Instant};

use super::observer::returned_per_sec;
use super::*;

/// A smaps mapping: header line and the fields the module reads (and some it ignores).
fn mapping(range: &str, path: &str, rss_kb: u64, anon_kb: u64, ref_kb: u64) -> String {
    format!(
        "{range} rw-p 00000000 00:00 0 {path}\nSize: {rss_kb} kB\nKernelPageSize: 4 kB\n\
         Rss: {rss_kb} kB\nPss: {rss_kb} kB\nReferenced: {ref_kb} kB\nAnonymous: {anon_kb} kB\n\
         VmFlags: rd wr mr mw me ac sd\n"
    )
}

/// A fake root with process `pid`: `stat` (flags, starttime) and `smaps`.
fn fake_process(root: &Path, pid: u32, flags: u64, smaps: &str) {
    let dir = root.join("proc").join(pid.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let stat = format!("{pid} (a (b) c) S 1 1 1 0 -1 {flags} 0 0 0 0 1 1 0 0 20 0 1 0 777 0 0\n");
    std::fs::write(dir.join("stat"), stat).unwrap();
    std::fs::write(dir.join("smaps"), smaps).unwrap();
}

#[test]
fn smaps_is_parsed_per_mapping_with_its_kind() {
    let text = [
        mapping("00400000-00401000", "/usr/bin/cat", 4, 0, 4),
        mapping("01000000-01100000", "[heap]", 1024, 1024, 512),
        mapping("7f0000000000-7f0000100000", "", 1024, 1000, 0),
        mapping("7f1000000000-7f1000001000", "/tmp/a file with spaces", 4, 4, 4),
        mapping("7ffc00000000-7ffc00021000", "[stack]", 132, 132, 132),
        mapping("7ffd00000000-7ffd00001000", "[anon:zmem]", 4, 4, 0),
    ]
    .concat();
    let s = parse_smaps(text.as_bytes()).unwrap();
    assert!(s.has_anonymous);
    let kinds: Vec<bool> = s.mappings.iter().map(|m| m.anonymous_mapping).collect();
    assert_eq!(kinds, [false, true, true, false, true, true]);
    assert_eq!(s.mappings[1].start, 0x0100_0000);
    assert_eq!(
        s.mappings[2],
        SmapsEntry {
            start: 0x7f00_0000_0000,
            end: 0x7f00_0010_0000,
            anonymous_mapping: true,
            rss: 1024 << 10,
            anonymous: 1000 << 10,
            referenced: 0,
        }
    );
    let anon = s.anon_by_start();
    assert_eq!(anon.len(), 4, "{anon:?}");
    assert_eq!(anon[&0x0100_0000], (1024 << 10, 512 << 10));
    assert_eq!(s.referenced_total(), (4 + 512 + 4 + 132) << 10);
}

#[test]
fn smaps_that_is_not_smaps_is_refused_and_a_huge_line_is_bounded() {
    let e = parse_smaps("Rss: 4 kB\n".as_bytes()).unwrap_err();
    assert!(e.to_string().contains("before any mapping"), "{e}");
    let bad = format!("{}Rss: four kB\n", mapping("1000-2000", "", 4, 4, 4));
    assert!(parse_smaps(bad.as_bytes()).unwrap_err().to_string().contains("not N kB"));
    let long = format!("1000-2000 rw-p 0 00:00 0 {}\n", "x".repeat(10_000));
    let e = parse_smaps(long.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
    // No Anonymous lines (an old kernel): Rss stands in.
    let old = "1000-3000 rw-p 0 00:00 0\nRss: 8 kB\nReferenced: 4 kB\n";
    let s = parse_smaps(old.as_bytes()).unwrap();
    assert!(!s.has_anonymous);
    assert_eq!(s.anon_by_start()[&0x1000], (8192, 4096));
}

#[test]
fn a_mappings_cold_bytes_handle_growth_shrinkage_and_vanishing() {
    // Unchanged: cold is what was not referenced.
    assert_eq!(mapping_cold(100, Some(100), 30), (70, 0));
    // Referenced more than resident (a THP counted whole): clamped at 0.
    assert_eq!(mapping_cold(100, Some(100), 130), (0, 0));
    // Grew by 50: those 50 new pages were referenced by their faults, not old ones.
    assert_eq!(mapping_cold(100, Some(150), 80), (70, 0));
    assert_eq!(mapping_cold(100, Some(150), 40), (100, 0));
    // Shrank by 40: 40 vanished, of the 60 left 10 referenced.
    assert_eq!(mapping_cold(100, Some(60), 10), (50, 40));
    // Gone: all of it vanished.
    assert_eq!(mapping_cold(100, None, 0), (0, 100));
}

#[test]
fn the_return_rate_is_the_fall_of_cold_bytes_less_what_vanished() {
    let cold = [1000, 800, 800, 500];
    let vanished = [0, 0, 0, 100];
    let at = [10.0, 30.0, 60.0, 120.0];
    assert_eq!(returned_per_sec(&cold, &vanished, &at), [10.0, 0.0, 200.0 / 60.0]);
    // Two ages read by one late poll: no time between them, no rate.
    assert_eq!(returned_per_sec(&[5, 5], &[0, 0], &[40.0, 40.0]), [0.0]);
    assert!(returned_per_sec(&[5], &[0], &[1.0]).is_empty());
}

#[test]
fn ages_are_checked() {
    assert!(check_ages(&DEFAULT_AGES_SECS).is_ok());
    for bad in [&[][..], &[0, 10], &[10, 10], &[30, 10]] {
        assert!(check_ages(bad).is_err(), "{bad:?}");
    }
    let root = tempfile::tempdir().unwrap();
    assert!(ColdObserver::start_at(root.path(), &[], &[1]).is_err());
}

#[test]
fn the_observer_clears_reads_and_sums_over_processes_that_stayed() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    fake_process(r, 10, 0x400100, &mapping("1000-101000", "", 1024, 1024, 1024));
    fake_process(r, 11, 0x400100, &mapping("1000-41000", "[heap]", 256, 256, 256));
    fake_process(r, 12, PF_KTHREAD | 0x40, "");
    fake_process(r, 13, 0x400100, &mapping("1000-2000", "/usr/lib/x.so", 4, 0, 4));
    std::fs::write(r.join("proc/10/cgroup"), "4:memory:/lab\n0::/\n").unwrap();
    let me = std::process::id();
    let mut o = ColdObserver::start_at(r, &[10, 11, 12, 13, 14, me], &[1, 2, 3]).unwrap();
    // Written to the two watched processes only.
    for pid in [10, 11] {
        assert_eq!(std::fs::read_to_string(r.join(format!("proc/{pid}/clear_refs"))).unwrap(), "1");
    }
    for pid in [12, 13, 14] {
        assert!(!r.join(format!("proc/{pid}/clear_refs")).exists(), "{pid}");
    }
    let s = &o.curve().skipped;
    assert_eq!((s.kernel_threads, s.no_anonymous, s.exited, s.itself), (1, 1, 1, 1), "{s:?}");
    assert_eq!(o.watching(), 2);
    let t0 = o.t0();
    assert!(!o.poll(t0), "no age has passed at t0");

    // At 1 s: 256 KiB of process 10 referenced, process 11 untouched.
    fake_process(r, 10, 0x400100, &mapping("1000-101000", "", 1024, 1024, 256));
    fake_process(r, 11, 0x400100, &mapping("1000-41000", "[heap]", 256, 256, 0));
    assert!(o.poll(t0 + Duration::from_millis(1500)));
    // At 2 s: reclaim cleared some bits of 10 (Referenced fell: the highest is kept), 11 ended.
    fake_process(r, 10, 0x400100, &mapping("1000-101000", "", 1024, 1024, 128));
    std::fs::remove_dir_all(r.join("proc/11")).unwrap();
    assert!(o.poll(t0 + Duration::from_secs(2)));
    let c = o.curve();
    assert_eq!(c.ages_secs, [1, 2]);
    assert_eq!(c.anon_bytes, 1024 << 10, "process 11 left the totals");
    assert_eq!(c.cold_bytes_at_age, [768 << 10, 768 << 10]);
    assert_eq!(c.returned_bytes_per_sec, [0.0]);
    assert!((c.cold_fraction(0) - 0.75).abs() < 1e-9);
    assert_eq!(c.per_process[1].exited_before_secs, Some(2));
    assert_eq!(c.per_process[1].cold_bytes_at_age, [256 << 10]);
    assert_eq!(c.per_process[0].comm, "a (b) c");
    // Per memory cgroup: process 10's (11 left the totals, and its cgroup was not read).
    let by = c.by_cgroup();
    assert_eq!(by.len(), 1, "{by:?}");
    assert_eq!(by[0].path, "/sys/fs/cgroup/memory/lab");
    assert_eq!((by[0].processes, by[0].anon_bytes), (1, 1024 << 10));
    assert_eq!(by[0].cold_bytes_at_age, c.cold_bytes_at_age);
    let notes = c.notes.join("\n");
    for want in ["ended before the last age", "Referenced fell in 1", "stopped after 2 of 3"] {
        assert!(notes.contains(want), "{want}: {notes}");
    }
    assert!(o.next_due().is_some());
    assert!(o.poll(t0 + Duration::from_secs(5)));
    assert!(o.next_due().is_none());
    // t0: 10, 11 and 13 (read, then not written); then 10 and 11, 10 (11 gone at stat), 10.
    assert_eq!(o.curve().cost.reads, 3 + 2 + 1 + 1);
}

#[test]
fn user_processes_leave_out_kernel_threads_and_zmem() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    fake_process(r, 1, 0x400100, "");
    fake_process(r, 2, PF_KTHREAD | 0x40, "");
    fake_process(r, std::process::id(), 0x400100, "");
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    assert_eq!(user_processes(r).unwrap(), [1]);
}

/// The live test's child: 64 MiB anonymous, all touched once, a tenth touched every 100 ms by a
/// thread; it says ready after the first round and runs until killed.
fn hot_tenth_child() {
    const SIZE: usize = 64 << 20;
    let page = crate::capture::system_page_size();
    let mut buf = vec![0u8; SIZE];
    for i in (0..SIZE).step_by(page) {
        buf[i] = 1;
    }
    let hot = SIZE / 10;
    let ptr = buf.as_mut_ptr() as usize;
    std::thread::spawn(move || {
        loop {
            for i in (0..hot).step_by(page) {
                // SAFETY: `ptr..ptr+hot` lies in `buf`, which outlives this thread (the main
                // thread never returns: it waits to be killed); volatile keeps the store.
                unsafe { std::ptr::write_volatile((ptr + i) as *mut u8, 2) };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    zmem_testkit::say_ready("touching");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        std::hint::black_box(&buf);
    }
}

/// Kills and reaps the child however the test ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn why_not_live() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "not root (clear_refs of a child needs no root, but live tests run as root)".into(),
        );
    }
    (!Path::new("/proc/self/clear_refs").exists())
        .then(|| "no /proc/PID/clear_refs (CONFIG_PROC_PAGE_MONITOR off)".into())
}

#[test]
#[ignore = "live: needs root and /proc/PID/clear_refs (scripts/test runs it)"]
fn a_program_touching_a_tenth_reads_nine_tenths_cold() {
    zmem_testkit::child("hot-tenth", |_| hot_tenth_child());
    let Some(_live) = zmem_testkit::live(why_not_live()) else { return };
    let mut child = Killed(zmem_testkit::reexec("hot-tenth", "").spawn().expect("spawn"));
    let ready = zmem_testkit::Ready::watch(child.0.stdout.take().unwrap());
    ready.wait(Duration::from_secs(60)).expect("the child starts touching");
    let pid = child.0.id();
    let mut o = ColdObserver::start(&[pid], &[1, 2, 4]).unwrap();
    while let Some(due) = o.next_due() {
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        o.poll(Instant::now());
    }
    let c = o.curve();
    assert_eq!(o.watching(), 1, "{c:?}");
    let fractions: Vec<f64> = (0..3).map(|i| c.cold_fraction(i)).collect();
    eprintln!(
        "cold fractions at 1, 2, 4 s: {fractions:.3?}; anon {} B; {:?}",
        c.anon_bytes, c.cost
    );
    // The buffer is 64 MiB of the child's few more MiB (libtest's heap and stacks, touched or
    // not): 0.9 of the buffer is 0.84 to 0.92 of the process. A starved hot thread can only
    // raise the fraction at 1 s toward 1.0; its first round after t0 comes within 100 ms of
    // running at all, so the margin is 10 points for both.
    for (i, f) in fractions.iter().enumerate() {
        assert!((f - 0.9).abs() <= 0.10, "age {}: cold fraction {f:.3}", c.ages_secs[i]);
    }
}
