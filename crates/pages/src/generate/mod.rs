//! Page generators: deterministic for a seed, so a generated set is a stable benchmark input.
//!
//! - [`perf`]: seed 004's `zram-perf` pattern (docs/REFERENCES.md [seed-004]), highly
//!   compressible and unlike real memory.
//! - [`mixed`]: "typical anonymous memory", a calibrated mix of the page kinds real dumps hold.

pub mod mixed;
pub mod perf;

use crate::{PageSet, PagesError};

/// The generators by name, for the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`perf::generate`].
    Perf,
    /// [`mixed::generate`].
    Mixed,
}

impl Kind {
    /// All kinds with their names.
    pub const ALL: [(&'static str, Kind); 2] = [("perf", Kind::Perf), ("mixed", Kind::Mixed)];

    /// Looks a kind up by name.
    pub fn parse(name: &str) -> Result<Self, PagesError> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|&(_, k)| k).ok_or_else(|| {
            PagesError::Invalid(format!("unknown generator {name:?} (use perf or mixed)"))
        })
    }
}

/// Generates `pages` pages of `page_size` bytes of `kind` from `seed`. More pages than this
/// machine's memory holds are refused before anything is allocated.
pub fn generate(
    kind: Kind,
    pages: usize,
    page_size: usize,
    seed: u64,
) -> Result<PageSet, PagesError> {
    crate::format::check_page_size(page_size)?;
    crate::limits::fits_in_memory(pages as u64, page_size as u64)
        .map_err(|e| PagesError::Invalid(format!("{pages} pages: {e}")))?;
    match kind {
        Kind::Perf => perf::generate(pages, page_size, seed),
        Kind::Mixed => mixed::generate(pages, page_size, seed),
    }
}
