//! The lab's JSON document (schema: docs/lab-report.schema.json): the [`LabReport`] with the
//! recommendation's words (`why`) and the lines that apply it (`attributes`, `apply`) rendered
//! in, so a reader of the JSON gets what the terminal shows. The CLI's `--json` and Python's
//! `zmem.lab` both return this.
//!
//! The document is typed ([`LabDocument`], borrowing from the report), so its keys and their
//! order are those of the structs below: nothing is serialised and then edited. Each
//! constructor takes its source struct apart without `..`, so a field added to [`LabReport`],
//! [`Recommendation`] or [`ZswapAdvice`] fails to compile here until the document says where it
//! goes.

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::Value;
use zmem_experiments::comp_bench;
use zmem_lab::decision::{Decision, Kind};
use zmem_lab::sample::Estimates;
use zmem_lab::zswap::{StackAdvice, Verdict, ZswapAdvice, ZswapCandidate, ZswapLive, ZswapNow};
use zmem_lab::{
    BetterKernel, Budgets, Candidate, KernelCaps, LabReport, Now, PolicyRow, PoolRow, Rates,
    Recommendation, RunnerUpReason, SkippedPolicy, Source, SwapRow, TraceSource, UncertainReason,
};
use zmem_sim::swap_device::SwapDevice;

use crate::apply::Apply;

/// The document: the report's fields in the report's order, with `decision` first (the one
/// answer a reader acts on, the rest its evidence), and zswap's parts where a reader looks for
/// them: `now.zswap`, its candidates after zram's in `candidates`, and `verdict` last.
#[derive(Debug, Serialize)]
pub struct LabDocument<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<DecisionDoc<'a>>,
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
    candidates: Candidates<'a>,
    budgets: &'a Budgets,
    recommendation: RecommendationDoc<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimates: Option<&'a Estimates>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    skipped_policies: &'a [SkippedPolicy],
    /// What is left of zswap's advice once its Now, candidates and verdict have their places.
    #[serde(skip_serializing_if = "Option::is_none")]
    zswap: Option<ZswapDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<&'a Verdict>,
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
/// there is neither a live zram device nor a zswap Now: then it stays null. These rules are
/// the ones the document had when `now.zswap` was inserted into the serialised value; kept
/// exactly, so the JSON is unchanged.
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

/// `candidates`: zram's, then zswap's. Each says its `kind` itself ([`Candidate::kind`] is
/// always written, [`ZswapCandidate::kind`] is `zswap`).
#[derive(Debug)]
struct Candidates<'a> {
    zram: &'a [Candidate],
    zswap: &'a [ZswapCandidate],
}

impl Serialize for Candidates<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.zram.len() + self.zswap.len()))?;
        self.zram.iter().try_for_each(|c| seq.serialize_element(c))?;
        self.zswap.iter().try_for_each(|c| seq.serialize_element(c))?;
        seq.end()
    }
}

/// `zswap`: the stack advice and the live reading. `live` comes first: the order the
/// document has always had (docs/lab-report.schema.json does not fix it).
#[derive(Debug, Serialize)]
struct ZswapDoc<'a> {
    live: &'a ZswapLive,
    stack: &'a StackAdvice,
}

/// `recommendation` with `attributes` after `config`, `why` after `runner_up` and `apply`
/// last; an uncertain one (no advice) has neither `attributes` nor `apply`.
#[derive(Debug, Serialize)]
struct RecommendationDoc<'a> {
    config: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    attributes: Option<&'a [String]>,
    expected_ratio: f64,
    memory_saved_bytes: i64,
    memory_saved_percent: f64,
    cpu_seconds_per_gb: f64,
    load_latency_p50_ns: u64,
    load_latency_p99_ns: u64,
    runner_up: Option<&'a str>,
    why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    runner_up_reason: Option<&'a RunnerUpReason>,
    rule: &'a str,
    now_config: &'a str,
    now_bytes: u64,
    now_source: &'a str,
    projected_pages: u64,
    keep_current: bool,
    within_budgets: bool,
    memory_saved_bytes_vs_now: i64,
    cpu_secs_per_sec: f64,
    added_load_p99_ns: i64,
    available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    unavailable_reason: Option<&'a str>,
    better_kernel: &'a [BetterKernel],
    uncertain: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    uncertain_reason: Option<&'a UncertainReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    apply: Option<&'a Apply>,
}

impl<'a> RecommendationDoc<'a> {
    fn new(rec: &'a Recommendation, why: String, apply: Option<&'a Apply>) -> Self {
        let Recommendation {
            config,
            expected_ratio,
            memory_saved_bytes,
            memory_saved_percent,
            cpu_seconds_per_gb,
            load_latency_p50_ns,
            load_latency_p99_ns,
            runner_up,
            runner_up_reason,
            rule,
            now_config,
            now_bytes,
            now_source,
            projected_pages,
            keep_current,
            within_budgets,
            memory_saved_bytes_vs_now,
            cpu_secs_per_sec,
            added_load_p99_ns,
            available,
            unavailable_reason,
            better_kernel,
            uncertain,
            uncertain_reason,
        } = rec;
        Self {
            config,
            attributes: apply.map(|a| a.sysfs.as_slice()),
            expected_ratio: *expected_ratio,
            memory_saved_bytes: *memory_saved_bytes,
            memory_saved_percent: *memory_saved_percent,
            cpu_seconds_per_gb: *cpu_seconds_per_gb,
            load_latency_p50_ns: *load_latency_p50_ns,
            load_latency_p99_ns: *load_latency_p99_ns,
            runner_up: runner_up.as_deref(),
            why,
            runner_up_reason: runner_up_reason.as_ref(),
            rule,
            now_config,
            now_bytes: *now_bytes,
            now_source,
            projected_pages: *projected_pages,
            keep_current: *keep_current,
            within_budgets: *within_budgets,
            memory_saved_bytes_vs_now: *memory_saved_bytes_vs_now,
            cpu_secs_per_sec: *cpu_secs_per_sec,
            added_load_p99_ns: *added_load_p99_ns,
            available: *available,
            unavailable_reason: unavailable_reason.as_deref(),
            better_kernel,
            uncertain: *uncertain,
            uncertain_reason: uncertain_reason.as_ref(),
            apply,
        }
    }
}

impl<'a> LabDocument<'a> {
    /// The document of `r`; `apply` is [`crate::apply::build`] of it, none when the
    /// recommendation is uncertain (an uncertain result is no advice: nothing to apply).
    pub fn new(r: &'a LabReport, apply: Option<&'a Apply>) -> Self {
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
            recommendation,
            estimates,
            skipped_policies,
            zswap,
            decision,
        } = r;
        let decision = decision.as_ref().map(|d| DecisionDoc::new(r, d));
        let (now, zswap_candidates, zswap, verdict) = match zswap {
            None => (NowDoc::Zram(now.as_ref()), &[][..], None, None),
            Some(z) => {
                let ZswapAdvice { now: zswap_now, candidates, verdict, stack, live } = z;
                let now = match (now, zswap_now) {
                    (None, None) => NowDoc::Zram(None),
                    (zram, zswap) => NowDoc::WithZswap(NowWithZswap {
                        zram: zram.as_ref(),
                        zswap: zswap.as_ref(),
                    }),
                };
                (now, candidates.as_slice(), Some(ZswapDoc { live, stack }), Some(verdict))
            }
        };
        Self {
            decision,
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
            candidates: Candidates { zram: candidates, zswap: zswap_candidates },
            budgets,
            recommendation: RecommendationDoc::new(recommendation, crate::advice::why(r), apply),
            estimates: estimates.as_ref(),
            skipped_policies,
            zswap,
            verdict,
        }
    }
}

/// The apply lines of `r`, none when its recommendation is uncertain.
fn apply_of(r: &LabReport) -> Option<Apply> {
    (!r.recommendation.uncertain).then(|| crate::apply::build(r))
}

/// The report as the JSON document, as a value (for readers that index into it).
pub fn lab_report(r: &LabReport) -> Value {
    let apply = apply_of(r);
    serde_json::to_value(LabDocument::new(r, apply.as_ref())).unwrap_or(Value::Null)
}

/// The report as the JSON document, pretty-printed.
pub fn lab_report_text(r: &LabReport) -> String {
    let apply = apply_of(r);
    serde_json::to_string_pretty(&LabDocument::new(r, apply.as_ref())).unwrap_or_default()
}
