//! The what-if savings of a `zmem lab` run, read from its JSON report (docs/lab-report.schema.json:
//! `decision` and `candidates`, read as the lab's own types). The recommended configuration is
//! the decision's chosen candidate, its saving that candidate's against now, on the basis every
//! candidate's is: the exporter reads the judge's answer, it does not judge again.

use std::path::Path;

use serde::Deserialize;
use zmem_lab::{Candidate, Decision, Kind};

use crate::ExporterError;

/// What the recommended configuration (and each candidate) would save against now.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSavings {
    /// What the decision configures: the zram device (the live one, else zram0), or `zswap`.
    pub device: String,
    /// The decided configuration's name (a candidate's).
    pub config: String,
    /// Its `memory_saved_bytes`: now's bytes less its pool.
    pub saved_vs_now_bytes: i64,
    /// The basis' pages over its pool.
    pub expected_ratio: f64,
    /// Every candidate's `memory_saved_bytes`, by name.
    pub candidates: Vec<(String, i64)>,
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
    Ok(LabSavings {
        device,
        config: c.name.clone(),
        saved_vs_now_bytes: if d.kind == Kind::Keep { 0 } else { c.memory_saved_bytes },
        expected_ratio: if c.pool_bytes > 0 { orig / c.pool_bytes as f64 } else { 0.0 },
        candidates: r.candidates.iter().map(|c| (c.name.clone(), c.memory_saved_bytes)).collect(),
    })
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
    use zmem_lab::{Basis, Config, NowSource, Policy};

    /// A report with the judge's own decision over `saved` (zram candidates by algorithm, and
    /// one zswap candidate), as the lab writes it.
    fn report(saved: &[(&str, i64)], zswap: Option<i64>, pages: u64) -> String {
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
        let basis = Basis {
            now_config: "none".into(),
            now_bytes,
            now_source: NowSource::Uncompressed,
            pages,
        };
        let ctx = Context {
            basis: &basis,
            estimates: None,
            too_few_pages: (pages < 10).then_some((pages, 10)),
            disk_swap: None,
            zswap_swap_bytes: 0,
            operating: None,
        };
        let d = decide(&cands, &ctx);
        serde_json::json!({"schema_version": 7, "source": {"page_size": 4096}, "decision": d,
            "candidates": cands, "now": null})
        .to_string()
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
}
