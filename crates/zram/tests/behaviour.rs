//! zram behaviour against the kernel's rules (docs/REFERENCES.md [zram-drv]), one rule per test.

mod common;

use std::path::PathBuf;

use common::*;
use zmem_zram::{Errno, IoStat, MmStat, Zram, ZramConfig};

fn errno(r: Result<(), zmem_zram::ZramError>) -> Errno {
    r.expect_err("expected an error").errno
}

/// The flags column of `block_state` for one slot, or None if the slot is not allocated.
fn flags(z: &Zram, index: u64) -> Option<String> {
    z.block_state().unwrap().lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()?.parse::<u64>().ok()? == index).then(|| f.nth(1).unwrap().to_string())
    })
}

#[test]
fn same_filled_pages_keep_the_word_and_allocate_nothing() {
    let z = device("lzo-rle", 8);
    z.write_page(0, &same_page(0)).unwrap();
    z.write_page(1, &same_page(0x0123_4567_89ab_cdef)).unwrap();
    let s = mm(&z);
    assert_eq!((s.same_pages, s.compr_data_size, s.mem_used_total), (2, 0, 0));
    assert_eq!(s.orig_data_size, 2 * PS as u64);
    assert_eq!(read(&z, 1), same_page(0x0123_4567_89ab_cdef));
    // A page equal in every 8-byte word but one is not same-filled.
    let mut p = same_page(7);
    p[PS - 1] ^= 1;
    z.write_page(1, &p).unwrap();
    assert_eq!(mm(&z).same_pages, 1);
    assert_eq!(read(&z, 1), p);
}

#[test]
fn incompressible_pages_are_stored_raw_as_huge() {
    let z = device("lzo-rle", 8);
    let mut rng = Rng::new(1);
    let r = random_page(&mut rng);
    z.write_page(3, &r).unwrap();
    let s = mm(&z);
    assert_eq!((s.huge_pages, s.huge_pages_since, s.compr_data_size), (1, 1, PS as u64));
    assert_eq!(flags(&z, 3).unwrap(), "..h...");
    assert_eq!(read(&z, 3), r);
    z.write_page(3, &ordinary_page(&mut rng, 0.1)).unwrap();
    let s = mm(&z);
    assert_eq!((s.huge_pages, s.huge_pages_since), (0, 1), "huge_pages_since never decreases");
    assert!(s.compr_data_size < 3625);
}

#[test]
fn accounting_follows_overwrites_and_discards() {
    let z = device("lzo-rle", 64);
    let pages = mixed_pages(64, 7);
    for (i, p) in pages.iter().enumerate() {
        z.write_page(i as u64, p).unwrap();
    }
    let before = mm(&z);
    assert_eq!(before.orig_data_size, 64 * PS as u64);
    // Discard from the middle of page 10 for 5 pages: page 10 is partial (kept), 11..=14 freed,
    // the partial tail in page 15 is ignored.
    z.discard(10 * PS as u64 + 512, 5 * PS as u64).unwrap();
    let s = mm(&z);
    assert_eq!(s.orig_data_size, 60 * PS as u64);
    assert_eq!(z.io_stat().notify_free, 4);
    assert_eq!(read(&z, 10), pages[10]);
    assert_eq!(read(&z, 11), vec![0; PS]);
    assert_eq!(read(&z, 15), pages[15]);
    // Writing everything back restores the same accounting.
    for i in 11..15 {
        z.write_page(i, &pages[i as usize]).unwrap();
    }
    let after = mm(&z);
    assert_eq!(
        (after.compr_data_size, after.same_pages, after.huge_pages),
        (before.compr_data_size, before.same_pages, before.huge_pages)
    );
    // Swap's free notification frees a slot too.
    z.slot_free_notify(20);
    assert_eq!(mm(&z).orig_data_size, 63 * PS as u64);
    assert_eq!(z.io_stat().notify_free, 5);
}

#[test]
fn mem_limit_fails_the_write_and_keeps_everything_else() {
    let z = device("lzo-rle", 256);
    let mut rng = Rng::new(3);
    let first = ordinary_page(&mut rng, 0.2);
    z.write_page(0, &first).unwrap();
    let used = mm(&z).mem_used_total;
    z.store("mem_limit", &used.to_string()).unwrap();
    assert_eq!(mm(&z).mem_limit, used);
    let mut written = vec![(0u64, first)];
    let mut failed = 0;
    for i in 1..256u64 {
        let p = random_page(&mut rng);
        match z.write_page(i, &p) {
            Ok(()) => written.push((i, p)),
            Err(e) => {
                assert_eq!(e.errno, Errno::ENOMEM);
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "a one-page limit must refuse huge pages eventually");
    assert_eq!(z.io_stat().failed_writes, failed);
    // An overwrite that fails leaves the old contents in place.
    assert_eq!(errno(z.write_page(0, &random_page(&mut rng))), Errno::ENOMEM);
    for (i, p) in &written {
        assert_eq!(&read(&z, *i), p, "page {i}");
    }
    assert!(mm(&z).mem_used_total <= used);
    assert!(mm(&z).mem_used_max >= mm(&z).mem_used_total);
    // Lifting the limit lets writes through again; mem_used_max can be reset only with 0.
    z.store("mem_limit", "0").unwrap();
    z.write_page(200, &random_page(&mut rng)).unwrap();
    assert_eq!(errno(z.store("mem_used_max", "1")), Errno::EINVAL);
    z.store("mem_used_max", "0").unwrap();
    assert_eq!(mm(&z).mem_used_max, mm(&z).mem_used_total);
}

#[test]
fn reset_returns_to_a_fresh_device() {
    let z = device("lz4", 16);
    z.store("mem_limit", "1M").unwrap();
    z.write_page(1, &ordinary_page(&mut Rng::new(1), 0.1)).unwrap();
    assert_eq!(errno(z.store("comp_algorithm", "lzo")), Errno::EBUSY);
    assert_eq!(errno(z.store("disksize", "1M")), Errno::EBUSY);
    assert_eq!(errno(z.store("reset", "0")), Errno::EINVAL);
    z.store("reset", "1").unwrap();
    assert_eq!(z.show("initstate").unwrap(), "0\n");
    assert_eq!(z.show("disksize").unwrap(), "0\n");
    assert_eq!(mm(&z), MmStat::default());
    assert!(z.show("comp_algorithm").unwrap().contains("[lzo-rle] "));
    assert_eq!(errno(z.write_page(0, &same_page(0))), Errno::EIO);
    z.store("disksize", "64K").unwrap();
    assert_eq!(z.show("disksize").unwrap(), "65536\n");
    assert_eq!(read(&z, 1), vec![0; PS], "a reset device holds nothing");
}

#[test]
fn attributes_parse_and_fail_like_the_kernel() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    // Before init.
    for (attr, text, want) in [
        ("disksize", "0", Errno::EINVAL),
        ("disksize", "abc", Errno::EINVAL),
        ("compact", "1", Errno::EINVAL),
        ("idle", "all", Errno::EINVAL),
        ("reset", "x", Errno::EINVAL),
        ("reset", "70000", Errno::ERANGE),
        ("mem_used_max", "1", Errno::EINVAL),
        ("comp_algorithm", "nope", Errno::EINVAL),
        ("algorithm_params", "level", Errno::EINVAL),
        ("algorithm_params", "algo=zstd level=3", Errno::EINVAL),
        ("algorithm_params", "dict=/nonexistent/dict", Errno::EINVAL),
        ("recomp_algorithm", "priority=1", Errno::EINVAL),
        ("recomp_algorithm", "algo=zstd priority=4", Errno::EINVAL),
        ("recompress", "type=idle", Errno::EINVAL),
        ("writeback", "idle", Errno::EINVAL),
        ("backing_dev", "/nonexistent/file", Errno::ENOENT),
        // `backing_dev_store`: a character device is no block device.
        ("backing_dev", "/dev/null", Errno::ENOTBLK),
        ("mm_stat", "1", Errno::EACCES),
        ("no_such_attr", "1", Errno::ENOENT),
    ] {
        assert_eq!(errno(z.store(attr, text)), want, "{attr} <- {text:?}");
    }
    assert_eq!(z.show("mem_limit").unwrap_err().errno, Errno::EACCES);
    assert_eq!(z.show("comp_algorithm").unwrap().lines().count(), 1);
    z.store("algorithm_params", "level=3").unwrap();
    z.store("algorithm_params", "foo=1").unwrap();
    z.store("comp_algorithm", "zstd\n").unwrap();
    assert!(z.show("comp_algorithm").unwrap().contains(" [zstd] "));
    z.store("recomp_algorithm", "algo=deflate priority=2").unwrap();
    assert_eq!(
        z.show("recomp_algorithm").unwrap().lines().next().unwrap().split(' ').next(),
        Some("#2:")
    );
    z.store("algorithm_params", "algo=deflate level=9").unwrap();
    z.store("disksize", "1M").unwrap();
    for (attr, text, want) in [
        ("disksize", "2M", Errno::EBUSY),
        ("comp_algorithm", "lz4", Errno::EBUSY),
        ("recomp_algorithm", "algo=lz4", Errno::EBUSY),
        ("idle", " all", Errno::EINVAL),
        ("idle", "x", Errno::EINVAL),
        ("writeback", "idle", Errno::ENODEV),
        ("recompress", "threshold=4000", Errno::EINVAL),
        ("recompress", "algo=lz4", Errno::EINVAL),
        ("recompress", "max_pages", Errno::EINVAL),
        ("backing_dev", "/dev/null", Errno::EBUSY),
    ] {
        assert_eq!(errno(z.store(attr, text)), want, "{attr} <- {text:?} after init");
    }
    z.store("compact", "x").unwrap();
    z.store("idle", "all\n").unwrap();
    z.store("idle", "5").unwrap();
}

#[test]
fn stream_params_are_used_from_disksize_on() {
    // A level the library refuses fails when the streams are built, not when it is stored
    // (zlib_deflateInit2 takes -1..=9; 6.18's zstd backend clamps instead, so zstd level=99
    // would build).
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "zstd").unwrap();
    z.store("recomp_algorithm", "algo=deflate").unwrap();
    z.store("algorithm_params", "algo=deflate level=10").unwrap();
    assert_eq!(errno(z.store("disksize", "1M")), Errno::EINVAL);
    assert_eq!(z.show("initstate").unwrap(), "0\n");
    z.store("algorithm_params", "algo=deflate level=9").unwrap();
    z.store("algorithm_params", "algo=zstd level=19").unwrap();
    z.store("disksize", "1M").unwrap();
    let p = ordinary_page(&mut Rng::new(5), 0.05);
    z.write_page(0, &p).unwrap();
    assert_eq!(read(&z, 0), p);
}

#[test]
fn idle_marks_by_age_and_access_clears_it() {
    let (z, clock) = device_with_clock("lzo-rle", 8);
    let mut rng = Rng::new(9);
    z.write_page(0, &ordinary_page(&mut rng, 0.1)).unwrap();
    clock.advance(100);
    z.write_page(1, &ordinary_page(&mut rng, 0.1)).unwrap();
    z.write_page(2, &same_page(0)).unwrap();
    clock.advance(10);
    z.store("idle", "50").unwrap();
    assert_eq!(flags(&z, 0).unwrap(), "...i..", "written 110 s ago");
    assert_eq!(flags(&z, 1).unwrap(), "......", "written 10 s ago");
    assert_eq!(flags(&z, 2).unwrap(), "s.....", "same pages are never idle");
    z.store("idle", "all").unwrap();
    assert_eq!(flags(&z, 1).unwrap(), "...i..");
    read(&z, 1);
    assert_eq!(flags(&z, 1).unwrap(), "......", "a read clears IDLE");
    // An age older than everything clears IDLE on slots that are younger.
    z.store("idle", "1000").unwrap();
    assert_eq!(flags(&z, 0).unwrap(), "......");
}

/// The access time column of `block_state` for one slot.
fn ac_time(z: &Zram, index: u64) -> Option<String> {
    z.block_state().unwrap().lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()?.parse::<u64>().ok()? == index).then(|| f.next().unwrap().to_string())
    })
}

#[test]
fn access_times_are_kept_only_by_an_actime_build() {
    for track_actime in [true, false] {
        let features = zmem_zram::Features { track_actime, ..Default::default() };
        let config = ZramConfig { features, ..ZramConfig::default() };
        let clock = std::sync::Arc::new(ManualClock::at_secs(100));
        let z = Zram::with_clock(config, clock.clone()).unwrap();
        z.store("disksize", &format!("{}", 8 * PS)).unwrap();
        z.write_page(0, &ordinary_page(&mut Rng::new(3), 0.1)).unwrap();
        clock.advance(7);
        read(&z, 0);
        let expect = if track_actime { "107.000000" } else { "0.000000" };
        assert_eq!(ac_time(&z, 0).unwrap(), expect, "track_actime {track_actime}");
    }
}

fn backing_file(name: &str, blocks: usize) -> PathBuf {
    let path = std::env::temp_dir().join(format!("zmem-wb-{}-{name}", std::process::id()));
    std::fs::write(&path, vec![0u8; blocks * PS]).unwrap();
    path
}

fn wb_device(name: &str, blocks: usize) -> (Zram, std::sync::Arc<ManualClock>, PathBuf) {
    let path = backing_file(name, blocks);
    let clock = std::sync::Arc::new(ManualClock::at_secs(100));
    // A regular file as backing device: the zmem extension.
    let config = ZramConfig { allow_regular_backing_file: true, ..ZramConfig::default() };
    let z = Zram::with_clock(config, clock.clone()).unwrap();
    z.store("backing_dev", path.to_str().unwrap()).unwrap();
    z.store("disksize", &format!("{}", 32 * PS)).unwrap();
    (z, clock, path)
}

#[test]
fn writeback_modes_select_the_right_slots() {
    let (z, _clock, path) = wb_device("modes", 64);
    assert_eq!(z.show("backing_dev").unwrap(), format!("{}\n", path.display()));
    let mut rng = Rng::new(11);
    let pages: Vec<Vec<u8>> = (0..8)
        .map(|i| if i % 2 == 0 { random_page(&mut rng) } else { ordinary_page(&mut rng, 0.1) })
        .collect();
    for (i, p) in pages.iter().enumerate() {
        z.write_page(i as u64, p).unwrap();
    }
    z.write_page(8, &same_page(0)).unwrap();
    // huge_idle with nothing idle writes nothing.
    z.store("writeback", "huge_idle").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 0);
    // Mark 0..4 idle (read the rest afterwards to clear theirs).
    z.store("idle", "all").unwrap();
    for i in 4..8 {
        read(&z, i);
    }
    z.store("writeback", "huge_idle").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 2, "pages 0 and 2 are huge and idle");
    assert_eq!(flags(&z, 0).unwrap(), ".w....");
    z.store("writeback", "type=idle").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 4, "then 1 and 3, idle and not huge");
    z.store("writeback", "huge").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 6, "then 4 and 6");
    z.store("writeback", "page_index=5").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 7);
    assert_eq!(errno(z.store("writeback", "page_index=32")), Errno::ERANGE);
    assert_eq!(errno(z.store("writeback", "page_indexes=6-3")), Errno::ERANGE);
    assert_eq!(errno(z.store("writeback", "bogus")), Errno::EINVAL);
    z.store("writeback", "page_indexes=0-31").unwrap();
    let bd = z.bd_stat();
    assert_eq!((bd.bd_writes, bd.bd_count), (8, 8), "same pages are never written back");
    let s = mm(&z);
    assert_eq!(s.orig_data_size, 9 * PS as u64, "written-back slots still count as stored");
    assert_eq!((s.compr_data_size, s.huge_pages), (0, 0));
    // Reads come from the file; overwriting frees the block.
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&z, i as u64), p, "page {i}");
    }
    assert_eq!(z.bd_stat().bd_reads, 8);
    z.write_page(0, &pages[1]).unwrap();
    assert_eq!(z.bd_stat().bd_count, 7);
    assert_eq!(read(&z, 0), pages[1]);
    let _ = std::fs::remove_file(path);
}

#[test]
fn writeback_of_incompressible_slots_follows_recompression() {
    let path = backing_file("incomp", 16);
    let z = Zram::new(ZramConfig { allow_regular_backing_file: true, ..ZramConfig::default() })
        .unwrap();
    z.store("backing_dev", path.to_str().unwrap()).unwrap();
    z.store("recomp_algorithm", "algo=lzo-rle").unwrap();
    z.store("disksize", &format!("{}", 8 * PS)).unwrap();
    let mut rng = Rng::new(2);
    let p = ordinary_page(&mut rng, 0.3);
    z.write_page(0, &p).unwrap();
    z.write_page(1, &ordinary_page(&mut rng, 0.3)).unwrap();
    // The same algorithm again cannot land in a smaller class: both become INCOMPRESSIBLE.
    z.store("recompress", "").unwrap();
    assert_eq!(flags(&z, 0).unwrap(), ".....n");
    z.store("writeback", "incompressible").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 2);
    assert_eq!(read(&z, 0), p);
    let _ = std::fs::remove_file(path);
}

#[test]
fn writeback_limit_and_full_device() {
    let (z, _clock, path) = wb_device("limit", 4);
    let mut rng = Rng::new(4);
    let pages: Vec<_> = (0..10).map(|_| ordinary_page(&mut rng, 0.2)).collect();
    for (i, p) in pages.iter().enumerate() {
        z.write_page(i as u64, p).unwrap();
    }
    z.store("writeback_limit_enable", "1").unwrap();
    z.store("writeback_limit", "2").unwrap();
    assert_eq!(errno(z.store("writeback", "page_indexes=0-9")), Errno::EIO);
    assert_eq!(z.bd_stat().bd_writes, 2);
    assert_eq!(z.show("writeback_limit").unwrap(), "0\n");
    z.store("writeback_limit_enable", "0").unwrap();
    // Four blocks, block 0 reserved: one more fits, then ENOSPC.
    assert_eq!(errno(z.store("writeback", "page_indexes=0-9")), Errno::ENOSPC);
    assert_eq!(z.bd_stat().bd_count, 3);
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&z, i as u64), p, "page {i} after ENOSPC");
    }
    // The slots that did not fit were released from the selection: once a block is free, a
    // single-page writeback picks one of them up.
    let written: Vec<u64> = (0..10).filter(|&i| flags(&z, i).unwrap().contains('w')).collect();
    let pending = (0..10).find(|i| !written.contains(i)).unwrap();
    z.write_page(written[0], &pages[written[0] as usize]).unwrap();
    z.store("writeback", &format!("page_index={pending}")).unwrap();
    assert_eq!(flags(&z, pending).unwrap(), ".w....");
    assert_eq!(read(&z, pending), pages[pending as usize]);
    let _ = std::fs::remove_file(path);
}

fn recomp_device(secondaries: &[(&str, usize)], pages: usize) -> Zram {
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "lz4").unwrap();
    for (algo, prio) in secondaries {
        z.store("recomp_algorithm", &format!("algo={algo} priority={prio}")).unwrap();
    }
    z.store("disksize", &format!("{}", pages * PS)).unwrap();
    z
}

#[test]
fn recompress_keeps_only_smaller_classes_and_decodes_by_priority() {
    let z = recomp_device(&[("zstd", 1), ("deflate", 2)], 32);
    let pages = mixed_pages(32, 21);
    for (i, p) in pages.iter().enumerate() {
        z.write_page(i as u64, p).unwrap();
    }
    let before = mm(&z);
    z.store("recompress", "").unwrap();
    let after = mm(&z);
    assert!(after.compr_data_size < before.compr_data_size, "zstd beats lz4 on text");
    assert_eq!(after.orig_data_size, before.orig_data_size);
    let state = z.block_state().unwrap();
    assert!(state.lines().any(|l| l.ends_with("r.")), "some slots were recompressed:\n{state}");
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&z, i as u64), p, "page {i} after recompression");
    }
    // Random pages stay huge and, with the highest priority tried, become INCOMPRESSIBLE.
    assert_eq!(flags(&z, 5).unwrap(), "..h..n");
    // A second pass offers the zstd slots to deflate (the next priority); after it every slot
    // is at the last priority or INCOMPRESSIBLE, so a third pass has nothing left to do.
    z.store("recompress", "").unwrap();
    let again = mm(&z);
    z.store("recompress", "").unwrap();
    assert_eq!(mm(&z), again);
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&z, i as u64), p, "page {i} after the second pass");
    }
}

#[test]
fn recompress_options_filter_and_limit() {
    let z = recomp_device(&[("zstd", 1), ("deflate", 3)], 40);
    let pages = mixed_pages(40, 33);
    for (i, p) in pages.iter().enumerate() {
        z.write_page(i as u64, p).unwrap();
    }
    let count_r = |z: &Zram| {
        z.block_state().unwrap().lines().filter(|l| l.ends_with("r.") || l.ends_with("rn")).count()
    };
    // max_pages bounds the attempts.
    z.store("recompress", "max_pages=3").unwrap();
    assert!(count_r(&z) <= 3);
    // type=idle with nothing idle does nothing.
    let before = count_r(&z);
    z.store("recompress", "type=idle").unwrap();
    assert_eq!(count_r(&z), before);
    // threshold: only slots of at least 3000 bytes; ordinary text pages are far smaller.
    z.store("recompress", "threshold=3000 type=huge").unwrap();
    assert_eq!(count_r(&z), before, "huge random pages do not shrink below 3000");
    // priority=3 skips zstd and uses deflate; num_active_comps is 3 (priorities 0, 1, 3), so
    // the kernel's rule `prio_max = min(prio + 1, num_active_comps)` leaves nothing to do.
    assert_eq!(errno(z.store("recompress", "priority=3")), Errno::EINVAL);
    z.store("recompress", "algo=zstd").unwrap();
    assert!(count_r(&z) > before);
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&z, i as u64), p, "page {i}");
    }
}

#[test]
fn many_threads_read_and_write_verified() {
    let z = device("lzo-rle", 512);
    let threads = 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            let z = &z;
            s.spawn(move || {
                let mut rng = Rng::new(100 + t);
                let mut shadow = std::collections::HashMap::new();
                for round in 0..2000u64 {
                    // Each thread owns the indexes congruent to t, so its shadow is exact.
                    let index = (rng.next_u64() % 128) * threads + t;
                    match rng.next_u64() % 4 {
                        0 | 1 => {
                            let p = match round % 3 {
                                0 => same_page(rng.next_u64()),
                                1 => random_page(&mut rng),
                                _ => ordinary_page(&mut rng, 0.15),
                            };
                            z.write_page(index, &p).unwrap();
                            shadow.insert(index, p);
                        }
                        2 => {
                            z.discard(index * PS as u64, PS as u64).unwrap();
                            shadow.remove(&index);
                        }
                        _ => {
                            let want = shadow.get(&index).cloned().unwrap_or(vec![0; PS]);
                            assert_eq!(read(z, index), want, "thread {t} page {index}");
                        }
                    }
                    if round % 500 == 0 {
                        z.store("compact", "1").unwrap();
                    }
                }
                for (index, p) in &shadow {
                    assert_eq!(&read(z, *index), p);
                }
            });
        }
    });
    let s = mm(&z);
    assert_eq!(s.orig_data_size / PS as u64, z.block_state().unwrap().lines().count() as u64);
}

/// `reset` waits for the operations in flight on the device, and those that start after it fail
/// at once: however busy its users, a reset device's stats read zero until it is set up again.
/// (When I/O worked on a clone of the live state, a write in flight at the reset finished after
/// it and counted its page in the fresh device's `mm_stat`.)
#[test]
fn reset_waits_for_io_in_flight() {
    let z = device("lz4", 64);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let ok_or_eio = |r: Result<(), zmem_zram::ZramError>| {
        if let Err(e) = r {
            assert_eq!(e.errno, Errno::EIO, "{e}");
        }
    };
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (z, stop) = (&z, &stop);
            s.spawn(move || {
                let mut rng = Rng::new(t);
                let pages = [ordinary_page(&mut rng, 0.3), same_page(t), random_page(&mut rng)];
                let mut out = vec![0u8; PS];
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let index = (i * 2 + t) % 64;
                    ok_or_eio(z.write_page(index, &pages[i as usize % 3]));
                    ok_or_eio(z.read_page(index, &mut out));
                    if i.is_multiple_of(7) {
                        ok_or_eio(z.discard(index * PS as u64, PS as u64));
                    }
                    i += 1;
                }
            });
        }
        // Stops the users however this thread leaves, so a failed check fails the test
        // instead of leaving the scope waiting for them.
        struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = StopOnDrop(&stop);
        for round in 0..300 {
            z.store("reset", "1").unwrap();
            assert_eq!(mm(&z), MmStat::default(), "round {round}");
            let io: IoStat = z.show("io_stat").unwrap().parse().unwrap();
            assert_eq!(io, IoStat::default(), "round {round}");
            z.store("disksize", "256K").unwrap();
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    });
    z.write_page(3, &same_page(7)).unwrap();
    assert_eq!(read(&z, 3), same_page(7));
}

/// A request of many pages (`write_pages`, `read_pages`) stores and reads exactly what one
/// request per page does, page by page: the same `mm_stat` and bytes, each page's own error in
/// order (one past the disk's end, a short last page), `failed_writes` counted as per page, and
/// `done` returning false ends the request there.
#[test]
fn a_request_of_many_pages_is_its_pages_one_by_one() {
    let pages = mixed_pages(6, 41);
    let one = device("lzo-rle", 6);
    for (k, p) in pages.iter().enumerate() {
        one.write_page(k as u64, p).unwrap();
    }
    let many = device("lzo-rle", 6);
    // Pages 2..=7 of a 6-page disk, the last one short: 2..=5 land, 6 is beyond, 7 is short.
    let mut buf: Vec<u8> = pages[2..].concat();
    buf.extend_from_slice(&pages[0]);
    buf.extend_from_slice(&pages[1][..100]);
    let mut seen = Vec::new();
    let mut done = |i, r: Result<(), zmem_zram::ZramError>| {
        seen.push((i, r.err().map(|e| e.errno)));
        true
    };
    many.write_pages(2, &buf, None, &mut done).unwrap();
    let want =
        [(2, None), (3, None), (4, None), (5, None), (6, Some(Errno::EIO)), (7, Some(Errno::EIO))];
    assert_eq!(seen, want);
    // And 0..=1, stopping after the first page: page 1 stays unwritten.
    let mut calls = 0;
    many.write_pages(0, &pages[..2].concat(), None, &mut |_, r| {
        r.unwrap();
        calls += 1;
        false
    })
    .unwrap();
    assert_eq!(calls, 1);
    assert_eq!(read(&many, 1), vec![0; PS], "the request stopped before page 1");
    many.write_page(1, &pages[1]).unwrap();
    assert_eq!(mm(&many), mm(&one));
    assert_eq!(many.io_stat().failed_writes, 0, "a page beyond the disk is not a failed write");
    // Read back as one request: the same bytes, then the page beyond the end fails alone.
    let mut out = vec![0u8; 7 * PS];
    let mut errs = Vec::new();
    many.read_pages(0, &mut out, &mut |i, r| {
        if let Err(e) = r {
            errs.push((i, e.errno));
        }
        true
    })
    .unwrap();
    assert_eq!(out[..6 * PS], pages.concat()[..]);
    assert_eq!(errs, [(6, Errno::EIO)]);
    // An uninitialised device refuses the whole request.
    let idle = Zram::new(ZramConfig::default()).unwrap();
    assert_eq!(errno(idle.write_pages(0, &pages[0], None, &mut |_, _| true)), Errno::EIO);
    assert_eq!(errno(idle.read_pages(0, &mut out[..PS], &mut |_, _| true)), Errno::EIO);
}
