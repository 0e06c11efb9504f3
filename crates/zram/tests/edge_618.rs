//! Edge cases of Linux 6.18's drivers/block/zram/zram_drv.c (and the helpers it calls) where
//! zmem used to differ: sizes that wrap, parse errors, `backing_dev`'s checks, the open/claim
//! state `reset` looks at, and `algorithm_params` written after `disksize`. Each test names the
//! kernel function it follows; where the live kernel can show the behaviour harmlessly, a test
//! compares with it.

mod common;

use std::sync::Arc;

use common::*;
use zmem_zram::{Errno, MemStore, Zram, ZramConfig, ZramError};

fn errno(r: Result<(), ZramError>) -> Errno {
    r.unwrap_err().errno
}

/// A page-aligned size that `PAGE_ALIGN` wraps to 0: 2^64 - 4095 and above.
const WRAPS_4K: &[&str] = &["18446744073709547521", "18446744073709551615", "0xfffffffffffff001"];

/// `disksize_store`: `PAGE_ALIGN(disksize)` wraps to 0 from 2^64 - 4095 on, `zram_meta_alloc`'s
/// `vzalloc(0)` fails and the write is ENOMEM; the device stays uninitialised. (Not compared with
/// the live kernel: `vzalloc(0)` trips a WARN_ON_ONCE there.)
#[test]
fn disksize_store_of_a_size_page_align_wraps_is_enomem() {
    for text in WRAPS_4K {
        let z = Zram::new(ZramConfig::default()).unwrap();
        assert_eq!(errno(z.store("disksize", text)), Errno::ENOMEM, "{text}");
        assert_eq!(z.show("initstate").unwrap(), "0\n", "{text}");
        assert_eq!(z.show("disksize").unwrap(), "0\n", "{text}");
        // The device is still usable.
        z.store("disksize", "1M").unwrap();
        assert_eq!(z.nr_pages(), 256);
    }
    // On 64 KiB pages the wrap starts at 2^64 - 65535.
    let z = Zram::new(ZramConfig { page_size: 65536, ..ZramConfig::default() }).unwrap();
    assert_eq!(errno(z.store("disksize", "18446744073709486081")), Errno::ENOMEM);
    assert!(!z.is_initialised());
}

/// `mem_limit_store`: `PAGE_ALIGN(limit) >> PAGE_SHIFT` wraps to 0 pages (no limit) from
/// 2^64 - 4095 on; `mm_stat` then shows a limit of 0.
#[test]
fn mem_limit_store_of_a_size_page_align_wraps_is_no_limit() {
    for text in WRAPS_4K {
        let z = device("lzo-rle", 16);
        z.store("mem_limit", "4096").unwrap();
        z.store("mem_limit", text).unwrap();
        let s = mm(&z);
        assert_eq!(s.mem_limit, 0, "{text}");
        // No limit: pages that need more than one pool page are stored.
        let mut rng = Rng::new(3);
        for i in 0..16 {
            z.write_page(i, &random_page(&mut rng)).unwrap();
        }
        assert_eq!(mm(&z).huge_pages, 16, "{text}");
    }
    // Just below the wrap, the limit is the last page.
    let z = device("lzo-rle", 4);
    z.store("mem_limit", "18446744073709547520").unwrap();
    assert_eq!(mm(&z).mem_limit, 18446744073709547520);
}

/// `reset_store` parses with `kstrtou16`, which is `kstrtoull` underneath: a `-` is no digit,
/// so "-1" is EINVAL (not ERANGE), while a value past u16 is ERANGE.
#[test]
fn reset_store_of_minus_one_is_einval() {
    let z = device("lzo-rle", 4);
    assert_eq!(errno(z.store("reset", "-1")), Errno::EINVAL);
    assert_eq!(errno(z.store("reset", "-0")), Errno::EINVAL);
    assert_eq!(errno(z.store("reset", "70000")), Errno::ERANGE);
    assert!(z.is_initialised(), "a refused reset resets nothing");
    // Signed parsers keep taking the sign (`kstrtoint` -> `kstrtoll`).
    assert_eq!(
        errno(z.store("algorithm_params", "priority=-1 level=1")),
        Errno::EINVAL,
        "priority -1 parses, then is out of the priority range"
    );
}

/// `writeback_limit_store` and `writeback_limit_enable_store` return EINVAL for any failed
/// `kstrtoull`, overflow included.
#[test]
fn writeback_limit_stores_turn_every_parse_failure_into_einval() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    for attr in ["writeback_limit", "writeback_limit_enable"] {
        for bad in ["18446744073709551616", "99999999999999999999999", "x", "-1", ""] {
            assert_eq!(errno(z.store(attr, bad)), Errno::EINVAL, "{attr} <- {bad:?}");
        }
    }
    z.store("writeback_limit", "18446744073709551615").unwrap();
    assert_eq!(z.show("writeback_limit").unwrap(), "18446744073709551615\n");
}

/// `comp_params_store` -> `kernel_read_file_from_path`: a file that is not regular
/// (`/dev/null`) or is empty (`i_size <= 0`) is an error, which `algorithm_params` returns as
/// EINVAL.
#[test]
fn algorithm_params_dict_of_an_empty_file_or_dev_null_is_einval() {
    let empty = std::env::temp_dir().join(format!("zmem-edge-empty-dict-{}", std::process::id()));
    std::fs::write(&empty, b"").unwrap();
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "zstd").unwrap();
    for path in ["/dev/null", empty.to_str().unwrap(), "/"] {
        assert_eq!(
            errno(z.store("algorithm_params", &format!("algo=zstd dict={path}"))),
            Errno::EINVAL,
            "{path}"
        );
    }
    let _ = std::fs::remove_file(&empty);
}

/// A device with an in-memory backing store, `pages` pages, ordinary pages in 0..8, all idle.
fn wb_device(pages: usize) -> Zram {
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.set_backing_store("mem".into(), Box::new(Arc::new(MemStore::new(64 * PS)))).unwrap();
    z.store("disksize", &(pages * PS).to_string()).unwrap();
    let mut rng = Rng::new(5);
    for i in 0..8 {
        z.write_page(i, &ordinary_page(&mut rng, 0.1)).unwrap();
    }
    z.store("idle", "all").unwrap();
    z
}

/// `writeback_store`: a parameter with an empty value (`!val || !*val`) is the old valueless
/// mode syntax, the parameter's name being the mode: "foo=" is EINVAL, "idle=" writes the idle
/// slots back, "type=" and "page_index=" are EINVAL (neither names a mode).
#[test]
fn writeback_store_reads_an_empty_value_as_the_old_mode_syntax() {
    let z = wb_device(16);
    for bad in ["foo=", "type=", "page_index=", "page_index=1 bar="] {
        assert_eq!(errno(z.store("writeback", bad)), Errno::EINVAL, "{bad:?}");
    }
    assert_eq!(z.bd_stat().bd_writes, 0);
    z.store("writeback", "idle=").unwrap();
    assert_eq!(z.bd_stat().bd_writes, 8, "idle= wrote the 8 idle slots back");
}

/// `deflate.winbits` outside zlib's range: 6.18 reaches a BUG_ON in `zlib_deflateInit2`'s
/// caller; zmem refuses it at `disksize` with EINVAL and stays uninitialised (a deliberate
/// difference, ARCHITECTURE.md "Which kernel zmem follows"). Inside the range it works.
#[test]
fn deflate_winbits_out_of_range_is_einval_at_disksize() {
    // `zlib_deflate_workspacesize`: |winbits| outside 9..=15 is the BUG_ON.
    for bad in ["99", "-99", "0", "7", "8", "-8", "16", "-16"] {
        let z = Zram::new(ZramConfig::default()).unwrap();
        z.store("comp_algorithm", "deflate").unwrap();
        z.store("algorithm_params", &format!("algo=deflate deflate.winbits={bad}")).unwrap();
        assert_eq!(errno(z.store("disksize", "1M")), Errno::EINVAL, "winbits {bad}");
        assert!(!z.is_initialised());
    }
    for good in ["-9", "-12", "-15", "9", "15"] {
        let z = Zram::new(ZramConfig::default()).unwrap();
        z.store("comp_algorithm", "deflate").unwrap();
        z.store("algorithm_params", &format!("algo=deflate deflate.winbits={good}")).unwrap();
        z.store("disksize", "1M").unwrap();
        let p = ordinary_page(&mut Rng::new(1), 0.2);
        z.write_page(0, &p).unwrap();
        assert_eq!(read(&z, 0), p, "winbits {good}");
    }
}

/// Compressed bytes of `pages` written at `first..`, from `compr_data_size`.
fn compressed_bytes(z: &Zram, first: u64, pages: &[Vec<u8>]) -> u64 {
    let before = mm(z).compr_data_size;
    for (i, p) in pages.iter().enumerate() {
        z.write_page(first + i as u64, p).unwrap();
    }
    mm(z).compr_data_size - before
}

fn text_pages(n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(77);
    (0..n).map(|_| ordinary_page(&mut rng, 0.15)).collect()
}

/// 6.18's streams point at `zram->params[prio]` (`zcomp_create` keeps the pointer) and lz4's
/// and lz4hc's `compress` read `params->level` on every call, so a level written to
/// `algorithm_params` after `disksize` (`algorithm_params_store` -> `comp_params_store`, no
/// init check) changes the bytes of the next writes. Pages written before stay readable.
#[test]
fn algorithm_params_level_after_disksize_applies_to_later_lz4_and_lz4hc_writes() {
    let pages = text_pages(32);
    for (algo, first, then) in [("lz4", 1, 64), ("lz4hc", 1, 12)] {
        let z = Zram::new(ZramConfig::default()).unwrap();
        z.store("comp_algorithm", algo).unwrap();
        z.store("algorithm_params", &format!("algo={algo} level={first}")).unwrap();
        z.store("disksize", &(128 * PS).to_string()).unwrap();
        let a = compressed_bytes(&z, 0, &pages);
        // The same level again: the same bytes.
        assert_eq!(compressed_bytes(&z, 32, &pages), a, "{algo}");
        z.store("algorithm_params", &format!("algo={algo} level={then}")).unwrap();
        let b = compressed_bytes(&z, 64, &pages);
        assert_ne!(a, b, "{algo}: level {then} after disksize changed nothing");
        if algo == "lz4" {
            assert!(b > a, "lz4: a higher acceleration compresses less ({a} -> {b})");
        } else {
            assert!(b < a, "lz4hc: a higher level compresses more ({a} -> {b})");
        }
        // A write without a level is the backend's default again (`ZCOMP_PARAM_NOT_SET`).
        z.store("algorithm_params", &format!("algo={algo}")).unwrap();
        let c = compressed_bytes(&z, 96, &pages);
        if algo == "lz4" {
            assert_eq!(c, a, "lz4: the default acceleration is 1");
        } else {
            assert!(c < a, "lz4hc: the default level 9 compresses more than level 1");
        }
        for (i, p) in pages.iter().enumerate() {
            for base in [0, 32, 64, 96] {
                assert_eq!(&read(&z, base + i as u64), p, "{algo} page {}", base + i as u64);
            }
        }
    }
}

/// zstd's level and dictionary are read once, at `disksize` (`zstd_setup_params` builds
/// `cprm`, the C/D dictionaries by reference): a level or `dict=` written afterwards changes no
/// byte of later writes, and every page stays readable. (6.18 frees the old dictionary the
/// dictionaries still point at; zmem keeps it alive.)
#[test]
fn algorithm_params_after_disksize_leaves_zstd_as_it_was_at_init() {
    let dir = std::env::temp_dir().join(format!("zmem-edge-zstd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (d1, d2) = (dir.join("d1"), dir.join("d2"));
    std::fs::write(&d1, b"page zram slot handle class zspage stream idle ".repeat(40)).unwrap();
    std::fs::write(&d2, b"something else entirely, nothing like the pages ".repeat(40)).unwrap();
    let pages = text_pages(32);
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "zstd").unwrap();
    z.store("algorithm_params", &format!("algo=zstd level=1 dict={}", d1.display())).unwrap();
    z.store("disksize", &(128 * PS).to_string()).unwrap();
    let a = compressed_bytes(&z, 0, &pages);
    z.store("algorithm_params", &format!("algo=zstd level=19 dict={}", d2.display())).unwrap();
    assert_eq!(compressed_bytes(&z, 32, &pages), a, "zstd picked up a level or dict live");
    z.store("algorithm_params", "algo=zstd level=22").unwrap();
    assert_eq!(compressed_bytes(&z, 64, &pages), a);
    for (i, p) in pages.iter().enumerate() {
        for base in [0, 32, 64] {
            assert_eq!(&read(&z, base + i as u64), p);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An lz4 dictionary set before `disksize` stays the one streams use when `algorithm_params`
/// is written again (the kernel's `comp_params_reset` `vfree`s it while streams still load it
/// on every call); the pages compressed with it stay readable.
#[test]
fn an_lz4_dictionary_outlives_a_later_algorithm_params_write() {
    let dict = std::env::temp_dir().join(format!("zmem-edge-lz4-dict-{}", std::process::id()));
    std::fs::write(&dict, b"page zram slot handle class zspage stream idle ".repeat(40)).unwrap();
    let pages = text_pages(16);
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", "lz4").unwrap();
    z.store("algorithm_params", &format!("algo=lz4 dict={}", dict.display())).unwrap();
    z.store("disksize", &(64 * PS).to_string()).unwrap();
    let a = compressed_bytes(&z, 0, &pages);
    let _ = std::fs::remove_file(&dict);
    // Dropping the dictionary from the parameters (and changing the level).
    z.store("algorithm_params", "algo=lz4 level=1").unwrap();
    // Readers on other threads while the parameters change under them.
    std::thread::scope(|s| {
        for t in 0..4 {
            let (z, pages) = (&z, &pages);
            s.spawn(move || {
                for _ in 0..10 {
                    for (i, p) in pages.iter().enumerate() {
                        assert_eq!(&read(z, i as u64), p, "thread {t} page {i}");
                    }
                }
            });
        }
        s.spawn(|| {
            for level in 1..20 {
                z.store("algorithm_params", &format!("algo=lz4 level={level}")).unwrap();
            }
            z.store("algorithm_params", "algo=lz4 level=1").unwrap();
        });
    });
    assert_eq!(compressed_bytes(&z, 16, &pages), a, "still compressed with the dictionary");
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&read(&z, i as u64), p);
        assert_eq!(&read(&z, 16 + i as u64), p);
    }
}

/// The live kernel's zram, or a skip (reported by zmem-testkit) where it is unavailable; the
/// guard holds the live lock until the test ends.
fn oracle() -> Option<zmem_testkit::Live> {
    zmem_testkit::live(zmem_kernel::zram_device::unavailable_reason())
}

fn os_errno(r: Result<(), zmem_kernel::KernelError>) -> Option<Errno> {
    r.err().and_then(|e| e.io_error()?.raw_os_error()).and_then(Errno::from_code)
}

/// The edge cases above the live 6.18 kernel can show without harm (its zram here has no
/// writeback, multi-compression or access-time tracking), compared errno for errno.
#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn edge_cases_match_the_live_kernel() {
    let Some(_live) = oracle() else { return };
    let empty = std::env::temp_dir().join(format!("zmem-edge-kempty-{}", std::process::id()));
    std::fs::write(&empty, b"").unwrap();
    let k = zmem_kernel::zram_device::KernelZram::hot_add().unwrap();
    let z = Zram::new(ZramConfig::default()).unwrap();
    let empty_dict = format!("dict={}", empty.display());
    for (attr, text) in [
        ("mem_limit", "18446744073709551615"),
        ("reset", "-1"),
        ("reset", "-0"),
        ("algorithm_params", "dict=/dev/null"),
        ("algorithm_params", empty_dict.as_str()),
        ("disksize", "1M"),
        ("mem_limit", "18446744073709547521"),
        ("reset", "-1"),
        ("mem_limit", "0xfffffffffffff001"),
    ] {
        let theirs = os_errno(k.store(attr, text));
        let mine = z.store(attr, &format!("{text}\n")).err().map(|e| e.errno);
        assert_eq!(mine, theirs, "{attr} <- {text:?}");
    }
    assert_eq!(mm(&z).mem_limit, k.mm_stat().unwrap().mem_limit);
    assert_eq!(mm(&z).mem_limit, 0);

    // `reset_store` while the disk is open (as swapon holds it): EBUSY, then fine once closed.
    let held = std::fs::File::open(k.dev()).unwrap();
    let open = z.open().unwrap();
    assert_eq!(os_errno(k.store("reset", "1")), Some(Errno::EBUSY));
    assert_eq!(errno(z.store("reset", "1\n")), Errno::EBUSY);
    assert_eq!(k.show("initstate").unwrap(), z.show("initstate").unwrap());
    drop((held, open));
    k.store("reset", "1").unwrap();
    z.store("reset", "1\n").unwrap();
    assert_eq!(k.show("initstate").unwrap(), "0\n");
    assert_eq!(z.show("initstate").unwrap(), "0\n");
    let _ = std::fs::remove_file(&empty);
}

/// `reset_store`: EBUSY while the disk is open (`disk_openers`) or claimed (`zram->claim`);
/// `zram_open`: EBUSY while claimed. A refused reset changes nothing.
#[test]
fn reset_store_is_ebusy_while_the_device_is_open_or_claimed() {
    let z = device("lzo-rle", 8);
    let p = ordinary_page(&mut Rng::new(9), 0.2);
    z.write_page(0, &p).unwrap();
    let a = z.open().unwrap();
    let b = z.open().unwrap();
    assert!(z.is_open());
    assert_eq!(errno(z.store("reset", "1")), Errno::EBUSY);
    assert_eq!(z.claim().unwrap_err().errno, Errno::EBUSY);
    drop(a);
    assert_eq!(errno(z.store("reset", "1")), Errno::EBUSY, "one opener is left");
    assert_eq!(read(&z, 0), p, "the refused resets kept the data");
    drop(b);
    assert!(!z.is_open());
    {
        let _claim = z.claim().unwrap();
        assert_eq!(z.open().unwrap_err().errno, Errno::EBUSY);
        assert_eq!(errno(z.store("reset", "1")), Errno::EBUSY);
        assert_eq!(z.claim().unwrap_err().errno, Errno::EBUSY);
    }
    z.store("reset", "1").unwrap();
    assert!(!z.is_initialised());
    // Reset released its own claim.
    drop(z.open().unwrap());
    // The parse comes first: a bad value is EINVAL even on an open device.
    let _open = z.open().unwrap();
    assert_eq!(errno(z.store("reset", "0")), Errno::EINVAL);
    assert_eq!(errno(z.store("reset", "-1")), Errno::EINVAL);
}

/// `read_block_state`: EINVAL on a device that is not initialised.
#[test]
fn block_state_before_init_is_einval() {
    let z = Zram::new(ZramConfig::default()).unwrap();
    assert_eq!(z.block_state().unwrap_err().errno, Errno::EINVAL);
    z.store("disksize", "64K").unwrap();
    assert_eq!(z.block_state().unwrap(), "");
    z.store("reset", "1").unwrap();
    assert_eq!(z.block_state().unwrap_err().errno, Errno::EINVAL);
}

fn temp_file(name: &str, len: usize) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("zmem-edge-{name}-{}", std::process::id()));
    std::fs::write(&path, vec![0u8; len]).unwrap();
    path
}

/// `backing_dev_store`: a regular file is ENOTBLK (the default); with zmem's
/// `allow_regular_backing_file` it is taken, but as a block device would be: under one page is
/// EINVAL at the store (and the old setting stays), exactly one page is accepted and, block 0
/// being reserved, writeback finds it full (ENOSPC). A failed `disksize` keeps the setting.
#[test]
fn backing_dev_store_takes_block_devices_and_regular_files_only_when_allowed() {
    let (small, one, big) =
        (temp_file("bd-small", PS - 1), temp_file("bd-one", PS), temp_file("bd-big", 8 * PS));
    let z = Zram::new(ZramConfig::default()).unwrap();
    for f in [&small, &one, &big] {
        assert_eq!(errno(z.store("backing_dev", f.to_str().unwrap())), Errno::ENOTBLK);
    }
    assert_eq!(z.show("backing_dev").unwrap(), "none\n");

    let z = Zram::new(ZramConfig { allow_regular_backing_file: true, ..ZramConfig::default() })
        .unwrap();
    assert_eq!(errno(z.store("backing_dev", small.to_str().unwrap())), Errno::EINVAL);
    assert_eq!(z.show("backing_dev").unwrap(), "none\n");
    z.store("backing_dev", big.to_str().unwrap()).unwrap();
    assert_eq!(errno(z.store("backing_dev", small.to_str().unwrap())), Errno::EINVAL);
    assert_eq!(z.show("backing_dev").unwrap(), format!("{}\n", big.display()), "kept");
    z.store("backing_dev", one.to_str().unwrap()).unwrap();
    assert_eq!(errno(z.store("disksize", "18446744073709551615")), Errno::ENOMEM);
    assert_eq!(z.show("backing_dev").unwrap(), format!("{}\n", one.display()), "kept");
    z.store("disksize", "64K").unwrap();
    assert_eq!(z.show("backing_dev").unwrap(), format!("{}\n", one.display()));
    z.write_page(0, &ordinary_page(&mut Rng::new(4), 0.2)).unwrap();
    z.store("idle", "all").unwrap();
    assert_eq!(errno(z.store("writeback", "idle")), Errno::ENOSPC);
    assert_eq!(z.bd_stat().bd_writes, 0);
    // A store given directly is checked the same way.
    let y = Zram::new(ZramConfig::default()).unwrap();
    let e = y.set_backing_store("m".into(), Box::new(MemStore::new(PS - 1))).unwrap_err();
    assert_eq!(e.errno, Errno::EINVAL);
    y.set_backing_store("m".into(), Box::new(MemStore::new(PS))).unwrap();
    for f in [small, one, big] {
        let _ = std::fs::remove_file(f);
    }
}

/// `backing_dev_store` on a block device (a zram disk of the live kernel, created for the
/// test): one of 0 bytes is EINVAL, one of a page is taken; it is opened exclusively (zram as
/// holder), so a device someone else holds exclusively is EBUSY, and one this device holds is
/// EBUSY for another until this one lets it go (at `reset`).
#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn backing_dev_store_claims_block_devices_exclusively() {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(_live) = oracle() else { return };
    let k = zmem_kernel::zram_device::KernelZram::hot_add().unwrap();
    let dev = k.dev();
    let dev = dev.to_str().unwrap();
    let z = Zram::new(ZramConfig::default()).unwrap();
    let other = Zram::new(ZramConfig::default()).unwrap();
    // Not initialised: a disk of 0 bytes.
    assert_eq!(errno(z.store("backing_dev", dev)), Errno::EINVAL);
    k.store("disksize", &PS.to_string()).unwrap();
    let held =
        std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_EXCL).open(dev);
    let held = held.unwrap();
    assert_eq!(errno(z.store("backing_dev", dev)), Errno::EBUSY);
    drop(held);
    z.store("backing_dev", dev).unwrap();
    assert_eq!(errno(other.store("backing_dev", dev)), Errno::EBUSY);
    z.store("disksize", "64K").unwrap();
    z.write_page(0, &ordinary_page(&mut Rng::new(4), 0.2)).unwrap();
    z.store("idle", "all").unwrap();
    assert_eq!(errno(z.store("writeback", "idle")), Errno::ENOSPC, "one page: no free block");
    z.store("reset", "1").unwrap();
    other.store("backing_dev", dev).unwrap();
    drop(other);
    drop(z);
}

/// `bd_wb_limit` on pages above 4 KiB: 6.18's writeback subtracts a page's worth of 4 KiB
/// units from a budget that may hold fewer, and the u64 wraps to an almost endless budget.
/// zmem saturates at 0 instead (ARCHITECTURE.md "Which kernel zmem follows"): a budget of one
/// unit lets exactly one 16 KiB or 64 KiB page go, then writeback is EIO.
#[test]
fn bd_wb_limit_saturates_on_large_pages() {
    for page_size in [16384usize, 65536] {
        let z = Zram::new(ZramConfig { page_size, ..ZramConfig::default() }).unwrap();
        z.set_backing_store("mem".into(), Box::new(MemStore::new(16 * page_size))).unwrap();
        z.store("disksize", &(8 * page_size).to_string()).unwrap();
        let mut rng = Rng::new(6);
        for i in 0..4 {
            let page: Vec<u8> =
                (0..page_size / PS).flat_map(|_| ordinary_page(&mut rng, 0.2)).collect();
            z.write_page(i, &page).unwrap();
        }
        z.store("writeback_limit_enable", "1").unwrap();
        z.store("writeback_limit", "1").unwrap();
        z.store("idle", "all").unwrap();
        assert_eq!(errno(z.store("writeback", "idle")), Errno::EIO, "{page_size}");
        assert_eq!(z.show("writeback_limit").unwrap(), "0\n", "{page_size}");
        // bd_stat counts 4 KiB units: one page of this size went.
        assert_eq!(z.bd_stat().bd_writes, (page_size / PS) as u64, "{page_size}");
        assert_eq!(errno(z.store("writeback", "idle")), Errno::EIO);
        assert_eq!(z.bd_stat().bd_writes, (page_size / PS) as u64);
    }
}
