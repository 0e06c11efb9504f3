//! Behaviour pinned to Linux 6.18's drivers/block/zram/zram_drv.c where zmem used to differ
//! (several of them are what later kernels do). Each test names the kernel function it follows.

mod common;

use std::sync::Arc;

use common::*;
use zmem_zram::{Errno, MemStore, StoreFault, Zram, ZramConfig};

fn errno(r: Result<(), zmem_zram::ZramError>) -> Errno {
    r.unwrap_err().errno
}

/// `block_state`'s flags column for one slot.
fn flags(z: &Zram, index: u64) -> Option<String> {
    z.block_state().unwrap().lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()?.parse::<u64>().ok()? == index).then(|| f.nth(1).unwrap().to_string())
    })
}

/// `block_state`'s access-time column for one slot.
fn ac_time(z: &Zram, index: u64) -> Option<String> {
    z.block_state().unwrap().lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()?.parse::<u64>().ok()? == index).then(|| f.next().unwrap().to_string())
    })
}

/// A device of `pages` pages with an in-memory backing store and ordinary pages in 0..10.
fn wb_device(pages: usize) -> (Zram, Arc<MemStore>) {
    let store = Arc::new(MemStore::new(64 * PS));
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.set_backing_store("mem".into(), Box::new(store.clone())).unwrap();
    z.store("disksize", &(pages * PS).to_string()).unwrap();
    let mut rng = Rng::new(41);
    for i in 0..10 {
        z.write_page(i, &ordinary_page(&mut rng, 0.1)).unwrap();
    }
    (z, store)
}

/// `writeback_store` + `release_pp_ctl`: a parse error after `page_index=` has selected a slot
/// releases the selection (PP_SLOT cleared), so the slot is not lost to later writebacks and
/// recompressions.
#[test]
fn release_pp_ctl_clears_the_selection_of_a_failed_writeback_parse() {
    let (z, _store) = wb_device(16);
    assert_eq!(errno(z.store("writeback", "page_index=3 type=bogus")), Errno::EINVAL);
    assert_eq!(errno(z.store("writeback", "page_indexes=2-3 page_index=99")), Errno::ERANGE);
    assert_eq!(z.bd_stat().bd_writes, 0);
    z.store("writeback", "page_index=3").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 1);
    assert!(flags(&z, 3).unwrap().contains('w'), "slot 3 was written back");
    z.store("writeback", "page_index=2").unwrap();
    assert!(flags(&z, 2).unwrap().contains('w'), "slot 2 was written back");
}

/// `parse_page_indexes`: a value without `-` is EINVAL (not ERANGE); LO is range-checked
/// before HI is parsed.
#[test]
fn parse_page_indexes_without_a_dash_is_einval() {
    let (z, _store) = wb_device(16);
    assert_eq!(errno(z.store("writeback", "page_indexes=3")), Errno::EINVAL);
    assert_eq!(errno(z.store("writeback", "page_indexes=99-x")), Errno::ERANGE);
    assert_eq!(errno(z.store("writeback", "page_indexes=2-x")), Errno::EINVAL);
    assert_eq!(z.bd_stat().bd_writes, 0);
}

/// `mem_limit_store`: text `memparse` consumes nothing of is EINVAL and the old limit stays (a
/// bare `memparse` value of 0 would remove it). A lone suffix is consumed (as a live 6.18.44
/// kernel shows: `K` sets a limit of 0).
#[test]
fn mem_limit_store_refuses_text_memparse_cannot_read() {
    let z = device("lzo-rle", 8);
    z.store("mem_limit", "1M").unwrap();
    for bad in ["abc", "-1", "x1", "", "\n", " 1M"] {
        assert_eq!(errno(z.store("mem_limit", bad)), Errno::EINVAL, "{bad:?}");
        assert_eq!(z.mm_stat().mem_limit, 1 << 20, "{bad:?} kept the limit");
    }
    z.store("mem_limit", "0x2000").unwrap();
    assert_eq!(z.mm_stat().mem_limit, 0x2000);
    z.store("mem_limit", "0").unwrap();
    assert_eq!(z.mm_stat().mem_limit, 0, "0 parses, and removes the limit");
    z.store("mem_limit", "1M").unwrap();
    z.store("mem_limit", "k").unwrap();
    assert_eq!(z.mm_stat().mem_limit, 0, "a lone suffix is consumed and reads as 0");
}

/// The `*_setup_params` of 6.18's backends (backend_lzo.c, backend_lz4.c, backend_deflate.c,
/// ...) check nothing: `disksize` builds the streams with parameters the backend ignores or
/// maps to its default.
#[test]
fn disksize_accepts_parameters_6_18_backends_ignore() {
    let dict = std::env::temp_dir().join(format!("zmem-618-dict-{}", std::process::id()));
    std::fs::write(&dict, b"page zram slot handle class zspage stream idle ".repeat(8)).unwrap();
    let dict_param = format!("dict={}", dict.display());
    let cases = [
        ("lzo", "level=3".to_string()),
        ("lzo-rle", "level=1".to_string()),
        ("842", "level=2".to_string()),
        ("lzo", dict_param.clone()),
        ("deflate", dict_param.clone()),
        ("842", dict_param.clone()),
        ("zstd", "deflate.winbits=-11".to_string()),
        ("lz4", "deflate.winbits=-9".to_string()),
        ("lz4", "level=0".to_string()),
        ("lz4", "level=-3".to_string()),
        ("deflate", "level=-1".to_string()),
    ];
    let page = ordinary_page(&mut Rng::new(7), 0.1);
    for (algo, params) in &cases {
        let z = Zram::new(ZramConfig::default()).unwrap();
        z.store("comp_algorithm", algo).unwrap();
        z.store("algorithm_params", params).unwrap();
        z.store("disksize", "1M").unwrap_or_else(|e| panic!("{algo} {params}: {e}"));
        z.write_page(0, &page).unwrap();
        assert_eq!(read(&z, 0), page, "{algo} {params}");
    }
    // zlib itself refuses a level past 9, in the kernel too.
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "deflate").unwrap();
    z.store("algorithm_params", "level=10").unwrap();
    assert_eq!(errno(z.store("disksize", "1M")), Errno::EINVAL);
    std::fs::remove_file(dict).unwrap();
}

/// `comp_algorithm_show` / `zcomp_available_algorithm`: a device built as the kernel lists and
/// accepts its backends only; the research codecs need `research_codecs`.
#[test]
fn zcomp_available_algorithm_is_the_kernel_backends_by_default() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    assert_eq!(z.show("comp_algorithm").unwrap(), "[lzo-rle] lzo lz4 lz4hc zstd deflate 842 \n");
    assert_eq!(errno(z.store("comp_algorithm", "lz4m")), Errno::EINVAL);
    assert_eq!(errno(z.store("recomp_algorithm", "algo=wkdm")), Errno::EINVAL);
    let lab = Zram::new(ZramConfig { research_codecs: true, ..ZramConfig::default() }).unwrap();
    assert!(lab.show("comp_algorithm").unwrap().ends_with(" 842 lz4m wkdm \n"));
    lab.store("comp_algorithm", "lz4m").unwrap();
    lab.store("recomp_algorithm", "algo=wkdm").unwrap();
}

/// `__comp_algorithm_store`: text of `ZRAM_MAX_ALGO_NAME_SZ` (128) bytes or more, the
/// trailing newline counted, is E2BIG; shorter unknown names are EINVAL.
#[test]
fn comp_algorithm_store_gives_e2big_from_128_bytes() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    assert_eq!(errno(z.store("comp_algorithm", &"x".repeat(127))), Errno::EINVAL);
    assert_eq!(errno(z.store("comp_algorithm", &"x".repeat(128))), Errno::E2BIG);
    assert_eq!(errno(z.store("comp_algorithm", &format!("{}\n", "x".repeat(127)))), Errno::E2BIG);
    let long = format!("algo={}", "x".repeat(128));
    assert_eq!(errno(z.store("recomp_algorithm", &long)), Errno::E2BIG);
}

/// `recomp_algorithm_store`: every parameter needs a value (EINVAL otherwise).
#[test]
fn recomp_algorithm_store_refuses_valueless_parameters() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    assert_eq!(errno(z.store("recomp_algorithm", "algo=zstd priority")), Errno::EINVAL);
    assert_eq!(errno(z.store("recomp_algorithm", "algo=zstd priority=")), Errno::EINVAL);
    assert_eq!(errno(z.store("recomp_algorithm", "zstd")), Errno::EINVAL);
    z.store("recomp_algorithm", "algo=zstd priority=2").unwrap();
}

/// `recompress_store`: an unknown `type=` leaves the mode parsed so far (here `idle`), so only
/// idle slots are recompressed.
#[test]
fn recompress_store_keeps_the_mode_on_an_unknown_type() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "lz4").unwrap();
    z.store("recomp_algorithm", "algo=zstd").unwrap();
    z.store("disksize", &(32 * PS).to_string()).unwrap();
    let mut rng = Rng::new(3);
    for i in 0..16 {
        z.write_page(i, &ordinary_page(&mut rng, 0.02)).unwrap();
    }
    z.store("idle", "all").unwrap();
    for i in 8..16 {
        read(&z, i);
    }
    z.store("recompress", "type=idle type=bogus").unwrap();
    let recompressed: Vec<u64> = (0..16).filter(|&i| flags(&z, i).unwrap().contains('r')).collect();
    assert!(!recompressed.is_empty(), "zstd shrinks some lz4 pages");
    assert!(recompressed.iter().all(|&i| i < 8), "only idle slots: {recompressed:?}");
}

/// `idle_store` + `mark_idle` with 6.18's `ktime_t ac_time`: the cutoff `now - age` is in
/// nanoseconds and a slot is idle when its access time is strictly before it, so `idle=0`
/// marks a slot touched a microsecond ago (whole seconds, as 7.0 keeps, would not), but not
/// one touched at this very instant. `read_block_state` prints the time as seconds and
/// microseconds.
#[test]
fn mark_idle_compares_nanosecond_access_times() {
    let (z, clock) = device_with_clock("lzo-rle", 8);
    let mut rng = Rng::new(5);
    z.write_page(0, &ordinary_page(&mut rng, 0.1)).unwrap();
    clock.advance_ns(1_500);
    z.write_page(1, &ordinary_page(&mut rng, 0.1)).unwrap();
    assert_eq!(ac_time(&z, 0).unwrap(), "100.000000");
    assert_eq!(ac_time(&z, 1).unwrap(), "100.000001");
    z.store("idle", "0").unwrap();
    assert_eq!(flags(&z, 0).unwrap(), "...i..", "1.5 us old: older than now");
    assert_eq!(flags(&z, 1).unwrap(), "......", "touched now: not before the cutoff");
    // One second later: slot 0 is 1.0000015 s old, slot 1 exactly 1 s.
    clock.advance(1);
    z.store("idle", "1").unwrap();
    assert_eq!(flags(&z, 0).unwrap(), "...i..", "older than 1 s");
    assert_eq!(flags(&z, 1).unwrap(), "......", "exactly 1 s old is not before the cutoff");
    let mut out = vec![0u8; PS];
    z.read_page(0, &mut out).unwrap();
    assert_eq!(ac_time(&z, 0).unwrap(), "101.000001");
    assert_eq!(flags(&z, 0).unwrap(), "......", "a read clears IDLE");
}

/// `read_from_bdev`: `bd_reads` counts every read of a written-back page before its I/O.
#[test]
fn read_from_bdev_counts_bd_reads_before_the_io() {
    let (z, store) = wb_device(16);
    z.store("writeback", "page_indexes=0-1").unwrap();
    store.set_fault(StoreFault::FailReads);
    let mut out = vec![0u8; PS];
    assert_eq!(errno(z.read_page(0, &mut out)), Errno::EIO);
    assert_eq!((z.bd_stat().bd_reads, z.io_stat().failed_reads), (1, 0));
    store.set_fault(StoreFault::None);
    z.read_page(0, &mut out).unwrap();
    assert_eq!((z.bd_stat().bd_reads, z.io_stat().failed_reads), (2, 0));
}
