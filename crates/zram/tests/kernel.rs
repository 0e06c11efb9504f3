//! zmem's zram against the live kernel's (the oracle). Live tests (`#[ignore]`, run by scripts/test's
//! live pass): each is reported as skipped by zmem-testkit where
//! /sys/class/zram-control is missing or not writable, and runs where it exists.

mod common;

use common::*;
use zmem_kernel::zram_device::{self as kernel, KernelZram};
use zmem_zram::{Errno, Features, MmStat, Zram, ZramConfig, same_filled};

/// The live kernel's zram, or a skip (reported by zmem-testkit) where it is unavailable; the
/// guard holds the live lock until the test ends.
fn oracle() -> Option<zmem_testkit::Live> {
    zmem_testkit::live(kernel::unavailable_reason())
}

/// The kernel backends this machine's zram offers.
fn kernel_algos() -> Vec<String> {
    let dev = KernelZram::hot_add().unwrap();
    dev.show("comp_algorithm")
        .unwrap()
        .split_whitespace()
        .map(|a| a.trim_matches(['[', ']']).to_string())
        .collect()
}

fn concat(pages: &[Vec<u8>]) -> Vec<u8> {
    pages.concat()
}

fn ours(algo: &str, data: &[u8]) -> (Zram, MmStat) {
    let z = device(algo, data.len() / PS);
    for (i, p) in data.chunks(PS).enumerate() {
        z.write_page(i as u64, p).unwrap();
    }
    let s = z.mm_stat();
    (z, s)
}

#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn codecs_match_the_kernel_compressed_size() {
    let Some(_live) = oracle() else { return };
    // Pages that are neither same-filled nor huge: the kernel's compr_data_size is then exactly
    // the sum of its compressed lengths, which ours must equal byte for byte.
    for algo in ["lzo", "lzo-rle", "lz4"] {
        let mut c = zmem_comp::create(algo, &Default::default(), PS).unwrap();
        let mut dst = vec![0u8; 2 * PS];
        let mut sum = 0u64;
        let mut kept = Vec::new();
        for p in mixed_pages(3000, 77) {
            let n = c.compress(&p, &mut dst).unwrap();
            if same_filled(&p).is_none() && n < 3625 {
                sum += n as u64;
                kept.push(p);
            }
        }
        assert!(kept.len() > 2000);
        let k = kernel::mm_stat_of(algo, &concat(&kept)).unwrap();
        assert_eq!((k.same_pages, k.huge_pages), (0, 0));
        assert_eq!(k.compr_data_size, sum, "{algo}: sum of our lengths vs the kernel's");
    }
}

#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn mm_stat_is_identical_for_pages_written_in_order() {
    let Some(_live) = oracle() else { return };
    let data = concat(&mixed_pages(4000, 5));
    for algo in ["lzo", "lzo-rle", "lz4"] {
        let (_, ours) = ours(algo, &data);
        let theirs = kernel::mm_stat_of(algo, &data).unwrap();
        assert!(ours.same_pages > 0 && ours.huge_pages > 0, "the set has same and huge pages");
        assert_eq!(ours, theirs, "{algo}: {:?}", ours.diff(&theirs));
    }
}

/// Discards of ranges followed by rewrites, then compaction: compared field by field.
#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn discard_rewrite_and_compact_against_the_kernel() {
    let Some(_live) = oracle() else { return };
    let pages = mixed_pages(2048, 13);
    let data = concat(&pages);
    let algo = "lzo-rle";
    let dir = std::env::temp_dir().join(format!("zmem-kt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pages");
    std::fs::write(&file, &data).unwrap();

    let k = KernelZram::hot_add().unwrap();
    k.init(algo, data.len() as u64).unwrap();
    k.write_file(&file).unwrap();
    let (z, _) = ours(algo, &data);

    // Free every other 64-page range.
    for r in (0..2048u64).step_by(128) {
        k.discard(r * PS as u64, 64 * PS as u64).unwrap();
        z.discard(r * PS as u64, 64 * PS as u64).unwrap();
    }
    let (kd, zd) = (k.mm_stat().unwrap(), z.mm_stat());
    assert_eq!(zd, kd, "after discards: {:?}", zd.diff(&kd));
    assert_eq!(z.show("io_stat").unwrap(), k.show("io_stat").unwrap());

    k.store("compact", "1").unwrap();
    z.store("compact", "1").unwrap();
    let (kc, zc) = (k.mm_stat().unwrap(), z.mm_stat());
    assert_eq!(zc, kc, "after compact: {:?}", zc.diff(&kc));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Attribute writes fail with the kernel's errno. The kernel here is built without writeback,
/// multi-compression and access-time tracking, so ours is configured the same way.
#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn attribute_errors_match_the_kernel() {
    let Some(_live) = oracle() else { return };
    let algos = kernel_algos();
    let ours = Zram::new(ZramConfig {
        features: Features { writeback: false, multi_comp: false, track_actime: false },
        backends: algos.clone(),
        ..ZramConfig::default()
    })
    .unwrap();
    let k = KernelZram::hot_add().unwrap();
    // Names of 127 and 128 bytes: `__comp_algorithm_store` gives E2BIG from 128 on.
    let (name127, name128) = ("x".repeat(127), "x".repeat(128));
    let pre = [
        ("mem_limit", "abc"),
        ("mem_limit", "-1"),
        ("mem_limit", "K"),
        ("mem_limit", "0x10"),
        ("comp_algorithm", name127.as_str()),
        ("comp_algorithm", name128.as_str()),
        ("comp_algorithm", "lz4m"),
        ("disksize", "0"),
        ("disksize", "abc"),
        ("compact", "1"),
        ("idle", "all"),
        ("reset", "0"),
        ("reset", "x"),
        ("reset", "70000"),
        ("mem_used_max", "1"),
        ("mem_used_max", "0"),
        ("mem_limit", "1M"),
        ("comp_algorithm", "no-such-algo"),
        ("algorithm_params", "level"),
        ("algorithm_params", "priority=1 level=3"),
        ("algorithm_params", "algo=lz4 level=3"),
        ("algorithm_params", "foo=1"),
        ("algorithm_params", "dict=/nonexistent"),
        ("comp_algorithm", "lz4"),
        ("disksize", "1M"),
        ("disksize", "2M"),
        ("comp_algorithm", "lzo"),
        ("algorithm_params", "level=1"),
        ("idle", "all"),
        ("idle", "5"),
        ("idle", " all"),
        ("compact", "x"),
        ("mem_used_max", "0"),
    ];
    for (attr, text) in pre {
        let theirs = k
            .store(attr, text)
            .err()
            .map(|e| e.io_error().and_then(|e| e.raw_os_error()).and_then(Errno::from_code));
        // What the kernel gets: `echo`'s text, newline included.
        let mine = ours.store(attr, &format!("{text}\n")).err().map(|e| Some(e.errno));
        assert_eq!(mine, theirs, "{attr} <- {text:?}");
    }
    for attr in ["mm_stat", "io_stat", "debug_stat", "comp_algorithm", "disksize", "initstate"] {
        assert_eq!(ours.show(attr).unwrap(), k.show(attr).unwrap(), "show {attr}");
    }
}
