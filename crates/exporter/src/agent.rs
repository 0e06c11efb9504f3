//! The proactive-reclaim agent's status (`zmem agent`'s file, [`zmem_kernel::reclaim`]) as
//! metrics: what it moved out, what came back, its CPU, its pauses, and beside them the lab's
//! prediction it was started with. The file is read on every scrape where it exists: no file,
//! no agent metrics (not an error); a file that is not a status gives
//! `zmem_agent_status_error 1` and one log line (again only when the reason changes). Tested
//! in tests/agent_scrape.rs, from the fixture status tests/data/agent-status.json.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use prometheus_client::registry::Unit;
use zmem_kernel::reclaim::{AgentStatus, Predicted};

use crate::expose::{Family, Value};

/// The largest status file read: a status is a few KiB (a long exclusion list at most).
pub const MAX_BYTES: u64 = 1 << 20;

/// The agent counts as up while its status was updated within this many periods.
const UP_PERIODS: u64 = 3;

/// Where the exporter reads the agent's status, and the last reason it logged.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub path: PathBuf,
    logged: Arc<Mutex<Option<String>>>,
}

/// What a scrape found at the path.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// No file: no agent runs here (or it never did).
    Absent,
    Status(Box<AgentStatus>),
    /// A file that could not be read or is not a status, and why.
    Corrupt(String),
}

impl Source {
    pub fn new(path: PathBuf) -> Self {
        Self { path, logged: Arc::default() }
    }

    /// This scrape's agent families (logging a corrupt file once per reason).
    pub fn families(&self) -> Vec<Family> {
        let now_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let r = read(&self.path);
        if let Read::Corrupt(why) = &r {
            let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
            if logged.as_deref() != Some(why) {
                eprintln!("zmem exporter: agent status {}: {why}", self.path.display());
                *logged = Some(why.clone());
            }
        }
        families(&r, now_unix)
    }
}

/// Reads the status file at `path`.
pub fn read(path: &Path) -> Read {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Absent,
        Err(e) => return Read::Corrupt(e.to_string()),
    };
    let mut text = Vec::new();
    if let Err(e) = f.take(MAX_BYTES + 1).read_to_end(&mut text) {
        return Read::Corrupt(e.to_string());
    }
    if text.len() as u64 > MAX_BYTES {
        return Read::Corrupt(format!("larger than {MAX_BYTES} bytes: not an agent status"));
    }
    match serde_json::from_slice::<AgentStatus>(&text) {
        Ok(s) => Read::Status(Box::new(s)),
        Err(e) => Read::Corrupt(format!("not an agent status: {e}")),
    }
}

/// The agent's families for what was read, at `now_unix`.
pub fn families(r: &Read, now_unix: u64) -> Vec<Family> {
    let s = match r {
        Read::Absent => return Vec::new(),
        Read::Corrupt(_) => return vec![status_error(1)],
        Read::Status(s) => s,
    };
    // Either way: a status from the future (a clock set back) is not a live agent's either.
    let period = s.config.period_secs.max(1);
    let fresh = now_unix.abs_diff(s.updated_unix) <= UP_PERIODS.saturating_mul(period);
    let mut out =
        vec![status_error(0), one("zmem_agent_up", UP, None, false, Value::U(fresh.into()))];
    out.extend(stats(s));
    if let Some(p) = &s.config.predicted {
        out.extend(predicted(p));
    }
    out
}

const UP: &str = "1 while the proactive-reclaim agent (zmem agent) has updated its status within 3 \
                  periods, else 0.";
const PAGED_OUT: &str = "Anonymous memory the agent paged out (process_madvise MADV_PAGEOUT), \
                         verified gone to swap by pagemap; or, with zmem memcg-reclaim, the \
                         growth of its cgroups' memory.swap.current.";
const CAME_BACK: &str =
    "Of the memory the agent paged out, what was touched and faulted back in since.";
const OUT: &str = "Memory the agent paged out that is still out now.";
const REFUSED: &str = "Memory the kernel left in RAM when the agent asked it to page it out \
                       (shared, unevictable, swap full, touched at once).";
const CPU: &str = "The agent's own CPU time, its page-outs' reclaim and compression included.";
const TICKS: &str = "Looks the agent took.";
const PAUSED: &str = "Looks at which the agent paged nothing out: memory PSI over its limit, or \
                      swap (nearly) full.";
const COLD_AGE: &str = "T: the agent pages out anonymous memory idle for at least this long.";
const PROCESSES: &str = "Processes the agent watched at its last look.";
const P_MOVED: &str = "What the zmem lab predicted the agent would move out (given to zmem \
                       agent), beside zmem_agent_out_bytes.";
const P_SWAP_INS: &str = "Swap-ins per second the zmem lab predicted at the agent's cold age.";
const P_SAVED: &str = "Memory the zmem lab predicted the agent's configuration would save \
                       (negative: it costs memory).";

/// What the agent has done, and its cold age.
fn stats(s: &AgentStatus) -> Vec<Family> {
    use Value::{F, U};
    let (st, b, sec) = (&s.stats, Some(Unit::Bytes), Some(Unit::Seconds));
    vec![
        one("zmem_agent_paged_out", PAGED_OUT, b.clone(), true, U(st.paged_out_bytes)),
        one("zmem_agent_came_back", CAME_BACK, b.clone(), true, U(st.came_back_bytes)),
        one("zmem_agent_out", OUT, b.clone(), false, U(st.out_bytes)),
        one("zmem_agent_refused", REFUSED, b, true, U(st.refused_bytes)),
        one("zmem_agent_cpu", CPU, sec.clone(), true, F(st.cpu_seconds)),
        one("zmem_agent_ticks", TICKS, None, true, U(st.ticks)),
        one("zmem_agent_paused_ticks", PAUSED, None, true, U(st.paused_ticks)),
        one("zmem_agent_cold_age", COLD_AGE, sec, false, U(s.config.cold_age_secs)),
        one("zmem_agent_processes", PROCESSES, None, false, U(st.processes)),
    ]
}

/// The lab's prediction the agent was started with, to set beside what it did.
fn predicted(p: &Predicted) -> Vec<Family> {
    use Value::{F, I, U};
    let b = Some(Unit::Bytes);
    vec![
        one("zmem_agent_predicted_moved_out", P_MOVED, b.clone(), false, U(p.moved_out_bytes)),
        one(
            "zmem_agent_predicted_swap_ins_per_second",
            P_SWAP_INS,
            None,
            false,
            F(p.swap_ins_per_sec),
        ),
        one("zmem_agent_predicted_memory_saved", P_SAVED, b, false, I(p.memory_saved_bytes)),
    ]
}

fn status_error(v: u64) -> Family {
    one(
        "zmem_agent_status_error",
        "1 when the agent's status file exists but could not be read as one (the exporter logs why), else 0.",
        None,
        false,
        Value::U(v),
    )
}

fn one(
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    counter: bool,
    v: Value,
) -> Family {
    Family { name, help, unit, counter, samples: vec![(vec![], v)] }
}
