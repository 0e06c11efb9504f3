//! Recorded traces: the conversion of synthetic DAMON snapshots and soft-dirty observations into
//! trace accesses (invariants under proptest), the origin kept in the header, and a live
//! recording of a child process that writes a known set of pages (a live test: skipped, reported
//! by zmem-testkit, where the kernel offers no soft-dirty bits).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use proptest::prelude::*;
use zmem_kernel::capture::system_page_size;
use zmem_kernel::record::{self, soft_dirty};
use zmem_pages::trace::convert::{DamonRegion, PageIndex, damon_counts, spread};
use zmem_pages::trace::{HEADER_LEN, Op, Origin, Trace, TraceReader};

/// Pages of two processes: pid 1 at pages 0..a, pid 2 at pages 0..b (every other page).
fn index(a: u64, b: u64) -> (PageIndex, Vec<(u32, u64)>) {
    let pages: Vec<(u32, u64)> =
        (0..a).map(|p| (1, p * 4096)).chain((0..b).map(|p| (2, p * 8192))).collect();
    (PageIndex::from_pages(pages.clone()).unwrap(), pages)
}

fn region() -> impl Strategy<Value = DamonRegion> {
    (1u32..=3, 0u64..80, 1u64..40, 0u32..40).prop_map(|(pid, s, len, n)| DamonRegion {
        pid,
        start: s * 4096,
        end: (s + len) * 4096,
        nr_accesses: n,
    })
}

proptest! {
    #[test]
    fn damon_snapshots_become_proportional_accesses_inside_their_interval(
        a in 0u64..60,
        b in 0u64..30,
        // Non-overlapping per pid is what DAMON gives; overlaps are allowed here too.
        snaps in prop::collection::vec(prop::collection::vec(region(), 0..6), 0..6),
        max in 1u32..25,
        interval in 1u64..5_000_000,
    ) {
        let (idx, pages) = index(a, b);
        let counts: Vec<_> = snaps.iter().map(|r| damon_counts(&idx, r, max)).collect();
        let t = spread(idx.page_count(), interval, &counts, Op::Read).unwrap();
        t.validate().unwrap();
        // Expected per (interval, page): the largest capped count of the regions covering it.
        let mut want: BTreeMap<(u64, u32), u32> = BTreeMap::new();
        for (k, regions) in snaps.iter().enumerate() {
            for (id, &(pid, vaddr)) in pages.iter().enumerate() {
                let n = regions
                    .iter()
                    .filter(|r| r.pid == pid && r.start <= vaddr && vaddr < r.end)
                    .map(|r| r.nr_accesses.min(max))
                    .max()
                    .unwrap_or(0);
                if n > 0 {
                    want.insert((k as u64, id as u32), n);
                }
            }
        }
        let mut got: BTreeMap<(u64, u32), u32> = BTreeMap::new();
        for x in &t.accesses {
            prop_assert!(u64::from(x.page) < idx.page_count());
            prop_assert_eq!(x.op, Op::Read);
            *got.entry((x.time_ns / interval, x.page)).or_insert(0) += 1;
        }
        prop_assert_eq!(&got, &want);
        // Each page's accesses in an interval are evenly spaced around the interval's middle.
        for ((k, page), n) in &want {
            let times: Vec<u64> = t
                .accesses
                .iter()
                .filter(|x| x.page == *page && x.time_ns / interval == *k)
                .map(|x| x.time_ns - k * interval)
                .collect();
            let mean = times.iter().sum::<u64>() as f64 / f64::from(*n);
            prop_assert!((mean - interval as f64 / 2.0).abs() <= 1.0, "{times:?} in {interval}");
        }
    }

    #[test]
    fn origin_round_trips_through_the_header(code in 0u16..4, pages in 1u64..100) {
        let origin = Origin::from_code(code).unwrap();
        let t = Trace { page_count: pages, file_pages: 0, accesses: vec![] };
        let mut bytes = Vec::new();
        t.write_as(&mut bytes, origin).unwrap();
        prop_assert_eq!(TraceReader::new(&bytes[..]).unwrap().origin(), origin);
        prop_assert_eq!(Trace::read_with_origin(&bytes[..]).unwrap(), (t, origin));
    }
}

#[test]
fn unknown_flags_are_refused_at_their_offset() {
    let t = Trace { page_count: 1, file_pages: 0, accesses: vec![] };
    let mut bytes = Vec::new();
    t.write_as(&mut bytes, Origin::Damon).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 1);
    for flags in [4u16, 7, 0x100] {
        let mut b = bytes.clone();
        b[10..12].copy_from_slice(&flags.to_le_bytes());
        let crc = crc32(&b[..44]);
        b[44..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        let err = Trace::read(&b[..]).unwrap_err().to_string();
        assert!(err.contains("offset 10") && err.contains("unknown flags"), "{flags}: {err}");
    }
}

/// CRC32 (IEEE), bitwise: the header checksum without depending on the crate's choice.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A child that fills 64 pages and then keeps writing every fourth one: the pages soft-dirty
/// bits record among the 64 must be exactly those (page-out sampling: the lab crate's test).
#[test]
#[ignore = "live: needs soft-dirty bits (CONFIG_MEM_SOFT_DIRTY) (scripts/test runs it)"]
fn recording_a_child_finds_the_pages_it_writes() {
    let live = zmem_testkit::may_skip();
    let pages = 64usize;
    let stride = 4usize;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem-fillpat"))
        .args([pages.to_string(), stride.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning zmem-fillpat");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
    let pid = child.id();
    let opts = record::Options {
        pids: vec![pid],
        duration: Duration::from_millis(600),
        interval: Duration::from_millis(100),
        // Page-out sampling needs a swap area this crate cannot make: it is recorded live in
        // crates/lab/tests/trace_record.rs.
        method: Some(record::Method::SoftDirty),
    };
    let stop = AtomicBool::new(false);
    let mut no_swap = |_: u64| -> Result<record::SwapForPageOut, _> {
        Err(zmem_kernel::KernelError::Setup("no swap area in this test".into()))
    };
    let result = record::record(&opts, &stop, &mut |_| {}, &mut no_swap);
    let _ = child.stdin.take().map(|mut s| s.write_all(b"x"));
    child.wait().unwrap();
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            let why = soft_dirty::unavailable_reason();
            assert!(why.is_some(), "recording failed where soft-dirty bits work: {e}");
            return live.skip_optional(format!("no soft-dirty bits in this kernel: {e}"));
        }
    };
    assert_eq!(r.origin, Origin::SoftDirty);
    assert_eq!(r.pages.set_meta().unwrap()["trace.origin"], "soft-dirty");
    assert_eq!(r.trace.page_count, r.pages.len() as u64);
    let ps = system_page_size() as u64;
    let mut written = BTreeMap::new();
    for a in &r.trace.accesses {
        assert_eq!(a.op, Op::Write);
        let m = r.pages.meta(a.page as usize).unwrap();
        if m.vaddr >= addr && m.vaddr < addr + pages as u64 * ps {
            *written.entry((m.vaddr - addr) / ps).or_insert(0u64) += 1;
        }
    }
    let hot: Vec<u64> = written.keys().copied().collect();
    let want: Vec<u64> = (0..pages as u64).step_by(stride).collect();
    assert_eq!(hot, want, "the written pages of the pattern are the hot ones");
    // Written in (nearly) every interval: at least half of them.
    assert!(written.values().all(|&n| 2 * n >= r.intervals), "{written:?}");
}
