//! `zmem status` / `zmem.status`: every zram device, zswap, the swap areas and the swap rates
//! over a short window, read from the running kernel (zmem-kernel's `status`). The request lives
//! here, beside the other jobs', because its refusals are [`ArgError`]s (zmem-kernel, below
//! the lab, knows nothing of the front doors); the exporter reads `status` directly.

use std::time::Duration;

use zmem_kernel::status::{self, Status};

use super::ArgError;
use crate::LabError;

/// The longest `interval` may be, in seconds (a week, as every duration argument).
pub const MAX_INTERVAL_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// What a user can ask of `zmem status`.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusRequest {
    /// Seconds between the two samples of /proc/vmstat the rates come from (0: no rates).
    pub interval: f64,
    /// Mount debugfs for this read where it is not mounted, and unmount it after.
    pub mount_debugfs: bool,
}

impl Default for StatusRequest {
    fn default() -> Self {
        Self { interval: 1.0, mount_debugfs: false }
    }
}

impl StatusRequest {
    /// The arguments with a default, as `zmem status --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![("interval", self.interval.to_string())]
    }

    /// Refuses an interval that is no number of seconds.
    pub fn check(&self) -> Result<(), ArgError> {
        if !(self.interval.is_finite() && self.interval >= 0.0) {
            return Err(ArgError::sentence("interval", None, "must be a number of seconds >= 0"));
        }
        if self.interval > MAX_INTERVAL_SECS {
            return Err(ArgError::with_value(
                "interval",
                self.interval,
                format!("more than the most this takes, {MAX_INTERVAL_SECS} seconds"),
            ));
        }
        Ok(())
    }

    /// What zmem-kernel reads for it.
    pub fn options(&self) -> Result<status::Options, ArgError> {
        self.check()?;
        Ok(status::Options {
            rate_window: (self.interval > 0.0).then(|| Duration::from_secs_f64(self.interval)),
            block_state: true,
            ..status::Options::default()
        })
    }

    /// Reads the state (what could not be read is listed in it, with the reason); the notes say
    /// what mounting debugfs did, where asked.
    pub fn run(&self) -> Result<(Status, Vec<String>), LabError> {
        let opts = self.options()?;
        if self.mount_debugfs {
            let (s, notes) = zmem_kernel::zswap_state::with_debugfs_mounted(|| status::read(&opts));
            Ok((s?, notes))
        } else {
            Ok((status::read(&opts)?, Vec::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_a_window_or_none() {
        let o = StatusRequest::default().options().unwrap();
        assert_eq!(o.rate_window, Some(Duration::from_secs(1)));
        assert!(o.block_state);
        let none = StatusRequest { interval: 0.0, ..Default::default() }.options().unwrap();
        assert_eq!(none.rate_window, None);
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e12] {
            let e = StatusRequest { interval: bad, ..Default::default() }.check().unwrap_err();
            assert_eq!(e.arg, "interval", "{bad}");
        }
        let e = StatusRequest { interval: -1.0, ..Default::default() }.check().unwrap_err();
        assert_eq!(e.flag(), "--interval must be a number of seconds >= 0");
    }

    #[test]
    fn the_state_is_read_without_a_window() {
        let (s, notes) = StatusRequest { interval: 0.0, ..Default::default() }.run().unwrap();
        assert!(s.page_size >= 4096, "{}", s.page_size);
        assert!(notes.is_empty());
    }
}
