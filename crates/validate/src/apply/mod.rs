//! `zmem validate apply`: the lab's decision proved on the live machine. It applies the
//! decision with a set-up of its own ([`setup`]: a zram swap device, or zswap's parameters and
//! a swap file behind them), runs the decision's proactive reclaim ([`agent`]: zmem-kernel's
//! reclaim agent on a thread), watches for the time asked ([`watch`], [`sample`]), compares
//! what the machine realized with what the decision predicted ([`report`]), undoes every change
//! in the opposite order ([`undo`]) and checks that the machine reads as it did before
//! ([`machine`]). [`plan`] reads the decision; [`request`] is what a user asks.
//!
//! Nothing the machine had is touched: its swap areas, its zram devices and its kdamonds are
//! only read. The set-up is undone on every way out (an event, an error, SIGINT/SIGTERM
//! through the stop flag, a panic through the undo stack's drop) but SIGKILL, and where the
//! kernel cannot give a swap area back (a swapoff without the memory for it) the report says
//! what is left and how to remove it.

pub mod agent;
pub mod damon;
pub mod machine;
pub mod plan;
pub mod report;
pub mod request;
pub mod sample;
pub mod setup;
pub mod undo;
pub mod watch;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use zmem_kernel::reclaim::{AgentConfig, Exclude};

pub use plan::Plan;
pub use report::{ApplyReport, Predicted, Realized, Sample, Within};
pub use request::ValidateApplyRequest;

use agent::{AgentThread, Shared};
use sample::Reader;
use setup::Target;
use undo::UndoStack;
use watch::{Judge, Watch, Watched};

/// `s` on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How to run it: how long, how often, and what the agent may page out (its `Default`:
/// `zmem validate apply`'s defaults, in `request.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyConfig {
    /// How long to watch, in seconds (the CLI's `--minutes` times 60).
    pub seconds: u64,
    /// A sample this often.
    pub every: Duration,
    /// Only these processes are paged out (and watched); none: every user process.
    pub pids: Option<Vec<u32>>,
    /// Never paged out (zmem itself always).
    pub exclude: Exclude,
    pub no_proactive: bool,
    /// Where zswap's swap file goes.
    pub swap_dir: PathBuf,
}

/// The agent's configuration for the watch: the decision's, with `--pid`, `--exclude`, zmem
/// itself excluded and the prediction carried.
pub fn agent_config(mut a: AgentConfig, cfg: &ApplyConfig, p: &Predicted) -> AgentConfig {
    if let Some(pids) = &cfg.pids {
        a.pids = Some(pids.clone());
    }
    let x = &cfg.exclude;
    a.exclude.pids.extend(x.pids.iter().copied().chain([std::process::id()]));
    a.exclude.comms.extend(x.comms.iter().cloned());
    a.exclude.cgroups.extend(x.cgroups.iter().cloned());
    a.predicted = Some(zmem_kernel::reclaim::Predicted {
        moved_out_bytes: p.moved_out_bytes,
        swap_ins_per_sec: p.swap_ins_per_sec,
        memory_saved_bytes: p.memory_saved_bytes,
    });
    a
}

fn memcg_line(m: &zmem_kernel::reclaim::memcg::MemcgReclaim) -> String {
    let cgroups: Vec<String> =
        m.targets.iter().map(|t| format!("{} ({} MiB)", t.path, t.bytes >> 20)).collect();
    format!(
        "started the memory.reclaim driver: each cgroup asked for its memory idle for T = {} s \
         every {} s, CPU budget {} % of a core, left alone over its own PSI some avg10 {} %: {}",
        m.cold_age_secs,
        m.period_secs,
        m.cpu_budget_percent,
        m.psi_some_avg10_limit,
        cgroups.join(", ")
    )
}

fn agent_line(a: &AgentConfig) -> String {
    let who = match &a.pids {
        Some(p) => {
            format!("processes {}", p.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
        }
        None => "every user process".into(),
    };
    format!(
        "started the proactive-reclaim agent (process_madvise): memory idle for T = {} s paged \
         out, a look every {} s, CPU budget {} % of a core, paused over PSI some avg10 {} %; \
         {who} (zmem itself excluded)",
        a.cold_age_secs, a.period_secs, a.cpu_budget_percent, a.psi_some_avg10_limit
    )
}

/// The set-up: the store, then the agent. An error undoes what was made first.
fn set_up(
    plan: &Plan,
    cfg: &ApplyConfig,
    agent: Option<AgentConfig>,
    undo: &mut UndoStack,
    changes: &mut Vec<String>,
) -> Result<(Target, Option<(Shared, AgentThreadFailed)>), String> {
    let target = setup::set_up(&plan.store(), &cfg.swap_dir, undo, changes)?;
    let Some(a) = agent.filter(|_| target != Target::Nothing) else { return Ok((target, None)) };
    // The agent never outlives the watch, however the watch ends.
    let limit = Duration::from_secs(cfg.seconds) + Duration::from_secs(5);
    let line = agent_line(&a);
    let (thread, shared) = AgentThread::start(a, limit)?;
    let failed = thread.failed();
    undo.push(Box::new(thread));
    changes.push(line);
    Ok((target, Some((shared, failed))))
}

type AgentThreadFailed = std::sync::Arc<std::sync::Mutex<Option<String>>>;

/// Undoes `undo` and says whether every change was undone, the outcomes in `events`.
fn undo_all(undo: &mut UndoStack, events: &mut Vec<String>) -> bool {
    let mut all = true;
    for o in undo.undo() {
        match o {
            Ok(line) => events.push(format!("undo: {line}")),
            Err(e) => {
                all = false;
                events.push(format!("undo failed: {e}"));
            }
        }
    }
    all
}

/// The error of a set-up that failed, once what it made is undone.
fn failed_set_up(e: String, undo: &mut UndoStack, before: &machine::Machine) -> String {
    undo_all(undo, &mut Vec::new());
    let d = machine::differs(before, &machine::Machine::read());
    let left = if d.is_empty() { String::new() } else { format!("; left: {}", d.join("; ")) };
    one_line(&format!("setting up: {e} (what was made is undone{left})"))
}

/// Watches `target` (and the agent, where one runs) as `cfg` asks; what it saw and realized.
fn watch(
    target: Target,
    agent: Option<(Shared, AgentThreadFailed)>,
    cfg: &ApplyConfig,
    settled: Option<u64>,
    stop: &AtomicBool,
    line: &mut dyn FnMut(&str),
) -> (Watched, Realized) {
    let ps = zmem_kernel::capture::system_page_size() as u64;
    let pids = cfg.pids.clone().unwrap_or_default();
    let failed = agent.as_ref().map(|a| a.1.clone());
    let reader = Reader::new(target, ps, pids.clone(), agent.map(|a| a.0));
    let judge = Judge::new(pids, low_watermark(ps), ps);
    let watch = Watch {
        reader: &reader,
        judge,
        seconds: cfg.seconds,
        every: cfg.every,
        stop,
        agent_failed: failed,
    };
    let w = watch.run(line);
    let realized = realized(&reader, &w, settled);
    (w, realized)
}

/// Applies `plan`, watches, undoes and reports (module doc). `line` gets the progress lines.
pub fn run(
    plan: &Plan,
    cfg: &ApplyConfig,
    stop: &AtomicBool,
    line: &mut dyn FnMut(&str),
) -> Result<ApplyReport, String> {
    let before = machine::Machine::read();
    let tool = KernelTool::of(plan, cfg.no_proactive);
    let agent = if tool.is_some() { Err(None) } else { plan.agent(cfg.no_proactive) };
    let predicted = plan.predicted(agent.is_ok() || tool.is_some());
    let predicted = if agent.is_ok() { plan.within(predicted, cfg.seconds) } else { predicted };
    let predicted = match (&cfg.pids, agent.is_ok()) {
        (Some(pids), true) => plan.scoped(predicted, pids),
        _ => predicted,
    };
    let mut events: Vec<String> = agent.as_ref().err().cloned().flatten().into_iter().collect();
    let cfg = &if tool.is_some() { machine_wide(cfg, &mut events) } else { cfg.clone() };
    let agent = agent.ok().map(|a| agent_config(a, cfg, &predicted));
    // Promotion is the rate idle memory comes back once the first pass is over: the agent's
    // sample at T, the rest a period later, and the sampled hot pages back within the next
    // period (the kernel tools': [`KernelTool::settled`]).
    let (cold_age, settled) = match (&agent, &tool) {
        (Some(a), _) => (Some(a.cold_age_secs), Some(a.cold_age_secs + 2 * a.period_secs)),
        (None, Some(t)) => (Some(t.cold_age_secs()), Some(t.settled())),
        (None, None) => (None, None),
    };
    events.extend(agent.as_ref().and_then(|a| too_short(cfg.seconds, a)));
    let (mut undo, mut changes) = (UndoStack::default(), Vec::new());
    let (target, agent) = set_up(plan, cfg, agent, &mut undo, &mut changes)
        .map_err(|e| failed_set_up(e, &mut undo, &before))?;
    let started = match tool.filter(|_| target != Target::Nothing) {
        Some(t) => Some(
            t.start(cfg.seconds, &mut undo, &mut changes)
                .map_err(|e| failed_set_up(e, &mut undo, &before))?,
        ),
        None => None,
    };
    let (agent, kdamond, mechanism) = match started {
        Some(Started::Driver(a)) => (Some(a), None, "memory_reclaim"),
        Some(Started::Kdamond(k)) => (agent, Some(k), "damon"),
        None => (agent, None, "process_madvise"),
    };
    let reclaims = agent.is_some() || kdamond.is_some();
    let cold_age = cold_age.filter(|_| reclaims);
    let settled = settled.filter(|_| reclaims);
    if target != Target::Nothing {
        events.extend(machine_reclaim());
    }
    let ours = ours(target.swap_area(), &plan.store());
    let (w, mut realized) = watch(target, agent, cfg, settled, stop, line);
    if let Some(cpu) = kdamond.and_then(|k| k.cpu_seconds()).filter(|_| realized_secs(&w) > 0.0) {
        realized.cpu_seconds_per_second = cpu / realized_secs(&w);
        realized.cpu_note = DAMON_CPU_NOTE.into();
    }
    events.extend(w.events.iter().cloned());
    let undone = undo_all(&mut undo, &mut events);
    let differs = machine::differs(&before, &machine::Machine::read());
    let (differs, left) = machine::attribute(differs, &ours);
    let within = report::within(&predicted, &realized);
    Ok(ApplyReport {
        decision_kind: plan.kind().into(),
        config: plan.decision.config.clone(),
        mechanism: cold_age.map(|_| mechanism.into()),
        cold_age_secs: cold_age,
        seconds_asked: cfg.seconds,
        seconds: w.samples.last().map_or(0.0, |s| s.t_secs),
        ended_early: w.ended_early,
        events,
        changes,
        restored: undone && !left,
        differs,
        predicted,
        realized,
        samples: w.samples,
        within,
    })
}

/// Seconds after T by which DAMON has paged out what was idle for T when it started: its
/// regions age once per 100 ms aggregation and its quota resets every second.
const DAMON_SETTLE_SECS: u64 = 10;

/// `cfg` for a kernel tool, which cannot be kept to processes: without `--pid` (said where it
/// was given), so the prediction and the figures are the machine's.
fn machine_wide(cfg: &ApplyConfig, events: &mut Vec<String>) -> ApplyConfig {
    if cfg.pids.is_some() {
        events.push(
            "--pid: the kernel's tool reclaims from every process (DAMON monitors physical \
             memory; memory.reclaim takes from whole cgroups), so the prediction and the \
             figures are the machine's"
                .into(),
        );
    }
    ApplyConfig { pids: None, ..cfg.clone() }
}

/// A decision's proactive reclaim by one of the kernel's tools.
enum KernelTool {
    Damon(zmem_kernel::reclaim::damon::DamonPageout),
    MemoryReclaim(zmem_kernel::reclaim::memcg::MemcgReclaim),
}

/// What a kernel tool's start left running.
enum Started {
    /// The memory.reclaim driver's thread, watched as the agent's is.
    Driver((Shared, AgentThreadFailed)),
    Kdamond(damon::Running),
}

impl KernelTool {
    fn of(plan: &Plan, no: bool) -> Option<Self> {
        plan.damon(no).map(Self::Damon).or_else(|| plan.memory_reclaim(no).map(Self::MemoryReclaim))
    }

    fn cold_age_secs(&self) -> u64 {
        match self {
            Self::Damon(s) => s.cold_age_secs,
            Self::MemoryReclaim(m) => m.cold_age_secs,
        }
    }

    /// When its first pass is over: DAMON's within its quota's next seconds, the driver's two
    /// periods after T.
    fn settled(&self) -> u64 {
        match self {
            Self::Damon(s) => s.cold_age_secs + DAMON_SETTLE_SECS,
            Self::MemoryReclaim(m) => m.cold_age_secs + 2 * m.period_secs,
        }
    }

    /// Starts it for a watch of `seconds`, its stop on `undo`.
    fn start(
        self,
        seconds: u64,
        undo: &mut UndoStack,
        changes: &mut Vec<String>,
    ) -> Result<Started, String> {
        match self {
            Self::Damon(s) => {
                let (k, step, line) = damon::Running::start(&s)?;
                undo.push(step);
                changes.push(line);
                Ok(Started::Kdamond(k))
            }
            Self::MemoryReclaim(m) => {
                let line = memcg_line(&m);
                let limit = Duration::from_secs(seconds) + Duration::from_secs(5);
                let (thread, shared) = AgentThread::start_memcg(m, limit)?;
                let failed = thread.failed();
                undo.push(Box::new(thread));
                changes.push(line);
                Ok(Started::Driver((shared, failed)))
            }
        }
    }
}

/// What the CPU figure is with DAMON.
const DAMON_CPU_NOTE: &str = "the kdamond thread's own CPU time (its /proc/PID/stat): monitoring, \
     and reclaim with the compression of every page it pages out (DAMON runs them in its \
     context); the decompression at each swap-in is charged to the program that faulted, and \
     the kernel's own reclaim (kswapd) to no one here, so neither is counted";

fn realized_secs(w: &Watched) -> f64 {
    w.samples.last().map_or(0.0, |s| s.t_secs)
}

/// Said where the watch ends before the agent's second page-out: it looks at T after its first
/// look, so by then only what it moved at T is out, and nothing has had a period to come back.
pub fn too_short(seconds: u64, a: &AgentConfig) -> Option<String> {
    let needs = a.cold_age_secs + 2 * a.period_secs;
    (seconds < needs).then(|| {
        format!(
            "the watch ({seconds} s) is shorter than T + two of the agent's periods ({needs} s): \
             its first page-out comes at T = {} s, so the figures at the end may show little of \
             what the decision predicts (a longer --minutes shows it)",
            a.cold_age_secs
        )
    })
}

/// The machine's own proactive reclaim of anonymous memory (running kdamond schemes), which
/// pages out into whichever swap area is first: ours, during the watch.
fn machine_reclaim() -> Vec<String> {
    let admin =
        std::path::Path::new(machine::KDAMONDS).parent().unwrap_or(std::path::Path::new("/"));
    zmem_kernel::record::damon::anon_pageout(admin)
        .iter()
        .map(|a| {
            format!(
                "the machine's own {}: what it pages out lands in this run's swap area too, \
                 beside the decision's reclaim",
                a.describe()
            )
        })
        .collect()
}

/// The names of what this run made, as [`machine::differs`] words them.
fn ours(area: Option<&str>, store: &plan::Store) -> Vec<String> {
    let mut v: Vec<String> = area.into_iter().map(str::to_string).collect();
    if let Some(n) = area.and_then(|a| a.strip_prefix("/dev/")) {
        v.push(n.to_string());
    }
    if matches!(store, plan::Store::Zswap { .. }) {
        v.push("zswap".into());
    }
    v
}

/// The low watermark summed over the zones, bytes (0 where /proc/zoneinfo cannot be read).
fn low_watermark(page_size: u64) -> u64 {
    std::fs::read_to_string("/proc/zoneinfo").map_or(0, |t| {
        let zones = zmem_kernel::pressure::parse_zoneinfo(&t);
        zmem_kernel::pressure::Watermarks::of(&zones, page_size).low_bytes
    })
}

/// What the machine realized: the samples' figures ([`report::from_samples`]), the store's
/// and the agent's read at the end of the watch (before the undo).
/// What the watch realized; swap-ins from `settled` (the agent's first pass over) on.
fn realized(reader: &Reader, w: &Watched, settled: Option<u64>) -> Realized {
    let r = report::from_samples(&w.samples, !reader.pids.is_empty(), settled.unwrap_or(0) as f64);
    let agent = reader.agent.as_ref().map(Shared::get);
    let secs = w.samples.last().map_or(0.0, |s| s.t_secs);
    Realized {
        cpu_seconds_per_second: agent.filter(|_| secs > 0.0).map_or(0.0, |a| a.cpu_seconds / secs),
        zram: reader.zram(),
        zswap: reader.zswap(),
        agent,
        ..r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minute's watch of pid 42, excluding what `exclude` names.
    fn of_pid_42(exclude: Exclude) -> ApplyConfig {
        ApplyConfig {
            seconds: 60,
            every: Duration::from_secs(5),
            pids: Some(vec![42]),
            exclude,
            no_proactive: false,
            swap_dir: "/var/tmp".into(),
        }
    }

    /// A kernel tool reclaims from every process: `--pid` is dropped, and said.
    #[test]
    fn a_kernel_tool_watches_the_whole_machine() {
        let cfg = of_pid_42(Exclude::default());
        let mut events = Vec::new();
        assert_eq!(machine_wide(&cfg, &mut events).pids, None);
        assert!(events.len() == 1 && events[0].starts_with("--pid: "), "{events:?}");
        let all = ApplyConfig { pids: None, ..cfg };
        let mut events = Vec::new();
        assert_eq!(machine_wide(&all, &mut events), all);
        assert!(events.is_empty());
    }

    #[test]
    fn a_watch_shorter_than_the_agents_first_page_outs_is_said() {
        let a = AgentConfig::new(60);
        assert_eq!(a.period_secs, 15);
        assert!(
            too_short(60, &a)
                .unwrap()
                .contains("shorter than T + two of the agent's periods (90 s)")
        );
        assert_eq!(too_short(90, &a), None);
    }

    #[test]
    fn the_agent_takes_the_pids_asked_and_never_pages_zmem_out() {
        let cfg = of_pid_42(Exclude { comms: vec!["sshd".into()], ..Exclude::default() });
        let p =
            plan::Plan::from_json(include_str!("../../tests/fixtures/apply-zram-proactive.json"))
                .unwrap();
        let predicted = p.predicted(true);
        let a = agent_config(p.agent(false).unwrap(), &cfg, &predicted);
        assert_eq!(a.pids, Some(vec![42]));
        assert!(a.exclude.pids.contains(&std::process::id()));
        assert_eq!(a.exclude.comms, ["sshd"]);
        let want = zmem_kernel::reclaim::Predicted {
            moved_out_bytes: predicted.moved_out_bytes,
            swap_ins_per_sec: predicted.swap_ins_per_sec,
            memory_saved_bytes: predicted.memory_saved_bytes,
        };
        assert_eq!(a.predicted, Some(want));
        assert!(a.check().is_ok());
        let all =
            agent_config(p.agent(false).unwrap(), &ApplyConfig { pids: None, ..cfg }, &predicted);
        assert_eq!(all.pids, None, "every user process");
        assert_eq!(
            ours(Some("/dev/zram3"), &plan::Store::Nothing(String::new())),
            ["/dev/zram3", "zram3"]
        );
    }
}
