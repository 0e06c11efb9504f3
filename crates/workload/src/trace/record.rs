//! Recording what live processes touch (`zmem trace record`): their resident anonymous pages are
//! captured at the start into a page set ([`crate::capture`]), then watched for a while, one
//! observation per interval, and the observations become a trace whose page ids index that set
//! ([`super::convert`] documents the conversion and its resolution).
//!
//! What watches them, in order: DAMON (region access frequencies; [`super::damon`] says when it
//! cannot be used without disturbing a kdamond that is not ours), else soft-dirty bits (writes
//! only; [`super::soft_dirty`]). Where neither works the recording is refused with both reasons.
//! The trace's header and the page set's metadata (`trace.origin`, `trace.interval_ms`,
//! `trace.note`) say which was used and why.
//!
//! Nothing is left changed but the processes' soft-dirty bits (cleared; the kernel keeps no
//! other use of them). The loop ends early, keeping what it saw, when the processes exit or
//! `stop` is set: [`SignalStop`] sets it on SIGINT and SIGTERM.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::convert::{self, IntervalCounts, PageIndex};
use super::{Op, Origin, Trace, damon, soft_dirty};
use crate::capture::{self, system_page_size};
use crate::{PageSet, SetMeta, WorkloadError};

/// What to record.
#[derive(Debug, Clone)]
pub struct Options {
    /// The processes (at least one).
    pub pids: Vec<u32>,
    /// How long to watch them.
    pub duration: Duration,
    /// Time between two observations: the trace's time resolution.
    pub interval: Duration,
}

/// A recording: the pages at the start and the trace over them.
#[derive(Debug)]
pub struct Recording {
    /// The captured pages, with `trace.*` set metadata.
    pub pages: PageSet,
    /// Page ids index `pages`.
    pub trace: Trace,
    pub origin: Origin,
    /// Intervals observed.
    pub intervals: u64,
    /// Why the recording ended before `duration` (a signal, the processes exited), if it did.
    pub ended_early: Option<String>,
    /// Why DAMON was not used, where it was not.
    pub damon_unavailable: Option<String>,
    /// The capture's own summary line.
    pub capture: String,
}

/// Checks the options: processes given and alive, an interval above zero and not longer than
/// the duration.
pub fn check(opts: &Options) -> Result<(), WorkloadError> {
    if opts.pids.is_empty() {
        return Err(WorkloadError::Invalid("no process to record".into()));
    }
    if opts.interval.is_zero() {
        return Err(WorkloadError::Invalid("the interval must be above 0".into()));
    }
    if opts.duration < opts.interval {
        return Err(WorkloadError::Invalid(format!(
            "the duration ({:?}) is shorter than one interval ({:?})",
            opts.duration, opts.interval
        )));
    }
    if let Some(pid) = opts.pids.iter().find(|p| !Path::new(&format!("/proc/{p}")).exists()) {
        return Err(WorkloadError::Invalid(format!("no such process: {pid}")));
    }
    Ok(())
}

/// Records `opts.pids` (see the module doc). `progress` is told each interval's number.
pub fn record(
    opts: &Options,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<Recording, WorkloadError> {
    check(opts)?;
    // unavailable_reason never says yes today: no kdamond of our own is driven (see the damon
    // module), so soft-dirty bits are what records.
    let why_damon = damon::unavailable_reason(Path::new(damon::ADMIN))
        .unwrap_or_else(|| "not driven by zmem yet".into());
    if let Some(why) = soft_dirty::unavailable_reason() {
        return Err(WorkloadError::Invalid(format!(
            "cannot record accesses on this kernel: DAMON: {why_damon}; soft-dirty: {why}"
        )));
    }
    record_soft_dirty(Path::new("/proc"), opts, &why_damon, stop, progress)
}

/// [`record`] with soft-dirty bits, under a procfs root (another one in tests); `why_damon`
/// goes into the metadata's note.
pub fn record_soft_dirty(
    proc_root: &Path,
    opts: &Options,
    why_damon: &str,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<Recording, WorkloadError> {
    if opts.interval.is_zero() {
        return Err(WorkloadError::Invalid("the interval must be above 0".into()));
    }
    let (set, summary) = capture::capture_in(proc_root, &opts.pids, &mut |_| {})?;
    if set.is_empty() {
        return Err(WorkloadError::Invalid(format!("nothing to record: {summary}")));
    }
    let index = PageIndex::from_set(&set)?;
    let ps = system_page_size() as u64;
    let watched: Vec<(u32, Vec<u64>)> = opts
        .pids
        .iter()
        .map(|&pid| (pid, index.pages_of(pid).map(|(a, _)| a).collect::<Vec<_>>()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    for (pid, _) in &watched {
        soft_dirty::clear(proc_root, *pid)?;
    }
    let n = (opts.duration.as_nanos() / opts.interval.as_nanos()) as u64;
    let start = Instant::now();
    let mut intervals: Vec<IntervalCounts> = Vec::new();
    let mut ended_early = None;
    'run: for k in 0..n {
        // Sleep to the end of interval k in short steps, so a signal is answered quickly.
        let end = opts.interval * (k as u32 + 1);
        while let Some(left) = end.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) {
            if stop.load(Ordering::Relaxed) {
                ended_early = Some(format!("stopped by a signal after {k} intervals"));
                break 'run;
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        let mut dirty = Vec::new();
        for (pid, vaddrs) in &watched {
            match soft_dirty::dirty_pages(proc_root, *pid, vaddrs, ps)
                .and_then(|d| soft_dirty::clear(proc_root, *pid).map(|()| d))
            {
                Ok(d) => dirty.extend(d.into_iter().map(|a| (*pid, a))),
                Err(e) => {
                    ended_early = Some(format!("process {pid} is gone after {k} intervals ({e})"));
                    break 'run;
                }
            }
        }
        intervals.push(convert::soft_dirty_counts(&index, &dirty));
        progress(k + 1);
    }
    let interval_ns = u64::try_from(opts.interval.as_nanos()).unwrap_or(u64::MAX);
    let trace = convert::spread(index.page_count(), interval_ns, &intervals, Op::Write)?;
    let origin = Origin::SoftDirty;
    let note = format!(
        "writes only, one per page per interval (soft-dirty bits); DAMON not used: {why_damon}"
    );
    let mut meta = set.set_meta().cloned().unwrap_or_default();
    meta.extend(trace_meta(origin, opts.interval, &note));
    let pages = set.with_set_meta(meta)?;
    Ok(Recording {
        pages,
        trace,
        origin,
        intervals: intervals.len() as u64,
        ended_early,
        damon_unavailable: Some(why_damon.to_string()),
        capture: summary.to_string(),
    })
}

/// The page set's `trace.*` metadata.
fn trace_meta(origin: Origin, interval: Duration, note: &str) -> SetMeta {
    let mut m = SetMeta::new();
    m.insert("trace.origin".into(), origin.name().into());
    m.insert("trace.interval_ms".into(), format!("{}", interval.as_secs_f64() * 1e3));
    m.insert("trace.note".into(), note.into());
    m
}

/// The flag SIGINT and SIGTERM set while a [`SignalStop`] is alive.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM set a flag instead of ending the process, while this lives; the previous
/// handlers are put back when it is dropped. One at a time per process.
pub struct SignalStop {
    old: [(libc::c_int, libc::sigaction); 2],
}

impl std::fmt::Debug for SignalStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignalStop")
    }
}

impl SignalStop {
    /// Installs the handlers (clearing the flag).
    pub fn install() -> Result<Self, WorkloadError> {
        STOP.store(false, Ordering::Relaxed);
        let int = handle(libc::SIGINT)?;
        let term = handle(libc::SIGTERM).inspect_err(|_| restore(libc::SIGINT, &int))?;
        Ok(Self { old: [(libc::SIGINT, int), (libc::SIGTERM, term)] })
    }

    /// The flag the handlers set.
    pub fn flag(&self) -> &'static AtomicBool {
        &STOP
    }
}

impl Drop for SignalStop {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            restore(*sig, prev);
        }
    }
}

/// Makes `on_signal` the handler of `sig`; returns the action it replaced.
fn handle(sig: libc::c_int) -> Result<libc::sigaction, WorkloadError> {
    let mut act = empty_sigaction();
    act.sa_sigaction = on_signal as *const () as usize;
    let mut prev = empty_sigaction();
    // SAFETY: `act` is a fully initialised sigaction whose handler only stores to an atomic;
    // `prev` is a valid place for the old action.
    let rc = unsafe { libc::sigaction(sig, &act, &mut prev) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(WorkloadError::Invalid(format!("sigaction: {e}")));
    }
    Ok(prev)
}

/// Puts back an action [`handle`] replaced.
fn restore(sig: libc::c_int, prev: &libc::sigaction) {
    // SAFETY: `prev` is an action sigaction returned for `sig`.
    unsafe { libc::sigaction(sig, prev, std::ptr::null_mut()) };
}

fn empty_sigaction() -> libc::sigaction {
    // SAFETY: sigaction is a plain C struct for which all zeros is a valid value (SIG_DFL, an
    // empty mask, no flags).
    unsafe { std::mem::zeroed() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A procfs root with process 42: one anonymous mapping of 4 pages at 0x10000, all
    /// present, pages 1 and 3 soft-dirty.
    fn fake_proc() -> tempfile::TempDir {
        let ps = system_page_size() as u64;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("42");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("comm"), "fake\n").unwrap();
        let (start, end) = (16 * ps, 20 * ps);
        std::fs::write(p.join("maps"), format!("{start:x}-{end:x} rw-p 00000000 00:00 0 \n"))
            .unwrap();
        let mut map = vec![0u8; 20 * 8];
        for vpn in 16..20u64 {
            let dirty = if vpn % 2 == 1 { soft_dirty::PM_SOFT_DIRTY } else { 0 };
            let e = (1u64 << 63) | dirty;
            map[vpn as usize * 8..][..8].copy_from_slice(&e.to_le_bytes());
        }
        std::fs::write(p.join("pagemap"), map).unwrap();
        std::fs::write(p.join("mem"), vec![7u8; end as usize]).unwrap();
        dir
    }

    #[test]
    fn soft_dirty_recording_writes_the_dirty_pages_each_interval() {
        let proc = fake_proc();
        let opts = Options {
            pids: vec![42],
            duration: Duration::from_millis(30),
            interval: Duration::from_millis(10),
        };
        let mut seen = Vec::new();
        let stop = AtomicBool::new(false);
        let r =
            record_soft_dirty(proc.path(), &opts, "busy", &stop, &mut |k| seen.push(k)).unwrap();
        assert_eq!(seen, [1, 2, 3]);
        assert_eq!((r.intervals, r.origin, r.ended_early.as_deref()), (3, Origin::SoftDirty, None));
        assert_eq!(r.pages.len(), 4);
        let got: Vec<(u64, u32, Op)> =
            r.trace.accesses.iter().map(|a| (a.time_ns, a.page, a.op)).collect();
        let ms = 1_000_000;
        let want: Vec<(u64, u32, Op)> =
            (0..3u64).flat_map(|k| [1, 3].map(|p| (k * 10 * ms + 5 * ms, p, Op::Write))).collect();
        assert_eq!(got, want);
        let meta = r.pages.set_meta().unwrap();
        assert_eq!(meta["trace.origin"], "soft-dirty");
        assert_eq!(meta["trace.interval_ms"], "10");
        assert!(meta["trace.note"].contains("writes only") && meta["trace.note"].contains("busy"));
        // The bits were cleared after the capture and after each interval.
        let refs = std::fs::read_to_string(proc.path().join("42/clear_refs")).unwrap();
        assert_eq!(refs, "4");

        // Stopped before the first interval ends: nothing recorded, said why.
        stop.store(true, Ordering::Relaxed);
        let r = record_soft_dirty(proc.path(), &opts, "busy", &stop, &mut |_| {}).unwrap();
        assert_eq!(r.intervals, 0);
        assert!(r.trace.accesses.is_empty());
        assert!(r.ended_early.unwrap().contains("signal"));
    }

    #[test]
    fn bad_options_are_refused_before_anything_is_touched() {
        let ok = Options {
            pids: vec![std::process::id()],
            duration: Duration::from_secs(1),
            interval: Duration::from_millis(100),
        };
        check(&ok).unwrap();
        let err = |o: Options| check(&o).unwrap_err().to_string();
        assert!(err(Options { pids: vec![], ..ok.clone() }).contains("no process"));
        assert!(err(Options { pids: vec![0], ..ok.clone() }).contains("no such process: 0"));
        assert!(err(Options { interval: Duration::ZERO, ..ok.clone() }).contains("above 0"));
        assert!(err(Options { duration: Duration::from_millis(50), ..ok }).contains("shorter"));
    }

    #[test]
    fn a_signal_sets_the_flag_and_the_old_handler_comes_back() {
        let stop = SignalStop::install().unwrap();
        assert!(!stop.flag().load(Ordering::Relaxed));
        // SAFETY: raise delivers SIGTERM to this thread, whose handler is on_signal now.
        unsafe { libc::raise(libc::SIGTERM) };
        assert!(stop.flag().load(Ordering::Relaxed));
        drop(stop);
        let mut now = empty_sigaction();
        // SAFETY: reads the current action into a valid struct.
        unsafe { libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut now) };
        assert_ne!(now.sa_sigaction, on_signal as *const () as usize);
    }
}
