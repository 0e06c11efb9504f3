//! One request per job both front doors run (ripgrep's lowargs -> hiargs split): the CLI maps
//! its clap arguments onto a request, Python maps its keyword arguments onto the same request,
//! and the request does the rest. Each request type holds the job's defaults (its `Default`:
//! the CLI's clap defaults are read from it, Python's `None` means it), its checks (one
//! [`ArgError`] naming the argument, which each door words as its own: `--pool slab: ...`,
//! `pool=slab: ...`) and the call that turns it into the engine's configuration and runs it.
//!
//! | job                     | request                      | runs                        |
//! |-------------------------|------------------------------|-----------------------------|
//! | `zmem lab`, `zmem.lab`  | [`LabRequest`]               | [`run_lab`]                 |
//! | `zmem comp-bench`       | [`CompBenchRequest`]         | [`CompBenchRequest::run`]   |
//! | `zmem zram`             | [`ZramRequest`]              | [`ZramRequest::run`]        |
//! | `zmem replay`           | [`ReplayRequest`]            | [`ReplayRequest::run`]      |
//! | `zmem study allocators` | [`StudyRequest`]             | [`StudyRequest::run`]       |
//! | `zmem capture`          | [`CaptureRequest`]           | [`CaptureRequest::run`]     |
//! | `zmem gen`              | [`GenerateRequest`]          | [`GenerateRequest::run`]    |
//! | `zmem dict train`       | [`DictTrainRequest`]         | [`DictTrainRequest::run`]   |
//! | `zmem status`           | [`StatusRequest`]            | [`StatusRequest::run`]      |
//! | `zmem cold` (CLI only)  | [`ColdRequest`]              | [`ColdRequest::start`]      |
//! | `zmem validate replay`  | `ValidateReplayRequest` (1)  | `ValidateReplayRequest::run`|
//! | `zmem validate lab`     | `ValidateLabRequest` (1)     | `ValidateLabRequest::run`   |
//!
//! (1) In zmem-validate's `request` module: validation sits above the lab, so its requests do
//! too, with their own `defaults`. The Python door names each job's function after the command
//! (`zmem.lab`, `zmem.zram_run`, `zmem.replay`, `zmem.study_allocators`, `zmem.comp_bench`,
//! `zmem.PageSet.capture`, `zmem.PageSet.generate`, `zmem.dict_train`, `zmem.status`,
//! `zmem.validate_replay`, `zmem.validate_lab`). Jobs only the CLI has: `trace`, `export`,
//! `exporter`, `conform`, `zram-speed`, `mapbench`, `compress`/`decompress`.
//!
//! [`defaults`] lists each job's defaults as `--help` states them, so a test can hold both
//! doors to one set.
//!
//! The lab goes one step further: its options are one table, [`LAB_OPTIONS`] (name, help,
//! default read from [`LabRequest::default`], value kind, parser), from which the CLI builds its
//! clap arguments and Python its keyword arguments, and through which both set the request
//! ([`LabArgs`]).

mod capture;
mod cold;
mod comp_bench;
mod dict;
mod generate;
mod lab;
mod lab_options;
mod replay;
mod status;
mod study;
mod window;
mod zram;

pub use capture::{CaptureRequest, CaptureSummary, Captured};
pub use cold::{ColdRequest, parse_age, parse_ages};
pub use comp_bench::CompBenchRequest;
pub use dict::{DictTrainReport, DictTrainRequest, MAX_SAMPLES, shown_size};
pub use generate::GenerateRequest;
pub use lab::{
    AUTO_DEVICE, LabRequest, auto_device, auto_swap_device, measure_lab, parse_max_pages,
    parse_source, parse_swap_device, run_lab, swap_device_text, swap_file_dir,
};
pub use lab_options::{LAB_OPTIONS, LabArgs, LabOption, ValueKind, lab_option};
pub use replay::{ReplayRequest, WatermarkSpec};
pub use status::StatusRequest;
pub use study::{MAX_ROUNDS, StudyRequest};
pub use zram::ZramRequest;

use crate::LabError;

/// The most threads a `threads` argument may ask for (the CLI's `--threads` bound too).
pub const MAX_THREADS: u64 = 1024;
/// The longest a duration argument may be in seconds (a week): longer is a typo, and a deadline
/// that far off cannot be added to the clock on every system.
pub const MAX_SECS: u64 = 7 * 24 * 3600;

/// A count as a user writes it: a whole number in `min..=max`, else the reason (which the
/// caller puts after the argument's name). Negative numbers are "negative", not "not a number".
pub fn parse_count(text: &str, min: u64, max: u64) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("not a whole number".into());
    }
    if t.starts_with('-') && digits.bytes().any(|b| b != b'0') {
        return Err(format!("negative; give a number from {min} to {max}"));
    }
    match digits.parse::<u64>().ok().filter(|n| *n <= max) {
        None => Err(format!("more than the most this takes, {max}")),
        Some(n) if n < min => Err(format!("less than {min}")),
        Some(n) => Ok(n),
    }
}

/// A request's argument refused: which one (its Python keyword; the CLI's flag is the same with
/// dashes; empty: the request as a whole), the value as given where it helps, and why. Each door words it as its own
/// ([`ArgError::flag`], [`ArgError::keyword`]); the reason is the same words in both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub arg: &'static str,
    pub value: Option<String>,
    pub why: String,
    /// The reason continues the argument as one sentence (`--ram 100 is less than one page`)
    /// rather than after a colon: the words some commands have always said.
    pub sentence: bool,
}

impl ArgError {
    pub fn new(arg: &'static str, why: impl Into<String>) -> Self {
        Self { arg, value: None, why: why.into(), sentence: false }
    }

    pub fn with_value(arg: &'static str, value: impl ToString, why: impl Into<String>) -> Self {
        Self { arg, value: Some(value.to_string()), why: why.into(), sentence: false }
    }

    /// The argument (and its value, where given) and the reason as one sentence:
    /// `--ram 100 is less than one page`, `ram=100 is less than one page`.
    pub fn sentence(arg: &'static str, value: Option<String>, rest: impl Into<String>) -> Self {
        Self { arg, value, why: rest.into(), sentence: true }
    }

    fn sep(&self) -> &'static str {
        if self.sentence { " " } else { ": " }
    }

    /// The CLI's words: `--pool slab: unknown allocator ...`.
    pub fn flag(&self) -> String {
        if self.arg.is_empty() {
            return self.why.clone();
        }
        let value = self.value.as_ref().map(|v| format!(" {v}")).unwrap_or_default();
        format!("--{}{value}{}{}", self.arg.replace('_', "-"), self.sep(), self.why)
    }

    /// Python's words: `pool=slab: unknown allocator ...`.
    pub fn keyword(&self) -> String {
        if self.arg.is_empty() {
            return self.why.clone();
        }
        let value = self.value.as_ref().map(|v| format!("={v}")).unwrap_or_default();
        format!("{}{value}{}{}", self.arg, self.sep(), self.why)
    }
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.keyword())
    }
}

impl std::error::Error for ArgError {}

impl From<ArgError> for LabError {
    fn from(e: ArgError) -> Self {
        LabError::Setup(e.keyword())
    }
}

/// The kernel's default algorithm at its default parameters: every job's default `algo`.
pub(crate) fn default_algo() -> zmem_comp::AlgoSpec {
    zmem_comp::AlgoSpec {
        name: crate::DEFAULT_ALGORITHM.to_string(),
        params: zmem_comp::Params::default(),
        dict_path: None,
    }
}

/// An allocator zmem has (`pool`), checked before any input is read.
pub(crate) fn check_pool(pool: &str) -> Result<(), ArgError> {
    zmem_pool::registry::find(pool)
        .map(|_| ())
        .map_err(|e| ArgError::with_value("pool", pool, e.to_string()))
}

/// A page size zmem can run (`page_size`).
pub(crate) fn check_page_size(page_size: usize) -> Result<(), ArgError> {
    zmem_pages::format::check_page_size(page_size)
        .map_err(|e| ArgError::with_value("page_size", page_size, e.to_string()))
}

/// The algorithm a job that runs an algorithm at its defaults only takes (zswap, whose crypto
/// compressors take no parameters): its name, or the refusal saying why.
pub(crate) fn plain_algo(spec: &zmem_comp::AlgoSpec) -> Result<String, ArgError> {
    if spec.algorithm_params().is_some() {
        return Err(ArgError::with_value(
            "algo",
            spec,
            "zswap's compressors (the kernel's crypto API) take no parameters; give the \
             algorithm's name alone",
        ));
    }
    Ok(spec.name.clone())
}

/// A RAM size as either door gives it: the kernel's `memparse` syntax (`256M`).
pub fn parse_ram(text: &str) -> Result<u64, ArgError> {
    crate::parse_size(text).map_err(|e| ArgError::new("ram", e.msg))
}

/// The jobs [`defaults`] knows, by their CLI command path.
pub const JOBS: &[&str] = &[
    "lab",
    "comp-bench",
    "zram",
    "replay",
    "study allocators",
    "capture",
    "gen",
    "dict train",
    "status",
];

/// Each argument of `job` that has a default, with that default as `zmem JOB --help` states
/// it (`[default: ...]`), Python keyword names; `None` for a job not in [`JOBS`].
pub fn defaults(job: &str) -> Option<Vec<(&'static str, String)>> {
    Some(match job {
        "lab" => LAB_OPTIONS.iter().filter_map(|o| Some((o.name, o.default_text()?))).collect(),
        "comp-bench" => CompBenchRequest::default().shown_defaults(),
        "zram" => ZramRequest::default().shown_defaults(),
        "replay" => ReplayRequest::default().shown_defaults(),
        "study allocators" => StudyRequest::default().shown_defaults(),
        "capture" => Vec::new(),
        "gen" => GenerateRequest::default().shown_defaults(),
        "dict train" => DictTrainRequest::default().shown_defaults(),
        "status" => StatusRequest::default().shown_defaults(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_error_is_worded_for_each_door() {
        let e = ArgError::with_value("swap_device", "nvm3", "unknown");
        assert_eq!(e.flag(), "--swap-device nvm3: unknown");
        assert_eq!(e.keyword(), "swap_device=nvm3: unknown");
        let e = ArgError::new("ram", "not a size");
        assert_eq!(e.flag(), "--ram: not a size");
        assert_eq!(e.keyword(), "ram: not a size");
        let e = ArgError::sentence("ram", Some("100".into()), "is less than one page");
        assert_eq!(e.flag(), "--ram 100 is less than one page");
        assert_eq!(e.keyword(), "ram=100 is less than one page");
    }

    #[test]
    fn every_job_has_its_defaults() {
        for job in JOBS {
            assert!(defaults(job).is_some(), "{job}");
        }
        assert!(defaults("frobnicate").is_none());
        let zram = defaults("zram").unwrap_or_default();
        assert!(zram.contains(&("algo", crate::DEFAULT_ALGORITHM.to_string())), "{zram:?}");
    }

    #[test]
    fn a_pool_and_page_size_are_checked() {
        assert!(check_pool("zsmalloc").is_ok());
        let e = check_pool("slab").unwrap_err();
        assert_eq!(e.arg, "pool");
        assert!(e.why.contains("zsmalloc"), "{e}");
        assert!(check_page_size(4096).is_ok());
        assert_eq!(check_page_size(3000).unwrap_err().arg, "page_size");
    }
}
