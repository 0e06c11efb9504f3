//! The lab's JSON document (schema: docs/lab-report.schema.json): the [`LabReport`] value with
//! the recommendation's words (`why`) and the lines that apply it (`attributes`, `apply`)
//! rendered in, so a reader of the JSON gets what the terminal shows. The CLI's `--json` and
//! Python's `zmem.lab` both return this.

use serde_json::Value;
use zmem_lab::LabReport;

/// The report as the JSON document.
pub fn lab_report(r: &LabReport) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    let a = crate::apply::build(r);
    if let Some(rec) = v.get_mut("recommendation").and_then(Value::as_object_mut) {
        rec.insert("why".into(), Value::String(crate::advice::why(r)));
        rec.insert("attributes".into(), serde_json::to_value(&a.sysfs).unwrap_or(Value::Null));
        rec.insert("apply".into(), serde_json::to_value(&a).unwrap_or(Value::Null));
    }
    crate::zswap::json_into(r, &mut v);
    v
}

/// [`lab_report`] as pretty-printed text.
pub fn lab_report_text(r: &LabReport) -> String {
    serde_json::to_string_pretty(&lab_report(r)).unwrap_or_default()
}
