//! The zram control surface under arbitrary scripts: each input line is either an attribute
//! write, `ATTR TEXT` (as `echo TEXT > /sys/block/zramN/ATTR`; `\n` in TEXT is a newline), or a
//! page operation on the device:
//!
//!   !w INDEX KIND SEED   write a generated page (KIND: 0 same-filled, 1 random, else text)
//!   !r INDEX             read a page and check it against the shadow copy
//!   !d INDEX COUNT       discard COUNT pages from INDEX
//!   !f INDEX             slot_free_notify
//!   !b BLOCKS FAULT      attach an in-memory backing store (FAULT 0 none, 1 failing writes,
//!                        2 short writes, 3 full after 2 writes, 4 every 3rd write fails)
//!
//! Nothing may panic, every successful read must return the last page successfully written
//! there (or zeros), and the stored-page count must match the shadow at the end. The device is
//! kept small (disksize at most 256 KiB) and the target never touches the file system:
//! `backing_dev` and `dict=` (paths) are skipped.
#![no_main]

use std::collections::HashMap;
use std::sync::Arc;

use zmem_zram::{MemStore, StoreFault, Zram, ZramConfig};

const PS: usize = 4096;
const MAX_DISKSIZE: u64 = 64 * PS as u64;

fn page(kind: u64, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545f4914f6cdd1d)
    };
    match kind {
        0 => (seed.wrapping_mul(0x0101_0101_0101_0101)).to_ne_bytes().repeat(PS / 8),
        1 => (0..PS / 8).flat_map(|_| next().to_le_bytes()).collect(),
        _ => {
            let words: [&[u8]; 4] = [b"zram ", b"slot ", b"page ", b"idle "];
            let mut p = Vec::with_capacity(PS + 8);
            while p.len() < PS {
                let r = next();
                if r % 7 == 0 {
                    p.push(r as u8);
                } else {
                    p.extend_from_slice(words[(r >> 8) as usize % 4]);
                }
            }
            p.truncate(PS);
            p
        }
    }
}

fn fault(n: u64) -> StoreFault {
    match n % 5 {
        1 => StoreFault::FailWrites,
        2 => StoreFault::ShortWrites,
        3 => StoreFault::FullAfter(2),
        4 => StoreFault::FailEvery(3),
        _ => StoreFault::None,
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let z = Zram::new(ZramConfig::default()).expect("default config");
    let mut shadow: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut out = vec![0u8; PS];
    let zero = vec![0u8; PS];
    for line in text.lines().take(64) {
        let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.replace("\\n", "\n");
        let nums: Vec<u64> = rest.split_whitespace().map(|n| n.parse().unwrap_or(0)).collect();
        let arg = |i: usize| nums.get(i).copied().unwrap_or(0);
        let in_disk = |i: u64| z.is_initialised() && i < z.nr_pages();
        match cmd {
            "!w" => {
                let p = page(arg(1), arg(2));
                if z.write_page(arg(0), &p).is_ok() {
                    shadow.insert(arg(0), p);
                }
            }
            "!r" => match z.read_page(arg(0), &mut out) {
                Ok(()) => {
                    let want = shadow.get(&arg(0)).unwrap_or(&zero);
                    assert!(out == *want, "page {} reads back wrong", arg(0));
                }
                Err(e) => assert!(!in_disk(arg(0)), "read of page {} failed: {e}", arg(0)),
            },
            "!d" => {
                let (index, count) = (arg(0), arg(1) % 16);
                let r = z.discard(index.saturating_mul(PS as u64), count * PS as u64);
                if r.is_ok() {
                    for i in index..index + count {
                        shadow.remove(&i);
                    }
                }
            }
            "!f" => {
                // Single-threaded, the trylock always succeeds.
                z.slot_free_notify(arg(0));
                if in_disk(arg(0)) {
                    shadow.remove(&arg(0));
                }
            }
            "!b" => {
                let store = Arc::new(MemStore::new((arg(0) % 64) as usize * PS));
                store.set_fault(fault(arg(1)));
                let _ = z.set_backing_store("mem".into(), Box::new(store));
            }
            "backing_dev" => {}
            _ if rest.contains("dict=") => {}
            "disksize" if zmem_zram::parse::memparse(&rest) > MAX_DISKSIZE => {}
            attr => {
                let ok = z.store(attr, &rest).is_ok();
                if ok && attr == "reset" {
                    shadow.clear();
                }
                let _ = z.show(attr);
            }
        }
    }
    for attr in z.attributes() {
        let _ = z.show(attr);
    }
    let _ = z.block_state();
    if z.is_initialised() {
        let stored = z.mm_stat().orig_data_size / PS as u64;
        assert_eq!(stored, shadow.len() as u64, "pages_stored disagrees with the shadow");
        for (index, want) in &shadow {
            z.read_page(*index, &mut out).expect("a stored page reads");
            assert!(out == *want, "page {index} reads back wrong at the end");
        }
    }
});
