//! Proactive reclaim (`zmem agent`): a small agent that pages out anonymous memory idle for at
//! least T with `process_madvise(MADV_PAGEOUT)`. It is for machines where the kernel's own
//! proactive reclaim cannot be used: DAMON's admin interface held by another kdamond, a cgroup
//! v1 memory controller (no `memory.reclaim`). Facts below are Linux 6.18's.
//!
//! **Choosing idle pages.** MADV_PAGEOUT pages out a range whatever its young bits
//! (mm/madvise.c `madvise_cold_or_pageout_pte_range()` -> mm/vmscan.c `reclaim_pages()` ->
//! `shrink_folio_list(..., ignore_references=true)`), so the agent must choose. Every T it
//! reads a process's smaps, then writes `2` to its clear_refs (fs/proc/task_mmu.c
//! `clear_refs_write()`: clears the young and referenced bits of its anonymous pages only).
//! A mapping's `Referenced:` (`smaps_account()`) is then the bytes touched over the last T,
//! and its resident anonymous bytes less that are the bytes idle for T. The first look at a
//! process only clears: nothing is known idle until T has passed.
//!
//! **Which pages.** Those counts are per mapping, not per page; the page-out finds which. In
//! a process with at least `min_idle_bytes` idle (a threshold per process: a runtime's heap is
//! often many small mappings, V8's 256 KiB each), a mapping with idle pages and nothing
//! referenced has all its resident pages paged out. One with referenced pages is sampled: one page of each group of 16 goes
//! out; at the next tick (a period later) the groups whose page stayed out follow whole, and
//! those whose page came back stay (hot pages are touched in clusters: a heap's live objects,
//! a cache's hot keys). A page the agent put out that is present again at a later tick was
//! touched: it *came back*, is counted, and is marked hot for 4·T to 8·T. The probe so costs a
//! sixteenth of the hot pages once (measured: 0.4 MiB back of a 6.4 MiB hot tenth), not all of
//! them; after it a mapping's resident set is its hot pages, its `Referenced` matches them, and
//! it is left alone.
//!
//! **Verified by pagemap.** After each page-out (at most 512 pages a call) the pages' pagemap
//! entries are read again: in swap (bit 62) means out; still present means the kernel refused
//! (a page mapped by another process too, unevictable, swap full, touched at once), counted
//! as refused and not retried before the next look. Each tick the agent reads the entries of
//! the pages it holds out: present means came back; neither present nor in swap means the
//! process freed the page (forgotten). State is 2 bits a page in chunks kept only where a
//! page has one (`bits.rs`). Mappings gone or moved, and processes that exit, drop their state;
//! a process whose memory the kernel will not show (EACCES, EPERM) is left alone while it
//! lives; no failure on one process stops the agent.
//!
//! **When it holds back.** Memory PSI `some avg10` over the limit (kernel/sched/psi.c; TMO's
//! operating point is 0.1 %), swap nearly full (SwapFree under 1 % of SwapTotal or 4 MiB) or
//! no swap: that tick pages nothing out. CPU: reclaim and compression run inside
//! process_madvise, in the agent's context, so the process CPU clock counts them. The budget
//! is a bucket that fills by budget × period each tick and holds at most five minutes of it
//! (`cpu::BURST_SECS`): over any five minutes the agent spends at most its budget, and the
//! first pass over memory idle since before it started may take a burst (about 2 CPU seconds a
//! GiB); once it is empty page-outs stop and the rest waits; overspending is owed. Every CPU's LRU add batches are drained once a tick before
//! page-outs (mm/swap.c: a folio faulted in waits there, off the LRU, where MADV_PAGEOUT
//! cannot take it; see [`crate::record::page_out`]).
//!
//! **What it leaves.** Pages it put out stay in swap when it stops; swapoff (or their next
//! touch) brings them back. Clearing referenced bits makes the processes' pages look idle to
//! reclaim too ([`crate::cold`] says what that does). It never looks at kernel threads, itself,
//! or excluded pids, names or cgroups.

mod agent;
mod bits;
mod config;
mod cpu;
pub mod damon;
mod look;
pub mod memcg;
mod procfs;
mod status;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use agent::Agent;
pub use config::{
    AgentConfig, DEFAULT_COLD_AGE_SECS, DEFAULT_CPU_BUDGET_PERCENT, DEFAULT_MIN_IDLE_BYTES,
    DEFAULT_PSI_LIMIT, Exclude, MAX_COLD_AGE_SECS, Predicted, default_period,
};
pub use cpu::{CpuClock, process_cpu_seconds, thread_cpu_seconds};
pub use look::{GROUP_PAGES, HELD_IDLE_MAX_T, HOT_AGES_EVERY_T};
pub use status::{AgentStats, AgentStatus, STATUS_SCHEMA};

use crate::KernelError;
use crate::record::page_out::Pager;

/// Where `zmem agent` writes its status and `zmem exporter` reads it, by default.
pub const DEFAULT_STATUS_PATH: &str = "/run/zmem/agent.json";

/// How long [`run`] sleeps at most before it looks at `stop` again.
const STOP_POLL: Duration = Duration::from_millis(100);

/// What [`run`] drives: the agent, or the memory.reclaim driver ([`memcg::Driver`]).
pub trait Reclaimer {
    /// One period's work.
    fn tick(&mut self, now: Instant) -> Result<(), KernelError>;
    fn period_secs(&self) -> u64;
    fn stats(&self) -> AgentStats;
    /// The status file's JSON.
    fn status_json(&self) -> Result<Vec<u8>, KernelError>;
    /// Measures its CPU budget on `clock` ([`Agent::set_cpu_clock`]).
    fn set_cpu_clock(&mut self, clock: CpuClock);
}

impl<P: Pager> Reclaimer for Agent<P> {
    fn tick(&mut self, now: Instant) -> Result<(), KernelError> {
        Agent::tick(self, now)
    }

    fn period_secs(&self) -> u64 {
        self.config().period_secs
    }

    fn stats(&self) -> AgentStats {
        Agent::stats(self)
    }

    fn status_json(&self) -> Result<Vec<u8>, KernelError> {
        serde_json::to_vec_pretty(&self.status())
            .map_err(|e| KernelError::Invalid(format!("agent status as JSON: {e}")))
    }

    fn set_cpu_clock(&mut self, clock: CpuClock) {
        Agent::set_cpu_clock(self, clock);
    }
}

/// Runs until `stop` is set (or `duration` passes), a tick every period, writing the status
/// file (if given; its directory is made 0755 where missing) after each tick and calling
/// `on_tick`. The status is written once more at the end. Pages the agent put out stay out
/// when it stops (swapoff brings them back).
pub fn run<R: Reclaimer>(
    agent: &mut R,
    stop: &AtomicBool,
    duration: Option<Duration>,
    status_path: Option<&Path>,
    on_tick: &mut dyn FnMut(&AgentStats),
) -> Result<AgentStats, KernelError> {
    if let Some(dir) = status_path.and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        zmem_files::ensure_dir(dir, zmem_files::Kind::Shared)?;
    }
    let start = Instant::now();
    let period = Duration::from_secs(agent.period_secs());
    let ends = |now: Instant| duration.is_some_and(|d| now.duration_since(start) >= d);
    let mut next = start;
    while !stop.load(Ordering::Relaxed) && !ends(Instant::now()) {
        let now = Instant::now();
        if now >= next {
            agent.tick(now)?;
            write_status(agent, status_path)?;
            on_tick(&agent.stats());
            // A period after this tick's start: ticks never come closer than a period, so a
            // process looked at one tick is due again exactly T/period ticks later.
            next = now + period;
            continue;
        }
        let mut nap = (next - now).min(STOP_POLL);
        if let Some(d) = duration {
            nap = nap.min((start + d).saturating_duration_since(now));
        }
        std::thread::sleep(nap.max(Duration::from_millis(1)));
    }
    write_status(agent, status_path)?;
    Ok(agent.stats())
}

/// Writes the status as JSON (0644: the exporter reads it), atomically.
fn write_status<R: Reclaimer>(agent: &R, path: Option<&Path>) -> Result<(), KernelError> {
    let Some(path) = path else { return Ok(()) };
    let mut json = agent.status_json()?;
    json.push(b'\n');
    zmem_files::write(path, zmem_files::Kind::Shared, &json)?;
    Ok(())
}
