//! zswap's advice, by hand and end to end on small page sets.

use super::*;
use crate::candidate::{Candidate, Config};

fn text_page(seed: u8) -> Vec<u8> {
    let mut p = Vec::with_capacity(4096);
    let mut i = 0u32;
    while p.len() < 4096 {
        p.extend_from_slice(
            format!("page {seed} line {i}: some text zswap compresses. ").as_bytes(),
        );
        i += 1;
    }
    p.truncate(4096);
    p
}

/// Bytes lzo cannot shrink much: a page of a 64-bit PRNG's output in its low bytes only.
fn pseudo_random_page(seed: u64) -> Vec<u8> {
    let mut p = vec![0u8; 4096];
    zmem_pages::prng::SplitMix64::new(seed).fill(&mut p[..2048]);
    p
}

pub(crate) fn fake_live(present: bool, offered: &[&str], enabled: bool) -> ZswapLive {
    let mut debugfs = BTreeMap::new();
    debugfs.insert("stored_pages".to_string(), 1000);
    debugfs.insert("pool_total_size".to_string(), 1000 * 1024);
    debugfs.insert("written_back_pages".to_string(), 3);
    debugfs.insert("pool_limit_hit".to_string(), 0);
    ZswapLive {
        present,
        offered: offered.iter().map(|s| s.to_string()).collect(),
        state: ZswapState {
            params: BTreeMap::new(),
            enabled,
            module: ZswapParams {
                compressor: if present { "lzo".into() } else { String::new() },
                ..ZswapParams::default()
            },
            debugfs: Some(debugfs),
            debugfs_note: None,
            meminfo_zswap_bytes: Some(1000 * 1024),
            meminfo_zswapped_bytes: Some(1000 * 4096),
            vmstat: BTreeMap::new(),
            cgroups: Vec::new(),
            page_size: 4096,
            notes: Vec::new(),
        },
        swaps: vec![SwapAreaNow {
            filename: "/swapfile".into(),
            kind: "file".into(),
            size_bytes: 1 << 30,
            used_bytes: 4000 * 1024,
            priority: -2,
        }],
        swappiness: Some(60),
        page_cluster: Some(3),
        mem_total_bytes: None,
        swap_file_room: None,
        memory_cgroup_version: None,
    }
}

#[test]
fn the_prediction_leaves_zero_pages_out_and_sums_the_stored_lengths() {
    let page = text_page(1);
    let mut pages = Vec::new();
    for i in 0..40 {
        if i % 4 == 0 {
            pages.extend_from_slice(&[0u8; 4096]);
        } else {
            pages.extend_from_slice(&page);
        }
    }
    let p = predict(&pages, 4096, "lzo").unwrap();
    assert_eq!((p.pages, p.offered_pages, p.stored_pages, p.rejected_pages), (40, 30, 30, 0));
    // Every stored page is the same page: one length, 30 times.
    let one = predict(&page, 4096, "lzo").unwrap();
    assert_eq!(one.stored_pages, 1);
    assert!(one.compressed_bytes > 0 && one.compressed_bytes < 4096);
    assert_eq!(p.compressed_bytes, 30 * one.compressed_bytes);
    assert!(p.pool_total_size >= p.compressed_bytes);
}

#[test]
fn now_scales_the_prediction_to_the_live_pages() {
    let page = text_page(2);
    let pages: Vec<u8> = page.iter().copied().cycle().take(100 * 4096).collect();
    let live = fake_live(true, &["lzo", "lzo-rle"], true);
    let n = now(&live, None, 0.0, &facts(&pages), None);
    let p = n.prediction.clone().unwrap();
    let pool = n.fields.iter().find(|f| f.field == "pool_total_size").unwrap();
    assert_eq!(pool.live, Some(1000 * 1024));
    // 100 copies of one object stand for the live 1000: 1000 objects of its class in
    // zswap's pool, not the sample's pool times ten (its partly filled zspage does not scale
    // with the pages).
    let classes = zswap_classes(4096).unwrap();
    let mut counts = vec![0u64; classes.classes().len()];
    counts[classes.slot_for_request((p.compressed_bytes / 100) as usize)] = 1000;
    assert_eq!(pool.predicted, Some(zswap_pool_bytes(&classes, &counts, 4096)));
    assert!(pool.predicted.unwrap() < 10 * p.pool_total_size);
    assert_eq!(n.stored_pages, Some(1000));
    assert_eq!(n.live_ratio, Some(4.0));
    assert!(n.rates.is_none() && n.observed_secs == 0.0);
}

/// Each process counts as much as it has in swap: a process with nothing in swap weighs
/// nothing, one with 300 swapped pages and 3 sampled pages gives each 100; no swap at all is no
/// weighting; pid 0 (a zram slot) never weighs.
#[test]
fn swap_weights_follow_each_process_s_swapped_pages() {
    let swapped = |pid| match pid {
        7 => 300,
        8 => 0,
        9 => 50,
        _ => 1000,
    };
    let w = swap_weights(&[7, 8, 7, 9, 7, 8, 0], swapped).unwrap();
    assert_eq!(w, [100.0, 0.0, 100.0, 50.0, 100.0, 0.0, 0.0]);
    assert_eq!(w.iter().sum::<f64>(), 350.0, "the sampled processes' swapped pages");
    assert!(swap_weights(&[8, 8, 0], swapped).is_none());
    assert!(swap_weights(&[], swapped).is_none());
}

/// Weighted, the Now's prediction is the swapped process's pages': two kinds of page, one from
/// a process with everything in swap and one from a process with nothing there, predict the
/// first kind's pool alone.
#[test]
fn the_now_predicts_the_pages_of_the_processes_that_swapped() {
    let (a, b) = (text_page(3), pseudo_random_page(4));
    let mut pages = Vec::new();
    let mut pids = Vec::new();
    for i in 0..200 {
        pages.extend_from_slice(if i % 2 == 0 { &a } else { &b });
        pids.push(if i % 2 == 0 { 11 } else { 12 });
    }
    let w = swap_weights(&pids, |pid| if pid == 11 { 1000 } else { 0 }).unwrap();
    let live = fake_live(true, &["lzo", "lzo-rle"], true);
    let weighted = now(&live, None, 0.0, &facts(&pages), Some(&w));
    let only_a: Vec<u8> = a.iter().copied().cycle().take(100 * 4096).collect();
    let alone = now(&live, None, 0.0, &facts(&only_a), None);
    let field = |n: &ZswapNow, f: &str| n.fields.iter().find(|x| x.field == f).unwrap().predicted;
    assert_eq!(field(&weighted, "pool_total_size"), field(&alone, "pool_total_size"));
    assert_eq!(field(&weighted, "compressed_bytes"), field(&alone, "compressed_bytes"));
    let unweighted = now(&live, None, 0.0, &facts(&pages), None);
    assert!(
        field(&unweighted, "pool_total_size") > field(&alone, "pool_total_size"),
        "the resident mix is not what is in swap"
    );
    assert!(weighted.prediction.unwrap().weighting.is_some());
}

#[test]
fn the_grid_tries_only_what_the_kernel_offers() {
    let g = grid(true, &["lzo".into(), "lzo-rle".into(), "deflate".into()], 90);
    let avail: Vec<_> = g.iter().filter(|c| c.available).collect();
    assert_eq!(avail.len(), 3 * MAX_POOL_PERCENTS.len() * 2);
    assert!(
        avail.iter().all(|c| ["lzo", "lzo-rle", "deflate"].contains(&c.params.compressor.as_str()))
    );
    let un: Vec<_> = g.iter().filter(|c| !c.available).collect();
    assert_eq!(
        un.iter().map(|c| c.params.compressor.as_str()).collect::<Vec<_>>(),
        ["lz4", "lz4hc", "zstd"]
    );
    assert!(un[0].unavailable_reason.as_deref().unwrap().contains("offers: lzo, lzo-rle, deflate"));
    let none = grid(false, &[], 0);
    assert!(none.iter().all(|c| !c.available && c.params.accept_threshold_percent == 90));
}

#[test]
fn the_pool_limit_is_scaled_to_the_pages_measured() {
    // 2048 pages measured standing for themselves on a 24 GiB machine: 20 % of its RAM
    // holds them all many times over, so the replay's pool holds every page (400 % of its
    // RAM, a quarter of the pages).
    let big = pool_scale(Some(24 << 30), 4096, 2048, 2048);
    assert_eq!(replay_percent(20, big), 400);
    // 2048 pages standing for 4 GiB of pages (1 Mi pages) on an 8 GiB machine: 20 % of
    // the RAM is 40 % of the pages' bytes; the replay's RAM is a quarter of the pages, so
    // that is 160 % of it; 5 % of the RAM is 40 % of the replay's.
    let s = pool_scale(Some(8 << 30), 4096, 2048, 1 << 20);
    assert!((s - 8.0).abs() < 1e-9, "{s}");
    assert_eq!((replay_percent(20, s), replay_percent(5, s)), (160, 40));
    // Unknown RAM: the replay's RAM is the machine's.
    assert_eq!(replay_percent(20, pool_scale(None, 4096, 2048, 2048)), 20);
}

#[test]
fn observed_rates_gain_zswaps_own_traffic() {
    let r = Rates {
        swap_ins_per_sec: 1.0,
        swap_outs_per_sec: 2.0,
        observed_secs: 10.0,
        source: "observed".into(),
        note: "x".into(),
    };
    let z = ZswapRates {
        zswpin_per_sec: Some(10.0),
        zswpout_per_sec: Some(20.0),
        zswpwb_per_sec: None,
        pswpin_per_sec: None,
        pswpout_per_sec: None,
    };
    let w = with_zswap_traffic(r.clone(), &z);
    assert_eq!((w.swap_ins_per_sec, w.swap_outs_per_sec), (11.0, 22.0));
    let replay = Rates { source: "replay".into(), ..r };
    assert_eq!(with_zswap_traffic(replay.clone(), &z), replay);
}

fn row() -> SwapRow {
    SwapRow {
        swap: "zram".into(),
        ram_pages: 10,
        pages: 40,
        accesses: 100,
        swap_outs: 30,
        swap_ins: 20,
        max_pool_bytes: 1,
        disk_reads: 0,
        disk_writes: 0,
        store_p99_ns: 0,
        load_p50_ns: 1000,
        load_p99_ns: 2000,
        hit_swap_ins: 20,
        hit_p50_ns: 1000,
        hit_p99_ns: 2000,
        device_swap_ins: 0,
        device_p50_ns: 0,
        device_p99_ns: 0,
        device_seconds: 0.0,
        cpu_seconds: 0.0,
        pool_limit_hit: 0,
        written_back: 0,
        trace_secs: 1.0,
        verified: true,
    }
}

/// 100 swap-ins and 100 swap-outs a second, from a replay.
fn hundred_a_second() -> Rates {
    Rates {
        swap_ins_per_sec: 100.0,
        swap_outs_per_sec: 100.0,
        observed_secs: 0.0,
        source: "replay".into(),
        note: String::new(),
    }
}

#[test]
fn page_cluster_follows_the_measured_read_ahead() {
    let ra = |pages, hits| Some(ReadAhead { pages, hits });
    let pc = page_cluster;
    // From memory: 0 unless read-ahead pages are mostly used.
    assert_eq!(pc(true, None), 0);
    assert_eq!(pc(true, ra(333_274, 239_957)), 0, "72 % used: not enough");
    assert_eq!(pc(true, ra(10_000, 8_000)), 1);
    assert_eq!(pc(true, ra(500, 500)), 0, "too few to judge");
    // From a device: the kernel's 3 unless read-ahead is mostly wasted.
    assert_eq!(pc(false, None), 3);
    assert_eq!(pc(false, ra(10_000, 8_000)), 3);
    assert_eq!(pc(false, ra(10_000, 1_000)), 1);
    assert_eq!(pc(false, ra(999, 0)), 3);
}

/// The live test's pages by hand: 16,574 objects of 343 bytes (class 352: 93 to a zspage of 8
/// pages) in 6.18's one zsmalloc pool take ceil(16574 / 93) = 179 zspages (1,432 pages); 40
/// objects one zspage; objects of two classes one partly filled zspage each.
#[test]
fn zswaps_pool_is_one_packing_per_class() {
    let classes = zswap_classes(4096).unwrap();
    let k = classes.slot_for_request(343);
    let c = &classes.classes()[k];
    assert_eq!((c.size, c.objs_per_zspage, c.pages_per_zspage), (352, 93, 8));
    let mut counts = vec![0u64; classes.classes().len()];
    counts[k] = 16_574;
    assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), 179 * 8 * 4096);
    counts[k] = 40;
    assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), 8 * 4096);
    let j = classes.slot_for_request(1000);
    let cj = &classes.classes()[j];
    counts[j] = 1;
    assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), (8 + cj.pages_per_zspage as u64) * 4096);
    counts[k] = 0;
    counts[j] = 0;
    assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), 0);
}

/// The lab on 256 built-in pages with two zram policies and `live` as this machine's zswap.
fn lab_with(live: ZswapLive) -> crate::LabReport {
    let set = zmem_pages::builtin::default_set_with(4096).unwrap();
    let pages = &set.bytes()[..256 * 4096];
    let source = crate::Source {
        kind: "builtin".into(),
        detail: String::new(),
        pages: 256,
        page_size: 4096,
        fallback_reason: None,
    };
    let opts = crate::LabOptions {
        min_time: std::time::Duration::ZERO,
        policies: crate::candidates("lzo-rle")[..2].to_vec(),
        threads: 2,
        zswap: Some(ZswapInput { live, after: None, secs: 0.0, weights: None }),
        ..crate::LabOptions::default()
    };
    crate::run(pages, source, &opts, &NoProgress).unwrap()
}

#[test]
fn advise_replays_every_available_configuration() {
    let r = lab_with(fake_live(true, &["lzo", "lzo-rle"], true));
    let a = r.zswap.as_ref().expect("zswap advice");
    let zswap: Vec<(&ZswapParams, &Candidate)> = r
        .candidates
        .iter()
        .filter_map(|c| match &c.config {
            Config::Zswap { params, .. } => Some((params, c)),
            _ => None,
        })
        .collect();
    let avail: Vec<_> = zswap.iter().filter(|c| c.1.available).collect();
    // The grid at the live threshold, and the sweep's variants where a pool hit its limit.
    let at_live = avail.iter().filter(|c| c.0.accept_threshold_percent == 90).count();
    assert_eq!(at_live, 2 * 3 * 2);
    assert!(avail.iter().all(|c| [70, 90, 100].contains(&c.0.accept_threshold_percent)));
    assert!(avail.iter().all(|c| c.1.verified && c.1.pool_bytes > 0 && c.1.device.is_some()));
    // One of them is what the live zswap runs (lzo, 20 %, shrinker off): the basis.
    let cur: Vec<_> = zswap.iter().filter(|c| c.1.runs_now).collect();
    assert_eq!(cur.len(), 1);
    assert_eq!(cur[0].1.name, "zswap lzo max_pool_percent=20 shrinker=off");
    assert_eq!(r.decision.basis.now_config, cur[0].1.name);
    assert!(zswap.iter().any(|c| c.0.compressor == "zstd" && !c.1.available));
    // 256 pages are fewer than the lab's minimum (sample::MIN_PAGES): no answer (issue 42).
    assert_eq!(r.decision.kind, crate::decision::Kind::None);
    assert!(a.now.as_ref().unwrap().prediction.is_some());
    assert!(a.stack.swap_device_bytes >= 256 * 4096);
}

/// zswap's CPU on zram's cost model: a compression per swap-out that reached the pool, a
/// decompression per hit and per page written back, at the compressor's measured CPU per page;
/// the replay's own thread CPU (the simulator's work) counts only without a measurement.
#[test]
fn zswap_cpu_is_the_compressors_cost_per_page_of_its_traffic() {
    let rates = hundred_a_second();
    let k = crate::speed::SWAP_OVERHEAD;
    let kernel =
        k.cpu_secs_per_sec(cost::Traffic { swap_ins_per_sec: 100.0, swap_outs_per_sec: 100.0 });
    let codec = CodecCost { compress_ns: 10_000.0, decompress_ns: 2_000.0 };
    // 30 swap-outs: 6 went to the device, 2 of them written back (4 refused, 26 compressed);
    // 20 swap-ins: 15 hits.
    let mut r = row();
    r.swap = "zswap".into();
    r.disk_writes = 6;
    r.written_back = 2;
    r.hit_swap_ins = 15;
    r.device_swap_ins = 5;
    r.cpu_seconds = 123.0;
    let want = (100.0 * (26.0 / 30.0 * 10_000.0 + 2.0 / 30.0 * 2_000.0) + 100.0 * 0.75 * 2_000.0)
        / 1e9
        + kernel;
    let got = candidates::cpu_secs_per_sec(&r, &rates, Some(codec), k);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    // The replay's thread CPU does not enter it.
    r.cpu_seconds = 0.0;
    assert_eq!(candidates::cpu_secs_per_sec(&r, &rates, Some(codec), k), got);
    // Everything from the pool, nothing refused: zram's model (`cost::project`) exactly.
    let z = row();
    let zram = (100.0 * 10_000.0 + 100.0 * 2_000.0) / 1e9 + kernel;
    assert!((candidates::cpu_secs_per_sec(&z, &rates, Some(codec), k) - zram).abs() < 1e-12);
    // Without a measurement: the replay's CPU per operation.
    r.cpu_seconds = 5.0;
    let fallback = 5.0 / 50.0 * 200.0 + kernel;
    assert!((candidates::cpu_secs_per_sec(&r, &rates, None, k) - fallback).abs() < 1e-12);
}

/// The page facts of `pages` with every compressor the fake live zswap offers.
fn facts(pages: &[u8]) -> PageFacts {
    PageFacts::of_pages(pages, 4096, &["lzo", "lzo-rle", "lz4", "zstd"]).unwrap()
}

/// With no disk swap, zswap needs the swap file the apply makes: on a file system without
/// room for it every zswap candidate is unavailable, saying where and how much; with room, the
/// grid stands as the kernel offers it. zram's candidates are not touched.
#[test]
fn a_file_system_without_room_for_the_swap_file_rules_zswap_out() {
    let run_with = |free_bytes: u64| {
        let mut live = fake_live(true, &["lzo", "lzo-rle"], false);
        live.swaps.clear();
        live.swap_file_room = Some(SwapFileRoom { dir: "/var/lib".into(), free_bytes });
        lab_with(live).candidates
    };
    let is_zswap = |c: &&Candidate| matches!(c.config, Config::Zswap { .. });
    let full = run_with(63 << 20);
    let zswap: Vec<&Candidate> = full.iter().filter(is_zswap).collect();
    assert!(!zswap.is_empty());
    for c in &zswap {
        let why = c.unavailable_reason.as_deref().unwrap_or_default();
        assert!(!c.available, "{}", c.name);
        assert!(
            why.contains("no room") && why.contains("/var/lib has 63 MiB free")
                || why.contains("does not offer"),
            "{}: {why}",
            c.name
        );
    }
    assert!(full.iter().filter(|c| !is_zswap(c)).any(|c| c.available));
    let roomy = run_with(64 << 20);
    assert!(roomy.iter().filter(is_zswap).any(|c| c.available));
    let none = roomy.iter().filter(is_zswap).filter_map(|c| c.unavailable_reason.as_deref());
    assert!(none.clone().all(|w| !w.contains("no room")), "{:?}", none.collect::<Vec<_>>());
}
