//! `zmem study allocators` / `zmem.study_allocators`: zsmalloc, zbud and z3fold under zswap.

use zmem_comp::AlgoSpec;
use zmem_experiments::study::{self, AllocatorRow, StudyConfig};
use zmem_pages::PageSet;
use zmem_sim::replay::Access;

use super::{ArgError, check_page_size, plain_algo};
use crate::{Incompressible, LabError, Progress};

/// What a user can ask of the allocator study.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyRequest {
    /// zswap's compressor (a name alone).
    pub algo: AlgoSpec,
    /// Page size.
    pub page_size: usize,
    /// Rounds; each allocator keeps its fastest.
    pub rounds: usize,
    /// Store incompressible pages as-is (6.18) instead of rejecting them (the seed's 6.8).
    pub as_is: bool,
    /// With a trace: RAM for resident pages, in bytes; none: a quarter of the page set.
    pub ram: Option<u64>,
    /// With a trace: zswap's max_pool_percent.
    pub max_pool_percent: u32,
}

/// Most rounds the study takes.
pub const MAX_ROUNDS: usize = 1000;

impl Default for StudyRequest {
    fn default() -> Self {
        let d = StudyConfig::default();
        Self {
            algo: super::default_algo(),
            page_size: d.page_size,
            rounds: d.rounds,
            as_is: false,
            ram: None,
            max_pool_percent: d.max_pool_percent,
        }
    }
}

impl StudyRequest {
    /// The arguments with a default, as `zmem study allocators --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("algo", self.algo.to_string()),
            ("page_size", self.page_size.to_string()),
            ("rounds", self.rounds.to_string()),
            ("max_pool_percent", self.max_pool_percent.to_string()),
        ]
    }

    /// The engine's configuration, or the argument refused.
    pub fn config(&self) -> Result<StudyConfig, ArgError> {
        check_page_size(self.page_size)?;
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(ArgError::with_value(
                "rounds",
                self.rounds,
                format!("give a number from 1 to {MAX_ROUNDS}"),
            ));
        }
        Ok(StudyConfig {
            algo: plain_algo(&self.algo)?,
            page_size: self.page_size,
            rounds: self.rounds,
            incompressible: if self.as_is {
                Incompressible::StoreAsIs
            } else {
                Incompressible::Reject
            },
            ram_pages: self.ram.map(|b| b / self.page_size as u64),
            max_pool_percent: self.max_pool_percent,
            swap_dir: Some(std::env::temp_dir()),
        })
    }

    /// Runs the study on `pages` (and `trace`, if any). Rows whose pages came back different
    /// are in the result for the caller to show, then refuse with [`StudyRequest::check`].
    pub fn run(
        &self,
        pages: &PageSet,
        trace: Option<&[Access]>,
        progress: &dyn Progress,
    ) -> Result<Vec<AllocatorRow>, LabError> {
        let cfg = self.config()?;
        super::zram::same_page_size(pages, self.page_size)?;
        study::allocators(pages.bytes(), trace, &cfg, progress)
    }

    /// The study's own failure: an allocator gave pages back different.
    pub fn check(rows: &[AllocatorRow]) -> Result<(), LabError> {
        if rows.iter().all(|r| r.verified) {
            Ok(())
        } else {
            Err(LabError::Setup("pages came back different".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_studys() {
        let cfg = StudyRequest::default().config().unwrap();
        let d = StudyConfig::default();
        assert_eq!(
            (cfg.algo, cfg.rounds, cfg.max_pool_percent),
            (d.algo, d.rounds, d.max_pool_percent)
        );
        assert_eq!(cfg.incompressible, Incompressible::Reject);
        assert_eq!(cfg.ram_pages, None);
        let r = StudyRequest { ram: Some(1 << 20), as_is: true, ..Default::default() };
        let cfg = r.config().unwrap();
        assert_eq!((cfg.ram_pages, cfg.incompressible), (Some(256), Incompressible::StoreAsIs));
    }

    #[test]
    fn bad_arguments_are_named() {
        let bad = |r: StudyRequest| r.config().unwrap_err().arg;
        assert_eq!(bad(StudyRequest { rounds: 0, ..Default::default() }), "rounds");
        assert_eq!(
            bad(StudyRequest { algo: "zstd:3".parse().unwrap(), ..Default::default() }),
            "algo"
        );
    }
}
