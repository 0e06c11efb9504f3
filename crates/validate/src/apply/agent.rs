//! The decision's proactive reclaim during the watch: zmem-kernel's reclaim agent on a thread of
//! its own ([`AgentThread`]), its CPU measured on that thread's clock (the watch's own reading
//! is not the agent's), stopped by a flag when the watch ends, on the [`UndoStack`] like every
//! other change so it stops before its swap area goes.
//!
//! [`UndoStack`]: super::undo::UndoStack

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use zmem_kernel::reclaim::memcg::{Driver, MemcgReclaim};
use zmem_kernel::reclaim::{self, Agent, AgentConfig, AgentStats, Reclaimer};

use super::undo::Undo;

/// The calling thread's CPU time, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec the kernel writes; CLOCK_THREAD_CPUTIME_ID is a clock
    // every Linux since 2.6.12 has.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The agent's stats as its last tick left them, read by the watch.
#[derive(Debug, Clone, Default)]
pub struct Shared(Arc<Mutex<AgentStats>>);

impl Shared {
    pub fn get(&self) -> AgentStats {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, s: &AgentStats) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = *s;
    }
}

/// The agent running on its thread.
#[derive(Debug)]
pub struct AgentThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<AgentStats, String>>>,
    stats: Shared,
    /// Why it stopped before it was asked to, once it has.
    failed: Arc<Mutex<Option<String>>>,
}

impl AgentThread {
    /// Starts `config` for at most `limit` (the watch's length: it never outlives it).
    pub fn start(config: AgentConfig, limit: Duration) -> Result<(Self, Shared), String> {
        let agent = Agent::new(config).map_err(|e| e.to_string())?;
        Self::spawn(agent, limit)
    }

    /// Starts the memory.reclaim driver (a cgroup v2 decision's) the same way.
    pub fn start_memcg(config: MemcgReclaim, limit: Duration) -> Result<(Self, Shared), String> {
        let driver = Driver::new(config).map_err(|e| e.to_string())?;
        Self::spawn(driver, limit)
    }

    fn spawn<R: Reclaimer + Send + 'static>(
        mut agent: R,
        limit: Duration,
    ) -> Result<(Self, Shared), String> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Shared::default();
        let failed = Arc::new(Mutex::new(None));
        let (s, st, f) = (stop.clone(), stats.clone(), failed.clone());
        let handle = std::thread::Builder::new()
            .name("zmem-reclaim".into())
            .spawn(move || {
                // The clock is read on this thread from here on: the agent's CPU alone.
                agent.set_cpu_clock(Box::new(thread_cpu_seconds));
                let r = reclaim::run(&mut agent, &s, Some(limit), None, &mut |x| st.set(x));
                match r {
                    Ok(x) => {
                        st.set(&x);
                        Ok(x)
                    }
                    Err(e) => {
                        *f.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                        Err(e.to_string())
                    }
                }
            })
            .map_err(|e| format!("starting the reclaim agent's thread: {e}"))?;
        let me = Self { stop, handle: Some(handle), stats: stats.clone(), failed };
        Ok((me, stats))
    }

    /// A handle on why it failed, read by the watch.
    pub fn failed(&self) -> Arc<Mutex<Option<String>>> {
        self.failed.clone()
    }

    fn stop_and_join(&mut self) -> Result<AgentStats, String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the reclaim agent's thread panicked".into()),
            None => Ok(self.stats.get()),
        }
    }
}

impl Drop for AgentThread {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

impl Undo for AgentThread {
    fn what(&self) -> String {
        "the reclaim agent".into()
    }

    fn undo(mut self: Box<Self>) -> Result<String, String> {
        let s = match self.stop_and_join() {
            Ok(s) => s,
            // Nothing is left running: its failure is the watch's event, not the undo's.
            Err(e) => return Ok(format!("the reclaim agent had stopped: {e}")),
        };
        Ok(format!(
            "stopped the reclaim agent after {} ticks ({} paused): {} MiB paged out, {} MiB \
             came back, {:.2} CPU s (its pages stay out until their swap area goes)",
            s.ticks,
            s.paused_ticks,
            s.paged_out_bytes >> 20,
            s.came_back_bytes >> 20,
            s.cpu_seconds
        ))
    }
}
