//! The agent's CPU budget. The page-out's reclaim and compression run inside process_madvise
//! in the agent's context (mm/madvise.c -> mm/vmscan.c `reclaim_pages()` -> `pageout()` ->
//! the swap device's write, zram compressing there), so the process CPU clock sees all of it.

/// A CPU clock in seconds (the process's, or a test's).
pub type CpuClock = Box<dyn FnMut() -> f64 + Send>;

/// This process's CPU time (user and system, every thread), in seconds: the agent's clock
/// where the agent is the process (`zmem agent`).
pub fn process_cpu_seconds() -> f64 {
    cpu_seconds(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The calling thread's CPU time, in seconds: the clock for an agent run on a thread of its
/// own beside other work ([`super::Agent::set_cpu_clock`] on that thread, before
/// [`super::run`] there), so the other threads' CPU is not charged to its budget.
pub fn thread_cpu_seconds() -> f64 {
    cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_seconds(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec the kernel writes; both clock ids are constants every
    // kernel since 2.6.12 has.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// How long the agent may save its allowance for: it spends at most its budget over any window
/// this long. A first pass over memory that has been idle since before the agent started
/// takes a burst (a 600 MiB heap is about a second of compression), then the rate holds.
pub const BURST_SECS: f64 = 300.0;

/// The agent's CPU allowance: a bucket that fills by the budget each tick (a period's worth),
/// holds at most [`BURST_SECS`] of it, and empties by what each tick spends; a tick that
/// overspends leaves it below zero, owed by the next ones.
pub(super) struct Budget {
    clock: CpuClock,
    at_start: f64,
    per_tick: f64,
    cap: f64,
    balance: f64,
    tick_start: f64,
}

impl Budget {
    /// `per_tick` CPU seconds a tick of `period_secs` on `clock`.
    pub(super) fn new(mut clock: CpuClock, per_tick: f64, period_secs: f64) -> Self {
        let now = clock();
        let cap = per_tick * (BURST_SECS / period_secs.max(1.0)).max(1.0);
        Self { clock, at_start: now, per_tick, cap, balance: 0.0, tick_start: now }
    }

    /// Another clock (the spent total starts again from it).
    pub(super) fn set_clock(&mut self, clock: CpuClock) {
        let period = self.per_tick * BURST_SECS / self.cap;
        *self = Self::new(clock, self.per_tick, period);
    }

    /// A tick begins: its allowance is added, up to the cap.
    pub(super) fn begin_tick(&mut self) {
        self.balance = (self.balance + self.per_tick).min(self.cap);
        self.tick_start = (self.clock)();
    }

    /// Whether this tick has spent what the bucket held.
    pub(super) fn exhausted(&mut self) -> bool {
        (self.clock)() - self.tick_start >= self.balance
    }

    /// Takes this tick's spending out of the bucket (below zero: owed).
    pub(super) fn end_tick(&mut self) {
        self.balance -= (self.clock)() - self.tick_start;
    }

    /// CPU seconds spent since the agent started.
    pub(super) fn total(&mut self) -> f64 {
        ((self.clock)() - self.at_start).max(0.0)
    }
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("per_tick", &self.per_tick)
            .field("balance", &self.balance)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn clock() -> (Arc<Mutex<f64>>, CpuClock) {
        let t = Arc::new(Mutex::new(0.0));
        let c = t.clone();
        (t, Box::new(move || *c.lock().expect("clock")))
    }

    /// Unspent allowance is saved, at most BURST_SECS of it; overspending is owed.
    #[test]
    fn the_bucket_saves_up_to_the_burst_and_owes_what_is_overspent() {
        let (t, c) = clock();
        // 1 % of a core, a tick every 10 s: 0.1 s a tick, 3 s at most.
        let mut b = Budget::new(c, 0.1, 10.0);
        for _ in 0..100 {
            b.begin_tick();
            b.end_tick();
        }
        b.begin_tick();
        *t.lock().unwrap() += 2.9;
        assert!(!b.exhausted(), "30 idle ticks saved 3 s");
        *t.lock().unwrap() += 0.2;
        assert!(b.exhausted(), "never more than the cap");
        b.end_tick();
        // 0.1 s owed: the next tick has nothing, the one after 0.1 s.
        b.begin_tick();
        assert!(b.exhausted());
        b.end_tick();
        b.begin_tick();
        assert!(!b.exhausted());
        *t.lock().unwrap() += 0.1;
        assert!(b.exhausted());
        assert!((b.total() - 3.2).abs() < 1e-9);
    }
}
