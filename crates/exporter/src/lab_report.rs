//! The what-if savings of a `zmem lab` run, read from its JSON report (docs/lab-report.schema.json:
//! `recommendation` and `candidates`).

use std::path::Path;

use serde::Deserialize;

use crate::ExporterError;

/// What the recommended configuration (and each candidate) would save against the configuration
/// measured as now.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSavings {
    /// The device the recommendation applies to (`recommendation.apply.device`).
    pub device: String,
    /// The recommended configuration's name.
    pub config: String,
    /// `recommendation.memory_saved_bytes_vs_now`: now's bytes less the recommended pool.
    pub saved_vs_now_bytes: i64,
    pub expected_ratio: f64,
    /// Every candidate's `memory_saved_bytes_vs_now`, by name.
    pub candidates: Vec<(String, i64)>,
}

#[derive(Deserialize)]
struct Report {
    recommendation: Recommendation,
    candidates: Vec<Candidate>,
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
    Ok(LabSavings {
        device: apply.device,
        config: r.recommendation.config,
        saved_vs_now_bytes: r.recommendation.memory_saved_bytes_vs_now,
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
}
