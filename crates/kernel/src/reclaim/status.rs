//! What the agent has done ([`AgentStats`]) and the status file the exporter reads
//! ([`AgentStatus`]).

use serde::{Deserialize, Serialize};

use super::AgentConfig;

/// The status file's schema version.
pub const STATUS_SCHEMA: u32 = 1;

/// The agent's counters since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentStats {
    pub ticks: u64,
    /// Paused: PSI over the limit, or swap full.
    pub paused_ticks: u64,
    /// Processes watched at the last tick.
    pub processes: u64,
    /// Verified out by pagemap after the page-out (total).
    pub paged_out_bytes: u64,
    /// Of those, faulted back in since (total).
    pub came_back_bytes: u64,
    /// Paged out by the agent and still out now.
    pub out_bytes: u64,
    /// The agent's own CPU time (reclaim and compression run in process_madvise, in its
    /// context).
    pub cpu_seconds: f64,
    pub last_psi_some_avg10: f64,
    /// Bytes the kernel left in RAM when asked to page them out (shared, unevictable, swap
    /// full), total.
    #[serde(default)]
    pub refused_bytes: u64,
    /// Failures on a process other than its exit (it was left alone that tick), total.
    #[serde(default)]
    pub errors: u64,
}

/// The status file: what the agent runs with and what it has done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentStatus {
    pub schema: u32,
    /// How it pages out: `process_madvise`.
    pub mechanism: String,
    pub started_unix: u64,
    pub updated_unix: u64,
    pub config: AgentConfig,
    pub stats: AgentStats,
    /// Why the last paused tick paused.
    pub last_pause: Option<String>,
    /// The last failure on a process other than its exit, or of the LRU drain.
    #[serde(default)]
    pub last_error: Option<String>,
}
