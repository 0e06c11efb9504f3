//! `zmem trace record` by page-out sampling on the live kernel: a child process writes every
//! fourth page of a region it owns, and the recording, with a zram swap device of its own that
//! it removes at the end, must find exactly those pages hot. Live tests (`#[ignore]`, run by
//! scripts/test's live pass): skipped, reported by zmem-testkit, without root or kernel zram.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use zmem_kernel::capture::{fill_pattern, system_page_size};
use zmem_kernel::record::page_out;
use zmem_kernel::record::{self, Method};
use zmem_pages::trace::{Op, Origin};

/// A forked child that writes the last byte of every `stride`-th page of its `pages`-page region
/// every 20 ms until killed. The region is mapped and filled (distinct, incompressible pages)
/// before the fork and unmapped in the parent after it, so the child's pages are its own (the
/// kernel pages out only pages mapped by one process).
struct Writer {
    pid: libc::pid_t,
    addr: u64,
}

impl Writer {
    fn spawn(pages: usize, stride: usize) -> Self {
        let ps = system_page_size();
        let len = pages * ps;
        // SAFETY: a fresh private anonymous mapping; the result is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap");
        // SAFETY: `p` is a fresh writable mapping of `len` bytes, used only here.
        let region = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
        for (i, page) in region.chunks_exact_mut(ps).enumerate() {
            fill_pattern(i as u64, page);
        }
        // SAFETY: the child below calls only async-signal-safe functions (prctl, nanosleep,
        // _exit) and writes to its own copy of the mapping, so forking a threaded test process
        // is sound.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            // SAFETY: the child: the mapping is valid in it; it dies with the test's thread.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                let wait = libc::timespec { tv_sec: 0, tv_nsec: 20_000_000 };
                loop {
                    for i in (0..pages).step_by(stride) {
                        let b = p.cast::<u8>().add(i * ps + ps - 1);
                        std::ptr::write_volatile(b, std::ptr::read_volatile(b).wrapping_add(1));
                    }
                    libc::nanosleep(&wait, std::ptr::null_mut());
                }
            }
        }
        // SAFETY: the parent's copy of the mapping is not used again.
        unsafe { libc::munmap(p, len) };
        Self { pid, addr: p as u64 }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // SAFETY: our own child; reaped right after.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn page_out_recording_of_a_child_finds_the_pages_it_writes() {
    let why = zmem_kernel::harness::unavailable_reason().or_else(page_out::unavailable_reason);
    let Some(_live) = zmem_testkit::live(why) else { return };
    let swaps_before = zmem_kernel::stat::swaps().unwrap();
    let (pages, stride) = (64usize, 4usize);
    let child = Writer::spawn(pages, stride);
    let opts = record::Options {
        pids: vec![child.pid as u32],
        duration: Duration::from_millis(1200),
        interval: Duration::from_millis(100),
        method: Some(Method::PageOut),
    };
    let stop = AtomicBool::new(false);
    let mut made = Vec::new();
    let mut make_swap = |bytes: u64| {
        let s = zmem_kernel::harness::page_out_swap(bytes)?;
        made.push(s.note.clone());
        Ok(s)
    };
    let r = record::record(&opts, &stop, &mut |_| {}, &mut make_swap);
    let addr = child.addr;
    drop(child);
    let r = r.unwrap();
    assert_eq!(made.len(), 1, "one swap device for the recording");
    assert_eq!(zmem_kernel::stat::swaps().unwrap(), swaps_before, "the swap device is gone");

    assert_eq!(r.origin, Origin::PageOut);
    assert_eq!(r.pages.set_meta().unwrap()["trace.origin"], "page-out");
    assert_eq!(r.ended_early, None);
    assert_eq!(r.intervals, 12);
    let ps = system_page_size() as u64;
    let mut touched: BTreeMap<u64, u64> = BTreeMap::new();
    for a in &r.trace.accesses {
        assert_eq!(a.op, Op::Read, "page-out sampling does not tell reads from writes");
        let m = r.pages.meta(a.page as usize).unwrap();
        if m.vaddr >= addr && m.vaddr < addr + pages as u64 * ps {
            *touched.entry((m.vaddr - addr) / ps).or_insert(0) += 1;
        }
    }
    let hot: Vec<u64> = touched.keys().copied().collect();
    let want: Vec<u64> = (0..pages as u64).step_by(stride).collect();
    assert_eq!(hot, want, "the written pages are the hot ones, and only they");
    // Written every 20 ms: seen in (nearly) every 100 ms interval, at least half of them.
    assert!(touched.values().all(|&n| 2 * n >= r.intervals), "{touched:?}");
}

/// Where a zram device is already the first swap area, page-out sampling uses it and makes none.
#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn an_active_zram_swap_is_used_not_doubled() {
    let Some(live) = zmem_testkit::live(zmem_kernel::harness::unavailable_reason()) else {
        return;
    };
    let others = zmem_kernel::harness::other_swaps(&[]).unwrap();
    if others.iter().any(|a| a.priority >= 32767) {
        return live.skip_optional("a swap area not ours has priority 32767");
    }
    let cfg = zmem_kernel::harness::ZramSwapConfig { priority: 32767, ..Default::default() };
    let ours = zmem_kernel::harness::ZramSwapDevice::create(&cfg).unwrap();
    let before = zmem_kernel::stat::swaps().unwrap();
    let s = zmem_kernel::harness::page_out_swap(1 << 20).unwrap();
    assert_eq!(zmem_kernel::stat::swaps().unwrap(), before, "no device made");
    assert!(s.note.contains(&ours.path().display().to_string()), "{}", s.note);
    assert!(s.note.contains("not ours"), "{}", s.note);
    drop(s);
    assert_eq!(zmem_kernel::stat::swaps().unwrap(), before, "left as it is");
}
