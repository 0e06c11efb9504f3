//! The lab's front door: [`LabRequest`], what a user asks of the main job, and [`run_lab`], the
//! one entry point the CLI (`zmem lab`) and Python (`zmem.lab`) both call. Each front end only
//! maps its flags or keyword arguments onto a request, through the lab's table of options
//! (`lab_options.rs`, whose parsers are the ones here), so both refuse the same input with the
//! same words and run the same sequence: the trace read (a bad file fails at once), the
//! evidence gathered, the live swap watched, every measurement run, the advice made.

use std::path::PathBuf;
use std::time::Duration;

use zmem_pages::trace::Trace;
use zmem_sim::swap_device::{DeviceSpec, SwapDevice};

use std::sync::atomic::{AtomicBool, Ordering};

use super::{ArgError, window};
use crate::operating::OperatingInput;
use crate::{
    Budgets, Coverage, Findings, Input, LabError, LabOptions, LabReport, Progress, TraceSource,
    evidence,
};

/// Everything a user can ask of `zmem lab` / `zmem.lab` (output formats aside, which are the
/// front ends' own). Its `Default` is every default of the lab's options; each option sets one
/// field (`LAB_OPTIONS`).
#[derive(Debug)]
pub struct LabRequest {
    /// Where the pages come from.
    pub input: Input,
    /// How many of them to measure.
    pub coverage: Coverage,
    /// Seconds to watch the live swap traffic (0: none).
    pub observe_secs: u64,
    /// The CPU and latency budgets.
    pub budgets: Budgets,
    /// The block device behind a swap file; none (`auto`): this machine's ([`auto_device`]).
    pub swap_device: Option<DeviceSpec>,
    /// A trace to replay instead of the generated one.
    pub trace: Option<PathBuf>,
    /// Threads the measurements run on; 0: one per core.
    pub threads: usize,
    /// Minimum time per compressor pass.
    pub min_time: Duration,
    /// Mount debugfs for the read of zswap's counters where it is not mounted (and unmount it
    /// after), only when asked.
    pub mount_debugfs: bool,
    /// The cold age T, in seconds ([`crate::operating`]).
    pub cold_age_secs: u64,
    /// Cgroups to figure today's point at another limit (`--cgroup-limit PATH=SIZE`).
    pub cgroup_limits: Vec<(String, u64)>,
    /// Do not read the cold curve (it clears the processes' referenced bits; `window`).
    pub no_cold: bool,
    /// Price CPU at the generated trace's swap rates where nothing else gives rates (no swap
    /// observed, no cold curve, no `--trace`); without it that CPU is not priced.
    pub generated_trace: bool,
    /// Leave proactive reclaim out of the decision (`crate::proactive`).
    pub no_proactive: bool,
    /// Never paged out by the proactive reclaim the decision adds.
    pub exclude: zmem_kernel::reclaim::Exclude,
}

impl Default for LabRequest {
    fn default() -> Self {
        Self {
            input: Input::Auto,
            coverage: Coverage::choose(None, None),
            observe_secs: 60,
            budgets: Budgets::default(),
            swap_device: None,
            trace: None,
            threads: 0,
            min_time: LabOptions::default().min_time,
            mount_debugfs: false,
            cold_age_secs: crate::operating::DEFAULT_COLD_AGE_SECS,
            cgroup_limits: Vec::new(),
            no_cold: false,
            generated_trace: false,
            no_proactive: false,
            exclude: zmem_kernel::reclaim::Exclude::default(),
        }
    }
}

/// The word for "this machine's device" ([`auto_device`]) in `swap_device`.
pub const AUTO_DEVICE: &str = "auto";

/// A `swap_device` as a user writes it: [`AUTO_DEVICE`] for none, else the profile or path
/// (what `--help` states as the default, read from [`LabRequest::default`]).
pub fn swap_device_text(d: &Option<DeviceSpec>) -> String {
    d.as_ref().map_or_else(|| AUTO_DEVICE.to_string(), ToString::to_string)
}

/// `--swap-device`: `auto` (none: [`auto_device`]), a profile name or a path to measure.
pub fn parse_swap_device(text: &str) -> Result<Option<DeviceSpec>, ArgError> {
    if text == AUTO_DEVICE {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|e| ArgError::new("swap_device", e))
}

/// The device zswap's misses would read on this machine: the directory of an active swap file
/// (measured there), a swap partition's kind (its disk's name and `queue/rotational`: nvme,
/// hdd, else ssd; a partition cannot be measured without writing to it), and with no disk swap
/// the directory the apply script makes zswap's swap file in (measured there). Never a device
/// the machine does not have.
pub fn auto_device() -> DeviceSpec {
    let areas = zmem_kernel::stat::swaps().unwrap_or_default();
    let disk = areas.iter().find(|a| !a.filename.starts_with("/dev/zram"));
    match disk {
        Some(a) if a.kind == "file" => match std::path::Path::new(&a.filename).parent() {
            Some(dir) => DeviceSpec::Path(dir.to_path_buf()),
            None => DeviceSpec::default(),
        },
        Some(a) => {
            let name = a.filename.trim_start_matches("/dev/");
            let rotational =
                std::fs::read_to_string(format!("/sys/class/block/{name}/../queue/rotational"))
                    .or_else(|_| {
                        std::fs::read_to_string(format!("/sys/class/block/{name}/queue/rotational"))
                    })
                    .map(|t| t.trim() == "1")
                    .unwrap_or(false);
            profile_of(name, rotational)
        }
        None => DeviceSpec::Path(swap_file_dir().to_path_buf()),
    }
}

/// The nearest existing directory above zswap's new swap file
/// ([`crate::decision::SWAP_FILE`]): /var/lib exists where /var/lib/zmem may not.
pub fn swap_file_dir() -> &'static std::path::Path {
    let file = std::path::Path::new(crate::decision::SWAP_FILE);
    file.ancestors().skip(1).find(|d| d.is_dir()).unwrap_or(std::path::Path::new("/"))
}

/// The profile of a disk by its block device's name and whether it is rotational.
fn profile_of(name: &str, rotational: bool) -> DeviceSpec {
    let profile = if name.starts_with("nvme") {
        "nvme"
    } else if rotational {
        "hdd"
    } else {
        "ssd"
    };
    profile.parse().unwrap_or_default()
}

/// [`auto_device`], resolved for about `duration` ([`resolve_or_profile`]).
pub fn auto_swap_device(duration: Duration) -> SwapDevice {
    resolve_or_profile(&auto_device(), duration)
}

/// `spec` resolved; a directory that cannot be measured (a full or read-only file system,
/// tmpfs) gives the profile of the disk under it, its note saying why. For a device the user
/// did not name: the lab goes on where a measurement of its own choosing fails.
fn resolve_or_profile(spec: &DeviceSpec, duration: Duration) -> SwapDevice {
    let e = match SwapDevice::resolve(spec, duration) {
        Ok(d) => return d,
        Err(e) => e,
    };
    let dir = match spec {
        DeviceSpec::Path(p) => p.as_path(),
        DeviceSpec::Profile(_) => std::path::Path::new("/"),
    };
    let name = zmem_kernel::stat::block_device_name(dir).unwrap_or_default();
    let rotational = zmem_kernel::stat::rotational(dir).unwrap_or(false);
    let mut d = SwapDevice::resolve(&profile_of(&name, rotational), duration).unwrap_or_default();
    d.note = format!("not measured ({e}); {}", d.note);
    d
}

/// The sources a user can name: `zram`, `processes` or `builtin`.
pub fn parse_source(text: &str) -> Result<Input, ArgError> {
    match text {
        "zram" => Ok(Input::Zram),
        "processes" => Ok(Input::Processes),
        "builtin" => Ok(Input::Builtin),
        other => Err(ArgError::new(
            "source",
            format!("unknown source {other:?} (zram, processes or builtin)"),
        )),
    }
}

/// A page count: `all`, or a number of pages of at least 1.
pub fn parse_max_pages(text: &str) -> Result<Coverage, ArgError> {
    if text == "all" {
        return Ok(Coverage::All);
    }
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Coverage::Even(n)),
        _ => Err(ArgError::new(
            "max_pages",
            format!("{text:?} is neither a number of pages (1 or more) nor `all`"),
        )),
    }
}

impl Budgets {
    /// The default budgets with the user's CPU (percent of a core) and added p99 latency
    /// (microseconds), refused unless both are numbers of at least 0 (the options' own check:
    /// an f64's text reads back as the same number).
    pub fn checked(cpu_percent_of_core: f64, added_load_p99_us: f64) -> Result<Self, LabError> {
        budget("cpu_budget", &cpu_percent_of_core.to_string())?;
        budget("latency_budget", &added_load_p99_us.to_string())?;
        Ok(Self { cpu_percent_of_core, added_load_p99_us, ..Self::default() })
    }
}

/// Runs the main job as asked: the findings gathered and measured ([`measure_lab`]), or taken
/// from an evidence file ([`Input::Findings`]), then judged with the request's budgets and
/// proactive reclaim's options.
pub fn run_lab(mut req: LabRequest, progress: &dyn Progress) -> Result<LabReport, LabError> {
    let (budgets, wanted, exclude) = (req.budgets, !req.no_proactive, req.exclude.clone());
    let mut f = match std::mem::replace(&mut req.input, Input::Auto) {
        Input::Findings(f) => *f,
        input => measure_lab(LabRequest { input, ..req }, progress)?,
    };
    f.budgets = budgets;
    f.proactive.wanted = wanted;
    f.proactive.exclude = exclude;
    crate::judge::judge(&f)
}

/// Steps 1 and 2 as asked (`zmem evidence`): the pages gathered, the live swap watched,
/// every measurement run; the findings, before any judgement.
pub fn measure_lab(req: LabRequest, progress: &dyn Progress) -> Result<Findings, LabError> {
    if let Input::Findings(_) = req.input {
        return Err(LabError::Setup("an evidence file is measured already: judge it".into()));
    }
    // Read before the long steps: a bad trace file fails at once.
    let trace =
        req.trace.as_ref().map(|p| Trace::open_with_origin(p).map(|t| (p, t))).transpose()?;
    window::check_asked(&req.cgroup_limits)?;
    let device = match &req.swap_device {
        Some(spec) => SwapDevice::resolve(spec, Duration::from_secs(1))?,
        None => auto_swap_device(Duration::from_secs(1)),
    };
    let e = evidence::gather(req.input, req.coverage, progress)?;
    let trace = match trace {
        Some((path, (t, origin))) => {
            let accesses = evidence::fit_trace(&t, e.set_pages, e.source.pages)
                .map_err(|err| LabError::Setup(format!("trace {}: {err}", path.display())))?;
            let fitted = if e.source.pages < e.set_pages {
                format!("; its {} pages folded onto the {} sampled", e.set_pages, e.source.pages)
            } else {
                String::new()
            };
            let detail = format!(
                "{} ({} trace over {} pages{fitted})",
                path.display(),
                origin.name(),
                t.page_count
            );
            let source =
                TraceSource { kind: "file".into(), detail, accesses: accesses.len() as u64 };
            Some((accesses, source))
        }
        None => None,
    };
    // zswap read before the observation window: its Now is the state at the window's end.
    let zswap_live = crate::zswap::read_live(req.mount_debugfs);
    let t = req.cold_age_secs;
    let before = zmem_kernel::pressure::read();
    let from_processes = e.source.kind == "captured";
    let this_machine = from_processes || e.source.kind == "zram";
    let plan = window::Plan {
        zram_ids: &e.zram_ids,
        observe_secs: req.observe_secs,
        page_size: e.source.page_size,
        zswap_present: zswap_live.present,
        cold: window::cold_plan(from_processes, req.no_cold, &before, req.observe_secs, t),
    };
    let zswap =
        Some(crate::zswap::ZswapInput { live: zswap_live, after: None, secs: 0.0, weights: None });
    let mut opts = LabOptions {
        budgets: req.budgets,
        now: e.now,
        rates: Err("not observed yet".into()),
        device,
        sample: e.sample,
        trace,
        threads: req.threads,
        min_time: req.min_time,
        kernel: Some(e.kernel),
        zswap,
        operating: OperatingInput {
            cold_age_secs: t,
            cgroup_pids: cgroup_processes(&req.cgroup_limits, &before),
            page_pids: e.pids.clone(),
            cgroup_limits: req.cgroup_limits,
            this_machine,
            ..OperatingInput::default()
        },
        proactive: crate::proactive::Input {
            wanted: !req.no_proactive,
            exclude: req.exclude,
            abilities: this_machine.then(abilities),
        },
        host: host_of(&e.host, this_machine),
        ..LabOptions::default()
    };
    let ps = e.source.page_size;
    // A trace of the user's prices CPU where nothing was observed, as the generated one does
    // only when asked.
    let generated = req.generated_trace || req.trace.is_some();
    let measured = AtomicBool::new(false);
    std::thread::scope(|s| {
        let seen = s.spawn(|| window::run(&plan, &measured, progress));
        crate::measure_beside(&e.pages, e.source, &mut opts, progress, |o| {
            measured.store(true, Ordering::Release);
            let seen = seen.join().map_err(|_| LabError::Setup("the window panicked".into()))??;
            window::apply(seen, o, t, ps);
            // Read at the window's end, as the zswap state after it is.
            let weights = e
                .pids
                .as_deref()
                .and_then(|p| crate::zswap::swap_weights(p, crate::zswap::vm_swap_pages));
            if let Some(z) = o.zswap.as_mut() {
                z.weights = weights;
            }
            if !generated {
                o.rates = window::unpriced(o.rates.clone());
            }
            Ok(())
        })
    })
}

/// The host and labels the findings carry: a page set's, else this machine's name where the
/// pages are this machine's (`/proc/sys/kernel/hostname`), which a fleet names the host by.
fn host_of(
    from_set: &std::collections::BTreeMap<String, String>,
    this_machine: bool,
) -> std::collections::BTreeMap<String, String> {
    let mut host = from_set.clone();
    if this_machine && !host.contains_key("host") {
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let name = name.trim();
        if !name.is_empty() {
            host.insert("host".into(), name.to_string());
        }
    }
    host
}

/// The processes of every cgroup asked about and every limited one: their sampled pages
/// give each its own compressibility.
fn cgroup_processes(
    asked: &[(String, u64)],
    p: &zmem_kernel::pressure::Pressure,
) -> Vec<(String, Vec<u32>)> {
    let mut paths: Vec<&str> = asked.iter().map(|(p, _)| p.as_str()).collect();
    paths.extend(p.cgroups.iter().map(|c| c.path.as_str()));
    paths.sort_unstable();
    paths.dedup();
    paths
        .iter()
        .map(|&p| (p.to_string(), crate::operating::compressibility::processes(p)))
        .collect()
}

/// A budget: a number of at least 0 (a budget may be as large as one likes, not infinite).
pub(crate) fn budget(name: &'static str, text: &str) -> Result<f64, ArgError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(ArgError::with_value(name, text.trim(), "must be a number >= 0")),
    }
}

/// What this machine offers for proactive reclaim (reads only): why zmem cannot use a DAMON
/// scheme, `memory.reclaim` or `process_madvise` here, and the running kdamond schemes that
/// already page out anonymous memory.
fn abilities() -> crate::proactive::Abilities {
    use zmem_kernel::record::damon;
    let admin = std::path::Path::new(damon::ADMIN);
    let memory_reclaim =
        match zmem_kernel::cgroups::memory_controller_version(std::path::Path::new("/")) {
            Some(2) => None,
            Some(v) => {
                Some(format!("the memory controller is cgroup v{v} (memory.reclaim is v2's)"))
            }
            None => Some("no memory cgroup controller is mounted".into()),
        };
    crate::proactive::Abilities {
        damon: damon::unavailable_reason(admin),
        memory_reclaim,
        process_madvise: zmem_kernel::record::page_out::unavailable_reason(),
        already: damon::anon_pageout(admin).iter().map(|a| (a.describe(), a.all)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory the lab chose but cannot measure (procfs: no temporary file can be made
    /// there) gives a profile, saying why; a profile resolves as it is.
    #[test]
    fn an_unmeasurable_directory_falls_back_to_a_profile() {
        let spec = DeviceSpec::Path(PathBuf::from("/proc"));
        assert!(SwapDevice::resolve(&spec, Duration::ZERO).is_err());
        let d = resolve_or_profile(&spec, Duration::ZERO);
        assert_eq!(d.kind, "profile");
        assert!(d.note.starts_with("not measured (--swap-device /proc: "), "{}", d.note);
        assert_eq!(d.name, "ssd", "procfs has no disk: neither nvme nor rotational");
        let hdd: DeviceSpec = "hdd".parse().unwrap();
        assert_eq!(resolve_or_profile(&hdd, Duration::ZERO).name, "hdd");
        assert_eq!(profile_of("nvme0n1p2", false).to_string(), "nvme");
        assert_eq!(profile_of("sda1", true).to_string(), "hdd");
    }
}
