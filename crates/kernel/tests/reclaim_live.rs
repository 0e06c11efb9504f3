//! The proactive-reclaim agent on the live kernel: a child holds 64 MiB, touches a tenth of it
//! every 100 ms and leaves the rest idle; the agent (T = 3 s, that child only) must page out
//! most of the idle nine tenths, see little come back, and leave the hot tenth in RAM. It uses
//! a zram swap area of its own (or the machine's zram swap, left as it is) and removes what it
//! made, however it ends. Live test (`#[ignore]`, run by scripts/test's live pass): skipped,
//! reported by zmem-testkit, without root, kernel zram or process_madvise.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use zmem_kernel::capture::system_page_size;
use zmem_kernel::harness::ZramSwapDevice;
use zmem_kernel::reclaim::{self, Agent, AgentConfig, AgentStats, AgentStatus};
use zmem_kernel::record::page_out;
use zmem_kernel::record::pagemap::{self, PM_PRESENT};

/// The child's buffer.
const SIZE: usize = 64 << 20;

/// The child: 64 MiB anonymous, every page touched once, the first tenth touched every 100 ms
/// by a thread; says its buffer's address when the first round is done, runs until killed.
fn hot_tenth_child() {
    let page = system_page_size();
    let mut buf = vec![0u8; SIZE];
    for i in (0..SIZE).step_by(page) {
        buf[i] = 1;
    }
    let ptr = buf.as_mut_ptr() as usize;
    std::thread::spawn(move || {
        loop {
            for i in (0..SIZE / 10).step_by(page) {
                // SAFETY: `ptr..ptr + SIZE` is `buf`, which outlives this thread (the main
                // thread never returns: it waits to be killed); volatile keeps the store.
                unsafe { std::ptr::write_volatile((ptr + i) as *mut u8, 2) };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    zmem_testkit::say_ready(format!("{ptr:x}"));
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        std::hint::black_box(&buf);
    }
}

/// The active swap areas' names.
fn areas() -> BTreeSet<String> {
    zmem_kernel::stat::swaps().unwrap().into_iter().map(|a| a.filename).collect()
}

/// Watches /proc/swaps every 20 ms until `done`: the first set of areas unlike `start`, if any.
fn watch_areas(start: &BTreeSet<String>, done: &AtomicBool) -> Option<BTreeSet<String>> {
    while !done.load(Ordering::Relaxed) {
        let now = areas();
        if now != *start {
            return Some(now);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

use zmem_testkit::Killed;

/// Of the whole pages in `from..to` of `pid`, how many are present and how many there are.
fn present(pid: u32, from: u64, to: u64) -> (u64, u64) {
    let ps = system_page_size() as u64;
    let vaddrs: Vec<u64> = (from.div_ceil(ps)..to / ps).map(|p| p * ps).collect();
    let entries = pagemap::entries(Path::new("/proc"), pid, &vaddrs, ps).unwrap();
    (entries.iter().filter(|&&e| e & PM_PRESENT != 0).count() as u64, vaddrs.len() as u64)
}

/// Runs the agent on `pid` alone for 15 s (T = 3 s), its status written to `status_path`:
/// its stats at the end and at each tick, and the swap areas if another process changed them.
fn run_agent(pid: u32, status_path: &Path) -> (AgentStats, Vec<AgentStats>, Option<String>) {
    let mut config = AgentConfig::new(3);
    config.pids = Some(vec![pid]);
    // The page-outs are this test's whole work, and a build beside it may raise the machine's
    // memory pressure: neither the budget nor PSI may stop it here (their tests are the unit
    // tests over a fake /proc).
    config.cpu_budget_percent = 50.0;
    config.psi_some_avg10_limit = 100.0;
    let mut agent = Agent::new(config).unwrap();
    let (stop, done) = (AtomicBool::new(false), AtomicBool::new(false));
    let mut ticks = Vec::new();
    let start = areas();
    let (stats, changed) = std::thread::scope(|sc| {
        let watch = sc.spawn(|| watch_areas(&start, &done));
        let fifteen = Some(Duration::from_secs(15));
        let stats =
            reclaim::run(&mut agent, &stop, fifteen, Some(status_path), &mut |s| ticks.push(*s));
        done.store(true, Ordering::Relaxed);
        (stats.unwrap(), watch.join().unwrap())
    });
    (stats, ticks, changed.map(|now| format!("{start:?} -> {now:?}")))
}

#[test]
#[ignore = "live: needs root, kernel zram and process_madvise (scripts/test runs it)"]
fn the_agent_pages_out_the_idle_nine_tenths_and_keeps_the_hot_tenth() {
    zmem_testkit::child("agent-hot-tenth", |_| hot_tenth_child());
    let why = zmem_kernel::zram_device::unavailable_reason().or_else(page_out::unavailable_reason);
    let Some(live) = zmem_testkit::live(why) else { return };
    // Declared before the child: dropped after it, so the swapoff reads back nothing of it.
    let swap = zmem_kernel::harness::page_out_swap(SIZE as u64).unwrap();
    eprintln!("swap: {}", swap.note);
    // The device it made, if it made one (else the machine's zram swap, left as it is).
    let made = swap.guard.downcast_ref::<ZramSwapDevice>().map(|d| d.path().to_path_buf());
    let mut child =
        Killed(zmem_testkit::reexec("agent-hot-tenth", "").spawn().expect("spawn the child"));
    let ready = zmem_testkit::Ready::watch(child.0.stdout.take().unwrap());
    let addr = u64::from_str_radix(&ready.wait(Duration::from_secs(60)).unwrap(), 16).unwrap();
    let pid = child.0.id();
    let dir = tempfile::tempdir().unwrap();
    let status_path = dir.path().join("agent.json");
    let (stats, ticks, changed) = run_agent(pid, &status_path);
    let (hot_in, hot_pages) = present(pid, addr, addr + SIZE as u64 / 10);
    let (idle_in, idle_pages) = present(pid, addr + SIZE as u64 / 10, addr + SIZE as u64);
    eprintln!("hot {hot_in}/{hot_pages} in RAM, idle {idle_in}/{idle_pages}; {stats:?}");
    ticks.iter().for_each(|s| eprintln!("  {s:?}"));
    // Another process's swapon or swapoff (a swapoff reads every page back) changes where the
    // pages are behind the agent's back: nothing can be judged then.
    if let Some(changed) = changed {
        return live.skip_optional(format!("another process changed the swap areas: {changed}"));
    }
    let idle_bytes = idle_pages * system_page_size() as u64;
    assert_eq!(stats.processes, 1);
    assert!(stats.ticks >= 4, "{stats:?}");
    // The idle nine tenths went out (pagemap), and the agent did it (its count).
    assert!(idle_pages - idle_in >= idle_pages * 7 / 10, "idle in RAM {idle_in}/{idle_pages}");
    assert!(stats.paged_out_bytes >= idle_bytes * 7 / 10, "{stats:?}");
    assert!(stats.out_bytes >= idle_bytes * 7 / 10, "{stats:?}");
    // What came back is the hot tenth, about once: small beside what went out.
    assert!(stats.came_back_bytes <= SIZE as u64 / 5, "{stats:?}");
    assert!(stats.came_back_bytes * 3 <= stats.paged_out_bytes, "{stats:?}");
    // The hot tenth is in RAM at the end.
    assert!(hot_in * 10 >= hot_pages * 9, "hot in RAM {hot_in}/{hot_pages}");
    // The status file says what run returned.
    // (serde_json may read a float back a unit in the last place off.)
    let mut status: AgentStatus =
        serde_json::from_slice(&std::fs::read(&status_path).unwrap()).unwrap();
    assert!((status.stats.cpu_seconds - stats.cpu_seconds).abs() < 1e-9, "{status:?}");
    status.stats.cpu_seconds = stats.cpu_seconds;
    assert_eq!(status.stats, stats);
    drop(child);
    drop(swap);
    // Only what it made is checked: others may add or remove swap areas meanwhile.
    if let Some(made) = made {
        let left = zmem_kernel::stat::swaps().unwrap();
        assert!(left.iter().all(|a| Path::new(&a.filename) != made), "{made:?} still swaps");
    }
}
