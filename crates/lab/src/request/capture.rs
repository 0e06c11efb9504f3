//! `zmem capture` / `zmem.PageSet.capture`: live processes' resident anonymous pages, or the
//! pages a zram device stores, into a page set.

use std::path::PathBuf;

use zmem_kernel::capture::zram::ZramSummary;
use zmem_kernel::capture::{self, Event, Summary};
use zmem_pages::PageSet;

use super::ArgError;
use crate::LabError;

/// What a user can ask of a capture (where the set goes is the door's own: a file, a value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureRequest {
    /// Processes to capture.
    pub pids: Vec<u32>,
    /// Every process (except this one).
    pub all: bool,
    /// The processes of this cgroup (v2 directory, absolute or under /sys/fs/cgroup).
    pub cgroup: Option<PathBuf>,
    /// A zram device (`/dev/zramN`) whose stored pages to capture instead.
    pub zram: Option<PathBuf>,
    /// With `zram`: keep at most this many pages, a uniform random sample.
    pub max_pages: Option<usize>,
}

/// What a capture found besides the pages.
#[derive(Debug, Clone)]
pub enum CaptureSummary {
    Processes(Summary),
    /// A zram device's pages; `kept`: of them, a random sample of this many kept.
    Zram {
        summary: ZramSummary,
        kept: Option<usize>,
    },
}

impl std::fmt::Display for CaptureSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Processes(s) => write!(f, "{s}"),
            Self::Zram { summary, kept: None } => write!(f, "{summary}"),
            Self::Zram { summary, kept: Some(n) } => {
                write!(f, "{summary}; a random sample of {n} of them kept")
            }
        }
    }
}

/// A capture's pages and what it found.
#[derive(Debug)]
pub struct Captured {
    pub set: PageSet,
    pub summary: CaptureSummary,
}

impl CaptureRequest {
    /// Refuses a request that names nothing, or a zram device with processes.
    pub fn validate(&self) -> Result<(), ArgError> {
        let processes = !self.pids.is_empty() || self.all || self.cgroup.is_some();
        if self.zram.is_some() && processes {
            return Err(ArgError::new("zram", "cannot be combined with a pid, all or cgroup"));
        }
        if self.max_pages.is_some() && self.zram.is_none() {
            return Err(ArgError::new(
                "max_pages",
                "only with a zram device (it samples its pages)",
            ));
        }
        if self.max_pages == Some(0) {
            return Err(ArgError::with_value("max_pages", 0, "give at least 1"));
        }
        if self.zram.is_none() && !processes {
            return Err(ArgError::new(
                "",
                "nothing to capture: give a process (pid), all, a cgroup or a zram device",
            ));
        }
        Ok(())
    }

    /// The processes asked for (pids, every process, a cgroup's), sorted, once each.
    pub fn pids(&self) -> Result<Vec<u32>, LabError> {
        let mut pids = self.pids.clone();
        if self.all {
            pids.extend(capture::all_pids()?);
        }
        if let Some(cg) = &self.cgroup {
            pids.extend(capture::cgroup_pids(cg)?);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    /// Captures as asked: `on_process` hears of each process, `on_bytes` of a device's bytes
    /// read (done, total). A capture of processes that got no page is an error naming why
    /// each was skipped.
    pub fn run(
        &self,
        on_process: &mut dyn FnMut(Event<'_>),
        on_bytes: &mut dyn FnMut(u64, u64),
    ) -> Result<Captured, LabError> {
        self.validate()?;
        if let Some(dev) = &self.zram {
            let (set, summary) = match self.max_pages {
                Some(n) => capture::zram::capture_device_sampled(dev, n, 1, on_bytes)?,
                None => capture::zram::capture_device(dev, on_bytes)?,
            };
            let kept = self.max_pages.map(|_| set.len());
            let summary = CaptureSummary::Zram { summary, kept };
            return Ok(Captured { set, summary });
        }
        let pids = self.pids()?;
        if pids.is_empty() {
            return Err(LabError::Setup("nothing captured: no process found".into()));
        }
        let (set, summary) = capture::capture(&pids, on_process)?;
        // Nothing captured (no such process, every one gone or unreadable): an error.
        if set.is_empty() {
            let why: Vec<String> =
                summary.skipped.iter().map(|(pid, why)| format!("{pid}: {why}")).collect();
            let why =
                if why.is_empty() { "no resident anonymous pages".into() } else { why.join("; ") };
            return Err(LabError::Setup(format!("nothing captured ({why})")));
        }
        Ok(Captured { set, summary: CaptureSummary::Processes(summary) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_something_to_capture() {
        let e = CaptureRequest::default().validate().unwrap_err();
        assert!(e.why.contains("nothing to capture"), "{e}");
        let both =
            CaptureRequest { pids: vec![1], zram: Some("/dev/zram0".into()), ..Default::default() };
        assert_eq!(both.validate().unwrap_err().arg, "zram");
        let sample = CaptureRequest { pids: vec![1], max_pages: Some(5), ..Default::default() };
        assert_eq!(sample.validate().unwrap_err().arg, "max_pages");
        assert!(CaptureRequest { all: true, ..Default::default() }.validate().is_ok());
    }

    #[test]
    fn a_capture_of_no_such_process_is_an_error_naming_it() {
        // Above the kernel's pid_max (4194304 at most): never a process.
        let req = CaptureRequest { pids: vec![999_999_999], ..Default::default() };
        let e = req.run(&mut |_| {}, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("nothing captured") && e.contains("999999999"), "{e}");
    }

    #[test]
    fn pids_are_sorted_once_each() {
        let req = CaptureRequest { pids: vec![7, 3, 7], ..Default::default() };
        assert_eq!(req.pids().unwrap(), vec![3, 7]);
    }
}
