//! `zmem comp-bench` / `zmem.comp_bench`: the compressor table.

use std::time::Duration;

use zmem_comp::AlgoSpec;
use zmem_experiments::comp_bench::{self, Options, Row};
use zmem_pages::PageSet;

use super::check_page_size;
use crate::{LabError, Progress};

/// What a user can ask of the compressor table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompBenchRequest {
    /// The algorithms, in order; empty: every one ([`AlgoSpec::all`]).
    pub algos: Vec<AlgoSpec>,
    /// Page size the inputs are cut into.
    pub page_size: usize,
    /// Least time per timed pass over each batch; the best pass counts.
    pub min_time: Duration,
}

impl Default for CompBenchRequest {
    fn default() -> Self {
        let d = Options::default();
        Self { algos: Vec::new(), page_size: d.page_size, min_time: d.min_time }
    }
}

impl CompBenchRequest {
    /// The arguments with a default, as `zmem comp-bench --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("page_size", self.page_size.to_string()),
            ("min_time_ms", self.min_time.as_millis().to_string()),
        ]
    }

    /// The table over `sets` (each cut into `page_size` pages).
    pub fn run(&self, sets: &[&PageSet], progress: &dyn Progress) -> Result<Vec<Row>, LabError> {
        check_page_size(self.page_size)?;
        for s in sets {
            super::zram::same_page_size(s, self.page_size)?;
        }
        let specs = if self.algos.is_empty() { AlgoSpec::all() } else { self.algos.clone() };
        let opts =
            Options { page_size: self.page_size, min_time: self.min_time, ..Options::default() };
        let slices: Vec<&[u8]> = sets.iter().map(|s| s.bytes()).collect();
        comp_bench::run(&slices, &specs, &opts, progress)
    }
}
