//! The live system as the lab found it: the zram swap device the pages were captured from (its
//! configuration, its mm_stat beside zmem's prediction from the captured pages, the pool's
//! fragmentation) and the swap rates the candidates' CPU cost is projected with.

use serde::{Deserialize, Serialize};
use zmem_kernel::stat as live;
use zmem_zram::MmStat;

use crate::measure::SwapRow;
use crate::{LabError, Progress};
use zmem_sim::device::{OnRefusal, ZramRunConfig, build_device, write_pages};

/// A live zram swap device's configuration, as read from sysfs and /proc/swaps. The default is
/// a device nothing is known of (tests fill in what they need).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LiveConfig {
    /// `/dev/zramN`.
    pub device: String,
    /// The selected primary algorithm (the bracketed one of `comp_algorithm`).
    pub comp_algorithm: String,
    /// `recomp_algorithm`, where the kernel has it.
    pub recomp_algorithm: Option<String>,
    /// `algorithm_params`, where readable.
    pub algorithm_params: Option<String>,
    pub disksize_bytes: u64,
    /// `mem_limit` (0: none).
    pub mem_limit_bytes: u64,
    /// Priority in /proc/swaps.
    pub swap_priority: Option<i32>,
    /// The algorithms the kernel offers (`comp_algorithm`'s list); empty when unknown.
    pub offered: Vec<String>,
    /// Whether the kernel has recompression (`recompress` exists: CONFIG_ZRAM_MULTI_COMP).
    pub recompress: bool,
}

/// One mm_stat field, live against predicted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FieldComparison {
    pub field: String,
    pub live: u64,
    pub predicted: u64,
}

/// The "Now" section: what the kernel holds, and what zmem predicts for the same pages.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Now {
    pub config: LiveConfig,
    /// The device's mm_stat line at capture time (kernel format).
    pub live_mm_stat: String,
    /// zmem's mm_stat for the captured pages written in slot order to a device configured as
    /// the live one (kernel format).
    pub predicted_mm_stat: String,
    pub fields: Vec<FieldComparison>,
    /// Whether orig, compr and huge agree exactly (the system was quiet during the read).
    pub exact: bool,
    /// What moved while the device was read, when not exact.
    pub drift: Option<String>,
    /// Live `mem_used_total` less zmem's freshly packed pool: the live pool's fragmentation.
    pub fragmentation_bytes: i64,
    /// What `echo 1 > compact` would give back: zmem's pool before and after compaction of a
    /// device that went through the same pages, or the fragmentation when no better estimate.
    pub compact_gain_bytes: u64,
    /// Pages the live device stores (orig_data_size / page size): what projections scale to.
    pub stored_pages: u64,
}

impl Now {
    /// The comparison of one mm_stat field (`mem_used_total`, ...).
    pub fn field(&self, name: &str) -> Option<&FieldComparison> {
        self.fields.iter().find(|f| f.field == name)
    }
}

/// Swap traffic per second: observed on the live system, or taken from the trace replay.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rates {
    pub swap_ins_per_sec: f64,
    pub swap_outs_per_sec: f64,
    /// Length of the observation window (0 when not observed).
    pub observed_secs: f64,
    /// `observed` (pswpin/pswpout and the zram device's I/O over the window) or `replay` (the
    /// trace's replay, when there was nothing to watch).
    pub source: String,
    /// Why this source, in words.
    pub note: String,
}

/// The mm_stat fields that depend only on the pages and the algorithm: equal between the live
/// device and zmem's prediction when nothing moved during the read.
const EXACT_FIELDS: [&str; 3] = ["orig_data_size", "compr_data_size", "huge_pages"];
/// Shown beside them: same-filled slots, and the pool (which fragmentation makes differ).
const SHOWN_FIELDS: [&str; 2] = ["same_pages", "mem_used_total"];

/// Compares the live device with zmem's prediction: `pages` (the device's stored pages in slot
/// order, page 0 included, as captured) written to a fresh zmem device configured as the live
/// one (its primary algorithm; recompressed slots cannot be told apart in a capture, so a
/// device that recompressed shows it as drift).
pub fn assess(
    pages: &[u8],
    page_size: usize,
    config: LiveConfig,
    live_mm_stat: &str,
    progress: &dyn Progress,
) -> Result<Now, LabError> {
    let live: MmStat = live_mm_stat.parse().map_err(|e| {
        LabError::Setup(format!("{}: mm_stat {live_mm_stat:?}: {e}", config.device))
    })?;
    let n = pages.len() / page_size;
    if n == 0 {
        return Err(LabError::NoPages);
    }
    let cfg = ZramRunConfig {
        algo: config.comp_algorithm.clone(),
        params: config.algorithm_params.clone().filter(|p| !p.trim().is_empty()),
        page_size,
        ..ZramRunConfig::default()
    };
    let z = build_device(&cfg, n as u64)?;
    progress.start("predict", n as u64);
    let label = format!("{} as {}", config.comp_algorithm, config.device);
    write_pages(&z, pages, page_size, 0, OnRefusal::Fail, &label, progress)?;
    progress.finish();
    let predicted = z.mm_stat();
    Ok(compare(config, &live, &predicted, page_size))
}

/// zmem's mm_stat for a live device's pages, taken one page at a time as the device is read,
/// in memory that does not grow with the device: what [`assess`] predicts (the pages written
/// in slot order to a fresh device configured as the live one) without holding the pages or
/// the pool. Each page is written to slot 0 of a one-slot zmem device configured as the live
/// one (its algorithm, its parameters; zram's own path, so the same-filled and huge rules are
/// the device's) and freed again; its stored length is counted in its zsmalloc size class, and
/// the pool is the closed form zsmalloc gives objects written one after another
/// (`ceil(count / objs_per_zspage) x pages_per_zspage` per class, as [`crate::sample`]), which
/// the tests check against a device holding every page.
pub struct Predictor {
    z: zmem_zram::Zram,
    page_size: usize,
    classes: zmem_pool::zsmalloc::class::ClassTable,
    counts: Vec<u64>,
    stat: MmStat,
}

impl std::fmt::Debug for Predictor {
    // The one-slot device has nothing worth printing; the tally is the state.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predictor").field("stat", &self.stat).finish_non_exhaustive()
    }
}

impl Predictor {
    pub fn new(config: &LiveConfig, page_size: usize) -> Result<Self, LabError> {
        let cfg = ZramRunConfig {
            algo: config.comp_algorithm.clone(),
            params: config.algorithm_params.clone().filter(|p| !p.trim().is_empty()),
            page_size,
            ..ZramRunConfig::default()
        };
        let z = build_device(&cfg, 1)?;
        let classes = zmem_pool::zsmalloc::class::ClassTable::new(
            page_size,
            zmem_zram::ZramConfig::default().chain_size,
        )
        .map_err(|e| LabError::Setup(format!("size classes: {e}")))?;
        let counts = vec![0; classes.classes().len()];
        Ok(Self { z, page_size, classes, counts, stat: MmStat::default() })
    }

    /// Counts the next page (in slot order).
    pub fn push(&mut self, page: &[u8]) -> Result<(), LabError> {
        let before = self.z.mm_stat();
        self.z.write_page(0, page).map_err(|e| LabError::Setup(format!("predict: {e}")))?;
        let after = self.z.mm_stat();
        self.z.slot_free_notify(0);
        self.stat.orig_data_size += self.page_size as u64;
        if after.same_pages > before.same_pages {
            self.stat.same_pages += 1;
            return Ok(());
        }
        let len = after.compr_data_size - before.compr_data_size;
        self.stat.compr_data_size += len;
        if after.huge_pages > before.huge_pages {
            self.stat.huge_pages += 1;
            self.stat.huge_pages_since += 1;
        }
        self.counts[self.classes.slot_for_request(len as usize)] += 1;
        Ok(())
    }

    /// The mm_stat of a fresh device holding every page pushed, in that order.
    pub fn mm_stat(&self) -> MmStat {
        let ps = self.page_size as u64;
        let pool: u64 = self
            .counts
            .iter()
            .zip(self.classes.classes())
            .map(|(&m, c)| m.div_ceil(c.objs_per_zspage as u64) * c.pages_per_zspage as u64 * ps)
            .sum();
        MmStat { mem_used_total: pool, mem_used_max: pool, ..self.stat }
    }

    /// The "Now" section: the live device against the pages pushed.
    pub fn finish(self, config: LiveConfig, live_mm_stat: &str) -> Result<Now, LabError> {
        let live: MmStat = live_mm_stat.parse().map_err(|e| {
            LabError::Setup(format!("{}: mm_stat {live_mm_stat:?}: {e}", config.device))
        })?;
        if self.stat.orig_data_size == 0 {
            return Err(LabError::NoPages);
        }
        Ok(compare(config, &live, &self.mm_stat(), self.page_size))
    }
}

/// The "Now" section from the two mm_stats.
fn compare(config: LiveConfig, live: &MmStat, predicted: &MmStat, page_size: usize) -> Now {
    let value = |m: &MmStat, f: &str| {
        MmStat::FIELDS.iter().zip(m.values()).find(|(name, _)| **name == f).map_or(0, |(_, v)| v)
    };
    let fields: Vec<FieldComparison> = EXACT_FIELDS
        .iter()
        .chain(&SHOWN_FIELDS)
        .map(|f| FieldComparison {
            field: f.to_string(),
            live: value(live, f),
            predicted: value(predicted, f),
        })
        .collect();
    let differing: Vec<String> = fields
        .iter()
        .filter(|f| EXACT_FIELDS.contains(&f.field.as_str()) && f.live != f.predicted)
        .map(|f| {
            format!(
                "{} live {} vs predicted {} ({:+})",
                f.field,
                f.live,
                f.predicted,
                f.live as i64 - f.predicted as i64
            )
        })
        .collect();
    let exact = differing.is_empty();
    let drift = (!exact).then(|| {
        format!(
            "the device changed while it was read (pages swapped in or out), or it holds \
             recompressed or written-back slots: {}",
            differing.join("; ")
        )
    });
    let fragmentation_bytes = live.mem_used_total as i64 - predicted.mem_used_total as i64;
    Now {
        config,
        live_mm_stat: live.to_string().trim_end().to_string(),
        predicted_mm_stat: predicted.to_string().trim_end().to_string(),
        fields,
        exact,
        drift,
        fragmentation_bytes,
        // zs_compact can at best bring the live pool down to a fresh packing of the same
        // objects: the fragmentation is its upper bound.
        compact_gain_bytes: fragmentation_bytes.max(0) as u64,
        stored_pages: live.orig_data_size / page_size as u64,
    }
}

/// Swap traffic counted at one moment: the system's and the zram devices'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwapSample {
    /// `/proc/vmstat` pswpin / pswpout.
    pub system: live::SwapCounters,
    /// Per zram device read: its number, and the pages read from and written to it (`stat`
    /// sectors / sectors per page). A device that could not be read (removed meanwhile) is
    /// absent.
    pub zram: Vec<(u32, u64, u64)>,
}

/// Takes a [`SwapSample`] of the system and of zram devices `ids`. A device whose `stat`
/// cannot be read (hot-removed, reset) is left out of the sample, not an error: the rates are
/// those of the devices present at both ends of a window ([`rates_between`]).
pub fn sample(ids: &[u32], page_size: usize) -> Result<SwapSample, LabError> {
    let per_page = (page_size / 512).max(1) as u64;
    let mut s = SwapSample { system: live::swap_counters()?, zram: Vec::new() };
    for &id in ids {
        if let Ok(b) = live::zram_block_stat(id) {
            s.zram.push((id, b.read_sectors / per_page, b.write_sectors / per_page));
        }
    }
    Ok(s)
}

/// Rates from two samples `secs` apart: the kernel's swap counters, `pswpin`/`pswpout`, which
/// count the pages swapped in from and out to a swap device (mm/page_io.c
/// `swap_read_folio_bdev_sync()`/`_async()` and `count_swpout_vm_event()`), and nothing else:
/// another program reading /dev/zramN, or the lab's own O_DIRECT reads of it, moves the
/// device's block counters but not these. With zram devices watched (`zram`) and `others` more
/// swap areas active, the swap traffic is apportioned to the zram devices by their own page
/// counts, each capped by the kernel's (a device read more than the kernel swapped in was read
/// by someone else); with no other swap area the kernel's counters are the zram devices'. Where
/// the devices' counts exceed the kernel's, the note says so. A device gone by the second
/// sample is named in the note.
pub fn rates_between(
    a: &SwapSample,
    b: &SwapSample,
    secs: f64,
    zram: bool,
    others: usize,
) -> Rates {
    let per_sec = |x: u64, y: u64| y.saturating_sub(x) as f64 / secs.max(1e-9);
    let (ins, outs) =
        (per_sec(a.system.pswpin, b.system.pswpin), per_sec(a.system.pswpout, b.system.pswpout));
    let (mut zr, mut zw) = ((0, 0), (0, 0));
    let mut gone = Vec::new();
    for &(id, r0, w0) in &a.zram {
        match b.zram.iter().find(|d| d.0 == id) {
            Some(&(_, r1, w1)) => {
                zr = (zr.0 + r0, zr.1 + r1);
                zw = (zw.0 + w0, zw.1 + w1);
            }
            None => gone.push(format!("zram{id}")),
        }
    }
    let (zins, zouts) = (per_sec(zr.0, zr.1), per_sec(zw.0, zw.1));
    let (swap_ins_per_sec, swap_outs_per_sec, whose) = match (zram, others) {
        (false, _) => (ins, outs, "the kernel's pswpin/pswpout".to_string()),
        (true, 0) => {
            (ins, outs, "the kernel's pswpin/pswpout (the zram devices are the only swap)".into())
        }
        (true, n) => (
            zins.min(ins),
            zouts.min(outs),
            format!(
                "the zram devices' reads and writes, each at most the kernel's pswpin/pswpout \
                 ({n} other swap area{} share them)",
                if n == 1 { "" } else { "s" }
            ),
        ),
    };
    let mut note =
        format!("{secs:.1} s of {whose}; system-wide pswpin {ins:.1}/s, pswpout {outs:.1}/s");
    // A page's worth of slack a second: the two reads are not taken at the same instant.
    if zram && (zins > ins + 1.0 || zouts > outs + 1.0) {
        note += &format!(
            "; the zram devices were read {zins:.1} and written {zouts:.1} pages/s, more than \
             the kernel swapped: other readers or writers of the device, not swap, left out"
        );
    }
    if !gone.is_empty() {
        note += &format!("; skipped {} (removed while watched)", gone.join(", "));
    }
    Rates {
        swap_ins_per_sec,
        swap_outs_per_sec,
        observed_secs: secs,
        source: "observed".into(),
        note,
    }
}

/// Watches the live system for `secs` seconds (progress in seconds) and gives its swap rates.
/// `others`: the active swap areas that are not the zram devices `ids`.
pub fn observe(
    ids: &[u32],
    others: usize,
    secs: u64,
    page_size: usize,
    progress: &dyn Progress,
) -> Result<Rates, LabError> {
    let first = sample(ids, page_size)?;
    let start = std::time::Instant::now();
    progress.start("observe (s)", secs);
    for _ in 0..secs {
        std::thread::sleep(std::time::Duration::from_secs(1));
        progress.advance(1);
    }
    progress.finish();
    let last = sample(ids, page_size)?;
    Ok(rates_between(&first, &last, start.elapsed().as_secs_f64(), !ids.is_empty(), others))
}

/// The live rates over `secs` seconds, or why there is nothing to watch (`Ok(Err(why))`): a
/// window of 0, or no swap active (then nothing swaps, and waiting would only show zeros).
pub fn watch(
    zram_ids: &[u32],
    secs: u64,
    page_size: usize,
    progress: &dyn Progress,
) -> Result<Result<Rates, String>, LabError> {
    if secs == 0 {
        return Ok(Err("not observed (--observe 0)".into()));
    }
    let areas = live::swaps()?;
    if areas.is_empty() {
        return Ok(Err("no swap active, nothing to observe".into()));
    }
    let others =
        areas.iter().filter(|a| a.zram_id().is_none_or(|id| !zram_ids.contains(&id))).count();
    Ok(Ok(observe(zram_ids, others, secs, page_size, progress)?))
}

/// The rates of the lab's own replay, for a system with nothing to observe: zram's swap-ins and
/// swap-outs at the tightest RAM budget, per second of the replayed trace (generated, or `--trace`).
pub fn replay_rates(rows: &[SwapRow], why: &str) -> Rates {
    let row =
        rows.iter().filter(|r| r.swap == "zram" && r.trace_secs > 0.0).min_by_key(|r| r.ram_pages);
    match row {
        Some(r) => Rates {
            swap_ins_per_sec: r.swap_ins as f64 / r.trace_secs,
            swap_outs_per_sec: r.swap_outs as f64 / r.trace_secs,
            observed_secs: 0.0,
            source: "replay".into(),
            note: format!(
                "{why}: the trace's replay with zram and RAM for {} of {} pages ({} \
                 swap-ins, {} swap-outs in {:.3} s of trace)",
                r.ram_pages, r.pages, r.swap_ins, r.swap_outs, r.trace_secs
            ),
        },
        None => Rates {
            swap_ins_per_sec: 0.0,
            swap_outs_per_sec: 0.0,
            observed_secs: 0.0,
            source: "replay".into(),
            note: format!("{why}, and no replay with a timed trace"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    fn config(algo: &str) -> LiveConfig {
        LiveConfig {
            device: "/dev/zram7".into(),
            comp_algorithm: algo.into(),
            recomp_algorithm: None,
            algorithm_params: None,
            disksize_bytes: 1 << 30,
            mem_limit_bytes: 0,
            swap_priority: Some(100),
            offered: Vec::new(),
            recompress: false,
        }
    }

    fn pages() -> Vec<u8> {
        zmem_pages::builtin::default_set_with(4096).unwrap().bytes()[..300 * 4096].to_vec()
    }

    #[test]
    fn a_device_that_holds_exactly_these_pages_is_predicted_exactly() {
        let p = pages();
        // What the kernel would show: zmem's own mm_stat for the pages, plus a fragmented pool.
        let mut live = zmem_experiments::conform::ours("lzo-rle", &p).unwrap();
        live.mem_used_total += 5 * 4096;
        let now = assess(&p, 4096, config("lzo-rle"), &live.to_string(), &NoProgress).unwrap();
        assert!(now.exact, "{:?}", now.drift);
        assert_eq!(now.fragmentation_bytes, 5 * 4096);
        assert_eq!(now.compact_gain_bytes, 5 * 4096);
        assert_eq!(now.stored_pages, live.orig_data_size / 4096);
        let orig = now.fields.iter().find(|f| f.field == "orig_data_size").unwrap();
        assert_eq!((orig.live, orig.predicted), (300 * 4096, 300 * 4096));
        assert_eq!(now.live_mm_stat.split_whitespace().count(), 9);
    }

    #[test]
    fn a_device_that_moved_shows_the_drift_field_by_field() {
        let p = pages();
        let mut live = zmem_experiments::conform::ours("lzo-rle", &p).unwrap();
        live.compr_data_size += 100;
        let now = assess(&p, 4096, config("lzo-rle"), &live.to_string(), &NoProgress).unwrap();
        assert!(!now.exact);
        let drift = now.drift.unwrap();
        assert!(drift.contains("compr_data_size") && drift.contains("+100"), "{drift}");
        assert!(!drift.contains("orig_data_size"), "{drift}");
    }

    #[test]
    fn observed_rates_are_the_zram_devices_page_counts_per_second() {
        let a = SwapSample {
            system: live::SwapCounters { pswpin: 100, pswpout: 1000, ..Default::default() },
            zram: vec![(1, 50, 500)],
        };
        let b = SwapSample {
            system: live::SwapCounters { pswpin: 300, pswpout: 1400, ..Default::default() },
            zram: vec![(1, 150, 700)],
        };
        // Another swap area beside the zram device: the device's own counts, capped by the
        // kernel's.
        let r = rates_between(&a, &b, 4.0, true, 1);
        assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (25.0, 50.0));
        assert_eq!((r.observed_secs, r.source.as_str()), (4.0, "observed"));
        assert!(
            r.note.contains("pswpin 50.0/s") && r.note.contains("pswpout 100.0/s"),
            "{}",
            r.note
        );
        assert!(r.note.contains("1 other swap area share"), "{}", r.note);
        // No zram device watched, or the zram device the only swap: the kernel's counters.
        let r = rates_between(&a, &b, 4.0, false, 0);
        assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (50.0, 100.0));
        let r = rates_between(&a, &b, 4.0, true, 0);
        assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (50.0, 100.0));
        assert!(!r.note.contains("not swap"), "{}", r.note);
    }

    /// Another program reading /dev/zramN (`dd iflag=direct`) moves the device's reads, not the
    /// kernel's swap-ins: the rates stay the swap traffic, and the note says the two disagree.
    #[test]
    fn reads_of_the_device_by_others_are_not_swap_ins() {
        let a = SwapSample {
            system: live::SwapCounters { pswpin: 100, pswpout: 1000, ..Default::default() },
            zram: vec![(1, 50, 500)],
        };
        let b = SwapSample {
            system: live::SwapCounters { pswpin: 100, pswpout: 1000, ..Default::default() },
            zram: vec![(1, 59_022, 500)],
        };
        for others in [0, 2] {
            let r = rates_between(&a, &b, 4.0, true, others);
            assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (0.0, 0.0), "{others}");
            assert!(r.note.contains("read 14743.0") && r.note.contains("not swap"), "{}", r.note);
        }
    }

    #[test]
    fn a_live_sample_reads_the_system_counters() {
        // /proc/vmstat exists on every Linux: the sample must succeed with no device.
        let s = sample(&[], 4096).unwrap();
        assert!(s.zram.is_empty());
    }

    #[test]
    fn a_bad_mm_stat_line_is_an_error_naming_the_device() {
        let e = assess(&pages(), 4096, config("lzo-rle"), "1 2 3", &NoProgress).unwrap_err();
        assert!(e.to_string().contains("/dev/zram7"), "{e}");
    }

    fn row(swap: &str, ram_pages: u64, swap_ins: u64, swap_outs: u64, secs: f64) -> SwapRow {
        SwapRow {
            swap: swap.into(),
            ram_pages,
            pages: 1000,
            accesses: 8000,
            swap_outs,
            swap_ins,
            max_pool_bytes: 0,
            disk_reads: 0,
            disk_writes: 0,
            store_p99_ns: 0,
            load_p50_ns: 0,
            load_p99_ns: 0,
            hit_swap_ins: 0,
            hit_p50_ns: 0,
            hit_p99_ns: 0,
            device_swap_ins: 0,
            device_p50_ns: 0,
            device_p99_ns: 0,
            device_seconds: 0.0,
            cpu_seconds: 0.0,
            pool_limit_hit: 0,
            written_back: 0,
            trace_secs: secs,
            verified: true,
        }
    }

    #[test]
    fn replay_rates_use_zram_at_the_tightest_budget() {
        let rows = [
            row("zram", 250, 400, 500, 2.0),
            row("zswap", 250, 999, 999, 2.0),
            row("zram", 500, 100, 150, 2.0),
        ];
        let r = replay_rates(&rows, "no live swap to observe");
        assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (200.0, 250.0));
        assert_eq!(r.source, "replay");
        assert!(r.note.contains("250 of 1000 pages"), "{}", r.note);
        assert!(r.note.starts_with("no live swap to observe: "), "{}", r.note);
        assert_eq!(replay_rates(&[], "x").swap_ins_per_sec, 0.0);
    }
}

#[cfg(test)]
mod watch_tests {
    use super::*;

    /// A zram device that does not exist (or was removed) is skipped, not an error, and the
    /// rates count only the devices present at both ends; one that went away meanwhile is named.
    #[test]
    fn a_vanished_device_is_skipped_with_a_note() {
        // No /sys/block/zram4000000000 on any machine.
        let s = sample(&[4_000_000_000], 4096).expect("a missing device is no error");
        assert!(s.zram.is_empty(), "{s:?}");
        let a = SwapSample { system: Default::default(), zram: vec![(1, 10, 20), (2, 100, 200)] };
        let system = live::SwapCounters { pswpin: 10, pswpout: 20, ..Default::default() };
        let b = SwapSample { system, zram: vec![(1, 20, 40)] };
        let r = rates_between(&a, &b, 1.0, true, 1);
        assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (10.0, 20.0));
        assert!(r.note.contains("skipped zram2 (removed while watched)"), "{}", r.note);
    }
}

#[cfg(test)]
mod predictor_tests {
    use super::*;
    use crate::NoProgress;

    /// Page by page, in bounded memory, the predictor gives the mm_stat fields "Now" compares
    /// that a device holding every page gives.
    #[test]
    fn the_streamed_prediction_is_the_whole_devices() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..1500 * 4096];
        for algo in ["lzo-rle", "zstd"] {
            let config = LiveConfig {
                device: "/dev/zram9".into(),
                comp_algorithm: algo.into(),
                recomp_algorithm: None,
                algorithm_params: None,
                disksize_bytes: 0,
                mem_limit_bytes: 0,
                swap_priority: None,
                offered: Vec::new(),
                recompress: false,
            };
            let whole = zmem_experiments::conform::ours(algo, pages).unwrap();
            let mut p = Predictor::new(&config, 4096).unwrap();
            pages.chunks_exact(4096).for_each(|page| p.push(page).unwrap());
            let m = p.mm_stat();
            assert_eq!(
                (m.orig_data_size, m.compr_data_size, m.huge_pages, m.same_pages),
                (whole.orig_data_size, whole.compr_data_size, whole.huge_pages, whole.same_pages),
                "{algo}"
            );
            assert_eq!(m.mem_used_total, whole.mem_used_total, "{algo}");
            let live = whole.to_string();
            let a = assess(pages, 4096, config.clone(), live.trim(), &NoProgress).unwrap();
            let b = p.finish(config, live.trim()).unwrap();
            assert_eq!(a.fields, b.fields, "{algo}");
            assert!(b.exact);
        }
    }
}
