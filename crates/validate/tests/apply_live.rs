//! `zmem validate apply` on the live kernel: the decision of `fixtures/apply-zram-proactive.json`
//! (zram lzo-rle, proactive reclaim by process_madvise at T = 3 s) applied to a child that holds
//! 64 MiB and touches a tenth of it every 50 ms (`--pid` = the child).
//!
//! Asserts: the device held pages during the watch (orig_data_size > 0); the child's swapped
//! bytes (VmSwap) and the device's moved_out_bytes are within a generous band of the child's
//! idle nine tenths (at least half of them; the device also takes what the machine's own
//! kdamond pages out of other processes while it is the swap area, so its upper bound is not
//! the child's); the device is gone at the end, /proc/swaps and zswap's parameters read as
//! before, and the report says the machine is as it was. A second test's child exits
//! mid-watch: the exit is an event, the watch ends early, and the set-up is removed.
//!
//! Skipped (reported by zmem-testkit) without root, kernel zram or process_madvise. Each test
//! takes the live lock; the child is killed and reaped however the test ends, and whatever the
//! run made is undone by its own undo stack, on a panic too.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use zmem_kernel::capture::system_page_size;
use zmem_kernel::stat;
use zmem_validate::apply::{self, ApplyConfig, ApplyReport, Plan};
use zmem_validate::zswap_params;

const FIXTURE: &str = include_str!("fixtures/apply-zram-proactive.json");
/// The child's buffer, and the share of it that stays idle.
const HOLD: usize = 64 << 20;
const IDLE: u64 = HOLD as u64 * 9 / 10;

fn why_not() -> Option<String> {
    zmem_kernel::harness::unavailable_reason()
        .or_else(zmem_kernel::record::page_out::unavailable_reason)
}

/// The child: `HOLD` bytes of anonymous memory, each page written with its number (compressible,
/// not same-filled), the first tenth written again every 50 ms; says its pid once filled and
/// exits after `arg` seconds.
fn holder(arg: &str) {
    let secs: u64 = arg.parse().expect("seconds");
    let page = system_page_size();
    let mut buf = vec![0u8; HOLD];
    for (n, p) in buf.chunks_mut(page).enumerate() {
        for (i, b) in p.iter_mut().enumerate().step_by(64) {
            *b = (n + i / 64) as u8;
        }
    }
    zmem_testkit::say_ready(std::process::id());
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    let mut round = 0u8;
    while std::time::Instant::now() < end {
        round = round.wrapping_add(1);
        for p in buf[..HOLD / 10].chunks_mut(page) {
            p[8] = round;
        }
        std::hint::black_box(&buf);
        std::thread::sleep(Duration::from_millis(50));
    }
}

use zmem_testkit::Killed;

fn spawn(secs: u64) -> (Killed, u32) {
    let mut child = zmem_testkit::reexec("holder", &secs.to_string()).spawn().expect("child");
    let ready = zmem_testkit::Ready::watch(child.stdout.take().expect("stdout"));
    let child = Killed(child);
    let pid = ready.wait(Duration::from_secs(30)).expect("the child is ready");
    (child, pid.parse().expect("a pid"))
}

type State = (Vec<(String, String, u64, i32)>, Vec<(String, String)>, Vec<u32>);

/// What must read the same before and after: the swap areas (but what they hold), zswap's
/// parameters, the zram devices.
fn state() -> State {
    let swaps =
        stat::swaps().unwrap().into_iter().map(|a| (a.filename, a.kind, a.size_bytes, a.priority));
    let dir = Path::new(zswap_params::PARAMS_DIR);
    let zswap = if dir.is_dir() { zswap_params::snapshot(dir).unwrap() } else { Vec::new() };
    (swaps.collect(), zswap, stat::zram_ids(Path::new("/sys")))
}

/// The fixture with room for the machine's own page-outs, and an agent that never pauses: while our device is the swap area
/// of highest priority, the machine's kdamond may page other processes out into it, which a
/// device of the fixture's 128 MiB with a 64 MiB limit could fill before the child's pages.
fn plan() -> Plan {
    let mut p = Plan::from_json(FIXTURE).expect("the fixture");
    let s = p.decision.sizing.as_mut().expect("sized");
    (s.disksize_bytes, s.mem_limit_bytes) = (4 << 30, 0);
    // A build beside the test lifts memory PSI over the agent's 0.1 % now and then, and the
    // agent then pauses: the test is of the apply, not of the agent's pausing.
    let agent = p.decision.proactive.as_mut().and_then(|x| x.agent.as_mut()).expect("an agent");
    agent.psi_some_avg10_limit = 100.0;
    p
}

fn run(pid: u32, seconds: u64) -> ApplyReport {
    let cfg = ApplyConfig {
        seconds,
        every: Duration::from_secs(1),
        pids: Some(vec![pid]),
        exclude: Default::default(),
        no_proactive: false,
        swap_dir: "/var/tmp".into(),
    };
    let stop = AtomicBool::new(false);
    let r = apply::run(&plan(), &cfg, &stop, &mut |l| eprintln!("{l}")).expect("validate apply");
    for line in r.changes.iter().chain(&r.events).chain(&r.differs) {
        eprintln!("  {line}");
    }
    eprintln!("  ended early: {:?}\n  realized: {:?}", r.ended_early, r.realized);
    r
}

#[test]
#[ignore = "live: needs root, kernel zram and process_madvise (scripts/test runs it)"]
fn a_zram_decision_with_proactive_reclaim_is_applied_watched_and_undone() {
    zmem_testkit::child("holder", holder);
    let Some(_live) = zmem_testkit::live(why_not()) else { return };
    let before = state();
    let (child, pid) = spawn(60);
    let r = run(pid, 15);
    drop(child);
    assert_eq!(state(), before, "swap areas, zswap's parameters and zram devices as before");
    assert!(r.restored && r.differs.is_empty(), "{:?} {:?}", r.events, r.differs);
    assert!(r.ended_early.is_none(), "{:?}", r.ended_early);
    assert!(r.changes[0].starts_with("made /dev/zram"), "{:?}", r.changes);
    assert_eq!(r.mechanism.as_deref(), Some("process_madvise"));
    assert!(r.samples.iter().any(|s| s.moved_out_bytes > 0), "the device held nothing");
    let z = &r.realized;
    let swapped = z.watched_swapped_bytes.expect("watched");
    let why = format!("VmSwap {swapped}: {:?}, samples {:?}", z.agent, r.samples);
    assert!(swapped >= IDLE / 2 && swapped <= HOLD as u64 + (16 << 20), "{why}");
    assert!(z.moved_out_bytes >= IDLE / 2, "moved out {} of {IDLE} idle", z.moved_out_bytes);
    assert!(z.memory_saved_bytes > 0 && z.zram.is_some_and(|m| m.mem_used_total > 0));
    let a = z.agent.expect("the agent's stats");
    assert!(a.ticks >= 3 && a.paged_out_bytes >= IDLE / 2, "{a:?}");
    assert!(r.events.iter().any(|e| e.starts_with("undo: swapped off and removed /dev/zram")));
}

#[test]
#[ignore = "live: needs root, kernel zram and process_madvise (scripts/test runs it)"]
fn a_watched_process_that_exits_ends_the_watch_and_the_set_up_goes() {
    zmem_testkit::child("holder", holder);
    let Some(_live) = zmem_testkit::live(why_not()) else { return };
    let before = state();
    let (child, pid) = spawn(5);
    let r = run(pid, 30);
    drop(child);
    assert_eq!(state(), before);
    assert!(r.restored, "{:?}", r.events);
    let exited = format!("process {pid} exited");
    assert!(r.events.iter().any(|e| e.ends_with(&exited)), "{:?}", r.events);
    let why = r.ended_early.as_deref().unwrap_or_default();
    assert!(why.contains("every process watched had exited"), "{why}");
    assert!(r.seconds < 20.0, "ended early: {} s", r.seconds);
    // The figures stop at the last sample that saw the child.
    assert!(r.realized.at_secs < r.seconds, "{} {}", r.realized.at_secs, r.seconds);
}
