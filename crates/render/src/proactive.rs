//! The proactive reclaim in the apply script (`zmem_lab::proactive`): the agent's values,
//! checked against their grammars, for `templates/apply-tail.sh`, and the header's lines.

use zmem_kernel::reclaim::damon::DamonPageout;
use zmem_kernel::reclaim::memcg::MemcgReclaim;
use zmem_lab::Decision;
use zmem_lab::proactive::Mechanism;

use crate::script::{self, Assignments, ScriptError};

/// The zmem binary the script starts the agent with: this one where it is `zmem` (the CLI),
/// else `zmem` on root's PATH when the script runs (a report rendered elsewhere, e.g. from
/// Python). `ZMEM_AGENT_BIN` overrides it when the script runs.
pub(crate) fn zmem_bin() -> String {
    std::env::current_exe()
        .ok()
        .filter(|p| p.file_name().is_some_and(|n| n == "zmem"))
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| "zmem".into())
}

/// The proactive reclaim's values: the agent's (`ZMEM_AGENT`), the DAMON scheme's
/// (`ZMEM_DAMON`) or the memory.reclaim driver's (`ZMEM_MEMCG`), the other flags 0.
pub fn vars(d: &Decision) -> Result<Assignments, ScriptError> {
    const FLAGS: [&str; 3] = ["ZMEM_AGENT", "ZMEM_DAMON", "ZMEM_MEMCG"];
    let flags = |a: Assignments, on: &str| FLAGS.iter().fold(a, |a, f| a.flag(f, *f == on));
    let Some(p) = d.proactive.as_ref() else { return Ok(flags(Assignments::default(), "")) };
    let (on, a) = match (p.mechanism, &p.agent, &p.damon, &p.memory_reclaim) {
        (Mechanism::ProcessMadvise, Some(a), _, _) => ("ZMEM_AGENT", agent_vars(a)?),
        (Mechanism::Damon, _, Some(s), _) => ("ZMEM_DAMON", damon_vars(s)?),
        (Mechanism::MemoryReclaim, _, _, Some(m)) => ("ZMEM_MEMCG", memcg_vars(m)?),
        _ => return Ok(flags(Assignments::default(), "")),
    };
    let bin = zmem_bin();
    let bin = if bin == "zmem" { bin } else { script::path("zmem binary", &bin)? };
    Ok(flags(a.text("ZMEM_BIN", &bin), on))
}

/// The memory.reclaim driver's values: `zmem memcg-reclaim`'s flags, each target `PATH=BYTES`
/// with its path checked as a cgroup path.
fn memcg_vars(m: &MemcgReclaim) -> Result<Assignments, ScriptError> {
    let f = "proactive.memory_reclaim";
    let mut targets = Vec::new();
    for (i, t) in m.targets.iter().enumerate() {
        let field = format!("proactive.memory_reclaim.targets[{i}]");
        if !t.path.starts_with('/') || t.path.len() < 2 {
            return Err(script::refuse(&field, &t.path, "not a cgroup path below the root"));
        }
        targets.push(format!("{}={}", script::exclude_entry(&field, &t.path)?, t.bytes));
    }
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    Ok(Assignments::default()
        .int("ZMEM_MEMCG_COLD_AGE", int(m.cold_age_secs))
        .int("ZMEM_MEMCG_PERIOD", int(m.period_secs))
        .text("ZMEM_MEMCG_CPU_BUDGET", &script::number(f, m.cpu_budget_percent, 100.0)?)
        .text("ZMEM_MEMCG_PSI_LIMIT", &script::number(f, m.psi_some_avg10_limit, 100.0)?)
        .text("ZMEM_MEMCG_TARGETS", &targets.join(",")))
}

/// The DAMON scheme's values: `zmem damon start`'s flags.
fn damon_vars(s: &DamonPageout) -> Result<Assignments, ScriptError> {
    let f = "proactive.damon";
    let mut exclude = Vec::new();
    for (i, v) in s.exclude_cgroups.iter().enumerate() {
        let field = format!("proactive.damon.exclude_cgroups[{i}]");
        if !v.starts_with('/') {
            return Err(script::refuse(&field, v, "not a cgroup path"));
        }
        exclude.push(script::exclude_entry(&field, v)?);
    }
    Ok(Assignments::default()
        .int("ZMEM_DAMON_COLD_AGE", i64::try_from(s.cold_age_secs).unwrap_or(i64::MAX))
        .text("ZMEM_DAMON_CPU_BUDGET", &script::number(f, s.cpu_budget_percent, 100.0)?)
        .text("ZMEM_DAMON_PSI_LIMIT", &script::number(f, s.psi_some_limit_percent, 100.0)?)
        .text("ZMEM_DAMON_EXCLUDE", &exclude.join(",")))
}

/// The agent's values.
fn agent_vars(a: &zmem_kernel::reclaim::AgentConfig) -> Result<Assignments, ScriptError> {
    let mut exclude: Vec<String> = a.exclude.pids.iter().map(u32::to_string).collect();
    for (i, v) in a.exclude.comms.iter().chain(&a.exclude.cgroups).enumerate() {
        exclude.push(script::exclude_entry(&format!("proactive.agent.exclude[{i}]"), v)?);
    }
    let pred = a.predicted.unwrap_or(zmem_kernel::reclaim::Predicted {
        moved_out_bytes: 0,
        swap_ins_per_sec: 0.0,
        memory_saved_bytes: 0,
    });
    let f = "proactive.agent";
    Ok(Assignments::default()
        .int("ZMEM_AGENT_COLD_AGE", i64::try_from(a.cold_age_secs).unwrap_or(i64::MAX))
        .text("ZMEM_AGENT_CPU_BUDGET", &script::number(f, a.cpu_budget_percent, 100.0)?)
        .text("ZMEM_AGENT_PSI_LIMIT", &script::number(f, a.psi_some_avg10_limit, 100.0)?)
        .text("ZMEM_AGENT_EXCLUDE", &exclude.join(","))
        .int("ZMEM_AGENT_PREDICTED_MOVED_OUT", i64::try_from(pred.moved_out_bytes).unwrap_or(0))
        .text("ZMEM_AGENT_PREDICTED_SWAP_INS", &script::number(f, pred.swap_ins_per_sec, 1e12)?)
        .int("ZMEM_AGENT_PREDICTED_SAVED", pred.memory_saved_bytes))
}

/// What the proactive reclaim changes (the header's list), where the decision has it.
pub fn change(d: &Decision) -> Option<String> {
    let p = d.proactive.as_ref()?;
    Some(match p.mechanism {
        Mechanism::Damon => format!(
            "proactive reclaim: kdamond 0, zmem's own, started with a DAMON pageout scheme for \
             anonymous memory idle for {} s (its pid in /run/zmem/damon.pid; stopped and \
             removed by the undo)",
            p.cold_age_secs
        ),
        Mechanism::MemoryReclaim => format!(
            "proactive reclaim: zmem memcg-reclaim started, asking cgroup v2's memory.reclaim of \
             each cgroup for its anonymous memory idle for {} s (its status in \
             /run/zmem/agent.json; stopped by the undo)",
            p.cold_age_secs
        ),
        _ => format!(
            "proactive reclaim: zmem agent started, paging out anonymous memory idle for {} s \
             with process_madvise(MADV_PAGEOUT) (its status in /run/zmem/agent.json; stopped by \
             the undo)",
            p.cold_age_secs
        ),
    })
}

/// What it writes to run at every boot.
pub fn persist(d: &Decision) -> Option<String> {
    Some(match d.proactive.as_ref()?.mechanism {
        Mechanism::Damon => "$ROOT/etc/systemd/system/zmem-damon.service, enabled (the kdamond \
                             at every boot; started through systemd where systemd runs)"
            .into(),
        Mechanism::MemoryReclaim => "$ROOT/etc/systemd/system/zmem-memcg-reclaim.service, \
                                     enabled (at every boot; started through systemd where \
                                     systemd runs)"
            .into(),
        _ => "$ROOT/etc/systemd/system/zmem-agent.service, enabled (the agent at every boot; \
              started through systemd where systemd runs)"
            .into(),
    })
}
