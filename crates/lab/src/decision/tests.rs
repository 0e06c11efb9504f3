use super::*;
use crate::cost::Budgets;
use crate::now::Rates;
use crate::policy::Policy;
use zmem_sim::latency::LatencyHist;

const PAGES: u64 = 4096;
const PS: usize = 4096;

/// A plain zram policy row saving `saved` bytes of the `PAGES` pages at `ns` CPU per page.
fn row(algo: &str, pool: u64, ns: f64) -> PolicyRow {
    let orig = PAGES * PS as u64;
    PolicyRow {
        policy: Policy::single(algo),
        pages: PAGES,
        orig_bytes: orig,
        compressed_bytes: 0,
        pool_bytes: pool,
        effective_ratio: orig as f64 / pool as f64,
        memory_saved_bytes: orig as i64 - pool as i64,
        pool_bytes_before_recompress: 0,
        write_seconds: 0.0,
        recompress_seconds: 0.0,
        cpu_seconds_per_gb: 0.0,
        load_latency: LatencyHist { p50_ns: 2000, p99_ns: 4000, ..Default::default() },
        verified: true,
        compress_cpu_ns_per_page: ns,
        decompress_cpu_ns_per_page: ns / 4.0,
        recompress_cpu_ns_per_page: 0.0,
        dict_bytes: 0,
        dict: None,
    }
}

fn rates() -> Rates {
    Rates {
        swap_ins_per_sec: 10.0,
        swap_outs_per_sec: 10.0,
        observed_secs: 0.0,
        source: "replay".into(),
        note: String::new(),
    }
}

fn zswap(name: &str, pool: u64, cpu: f64, current: bool) -> ZswapCandidate {
    ZswapCandidate {
        kind: "zswap".into(),
        name: name.into(),
        compressor: "lzo".into(),
        max_pool_percent: 20,
        accept_threshold_percent: 90,
        shrinker_enabled: false,
        available: true,
        unavailable_reason: None,
        is_current: current,
        verified: true,
        pool_bytes: pool,
        memory_saved_bytes_vs_now: 0,
        cpu_secs_per_sec: cpu,
        added_cpu_secs_per_sec: 0.0,
        load_p50_ns: 3000,
        load_p99_ns: 9000,
        added_load_p99_ns: 0,
        hit_fraction: 1.0,
        replay_max_pool_percent: 20,
        device_write_bytes_per_sec: 0.0,
        swap_in_us_per_sec: 0.0,
        within_budgets: true,
        over_budget: Vec::new(),
    }
}

fn disk() -> SwapAreaNow {
    SwapAreaNow {
        filename: "/swapfile".into(),
        kind: "file".into(),
        size_bytes: 1 << 30,
        used_bytes: 0,
        priority: -2,
    }
}

/// Runs the recommendation and the decision over `rows` and `zs`.
fn decide_on(rows: &[PolicyRow], zs: &[ZswapCandidate], swaps: &[SwapAreaNow]) -> Decision {
    // The rows' compressors differ by up to 2 us a page, 54 us at the end-to-end p99 beyond
    // the noise (a fault's reclaim batch): these tests are about savings and ties, not the
    // latency budget.
    let budgets = Budgets { added_load_p99_us: 100.0, ..Budgets::default() };
    let (cands, rec) = crate::recommend(rows, None, None, &rates(), &budgets).unwrap();
    decide(&Inputs {
        candidates: &cands,
        policies: rows,
        recommendation: &rec,
        zswap: zs,
        swaps,
        zswap_swap_bytes: PAGES * PS as u64,
        estimates: None,
        live_zram: false,
        page_size: PS,
    })
}

/// With no compressed swap running, every saving is against the pages uncompressed, and the
/// candidate saving clearly most is chosen (no tie: the margin exceeds the uncertainty).
#[test]
fn the_largest_saving_beyond_the_uncertainty_wins_against_the_pages_uncompressed() {
    let mib = 1 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0), row("zstd", 5 * mib, 3000.0)];
    let d = decide_on(&rows, &[], &[]);
    assert_eq!(d.kind, Kind::Zram);
    assert_eq!(d.config, "zram zstd");
    assert_eq!(d.now_config, "none");
    assert_eq!(d.now_bytes, PAGES * PS as u64);
    assert_eq!(d.memory_saved_bytes, (16 * mib - 5 * mib) as i64);
    assert_eq!(d.reason, Reason::SavesMost);
    assert!(!d.tie && d.margin_bytes == 3 * mib as i64 && d.margin_bytes > d.uncertainty_bytes);
    assert_eq!(d.runner_up.as_ref().map(|r| r.config.as_str()), Some("zram lzo-rle"));
}

/// Savings within 1 % of now are equal: the clearly cheaper one in CPU is chosen, and the
/// decision says it is a tie and by which rule.
#[test]
fn savings_within_the_uncertainty_are_a_tie_broken_by_cpu() {
    let mib = 1u64 << 20;
    // 16 MiB now: 1 % is 164 KiB; the two differ by 100 KiB.
    let rows = [row("lzo-rle", 8 * mib + 100 * 1024, 1000.0), row("zstd", 8 * mib, 3000.0)];
    let d = decide_on(&rows, &[], &[]);
    assert_eq!(d.config, "zram lzo-rle", "{d:?}");
    assert_eq!(d.reason, Reason::Tie { by: TieBreak::LessCpu });
    assert!(d.tie);
    // Beyond the band, the saving decides.
    let rows = [row("lzo-rle", 8 * mib + 200 * 1024, 1000.0), row("zstd", 8 * mib, 3000.0)];
    let d = decide_on(&rows, &[], &[]);
    assert_eq!((d.config.as_str(), &d.reason), ("zram zstd", &Reason::SavesMost));
}

/// Equal in memory and CPU (within the noise): the simpler setup; then what runs now, which
/// makes the answer "keep" with nothing saved.
#[test]
fn equal_memory_and_cpu_go_to_the_simpler_setup_then_to_what_runs_now() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0), row("lzo", 8 * mib, 1020.0)];
    // zswap over a disk swap, equal too (the same CPU): zram's plain device is simpler.
    let (cands, _) = crate::recommend(&rows, None, None, &rates(), &Budgets::default()).unwrap();
    let cpu = cands[0].cpu_secs_per_sec;
    let z = [zswap("zswap lzo max_pool_percent=20 shrinker=off", 8 * mib, cpu, false)];
    let d = decide_on(&rows, &z, &[disk()]);
    // The simpler setup leaves the two zram algorithms; the kernel's order takes lzo-rle.
    assert_eq!((d.kind, d.config.as_str()), (Kind::Zram, "zram lzo-rle"));
    assert_eq!(d.reason, Reason::Tie { by: TieBreak::KernelOrder }, "{d:?}");
    let d = decide_on(&rows[1..], &z, &[disk()]);
    assert_eq!(
        (d.config.as_str(), &d.reason),
        ("zram lzo", &Reason::Tie { by: TieBreak::Simpler })
    );
    // zswap runs now at the same saving and CPU: against zram equally simple...
    let z = [zswap("zswap lzo max_pool_percent=20 shrinker=off", 8 * mib, 0.0, true)];
    let (cands, rec) = crate::recommend(&rows, None, None, &rates(), &Budgets::default()).unwrap();
    let d = decide(&Inputs {
        candidates: &cands,
        policies: &rows,
        recommendation: &rec,
        zswap: &z,
        swaps: &[disk()],
        zswap_swap_bytes: 0,
        estimates: None,
        live_zram: false,
        page_size: PS,
    });
    // ...the zswap pool is now's basis: every option saves 0 and the CPU decides (zswap's 0).
    assert_eq!(d.now_config, "zswap lzo max_pool_percent=20 shrinker=off");
    assert_eq!(d.kind, Kind::Keep, "{d:?}");
    assert_eq!((d.memory_saved_bytes, d.memory_saved_ci), (0, [0, 0]));
}

/// zswap saving clearly most: in front of the disk swap there is, or a swap file to make.
#[test]
fn zswap_names_the_device_behind_it() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0)];
    let z = [zswap("zswap lzo max_pool_percent=20 shrinker=on", 2 * mib, 1.0e-4, false)];
    let d = decide_on(&rows, &z, &[disk()]);
    assert_eq!(
        (d.kind, d.config.as_str()),
        (Kind::Zswap, "zswap lzo max_pool_percent=20 shrinker=on")
    );
    let b = d.swap_behind.unwrap();
    assert_eq!((b.existing.as_deref(), b.new_file), (Some("/swapfile"), None));
    let d = decide_on(&rows, &z, &[]);
    let b = d.swap_behind.unwrap();
    assert_eq!((b.existing, b.new_file.as_deref()), (None, Some(SWAP_FILE)));
    assert_eq!(b.size_bytes, PAGES * PS as u64);
}

/// Over budget or unavailable candidates are never chosen; with nothing within the budgets
/// and nothing running, the cost model's zram fallback is the answer, said so.
#[test]
fn nothing_within_the_budgets_falls_back_and_losers_are_never_chosen() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0)];
    let mut z = zswap("zswap lzo max_pool_percent=30 shrinker=on", mib, 1.0e-4, false);
    z.within_budgets = false;
    let mut u = zswap("zswap zstd max_pool_percent=20 shrinker=off", mib / 2, 1.0e-4, false);
    u.available = false;
    let d = decide_on(&rows, &[z, u], &[disk()]);
    assert_eq!(d.config, "zram lzo-rle");
    let cheap = [row("lzo-rle", 8 * mib, 1.0e9)];
    let d = decide_on(&cheap, &[], &[]);
    assert_eq!(d.reason, Reason::NothingFitsFallback);
    assert_eq!(d.kind, Kind::Zram);
}

/// Too few pages: no answer in any form.
#[test]
fn too_few_pages_give_no_answer() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0)];
    let (cands, mut rec) =
        crate::recommend(&rows, None, None, &rates(), &Budgets::default()).unwrap();
    rec.uncertain = true;
    rec.uncertain_reason = crate::uncertainty(3);
    let d = decide(&Inputs {
        candidates: &cands,
        policies: &rows,
        recommendation: &rec,
        zswap: &[],
        swaps: &[],
        zswap_swap_bytes: 0,
        estimates: None,
        live_zram: false,
        page_size: PS,
    });
    assert_eq!(d.kind, Kind::None);
    assert!(d.chosen.is_none());
    assert_eq!(
        d.reason,
        Reason::TooFewPages { measured_pages: 3, min_pages: crate::sample::MIN_PAGES }
    );
}

/// Nothing within the budgets and nothing running: the fallback picks the cheapest in CPU only
/// where it is clearly cheaper, so CPU noise between two runs does not flip the answer.
#[test]
fn the_fallback_ignores_cpu_noise() {
    let mib = 1u64 << 20;
    // Both far over the 1 % budget; lzo-rle 2 % dearer (noise), zstd clearly dearer.
    let rows =
        [row("lzo-rle", 8 * mib, 1.02e9), row("lzo", 8 * mib, 1.0e9), row("zstd", 6 * mib, 3.0e9)];
    let d = decide_on(&rows, &[], &[]);
    assert_eq!(d.reason, Reason::NothingFitsFallback);
    assert_eq!(d.config, "zram lzo-rle", "{d:?}");
    // 30 % cheaper is no noise.
    let rows = [row("lzo-rle", 8 * mib, 1.3e9), row("lzo", 8 * mib, 1.0e9)];
    assert_eq!(decide_on(&rows, &[], &[]).config, "zram lzo");
}
