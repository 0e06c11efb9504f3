//! The what-if savings of a `zmem lab` run, read from its JSON report (docs/lab-report.schema.json:
//! `decision` and `candidates`, read as the lab's own types). The recommended configuration is
//! the decision's chosen candidate, its saving that candidate's against now, on the basis every
//! candidate's is: the exporter reads the judge's answer, it does not judge again.
//!
//! That saving has every sampled page swapped. A schema 8 report also says where the machine
//! runs (`decision.operating_point`, zmem_lab::operating): what reclaim moves out at today's
//! pressure, and what has been idle for the cold age T. The chosen candidate's `at_today` and
//! `at_cold_age` are its savings there; each is read only where the lab read that point.

use std::path::Path;

use serde::Deserialize;
use zmem_lab::operating::{Named, OperatingPoint, TodayReason};
use zmem_lab::{Candidate, Decision, Kind};

use crate::ExporterError;

/// What the recommended configuration (and each candidate) would save against now.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSavings {
    /// What the decision configures: the zram device (the live one, else zram0), or `zswap`.
    pub device: String,
    /// The decided configuration's name (a candidate's).
    pub config: String,
    /// Its `memory_saved_bytes`: now's bytes less its pool, every page of the basis swapped.
    pub saved_vs_now_bytes: i64,
    /// The basis' pages over its pool.
    pub expected_ratio: f64,
    /// Every candidate's `memory_saved_bytes`, by name.
    pub candidates: Vec<(String, i64)>,
    /// Where the machine runs; None for a report before schema 8.
    pub point: Option<Point>,
}

/// The decided configuration at the report's operating point (`decision.operating_point`).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The point the decision's own `memory_saved_bytes` is at: `today`, `cold_age` or
    /// `all_pages` (the pages are not this machine's).
    pub named: &'static str,
    /// Its saving with what reclaim moves out now (`at_today`); None where the lab read no
    /// pressure of this machine, so today's point is not known.
    pub saved_today_bytes: Option<i64>,
    /// Its saving with everything idle for T moved out (`at_cold_age`); None where no cold
    /// curve reached T.
    pub saved_cold_age_bytes: Option<i64>,
    /// Anonymous bytes of the processes watched idle for at least T, and T; None as above.
    pub cold_bytes: Option<u64>,
    pub cold_age_secs: Option<u64>,
}

#[derive(Deserialize)]
struct Report {
    decision: Decision,
    candidates: Vec<Candidate>,
    source: Source,
    #[serde(default)]
    now: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Source {
    page_size: u64,
}

/// `zram` and digits: a device name a metric label may carry (a report is input).
fn is_zram_name(d: &str) -> bool {
    d.strip_prefix("zram").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses a lab report's JSON text.
pub fn parse(text: &str) -> Result<LabSavings, ExporterError> {
    let r: Report = serde_json::from_str(text)
        .map_err(|e| ExporterError::Input(format!("not a zmem lab report (schema 7 on): {e}")))?;
    let d = &r.decision;
    let Some(c) = d.chosen(&r.candidates).filter(|_| d.kind != Kind::None) else {
        return Err(ExporterError::Input(
            "the lab report's decision is none (too few pages, or a kernel without zram and \
             zswap): no savings to export"
                .into(),
        ));
    };
    let device = match &c.config {
        zmem_lab::Config::Zswap { .. } => "zswap".to_string(),
        _ => r
            .now
            .as_ref()
            .and_then(|n| n.pointer("/config/device")?.as_str())
            .map(|d| d.trim_start_matches("/dev/"))
            .filter(|d| is_zram_name(d))
            .unwrap_or("zram0")
            .to_string(),
    };
    let orig = (d.basis.pages * r.source.page_size) as f64;
    let keep = d.kind == Kind::Keep;
    Ok(LabSavings {
        device,
        config: c.name.clone(),
        saved_vs_now_bytes: if keep { 0 } else { c.memory_saved_bytes },
        expected_ratio: if c.pool_bytes > 0 { orig / c.pool_bytes as f64 } else { 0.0 },
        candidates: r.candidates.iter().map(|c| (c.name.clone(), c.memory_saved_bytes)).collect(),
        point: d.operating_point.as_ref().map(|op| point(op, c, keep)),
    })
}

/// `c` at `op`; keeping what runs saves nothing at any point, as the decision says.
fn point(op: &OperatingPoint, c: &Candidate, keep: bool) -> Point {
    let saved = |b: i64| if keep { 0 } else { b };
    // Today's point with no reading is zeros in the report, not a saving of 0.
    let read_today = op.today.reason != TodayReason::NoReading;
    let cold = op.cold.as_ref();
    Point {
        named: match op.named {
            Named::Today => "today",
            Named::ColdAge => "cold_age",
            Named::AllPages => "all_pages",
        },
        saved_today_bytes: read_today.then(|| saved(c.at_today.memory_saved_bytes)),
        // The candidate's figure at the cold age counts only with the point itself.
        saved_cold_age_bytes: cold.and(c.at_cold_age).map(|at| saved(at.memory_saved_bytes)),
        cold_bytes: cold.map(|k| k.cold_bytes),
        cold_age_secs: cold.map(|k| k.age_secs),
    }
}

/// Reads a lab report file.
pub fn read(path: &Path) -> Result<LabSavings, ExporterError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ExporterError::Input(format!("{}: {e}", path.display())))?;
    parse(&text).map_err(|e| ExporterError::Input(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_lab::decision::{Context, decide};
    use zmem_lab::operating::{AtPoint, ColdAt, Today};
    use zmem_lab::{Basis, Config, NowSource, Policy};

    /// Candidates as the lab writes them: zram's by algorithm saving `saved`, one zswap
    /// candidate, and none.
    fn candidates(saved: &[(&str, i64)], zswap: Option<i64>, pages: u64) -> Vec<Candidate> {
        let now_bytes = pages * 4096;
        let mut cands: Vec<Candidate> = saved
            .iter()
            .map(|(algo, s)| {
                let mut c = Candidate::none(0);
                c.name = format!("zram {algo}");
                c.config = Config::Zram { policy: Policy::single(algo) };
                c.runs_now = false;
                c.pool_bytes = (now_bytes as i64 - s) as u64;
                c.memory_saved_bytes = *s;
                c.memory_saved_ci = [*s, *s];
                c
            })
            .collect();
        if let Some(s) = zswap {
            let mut c = Candidate::none(0);
            c.name = "zswap lzo max_pool_percent=20 shrinker=off".into();
            c.config = Config::Zswap {
                params: zmem_lab::ZswapParams::default(),
                behind: "/swapfile".into(),
            };
            c.runs_now = false;
            c.pool_bytes = (now_bytes as i64 - s) as u64;
            c.memory_saved_bytes = s;
            cands.push(c);
        }
        cands.push(Candidate::none(now_bytes));
        cands
    }

    /// The report over `cands` with the judge's own decision, at `op` where given (schema 8),
    /// else as schema 7 wrote it.
    fn document(cands: &[Candidate], pages: u64, op: Option<&OperatingPoint>) -> String {
        let basis = Basis {
            now_config: "none".into(),
            now_bytes: pages * 4096,
            now_source: NowSource::Uncompressed,
            pages,
        };
        let ctx = Context {
            basis: &basis,
            estimates: None,
            too_few_pages: (pages < 10).then_some((pages, 10)),
            disk_swap: None,
            zswap_swap_bytes: 0,
            zram_swap_bytes: 0,
            operating: op,
            mem_total_bytes: None,
        };
        let d = decide(cands, &ctx);
        let schema = if op.is_some() { 8 } else { 7 };
        serde_json::json!({"schema_version": schema, "source": {"page_size": 4096},
            "decision": d, "candidates": cands, "now": null})
        .to_string()
    }

    /// A schema 7 report over `saved` (no operating point).
    fn report(saved: &[(&str, i64)], zswap: Option<i64>, pages: u64) -> String {
        document(&candidates(saved, zswap, pages), pages, None)
    }

    /// Free memory under the low watermark: kswapd moves `moved` bytes out.
    fn short(moved: u64) -> Today {
        Today {
            reason: TodayReason::Short,
            moved_out_bytes: moved,
            available_bytes: Some(40 << 20),
            free_bytes: 10 << 20,
            low_watermark_bytes: 12 << 20,
            high_watermark_bytes: 14 << 20,
            psi_some_avg10: None,
            psi_some_avg60: None,
            cgroups: Vec::new(),
        }
    }

    /// `cold` bytes of `anon` idle at T = `t` seconds, the curve read to T.
    fn cold_at(t: u64, cold: u64, anon: u64) -> ColdAt {
        ColdAt {
            age_secs: t,
            anon_bytes: anon,
            cold_bytes: cold,
            ages_secs: vec![t / 2, t],
            cold_bytes_at_age: vec![cold + 4096, cold],
            promoted_bytes_per_sec: 0.0,
            promotion_bound: false,
            promotion_percent_per_min: 0.0,
            promotion_budget_percent_per_min: 0.2,
            over_promotion_budget: false,
            promotion_under_floor: false,
            left_out: Vec::new(),
            pool_factor: Default::default(),
            cold_by_cgroup: Default::default(),
        }
    }

    fn operating(named: Named, today: Today, cold: Option<ColdAt>) -> OperatingPoint {
        OperatingPoint {
            named,
            today,
            cold,
            cold_unseen: None,
            compressibility: zmem_lab::operating::COMPRESSIBILITY_NOTE.into(),
        }
    }

    /// Each candidate's figure at a point: its every-page saving scaled by the share of the
    /// basis moved there (what zmem_lab::operating::at gives).
    fn at(c: &Candidate, moved: u64, basis_bytes: u64) -> AtPoint {
        let saved = c.memory_saved_bytes * moved as i64 / basis_bytes as i64;
        AtPoint {
            moved_out_bytes: moved,
            pool_bytes: moved - saved as u64,
            memory_saved_bytes: saved,
            memory_saved_ci: [saved, saved],
        }
    }

    #[test]
    fn reads_the_decision_and_candidates() {
        let s = parse(&report(&[("lzo-rle", 1 << 20), ("zstd", 3 << 20)], None, 1024)).unwrap();
        assert_eq!(s.device, "zram0");
        assert_eq!(s.config, "zram zstd");
        assert_eq!(s.saved_vs_now_bytes, 3 << 20);
        assert_eq!(s.expected_ratio, 4.0);
        let names: Vec<&str> = s.candidates.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["zram lzo-rle", "zram zstd", "none"]);
        assert!(parse("{}").is_err());
    }

    /// Too few pages: the decision is none, and there are no savings to export.
    #[test]
    fn a_decision_of_none_is_refused() {
        let e = parse(&report(&[("zstd", 5)], None, 4)).unwrap_err().to_string();
        assert!(e.contains("decision is none"), "{e}");
    }

    /// The decision's candidate, zswap's here, is what is exported as recommended.
    #[test]
    fn the_decision_is_the_recommended_one() {
        let s = parse(&report(&[("zstd", 900 << 10)], Some(1500 << 10), 1024)).unwrap();
        assert_eq!(s.config, "zswap lzo max_pool_percent=20 shrinker=off");
        assert_eq!((s.device.as_str(), s.saved_vs_now_bytes), ("zswap", 1500 << 10));
    }

    /// Schema 8 with a cold point: the decided candidate's savings at today's point and at T,
    /// beside its every-page saving (which stays what the older gauge says).
    #[test]
    fn a_cold_point_gives_the_savings_at_today_and_at_t() {
        let pages = 1024;
        let basis_bytes = pages * 4096;
        let mut cands = candidates(&[("lzo-rle", 1 << 20), ("zstd", 3 << 20)], None, pages);
        // Today kswapd moves out a quarter of the basis; half of it has been idle for T.
        let (today, cold) = (basis_bytes / 4, basis_bytes / 2);
        for c in &mut cands {
            c.at_today = at(c, today, basis_bytes);
            c.at_cold_age = Some(at(c, cold, basis_bytes));
        }
        let op = operating(Named::ColdAge, short(today), Some(cold_at(60, cold, 3 << 20)));
        let text = document(&cands, pages, Some(&op));
        let s = parse(&text).unwrap();
        assert_eq!(s.config, "zram zstd");
        let p = s.point.expect("a schema 8 report has an operating point");
        assert_eq!(p.named, "cold_age");
        assert_eq!(p.saved_today_bytes, Some((3 << 20) / 4));
        assert_eq!(p.saved_cold_age_bytes, Some((3 << 20) / 2));
        assert_eq!((p.cold_bytes, p.cold_age_secs), (Some(cold), Some(60)));
        // The older figure is every page swapped, not the decision's headline at T.
        assert_eq!(s.saved_vs_now_bytes, 3 << 20);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["decision"]["memory_saved_bytes"], (3 << 20) / 2);
    }

    /// A report before schema 8 has no point; one whose pages are not this machine's has a
    /// point named all_pages, with neither today's pressure nor a cold curve read: no figures.
    #[test]
    fn without_a_point_there_are_no_figures_at_one() {
        let s = parse(&report(&[("zstd", 3 << 20)], None, 1024)).unwrap();
        assert_eq!((s.point, s.saved_vs_now_bytes), (None, 3 << 20));
        let cands = candidates(&[("zstd", 3 << 20)], None, 1024);
        let mut none = short(0);
        none.reason = TodayReason::NoReading;
        let op = operating(Named::AllPages, none, None);
        let s = parse(&document(&cands, 1024, Some(&op))).unwrap();
        let p = s.point.expect("the report has an operating point");
        assert_eq!(p.named, "all_pages");
        assert_eq!((p.saved_today_bytes, p.saved_cold_age_bytes), (None, None));
        assert_eq!((p.cold_bytes, p.cold_age_secs), (None, None));
        assert_eq!(s.saved_vs_now_bytes, 3 << 20);
    }
}
