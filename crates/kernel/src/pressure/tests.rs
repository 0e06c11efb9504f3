use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// This machine kind's /proc/zoneinfo, cut to the fields read (6.18.44, 24 GiB, one node).
const ZONEINFO: &str = "Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 692
  pages free     3840
        boost    0
        min      10
        low      13
        high     16
        promo    19
        spanned  4095
        present  3998
        managed  3840
      nr_free_pages 3840
Node 0, zone    DMA32
  pages free     729086
        min      2116
        low      2888
        high     3660
        managed  772845
Node 0, zone   Normal
  pages free     685079
        min      14769
        low      20163
        high     25557
        managed  5394258
Node 0, zone  Movable
  pages free     0
        min      32
        low      32
        high     32
        managed  0
";

#[test]
fn psi_lines_parse_and_bad_ones_say_why() {
    let t = "some avg10=1.50 avg60=0.25 avg300=0.00 total=172133\n\
             full avg10=0.00 avg60=0.00 avg300=0.00 total=115064\n";
    let p = parse_psi(t).unwrap();
    assert_eq!(p.some, PsiLine { avg10: 1.5, avg60: 0.25, avg300: 0.0, total_us: 172133 });
    assert_eq!(p.full.unwrap().total_us, 115064);
    // cpu.pressure has no full line on older kernels.
    assert!(parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n").unwrap().full.is_none());
    assert!(parse_psi("").unwrap_err().contains("no some line"));
    assert!(parse_psi("some avg10=x total=1").unwrap_err().contains("not a number"));
    assert!(parse_psi("half avg10=0").unwrap_err().contains("neither"));
}

#[test]
fn zoneinfo_gives_every_zone_and_sums_the_populated_ones() {
    let zones = parse_zoneinfo(ZONEINFO);
    assert_eq!(zones.len(), 4);
    assert_eq!(
        zones[0],
        Zone { node: 0, name: "DMA".into(), free: 3840, min: 10, low: 13, high: 16, managed: 3840 }
    );
    assert_eq!(zones[3].name, "Movable");
    let w = Watermarks::of(&zones, 4096);
    // Movable manages no page: its marks (32) are left out.
    assert_eq!(w.low_bytes, (13 + 2888 + 20163) * 4096);
    assert_eq!(w.high_bytes, (16 + 3660 + 25557) * 4096);
    assert_eq!(w.min_bytes, (10 + 2116 + 14769) * 4096);
    assert_eq!(w.free_bytes, (3840 + 729086 + 685079) * 4096);
}

#[test]
fn refaults_read_split_and_old_counters() {
    let mut c = BTreeMap::new();
    c.insert("workingset_refault_anon".to_string(), 5);
    c.insert("workingset_refault_file".to_string(), 7);
    assert_eq!(Refaults::from_counters(&c), Refaults { anon: 5, file: 7, ..Refaults::default() });
    let mut old = BTreeMap::new();
    old.insert("workingset_refault".to_string(), 9);
    assert_eq!(Refaults::from_counters(&old).file, 9);
}

/// A fake machine: PSI, meminfo, zoneinfo, vmstat, a v2 hierarchy with one limited cgroup and
/// one without a limit, a v1 hierarchy with one limited cgroup and an unlimited root.
fn machine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        "proc/pressure/memory",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n\
         full avg10=0.00 avg60=0.00 avg300=0.00 total=400\n",
    );
    write(
        r,
        "proc/meminfo",
        "MemTotal:       24000000 kB\nMemAvailable:   23000000 kB\nInactive(file):  300 kB\nAnonPages:  700 kB\n",
    );
    write(r, "proc/zoneinfo", ZONEINFO);
    write(
        r,
        "proc/vmstat",
        "pswpin 10\npswpout 20\nworkingset_refault_anon 3\nworkingset_refault_file 4\n",
    );
    let v2 = "sys/fs/cgroup/unified";
    write(r, &format!("{v2}/cgroup.controllers"), "memory\n");
    write(r, &format!("{v2}/app.slice/memory.max"), "1073741824\n");
    write(r, &format!("{v2}/app.slice/memory.high"), "max\n");
    write(r, &format!("{v2}/app.slice/memory.current"), "1000000000\n");
    write(
        r,
        &format!("{v2}/app.slice/memory.stat"),
        "anon 5\ninactive_file 4\nworkingset_refault_anon 8\n",
    );
    write(
        r,
        &format!("{v2}/app.slice/memory.pressure"),
        "some avg10=2.00 avg60=1.00 avg300=0.50 total=99\n\
         full avg10=0.00 avg60=0.00 avg300=0.00 total=9\n",
    );
    write(r, &format!("{v2}/free.slice/memory.max"), "max\n");
    write(r, &format!("{v2}/free.slice/memory.high"), "max\n");
    let v1 = "sys/fs/cgroup/memory";
    write(r, &format!("{v1}/memory.limit_in_bytes"), "9223372036854771712\n");
    write(r, &format!("{v1}/box/memory.limit_in_bytes"), "157286400\n");
    write(r, &format!("{v1}/box/memory.usage_in_bytes"), "150000000\n");
    write(
        r,
        &format!("{v1}/box/memory.stat"),
        "workingset_refault_anon 1\ntotal_workingset_refault_anon 6\nrss 1\ntotal_rss 70\ntotal_inactive_file 30\n",
    );
    dir
}

#[test]
fn a_machine_reads_whole_with_its_limited_cgroups() {
    let dir = machine();
    let p = read_at(dir.path());
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    assert_eq!(p.psi.unwrap().some.total_us, 1000);
    assert_eq!(p.mem_available_bytes, Some(23_000_000 * 1024));
    assert_eq!((p.inactive_file_bytes, p.anon_bytes), (Some(300 * 1024), Some(700 * 1024)));
    assert_eq!(p.watermarks.low_bytes, (13 + 2888 + 20163) * page_size());
    assert_eq!((p.swap.pswpin, p.swap.pswpout), (10, 20));
    assert_eq!((p.refaults.anon, p.refaults.file), (3, 4));
    assert_eq!(p.cgroups.len(), 2, "{:?}", p.cgroups);
    let app = &p.cgroups[0];
    assert_eq!(app.path, "/sys/fs/cgroup/unified/app.slice");
    assert_eq!((app.version, app.max_bytes, app.high_bytes), (2, Some(1 << 30), None));
    assert_eq!(app.usage_bytes, Some(1_000_000_000));
    assert_eq!(app.refaults.anon, 8);
    assert_eq!((app.anon_bytes, app.inactive_file_bytes), (Some(5), Some(4)));
    assert_eq!(app.psi.unwrap().some.avg10, 2.0);
    let boxed = &p.cgroups[1];
    assert_eq!(boxed.path, "/sys/fs/cgroup/memory/box");
    assert_eq!(
        (boxed.version, boxed.max_bytes, boxed.usage_bytes),
        (1, Some(157286400), Some(150000000))
    );
    // v1's hierarchical counter, not the cgroup's own.
    assert_eq!(boxed.refaults.anon, 6);
    assert_eq!((boxed.anon_bytes, boxed.inactive_file_bytes), (Some(70), Some(30)));
    assert!(boxed.psi.is_none());
}

#[test]
fn an_empty_root_says_what_it_could_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = read_at(dir.path());
    assert!(p.psi.is_none() && p.mem_available_bytes.is_none() && p.cgroups.is_empty());
    let notes = p.notes.join("; ");
    for want in ["/proc/pressure/memory", "meminfo", "/proc/zoneinfo", "vmstat"] {
        assert!(notes.contains(want), "{want} missing from {notes}");
    }
}

#[test]
fn a_window_is_stall_share_and_rates() {
    let dir = machine();
    let before = read_at(dir.path());
    let mut after = before.clone();
    // 2 s of stall in a 10 s window: 20 % some; full went from 400 to 1400 us.
    after.psi.as_mut().unwrap().some.total_us += 2_000_000;
    after.psi.as_mut().unwrap().full.as_mut().unwrap().total_us += 1000;
    after.swap.pswpout += 50;
    after.refaults.file += 30;
    let w = after.since(&before, 10.0);
    assert!((w.psi_some_percent.unwrap() - 20.0).abs() < 1e-9, "{w:?}");
    assert!((w.psi_full_percent.unwrap() - 0.01).abs() < 1e-9, "{w:?}");
    assert_eq!((w.pswpout_per_sec, w.refaults_file_per_sec, w.pswpin_per_sec), (5.0, 3.0, 0.0));
    // Backwards counters and an empty window give no rate.
    let back = before.since(&after, 10.0);
    assert_eq!(back.pswpout_per_sec, 0.0);
    assert_eq!(after.since(&before, 0.0).psi_some_percent, None);
}

/// The live kernel: PSI, MemAvailable and the watermarks read, and the watermarks in order.
#[test]
#[ignore = "live: reads /proc/pressure/memory and /proc/zoneinfo (scripts/test runs it)"]
fn live_pressure_reads() {
    let why = (!Path::new("/proc/pressure/memory").exists())
        .then(|| "no /proc/pressure/memory (PSI off)".to_string());
    let Some(_live) = zmem_testkit::live(why) else { return };
    let p = read();
    println!("{p:#?}");
    assert!(p.psi.is_some() && p.mem_available_bytes.is_some(), "{:?}", p.notes);
    let w = p.watermarks;
    assert!(0 < w.min_bytes && w.min_bytes <= w.low_bytes && w.low_bytes <= w.high_bytes, "{w:?}");
}

#[test]
fn a_cgroup_named_is_read_limited_or_not() {
    let dir = machine();
    let r = dir.path();
    write(r, "sys/fs/cgroup/memory/free/memory.usage_in_bytes", "7\n");
    write(r, "sys/fs/cgroup/memory/free/memory.limit_in_bytes", "9223372036854771712\n");
    write(r, "sys/fs/cgroup/memory/free/memory.stat", "total_rss 5\ntotal_inactive_file 1\n");
    let c = read_cgroup(r, "/sys/fs/cgroup/memory/free").unwrap();
    assert_eq!((c.version, c.usage_bytes, c.max_bytes), (1, Some(7), None));
    assert_eq!((c.anon_bytes, c.inactive_file_bytes), (Some(5), Some(1)));
    assert_eq!(c.path, "/sys/fs/cgroup/memory/free");
    let v2 = read_cgroup(r, "/sys/fs/cgroup/unified/free.slice");
    assert!(v2.unwrap_err().to_string().contains("no memory cgroup"));
    write(r, "sys/fs/cgroup/unified/free.slice/memory.current", "3\n");
    let c = read_cgroup(r, "/sys/fs/cgroup/unified/free.slice").unwrap();
    assert_eq!((c.version, c.usage_bytes, c.max_bytes), (2, Some(3), None));
    assert!(read_cgroup(r, "/nowhere").is_err());
}
