//! Recording what live processes touch (`zmem trace record`): their resident anonymous pages are
//! captured at the start into a page set ([`crate::capture`]), then watched for a while, one
//! observation per interval, and the observations become a trace whose page ids index that set
//! ([`super::convert`] documents the conversion and its resolution).
//!
//! What watches them ([`Method`]), unless the caller names one: DAMON (region access
//! frequencies; [`super::damon`] says when it cannot be used without disturbing a kdamond that
//! is not ours), else soft-dirty bits (writes only; [`super::soft_dirty`]), else page-out
//! sampling (reads and writes, at the price of a major fault per touched page per interval;
//! [`super::page_out`]), which needs a swap area: the caller's `make_swap` provides one for the
//! recording's length. Where none works the recording is refused with every reason. The
//! trace's header and the page set's metadata (`trace.origin`, `trace.interval_ms`,
//! `trace.note`) say which was used and why.
//!
//! Nothing is left changed but the processes' soft-dirty bits (cleared; the kernel keeps no
//! other use of them) or, after page-out sampling, where their pages are (the swap area is
//! removed at the end, which reads every page back). The loop ends early, keeping what it saw,
//! when the processes exit or `stop` is set: [`SignalStop`] sets it on SIGINT and SIGTERM.

pub mod damon;
pub mod page_out;
pub mod pagemap;
pub mod soft_dirty;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::capture::{self, system_page_size};
use zmem_pages::trace::convert::{self, IntervalCounts, PageIndex};
use zmem_pages::trace::{Op, Origin, Trace};
use zmem_pages::{PageSet, SetMeta};

use crate::KernelError;

/// How accesses are observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// DAMON's region access frequencies (reads and writes, region resolution).
    Damon,
    /// Soft-dirty bits (writes only, page resolution).
    SoftDirty,
    /// Page-out sampling (reads and writes, page resolution; perturbs the processes).
    PageOut,
}

impl Method {
    /// Every method, in the order they are tried.
    pub const ALL: [Method; 3] = [Method::Damon, Method::SoftDirty, Method::PageOut];

    /// Its name on the command line and in the trace's origin.
    pub fn name(self) -> &'static str {
        self.origin().name()
    }

    /// The trace origin it records.
    pub fn origin(self) -> Origin {
        match self {
            Self::Damon => Origin::Damon,
            Self::SoftDirty => Origin::SoftDirty,
            Self::PageOut => Origin::PageOut,
        }
    }
}

impl std::str::FromStr for Method {
    type Err = KernelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            KernelError::Invalid(format!(
                "unknown recording method {s:?} (damon, soft-dirty, page-out)"
            ))
        })
    }
}

/// What to record.
#[derive(Debug, Clone)]
pub struct Options {
    /// The processes (at least one).
    pub pids: Vec<u32>,
    /// How long to watch them.
    pub duration: Duration,
    /// Time between two observations: the trace's time resolution.
    pub interval: Duration,
    /// The method; `None` takes the first that works here.
    pub method: Option<Method>,
}

/// A swap area for page-out sampling, kept while the recording runs: dropping `guard` removes
/// it (what [`record`]'s `make_swap` returns).
pub struct SwapForPageOut {
    /// What it is, for the user ("zram3, made for the recording, priority 32767").
    pub note: String,
    /// Dropped when the recording ends.
    pub guard: Box<dyn std::any::Any>,
}

impl std::fmt::Debug for SwapForPageOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapForPageOut").field("note", &self.note).finish_non_exhaustive()
    }
}

/// Provides a swap area for page-out sampling of this many bytes of captured pages.
pub type MakeSwap<'a> = &'a mut dyn FnMut(u64) -> Result<SwapForPageOut, KernelError>;

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
    /// What the method sees and why it was chosen (the `trace.note` metadata).
    pub note: String,
    /// The swap area page-out sampling used, where it did.
    pub swap: Option<String>,
    /// Page-out sampling: the share of captured page-intervals the kernel did not page out
    /// (nothing known of them).
    pub unobserved: Option<f64>,
    /// The capture's own summary line.
    pub capture: String,
}

/// Checks the options: processes given and alive, an interval above zero and not longer than
/// the duration.
pub fn check(opts: &Options) -> Result<(), KernelError> {
    if opts.pids.is_empty() {
        return Err(KernelError::Invalid("no process to record".into()));
    }
    if opts.interval.is_zero() {
        return Err(KernelError::Invalid("the interval must be above 0".into()));
    }
    if opts.duration < opts.interval {
        return Err(KernelError::Invalid(format!(
            "the duration ({:?}) is shorter than one interval ({:?})",
            opts.duration, opts.interval
        )));
    }
    if let Some(pid) = opts.pids.iter().find(|p| !Path::new(&format!("/proc/{p}")).exists()) {
        return Err(KernelError::Invalid(format!("no such process: {pid}")));
    }
    Ok(())
}

/// Why each method cannot be used here (`None` where it can), in [`Method::ALL`]'s order.
/// DAMON's `None` is not a promise: whether the kernel has `vaddr` shows only once our kdamond
/// exists, so [`record`] falls back when starting it fails.
pub fn unavailable_reasons() -> [(Method, Option<String>); 3] {
    [
        (Method::Damon, damon::unavailable_reason(Path::new(damon::ADMIN))),
        (Method::SoftDirty, soft_dirty::unavailable_reason()),
        (Method::PageOut, page_out::unavailable_reason()),
    ]
}

/// The method to use: `wanted` if it works here, else the first that does; an error gives
/// every reason.
pub fn choose(
    wanted: Option<Method>,
    reasons: &[(Method, Option<String>)],
) -> Result<Method, KernelError> {
    let why = |m: Method| reasons.iter().find(|(k, _)| *k == m).and_then(|(_, w)| w.clone());
    match wanted {
        Some(m) => match why(m) {
            None => Ok(m),
            Some(w) => Err(KernelError::Invalid(format!("cannot record with {}: {w}", m.name()))),
        },
        None => reasons.iter().find(|(_, w)| w.is_none()).map(|(m, _)| *m).ok_or_else(|| {
            let all: Vec<String> = reasons
                .iter()
                .map(|(m, w)| format!("{}: {}", m.name(), w.as_deref().unwrap_or("usable")))
                .collect();
            KernelError::Invalid(format!(
                "cannot record accesses on this kernel: {}",
                all.join("; ")
            ))
        }),
    }
}

/// Records `opts.pids` (see the module doc). `progress` is told each interval's number;
/// `make_swap` is called only for page-out sampling.
pub fn record(
    opts: &Options,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
    make_swap: MakeSwap<'_>,
) -> Result<Recording, KernelError> {
    check(opts)?;
    let mut reasons = unavailable_reasons();
    let mut method = choose(opts.method, &reasons)?;
    let mut kdamond = None;
    if method == Method::Damon {
        let attrs = damon::Attrs::for_interval(opts.interval);
        match damon::Kdamond::start(Path::new(damon::ADMIN), &opts.pids, &attrs) {
            Ok(k) => kdamond = Some(k),
            Err(e) if opts.method.is_none() => {
                reasons[0].1 = Some(e.to_string());
                method = choose(None, &reasons)?;
            }
            Err(e) => return Err(e),
        }
    }
    let why_not: Vec<(Method, String)> = reasons
        .iter()
        .take_while(|(m, _)| *m != method)
        .filter_map(|(m, w)| w.clone().map(|w| (*m, w)))
        .collect();
    let proc_root = Path::new("/proc");
    match method {
        Method::SoftDirty => record_soft_dirty(proc_root, opts, &why_not, stop, progress),
        Method::PageOut => {
            let pager = page_out::Madvise::new(system_page_size() as u64);
            record_page_out(proc_root, opts, &why_not, stop, progress, pager, make_swap)
        }
        Method::Damon => {
            let k = kdamond.ok_or_else(|| KernelError::Invalid("no kdamond started".into()))?;
            record_damon(proc_root, opts, &why_not, stop, progress, k)
        }
    }
}

/// The captured pages and their index, and the watched addresses per process.
struct Captured {
    set: PageSet,
    summary: String,
    index: PageIndex,
    watched: Vec<(u32, Vec<u64>)>,
}

fn capture_watched(proc_root: &Path, opts: &Options) -> Result<Captured, KernelError> {
    if opts.interval.is_zero() {
        return Err(KernelError::Invalid("the interval must be above 0".into()));
    }
    let (set, summary) = capture::capture_in(proc_root, &opts.pids, &mut |_| {})?;
    if set.is_empty() {
        return Err(KernelError::Invalid(format!("nothing to record: {summary}")));
    }
    let index = PageIndex::from_set(&set)?;
    let watched = opts
        .pids
        .iter()
        .map(|&pid| (pid, index.pages_of(pid).map(|(a, _)| a).collect::<Vec<_>>()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    Ok(Captured { set, summary: summary.to_string(), index, watched })
}

/// Observes once per interval until the duration, a stop or an error: the observations and why
/// it ended early, if it did. `observe` gives an interval's counts or why it cannot go on.
fn observe_intervals(
    opts: &Options,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
    observe: &mut dyn FnMut(u64) -> Result<IntervalCounts, String>,
) -> (Vec<IntervalCounts>, Option<String>) {
    let n = (opts.duration.as_nanos() / opts.interval.as_nanos()) as u64;
    let start = Instant::now();
    let mut intervals = Vec::new();
    for k in 0..n {
        // Sleep to the end of interval k in short steps, so a signal is answered quickly.
        let end = opts.interval * (k as u32 + 1);
        while let Some(left) = end.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) {
            if stop.load(Ordering::Relaxed) {
                return (intervals, Some(format!("stopped by a signal after {k} intervals")));
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        match observe(k) {
            Ok(c) => intervals.push(c),
            Err(why) => return (intervals, Some(why)),
        }
        progress(k + 1);
    }
    (intervals, None)
}

/// [`record`] with a kdamond already started on `opts.pids` (the caller's: under the real
/// sysfs interface, or a fake one in tests), under a procfs root. Each interval's observation is
/// the regions of the aggregation interval that ends after it: [`damon::Kdamond::snapshot`]
/// waits for it, so intervals are the kdamond's and the trace's times are nominal (`k *
/// interval`). The kdamond is stopped and removed before this returns.
pub fn record_damon(
    proc_root: &Path,
    opts: &Options,
    why_not: &WhyNot,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
    kdamond: damon::Kdamond,
) -> Result<Recording, KernelError> {
    let c = capture_watched(proc_root, opts)?;
    let max = kdamond.max_nr_accesses();
    let (intervals, ended_early) = observe_intervals(opts, stop, progress, &mut |k| {
        let regions =
            kdamond.snapshot().map_err(|e| format!("DAMON ended after {k} intervals ({e})"))?;
        Ok(convert::damon_counts(&c.index, &regions, max))
    });
    let a = *kdamond.attrs();
    drop(kdamond);
    let note = joined(
        &format!(
            "reads and writes alike, as DAMON region access frequencies (vaddr; a check every \
             {} µs, {} checks per interval, {} to {} regions: every page of a region gets the \
             region's count)",
            a.sample_us, max, a.min_nr_regions, a.max_nr_regions
        ),
        why_not,
    );
    finish(c, opts, Method::Damon, Op::Read, intervals, ended_early, note, why_not)
}

/// Why the methods tried before the one used were not used.
pub type WhyNot = [(Method, String)];

/// [`record`] with soft-dirty bits, under a procfs root (another one in tests); `why_not` goes
/// into the metadata's note.
pub fn record_soft_dirty(
    proc_root: &Path,
    opts: &Options,
    why_not: &WhyNot,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<Recording, KernelError> {
    let c = capture_watched(proc_root, opts)?;
    for (pid, _) in &c.watched {
        soft_dirty::clear(proc_root, *pid)?;
    }
    let ps = system_page_size() as u64;
    let (intervals, ended_early) = observe_intervals(opts, stop, progress, &mut |k| {
        let mut dirty = Vec::new();
        for (pid, vaddrs) in &c.watched {
            let d = soft_dirty::dirty_pages(proc_root, *pid, vaddrs, ps)
                .and_then(|d| soft_dirty::clear(proc_root, *pid).map(|()| d))
                .map_err(|e| format!("process {pid} is gone after {k} intervals ({e})"))?;
            dirty.extend(d.into_iter().map(|a| (*pid, a)));
        }
        Ok(convert::once_each(&c.index, &dirty))
    });
    let note = joined("writes only, one per page per interval (soft-dirty bits)", why_not);
    finish(c, opts, Method::SoftDirty, Op::Write, intervals, ended_early, note, why_not)
}

/// [`record`] with page-out sampling through `pager`, under a procfs root (another one in
/// tests). `make_swap` is called once the pages are captured, and its swap area is kept until
/// the last interval is observed.
pub fn record_page_out<P: page_out::Pager>(
    proc_root: &Path,
    opts: &Options,
    why_not: &WhyNot,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
    pager: P,
    make_swap: MakeSwap<'_>,
) -> Result<Recording, KernelError> {
    let c = capture_watched(proc_root, opts)?;
    let ps = system_page_size() as u64;
    let swap = make_swap(c.set.len() as u64 * ps)?;
    let gone = |pid: u32, k: u64, e: KernelError| {
        format!("process {pid} is gone after {k} intervals ({e})")
    };
    let (mut sampler, _) = page_out::Sampler::start(proc_root, c.watched.clone(), ps, pager)
        .map_err(|(pid, e)| KernelError::Invalid(gone(pid, 0, e)))?;
    let (mut armed, mut unobserved) = (0u64, 0u64);
    let (intervals, ended_early) = observe_intervals(opts, stop, progress, &mut |k| {
        let seen = sampler.observe().map_err(|(pid, e)| gone(pid, k, e))?;
        armed += seen.armed;
        unobserved += seen.unobserved;
        Ok(convert::once_each(&c.index, &seen.touched))
    });
    let drain_error = sampler.drain_error().map(str::to_string);
    drop(sampler);
    drop(swap.guard);
    let share =
        if armed + unobserved == 0 { 0.0 } else { unobserved as f64 / (armed + unobserved) as f64 };
    let undrained = drain_error.map_or(String::new(), |e| {
        format!(
            "; pages faulted in on another CPU than the recorder's may stay unobserved: the \
             LRU batches could not be drained ({e})"
        )
    });
    let note = joined(
        &format!(
            "reads and writes alike, one per page per interval (page-out sampling: each \
             interval pages the captured pages out and counts those faulted back in; {:.1} % \
             of page-intervals unobserved; the processes took a major fault per page touched \
             per interval{undrained}); swap: {}",
            share * 100.0,
            swap.note
        ),
        why_not,
    );
    let mut r = finish(c, opts, Method::PageOut, Op::Read, intervals, ended_early, note, why_not)?;
    r.swap = Some(swap.note);
    r.unobserved = Some(share);
    Ok(r)
}

/// What the method sees, then why the others were not used.
fn joined(what: &str, why_not: &WhyNot) -> String {
    let mut s = what.to_string();
    for (m, w) in why_not {
        s.push_str(&format!("; {} not used: {w}", m.name()));
    }
    s
}

/// The trace and the page set's metadata from the observations.
#[allow(clippy::too_many_arguments)]
fn finish(
    c: Captured,
    opts: &Options,
    method: Method,
    op: Op,
    intervals: Vec<IntervalCounts>,
    ended_early: Option<String>,
    note: String,
    why_not: &WhyNot,
) -> Result<Recording, KernelError> {
    let interval_ns = u64::try_from(opts.interval.as_nanos()).unwrap_or(u64::MAX);
    let trace = convert::spread(c.index.page_count(), interval_ns, &intervals, op)?;
    let origin = method.origin();
    let mut meta = c.set.set_meta().cloned().unwrap_or_default();
    meta.extend(trace_meta(origin, opts.interval, &note));
    let pages = c.set.with_set_meta(meta)?;
    let damon_unavailable =
        why_not.iter().find(|(m, _)| *m == Method::Damon).map(|(_, w)| w.clone());
    Ok(Recording {
        pages,
        trace,
        origin,
        intervals: intervals.len() as u64,
        ended_early,
        damon_unavailable,
        note,
        swap: None,
        unobserved: None,
        capture: c.summary,
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
    pub fn install() -> Result<Self, KernelError> {
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
fn handle(sig: libc::c_int) -> Result<libc::sigaction, KernelError> {
    let mut act = empty_sigaction();
    act.sa_sigaction = on_signal as *const () as usize;
    let mut prev = empty_sigaction();
    // SAFETY: `act` is a fully initialised sigaction whose handler only stores to an atomic;
    // `prev` is a valid place for the old action.
    let rc = unsafe { libc::sigaction(sig, &act, &mut prev) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(KernelError::Invalid(format!("sigaction: {e}")));
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
            method: None,
        };
        let busy = [(Method::Damon, "busy".to_string())];
        let mut seen = Vec::new();
        let stop = AtomicBool::new(false);
        let r = record_soft_dirty(proc.path(), &opts, &busy, &stop, &mut |k| seen.push(k)).unwrap();
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
        let r = record_soft_dirty(proc.path(), &opts, &busy, &stop, &mut |_| {}).unwrap();
        assert_eq!(r.intervals, 0);
        assert!(r.trace.accesses.is_empty());
        assert!(r.ended_early.unwrap().contains("signal"));
    }

    /// Pages out by marking the fake pagemap's entries swapped, except `pinned` pages.
    struct FakePager {
        pagemap: std::path::PathBuf,
        pinned: u64,
        calls: std::rc::Rc<std::cell::Cell<u32>>,
    }

    fn set_entry(pagemap: &Path, vaddr: u64, present: bool) {
        use std::os::unix::fs::FileExt;
        let ps = system_page_size() as u64;
        let e: u64 = if present { 1 << 63 } else { 1 << 62 };
        let f = std::fs::File::options().write(true).open(pagemap).unwrap();
        f.write_all_at(&e.to_le_bytes(), vaddr / ps * 8).unwrap();
    }

    impl page_out::Pager for FakePager {
        fn page_out(&mut self, _: u32, runs: &[(u64, u64)]) -> Result<(), KernelError> {
            self.calls.set(self.calls.get() + 1);
            let ps = system_page_size() as u64;
            for &(start, n) in runs {
                for a in (0..n).map(|k| start + k * ps).filter(|a| *a != self.pinned) {
                    set_entry(&self.pagemap, a, false);
                }
            }
            Ok(())
        }

        fn drain_lru(&mut self) -> Result<(), KernelError> {
            Ok(())
        }
    }

    struct Flag(std::rc::Rc<std::cell::Cell<bool>>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    #[test]
    fn page_out_recording_finds_the_pages_faulted_back_each_interval() {
        let proc = fake_proc();
        let ps = system_page_size() as u64;
        let pagemap = proc.path().join("42/pagemap");
        let opts = Options {
            pids: vec![42],
            duration: Duration::from_millis(30),
            interval: Duration::from_millis(10),
            method: None,
        };
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        // Page 2 (address 18 * ps) stays in RAM: unobserved in every interval.
        let pager = FakePager { pagemap: pagemap.clone(), pinned: 18 * ps, calls: calls.clone() };
        let removed = std::rc::Rc::new(std::cell::Cell::new(false));
        let mut asked = Vec::new();
        let mut make_swap = |bytes: u64| {
            asked.push(bytes);
            Ok(SwapForPageOut { note: "fake".into(), guard: Box::new(Flag(removed.clone())) })
        };
        // The process touches, after interval n - 1 was observed: page 1 always, page 3 once.
        let mut touch = |n: u64| {
            set_entry(&pagemap, 17 * ps, true);
            if n == 1 {
                set_entry(&pagemap, 19 * ps, true);
            }
        };
        let stop = AtomicBool::new(false);
        let why = [(Method::Damon, "busy".to_string())];
        let r = record_page_out(proc.path(), &opts, &why, &stop, &mut touch, pager, &mut make_swap)
            .unwrap();
        assert_eq!(asked, [4 * ps], "one swap area, sized for the captured pages");
        assert!(removed.get(), "the swap area is removed when the recording ends");
        assert_eq!(calls.get(), 4, "armed at the start and after each interval");
        assert_eq!((r.intervals, r.origin, r.ended_early.as_deref()), (3, Origin::PageOut, None));
        let got: Vec<(u64, u32, Op)> =
            r.trace.accesses.iter().map(|a| (a.time_ns, a.page, a.op)).collect();
        let ms = 1_000_000;
        assert_eq!(got, [(15 * ms, 1, Op::Read), (15 * ms, 3, Op::Read), (25 * ms, 1, Op::Read)]);
        assert_eq!(r.unobserved, Some(0.25));
        assert_eq!(r.swap.as_deref(), Some("fake"));
        assert_eq!(r.damon_unavailable.as_deref(), Some("busy"));
        let meta = r.pages.set_meta().unwrap();
        assert_eq!(meta["trace.origin"], "page-out");
        assert!(meta["trace.note"].contains("25.0 % of page-intervals unobserved"));
        assert!(meta["trace.note"].contains("damon not used: busy"), "{}", meta["trace.note"]);

        // No swap area to be had: the error says why, and nothing was paged out.
        calls.set(0);
        let pager = FakePager { pagemap, pinned: 0, calls: calls.clone() };
        let mut no_swap = |_: u64| Err(KernelError::Setup("no zram here".into()));
        let err = record_page_out(proc.path(), &opts, &[], &stop, &mut |_| {}, pager, &mut no_swap)
            .unwrap_err();
        assert!(err.to_string().contains("no zram here"), "{err}");
        assert_eq!(calls.get(), 0);
    }

    #[test]
    fn damon_recording_gives_each_page_its_regions_count_and_removes_the_kdamond() {
        let proc = fake_proc();
        let ps = system_page_size() as u64;
        // Pages 0-1 of the fake process in a region checked accessed twice per interval, pages
        // 2-3 in one never accessed; 10 ms intervals of 5 ms checks: at most 2.
        let tried = [(0, 16 * ps, 18 * ps, 2), (1, 18 * ps, 20 * ps, 0)];
        let fake = damon::fake::Fake::new(1, "vaddr paddr", &tried);
        let opts = Options {
            pids: vec![42],
            duration: Duration::from_millis(20),
            interval: Duration::from_millis(10),
            method: Some(Method::Damon),
        };
        let attrs = damon::Attrs::for_interval(opts.interval);
        let k = damon::Kdamond::start(fake.admin(), &[42], &attrs).unwrap();
        assert_eq!(fake.get("kdamonds/0/state"), "on");
        let stop = AtomicBool::new(false);
        let r = record_damon(proc.path(), &opts, &[], &stop, &mut |_| {}, k).unwrap();
        assert_eq!((r.intervals, r.origin, r.ended_early.as_deref()), (2, Origin::Damon, None));
        let got: Vec<(u64, u32, Op)> =
            r.trace.accesses.iter().map(|a| (a.time_ns, a.page, a.op)).collect();
        let us = 1_000;
        let want: Vec<(u64, u32, Op)> = (0..2u64)
            .flat_map(|k| {
                let base = k * 10_000 * us;
                [
                    (base + 2500 * us, 0),
                    (base + 2500 * us, 1),
                    (base + 7500 * us, 0),
                    (base + 7500 * us, 1),
                ]
            })
            .map(|(t, p)| (t, p, Op::Read))
            .collect();
        assert_eq!(got, want);
        let meta = r.pages.set_meta().unwrap();
        assert_eq!(meta["trace.origin"], "damon");
        assert!(meta["trace.note"].contains("2 checks per interval"), "{}", meta["trace.note"]);
        // Stopped and removed.
        assert_eq!(fake.get("kdamonds/0/state"), "off");
        assert_eq!(fake.get("kdamonds/nr_kdamonds"), "0");
    }

    #[test]
    fn the_method_is_the_one_asked_or_the_first_that_works() {
        let reasons = [
            (Method::Damon, Some("no vaddr".to_string())),
            (Method::SoftDirty, None),
            (Method::PageOut, None),
        ];
        assert_eq!(choose(None, &reasons).unwrap(), Method::SoftDirty);
        assert_eq!(choose(Some(Method::PageOut), &reasons).unwrap(), Method::PageOut);
        let err = choose(Some(Method::Damon), &reasons).unwrap_err().to_string();
        assert!(err.contains("cannot record with damon: no vaddr"), "{err}");
        let none = [
            (Method::Damon, Some("a".to_string())),
            (Method::SoftDirty, Some("b".to_string())),
            (Method::PageOut, Some("c".to_string())),
        ];
        let err = choose(None, &none).unwrap_err().to_string();
        assert!(err.contains("damon: a; soft-dirty: b; page-out: c"), "{err}");
        assert_eq!("page-out".parse::<Method>().unwrap(), Method::PageOut);
        assert!("idle".parse::<Method>().unwrap_err().to_string().contains("unknown"));
    }

    #[test]
    fn bad_options_are_refused_before_anything_is_touched() {
        let ok = Options {
            pids: vec![std::process::id()],
            duration: Duration::from_secs(1),
            interval: Duration::from_millis(100),
            method: None,
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
