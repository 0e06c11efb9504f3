//! The request of `zmem validate apply` ([`ValidateApplyRequest`]): its defaults (its
//! `Default`, which the CLI's clap defaults are read from), its checks (an [`ArgError`] naming
//! the argument) and the call that reads the decision (a lab report, or a lab run with its
//! defaults) and runs [`super::run`].

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use zmem_experiments::LabError;
use zmem_kernel::reclaim::Exclude;
use zmem_lab::{ArgError, Progress};

use super::{ApplyConfig, ApplyReport, Plan};
use crate::request::MAX_TIMEOUT_SECS;

/// What a user can ask of `zmem validate apply`: the decision to apply, and how to watch it
/// (the engine's [`ApplyConfig`], whose `Default` holds the defaults `--help` states).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidateApplyRequest {
    /// A lab report (`zmem lab --json`, or `-o DIR`'s report.json); none: the lab runs first
    /// with its defaults.
    pub report: Option<PathBuf>,
    pub apply: ApplyConfig,
}

impl Default for ApplyConfig {
    fn default() -> Self {
        Self {
            seconds: 5 * 60,
            every: Duration::from_secs(5),
            pids: None,
            exclude: Exclude::default(),
            no_proactive: false,
            swap_dir: PathBuf::from(crate::zswap_swap::DEFAULT_SWAP_DIR),
        }
    }
}

/// `LIST` of `--pid`: pids separated by commas.
pub fn parse_pids(list: &str) -> Result<Vec<u32>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| format!("{p:?} is not a pid"))
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|v| if v.is_empty() { Err("no pid given".into()) } else { Ok(v) })
}

impl ValidateApplyRequest {
    /// The arguments with a default, as `zmem validate apply --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("minutes", (self.apply.seconds / 60).to_string()),
            ("swap_dir", self.apply.swap_dir.display().to_string()),
        ]
    }

    /// Refuses what could not run, before anything is read or made.
    pub fn check(&self) -> Result<(), ArgError> {
        let a = &self.apply;
        if !(1..=MAX_TIMEOUT_SECS).contains(&a.seconds) {
            return Err(ArgError::with_value(
                "minutes",
                a.seconds / 60,
                format!("give 1 to {} minutes", MAX_TIMEOUT_SECS / 60),
            ));
        }
        if a.every.is_zero() {
            return Err(ArgError::new("every", "a sample needs a period"));
        }
        if let Some(p) = &a.pids {
            if p.is_empty() {
                return Err(ArgError::new("pid", "no pid given"));
            }
            let gone: Vec<String> = p
                .iter()
                .filter(|&&pid| {
                    super::sample::process(std::path::Path::new("/proc"), pid).is_none()
                })
                .map(u32::to_string)
                .collect();
            if !gone.is_empty() {
                return Err(ArgError::with_value("pid", gone.join(","), "no such running process"));
            }
        }
        Ok(())
    }

    /// The engine's configuration, checked.
    pub fn config(&self) -> Result<&ApplyConfig, ArgError> {
        self.check()?;
        Ok(&self.apply)
    }

    /// The decision: the report's, else a lab run's with the lab's defaults (`progress` shows
    /// it).
    pub fn plan(&self, progress: &dyn Progress) -> Result<Plan, LabError> {
        match &self.report {
            Some(path) => Plan::read(path).map_err(LabError::Setup),
            None => {
                let r = zmem_lab::run_lab(zmem_lab::LabRequest::default(), progress)?;
                Ok(Plan::from_report(&r))
            }
        }
    }

    /// Refuses (one line) where this machine cannot apply `plan`: not root, or the kernel
    /// lacks what the decision configures.
    pub fn refuse(plan: &Plan) -> Result<(), LabError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LabError::Setup(
                "not root: applying a decision needs swapon, zram's and zswap's controls".into(),
            ));
        }
        let why = match plan.decision.kind {
            zmem_lab::Kind::Zram => zmem_kernel::zram_device::unavailable_reason(),
            zmem_lab::Kind::Zswap => (!std::path::Path::new(crate::zswap_params::PARAMS_DIR)
                .is_dir())
            .then(|| "this kernel has no zswap (CONFIG_ZSWAP off)".to_string()),
            _ => None,
        };
        why.map_or(Ok(()), |w| {
            Err(LabError::Setup(format!("cannot apply {}: {w}", plan.decision.config)))
        })
    }

    /// Applies `plan` (read by [`Self::plan`], refused by [`Self::refuse`] where this machine
    /// cannot), watches, undoes and reports ([`super::run`]). `stop` (set by SIGINT/SIGTERM)
    /// ends the watch early, and the undo runs; `line` gets the progress lines.
    pub fn apply(
        &self,
        plan: &Plan,
        stop: &AtomicBool,
        line: &mut dyn FnMut(&str),
    ) -> Result<ApplyReport, LabError> {
        let cfg = self.config()?;
        Self::refuse(plan)?;
        super::run(plan, cfg, stop, line).map_err(LabError::Setup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_lists_parse() {
        assert_eq!(parse_pids("12, 34").unwrap(), [12, 34]);
        for bad in ["", "x", "0", "12,-3"] {
            assert!(parse_pids(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_defaults_make_the_engines_configuration() {
        let r = ValidateApplyRequest::default();
        let cfg = r.config().unwrap();
        assert_eq!((cfg.seconds, cfg.every), (300, Duration::from_secs(5)));
        assert!(cfg.pids.is_none() && !cfg.no_proactive);
        assert_eq!(cfg.swap_dir, PathBuf::from("/var/tmp"));
        assert_eq!(r.shown_defaults()[0], ("minutes", "5".to_string()));
    }

    #[test]
    fn bad_arguments_are_named() {
        let bad = |r: ValidateApplyRequest| r.check().unwrap_err();
        let with = |apply: ApplyConfig| ValidateApplyRequest { report: None, apply };
        assert_eq!(bad(with(ApplyConfig { seconds: 0, ..Default::default() })).arg, "minutes");
        let e = bad(with(ApplyConfig { pids: Some(vec![u32::MAX - 1]), ..Default::default() }));
        assert_eq!(e.arg, "pid");
        assert!(e.flag().contains("no such running process"), "{}", e.flag());
        let me = Some(vec![std::process::id()]);
        assert!(with(ApplyConfig { pids: me, ..Default::default() }).check().is_ok());
    }
}
