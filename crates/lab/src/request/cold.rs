//! `zmem cold`: cold memory by age for the processes asked for, from the machine's own accesses
//! (zmem-kernel's `cold`). The request holds what the doors parse (which processes, which ages)
//! and starts the observer; waiting, progress and stopping are the door's.

use std::path::Path;

use zmem_kernel::cold::{self, ColdObserver};

use super::{ArgError, MAX_SECS};
use crate::LabError;

/// What a user can ask of `zmem cold`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdRequest {
    /// The processes to measure.
    pub pids: Vec<u32>,
    /// Every user process with anonymous memory (not kernel threads, not zmem), besides `pids`.
    pub all: bool,
    /// The ages to read, in seconds from t0, increasing.
    pub ages_secs: Vec<u64>,
}

impl Default for ColdRequest {
    fn default() -> Self {
        Self { pids: Vec::new(), all: false, ages_secs: cold::DEFAULT_AGES_SECS.to_vec() }
    }
}

/// One age as a user writes it: seconds, or a number with `s`, `m` or `h` (`10s`, `1m`).
pub fn parse_age(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit.trim() {
        "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        _ => return Err(format!("{t:?} is not an age (give 10s, 1m or 2h)")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("{t:?} is not an age (give 10s, 1m or 2h)"))?;
    match n.checked_mul(scale) {
        Some(0) => Err(format!("{t:?}: an age must be over 0 s")),
        Some(s) if s <= MAX_SECS => Ok(s),
        _ => Err(format!("{t:?}: more than the most this takes, {MAX_SECS} seconds")),
    }
}

/// A comma-separated list of ages, as `--ages 10s,30s,1m` gives it.
pub fn parse_ages(text: &str) -> Result<Vec<u64>, ArgError> {
    text.split(',').map(|a| parse_age(a).map_err(|e| ArgError::new("ages", e))).collect()
}

impl ColdRequest {
    /// The arguments with a default, as `zmem cold --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        let ages: Vec<String> = self.ages_secs.iter().map(|a| format!("{a}s")).collect();
        vec![("ages", ages.join(","))]
    }

    /// Refuses a request with no process, or ages that are not increasing.
    pub fn check(&self) -> Result<(), ArgError> {
        if self.pids.is_empty() && !self.all {
            return Err(ArgError::new("pid", "give at least one process (or all)"));
        }
        cold::check_ages(&self.ages_secs).map_err(|e| ArgError::new("ages", e.to_string()))
    }

    /// The processes to watch: `pids`, and every user process where `all` is set.
    pub fn processes(&self) -> Result<Vec<u32>, LabError> {
        let mut pids = self.pids.clone();
        if self.all {
            pids.extend(cold::user_processes(Path::new("/"))?);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    /// Checks, then starts the observer (t0: the processes' referenced bits cleared).
    pub fn start(&self) -> Result<ColdObserver, LabError> {
        self.check()?;
        Ok(ColdObserver::start(&self.processes()?, &self.ages_secs)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_take_units_and_refuse_what_is_no_age() {
        assert_eq!(parse_ages("10s,30s,1m,2m,5m,10m").unwrap(), cold::DEFAULT_AGES_SECS);
        assert_eq!(parse_ages("1, 90 ,1h").unwrap(), [1, 90, 3600]);
        for bad in ["", "0s", "-1s", "1.5m", "10x", "s", "9999999999h"] {
            let e = parse_ages(bad).unwrap_err();
            assert_eq!(e.arg, "ages", "{bad:?}");
        }
        assert_eq!(ColdRequest::default().shown_defaults()[0].1, "10s,30s,60s,120s,300s,600s");
    }

    #[test]
    fn a_request_needs_a_process_and_increasing_ages() {
        assert_eq!(ColdRequest::default().check().unwrap_err().arg, "pid");
        let r = ColdRequest { pids: vec![1], ages_secs: vec![30, 10], ..Default::default() };
        assert_eq!(r.check().unwrap_err().arg, "ages");
        let r = ColdRequest { pids: vec![3, 1, 3], ..Default::default() };
        assert!(r.check().is_ok());
        assert_eq!(r.processes().unwrap(), [1, 3]);
    }
}
