//! The agent over a fake /proc (smaps, pagemap, clear_refs, stat, cgroup, PSI, meminfo) with a
//! fake pager that moves pages to "swap" by rewriting their pagemap entries.

use std::cell::RefCell;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::procfs::PM_SWAP;
use super::*;
use crate::record::pagemap::PM_PRESENT;

const PS: u64 = 4096;
/// Pids above the kernel's largest pid_max (2^22): never the test process itself.
const A: u32 = 4_200_001;
const B: u32 = 4_200_002;
const C: u32 = 4_200_003;
const D: u32 = 4_200_004;
/// The mappings' first page: 0x100000.
const BASE: u64 = 256;
/// Pages of a pagemap file: room for every mapping the tests make.
const MAP_PAGES: u64 = 8192;

/// (pid, runs) of every page-out call.
type Calls = Rc<RefCell<Vec<(u32, Vec<(u64, u64)>)>>>;

/// A fake /proc under a temporary directory.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Self {
        let f = Self { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir(f.root().join("pressure")).unwrap();
        f.set_psi(0.0);
        f.set_swap(1 << 30, 1 << 30);
        f
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn set_psi(&self, avg10: f64) {
        let text = format!(
            "some avg10={avg10:.2} avg60=0.00 avg300=0.00 total=1\n\
             full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
        );
        std::fs::write(self.root().join("pressure/memory"), text).unwrap();
    }

    fn set_swap(&self, total: u64, free: u64) {
        let text = format!(
            "MemTotal: 4194304 kB\nSwapTotal: {} kB\nSwapFree: {} kB\n",
            total >> 10,
            free >> 10
        );
        std::fs::write(self.root().join("meminfo"), text).unwrap();
    }

    /// A user process `comm` in memory cgroup `cgroup` (v1), started at `start`, nothing
    /// resident yet.
    fn process(&self, pid: u32, comm: &str, cgroup: &str, start: u64) {
        self.process_flags(pid, comm, cgroup, start, 0x0040_0000);
    }

    fn process_flags(&self, pid: u32, comm: &str, cgroup: &str, start: u64, flags: u64) {
        let d = self.root().join(pid.to_string());
        std::fs::create_dir_all(&d).unwrap();
        let stat =
            format!("{pid} ({comm}) S 1 1 1 0 -1 {flags} 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0\n");
        std::fs::write(d.join("stat"), stat).unwrap();
        std::fs::write(d.join("cgroup"), format!("5:memory:{cgroup}\n0::/\n")).unwrap();
        std::fs::write(d.join("clear_refs"), "").unwrap();
        std::fs::write(d.join("pagemap"), vec![0u8; MAP_PAGES as usize * 8]).unwrap();
        self.smaps(pid, &[]);
    }

    /// Sets `pid`'s smaps: anonymous mappings (first page, pages, resident, referenced pages),
    /// then a file mapping with every page resident and unreferenced.
    fn smaps(&self, pid: u32, anon: &[(u64, u64, u64, u64)]) {
        let mut text = String::new();
        for &(first, pages, resident, referenced) in anon {
            text += &mapping(first, pages, "", resident, resident, referenced);
        }
        text += &mapping(7000, 512, "/usr/lib/libfake.so", 512, 0, 0);
        std::fs::write(self.root().join(format!("{pid}/smaps")), text).unwrap();
    }

    /// Pages `first..first + n` of `pid` resident (or not mapped).
    fn resident(&self, pid: u32, first: u64, n: u64, present: bool) {
        for page in first..first + n {
            set_entry(self.root(), pid, page, if present { PM_PRESENT } else { 0 });
        }
    }

    fn entry(&self, pid: u32, page: u64) -> u64 {
        let f = std::fs::File::open(self.root().join(format!("{pid}/pagemap"))).unwrap();
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, page * 8).unwrap();
        u64::from_le_bytes(b)
    }

    fn present(&self, pid: u32, first: u64, n: u64) -> u64 {
        (first..first + n).filter(|&p| self.entry(pid, p) & PM_PRESENT != 0).count() as u64
    }

    fn cleared(&self, pid: u32) -> String {
        std::fs::read_to_string(self.root().join(format!("{pid}/clear_refs"))).unwrap()
    }
}

fn mapping(first: u64, pages: u64, path: &str, rss: u64, anon: u64, refd: u64) -> String {
    let (s, e) = (first * PS, (first + pages) * PS);
    format!(
        "{s:x}-{e:x} rw-p 00000000 00:00 0 {path}\nRss: {} kB\nAnonymous: {} kB\n\
         Referenced: {} kB\n",
        rss * 4,
        anon * 4,
        refd * 4
    )
}

fn set_entry(root: &Path, pid: u32, page: u64, e: u64) {
    let f = std::fs::File::options().write(true).open(root.join(format!("{pid}/pagemap"))).unwrap();
    f.write_all_at(&e.to_le_bytes(), page * 8).unwrap();
}

/// Moves what it is asked to page out to "swap", but pinned pages; each call costs `cost`
/// nanoseconds of the fake CPU clock. A pid in `exits` exits during its page-out.
struct FakePager {
    root: PathBuf,
    calls: Calls,
    pinned: Vec<(u32, u64)>,
    clock: Arc<AtomicU64>,
    cost: u64,
    exits: Option<u32>,
}

impl Pager for FakePager {
    fn page_out(&mut self, pid: u32, runs: &[(u64, u64)]) -> Result<(), KernelError> {
        self.calls.borrow_mut().push((pid, runs.to_vec()));
        self.clock.fetch_add(self.cost, Ordering::Relaxed);
        if self.exits == Some(pid) {
            std::fs::remove_dir_all(self.root.join(pid.to_string())).unwrap();
            return Err(KernelError::Invalid(format!("process {pid} exited")));
        }
        for &(start, n) in runs {
            assert!(n <= 512, "{n} pages in one call");
            for page in (start / PS..).take(n as usize) {
                if !self.pinned.contains(&(pid, page)) {
                    set_entry(&self.root, pid, page, PM_SWAP);
                }
            }
        }
        Ok(())
    }

    fn drain_lru(&mut self) -> Result<(), KernelError> {
        Ok(())
    }
}

struct Run {
    agent: Agent<FakePager>,
    calls: Calls,
    t0: Instant,
}

impl Run {
    fn new(fake: &Fake, config: AgentConfig) -> Self {
        let calls = Calls::default();
        let clock = Arc::new(AtomicU64::new(0));
        let pager = FakePager {
            root: fake.root().to_path_buf(),
            calls: calls.clone(),
            pinned: Vec::new(),
            clock: clock.clone(),
            cost: 0,
            exits: None,
        };
        let mut agent = Agent::with(config, pager, fake.root().to_path_buf()).unwrap();
        agent.set_page_size(PS);
        let c = clock.clone();
        agent.set_cpu_clock(Box::new(move || c.load(Ordering::Relaxed) as f64 * 1e-9));
        Self { agent, calls, t0: Instant::now() }
    }

    /// A tick `secs` after the first.
    fn tick(&mut self, secs: u64) -> AgentStats {
        self.agent.tick(self.t0 + Duration::from_secs(secs)).unwrap();
        self.agent.stats()
    }

    /// Pages advised so far, per pid.
    fn advised(&self, pid: u32) -> u64 {
        self.calls
            .borrow()
            .iter()
            .filter(|(p, _)| *p == pid)
            .flat_map(|(_, r)| r)
            .map(|r| r.1)
            .sum()
    }
}

/// T = 4 s, looked at every 4 s, only `pids`.
fn config(pids: &[u32]) -> AgentConfig {
    let mut c = AgentConfig::new(4);
    c.pids = Some(pids.to_vec());
    c
}

#[test]
fn the_first_look_only_clears_then_pages_idle_for_t_go_out() {
    let fake = Fake::new();
    fake.process(A, "app", "/user.slice", 100);
    // Mapping 1: 1024 pages resident, none referenced. Mapping 2: 300 pages resident, all
    // referenced. Process B: 200 idle pages, under 1 MiB in all.
    fake.resident(A, BASE, 1024, true);
    fake.resident(A, 2000, 300, true);
    fake.smaps(A, &[(BASE, 1024, 1024, 0), (2000, 300, 300, 300)]);
    fake.process(B, "small", "/user.slice", 100);
    fake.resident(B, BASE, 200, true);
    fake.smaps(B, &[(BASE, 200, 200, 0)]);
    let mut run = Run::new(&fake, config(&[A, B]));

    let s = run.tick(0);
    assert_eq!(fake.cleared(A), "2");
    assert_eq!((run.calls.borrow().len(), s.paged_out_bytes, s.processes), (0, 0, 2));
    // Before T nothing is looked at again.
    std::fs::write(fake.root().join(format!("{A}/clear_refs")), "").unwrap();
    run.tick(2);
    assert_eq!((fake.cleared(A).as_str(), run.calls.borrow().len()), ("", 0));

    let s = run.tick(4);
    assert_eq!(fake.cleared(A), "2");
    assert_eq!(s.paged_out_bytes, 1024 * PS);
    assert_eq!(s.out_bytes, 1024 * PS);
    assert_eq!(fake.present(A, BASE, 1024), 0);
    // Mapping 2 (nothing idle), the file mapping and process B (idle under min_idle_bytes)
    // are left alone.
    assert_eq!(fake.present(A, 2000, 300), 300);
    assert_eq!((fake.present(B, BASE, 200), run.advised(B)), (200, 0));
    assert_eq!(run.advised(A), 1024);
    assert_eq!(run.calls.borrow().len(), 2, "512 pages a call");
    assert_eq!((s.came_back_bytes, s.refused_bytes, s.ticks), (0, 0, 3));
}

/// A heap of many small mappings (V8's 256 KiB pages): each under min_idle_bytes, together
/// over it, so each goes out.
#[test]
fn many_small_idle_mappings_go_out_together() {
    let fake = Fake::new();
    fake.process(A, "node", "/", 100);
    let maps: Vec<(u64, u64, u64, u64)> = (0..8).map(|k| (BASE + 100 * k, 64, 64, 0)).collect();
    for &(start, n, _, _) in &maps {
        fake.resident(A, start, n, true);
    }
    fake.smaps(A, &maps);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    let s = run.tick(4);
    assert_eq!(s.paged_out_bytes, 8 * 64 * PS);
}

#[test]
fn pages_that_come_back_are_counted_and_stay_hot_for_4t() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 600, true);
    fake.smaps(A, &[(BASE, 4096, 600, 0)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    run.tick(4);
    assert_eq!(fake.present(A, BASE, 600), 0);

    // The process touches 10 pages (they fault back in) and, at each look, faults in 320 new
    // pages (20 groups of 16) it then leaves idle. The mapping holds referenced pages now, so
    // each look pages out one page in 16 of the new ones and the next tick the rest of each
    // group whose page stayed out; the hot ten are never paged out again until 4·T after they
    // came back.
    fake.resident(A, BASE, 10, true);
    let mut prev = None;
    for (k, secs) in [8, 12, 16, 20, 24].into_iter().enumerate() {
        let fresh = BASE + 1024 + 320 * k as u64;
        fake.resident(A, fresh, 320, true);
        fake.smaps(A, &[(BASE, 4096, 330, 10)]);
        let s = run.tick(secs);
        assert_eq!(fake.present(A, fresh, 320), 300, "one in 16 at {secs} s");
        if let Some(p) = prev {
            assert_eq!(fake.present(A, p, 320), 0, "the rest of the last look's at {secs} s");
        }
        assert_eq!(fake.present(A, BASE, 10), 10, "at {secs} s");
        assert_eq!(s.came_back_bytes, 10 * PS, "at {secs} s");
        prev = Some(fresh);
    }
    let s = run.tick(25);
    assert_eq!(fake.present(A, prev.unwrap(), 320), 0);
    assert_eq!((s.paged_out_bytes, s.out_bytes), ((600 + 1600) * PS, (590 + 1600) * PS));
}

/// A mapping with referenced pages: one page in each group of 16 goes out first; the groups
/// whose page came back (touched within the period) stay, the others follow whole. What the
/// probe costs is a sixteenth of the hot pages, once.
#[test]
fn a_partly_referenced_mapping_is_sampled_and_only_cold_groups_follow() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 512, true);
    fake.smaps(A, &[(BASE, 512, 512, 64)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    let s = run.tick(4);
    assert_eq!((run.advised(A), s.paged_out_bytes), (32, 32 * PS));
    // The program touches its first 64 pages (4 groups): their sampled pages fault back.
    fake.resident(A, BASE, 64, true);
    let s = run.tick(5);
    assert_eq!(s.came_back_bytes, 4 * PS);
    assert_eq!(fake.present(A, BASE, 64), 64, "the hot groups stay");
    assert_eq!(fake.present(A, BASE + 64, 448), 0, "the cold groups follow");
    assert_eq!(run.advised(A), 32 + 28 * 15);
    assert_eq!(s.out_bytes, 448 * PS);
}

#[test]
fn hot_marks_expire_after_two_rotations() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 512, true);
    fake.smaps(A, &[(BASE, 512, 512, 0)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    run.tick(4);
    fake.resident(A, BASE, 512, true);
    run.tick(8); // came back: hot (first rotation of this process at 16 s)
    assert_eq!(run.agent.stats().came_back_bytes, 512 * PS);
    for secs in [12, 16, 20, 24, 28] {
        run.tick(secs);
        assert_eq!(fake.present(A, BASE, 512), 512, "hot at {secs} s");
    }
    // Rotated at 16 s (hot -> old) and 32 s (old -> none): paged out again at 32 s.
    let s = run.tick(32);
    assert_eq!(fake.present(A, BASE, 512), 0);
    assert_eq!(s.paged_out_bytes, 1024 * PS);
}

#[test]
fn excluded_processes_and_kernel_threads_are_never_paged_out() {
    let fake = Fake::new();
    for (pid, comm, cg) in [
        (A, "keep", "/user.slice"),
        (B, "sshd", "/user.slice"),
        (C, "db", "/system.slice/db.service"),
        (D, "app", "/system.slice2"),
    ] {
        fake.process(pid, comm, cg, 100);
        fake.resident(pid, BASE, 512, true);
        fake.smaps(pid, &[(BASE, 512, 512, 0)]);
    }
    let kthread = 4_200_005;
    fake.process_flags(kthread, "kworker/0:1", "/", 100, 0x0020_0040);
    fake.resident(kthread, BASE, 512, true);
    fake.smaps(kthread, &[(BASE, 512, 512, 0)]);
    let mut c = config(&[A, B, C, D, kthread]);
    c.exclude = Exclude {
        pids: vec![A],
        comms: vec!["sshd".into()],
        cgroups: vec!["/system.slice".into()],
    };
    let mut run = Run::new(&fake, c);
    run.tick(0);
    let s = run.tick(4);
    assert_eq!(s.processes, 1);
    assert_eq!(s.paged_out_bytes, 512 * PS);
    assert_eq!(fake.present(D, BASE, 512), 0);
    for pid in [A, B, C, kthread] {
        assert_eq!(fake.present(pid, BASE, 512), 512, "{pid}");
        assert_eq!(fake.cleared(pid), "", "{pid}: clear_refs written");
        assert_eq!(run.advised(pid), 0);
    }
}

#[test]
fn memory_pressure_pauses_the_agent() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 512, true);
    fake.smaps(A, &[(BASE, 512, 512, 0)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    fake.set_psi(0.5);
    let s = run.tick(4);
    assert_eq!((s.paused_ticks, s.paged_out_bytes, s.last_psi_some_avg10), (1, 0, 0.5));
    let pause = run.agent.status().last_pause.unwrap();
    assert!(pause.contains("PSI some avg10 0.50"), "{pause}");
    assert_eq!(fake.present(A, BASE, 512), 512);
    // At the limit is not over it.
    fake.set_psi(0.1);
    let s = run.tick(8);
    assert_eq!((s.paused_ticks, s.paged_out_bytes), (1, 512 * PS));
}

#[test]
fn full_or_missing_swap_pauses_the_agent() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 512, true);
    fake.smaps(A, &[(BASE, 512, 512, 0)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    // 8 MiB free of 1 GiB: under 1 %.
    fake.set_swap(1 << 30, 8 << 20);
    assert_eq!(run.tick(4).paused_ticks, 1);
    assert!(run.agent.status().last_pause.unwrap().contains("swap nearly full"));
    // 3 MiB free of 100 MiB: 3 %, but under 4 MiB.
    fake.set_swap(100 << 20, 3 << 20);
    assert_eq!(run.tick(8).paused_ticks, 2);
    fake.set_swap(0, 0);
    assert_eq!(run.tick(12).paused_ticks, 3);
    assert!(run.agent.status().last_pause.unwrap().contains("no swap area"));
    assert_eq!(fake.present(A, BASE, 512), 512);
    fake.set_swap(100 << 20, 50 << 20);
    let s = run.tick(16);
    assert_eq!((s.paused_ticks, s.paged_out_bytes), (3, 512 * PS));
}

#[test]
fn the_cpu_budget_stops_a_tick_and_the_next_goes_on_with_what_it_saved_or_owes() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 4096, true);
    fake.smaps(A, &[(BASE, 4096, 4096, 0)]);
    // T = 8 s looked at every 2 s: 0.75 % of 2 s = 15 ms a tick; each call costs 10 ms.
    let mut c = config(&[A]);
    c.cold_age_secs = 8;
    c.period_secs = 2;
    c.cpu_budget_percent = 0.75;
    let mut run = Run::new(&fake, c);
    run.agent.pager.cost = 10_000_000;
    run.tick(0);
    let calls = |run: &Run| run.calls.borrow().len();
    // The first look spent nothing: 15 + 15 = 30 ms, three calls.
    let s = run.tick(8);
    assert_eq!((calls(&run), s.paged_out_bytes), (3, 1536 * PS));
    assert!((s.cpu_seconds - 0.03).abs() < 1e-9, "{}", s.cpu_seconds);
    // 15 ms: two calls (20 ms, 5 owed), going on where the last tick stopped.
    run.tick(10);
    assert_eq!(calls(&run), 5);
    assert_eq!(run.calls.borrow()[3].1[0].0, (BASE + 1536) * PS);
    // 15 - 5 = 10 ms: one call.
    run.tick(12);
    assert_eq!(calls(&run), 6);
    let s = run.tick(14);
    assert_eq!((calls(&run), s.paged_out_bytes), (8, 4096 * PS));
    assert_eq!(run.advised(A), 4096, "no page advised twice");
}

#[test]
fn a_process_that_exits_is_dropped_without_an_error() {
    let fake = Fake::new();
    for pid in [A, B, C] {
        fake.process(pid, "app", "/", 100);
        fake.resident(pid, BASE, 512, true);
        fake.smaps(pid, &[(BASE, 512, 512, 0)]);
    }
    let mut run = Run::new(&fake, config(&[A, B, C]));
    // C exits during its page-out.
    run.agent.pager.exits = Some(C);
    run.tick(0);
    let s = run.tick(4);
    assert_eq!((s.paged_out_bytes, s.errors), (2 * 512 * PS, 0));
    // A exits between ticks; B stays.
    std::fs::remove_dir_all(fake.root().join(A.to_string())).unwrap();
    let s = run.tick(8);
    assert_eq!((s.processes, s.out_bytes, s.came_back_bytes, s.errors), (1, 512 * PS, 0, 0));
    // B's pid is reused by another process: its pages are not the agent's any more.
    fake.process(B, "other", "/", 999);
    let s = run.tick(9);
    assert_eq!((s.processes, s.out_bytes, s.came_back_bytes), (1, 0, 0));
    assert!(run.agent.status().last_error.is_none());
}

#[test]
fn pages_freed_or_unmapped_are_forgotten_not_counted_as_come_back() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 1024, true);
    fake.smaps(A, &[(BASE, 1024, 1024, 0)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.tick(0);
    run.tick(4);
    // The process frees 100 pages (MADV_DONTNEED: neither present nor in swap).
    fake.resident(A, BASE, 100, false);
    let s = run.tick(5);
    assert_eq!((s.out_bytes, s.came_back_bytes), (924 * PS, 0));
    // It unmaps the mapping's upper half: the look forgets those pages.
    fake.smaps(A, &[(BASE, 512, 0, 0)]);
    let s = run.tick(8);
    assert_eq!((s.out_bytes, s.came_back_bytes), (412 * PS, 0));
    // The mapping is gone.
    fake.smaps(A, &[]);
    assert_eq!(run.tick(12).out_bytes, 0);
}

#[test]
fn a_process_whose_memory_cannot_be_read_is_counted_and_a_refusal_left_alone() {
    let fake = Fake::new();
    fake.process(A, "init", "/", 100);
    fake.process(B, "app", "/", 100);
    fake.resident(B, BASE, 512, true);
    fake.smaps(B, &[(BASE, 512, 512, 0)]);
    // A's smaps is a directory: reading it fails, and not because A exited.
    let smaps = fake.root().join(format!("{A}/smaps"));
    std::fs::remove_file(&smaps).unwrap();
    std::fs::create_dir(&smaps).unwrap();
    let mut run = Run::new(&fake, config(&[A, B]));
    let s = run.tick(0);
    assert_eq!((s.errors, s.processes), (1, 2));
    assert!(run.agent.status().last_error.unwrap().starts_with(&format!("process {A}: ")));
    // Not a refusal: tried again at the next tick, counted again.
    assert_eq!(run.tick(1).errors, 2);
    // A refusal (as /proc/1/smaps gives root in a container): left alone from then on.
    let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
    run.agent.process_failed(A, KernelError::io(&smaps, denied));
    assert_eq!(run.agent.stats().errors, 3);
    run.tick(2);
    // B goes on regardless.
    let s = run.tick(4);
    assert_eq!((s.errors, s.paged_out_bytes), (3, 512 * PS));
}

#[test]
fn pages_the_kernel_keeps_are_counted_as_refused() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.resident(A, BASE, 512, true);
    fake.smaps(A, &[(BASE, 512, 512, 0)]);
    let mut run = Run::new(&fake, config(&[A]));
    run.agent.pager.pinned = (BASE..BASE + 12).map(|p| (A, p)).collect();
    run.tick(0);
    let s = run.tick(4);
    assert_eq!((s.paged_out_bytes, s.refused_bytes, s.out_bytes), (500 * PS, 12 * PS, 500 * PS));
    assert_eq!(fake.present(A, BASE, 12), 12);
}

#[test]
fn every_user_process_is_watched_but_this_one() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    fake.process(std::process::id(), "zmem", "/", 100);
    std::fs::create_dir(fake.root().join("self")).unwrap();
    let mut run = Run::new(&fake, AgentConfig::new(4));
    assert_eq!(run.tick(0).processes, 1);
    assert_eq!(fake.cleared(std::process::id()), "");
}

#[test]
fn run_writes_the_status_each_tick_and_stops_when_asked() {
    let fake = Fake::new();
    fake.process(A, "app", "/", 100);
    let mut run = Run::new(&fake, config(&[A]));
    let stop = AtomicBool::new(false);
    let path = fake.root().join("agent.json");
    let mut seen = 0;
    let mut on_tick = |s: &AgentStats| {
        seen += 1;
        assert_eq!(s.ticks, 1);
        stop.store(true, Ordering::Relaxed);
    };
    let s = super::run(&mut run.agent, &stop, None, Some(&path), &mut on_tick).unwrap();
    assert_eq!((s.ticks, seen), (1, 1));
    let status: AgentStatus = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(status, run.agent.status());
    assert_eq!((status.schema, status.mechanism.as_str()), (1, "process_madvise"));
    assert!(status.updated_unix >= status.started_unix && status.started_unix > 0);
    // A duration ends it too.
    let stop = AtomicBool::new(false);
    let t = Instant::now();
    super::run(&mut run.agent, &stop, Some(Duration::from_millis(200)), None, &mut |_| {}).unwrap();
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn the_status_round_trips_through_json() {
    let mut config = AgentConfig::new(120);
    config.exclude.comms.push("sshd".into());
    config.predicted = Some(Predicted {
        moved_out_bytes: 1 << 30,
        swap_ins_per_sec: 12.5,
        memory_saved_bytes: -3,
    });
    let status = AgentStatus {
        schema: STATUS_SCHEMA,
        mechanism: "process_madvise".into(),
        started_unix: 1_700_000_000,
        updated_unix: 1_700_000_060,
        config,
        stats: AgentStats {
            ticks: 4,
            paged_out_bytes: 8192,
            cpu_seconds: 0.25,
            ..Default::default()
        },
        last_pause: Some("memory pressure".into()),
        last_error: None,
    };
    let json = serde_json::to_string(&status).unwrap();
    assert_eq!(serde_json::from_str::<AgentStatus>(&json).unwrap(), status);
}

#[test]
fn the_config_has_its_defaults_and_refuses_what_cannot_run() {
    let c = AgentConfig::new(60);
    assert_eq!((c.period_secs, c.cpu_budget_percent, c.psi_some_avg10_limit), (15, 0.5, 0.1));
    assert_eq!((c.min_idle_bytes, c.pids.clone(), c.predicted), (1 << 20, None, None));
    assert!(c.check().is_ok());
    let periods: Vec<u64> = [1, 4, 8, 60, 1000].into_iter().map(default_period).collect();
    assert_eq!(periods, [1, 4, 5, 15, 60]);
    let refused = |f: &dyn Fn(&mut AgentConfig), what: &str| {
        let mut c = AgentConfig::new(60);
        f(&mut c);
        let e = c.check().unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    };
    refused(&|c| c.cold_age_secs = 0, "cold age");
    refused(&|c| c.period_secs = 0, "period");
    refused(&|c| c.period_secs = 61, "period");
    refused(&|c| c.cpu_budget_percent = f64::NAN, "CPU budget");
    refused(&|c| c.cpu_budget_percent = 0.0, "CPU budget");
    refused(&|c| c.psi_some_avg10_limit = -1.0, "PSI limit");
    refused(&|c| c.pids = Some(vec![]), "empty process list");
    refused(&|c| c.exclude.cgroups = vec!["system.slice".into()], "excluded cgroup");
    let p =
        Predicted { moved_out_bytes: 0, swap_ins_per_sec: f64::INFINITY, memory_saved_bytes: 0 };
    refused(&|c| c.predicted = Some(p), "predicted swap-ins");
}

#[test]
fn the_cpu_clocks_count_this_threads_and_this_processs_work() {
    // The process's clock is read first and last, so its span holds the thread's: every
    // nanosecond of this thread's work between t0 and t1 is in p1 - p0 too. (Read the other
    // way round, the thread's CPU between the two first reads, a `clock_gettime` summing every
    // thread of the test binary, was in the thread's delta only, and CI once saw the
    // process's fall short by it.)
    let p0 = process_cpu_seconds();
    let t0 = thread_cpu_seconds();
    let mut x = 0u64;
    while thread_cpu_seconds() - t0 < 0.02 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    let t1 = thread_cpu_seconds();
    let p1 = process_cpu_seconds();
    assert!(t1 - t0 >= 0.02);
    // Within a nanosecond, the clocks' unit (seconds as f64 round below it).
    assert!(p1 - p0 + 1e-9 >= t1 - t0, "process {} < thread {}", p1 - p0, t1 - t0);
}

#[test]
fn cgroup_prefixes_match_whole_path_components() {
    use super::procfs::under;
    assert!(under("/system.slice", "/system.slice"));
    assert!(under("/system.slice/db.service", "/system.slice/"));
    assert!(!under("/system.slice2", "/system.slice"));
    assert!(under("/anything", "/"));
}
