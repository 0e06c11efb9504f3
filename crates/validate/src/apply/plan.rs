//! The decision `zmem validate apply` applies ([`Plan`]): read from a lab report's JSON (its
//! `decision`, `candidates` and the page size, as the lab's own types) or taken from a lab run,
//! and what it predicts ([`Plan::predicted`]) and sets up ([`Plan::store`]).

use std::path::Path;

use serde::Deserialize;
use zmem_kernel::cold::ColdCurve;
use zmem_kernel::reclaim::damon::DamonPageout;
use zmem_kernel::reclaim::memcg::MemcgReclaim;
use zmem_kernel::reclaim::{AgentConfig, HELD_IDLE_MAX_T};
use zmem_lab::decision::{Decision, Kind, Reason};
use zmem_lab::operating::Named;
use zmem_lab::proactive::{Mechanism, Proactive};
use zmem_lab::{Candidate, Config, LabReport, ZswapParams};

use super::report::Predicted;

/// zram's `disksize` (and zswap's swap file) where the decision names no size: room for at
/// least this, and for twice the bytes predicted to move out.
pub const DEFAULT_DISKSIZE: u64 = 256 << 20;

/// The decision, its candidates and the page size the figures are in.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub decision: Decision,
    pub candidates: Vec<Candidate>,
    pub page_size: u64,
    /// The report's cold curve, per process: what a `--pid` subset holds of the cold bytes.
    pub cold: Option<ColdCurve>,
}

/// What the plan sets up.
#[derive(Debug, Clone, PartialEq)]
pub enum Store {
    /// A zram swap device of our own.
    Zram { algorithm: String, disksize: u64, mem_limit: Option<u64>, note: Option<String> },
    /// zswap's parameters, and a swap file of our own behind it.
    Zswap { params: ZswapParams, swap_bytes: u64 },
    /// Nothing (keep, none): why.
    Nothing(String),
}

#[derive(Deserialize)]
struct Doc {
    decision: Decision,
    candidates: Vec<Candidate>,
    source: DocSource,
    #[serde(default)]
    cold: Option<ColdCurve>,
}

#[derive(Deserialize)]
struct DocSource {
    page_size: u64,
}

impl Plan {
    /// From a lab report's JSON text (`zmem lab --json`, or `-o DIR`'s report.json).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let d: Doc =
            serde_json::from_str(text).map_err(|e| format!("not a zmem lab report: {e}"))?;
        if !(512..=(1 << 20)).contains(&d.source.page_size) {
            return Err(format!("a page size of {} bytes", d.source.page_size));
        }
        if d.decision.chosen.is_some_and(|i| i >= d.candidates.len()) {
            return Err("its decision chooses a candidate it does not list".into());
        }
        Ok(Self {
            decision: d.decision,
            candidates: d.candidates,
            page_size: d.source.page_size,
            cold: d.cold,
        })
    }

    /// From the file at `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// From a lab run.
    pub fn from_report(r: &LabReport) -> Self {
        Self {
            decision: r.decision.clone(),
            candidates: r.candidates.clone(),
            page_size: r.source.page_size as u64,
            cold: r.cold.clone(),
        }
    }

    /// `zram`, `zswap`, `keep`, `none`.
    pub fn kind(&self) -> &'static str {
        match self.decision.kind {
            Kind::Zram => "zram",
            Kind::Zswap => "zswap",
            Kind::Keep => "keep",
            Kind::None => "none",
        }
    }

    pub fn chosen(&self) -> Option<&Candidate> {
        self.decision.chosen(&self.candidates)
    }

    pub fn proactive(&self) -> Option<&Proactive> {
        self.decision.proactive.as_ref()
    }

    /// The agent to run: the decision's, where it has one, applies something, and `no` is
    /// not asked; else why none runs (none where the decision has no proactive reclaim).
    pub fn agent(&self, no: bool) -> Result<AgentConfig, Option<String>> {
        let Some(p) = self.proactive() else { return Err(None) };
        if no {
            return Err(Some("--no-proactive: the decision's proactive reclaim is not run".into()));
        }
        if !matches!(self.decision.kind, Kind::Zram | Kind::Zswap) {
            return Err(Some(format!(
                "proactive reclaim is not run for a {} decision: it would page out to swap \
                 areas that are not ours",
                self.kind()
            )));
        }
        p.agent.clone().ok_or_else(|| {
            Some(format!(
                "proactive reclaim by {} is not run here (only process_madvise's agent is)",
                mechanism(p)
            ))
        })
    }

    /// The DAMON scheme to start: the decision's, where it has one, applies something, and
    /// `no` is not asked.
    pub fn damon(&self, no: bool) -> Option<DamonPageout> {
        let p = self.proactive().filter(|p| p.mechanism == Mechanism::Damon && !no)?;
        matches!(self.decision.kind, Kind::Zram | Kind::Zswap).then(|| p.damon.clone()).flatten()
    }

    /// The memory.reclaim driver to run: the decision's, where it has one, applies something,
    /// and `no` is not asked.
    pub fn memory_reclaim(&self, no: bool) -> Option<MemcgReclaim> {
        let p = self.proactive().filter(|p| p.mechanism == Mechanism::MemoryReclaim && !no)?;
        matches!(self.decision.kind, Kind::Zram | Kind::Zswap)
            .then(|| p.memory_reclaim.clone())
            .flatten()
    }

    /// What the decision predicts, with proactive reclaim running or not.
    pub fn predicted(&self, proactive_runs: bool) -> Predicted {
        let d = &self.decision;
        let named = d.operating_point.as_ref().map(|o| o.named);
        let nothing = !matches!(d.kind, Kind::Zram | Kind::Zswap);
        // The headline is at the cold age because reclaim moves cold memory out; without it,
        // what reclaim moves out today.
        let today = (!proactive_runs && named == Some(Named::ColdAge) && !nothing)
            .then(|| self.chosen().map(|c| c.at_today))
            .flatten();
        if let Some(at) = today {
            return Predicted {
                memory_saved_bytes: at.memory_saved_bytes,
                memory_saved_ci: at.memory_saved_ci,
                moved_out_bytes: at.moved_out_bytes,
                swap_ins_per_sec: 0.0,
                operating_point: "today".into(),
                note: Some(
                    "proactive reclaim does not run: the chosen candidate at today's pressure"
                        .into(),
                ),
            };
        }
        // At the point the saving is at: the chosen candidate's there, else the size's, else
        // what today's pressure moves out.
        let at_named = named.and_then(|n| self.chosen()?.at_point(n));
        let moved = match (self.proactive().filter(|_| proactive_runs), at_named, &d.sizing) {
            (Some(p), _, _) => p.moves_bytes,
            (None, Some(at), _) => at.moved_out_bytes,
            (None, None, Some(s)) => s.moved_out_bytes,
            (None, None, None) => d.operating_point.as_ref().map_or(0, |o| o.today.moved_out_bytes),
        };
        let promoted =
            self.proactive().filter(|_| proactive_runs).map_or(0.0, |p| p.promoted_bytes_per_sec);
        Predicted {
            memory_saved_bytes: d.memory_saved_bytes,
            memory_saved_ci: d.memory_saved_ci,
            moved_out_bytes: if nothing { 0 } else { moved },
            swap_ins_per_sec: promoted / self.page_size.max(1) as f64,
            operating_point: named.map_or("none".into(), named_text),
            note: None,
        }
    }

    /// `p` for a watch of `seconds`: the agent can hold back (the decision's
    /// `held_back_bytes`) only what came back and then stayed idle for T, so at most the
    /// return over the watch less T, not yet its steady state's [`HELD_IDLE_MAX_T`] T. The
    /// interval's low end comes up by the rest.
    pub fn within(&self, p: Predicted, seconds: u64) -> Predicted {
        let Some(k) = self.proactive().filter(|k| k.held_back_saved_bytes > 0) else { return p };
        let steady = (HELD_IDLE_MAX_T as u64).saturating_mul(k.cold_age_secs).max(1);
        let f = (seconds.saturating_sub(k.cold_age_secs) as f64 / steady as f64).min(1.0);
        let rest = (k.held_back_saved_bytes as f64 * (1.0 - f)).round() as i64;
        let ci = [(p.memory_saved_ci[0] + rest).min(p.memory_saved_bytes), p.memory_saved_ci[1]];
        Predicted { memory_saved_ci: ci, ..p }
    }

    /// The share of the cold bytes at `t` seconds that `pids` held when the lab read its cold
    /// curve: a prediction for the whole machine scaled to the processes `--pid` names. None
    /// where the curve has no such age or no cold bytes.
    pub fn share(&self, pids: &[u32], t: u64) -> Option<f64> {
        let c = self.cold.as_ref()?;
        let i = c.ages_secs.iter().position(|&a| a == t)?;
        // The cold bytes the decision moves: without the processes it leaves out (their own
        // idle memory comes back over the promotion budget), which move nothing.
        let k = self.decision.operating_point.as_ref().and_then(|o| o.cold.as_ref());
        let left: Vec<u32> = k.map_or(Vec::new(), |k| k.left_out.iter().map(|p| p.pid).collect());
        let total = k.map_or(c.cold_bytes_at_age.get(i).copied(), |k| Some(k.cold_bytes))?;
        let ours: u64 = c
            .per_process
            .iter()
            .filter(|p| pids.contains(&p.pid) && p.exited_before_secs.is_none())
            .filter(|p| !left.contains(&p.pid))
            .filter_map(|p| p.cold_bytes_at_age.get(i))
            .sum();
        (total > 0).then(|| (ours as f64 / total as f64).min(1.0))
    }

    /// `p` scaled to the processes `pids` names ([`Self::share`]), where the curve says.
    pub fn scoped(&self, p: Predicted, pids: &[u32]) -> Predicted {
        let t = self.proactive().map(|k| k.cold_age_secs);
        let Some(f) = t.and_then(|t| self.share(pids, t)) else { return p };
        let scale = |b: i64| (b as f64 * f).round() as i64;
        Predicted {
            memory_saved_bytes: scale(p.memory_saved_bytes),
            memory_saved_ci: [scale(p.memory_saved_ci[0]), scale(p.memory_saved_ci[1])],
            moved_out_bytes: (p.moved_out_bytes as f64 * f).round() as u64,
            swap_ins_per_sec: p.swap_ins_per_sec * f,
            note: Some(format!(
                "scaled to the --pid processes: {:.1} % of the cold bytes at T when the lab read them",
                100.0 * f
            )),
            ..p
        }
    }

    /// What to set up.
    pub fn store(&self) -> Store {
        let d = &self.decision;
        let c = self.chosen();
        let moved = self.predicted(true).moved_out_bytes;
        let default = DEFAULT_DISKSIZE.max(moved.saturating_mul(2)).div_ceil(1 << 20) << 20;
        match (d.kind, c.map(|c| &c.config)) {
            (Kind::Zram, Some(Config::Zram { policy })) => {
                let extra = !policy.recomp.is_empty() || policy.recompress.is_some() || policy.dict;
                Store::Zram {
                    algorithm: policy.algo.clone(),
                    disksize: d.sizing.as_ref().map_or(default, |s| s.disksize_bytes),
                    mem_limit: d.sizing.as_ref().map(|s| s.mem_limit_bytes).filter(|&l| l > 0),
                    note: extra.then(|| {
                        format!(
                            "{} is applied as its primary {} alone (recompression and \
                             dictionaries are the apply script's)",
                            d.config, policy.algo
                        )
                    }),
                }
            }
            (Kind::Zswap, Some(Config::Zswap { params, .. })) => {
                let mut params = params.clone();
                if let Some(p) = d.sizing.as_ref().and_then(|s| s.max_pool_percent) {
                    params.max_pool_percent = p;
                }
                let behind = d.swap_behind.as_ref().map_or(0, |b| b.size_bytes);
                Store::Zswap { params, swap_bytes: behind.max(default) }
            }
            (Kind::Zram | Kind::Zswap, _) => {
                Store::Nothing("the decision's chosen candidate is missing from the report".into())
            }
            (Kind::Keep, _) => {
                Store::Nothing(format!("the decision is to keep {}: nothing to apply", d.config))
            }
            (Kind::None, _) => Store::Nothing(format!(
                "the decision is none ({}): nothing to apply",
                match d.reason {
                    Reason::TooFewPages { measured_pages, min_pages } => format!(
                        "{measured_pages} pages measured, fewer than the {min_pages} the lab needs"
                    ),
                    _ => "this kernel runs none of the lab's configurations".into(),
                }
            )),
        }
    }
}

/// The lab's name of an operating point.
fn named_text(n: Named) -> String {
    match n {
        Named::Today => "today",
        Named::ColdAge => "cold_age",
        Named::AllPages => "all_pages",
    }
    .into()
}

/// A proactive reclaim's mechanism by its JSON name (`process_madvise`).
pub fn mechanism(p: &Proactive) -> &'static str {
    match p.mechanism {
        Mechanism::Damon => "damon",
        Mechanism::MemoryReclaim => "memory_reclaim",
        Mechanism::ProcessMadvise => "process_madvise",
    }
}

#[cfg(test)]
mod tests;
