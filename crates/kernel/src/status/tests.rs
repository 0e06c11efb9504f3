//! The reader over a fixture tree laid out like /sys, /proc and debugfs.

use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fixture(debugfs: bool) -> (tempfile::TempDir, Roots) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "proc/vmstat",
        "nr_free_pages 1\npswpin 10\npswpout 20\nzswpin 3\nzswpout 4\nzswpwb 5\n",
    );
    write(
        root,
        "proc/swaps",
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/zram3                              partition\t1048572\t\t2048\t\t100\n",
    );
    write(
        root,
        "proc/meminfo",
        "MemTotal:        1000000 kB\nZswap:              400 kB\nZswapped:          1200 kB\n",
    );
    // zram3: initialised, a swap area; zram10: hot-added, not initialised.
    let d = "sys/block/zram3";
    write(root, &format!("{d}/initstate"), "1\n");
    write(root, &format!("{d}/disksize"), "1073741824\n");
    write(root, &format!("{d}/comp_algorithm"), "lzo [lzo-rle] lz4\n");
    write(root, &format!("{d}/recomp_algorithm"), "#1: lzo [lz4]\n");
    write(
        root,
        &format!("{d}/mm_stat"),
        "  8388608  2097152  2621440        0  2621440       10        0        5        7\n",
    );
    write(root, &format!("{d}/io_stat"), "       0        0        0       12\n");
    let d = "sys/block/zram10";
    write(root, &format!("{d}/initstate"), "0\n");
    write(root, &format!("{d}/disksize"), "0\n");
    write(root, &format!("{d}/comp_algorithm"), "[lzo-rle] lzo lz4\n");
    write(root, &format!("{d}/mm_stat"), "0 0 0 0 0 0 0 0 0\n");
    write(root, &format!("{d}/io_stat"), "0 0 0 0\n");
    std::fs::create_dir_all(root.join("sys/block/vda")).unwrap();
    write(root, "sys/module/zswap/parameters/enabled", "Y\n");
    write(root, "sys/module/zswap/parameters/compressor", "lzo\n");
    write(root, "sys/module/zswap/parameters/max_pool_percent", "20\n");
    write(root, "sys/module/zswap/parameters/accept_threshold_percent", "90\n");
    write(root, "sys/module/zswap/parameters/shrinker_enabled", "N\n");
    if debugfs {
        write(root, "debug/zswap/stored_pages", "300\n");
        write(root, "debug/zswap/reject_compress_poor", "7\n");
        write(root, "debug/zswap/reject_alloc_fail", "1\n");
        write(root, "debug/zswap/written_back_pages", "9\n");
        write(
            root,
            "debug/zsmalloc/zram3/classes",
            " class  size obj_allocated   obj_used pages_used pages_per_zspage freeable\n     1    48   100   50   2   1   1\n     2    64   64   60   1   1   0\n Total 164 110 3 1\n",
        );
        write(root, "debug/zram/zram3/block_state", "0 1.0 ...i\n1 1.0 s...\n");
    } else {
        std::fs::create_dir_all(root.join("debug")).unwrap();
    }
    let roots = Roots { sys: root.join("sys"), proc: root.join("proc"), debug: root.join("debug") };
    (t, roots)
}

#[test]
fn reads_devices_zswap_and_swaps_from_the_files() {
    let (_t, roots) = fixture(true);
    let s = read(&Options { roots, rate_window: None, block_state: true }).unwrap();
    let page = page_size();
    assert_eq!(s.zram.iter().map(|d| d.id).collect::<Vec<_>>(), [3, 10], "sorted, vda left out");
    let z = &s.zram[0];
    assert!(z.initialized);
    assert_eq!(z.disksize_bytes, 1 << 30);
    assert_eq!(z.algorithm.as_deref(), Some("lzo-rle"));
    assert_eq!(z.algorithms_offered, ["lzo", "lzo-rle", "lz4"]);
    assert_eq!(z.secondaries, [Secondary { priority: 1, algorithm: "lz4".into() }]);
    let mm = z.mm_stat.unwrap();
    assert_eq!(
        (mm.orig_data_size, mm.compr_data_size, mm.mem_used_total),
        (8 << 20, 2 << 20, 2621440)
    );
    assert_eq!(z.compression_ratio, Some(4.0));
    assert_eq!(z.memory_saved_bytes, Some((8 << 20) - 2621440));
    assert_eq!(z.compactable, Some(Compactable { bytes: page, source: "zsmalloc_classes" }));
    assert_eq!(z.idle_pages, Some(1));
    assert_eq!(z.io_stat.unwrap().notify_free, 12);
    assert_eq!(z.bd_stat, None, "no bd_stat in this kernel: absent, not an error");
    let swap = z.swap.as_ref().unwrap();
    assert_eq!((swap.priority, swap.used_bytes), (100, 2048 * 1024));
    assert!(!s.zram[1].initialized);
    assert_eq!(s.zram[1].compression_ratio, None);
    assert_eq!(s.zram[1].swap, None);

    let zs = &s.zswap;
    assert!(zs.present);
    assert_eq!(zs.enabled, Some(true));
    assert_eq!(zs.compressor.as_deref(), Some("lzo"));
    assert_eq!(zs.shrinker_enabled, Some(false));
    assert_eq!(zs.pool_bytes, Some(400 * 1024));
    assert_eq!(zs.stored_bytes, Some(1200 * 1024));
    assert_eq!(zs.compression_ratio, Some(3.0));
    assert_eq!(zs.stored_pages, Some(300), "debugfs wins over Zswapped / page");
    assert_eq!(zs.written_back_pages, Some(9));
    assert_eq!(zs.rejects(), Some(8));
    assert_eq!(zs.pool_limit_bytes, Some(1_024_000_000 / page * 20 / 100 * page));
    assert_eq!(
        s.counters,
        Counters { pswpin: 10, pswpout: 20, zswpin: Some(3), zswpout: Some(4), zswpwb: Some(5) }
    );
    assert_eq!(s.swaps.len(), 1);
    assert!(s.unreadable.is_empty(), "{:?}", s.unreadable);
}

#[test]
fn without_debugfs_says_so_and_falls_back() {
    let (_t, roots) = fixture(false);
    let s = read(&Options { roots, rate_window: None, block_state: true }).unwrap();
    let page = page_size();
    let z = &s.zram[0];
    // mem_used_total 2621440 less compr_data_size (2 MiB, whole pages already).
    assert_eq!(
        z.compactable,
        Some(Compactable { bytes: 2621440 - (2 << 20), source: "mm_stat_bound" })
    );
    assert_eq!(z.idle_pages, None);
    assert_eq!(s.zswap.stored_pages, Some(1200 * 1024 / page), "from Zswapped");
    assert_eq!(s.zswap.written_back_pages, Some(5), "from vmstat zswpwb");
    assert_eq!(s.zswap.rejects(), None);
    let whats: Vec<&str> = s.unreadable.iter().map(|u| u.what.as_str()).collect();
    assert!(whats.contains(&"zram3 zsmalloc classes"), "{whats:?}");
    assert!(whats.contains(&"zram3 idle pages"), "{whats:?}");
    assert!(whats.iter().any(|w| w.starts_with("zswap counters")), "{whats:?}");
    // zram10 is not initialised: it has no pool to ask about.
    assert!(!whats.iter().any(|w| w.starts_with("zram10")), "{whats:?}");
    assert!(s.unreadable.iter().all(|u| u.why.contains("debugfs")), "{:?}", s.unreadable);
}

#[test]
fn rates_over_the_window() {
    let a = Counters { pswpin: 10, pswpout: 20, zswpin: Some(0), zswpout: None, zswpwb: Some(4) };
    let b = Counters { pswpin: 30, pswpout: 20, zswpin: Some(8), zswpout: None, zswpwb: Some(4) };
    let r = rates(&a, &b, 2.0);
    assert_eq!((r.pswpin_per_sec, r.pswpout_per_sec), (10.0, 0.0));
    assert_eq!(
        (r.zswpin_per_sec, r.zswpout_per_sec, r.zswpwb_per_sec),
        (Some(4.0), None, Some(0.0))
    );
}

#[test]
fn a_mangled_mm_stat_is_listed_not_fatal() {
    let (t, roots) = fixture(true);
    write(t.path(), "sys/block/zram3/mm_stat", "garbage\n");
    let s = read(&Options { roots, rate_window: None, block_state: false }).unwrap();
    assert_eq!(s.zram[0].mm_stat, None);
    assert!(s.unreadable.iter().any(|u| u.what == "zram3 mm_stat" && u.why.contains("unexpected")));
}

#[test]
fn a_missing_debugfs_file_says_whether_debugfs_is_mounted() {
    let (_t, roots) = fixture(false);
    let s = read(&Options { roots, rate_window: None, block_state: true }).unwrap();
    let u = s.unreadable.iter().find(|u| u.what == "zram3 zsmalloc classes").unwrap();
    assert!(u.why.contains("debugfs is not mounted"), "{u:?}");
    assert!(u.why.contains("--mount-debugfs"), "{u:?}");
    // Mounted (the directory lists something), but this kernel has no zsmalloc statistics.
    let (_t, roots) = fixture(false);
    write(&roots.debug, "zswap/stored_pages", "1\n");
    let s = read(&Options { roots, rate_window: None, block_state: true }).unwrap();
    let u = s.unreadable.iter().find(|u| u.what == "zram3 zsmalloc classes").unwrap();
    assert!(u.why.contains("debugfs is mounted, but this kernel does not have"), "{u:?}");
    assert!(!u.why.contains("not mounted"), "{u:?}");
}

#[test]
fn a_device_gone_mid_read_is_said_to_be_removed() {
    let (_t, roots) = fixture(true);
    let gone = roots.sys.join("block/zram3/mm_stat");
    let e = std::io::Error::from(std::io::ErrorKind::NotFound);
    assert_eq!(why(&e, &gone, &roots), "not present in this kernel", "the device is still there");
    std::fs::remove_dir_all(roots.sys.join("block/zram3")).unwrap();
    assert_eq!(why(&e, &gone, &roots), "zram3 was removed while it was read");
}
