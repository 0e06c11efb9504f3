//! Time of one experiment: thread CPU time (user + system) beside the wall clock. A cost that a
//! user pays in CPU (the recommendation's CPU seconds) is read from the first, never from the
//! second: on a busy machine the two differ.

use std::time::Instant;

use zmem_comp::ObjectSource;

/// User + system CPU seconds the calling thread has used, or `None` if the system refuses
/// ([`thread_cpu_ns`]).
pub fn thread_cpu_secs() -> Option<f64> {
    thread_cpu_ns().map(|ns| ns as f64 / 1e9)
}

/// User + system CPU nanoseconds the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), or
/// `None` if the system refuses.
///
/// Not `getrusage(RUSAGE_THREAD)`: on a kernel with tick-based CPU accounting
/// (`CONFIG_TICK_CPU_ACCOUNTING`, this machine kind's, `HZ=250`) its time moves in whole ticks
/// of 4 ms, so a compressor row of 30 ms of CPU read ±13 % between two runs of the same pages
/// and the lab's latency budget flipped between them (docs/BENCHMARKS.md, "Back-to-back").
/// The thread clock is the scheduler's own runtime of the thread, to the nanosecond.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec to the pointer given, which is ours and
    // writable; the clock id is a constant every Linux knows.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// User + system CPU nanoseconds the whole process has used, every thread together
/// (`CLOCK_PROCESS_CPUTIME_ID`, the scheduler's own runtime, as [`thread_cpu_ns`]), or `None`
/// if the system refuses.
pub fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as in `thread_cpu_ns`: one timespec written to our own writable pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Minor page faults the calling thread has taken (`ru_minflt`), or `None` if the system
/// refuses: a count that, unlike a time, other processes on the machine do not move.
pub fn thread_minor_faults() -> Option<u64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: as in `thread_cpu_secs`: getrusage only writes into `ru`, read after a 0 return.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: getrusage returned 0, so it initialised the whole struct (it was also zeroed).
    let ru = unsafe { ru.assume_init() };
    u64::try_from(ru.ru_minflt).ok()
}

/// Both clocks of the calling thread, started together. Everything measured with one must run
/// on the thread that started it.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    cpu0: Option<f64>,
    wall0: Instant,
}

/// What a [`Stopwatch`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Elapsed {
    /// Thread CPU seconds (0 where the system does not report them).
    pub cpu_secs: f64,
    pub wall_secs: f64,
}

/// What compressions done elsewhere cost: objects a device took from the compressor table
/// instead of compressing (zmem-experiments' `objects::Charged` adds them up).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Charge {
    /// Objects handed out (compressions the device did not run).
    pub objects: u64,
    pub cpu_secs: f64,
    pub wall_secs: f64,
}

/// An [`ObjectSource`] that adds up what the objects it handed out cost to make (a
/// [`Charge`]): what a replay given one ([`crate::replay::Simulator::with_objects`]) charges to
/// the stores that took them, in place of the compressions they did not run.
pub trait ChargedObjects: ObjectSource {
    /// What was charged since the last `take`.
    fn take(&self) -> Charge;
}

impl Elapsed {
    /// This time with `charge` added: work done elsewhere (a compression taken from the
    /// compressor table) counted as part of it.
    pub fn plus(self, charge: Charge) -> Self {
        Self {
            cpu_secs: self.cpu_secs + charge.cpu_secs,
            wall_secs: self.wall_secs + charge.wall_secs,
        }
    }
}

impl Stopwatch {
    pub fn start() -> Self {
        Self { cpu0: thread_cpu_secs(), wall0: Instant::now() }
    }

    pub fn elapsed(&self) -> Elapsed {
        let wall_secs = self.wall0.elapsed().as_secs_f64();
        let cpu_secs = match (self.cpu0, thread_cpu_secs()) {
            (Some(a), Some(b)) => (b - a).max(0.0),
            _ => 0.0,
        };
        Elapsed { cpu_secs, wall_secs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_fresh_memory_counts_minor_faults() {
        let before = thread_minor_faults().expect("getrusage(RUSAGE_THREAD)");
        // 64 fresh pages from the OS (a large allocation is its own mapping), each written once.
        let mut v = vec![0u8; 64 << 12].into_boxed_slice();
        for i in (0..v.len()).step_by(4096) {
            v[i] = std::hint::black_box(1);
        }
        std::hint::black_box(&v);
        let after = thread_minor_faults().unwrap();
        assert!(after > before, "{before} -> {after}");
    }

    /// The process clock counts every thread: another thread's spin shows in it, not in this
    /// thread's clock.
    #[test]
    fn the_process_clock_counts_other_threads() {
        let (p0, t0) = (process_cpu_ns().unwrap(), thread_cpu_ns().unwrap());
        std::thread::spawn(|| {
            let start = thread_cpu_ns().unwrap();
            while thread_cpu_ns().unwrap() - start < 20_000_000 {
                std::hint::black_box(0u64);
            }
        })
        .join()
        .unwrap();
        let (p1, t1) = (process_cpu_ns().unwrap(), thread_cpu_ns().unwrap());
        assert!(p1 - p0 >= 20_000_000, "process {p0} -> {p1}");
        assert!(t1 - t0 < 20_000_000, "this thread {t0} -> {t1}");
    }

    #[test]
    fn cpu_time_is_available_and_never_goes_back() {
        let a = thread_cpu_secs().expect("CLOCK_THREAD_CPUTIME_ID");
        let b = thread_cpu_secs().expect("CLOCK_THREAD_CPUTIME_ID");
        assert!(a >= 0.0 && b >= a, "{a} then {b}");
    }

    /// The clock resolves far less than a scheduler tick (1 ms at the highest `HZ`): spinning
    /// until it moves, it moves by less than 200 us. A tick-granular clock (getrusage's, on a
    /// kernel with tick accounting) moves by a whole tick and fails this; a preemption inside
    /// the spin does not count as the thread's time, so the check does not depend on the load.
    #[test]
    fn cpu_time_resolves_less_than_a_tick() {
        let mut steps = Vec::new();
        for _ in 0..5 {
            let a = thread_cpu_ns().expect("CLOCK_THREAD_CPUTIME_ID");
            let mut b = a;
            while b == a {
                b = thread_cpu_ns().unwrap();
            }
            steps.push(b - a);
        }
        let least = *steps.iter().min().unwrap();
        assert!(least < 200_000, "the thread clock moves in steps of {steps:?} ns");
    }

    #[test]
    fn a_sleeping_thread_uses_wall_time_but_almost_no_cpu() {
        let sw = Stopwatch::start();
        std::thread::sleep(std::time::Duration::from_millis(120));
        let e = sw.elapsed();
        assert!(e.wall_secs >= 0.12, "{e:?}");
        assert!(e.cpu_secs < 0.06, "sleeping is not CPU time: {e:?}");
    }

    #[test]
    fn a_busy_thread_uses_cpu_time_and_no_more_than_the_wall_clock() {
        let sw = Stopwatch::start();
        let mut x = 1u64;
        for _ in 0..30_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let e = sw.elapsed();
        assert!(e.cpu_secs > 0.0, "{e:?}");
        // One thread cannot use more CPU than time passed (rusage ticks are coarse: 10 ms).
        assert!(e.cpu_secs <= e.wall_secs + 0.011, "{e:?}");
    }
}
