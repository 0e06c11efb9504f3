//! The advisor on a fake kernel tree: no zram at all, zswap present, four processes: one
//! whose 100 resident anonymous pages all hold the same page (so the judgement is known to
//! the byte), one that exits mid-read (its mem ends before the page), a zombie, and one whose
//! maps cannot be read (refused). The advisor must serve zswap's rows, say that zram is absent, count the
//! faults by reason, keep its sample within the size asked, and never panic.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::*;

const HEAP: (u64, u64) = (0x10000, 0x74000); // 100 pages of 4 KiB

fn write(root: &Path, rel: &str, data: impl AsRef<[u8]>) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

/// A page that compresses well but not to nothing.
fn text_page(ps: usize) -> Vec<u8> {
    let words = b"zswap stores what reclaim offers it, compressed, in one zsmalloc pool; ";
    let mut p: Vec<u8> = words.iter().cycle().take(ps).copied().collect();
    for (i, b) in p.iter_mut().enumerate().step_by(97) {
        *b = (i % 251) as u8;
    }
    p
}

/// A process `pid` whose heap is `HEAP`, every page present, `mem` its memory file.
fn process(root: &Path, pid: u32, ps: usize, mem: &[u8]) {
    process_with(root, pid, ps, mem, 400);
}

fn process_with(root: &Path, pid: u32, ps: usize, mem: &[u8], rss_kb: u64) {
    let dir = format!("proc/{pid}");
    write(root, &format!("{dir}/status"), format!("Name:\tfake\nRssAnon:\t  {rss_kb} kB\n"));
    write(
        root,
        &format!("{dir}/maps"),
        format!("{:08x}-{:08x} rw-p 00000000 00:00 0 [heap]\n", HEAP.0, HEAP.1),
    );
    let ps = ps as u64;
    let map: Vec<u8> = (0..HEAP.1 / ps)
        .flat_map(|v| {
            let present = v >= HEAP.0 / ps;
            (if present { 1u64 << 63 } else { 0 }).to_le_bytes()
        })
        .collect();
    write(root, &format!("{dir}/pagemap"), map);
    write(root, &format!("{dir}/mem"), mem);
}

fn fake_kernel(root: &Path, ps: usize) {
    write(root, "proc/sys/kernel/osrelease", "6.18.0-fake\n");
    write(root, "proc/meminfo", "MemTotal: 1000000 kB\nAnonPages:     400 kB\n");
    write(root, "proc/vmstat", "pswpin 10\npswpout 20\nzswpin 0\nzswpout 0\n");
    let crypto = |n: &str| {
        format!(
            "name         : {n}\ndriver       : {n}-scomp\nmodule       : kernel\ntype         : scomp\n\n"
        )
    };
    write(root, "proc/crypto", crypto("lzo") + &crypto("lz4"));
    write(root, "sys/module/zswap/parameters/enabled", "N\n");
    write(root, "sys/module/zswap/parameters/compressor", "lzo\n");
    // pid 100: the same page at every heap address.
    let page = text_page(ps);
    let mut mem = vec![0u8; HEAP.1 as usize];
    for p in mem[HEAP.0 as usize..].chunks_exact_mut(ps) {
        p.copy_from_slice(&page);
    }
    process(root, 100, ps, &mem);
    // pid 200: exits mid-read: maps and pagemap say present, its memory ends (EOF, as the
    // kernel's mem_rw() gives once the mm is gone).
    process(root, 200, ps, &[]);
    // pid 300: its maps cannot be read (a directory here: EISDIR, neither ESRCH nor ENOENT,
    // as EACCES would be for a process we may not trace): refused.
    write(root, "proc/300/status", "Name:\tguarded\nRssAnon:\t     400 kB\n");
    std::fs::create_dir_all(root.join("proc/300/maps")).unwrap();
    write(root, "proc/300/stat", "300 (a (b) c) S 1 300 300 0\n");
    // pid 400: a zombie (its directory stays until reaped; its maps are gone): exited.
    write(root, "proc/400/status", "Name:\tz\nRssAnon:\t     400 kB\n");
    write(root, "proc/400/stat", "400 (z) Z 1 400 400 0\n");
}

#[test]
fn without_zram_the_zswap_part_serves_counts_its_faults_and_stays_bounded() {
    let ps = zmem_kernel::capture::system_page_size();
    let dir = tempfile::tempdir().unwrap();
    fake_kernel(dir.path(), ps);
    let opts = Options {
        sample_pages: 50,
        refresh: Duration::ZERO,
        root: dir.path().to_path_buf(),
        ..Options::default()
    };
    let mut a = Advisor::new(opts);
    assert!(a.zswap.is_some(), "zswap is present in the fake tree");
    a.rescan();
    for _ in 0..5000 {
        a.read_some();
        if a.zswap.as_ref().unwrap().filled() {
            break;
        }
    }
    // The processes' pages were read, and none is left in the sampler's buffers.
    let z = a.zswap.as_ref().unwrap();
    assert!(z.pages_read > 0 && z.buffers_clear());
    let s = a.judge();
    assert!(!s.zram_present);
    assert!(s.devices.is_empty());
    assert!(s.zswap_present);
    let z = s.zswap.as_ref().expect("zswap's judgement");
    assert!(z.filled);
    assert_eq!(z.sample_pages, 50);
    assert_eq!(z.zero_pages, 0);
    assert_eq!(z.population_pages, 400 * 1024 / ps as u64);
    // pid 200 (mem ended) and the zombie 400 exited; 300 refused; each once, then unlisted.
    assert_eq!(z.skips.exited, 2, "{:?}", z.skips);
    assert_eq!(z.skips.refused, 1, "{:?}", z.skips);
    // Both faulty processes leave the list; the one that reads stays.
    assert_eq!(z.processes, 1);
    assert_eq!(z.current(), "none", "zswap is disabled");

    // The judgement of a known sample: every page the same, so each candidate's pool is the
    // population's pages in the one class of that page's stored length.
    let classes = estimate::zswap_classes(ps).unwrap();
    let page = text_page(ps);
    let n = z.population_pages;
    let configs: Vec<&str> = z.rows.iter().map(|r| r.config.as_str()).collect();
    assert_eq!(configs, ["lzo", "lz4"], "the live compressor first, then /proc/crypto's");
    for r in &z.rows {
        let mut c = zmem_comp::create(&r.config, &zmem_comp::Params::default(), ps).unwrap();
        let mut out = vec![0u8; zmem_comp::compress_bound(ps)];
        let len = estimate::zswap_stored_len(ps, c.compress(&page, &mut out).ok());
        assert!(len < ps / 2, "{}: {len}", r.config);
        let class = classes.classes()[classes.slot_for_request(len)];
        let pool = n.div_ceil(class.objs_per_zspage as u64) * (class.pages_per_zspage * ps) as u64;
        assert_eq!(r.pool_bytes.estimate, pool as f64, "{}", r.config);
        let saved = r.memory_saved_bytes;
        assert_eq!(saved.estimate, (n * ps as u64 - pool) as f64);
        assert!(saved.low <= saved.estimate && saved.estimate <= saved.high, "{saved:?}");
        assert!(!r.is_current);
    }
    // lz4 stores this page in a smaller class: its pool is two pages (8 KiB) smaller, inside
    // the uncertainty of the difference (two +-4.6 kB intervals in quadrature, at least 1 % of
    // the pages: 4 KiB); equal, then, and the tie rule (same CPU: none at these rates; nothing
    // runs now) takes the kernel's order: lzo.
    let lzo = z.rows[0].memory_saved_bytes;
    let lz4 = z.rows[1].memory_saved_bytes;
    assert_eq!(lz4.estimate - lzo.estimate, 8192.0);
    assert_eq!(z.recommended, Some(("lzo".to_string(), judge::Basis::Tie)));

    // Bounded: reading on (refresh 0: due at once) replaces, never grows, the sample.
    let before = a.zswap.as_ref().unwrap().pages_read;
    for _ in 0..200 {
        a.read_some();
    }
    let zs = a.zswap.as_ref().unwrap();
    assert!(zs.pages_read > before + 50, "{} then {}", before, zs.pages_read);
    assert_eq!(zs.sample_pages(), 50);

    // The exposition: zswap's rows under device="zswap", zram said absent, the faults by
    // reason.
    let text = crate::expose::encode(
        metrics::families(&a.judge(), Instant::now()),
        crate::expose::Format::Prometheus,
    )
    .unwrap();
    for want in [
        "zmem_advice_memory_saved_bytes{device=\"zswap\",config=\"lzo\"} ",
        "zmem_advice_memory_saved_low_bytes{device=\"zswap\",config=\"lz4\"} ",
        "zmem_advice_sample_pages{device=\"zswap\"} 50",
        "zmem_advice_zram_present 0",
        "zmem_advice_zswap_present 1",
        "zmem_advice_read_skips_total{device=\"zswap\",reason=\"process_exited\"} 2",
        "zmem_advice_read_skips_total{device=\"zswap\",reason=\"refused\"} 1",
        "zmem_advice_recommended_info{device=\"zswap\",",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

/// The draw is uniform over (process, page): a process three times another's `RssAnon` gives
/// three times the pages, and within a process the pages spread over its heap; a process whose
/// draws never find a resident page is given up and counted `sparse`, not read forever.
#[test]
fn the_draw_weighs_processes_and_gives_up_sparse_ones() {
    let ps = zmem_kernel::capture::system_page_size();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mem = vec![1u8; HEAP.1 as usize];
    process_with(root, 10, ps, &mem, 1200);
    process_with(root, 20, ps, &mem, 400);
    // pid 30: a 64 Ki-page reservation with nothing present.
    write(root, "proc/30/status", "RssAnon:\t 400 kB\n");
    write(root, "proc/30/maps", "10000000-20000000 rw-p 00000000 00:00 0 \n");
    write(root, "proc/30/pagemap", vec![0u8; 8 * (0x2000_0000 / ps)]);
    write(root, "proc/30/mem", b"");
    let mut procs = anon::Procs::new(&root.join("proc"), ps, 7);
    procs.refresh_if_due(Instant::now());
    assert_eq!(procs.listed(), 3);
    let mut buf = vec![0u8; ps];
    let (mut by_pid, mut low_half, mut got) = (BTreeMap::<u32, u32>::new(), 0u32, 0u32);
    for _ in 0..6000 {
        if let Some((pid, vaddr)) = procs.read_one(&mut buf) {
            *by_pid.entry(pid).or_default() += 1;
            got += 1;
            low_half += u32::from(vaddr < (HEAP.0 + HEAP.1) / 2);
        }
    }
    assert_eq!(procs.skips.sparse, 1, "given up once, until the next list: {:?}", procs.skips);
    assert_eq!(procs.listed(), 2);
    assert_eq!(by_pid.get(&30), None);
    // pid 30 is drawn, missed 16 times and dropped within the first rounds; then 3:1.
    // Binomial sd of the share over ~5,900 pages: 0.006; 0.70..0.80 is over 8 sd.
    let share = f64::from(by_pid[&10]) / f64::from(got);
    assert!((0.70..0.80).contains(&share), "{by_pid:?}");
    let half = f64::from(low_half) / f64::from(got);
    assert!((0.45..0.55).contains(&half), "{half}");
}
