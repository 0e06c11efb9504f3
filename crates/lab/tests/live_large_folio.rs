//! The live kernel's large-folio page-out, end to end: a THP of 256 zero and 256 random pages,
//! paged out whole to a zram swap device of ours, reaches zram whole (6.18's
//! `is_folio_zero_filled()` is per folio, mm/page_io.c `swap_writeout()`), so zram stores its
//! zero subpages as same-filled pages; `capture --zram` counts those written zero slots
//! (`same_pages` says how many) and zmem's zram, given the captured pages, gives the live
//! `mm_stat` field by field.
//!
//! Set-up, undone by guards on failure too: a fresh zram swap device (lzo-rle, the highest
//! priority) and a memory cgroup (256 MiB, far above what the child uses: the page-out is
//! `MADV_PAGEOUT`, not pressure), and in it this test re-executed as its child
//! (`large_folio_child`), which maps 4 MiB, asks for huge pages (`MADV_HUGEPAGE`) on the 2 MiB
//! aligned half, fills it, checks it is one THP (`AnonHugePages` in /proc/self/smaps_rollup),
//! pages it out with `MADV_PAGEOUT` and waits. The boot kdamond pages other processes out into
//! any swap, ours included: the capture is retried until the device holds still, and the
//! comparison covers every page the device holds, the others' too.
//!
//! A live test (`#[ignore]`, run by scripts/test's live pass): skips, reported as such by
//! zmem-testkit, without root, kernel zram, a memory cgroup or THP (`never`). A kernel that
//! split the THP instead of swapping it out whole (no `thp_swpout` after the page-out) is a skip
//! too, saying so: the per-folio rule is then not exercised.

use std::time::Duration;

use zmem_kernel::capture::zram::capture_device_still;
use zmem_kernel::harness::{self as live, Harness, HarnessConfig, ZramSwapConfig};
use zmem_pages::prng::SplitMix64;
use zmem_zram::MmStat;

const PAGED_OUT: &str = "paged-out";
const NOT_THP: &str = "no-thp";
const ALGO: &str = "lzo-rle";
const HPAGE: usize = 2 << 20;

fn thp_kib() -> u64 {
    let t = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    t.lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The child: a THP, half zero, paged out; says whether it was a THP, and waits to be killed.
fn large_folio_child() {
    // SAFETY: an anonymous private mapping of 2 huge pages, at an address the kernel picks; no
    // Rust object aliases it, and it is never unmapped (the child is killed).
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            2 * HPAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED, "mmap");
    let aligned = (base as usize).next_multiple_of(HPAGE) as *mut libc::c_void;
    // SAFETY: `aligned..aligned + HPAGE` lies inside the mapping (4 MiB from `base`).
    let r = unsafe { libc::madvise(aligned, HPAGE, libc::MADV_HUGEPAGE) };
    assert_eq!(r, 0, "madvise(MADV_HUGEPAGE)");
    // SAFETY: the same range, readable and writable, used only through this slice.
    let mem = unsafe { std::slice::from_raw_parts_mut(aligned as *mut u8, HPAGE) };
    // The first write faults in the whole THP, zeroed; the second half gets random bytes.
    mem[0] = 0;
    let mut rng = SplitMix64::new(7);
    rng.fill(&mut mem[HPAGE / 2..]);
    if thp_kib() < 2048 {
        zmem_testkit::say_ready(NOT_THP);
    } else {
        // SAFETY: the range is ours; MADV_PAGEOUT only reclaims it.
        let r = unsafe { libc::madvise(aligned, HPAGE, libc::MADV_PAGEOUT) };
        assert_eq!(r, 0, "madvise(MADV_PAGEOUT)");
        zmem_testkit::say_ready(PAGED_OUT);
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A /proc/vmstat counter (0 where absent).
fn vmstat(name: &str) -> u64 {
    zmem_kernel::stat::vmstat_counter(name).ok().flatten().unwrap_or(0)
}

#[test]
#[ignore = "live: needs root, kernel zram, a memory cgroup and THP (scripts/test runs it)"]
fn a_half_zero_thp_reaches_zram_whole_and_the_capture_counts_its_zero_pages() {
    zmem_testkit::child("thp", |_| large_folio_child());
    let Some(live) = zmem_testkit::live(live::unavailable_reason()) else { return };
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.is_empty() || thp.contains("[never]") {
        return live.skip(format!("transparent huge pages are off here ({})", thp.trim()));
    }
    let cfg = HarnessConfig {
        swap: ZramSwapConfig {
            algorithm: ALGO.into(),
            disksize: 128 << 20,
            priority: 32000,
            mem_limit: None,
        },
        memory_limit: 256 << 20,
    };
    let mut h = Harness::new(&cfg).expect("live set-up");
    let before = h.swap.mm_stat().unwrap();
    let (thp_swpout, swpout_zero) = (vmstat("thp_swpout"), vmstat("swpout_zero"));

    let child = h.spawn(zmem_testkit::reexec("thp", "")).expect("spawn the child");
    let ready = zmem_testkit::Ready::watch(child.child_mut().stdout.take().unwrap());
    let line = ready.wait(Duration::from_secs(20)).expect("the child reports");
    if line == NOT_THP {
        return live.skip("the child's region did not become a THP (no free huge page?)");
    }
    assert_eq!(line, PAGED_OUT);
    h.child.as_mut().unwrap().freeze().unwrap();
    let thp_out = vmstat("thp_swpout") - thp_swpout;
    if thp_out == 0 {
        return live.skip("the kernel split the THP before swapping it out (thp_swpout +0)");
    }

    // Capture until the device held still across the read (others swap into it too).
    let (set, summary, _) =
        capture_device_still(h.swap.path(), 8, Duration::from_millis(200)).unwrap();
    assert!(summary.stable(), "mm_stat never held still for a capture");
    let live: MmStat = summary.mm_stat_before.parse().unwrap();
    eprintln!(
        "thp_swpout +{thp_out}, swpout_zero +{}; same_pages {} -> {}; {summary}",
        vmstat("swpout_zero") - swpout_zero,
        before.same_pages,
        live.same_pages
    );
    // The kernel: the folio's 256 zero subpages went to zram, as same-filled pages.
    assert!(live.same_pages >= before.same_pages + 256, "{live:?}");
    // The capture: those written zero slots are kept, not dropped as never written.
    assert!(summary.zero_pages >= 256, "{summary:?}");
    assert_eq!(live.orig_data_size, set.len() as u64 * 4096, "every stored slot was captured");
    let ours = zmem_experiments::conform::ours(ALGO, set.bytes()).unwrap();
    assert_eq!(ours.same_pages, live.same_pages, "same_pages");
    assert_eq!(ours.orig_data_size, live.orig_data_size, "orig_data_size");
    assert_eq!(ours.compr_data_size, live.compr_data_size, "compr_data_size");
    assert_eq!(ours.huge_pages, live.huge_pages, "huge_pages");
    drop(h);
}
