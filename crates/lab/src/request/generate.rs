//! `zmem gen` / `zmem.PageSet.generate`: a generated page set.

use zmem_pages::PageSet;
use zmem_pages::generate::{self, Kind};

use super::{ArgError, check_page_size};
use crate::LabError;

/// What a user can ask of the page generator (where the set goes is the door's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerateRequest {
    /// `mixed` (typical anonymous memory) or `perf` (the vivo study's zram-perf pattern).
    pub kind: String,
    /// Number of pages.
    pub pages: usize,
    /// Page size.
    pub page_size: usize,
    /// The same seed gives the same bytes in every version.
    pub seed: u64,
}

impl Default for GenerateRequest {
    fn default() -> Self {
        Self { kind: "mixed".into(), pages: 4096, page_size: 4096, seed: 0 }
    }
}

impl GenerateRequest {
    /// The arguments with a default, as `zmem gen --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", self.kind.clone()),
            ("pages", self.pages.to_string()),
            ("page_size", self.page_size.to_string()),
            ("seed", self.seed.to_string()),
        ]
    }

    /// Refuses an unknown kind, a page size zmem cannot run, or more pages than fit in memory.
    pub fn validate(&self) -> Result<Kind, ArgError> {
        let kind = Kind::parse(&self.kind)
            .map_err(|e| ArgError::with_value("kind", &self.kind, e.to_string()))?;
        check_page_size(self.page_size)?;
        zmem_pages::limits::fits_in_memory(self.pages as u64, self.page_size as u64)
            .map_err(|e| ArgError::with_value("pages", self.pages, e.to_string()))?;
        Ok(kind)
    }

    /// The set.
    pub fn run(&self) -> Result<PageSet, LabError> {
        let kind = self.validate()?;
        Ok(generate::generate(kind, self.pages, self.page_size, self.seed)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_request_gives_the_same_pages() {
        let req = GenerateRequest { pages: 8, seed: 3, ..Default::default() };
        let (a, b) = (req.run().unwrap(), req.run().unwrap());
        assert_eq!((a.len(), a.page_size()), (8, 4096));
        assert_eq!(a.bytes(), b.bytes());
        let other = GenerateRequest { seed: 4, ..req.clone() }.run().unwrap();
        assert_ne!(a.bytes(), other.bytes());
        assert_eq!(
            GenerateRequest { kind: "nope".into(), ..req }.validate().unwrap_err().arg,
            "kind"
        );
    }
}
