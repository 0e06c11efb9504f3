//! `zmem dict train` / `zmem.dict_train`: a dictionary for zram's `algorithm_params dict=`
//! trained on a page set, written, and its effect on a zram device measured
//! (zmem-experiments' `dict`).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zmem_experiments::dict::{self, DictEffect};

use super::{ArgError, check_page_size};
use crate::{LabError, Progress};

/// What a user can ask of `zmem dict train`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DictTrainRequest {
    /// The algorithm the dictionary is for: zstd or lz4 (required).
    pub algo: String,
    /// Largest dictionary size in bytes.
    pub size: u64,
    /// Pages sampled (evenly) for training.
    pub samples: usize,
    /// Level (zstd) or acceleration (lz4) of the measuring devices.
    pub level: Option<i32>,
    /// Train on the first half of the pages and measure on the second.
    pub holdout: bool,
    /// Page size of the pages and the devices.
    pub page_size: usize,
    /// Where the dictionary is written (required).
    pub output: PathBuf,
}

/// Most pages `samples` may ask for (the CLI's `--samples` bound).
pub const MAX_SAMPLES: usize = 1 << 24;

impl Default for DictTrainRequest {
    fn default() -> Self {
        Self {
            algo: String::new(),
            size: dict::DEFAULT_DICT_SIZE as u64,
            samples: dict::DEFAULT_SAMPLES,
            level: None,
            holdout: false,
            page_size: zmem_pages::DEFAULT_PAGE_SIZE,
            output: PathBuf::new(),
        }
    }
}

/// What `zmem dict train --json` prints and `zmem.dict_train` returns.
#[derive(Debug, Clone, Serialize)]
pub struct DictTrainReport {
    /// The dictionary's absolute path.
    pub dict: PathBuf,
    /// The `algorithm_params` line that gives zram the dictionary.
    pub algorithm_params: String,
    pub trained_on_pages: u64,
    /// "other half" with `holdout`, else "training pages".
    pub measured_on: &'static str,
    pub effect: DictEffect,
}

/// A byte count as a size argument states it: the largest 1024-based suffix that divides it
/// (`64K`), else bytes.
pub fn shown_size(bytes: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

impl DictTrainRequest {
    /// The arguments with a default, as `zmem dict train --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("size", shown_size(self.size)),
            ("samples", self.samples.to_string()),
            ("page_size", self.page_size.to_string()),
        ]
    }

    /// Refuses what no training could take, before the pages are read. The algorithm is the
    /// trainer's to check (its words: `dictionary training: unknown algorithm ...`).
    pub fn check(&self) -> Result<usize, ArgError> {
        if self.output.as_os_str().is_empty() {
            return Err(ArgError::new("output", "give the file to write the dictionary to"));
        }
        if !(1..=MAX_SAMPLES).contains(&self.samples) {
            return Err(ArgError::with_value(
                "samples",
                self.samples,
                format!("give a number from 1 to {MAX_SAMPLES}"),
            ));
        }
        check_page_size(self.page_size)?;
        usize::try_from(self.size).map_err(|_| ArgError::new("size", "too large"))
    }

    /// Trains the dictionary on `pages` (whole pages of `page_size`), writes it to `output`,
    /// and measures it on a zram device. A dictionary whose device read pages back different
    /// is the result for the caller to show, then refuse with [`DictTrainRequest::verified`].
    pub fn run(&self, pages: &[u8], progress: &dyn Progress) -> Result<DictTrainReport, LabError> {
        let size = self.check()?;
        let ps = self.page_size;
        let (train_on, measure_on) =
            if self.holdout { dict::halves(pages, ps) } else { (pages, pages) };
        let d = dict::train(train_on, ps, &self.algo, size, self.samples)?;
        // Its place is checked and written first, put there only once the measurement (which
        // needs a scratch directory) succeeded: a failure leaves no dictionary behind.
        let mut out = create(&self.output)?;
        out.write_all(&d).map_err(|e| write_error(&self.output, e))?;
        let effect = dict::evaluate(measure_on, ps, &self.algo, &d, self.level, progress)?;
        out.commit().map_err(file_error)?;
        let path = std::path::absolute(&self.output).unwrap_or_else(|_| self.output.clone());
        Ok(DictTrainReport {
            algorithm_params: format!(
                "algo={} {}",
                self.algo,
                dict::params_line(&path, self.level)?
            ),
            dict: path,
            trained_on_pages: (train_on.len() / ps) as u64,
            measured_on: if self.holdout { "other half" } else { "training pages" },
            effect,
        })
    }

    /// [`DictTrainRequest::run`] on this machine's processes' resident anonymous pages, read
    /// as the lab reads them and kept to twice the training sample (evenly spaced), so no
    /// page file is written: what an apply script runs where a decision made elsewhere (from
    /// evidence) needs a dictionary trained on this host.
    pub fn run_live(&self, progress: &dyn Progress) -> Result<DictTrainReport, LabError> {
        self.check()?;
        let keep = crate::Coverage::Even(self.samples.saturating_mul(2));
        let e = crate::evidence::gather(crate::Input::Processes, keep, progress)?;
        if e.source.page_size != self.page_size {
            return Err(LabError::Setup(format!(
                "this machine's pages are {} bytes, not --page-size {}",
                e.source.page_size, self.page_size
            )));
        }
        self.run(&e.pages, progress)
    }

    /// The training's own failure: pages read back different.
    pub fn verified(r: &DictTrainReport) -> Result<(), LabError> {
        if r.effect.verified {
            Ok(())
        } else {
            Err(LabError::Setup("pages read back differ from the pages written".into()))
        }
    }
}

/// Starts writing the dictionary, 0600 (it is trained on memory contents), through
/// zmem-files.
fn create(path: &Path) -> Result<zmem_files::SafeFile, LabError> {
    zmem_files::create(path, zmem_files::Kind::Private).map_err(file_error)
}

/// zmem-files' error as an operating-system error (OSError in Python) in the words the CLI has
/// always said, `writing FILE: ...` (FILE: where it failed, the file or its directory).
fn file_error(e: zmem_files::FileError) -> LabError {
    let line = format!("writing {e}");
    zmem_pages::PagesError::Stream(std::io::Error::new(e.into_io().kind(), line)).into()
}

fn write_error(path: &Path, e: std::io::Error) -> LabError {
    let line = format!("writing {}: {e}", path.display());
    zmem_pages::PagesError::Stream(std::io::Error::new(e.kind(), line)).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_shown_as_the_help_states_them() {
        assert_eq!(shown_size(64 << 10), "64K");
        assert_eq!(shown_size(2 << 20), "2M");
        assert_eq!(shown_size(3 << 30), "3G");
        assert_eq!(shown_size(1000), "1000");
        assert_eq!(shown_size(1536), "1536");
        assert_eq!(DictTrainRequest::default().shown_defaults()[0].1, "64K");
    }

    #[test]
    fn bad_arguments_are_named() {
        let req =
            DictTrainRequest { algo: "zstd".into(), output: "d".into(), ..Default::default() };
        assert_eq!(req.check(), Ok(64 << 10));
        assert_eq!(
            DictTrainRequest { output: PathBuf::new(), ..req.clone() }.check().unwrap_err().arg,
            "output"
        );
        assert_eq!(
            DictTrainRequest { samples: 0, ..req.clone() }.check().unwrap_err().arg,
            "samples"
        );
        assert_eq!(
            DictTrainRequest { page_size: 3000, ..req }.check().unwrap_err().arg,
            "page_size"
        );
    }

    #[test]
    fn a_file_that_cannot_be_written_is_named() {
        let e = create(Path::new("/nonexistent/zmem/zram.dict")).unwrap_err();
        assert!(e.to_string().starts_with("writing /nonexistent/zmem/zram.dict: "), "{e}");
        assert!(matches!(e, LabError::Pages(zmem_pages::PagesError::Stream(_))), "{e:?}");
    }
}
