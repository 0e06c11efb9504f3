//! Capture a child process that filled its memory with a known pattern, and find the pattern in
//! the dump with the right pid, name, addresses and mapping kind.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use zmem_kernel::capture::{self, Event, fill_pattern, system_page_size};
use zmem_pages::MappingKind;

#[test]
#[ignore = "live: reads a child's /proc/PID/mem (ptrace rules may forbid it) (scripts/test runs it)"]
fn captures_a_child_process_pattern_at_its_addresses() {
    let live = zmem_testkit::may_skip();
    let pages = 48usize;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem-fillpat"))
        .arg(pages.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning zmem-fillpat");
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let mut it = line.split_whitespace();
    let addr = u64::from_str_radix(it.next().unwrap(), 16).unwrap();
    assert_eq!(it.next().unwrap().parse::<usize>().unwrap(), pages);

    if let Err(e) = std::fs::File::open(format!("/proc/{pid}/mem"))
        .and_then(|f| std::os::unix::fs::FileExt::read_at(&f, &mut [0u8; 1], addr))
    {
        drop(child.stdin.take());
        child.wait().unwrap();
        return live.skip(format!("/proc/{pid}/mem not readable: {e}"));
    }

    let mut events = Vec::new();
    let (set, summary) = capture::capture(&[pid], &mut |e| {
        events.push(match e {
            Event::Start { processes } => format!("start {processes}"),
            Event::Captured { pid, pages, .. } => format!("captured {pid} {}", pages > 0),
            Event::Skipped { pid, reason } => format!("skipped {pid} {reason}"),
        })
    })
    .unwrap();
    drop(child.stdin.take());
    child.wait().unwrap();

    assert_eq!(events, ["start 1".to_string(), format!("captured {pid} true")]);
    assert_eq!(summary.processes, 1);
    assert!(summary.skipped.is_empty());
    assert_eq!(summary.pages, set.len());

    let ps = system_page_size();
    assert_eq!(set.page_size(), ps);
    let mut expected = vec![0u8; ps];
    let mut found = 0;
    for i in 0..set.len() {
        let m = set.meta(i).expect("captured pages carry metadata");
        assert_eq!(m.pid, pid);
        assert_eq!(&*m.comm, "zmem-fillpat");
        assert_eq!(m.vaddr % ps as u64, 0);
        if m.vaddr >= addr && m.vaddr < addr + (pages * ps) as u64 {
            let k = (m.vaddr - addr) / ps as u64;
            fill_pattern(k, &mut expected);
            assert_eq!(set.page(i), &expected[..], "page {k} of the pattern at {:#x}", m.vaddr);
            // 48 pages (192 KiB) is above glibc's mmap threshold: an anonymous mapping, or the
            // brk heap where the threshold was raised.
            assert!(matches!(m.kind, MappingKind::Anon | MappingKind::Heap), "{:?}", m.kind);
            found += 1;
        }
    }
    assert_eq!(found, pages, "every pattern page is in the dump exactly once");
    // Nothing else in the dump looks like a pattern page at a wrong address.
    let tagged = set.pages().filter(|p| p.starts_with(b"ZMEMFILL")).count();
    assert_eq!(tagged, pages);
}

#[test]
fn a_process_that_exits_before_capture_is_skipped() {
    // Reaped: /proc/PID is gone, unless the pid was reused in between (then it is captured):
    // another exited process then, up to ten.
    let (pid, summary) = (0..10)
        .map(|_| {
            let mut child = Command::new("true").spawn().expect("spawning true");
            let pid = child.id();
            child.wait().unwrap();
            (pid, capture::capture(&[pid], &mut |_| {}).unwrap().1)
        })
        .find(|(_, s)| s.processes + s.empty == 0)
        .expect("ten pids, each reused before its capture");
    assert_eq!(summary.skipped.len(), 1);
    assert_eq!(summary.skipped[0].0, pid);
    assert_eq!(summary.pages, 0);
}
