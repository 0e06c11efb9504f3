//! The lab's JSON document (schema: docs/lab-report.schema.json): the [`LabReport`] with the
//! decision's two scripts rendered in, so a reader of the JSON gets what the terminal shows.
//! The CLI's `--json` and Python's `zmem.lab` both return this.
//!
//! One answer: `decision` is the only choice and holds the only apply script (the files it
//! needs beside it, such as a dictionary, listed by name); every candidate, zram's, zswap's and
//! "none", is in `candidates`, which `decision.chosen` and `decision.runner_up` index.
//!
//! The document is typed ([`LabDocument`], borrowing from the report), so its keys and their
//! order are those of the structs below: nothing is serialised and then edited. Its
//! constructor takes [`LabReport`] and [`ZswapAdvice`] apart without `..`, so a field added to
//! either fails to compile here until the document says where it goes.

use serde::Serialize;
use serde_json::Value;
use zmem_experiments::comp_bench;
use zmem_kernel::cold::ColdCurve;
use zmem_lab::decision::{Decision, Kind};
use zmem_lab::sample::Estimates;
use zmem_lab::zswap::{StackAdvice, ZswapAdvice, ZswapLive, ZswapNow};
use zmem_lab::{
    Budgets, Candidate, KernelCaps, LabReport, Now, PolicyRow, PoolRow, PressureReading, Rates,
    SkippedPolicy, Source, SwapRow, TraceSource,
};
use zmem_sim::swap_device::SwapDevice;

/// The document: `decision` first (the one answer a reader acts on), then the report's fields
/// in the report's order, the evidence; zswap's Now where a reader looks for it, `now.zswap`.
#[derive(Debug, Serialize)]
pub struct LabDocument<'a> {
    decision: DecisionDoc<'a>,
    schema_version: u32,
    zmem_version: &'a str,
    source: &'a Source,
    kernel: &'a KernelCaps,
    compressors: &'a [comp_bench::Row],
    allocators: &'a [PoolRow],
    policies: &'a [PolicyRow],
    swap: &'a [SwapRow],
    swap_device: &'a SwapDevice,
    trace: &'a TraceSource,
    now: NowDoc<'a>,
    rates: &'a Rates,
    candidates: &'a [Candidate],
    budgets: &'a Budgets,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimates: Option<&'a Estimates>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    skipped_policies: &'a [SkippedPolicy],
    #[serde(skip_serializing_if = "Option::is_none")]
    pressure: Option<&'a PressureReading>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cold: Option<&'a ColdCurve>,
    /// What is left of zswap's advice once its Now has its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    zswap: Option<ZswapDoc<'a>>,
}

/// `decision` with the two scripts that act on it.
#[derive(Debug, Serialize)]
struct DecisionDoc<'a> {
    #[serde(flatten)]
    decision: &'a Decision,
    /// Null where zmem refuses to write one (`apply_refused` says why).
    apply_script: Option<String>,
    /// The value that cannot go into a script, named by its field (one line).
    #[serde(skip_serializing_if = "Option::is_none")]
    apply_refused: Option<String>,
    /// Empty where nothing is applied (keep, none) or the apply script is refused.
    undo_script: String,
    /// The files the apply script needs beside it (the dictionary), by name.
    files_needed: Vec<&'static str>,
}

impl<'a> DecisionDoc<'a> {
    fn new(r: &LabReport, d: &'a Decision) -> Self {
        let (apply_script, apply_refused) = match crate::decision::apply_script(r) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let applies = matches!(d.kind, Kind::Zram | Kind::Zswap) && apply_script.is_some();
        Self {
            decision: d,
            apply_script,
            apply_refused,
            undo_script: if applies { crate::decision::undo_script() } else { String::new() },
            files_needed: crate::decision::files_needed(r),
        }
    }
}

/// `now`: the live zram device (or null). With zswap's advice it becomes an object holding
/// `zswap` (zswap's Now, null on a kernel without zswap) beside the zram fields, except when
/// there is neither a live zram device nor a zswap Now: then it stays null.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum NowDoc<'a> {
    Zram(Option<&'a Now>),
    WithZswap(NowWithZswap<'a>),
}

#[derive(Debug, Serialize)]
struct NowWithZswap<'a> {
    #[serde(flatten)]
    zram: Option<&'a Now>,
    zswap: Option<&'a ZswapNow>,
}

/// `zswap`: the stack advice and the live reading. `live` comes first: the order the
/// document has always had (docs/lab-report.schema.json does not fix it).
#[derive(Debug, Serialize)]
struct ZswapDoc<'a> {
    live: &'a ZswapLive,
    stack: &'a StackAdvice,
}

impl<'a> LabDocument<'a> {
    /// The document of `r`.
    pub fn new(r: &'a LabReport) -> Self {
        let LabReport {
            schema_version,
            zmem_version,
            source,
            kernel,
            compressors,
            allocators,
            policies,
            swap,
            swap_device,
            trace,
            now,
            rates,
            candidates,
            budgets,
            decision,
            estimates,
            skipped_policies,
            pressure,
            cold,
            zswap,
        } = r;
        let (now, zswap) = match zswap {
            None => (NowDoc::Zram(now.as_ref()), None),
            Some(z) => {
                let ZswapAdvice { now: zswap_now, stack, live } = z;
                let now = match (now, zswap_now) {
                    (None, None) => NowDoc::Zram(None),
                    (zram, zswap) => NowDoc::WithZswap(NowWithZswap {
                        zram: zram.as_ref(),
                        zswap: zswap.as_ref(),
                    }),
                };
                (now, Some(ZswapDoc { live, stack }))
            }
        };
        Self {
            decision: DecisionDoc::new(r, decision),
            schema_version: *schema_version,
            zmem_version,
            source,
            kernel,
            compressors,
            allocators,
            policies,
            swap,
            swap_device,
            trace,
            now,
            rates,
            candidates,
            budgets,
            estimates: estimates.as_ref(),
            skipped_policies,
            pressure: pressure.as_ref(),
            cold: cold.as_ref(),
            zswap,
        }
    }
}

/// The report as the JSON document, as a value (for readers that index into it).
pub fn lab_report(r: &LabReport) -> Value {
    serde_json::to_value(LabDocument::new(r)).unwrap_or(Value::Null)
}

/// The report as the JSON document, pretty-printed.
pub fn lab_report_text(r: &LabReport) -> String {
    serde_json::to_string_pretty(&LabDocument::new(r)).unwrap_or_default()
}
