//! The requests of `zmem validate replay` / `zmem.validate_replay` ([`ValidateReplayRequest`])
//! and `zmem validate lab` / `zmem.validate_lab` ([`ValidateLabRequest`]), as zmem-lab's
//! `request` module holds the other jobs' (they live here because validation sits above the
//! lab): each holds the job's defaults (its `Default`, which the CLI's clap defaults are read
//! from and Python's `None` stands for), its checks (a [`zmem_lab::ArgError`] naming the
//! argument, worded by each door) and the call that assembles the engine's configuration and
//! runs it. Each door loads the page set and the trace (`zmem_pages::access::load_trace`),
//! gives the stop flag its signals set, and prints or returns the result.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use zmem_comp::AlgoSpec;
use zmem_experiments::LabError;
use zmem_lab::ArgError;
use zmem_pages::access::Access;
use zmem_sim::Progress;

use crate::lab::{LabValidateConfig, LabValidation};
use crate::replay::{ValidateConfig, Validation};
use zmem_lab::ZswapParams;

/// The page size of every validation: the kernel's (x86-64), which the player maps.
pub const PAGE_SIZE: usize = 4096;

/// Most runs of the kernel's side a request may ask for (the CLI's `--kernel-runs` bound).
pub const MAX_KERNEL_RUNS: u64 = 99;

/// The longest a kernel run may be given, in seconds (a week, as every duration flag).
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// The jobs [`defaults`] knows, by their CLI command path.
pub const JOBS: &[&str] = &["validate replay", "validate lab"];

/// Each argument of `job` that has a default, as `zmem JOB --help` states it (Python keyword
/// names); `None` for a job not in [`JOBS`].
pub fn defaults(job: &str) -> Option<Vec<(&'static str, String)>> {
    Some(match job {
        "validate replay" => ValidateReplayRequest::default().shown_defaults(),
        "validate lab" => ValidateLabRequest::default().shown_defaults(),
        _ => return None,
    })
}

/// The player process every kernel run starts in its cgroup: a `zmem` binary in its hidden
/// player mode (`zmem validate play`), so both doors' kernel runs are charged for the same
/// small program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Player {
    /// This program, which is `zmem` (the CLI).
    #[default]
    ThisProgram,
    /// The `zmem` binary at this path (Python's door, whose own program is the interpreter).
    Zmem(PathBuf),
}

impl Player {
    /// What makes the player's command, one per kernel run.
    pub fn command(&self) -> Result<impl Fn() -> Command, LabError> {
        let exe = match self {
            Player::ThisProgram => {
                std::env::current_exe().map_err(|e| LabError::Setup(e.to_string()))?
            }
            Player::Zmem(path) => path.clone(),
        };
        Ok(move || {
            let mut c = Command::new(&exe);
            c.args(["validate", "play"]);
            c
        })
    }
}

/// The RAM budget: `ram`, or half the pages the trace touches and the player's own room
/// ([`crate::replay::default_ram_bytes`]).
fn ram_budget(ram: Option<u64>, trace: &[Access]) -> u64 {
    if let Some(r) = ram {
        return r;
    }
    let mut seen = std::collections::HashSet::new();
    // Anon and file pages alike need room (a file page's id is its own space's).
    let touched = trace.iter().filter(|a| seen.insert((a.file, a.page))).count() as u64;
    crate::replay::default_ram_bytes(touched, PAGE_SIZE)
}

fn check_ram(ram: Option<u64>) -> Result<(), ArgError> {
    match ram {
        Some(r) if r < PAGE_SIZE as u64 => {
            Err(ArgError::sentence("ram", Some(r.to_string()), "is less than one page"))
        }
        _ => Ok(()),
    }
}

fn check_runs_and_timeout(kernel_runs: u64, timeout: Duration) -> Result<(), ArgError> {
    if !(1..=MAX_KERNEL_RUNS).contains(&kernel_runs) {
        return Err(ArgError::with_value(
            "kernel_runs",
            kernel_runs,
            format!("give a number from 1 to {MAX_KERNEL_RUNS}"),
        ));
    }
    if timeout.as_secs() > MAX_TIMEOUT_SECS {
        return Err(ArgError::with_value(
            "timeout",
            timeout.as_secs(),
            format!("more than the most this takes, {MAX_TIMEOUT_SECS}"),
        ));
    }
    Ok(())
}

/// What a user can ask of `zmem validate replay`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateReplayRequest {
    /// The memory cgroup's limit in bytes; none: half the pages the trace touches and the
    /// player's own room.
    pub ram: Option<u64>,
    /// The zram algorithm, on both sides (at its default parameters: the kernel's device runs
    /// so here).
    pub algo: AlgoSpec,
    /// The longest each kernel run may take.
    pub timeout: Duration,
    /// Runs of the kernel's side; its figures are the median run's.
    pub kernel_runs: u64,
    /// Leave the kernel's reclaim to its own statistics flushes.
    pub stale_stats: bool,
    /// Flush the statistics through the warm-up (until 1 s after the memcg's first swap-out),
    /// then leave them to the kernel's own flushes (a running workload's:
    /// [`KernelRunConfig::flush_through_warm_up`]).
    ///
    /// [`KernelRunConfig::flush_through_warm_up`]: crate::kernel_replay::KernelRunConfig::flush_through_warm_up
    pub stale_stats_from_reclaim: bool,
    /// The player's program.
    pub player: Player,
}

impl Default for ValidateReplayRequest {
    fn default() -> Self {
        Self {
            ram: None,
            algo: AlgoSpec {
                name: zmem_lab::DEFAULT_ALGORITHM.to_string(),
                params: zmem_comp::Params::default(),
                dict_path: None,
            },
            timeout: Duration::from_secs(600),
            kernel_runs: 1,
            stale_stats: false,
            stale_stats_from_reclaim: false,
            player: Player::default(),
        }
    }
}

impl ValidateReplayRequest {
    /// The arguments with a default, as `zmem validate replay --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("algo", self.algo.to_string()),
            ("timeout", self.timeout.as_secs().to_string()),
            ("kernel_runs", self.kernel_runs.to_string()),
        ]
    }

    /// Refuses what no validation could take, before the pages are read.
    pub fn check(&self) -> Result<(), ArgError> {
        check_ram(self.ram)?;
        if self.stale_stats && self.stale_stats_from_reclaim {
            return Err(ArgError::new(
                "stale_stats_from_reclaim",
                "give stale_stats or stale_stats_from_reclaim, not both",
            ));
        }
        if self.algo.algorithm_params().is_some() {
            return Err(ArgError::with_value(
                "algo",
                &self.algo,
                "the kernel's device runs at its default parameters here; give the algorithm's \
                 name alone",
            ));
        }
        check_runs_and_timeout(self.kernel_runs, self.timeout)
    }

    /// The engine's configuration for `trace` (whose touched pages size the default budget).
    pub fn config(&self, trace: &[Access]) -> Result<ValidateConfig, ArgError> {
        self.check()?;
        Ok(ValidateConfig {
            ram_bytes: ram_budget(self.ram, trace),
            algorithm: self.algo.name.clone(),
            page_size: PAGE_SIZE,
            timeout: self.timeout,
            kernel_runs: self.kernel_runs as usize,
            flush_stats: !self.stale_stats && !self.stale_stats_from_reclaim,
            flush_through_warm_up: self.stale_stats_from_reclaim,
            file: None,
        })
    }

    /// Validates `trace` over `pages` (whole [`PAGE_SIZE`] pages) against the kernel. The
    /// library checks the trace against the page set, then refuses (one line) where this
    /// machine cannot run the live set-up: not root, no kernel zram, no memory cgroup. `stop`
    /// ends the kernel's run through its error path, which removes what it made. Pages that
    /// came back different are the result for the caller to show, then refuse with
    /// [`ValidateReplayRequest::verified`].
    pub fn run(
        &self,
        pages: &[u8],
        trace: &[Access],
        stop: &AtomicBool,
        progress: &dyn Progress,
    ) -> Result<Validation, LabError> {
        let cfg = self.config(trace)?;
        let player = self.player.command()?;
        crate::replay::run(pages, trace, &cfg, &player, stop, progress)
    }

    /// The validation's own failure: pages swapped in different.
    pub fn verified(v: &Validation) -> Result<(), LabError> {
        if v.verified {
            Ok(())
        } else {
            Err(LabError::Setup("pages swapped in differ from the pages swapped out".into()))
        }
    }
}

/// What a user can ask of `zmem validate lab`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateLabRequest {
    /// The memory cgroup's limit in bytes; none: half the pages the trace touches and the
    /// player's own room.
    pub ram: Option<u64>,
    /// Runs of the kernel's side per configuration.
    pub kernel_runs: u64,
    /// The primary algorithm the lab's candidate list is built for.
    pub primary: String,
    /// The longest each kernel run may take.
    pub timeout: Duration,
    /// zswap configurations to check too.
    pub zswap: Vec<ZswapParams>,
    /// The directory for the zswap runs' swap file.
    pub swap_dir: PathBuf,
    /// Mount debugfs for the zswap runs where it is not mounted (unmounted after).
    pub mount_debugfs: bool,
    /// The player's program.
    pub player: Player,
}

impl Default for ValidateLabRequest {
    fn default() -> Self {
        Self {
            ram: None,
            kernel_runs: 5,
            primary: zmem_lab::DEFAULT_ALGORITHM.to_string(),
            timeout: Duration::from_secs(600),
            zswap: Vec::new(),
            swap_dir: PathBuf::from(crate::zswap_swap::DEFAULT_SWAP_DIR),
            mount_debugfs: false,
            player: Player::default(),
        }
    }
}

impl ValidateLabRequest {
    /// The arguments with a default, as `zmem validate lab --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kernel_runs", self.kernel_runs.to_string()),
            ("primary", self.primary.clone()),
            ("timeout", self.timeout.as_secs().to_string()),
            ("swap_dir", self.swap_dir.display().to_string()),
        ]
    }

    /// Refuses what no validation could take, before the pages are read.
    pub fn check(&self) -> Result<(), ArgError> {
        check_ram(self.ram)?;
        check_runs_and_timeout(self.kernel_runs, self.timeout)
    }

    /// With zswap configurations asked for, the refusal while a swap area this run did not make
    /// is active (zswap stores in front of every swap area: another area's pages would be
    /// counted as the player's), before anything is read or made.
    pub fn refuse_foreign_swaps(&self) -> Result<(), LabError> {
        if self.zswap.is_empty() {
            return Ok(());
        }
        let foreign = crate::zswap_swap::foreign_swaps(&[])?;
        match crate::zswap_swap::refusal(&foreign) {
            Some(line) => Err(LabError::Setup(line)),
            None => Ok(()),
        }
    }

    /// The engine's configuration for `trace`.
    pub fn config(&self, trace: &[Access]) -> Result<LabValidateConfig, ArgError> {
        self.check()?;
        Ok(LabValidateConfig {
            ram_bytes: ram_budget(self.ram, trace),
            page_size: PAGE_SIZE,
            timeout: self.timeout,
            kernel_runs: self.kernel_runs as usize,
            flush_stats: true,
            primary: self.primary.clone(),
            zswap: self.zswap.clone(),
            swap_dir: self.swap_dir.clone(),
        })
    }

    /// Validates the lab on `pages` (whole [`PAGE_SIZE`] pages) with `trace` (none: the lab's
    /// own generated trace for the pages) against the running kernel, with debugfs mounted for
    /// the zswap runs where asked. The notes say what mounting did; configurations whose pages
    /// came back different are the result for the caller to show, then refuse with
    /// [`ValidateLabRequest::verified`].
    pub fn run(
        &self,
        pages: &[u8],
        trace: Option<&[Access]>,
        stop: &AtomicBool,
        progress: &dyn Progress,
    ) -> Result<(LabValidation, Vec<String>), LabError> {
        self.check()?;
        self.refuse_foreign_swaps()?;
        let generated;
        let trace = match trace {
            Some(t) => t,
            None => {
                generated = zmem_lab::evidence::trace_for((pages.len() / PAGE_SIZE) as u64)?;
                &generated
            }
        };
        let cfg = self.config(trace)?;
        let player = self.player.command()?;
        let caps = zmem_kernel::caps::read();
        let go = || crate::lab::run(pages, trace, &cfg, &caps, &player, stop, progress);
        if self.mount_debugfs && !self.zswap.is_empty() {
            let (v, notes) = zmem_kernel::zswap_state::with_debugfs_mounted(go);
            Ok((v?, notes))
        } else {
            Ok((go()?, Vec::new()))
        }
    }

    /// The validation's own failure: a configuration's pages read back different.
    pub fn verified(v: &LabValidation) -> Result<(), LabError> {
        if v.configurations.iter().all(|c| c.verified) {
            Ok(())
        } else {
            Err(LabError::Setup("pages read back differ from the pages written".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(page: u64) -> Access {
        Access { page, write: false, file: false, time_ns: 0 }
    }

    #[test]
    fn the_replays_defaults_make_the_engines_configuration() {
        let trace: Vec<Access> = [0, 1, 2, 3, 1, 0].into_iter().map(acc).collect();
        let cfg = ValidateReplayRequest::default().config(&trace).unwrap();
        assert_eq!(cfg.ram_bytes, crate::replay::default_ram_bytes(4, PAGE_SIZE));
        assert_eq!(cfg.algorithm, zmem_lab::DEFAULT_ALGORITHM);
        assert_eq!((cfg.kernel_runs, cfg.flush_stats), (1, true));
        assert_eq!(cfg.timeout, Duration::from_secs(600));
        let stale =
            ValidateReplayRequest { stale_stats: true, ram: Some(1 << 20), ..Default::default() };
        let cfg = stale.config(&trace).unwrap();
        assert_eq!(
            (cfg.ram_bytes, cfg.flush_stats, cfg.flush_through_warm_up),
            (1 << 20, false, false)
        );
        let warm = ValidateReplayRequest { stale_stats_from_reclaim: true, ..Default::default() };
        let cfg = warm.config(&trace).unwrap();
        assert_eq!((cfg.flush_stats, cfg.flush_through_warm_up), (false, true));
        let both = ValidateReplayRequest { stale_stats: true, ..warm };
        assert_eq!(both.check().unwrap_err().arg, "stale_stats_from_reclaim");
    }

    #[test]
    fn bad_arguments_are_named_in_each_doors_words() {
        let bad = |r: ValidateReplayRequest| r.check().unwrap_err();
        let e = bad(ValidateReplayRequest { ram: Some(100), ..Default::default() });
        assert_eq!(e.flag(), "--ram 100 is less than one page");
        assert_eq!(e.keyword(), "ram=100 is less than one page");
        let algo = "zstd:3".parse().unwrap();
        let e = bad(ValidateReplayRequest { algo, ..Default::default() });
        assert_eq!(e.arg, "algo");
        assert!(e.flag().starts_with("--algo zstd:3: the kernel's device"), "{}", e.flag());
        assert_eq!(
            bad(ValidateReplayRequest { kernel_runs: 0, ..Default::default() }).arg,
            "kernel_runs"
        );
        let long = Duration::from_secs(MAX_TIMEOUT_SECS + 1);
        assert_eq!(
            bad(ValidateReplayRequest { timeout: long, ..Default::default() }).arg,
            "timeout"
        );
        let lab = ValidateLabRequest { kernel_runs: 100, ..Default::default() };
        assert_eq!(lab.check().unwrap_err().arg, "kernel_runs");
        assert_eq!(
            ValidateLabRequest { ram: Some(1), ..Default::default() }.check().unwrap_err().arg,
            "ram"
        );
    }

    #[test]
    fn the_labs_defaults_make_the_engines_configuration() {
        let trace: Vec<Access> = (0..10).map(acc).collect();
        let cfg = ValidateLabRequest::default().config(&trace).unwrap();
        assert_eq!((cfg.kernel_runs, cfg.primary.as_str()), (5, "lzo-rle"));
        assert_eq!(cfg.swap_dir, PathBuf::from("/var/tmp"));
        assert!(cfg.zswap.is_empty() && cfg.flush_stats);
        assert_eq!(cfg.ram_bytes, crate::replay::default_ram_bytes(10, PAGE_SIZE));
        assert!(ValidateLabRequest::default().refuse_foreign_swaps().is_ok());
    }

    #[test]
    fn the_player_is_a_zmem_binary_in_its_player_mode() {
        let cmd = Player::Zmem("/opt/zmem/bin/zmem".into()).command().unwrap()();
        assert_eq!(cmd.get_program(), "/opt/zmem/bin/zmem");
        let args: Vec<_> = cmd.get_args().collect();
        assert_eq!(args, ["validate", "play"]);
        let own = Player::ThisProgram.command().unwrap()();
        assert_eq!(own.get_program(), std::env::current_exe().unwrap().as_os_str());
    }

    #[test]
    fn every_job_has_its_defaults() {
        for job in JOBS {
            assert!(defaults(job).is_some_and(|d| !d.is_empty()), "{job}");
        }
        assert!(defaults("lab").is_none());
    }
}
