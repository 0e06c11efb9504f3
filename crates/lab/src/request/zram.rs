//! `zmem zram` / `zmem.zram_run`: a page set through one zram device.

use zmem_comp::AlgoSpec;
use zmem_experiments::zram_run::{self, ZramRunResult};
use zmem_pages::PageSet;
use zmem_sim::device::ZramRunConfig;

use super::{ArgError, MAX_THREADS, check_page_size, check_pool};
use crate::{LabError, Progress};

/// What a user can ask of one zram device run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZramRequest {
    /// The primary algorithm (`NAME`, `NAME:LEVEL`, `NAME:level=L,dict=FILE`).
    pub algo: AlgoSpec,
    /// `algorithm_params` for the primary, added to what `algo` gives (`level=3`).
    pub params: Option<String>,
    /// The allocator.
    pub pool: String,
    /// Page size of the device (and of a raw page file the CLI cuts).
    pub page_size: usize,
    /// Writer and reader threads.
    pub threads: usize,
    /// Secondary algorithms for recompression, in priority order.
    pub recomp: Vec<String>,
    /// Written to `recompress` after the writes (`type=huge`).
    pub recompress: Option<String>,
}

impl Default for ZramRequest {
    fn default() -> Self {
        let d = ZramRunConfig::default();
        Self {
            algo: super::default_algo(),
            params: None,
            pool: d.pool,
            page_size: d.page_size,
            threads: d.threads,
            recomp: Vec::new(),
            recompress: None,
        }
    }
}

impl ZramRequest {
    /// The arguments with a default, as `zmem zram --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("algo", self.algo.to_string()),
            ("pool", self.pool.clone()),
            ("page_size", self.page_size.to_string()),
            ("threads", self.threads.to_string()),
        ]
    }

    /// Refuses what no run could take, before any page is read.
    pub fn validate(&self) -> Result<(), ArgError> {
        check_pool(&self.pool)?;
        check_page_size(self.page_size)?;
        if !(1..=MAX_THREADS).contains(&(self.threads as u64)) {
            return Err(ArgError::with_value(
                "threads",
                self.threads,
                format!("give a number from 1 to {MAX_THREADS}"),
            ));
        }
        for r in &self.recomp {
            r.parse::<AlgoSpec>().map_err(|e| ArgError::with_value("recomp", r, e.to_string()))?;
        }
        Ok(())
    }

    /// The engine's configuration.
    pub fn config(&self) -> Result<ZramRunConfig, ArgError> {
        self.validate()?;
        Ok(ZramRunConfig {
            algo: self.algo.name.clone(),
            params: match (self.algo.algorithm_params(), &self.params) {
                (Some(a), Some(b)) => Some(format!("{a} {b}")),
                (a, b) => a.or_else(|| b.clone()),
            },
            pool: self.pool.clone(),
            page_size: self.page_size,
            threads: self.threads,
            recomp: self.recomp.clone(),
            recompress: self.recompress.clone(),
        })
    }

    /// Writes `pages` through the device and reads them back. A run whose pages came back
    /// different is the result (with `verified: false`) for the caller to show, then refuse
    /// with [`ZramRequest::check`].
    pub fn run(&self, pages: &PageSet, progress: &dyn Progress) -> Result<ZramRunResult, LabError> {
        let cfg = self.config()?;
        same_page_size(pages, self.page_size)?;
        zram_run::run(pages.bytes(), &cfg, progress)
    }

    /// The run's own failure: pages read back different.
    pub fn check(r: &ZramRunResult) -> Result<(), LabError> {
        if r.verified {
            Ok(())
        } else {
            Err(LabError::Setup("pages read back differ from the pages written".into()))
        }
    }
}

/// The request's page size is the set's: a set of other pages is refused, not run at the
/// wrong size.
pub(super) fn same_page_size(pages: &PageSet, page_size: usize) -> Result<(), ArgError> {
    if pages.page_size() != page_size {
        return Err(ArgError::with_value(
            "page_size",
            page_size,
            format!("the page set's pages are {} bytes", pages.page_size()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_joins_the_algorithms_parameters_with_params() {
        let req = ZramRequest {
            algo: "zstd:3".parse().unwrap(),
            params: Some("dict=/x".into()),
            ..ZramRequest::default()
        };
        let cfg = req.config().unwrap();
        assert_eq!(cfg.algo, "zstd");
        assert_eq!(cfg.params.as_deref(), Some("level=3 dict=/x"));
        assert_eq!(ZramRequest::default().config().unwrap().params, None);
    }

    #[test]
    fn bad_arguments_are_named() {
        let bad = |r: ZramRequest| r.validate().unwrap_err().arg;
        assert_eq!(bad(ZramRequest { pool: "slab".into(), ..Default::default() }), "pool");
        assert_eq!(bad(ZramRequest { threads: 0, ..Default::default() }), "threads");
        assert_eq!(
            bad(ZramRequest { recomp: vec!["nope".into()], ..Default::default() }),
            "recomp"
        );
        assert_eq!(bad(ZramRequest { page_size: 3000, ..Default::default() }), "page_size");
    }

    #[test]
    fn a_run_refuses_pages_of_another_size() {
        let pages =
            zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 4, 8192, 1).unwrap();
        let e = ZramRequest::default().run(&pages, &crate::NoProgress).unwrap_err();
        assert!(e.to_string().contains("8192"), "{e}");
    }
}
