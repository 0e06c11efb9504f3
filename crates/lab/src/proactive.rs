//! Proactive reclaim in the decision: what moves the memory idle for T out before pressure
//! comes, so the savings at the cold age happen on a machine whose memory is not short.
//!
//! The lab adds it where this machine has none for anonymous memory (no running kdamond
//! scheme pages it out: zmem-kernel's `record::damon::anon_pageout`), the cold curve reached T,
//! and the memory idle for T comes back within the promotion budget. The mechanism is the
//! first this machine lets zmem use, in the order the kernel's own tools rank (a DAMON scheme
//! in a kdamond of zmem's own, `memory.reclaim` on cgroup v2, then zmem's agent with
//! `process_madvise(MADV_PAGEOUT)`): each one's reason for not being used is kept and said.
//! zmem drives each: DAMON (`zmem damon`: zmem-kernel's `reclaim::damon`), `memory.reclaim`
//! (`zmem memcg-reclaim`: `reclaim::memcg`, each cgroup asked for its cold bytes at T) and the
//! agent. DAMON and `memory.reclaim` cannot spare one process: exclusions by pid or name (and
//! the processes the promotion budget leaves out) send the decision to the agent.
//!
//! The decision's headline is then at the cold age (operating::Named::ColdAge); `--no-proactive`
//! leaves it out and the headline is today's pressure.

use serde::{Deserialize, Serialize};
use zmem_kernel::reclaim::damon::DamonPageout;
use zmem_kernel::reclaim::memcg::{MemcgReclaim, MemcgTarget};
use zmem_kernel::reclaim::{AgentConfig, DEFAULT_CPU_BUDGET_PERCENT, DEFAULT_PSI_LIMIT, Exclude};

use crate::operating::OperatingPoint;

/// The least cold memory worth an agent: under it the report says there is nothing to move.
pub const MIN_COLD_BYTES: u64 = 16 << 20;
/// The least CPU, in percent of a core, the agent is given: less would take hours to move a
/// gigabyte (about 2 CPU seconds a GiB, compression included).
pub const MIN_AGENT_CPU_PERCENT: f64 = 0.05;

/// The kernel's tools for proactive reclaim, in the order the lab prefers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// A DAMON `pageout` scheme for anonymous memory idle for T, in a kdamond of zmem's own.
    Damon,
    /// `memory.reclaim` on cgroup v2.
    MemoryReclaim,
    /// zmem's agent: `process_madvise(MADV_PAGEOUT)` on the ranges idle for T.
    ProcessMadvise,
}

/// What this machine offers for proactive reclaim (read by the request; reads only). Each
/// `Option<String>` is why zmem cannot use that mechanism here, `None` where it could.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Abilities {
    pub damon: Option<String>,
    pub memory_reclaim: Option<String>,
    pub process_madvise: Option<String>,
    /// The machine's own proactive reclaim of anonymous memory (running kdamond schemes),
    /// each `(description, all)`: `all` where every anonymous page passes its filters.
    pub already: Vec<(String, bool)>,
}

/// The lab's options for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// `--no-proactive` sets it false.
    pub wanted: bool,
    /// `--exclude`: never paged out.
    pub exclude: Exclude,
    /// This machine's tools; none where the pages are not this machine's.
    pub abilities: Option<Abilities>,
}

impl Default for Input {
    fn default() -> Self {
        Self { wanted: true, exclude: Exclude::default(), abilities: None }
    }
}

/// The proactive reclaim the decision adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proactive {
    pub mechanism: Mechanism,
    /// Why this mechanism: the reasons the ones before it cannot be used.
    pub why: String,
    pub cold_age_secs: u64,
    /// The cold bytes at T it will move out.
    pub moves_bytes: u64,
    /// What comes back (the measured return of memory idle for T).
    pub promoted_bytes_per_sec: f64,
    /// The agent's pages that came back and are idle for T again, which it holds resident
    /// until their hot mark ages (zmem-kernel's `reclaim::HELD_IDLE_MAX_T`): at most, once it
    /// has run that long, the return times that many T (Little's law), and as few as none
    /// (every page that came back stays hot). The decision's interval reaches down by their
    /// saving (`held_back_saved_bytes`); 0 without the agent.
    #[serde(default)]
    pub held_back_bytes: u64,
    /// What `held_back_bytes` would have saved: how far the interval's low end reaches down.
    #[serde(default)]
    pub held_back_saved_bytes: i64,
    /// The agent's configuration, for `process_madvise`.
    pub agent: Option<AgentConfig>,
    /// The kdamond's scheme, for `damon` (`zmem damon start`).
    #[serde(default)]
    pub damon: Option<DamonPageout>,
    /// The driver's cgroups and targets, for `memory_reclaim` (`zmem memcg-reclaim`).
    #[serde(default)]
    pub memory_reclaim: Option<MemcgReclaim>,
}

/// The mechanism the decision would add at T, or why there is none. Checked before the
/// decision (its headline is at the cold age with one); `decision::attach_proactive`
/// completes it.
pub fn choose(op: &OperatingPoint, x: &Input) -> Result<Proactive, String> {
    if !x.wanted {
        return Err("left out (--no-proactive)".into());
    }
    let Some(a) = &x.abilities else {
        return Err("the pages are not this machine's: proactive reclaim is set up on the \
                    machine the lab reads"
            .into());
    };
    if let Some((what, _)) = a.already.iter().find(|(_, all)| *all) {
        return Err(format!("the machine reclaims anonymous memory proactively already: {what}"));
    }
    let k = op
        .cold
        .as_ref()
        .ok_or_else(|| op.cold_unseen.clone().unwrap_or_else(|| "no cold curve was read".into()))?;
    if k.over_promotion_budget {
        return Err(format!(
            "memory idle for {} s comes back at {:.3} % of the working set a minute, over the \
             promotion budget of {} % (a longer --cold-age may fit it)",
            k.age_secs, k.promotion_percent_per_min, k.promotion_budget_percent_per_min
        ));
    }
    if k.cold_bytes < MIN_COLD_BYTES {
        return Err(format!(
            "only {} MiB has been idle for {} s: not worth moving",
            k.cold_bytes >> 20,
            k.age_secs
        ));
    }
    // The processes whose own idle memory comes back over the budget are never paged out.
    let mut exclude = x.exclude.clone();
    exclude.pids.extend(k.left_out.iter().map(|p| p.pid).filter(|p| !x.exclude.pids.contains(p)));
    let targets = memcg_targets(k, &exclude);
    let (mechanism, why) = mechanism(a, &exclude, &targets)?;
    let damon = (mechanism == Mechanism::Damon).then(|| DamonPageout {
        cold_age_secs: k.age_secs,
        cpu_budget_percent: DEFAULT_CPU_BUDGET_PERCENT,
        psi_some_limit_percent: DEFAULT_PSI_LIMIT,
        exclude_cgroups: exclude.cgroups.clone(),
    });
    let memory_reclaim = (mechanism == Mechanism::MemoryReclaim).then(|| MemcgReclaim {
        cold_age_secs: k.age_secs,
        period_secs: AgentConfig::new(k.age_secs).period_secs,
        cpu_budget_percent: DEFAULT_CPU_BUDGET_PERCENT,
        psi_some_avg10_limit: DEFAULT_PSI_LIMIT,
        targets: targets.targets.clone(),
        predicted: None,
    });
    let agent = (mechanism == Mechanism::ProcessMadvise)
        .then(|| AgentConfig { exclude, ..AgentConfig::new(k.age_secs) });
    Ok(Proactive {
        mechanism,
        why,
        cold_age_secs: k.age_secs,
        moves_bytes: k.cold_bytes,
        promoted_bytes_per_sec: k.promoted_bytes_per_sec,
        held_back_bytes: 0,
        held_back_saved_bytes: 0,
        agent,
        damon,
        memory_reclaim,
    })
}

/// The share of the cold bytes `memory.reclaim` must reach for it to be the mechanism: what
/// sits in the root cgroup or in excluded ones it cannot take.
pub const MEMCG_REACH: f64 = 0.9;

/// The cgroups `memory.reclaim` would be asked for, and the cold bytes it cannot reach.
#[derive(Debug, Default)]
struct Targets {
    targets: Vec<MemcgTarget>,
    unreached: u64,
}

/// The cold bytes at T by v2 cgroup, as paths from the v2 root: the root itself (its
/// memory.reclaim would take from every cgroup, excluded ones too) and excluded cgroups left
/// out; the cold bytes no target holds are unreached.
fn memcg_targets(k: &crate::operating::ColdAt, exclude: &Exclude) -> Targets {
    let mut t = Targets::default();
    for (cg, &bytes) in &k.cold_by_cgroup {
        let rel = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
            .iter()
            .find_map(|root| cg.strip_prefix(root))
            .filter(|r| r.starts_with('/') && r.len() > 1);
        let excluded = |r: &str| {
            exclude
                .cgroups
                .iter()
                .any(|x| r == x || r.starts_with(&format!("{}/", x.trim_end_matches('/'))))
        };
        if let Some(r) = rel.filter(|r| !excluded(r) && bytes > 0) {
            t.targets.push(MemcgTarget { path: r.to_string(), bytes });
        }
    }
    // What the root, excluded cgroups and processes of no known cgroup hold.
    let reached: u64 = t.targets.iter().map(|x| x.bytes).sum();
    t.unreached = k.cold_bytes.saturating_sub(reached);
    t
}

/// The first mechanism zmem can use here, and why the ones before it are not used. DAMON
/// cannot honour exclusions by pid or name: a physical page's filters know its memory cgroup,
/// not its process.
fn mechanism(
    a: &Abilities,
    exclude: &Exclude,
    targets: &Targets,
) -> Result<(Mechanism, String), String> {
    let by_process: Vec<String> = exclude
        .pids
        .iter()
        .map(|p| format!("pid {p}"))
        .chain(exclude.comms.iter().cloned())
        .collect();
    let damon = match &a.damon {
        Some(why) => why.clone(),
        None if by_process.is_empty() => {
            return Ok((
                Mechanism::Damon,
                "DAMON's admin interface is free: a kdamond of zmem's own pages out with a \
                 DAMON scheme (the kernel's own proactive reclaim)"
                    .into(),
            ));
        }
        None => format!(
            "the admin interface is free, but its filters know a page's memory cgroup, not its \
             process, and {} must never be paged out",
            by_process.join(", ")
        ),
    };
    let reached: u64 = targets.targets.iter().map(|t| t.bytes).sum();
    let share = reached as f64 / (reached + targets.unreached).max(1) as f64;
    let reclaim = match &a.memory_reclaim {
        Some(why) => why.clone(),
        None if !by_process.is_empty() => format!(
            "it reclaims a whole cgroup, and {} must never be paged out",
            by_process.join(", ")
        ),
        None if share < MEMCG_REACH => format!(
            "only {:.0} % of the cold bytes are in cgroups it may be asked for (the rest in the \
             root cgroup, excluded ones, or processes of no known cgroup)",
            100.0 * share
        ),
        None => {
            return Ok((
                Mechanism::MemoryReclaim,
                format!(
                    "DAMON: {damon}; so zmem memcg-reclaim asks cgroup v2's memory.reclaim of {} \
                     cgroup(s) for their cold bytes",
                    targets.targets.len()
                ),
            ));
        }
    };
    let tried = format!("DAMON: {damon}; memory.reclaim: {reclaim}");
    match &a.process_madvise {
        None => Ok((
            Mechanism::ProcessMadvise,
            format!("{tried}; so zmem's agent pages out with process_madvise(MADV_PAGEOUT)"),
        )),
        Some(no) => Err(format!("no mechanism zmem can use: {tried}; process_madvise: {no}")),
    }
}

#[cfg(test)]
mod tests;
