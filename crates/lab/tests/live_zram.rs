//! The live kernel end to end: a real program swaps into a zram device of ours, and zmem's zram,
//! given the pages captured from that device, stores them exactly as the kernel did.
//!
//! A fresh zram swap device (lzo-rle, the highest priority), a memory cgroup with a 48 MiB limit,
//! and in it this test re-executed as its child (`live_child` below, through zmem-testkit), which fills three
//! times the limit with pages of zmem's `mixed` kinds (heap, text, integers, floats, sparse,
//! random, same-filled) and then waits. Once the device holds enough, the child is frozen, the
//! device captured with O_DIRECT (`capture::zram::capture_device`), and the captured pages, swap
//! header included, written in slot order to a zmem zram device with the same algorithm:
//! `orig_data_size`, `compr_data_size` and `huge_pages` must equal the live `mm_stat`.
//!
//! A live test (`#[ignore]`, run by scripts/test's live pass): skips, reported as such by
//! zmem-testkit, without root, kernel zram or a memory cgroup. Everything it makes (program,
//! cgroup, swap device) is undone by guards, on failure too.

use std::time::{Duration, Instant};

use zmem_kernel::capture::zram::capture_device_still;
use zmem_kernel::harness::{self as live, Harness, HarnessConfig, ZramSwapConfig};
use zmem_pages::generate::mixed::{self, WEIGHTS};
use zmem_pages::prng::SplitMix64;
use zmem_pages::{MappingKind, PageSet};
use zmem_zram::MmStat;

const ALGO: &str = "lzo-rle";
const LIMIT: u64 = 48 << 20;
const CHILD_MIB: usize = 144;
/// Stored bytes the device must reach before the capture.
const ENOUGH: u64 = 48 << 20;

/// The child: fills `mib` MiB with the mixed kinds, says it is ready, and waits to be killed.
fn live_child(mib: usize) {
    let page = 4096;
    // calloc'd: untouched pages (the `zero` kind) never become resident. malloc's header puts
    // the buffer 16 bytes into its first page: align, so each generated page is a real page
    // (same-filled pages stay same-filled).
    let mut backing = vec![0u8; (mib << 20) + page];
    let skip = backing.as_ptr().align_offset(page);
    let mem = &mut backing[skip..skip + (mib << 20)];
    let mut rng = SplitMix64::new(42);
    let total: u64 = WEIGHTS.iter().map(|w| u64::from(w.1)).sum();
    for p in mem.chunks_exact_mut(page) {
        let mut x = rng.below(total);
        let kind = WEIGHTS
            .iter()
            .find(|w| {
                let hit = x < u64::from(w.1);
                x = x.saturating_sub(u64::from(w.1));
                hit
            })
            .map_or(WEIGHTS[0].0, |w| w.0);
        mixed::fill(kind, &mut rng, p);
    }
    zmem_testkit::say_ready("filled");
    loop {
        std::thread::sleep(Duration::from_secs(1));
        std::hint::black_box(&backing);
    }
}

#[test]
#[ignore = "live: needs root, kernel zram and a memory cgroup (scripts/test runs it)"]
fn live_swap_matches_zmem_zram() {
    zmem_testkit::child("fill", |mib| live_child(mib.parse().unwrap()));
    let Some(_live) = zmem_testkit::live(live::unavailable_reason()) else { return };
    let started = Instant::now();
    let cfg = HarnessConfig {
        swap: ZramSwapConfig {
            algorithm: ALGO.into(),
            disksize: 512 << 20,
            priority: 32000,
            mem_limit: None,
        },
        memory_limit: LIMIT,
    };
    let mut h = Harness::new(&cfg).expect("live set-up");
    let others = live::other_swaps(&[h.swap.path()]).unwrap();
    if !others.is_empty() {
        eprintln!("note: other swap areas are active and share the traffic: {others:?}");
    }

    let cmd = zmem_testkit::reexec("fill", &CHILD_MIB.to_string());
    let child = h.spawn(cmd).expect("spawn the child");
    let pid = child.pid();
    let ready_line = zmem_testkit::Ready::watch(child.child_mut().stdout.take().unwrap());
    assert!(h.cgroup.procs().unwrap().contains(&pid), "the child is in its cgroup");

    // Filled, and swapped enough.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ready = false;
    loop {
        let child = h.child.as_mut().unwrap();
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child exited before it was ready: {status} (OOM-killed? see dmesg)");
        }
        ready |= ready_line.try_take().is_some();
        let stored = h.swap.mm_stat().unwrap().orig_data_size;
        if ready && stored >= ENOUGH {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after 20 s: ready {ready}, {stored} bytes stored (want {ENOUGH})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    h.child.as_mut().unwrap().freeze().unwrap();

    // Other processes may still swap (the boot kdamond pages out cold memory whenever swap
    // exists, faster with a build running beside the tests): capture until the device held still
    // across the read, mm_stat and the write counters of its `stat` alike
    // (`ZramSummary::stable`). The lab's own read below does the same (`evidence::from_zram`).
    let (set, summary, attempt) =
        capture_device_still(h.swap.path(), 8, Duration::from_millis(200)).unwrap();
    assert!(summary.stable(), "mm_stat never held still for a capture");
    let live: MmStat = summary.mm_stat_before.parse().unwrap();
    check_capture(&set, &h);

    let ours = zmem_experiments::conform::ours(ALGO, set.bytes()).unwrap();
    let pages = set.len() as u64;
    eprintln!(
        "live zram{}: {pages} pages captured ({} slots, {} zero slots dropped) in {attempt} \
         attempt(s); live   {}",
        h.swap.id(),
        summary.slots,
        summary.zero_slots,
        summary.mm_stat_before.trim()
    );
    eprintln!("zmem: {}", ours.to_string().trim());

    assert_eq!(live.orig_data_size, pages * 4096, "every stored slot was captured");
    assert_eq!(ours.orig_data_size, live.orig_data_size, "orig_data_size");
    assert_eq!(ours.compr_data_size, live.compr_data_size, "compr_data_size");
    assert_eq!(ours.huge_pages, live.huge_pages, "huge_pages");
    assert_eq!(ours.same_pages, live.same_pages, "same_pages");
    lab_reads_the_live_device(&h);
    eprintln!("live test took {:.1} s", started.elapsed().as_secs_f64());
    drop(h);
}

/// The capture's metadata: slot 0 is the swap header, slots ascend, the device's state is there.
fn check_capture(set: &PageSet, h: &Harness) {
    let page0 = set.page(0);
    assert_eq!(&page0[4096 - 10..], b"SWAPSPACE2");
    let metas = set.metas().unwrap();
    assert_eq!(metas[0].vaddr, 0);
    assert!(metas.iter().all(|m| m.kind == MappingKind::ZramSlot));
    assert!(metas.windows(2).all(|w| w[0].vaddr < w[1].vaddr));
    let m = set.set_meta().unwrap();
    assert_eq!(m["source"], "zram");
    assert_eq!(m["zram.algorithm"], ALGO);
    assert_eq!(m["zram.device"], format!("zram{}", h.swap.id()));
    assert_eq!(m["swap.priority"], "32000");
    assert_eq!(m["zram.disksize"], (512u64 << 20).to_string());
    assert_eq!(m["capture.pages"], set.len().to_string());
    for key in ["zram.mm_stat", "zram.io_stat", "zram.mem_limit", "kernel.release", "capture.time"]
    {
        assert!(m.contains_key(key), "{key} missing from {m:?}");
    }
}

/// `zmem lab --source zram`'s evidence: the live device is found in /proc/swaps, captured, and
/// its "Now" predicted exactly; its traffic can be watched.
fn lab_reads_the_live_device(h: &Harness) {
    use zmem_lab::NoProgress;
    use zmem_lab::{Input, evidence, now};
    let e = evidence::gather(Input::Zram, 2048, &NoProgress).expect("zram evidence");
    assert_eq!(e.source.kind, "zram");
    assert!(e.source.detail.contains(&h.swap.path().display().to_string()), "{}", e.source.detail);
    assert!(e.zram_ids.contains(&h.swap.id()));
    assert_eq!(e.source.pages, 2048, "sampled down to --max-pages");
    let n = e.now.expect("a Now section");
    // The lab reads the device once: exact where nothing swapped meanwhile; where something
    // did (the boot kdamond pages other processes out), it says the device changed.
    let moved = e.source.detail.contains("the device changed while it was read");
    if n.config.device == h.swap.path().display().to_string() {
        assert!(n.exact || moved, "{:?}", n.drift);
        assert_eq!(n.config.comp_algorithm, ALGO);
        assert_eq!(n.config.swap_priority, Some(32000));
        assert!(n.fragmentation_bytes.unsigned_abs() < 1 << 20, "{}", n.fragmentation_bytes);
    }
    let rates = now::watch(&e.zram_ids, 1, 4096, &NoProgress).unwrap().expect("swap is active");
    assert_eq!(rates.source, "observed");
    assert!(rates.observed_secs >= 1.0);
}
