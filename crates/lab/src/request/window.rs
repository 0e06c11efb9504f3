//! The lab's observation window, run beside its measurements: the live swap's rates
//! ([`now::watch`]), memory pressure before and after (`zmem_kernel::pressure`, reads only),
//! and the cold curve of this machine's processes (`zmem_kernel::cold`) up to the cold age T.
//!
//! **What it changes.** Reading the cold curve writes `1` to each user process's
//! `/proc/PID/clear_refs` once, at the window's start (zmem-kernel's `cold` module doc says
//! what that clears). It does so only where memory is not short ([`quiet`]): free memory over
//! the high watermark (kswapd sleeps), memory PSI some avg10 at most [`PSI_QUIET`] % and no
//! memory cgroup within [`CGROUP_NEAR`] of its limit, so no reclaim runs that would age pages
//! by the bits cleared. `--no-cold` skips it.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use zmem_kernel::cold::{self, ColdCurve, ColdObserver};
use zmem_kernel::pressure::{self, Pressure};
use zmem_kernel::zswap_state::ZswapState;

use crate::now::{self, Rates};
use crate::{LabError, LabOptions, NoProgress, PressureReading, Progress};

/// Memory PSI some avg10 (percent) at or under which memory counts as not short: TMO's
/// operating point (ASPLOS 2022), where offloading costs the programs nothing measurable.
pub const PSI_QUIET: f64 = 0.1;
/// A cgroup using more than this share of its limit is near it: its reclaim may run.
pub const CGROUP_NEAR: f64 = 0.95;

/// What the window is asked to watch.
pub struct Plan<'a> {
    pub zram_ids: &'a [u32],
    pub observe_secs: u64,
    pub page_size: usize,
    /// zswap is present: its state is read again at the end of the swap watch.
    pub zswap_present: bool,
    /// The processes and ages to read the cold curve at, or why not.
    pub cold: Result<(Vec<u32>, Vec<u64>), String>,
}

/// What the window saw.
pub struct Seen {
    pub rates: Result<Rates, String>,
    pub zswap_after: Option<ZswapState>,
    /// Seconds the swap watch took (zswap's rates are over it).
    pub swap_secs: f64,
    pub pressure: PressureReading,
    pub cold: Option<ColdCurve>,
    pub cold_unseen: Option<String>,
}

/// Whether memory is quiet enough to clear referenced bits (module doc); the reason if not.
pub fn quiet(p: &Pressure) -> Result<(), String> {
    let w = &p.watermarks;
    if w.high_bytes == 0 {
        return Err(
            "the watermarks could not be read, so whether memory is short is unknown".into()
        );
    }
    if w.free_bytes < w.high_bytes {
        return Err("memory is short (free memory under the high watermark)".into());
    }
    if let Some(psi) = p.psi.as_ref().filter(|x| x.some.avg10 > PSI_QUIET) {
        return Err(format!(
            "memory PSI some avg10 is {:.2} % (over {PSI_QUIET} %)",
            psi.some.avg10
        ));
    }
    for c in &p.cgroups {
        let limit = [c.max_bytes, c.high_bytes].into_iter().flatten().min();
        if let (Some(l), Some(u)) = (limit, c.usage_bytes)
            && u as f64 > CGROUP_NEAR * l as f64
        {
            return Err(format!("the memory cgroup {} is near its limit", c.path));
        }
    }
    Ok(())
}

/// The ages to read: the default ages and T, those the window reaches.
pub fn ages(observe_secs: u64, t: u64) -> Vec<u64> {
    let mut a: Vec<u64> =
        cold::DEFAULT_AGES_SECS.iter().copied().chain([t]).filter(|&a| a <= observe_secs).collect();
    a.sort_unstable();
    a.dedup();
    a
}

/// The cold plan for a run: every user process where the pages are this machine's
/// processes', memory is quiet and the window reaches an age; else why not.
pub fn cold_plan(
    from_processes: bool,
    no_cold: bool,
    before: &Pressure,
    observe_secs: u64,
    t: u64,
) -> Result<(Vec<u32>, Vec<u64>), String> {
    if no_cold {
        return Err("not measured (--no-cold)".into());
    }
    if !from_processes {
        return Err(
            "the pages are not this machine's processes' (source processes reads it)".into()
        );
    }
    quiet(before).map_err(|why| {
        format!(
            "not measured: {why}, and clearing referenced bits then would change what reclaim takes"
        )
    })?;
    let ages = ages(observe_secs, t);
    if ages.is_empty() {
        return Err(format!(
            "not measured: the observation window ({observe_secs} s) reaches no age"
        ));
    }
    let pids = cold::user_processes(Path::new("/")).map_err(|e| format!("not measured: {e}"))?;
    Ok((pids, ages))
}

/// Runs the window (module doc); `measured` tells when the measurements are done, after which
/// the wait left is shown on `progress`.
pub fn run(
    plan: &Plan,
    measured: &std::sync::atomic::AtomicBool,
    progress: &dyn Progress,
) -> Result<Seen, LabError> {
    let before = pressure::read();
    let started = Instant::now();
    let (swap, cold) = thread::scope(|s| {
        let swap = s.spawn(|| -> Result<_, LabError> {
            let rates = now::watch(plan.zram_ids, plan.observe_secs, plan.page_size, &NoProgress)?;
            let observed = matches!(rates, Ok(ref r) if r.source == "observed");
            let after = (plan.zswap_present && observed).then(crate::zswap::read_state);
            Ok((rates, after, started.elapsed().as_secs_f64()))
        });
        let cold = s.spawn(|| watch_cold(&plan.cold));
        wait_shown(started, plan.observe_secs, measured, progress, || {
            swap.is_finished() && cold.is_finished()
        });
        (swap.join(), cold.join())
    });
    let (rates, zswap_after, swap_secs) =
        swap.map_err(|_| LabError::Setup("the swap watch panicked".into()))??;
    let (cold, cold_unseen) =
        cold.map_err(|_| LabError::Setup("the cold watch panicked".into()))?;
    let secs = started.elapsed().as_secs_f64();
    let now = pressure::read();
    // A window the watch left at once (nothing to observe) says nothing over time.
    let window = (secs >= 1.0).then(|| now.since(&before, secs));
    Ok(Seen {
        rates,
        zswap_after,
        swap_secs,
        pressure: PressureReading { now, window },
        cold,
        cold_unseen,
    })
}

/// Once the measurements are done, shows the seconds left of the window until `done`.
fn wait_shown(
    started: Instant,
    secs: u64,
    measured: &std::sync::atomic::AtomicBool,
    progress: &dyn Progress,
    done: impl Fn() -> bool,
) {
    let mut shown = false;
    let mut at = 0;
    while !done() {
        if !shown && measured.load(std::sync::atomic::Ordering::Acquire) {
            at = started.elapsed().as_secs().min(secs);
            progress.start("observe: swap, pressure, cold memory (s)", secs);
            progress.advance(at);
            shown = true;
        }
        thread::sleep(Duration::from_millis(200));
        let now = started.elapsed().as_secs().min(secs);
        if shown && now > at {
            progress.advance(now - at);
            at = now;
        }
    }
    if shown {
        progress.finish();
    }
}

/// Reads the cold curve at every age asked, ending early when no process is left to watch.
fn watch_cold(plan: &Result<(Vec<u32>, Vec<u64>), String>) -> (Option<ColdCurve>, Option<String>) {
    let (pids, ages) = match plan {
        Ok(p) => p,
        Err(why) => return (None, Some(why.clone())),
    };
    let mut o = match ColdObserver::start(pids, ages) {
        Ok(o) => o,
        Err(e) => return (None, Some(format!("not measured: {e}"))),
    };
    while let Some(due) = o.next_due() {
        if o.watching() == 0 {
            break;
        }
        thread::sleep(due.saturating_duration_since(Instant::now()));
        o.poll(Instant::now());
    }
    (Some(o.curve()), None)
}

/// The window's rates where it saw no swap traffic: the return of memory idle for T (the
/// promotion proactive reclaim would cause: each page back is a swap-in, and goes out again).
pub fn cold_rates(
    rates: Result<Rates, String>,
    curve: Option<&ColdCurve>,
    t: u64,
    ps: usize,
) -> Result<Rates, String> {
    let why = match rates {
        Ok(r) => return Ok(r),
        Err(why) => why,
    };
    let Some((bytes_per_sec, bound)) = curve.and_then(|c| crate::operating::promotion(c, t)) else {
        return Err(why);
    };
    let pages = bytes_per_sec / ps as f64;
    let bound = if bound { " (over the interval before T: an upper bound)" } else { "" };
    Ok(Rates {
        swap_ins_per_sec: pages,
        swap_outs_per_sec: pages,
        observed_secs: 0.0,
        source: "cold".into(),
        note: format!(
            "{why}: memory idle for {t} s coming back, {pages:.1} pages/s{bound}: each a swap-in \
             once it is swapped, and a swap-out again"
        ),
    })
}

/// Every cgroup `--cgroup-limit` names, read: an error where one is no memory cgroup (checked
/// before the run, so a typo fails at once).
pub fn check_asked(limits: &[(String, u64)]) -> Result<(), LabError> {
    for (path, _) in limits {
        pressure::read_cgroup(Path::new("/"), path)
            .map_err(|e| LabError::Setup(format!("--cgroup-limit: {e}")))?;
    }
    Ok(())
}

/// The cgroups asked about that the reading leaves out (it lists limited ones only), read now.
fn add_asked(p: &mut Pressure, limits: &[(String, u64)]) {
    for (path, _) in limits {
        if p.cgroups.iter().any(|c| c.path == *path) {
            continue;
        }
        match pressure::read_cgroup(Path::new("/"), path) {
            Ok(c) => p.cgroups.push(c),
            Err(e) => p.notes.push(format!("--cgroup-limit: {e}")),
        }
    }
}

/// Rates where nothing gave any (no swap observed, no cold curve, no trace of the user's): CPU
/// and swap-in traffic not priced, at 0, saying so (`source` `none`), rather than priced on a
/// generated trace nobody asked for.
pub fn unpriced(rates: Result<Rates, String>) -> Result<Rates, String> {
    rates.or_else(|why| {
        Ok(Rates {
            swap_ins_per_sec: 0.0,
            swap_outs_per_sec: 0.0,
            observed_secs: 0.0,
            source: "none".into(),
            note: format!(
                "{why}, and no cold curve or access trace gives rates: CPU and swap traffic are \
                 not priced (--trace FILE prices them on an access trace of yours, \
                 --generated-trace on zmem's generated one)"
            ),
        })
    })
}

/// Sets what the window saw on the lab's options.
pub fn apply(seen: Seen, opts: &mut LabOptions, t: u64, ps: usize) {
    let mut rates = seen.rates;
    if let Some(z) = opts.zswap.as_mut() {
        // zswap's own traffic (zswpin/zswpout) is not in pswpin/pswpout.
        if let (Ok(r), Some(a)) = (&rates, &seen.zswap_after) {
            let traffic = zmem_kernel::zswap_state::rates(&z.live.state, a, seen.swap_secs);
            rates = Ok(crate::zswap::with_zswap_traffic(r.clone(), &traffic));
        }
        z.after = seen.zswap_after;
        z.secs = seen.swap_secs;
    }
    opts.rates = cold_rates(rates, seen.cold.as_ref(), t, ps);
    let mut pressure = seen.pressure;
    add_asked(&mut pressure.now, &opts.operating.cgroup_limits);
    opts.pressure = Some(pressure);
    opts.operating.cold = seen.cold;
    opts.operating.cold_unseen = seen.cold_unseen;
}

#[cfg(test)]
mod tests {
    use zmem_kernel::cold::{Cost, Method, Skipped};
    use zmem_kernel::pressure::{CgroupPressure, Psi, PsiLine, Watermarks};

    use super::*;

    fn calm() -> Pressure {
        let line = PsiLine { avg10: 0.05, avg60: 0.0, avg300: 0.0, total_us: 5 };
        Pressure {
            psi: Some(Psi { some: line, full: None }),
            watermarks: Watermarks {
                free_bytes: 1 << 30,
                min_bytes: 1,
                low_bytes: 2,
                high_bytes: 3,
            },
            ..Pressure::default()
        }
    }

    /// Referenced bits are cleared only where no reclaim runs to read them.
    #[test]
    fn memory_is_quiet_only_over_the_high_watermark_with_little_psi_and_room_in_cgroups() {
        assert!(quiet(&calm()).is_ok());
        let mut p = calm();
        p.watermarks.free_bytes = 2;
        assert!(quiet(&p).unwrap_err().contains("short"));
        let mut p = calm();
        p.psi.as_mut().unwrap().some.avg10 = 0.5;
        assert!(quiet(&p).unwrap_err().contains("PSI"));
        let mut p = calm();
        p.cgroups.push(CgroupPressure {
            path: "/cg".into(),
            version: 1,
            usage_bytes: Some(96),
            max_bytes: Some(100),
            high_bytes: None,
            refaults: Default::default(),
            psi: None,
            anon_bytes: None,
            inactive_file_bytes: None,
        });
        assert!(quiet(&p).unwrap_err().contains("/cg is near its limit"));
        p.cgroups[0].usage_bytes = Some(90);
        assert!(quiet(&p).is_ok());
        assert!(quiet(&Pressure::default()).unwrap_err().contains("unknown"));
    }

    #[test]
    fn the_ages_are_those_the_window_reaches_and_t() {
        assert_eq!(ages(60, 60), [10, 30, 60]);
        assert_eq!(ages(60, 45), [10, 30, 45, 60]);
        assert_eq!(ages(20, 60), [10]);
        assert!(ages(5, 60).is_empty());
        assert_eq!(ages(300, 120), [10, 30, 60, 120, 300]);
    }

    #[test]
    fn the_cold_plan_says_why_not() {
        let why = |r: Result<(Vec<u32>, Vec<u64>), String>| r.unwrap_err();
        assert!(why(cold_plan(true, true, &calm(), 60, 60)).contains("--no-cold"));
        assert!(why(cold_plan(false, false, &calm(), 60, 60)).contains("not this machine's"));
        let mut short = calm();
        short.watermarks.free_bytes = 1;
        assert!(why(cold_plan(true, false, &short, 60, 60)).contains("memory is short"));
        assert!(why(cold_plan(true, false, &calm(), 5, 60)).contains("reaches no age"));
    }

    /// Observed rates stand; with none, memory idle for T coming back prices the CPU.
    #[test]
    fn with_nothing_observed_the_cold_return_gives_the_rates() {
        let observed = Rates {
            swap_ins_per_sec: 3.0,
            swap_outs_per_sec: 4.0,
            observed_secs: 60.0,
            source: "observed".into(),
            note: String::new(),
        };
        let c = ColdCurve {
            method: Method::ClearRefsReferenced,
            ages_secs: vec![30, 60],
            asked_ages_secs: vec![30, 60],
            read_at_secs: vec![30.0, 60.0],
            anon_bytes: 1 << 20,
            cold_bytes_at_age: vec![900_000, 800_000],
            vanished_bytes_at_age: vec![0, 0],
            returned_bytes_per_sec: vec![4096.0 * 2.0],
            per_process: Vec::new(),
            skipped: Skipped::default(),
            cost: Cost::default(),
            notes: Vec::new(),
        };
        assert_eq!(cold_rates(Ok(observed.clone()), Some(&c), 60, 4096), Ok(observed));
        let r = cold_rates(Err("no swap".into()), Some(&c), 60, 4096).unwrap();
        assert_eq!(
            (r.swap_ins_per_sec, r.swap_outs_per_sec, r.source.as_str()),
            (2.0, 2.0, "cold")
        );
        assert!(
            r.note.starts_with("no swap: memory idle for 60 s") && r.note.contains("upper bound")
        );
        // T not read: the reason stands, and unpriced it is 0 with its reason.
        assert_eq!(cold_rates(Err("no swap".into()), Some(&c), 120, 4096), Err("no swap".into()));
        assert_eq!(cold_rates(Err("no swap".into()), None, 60, 4096), Err("no swap".into()));
        let none = unpriced(Err("no swap".into())).unwrap();
        assert_eq!((none.swap_ins_per_sec, none.source.as_str()), (0.0, "none"));
        assert!(none.note.starts_with("no swap, and no cold curve"), "{}", none.note);
        assert_eq!(unpriced(Ok(r.clone())), Ok(r));
    }
}
