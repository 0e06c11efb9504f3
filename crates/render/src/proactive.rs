//! The proactive reclaim in the apply script (`zmem_lab::proactive`): the agent's values,
//! checked against their grammars, for `templates/apply-tail.sh`, and the header's lines.

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

/// The agent's values (`ZMEM_AGENT=0` where the decision has none).
pub fn vars(d: &Decision) -> Result<Assignments, ScriptError> {
    let Some(p) = d.proactive.as_ref().filter(|p| p.mechanism == Mechanism::ProcessMadvise) else {
        return Ok(Assignments::default().flag("ZMEM_AGENT", false));
    };
    let Some(a) = &p.agent else {
        return Ok(Assignments::default().flag("ZMEM_AGENT", false));
    };
    let bin = zmem_bin();
    let bin = if bin == "zmem" { bin } else { script::path("zmem binary", &bin)? };
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
        .flag("ZMEM_AGENT", true)
        .text("ZMEM_BIN", &bin)
        .int("ZMEM_AGENT_COLD_AGE", i64::try_from(a.cold_age_secs).unwrap_or(i64::MAX))
        .text("ZMEM_AGENT_CPU_BUDGET", &script::number(f, a.cpu_budget_percent, 100.0)?)
        .text("ZMEM_AGENT_PSI_LIMIT", &script::number(f, a.psi_some_avg10_limit, 100.0)?)
        .text("ZMEM_AGENT_EXCLUDE", &exclude.join(","))
        .int("ZMEM_AGENT_PREDICTED_MOVED_OUT", i64::try_from(pred.moved_out_bytes).unwrap_or(0))
        .text("ZMEM_AGENT_PREDICTED_SWAP_INS", &script::number(f, pred.swap_ins_per_sec, 1e12)?)
        .int("ZMEM_AGENT_PREDICTED_SAVED", pred.memory_saved_bytes))
}

/// What the agent changes (the header's list), where the decision has it.
pub fn change(d: &Decision) -> Option<String> {
    let p = d.proactive.as_ref()?;
    Some(format!(
        "proactive reclaim: zmem agent started, paging out anonymous memory idle for {} s with \
         process_madvise(MADV_PAGEOUT) (its status in /run/zmem/agent.json; stopped by the undo)",
        p.cold_age_secs
    ))
}

/// What it writes to run at every boot.
pub fn persist(d: &Decision) -> Option<String> {
    d.proactive.as_ref()?;
    Some(
        "$ROOT/etc/systemd/system/zmem-agent.service, enabled (the agent at every boot; started \
         through systemd where systemd runs)"
            .into(),
    )
}
