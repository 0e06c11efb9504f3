//! The what-if savings of a `zmem lab` run, read from its JSON report (docs/lab-report.schema.json:
//! `decision`, `recommendation` and `candidates`). The recommended configuration is the
//! decision's (reports before schema 5: the recommendation's), its saving that candidate's
//! against now, on the basis every candidate's is.

use std::path::Path;

use serde::Deserialize;

use crate::ExporterError;

/// What the recommended configuration (and each candidate) would save against the configuration
/// measured as now.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSavings {
    /// The device the recommendation applies to (`recommendation.apply.device`).
    pub device: String,
    /// The decided configuration's name (a candidate's).
    pub config: String,
    /// Its `memory_saved_bytes_vs_now`: now's bytes less its pool.
    pub saved_vs_now_bytes: i64,
    pub expected_ratio: f64,
    /// Every candidate's `memory_saved_bytes_vs_now`, by name.
    pub candidates: Vec<(String, i64)>,
}

#[derive(Deserialize)]
struct Report {
    recommendation: Recommendation,
    candidates: Vec<Candidate>,
    /// Schema 5 on.
    #[serde(default)]
    decision: Option<Decision>,
}

#[derive(Deserialize)]
struct Decision {
    kind: String,
    chosen: Option<Chosen>,
}

#[derive(Deserialize)]
struct Chosen {
    pick: Pick,
}

#[derive(Deserialize)]
struct Pick {
    kind: String,
    index: usize,
}

#[derive(Deserialize)]
struct Recommendation {
    config: String,
    memory_saved_bytes_vs_now: i64,
    expected_ratio: f64,
    /// Absent from an uncertain report (too few pages measured): nothing to apply.
    apply: Option<Apply>,
    #[serde(default)]
    uncertain: bool,
}

#[derive(Deserialize)]
struct Apply {
    device: String,
}

#[derive(Deserialize)]
struct Candidate {
    name: String,
    memory_saved_bytes_vs_now: i64,
    /// `zram` (absent before schema 5) or `zswap`.
    #[serde(default)]
    kind: Option<String>,
}

/// Parses a lab report's JSON text.
pub fn parse(text: &str) -> Result<LabSavings, ExporterError> {
    let r: Report = serde_json::from_str(text)
        .map_err(|e| ExporterError::Input(format!("not a zmem lab report: {e}")))?;
    let apply = match (r.recommendation.uncertain, r.recommendation.apply) {
        (false, Some(a)) => a,
        (true, _) => {
            return Err(ExporterError::Input(
                "the lab report is too uncertain to advise on (too few pages measured): no \
                 savings to export"
                    .into(),
            ));
        }
        (false, None) => {
            return Err(ExporterError::Input(
                "not a zmem lab report: recommendation without apply".into(),
            ));
        }
    };
    // The decision's candidate, by identity: the index-th candidate of its kind.
    let decided = r.decision.as_ref().and_then(|d| {
        if d.kind == "none" {
            return None;
        }
        let pick = &d.chosen.as_ref()?.pick;
        r.candidates
            .iter()
            .filter(|c| c.kind.as_deref().unwrap_or("zram") == pick.kind)
            .nth(pick.index)
    });
    if r.decision.as_ref().is_some_and(|d| d.kind == "none") {
        return Err(ExporterError::Input(
            "the lab report's decision is none (too few pages, or a kernel without zram and \
             zswap): no savings to export"
                .into(),
        ));
    }
    let (config, saved) = match decided {
        Some(c) => (c.name.clone(), c.memory_saved_bytes_vs_now),
        None => (r.recommendation.config, r.recommendation.memory_saved_bytes_vs_now),
    };
    Ok(LabSavings {
        device: apply.device,
        config,
        saved_vs_now_bytes: saved,
        expected_ratio: r.recommendation.expected_ratio,
        candidates: r
            .candidates
            .into_iter()
            .map(|c| (c.name, c.memory_saved_bytes_vs_now))
            .collect(),
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

    #[test]
    fn reads_the_recommendation_and_candidates() {
        let text = r#"{"schema_version": 9, "candidates": [
            {"name": "lzo-rle", "memory_saved_bytes_vs_now": 0, "pool_bytes": 10},
            {"name": "zstd", "memory_saved_bytes_vs_now": 123456, "pool_bytes": 5}],
          "recommendation": {"config": "zstd", "memory_saved_bytes_vs_now": 123456,
            "expected_ratio": 3.5, "apply": {"device": "zram1", "sysfs": []}}}"#;
        let s = parse(text).unwrap();
        assert_eq!(s.device, "zram1");
        assert_eq!(s.config, "zstd");
        assert_eq!(s.saved_vs_now_bytes, 123_456);
        assert_eq!(s.expected_ratio, 3.5);
        assert_eq!(s.candidates, [("lzo-rle".to_string(), 0), ("zstd".to_string(), 123_456)]);
        assert!(parse("{}").is_err());
    }

    /// An uncertain report (too few pages) has nothing to apply and no savings to export.
    #[test]
    fn an_uncertain_report_is_refused() {
        let text = r#"{"candidates": [],
          "recommendation": {"config": "zstd", "memory_saved_bytes_vs_now": -5,
            "expected_ratio": 0.24, "uncertain": true,
            "uncertain_reason": {"kind": "too_few_pages", "measured_pages": 16, "min_pages": 1024}}}"#;
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains("too uncertain"), "{e}");
    }

    /// Schema 5: the decision's candidate, by identity (the index-th of its kind), not the
    /// zram recommendation, is what is exported as recommended.
    #[test]
    fn the_decision_is_the_recommended_one() {
        let text = r#"{"candidates": [
            {"name": "lzo-rle", "kind": "zram", "memory_saved_bytes_vs_now": 0},
            {"name": "zstd", "kind": "zram", "memory_saved_bytes_vs_now": 900},
            {"name": "zswap lzo max_pool_percent=20 shrinker=off", "kind": "zswap", "memory_saved_bytes_vs_now": 500},
            {"name": "zswap deflate max_pool_percent=20 shrinker=off", "kind": "zswap", "memory_saved_bytes_vs_now": 1500}],
          "recommendation": {"config": "zstd", "memory_saved_bytes_vs_now": 900,
            "expected_ratio": 3.5, "apply": {"device": "zram0", "sysfs": []}},
          "decision": {"kind": "zswap", "chosen": {"pick": {"kind": "zswap", "index": 1}}}}"#;
        let s = parse(text).unwrap();
        assert_eq!(s.config, "zswap deflate max_pool_percent=20 shrinker=off");
        assert_eq!(s.saved_vs_now_bytes, 1500);
        let none = text.replace(r#""kind": "zswap", "chosen""#, r#""kind": "none", "chosen""#);
        assert!(parse(&none).unwrap_err().to_string().contains("decision is none"));
    }
}
