use super::*;
use crate::candidate::{Candidate, Config};
use crate::cost::Budgets;
use crate::now::Rates;
use crate::policy::{Policy, PolicyRow};
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

/// A zswap candidate named `name` holding `pool` at `cpu`, running now or not.
fn zswap(name: &str, pool: u64, cpu: f64, runs_now: bool) -> Candidate {
    let mut c = Candidate::none(0);
    c.name = name.into();
    c.config =
        Config::Zswap { params: zmem_zswap::ZswapParams::default(), behind: "/swapfile".into() };
    c.runs_now = runs_now;
    c.pool_bytes = pool;
    c.cpu_secs_per_sec = cpu;
    c.load_p50_ns = 3000;
    c.load_p99_ns = 9000;
    c
}

const DISK: &str = "/swapfile";

/// The zram candidates of `rows` (nothing running: the default is the reference) and `zs`, on
/// one basis, judged.
fn decide_on(rows: &[PolicyRow], zs: &[Candidate], disk: Option<&str>) -> Decision {
    // The rows' compressors differ by up to 2 us a page, 54 us at the end-to-end p99 beyond
    // the noise (a fault's reclaim batch): these tests are about savings and ties, not the
    // latency budget.
    let budgets = Budgets { added_load_p99_us: 100.0, ..Budgets::default() };
    judge(rows, zs, disk, &budgets, None).1
}

fn judge(
    rows: &[PolicyRow],
    zs: &[Candidate],
    disk: Option<&str>,
    budgets: &Budgets,
    too_few: Option<(u64, u64)>,
) -> (Vec<Candidate>, Decision) {
    let mut c = crate::fit::zram_candidates(
        rows,
        None,
        None,
        &rates(),
        budgets,
        None,
        crate::speed::SWAP_OVERHEAD,
    )
    .unwrap();
    c.extend_from_slice(zs);
    let basis = crate::candidate::basis(&c, None, PAGES, PS);
    crate::candidate::on_basis(&mut c, &basis, None, "lzo-rle");
    let ctx = Context {
        basis: &basis,
        estimates: None,
        too_few_pages: too_few,
        disk_swap: disk,
        zswap_swap_bytes: PAGES * PS as u64,
        zram_swap_bytes: 0,
        operating: None,
        mem_total_bytes: None,
    };
    let d = decide(&c, &ctx);
    (c, d)
}

/// With no compressed swap running, every saving is against the pages uncompressed, and the
/// candidate saving clearly most is chosen (no tie: the margin exceeds the uncertainty).
#[test]
fn the_largest_saving_beyond_the_uncertainty_wins_against_the_pages_uncompressed() {
    let mib = 1 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0), row("zstd", 5 * mib, 3000.0)];
    let budgets = Budgets { added_load_p99_us: 100.0, ..Budgets::default() };
    let (c, d) = judge(&rows, &[], None, &budgets, None);
    assert_eq!(d.kind, Kind::Zram);
    assert_eq!(d.config, "zram zstd");
    assert_eq!(d.basis.now_config, "none");
    assert_eq!(d.basis.now_bytes, PAGES * PS as u64);
    assert_eq!(d.memory_saved_bytes, (16 * mib - 5 * mib) as i64);
    assert_eq!(d.reason, Reason::SavesMost);
    assert!(!d.tie && d.margin_bytes == 3 * mib as i64 && d.margin_bytes > d.uncertainty_bytes);
    assert_eq!(d.runner_up(&c).map(|r| r.name.as_str()), Some("zram lzo-rle"));
    assert_eq!(d.chosen(&c).map(|r| r.name.as_str()), Some("zram zstd"));
}

/// Savings within 1 % of now are equal: the clearly cheaper one in CPU is chosen, and the
/// decision says it is a tie and by which rule.
#[test]
fn savings_within_the_uncertainty_are_a_tie_broken_by_cpu() {
    let mib = 1u64 << 20;
    // 16 MiB now: 1 % is 164 KiB; the two differ by 100 KiB.
    let rows = [row("lzo-rle", 8 * mib + 100 * 1024, 1000.0), row("zstd", 8 * mib, 3000.0)];
    let d = decide_on(&rows, &[], None);
    assert_eq!(d.config, "zram lzo-rle", "{d:?}");
    assert_eq!(d.reason, Reason::Tie { by: TieBreak::LessCpu });
    assert!(d.tie);
    // Beyond the band, the saving decides.
    let rows = [row("lzo-rle", 8 * mib + 200 * 1024, 1000.0), row("zstd", 8 * mib, 3000.0)];
    let d = decide_on(&rows, &[], None);
    assert_eq!((d.config.as_str(), &d.reason), ("zram zstd", &Reason::SavesMost));
}

/// Equal memory, CPU inside the noise: not decided by which measured faster (the kernel's
/// order decides, on every run); CPU clearly lower: that one.
#[test]
fn equal_memory_is_not_decided_by_cpu_noise() {
    let mib = 1u64 << 20;
    for (a, b) in [(1000.0, 1040.0), (1040.0, 1000.0)] {
        let rows = [row("lzo", 8 * mib, a), row("lz4", 8 * mib, b)];
        let d = decide_on(&rows, &[], None);
        assert_eq!(d.config, "zram lzo", "{a} vs {b}");
        assert_eq!(d.reason, Reason::Tie { by: TieBreak::KernelOrder });
    }
    let rows = [row("lzo", 8 * mib, 20_000.0), row("lz4", 8 * mib, 1000.0)];
    let d = decide_on(&rows, &[], None);
    assert_eq!(
        (d.config.as_str(), &d.reason),
        ("zram lz4", &Reason::Tie { by: TieBreak::LessCpu })
    );
}

/// Equal in memory and CPU (within the noise): the simpler setup; then what runs now, which
/// makes the answer "keep" with nothing saved.
#[test]
fn equal_memory_and_cpu_go_to_the_simpler_setup_then_to_what_runs_now() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0), row("lzo", 8 * mib, 1020.0)];
    // zswap over a disk swap, equal too (the same CPU): zram's plain device is simpler.
    let (c, _) = judge(&rows, &[], None, &Budgets::default(), None);
    let cpu = c[0].cpu_secs_per_sec;
    let z = [zswap("zswap lzo max_pool_percent=20 shrinker=off", 8 * mib, cpu, false)];
    let d = decide_on(&rows, &z, Some(DISK));
    // The simpler setup leaves the two zram algorithms; the kernel's order takes lzo-rle.
    assert_eq!((d.kind, d.config.as_str()), (Kind::Zram, "zram lzo-rle"));
    assert_eq!(d.reason, Reason::Tie { by: TieBreak::KernelOrder }, "{d:?}");
    let d = decide_on(&rows[1..], &z, Some(DISK));
    assert_eq!(
        (d.config.as_str(), &d.reason),
        ("zram lzo", &Reason::Tie { by: TieBreak::Simpler })
    );
    // zswap runs now at the same saving: its pool is now's basis, every option saves 0, and
    // the CPU decides (zswap's 0).
    let z = [zswap("zswap lzo max_pool_percent=20 shrinker=off", 8 * mib, 0.0, true)];
    let d = decide_on(&rows, &z, Some(DISK));
    assert_eq!(d.basis.now_config, "zswap lzo max_pool_percent=20 shrinker=off");
    assert_eq!(d.kind, Kind::Keep, "{d:?}");
    assert_eq!((d.memory_saved_bytes, d.memory_saved_ci), (0, [0, 0]));
}

/// zswap saving clearly most: in front of the disk swap there is, or a swap file to make.
#[test]
fn zswap_names_the_device_behind_it() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0)];
    let z = [zswap("zswap lzo max_pool_percent=20 shrinker=on", 2 * mib, 1.0e-4, false)];
    let d = decide_on(&rows, &z, Some(DISK));
    assert_eq!(
        (d.kind, d.config.as_str()),
        (Kind::Zswap, "zswap lzo max_pool_percent=20 shrinker=on")
    );
    let b = d.swap_behind.unwrap();
    assert_eq!((b.existing.as_deref(), b.new_file), (Some(DISK), None));
    let d = decide_on(&rows, &z, None);
    let b = d.swap_behind.unwrap();
    assert_eq!((b.existing, b.new_file.as_deref()), (None, Some(SWAP_FILE)));
    assert_eq!(b.size_bytes, PAGES * PS as u64);
}

/// At an operating point that moves memory out, the swap area behind zswap is sized from it
/// (1.25 x the most moved out, in 64 MiB steps), never below the zram swap it replaces.
#[test]
fn zswaps_swap_area_is_sized_from_the_operating_point() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0)];
    let mut z = zswap("zswap lzo max_pool_percent=20 shrinker=on", 2 * mib, 1.0e-4, false);
    z.at_cold_age = Some(crate::operating::AtPoint {
        moved_out_bytes: 200 * mib,
        pool_bytes: 100 * mib,
        memory_saved_bytes: (100 * mib) as i64,
        memory_saved_ci: [0, 0],
    });
    let mut c = crate::fit::zram_candidates(
        &rows,
        None,
        None,
        &rates(),
        &Budgets::default(),
        None,
        crate::speed::SWAP_OVERHEAD,
    )
    .unwrap();
    c.push(z);
    let basis = crate::candidate::basis(&c, None, PAGES, PS);
    crate::candidate::on_basis(&mut c, &basis, None, "lzo-rle");
    let mut op = crate::operating::point(
        &basis,
        PS as u64,
        None,
        &Default::default(),
        0.2,
        &Default::default(),
    );
    op.named = crate::operating::Named::Today;
    for (zram_swap, want) in [(0, 256 * mib), (512 * mib, 512 * mib)] {
        let ctx = Context {
            basis: &basis,
            estimates: None,
            too_few_pages: None,
            disk_swap: None,
            zswap_swap_bytes: PAGES * PS as u64,
            zram_swap_bytes: zram_swap,
            operating: Some(&op),
            mem_total_bytes: None,
        };
        let d = decide(&c, &ctx);
        assert_eq!(d.kind, Kind::Zswap);
        assert_eq!(d.swap_behind.unwrap().size_bytes, want, "zram swap {zram_swap}");
    }
}

/// Over budget, unavailable or unverified candidates are never chosen, however much they
/// save; with nothing that compresses within the budgets, nothing is set up.
#[test]
fn losers_are_never_chosen_and_nothing_within_the_budgets_keeps_what_runs() {
    let mib = 1u64 << 20;
    let mut broken = row("lz4", mib, 1000.0);
    broken.verified = false;
    let rows = [row("lzo-rle", 8 * mib, 1000.0), broken];
    let mut z = zswap("zswap lzo max_pool_percent=30 shrinker=on", mib, 1.0e-4, false);
    z.within_budgets = false;
    let mut u = zswap("zswap zstd max_pool_percent=20 shrinker=off", mib / 2, 1.0e-4, false);
    u.available = false;
    let d = decide_on(&rows, &[z, u], Some(DISK));
    assert_eq!(d.config, "zram lzo-rle");
    let dear = [row("lzo-rle", 8 * mib, 1.0e9)];
    let d = decide_on(&dear, &[], None);
    assert_eq!((d.kind, d.config.as_str(), &d.reason), (Kind::Keep, "none", &Reason::NothingFits));
    // Pages that compress to more than they are: "none" saves most, and says so.
    let worse = [row("lzo-rle", 17 * mib, 1000.0)];
    let d = decide_on(&worse, &[], None);
    assert_eq!((d.kind, d.config.as_str(), &d.reason), (Kind::Keep, "none", &Reason::SavesMost));
}

/// Too few pages: no answer in any form.
#[test]
fn too_few_pages_give_no_answer() {
    let mib = 1u64 << 20;
    let rows = [row("lzo-rle", 8 * mib, 1000.0)];
    let min = crate::sample::MIN_PAGES;
    let (_, d) = judge(&rows, &[], None, &Budgets::default(), Some((3, min)));
    assert_eq!(d.kind, Kind::None);
    assert!(d.chosen.is_none());
    assert_eq!(d.reason, Reason::TooFewPages { measured_pages: 3, min_pages: min });
}
