//! The lab's JSON document (schema: docs/lab-report.schema.json): the [`LabReport`] value with
//! the recommendation's words (`why`) and the lines that apply it (`attributes`, `apply`)
//! rendered in, so a reader of the JSON gets what the terminal shows. The CLI's `--json` and
//! Python's `zmem.lab` both return this.

use serde_json::{Map, Value};
use zmem_lab::LabReport;

/// The report as the JSON document.
pub fn lab_report(r: &LabReport) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    let a = crate::apply::build(r);
    if let Some(rec) = v.get_mut("recommendation").and_then(Value::as_object_mut) {
        // The rendered fields go where the report has always had them: `attributes` after
        // `config`, `why` after `runner_up`, `apply` last.
        let mut out = Map::new();
        for (k, x) in std::mem::take(rec) {
            let after = k.clone();
            out.insert(k, x);
            match after.as_str() {
                "config" => {
                    out.insert(
                        "attributes".into(),
                        serde_json::to_value(&a.sysfs).unwrap_or_default(),
                    );
                }
                "runner_up" => {
                    out.insert("why".into(), Value::String(crate::advice::why(r)));
                }
                _ => {}
            }
        }
        // An uncertain result is no advice: nothing to apply.
        if r.recommendation.uncertain {
            out.shift_remove("attributes");
        } else {
            out.insert("apply".into(), serde_json::to_value(&a).unwrap_or_default());
        }
        *rec = out;
    }
    crate::zswap::json_into(r, &mut v);
    decision_first(r, v)
}

/// The document with `decision` first, its two scripts rendered in (`apply_script`,
/// `undo_script`): the one answer a reader acts on, the rest its evidence.
fn decision_first(r: &LabReport, v: Value) -> Value {
    let Value::Object(mut m) = v else { return v };
    let mut out = Map::new();
    if let Some(Value::Object(mut d)) = m.shift_remove("decision") {
        d.insert("apply_script".into(), Value::String(crate::decision::apply_script(r)));
        let undo = if r.decision.as_ref().is_some_and(|d| {
            matches!(d.kind, zmem_lab::decision::Kind::Zram | zmem_lab::decision::Kind::Zswap)
        }) {
            crate::decision::undo_script()
        } else {
            String::new()
        };
        d.insert("undo_script".into(), Value::String(undo));
        out.insert("decision".into(), Value::Object(d));
    }
    out.extend(m);
    Value::Object(out)
}

/// [`lab_report`] as pretty-printed text.
pub fn lab_report_text(r: &LabReport) -> String {
    serde_json::to_string_pretty(&lab_report(r)).unwrap_or_default()
}
