//! The built-in page set: what the lab and `zmem comp-bench` use when given no file.

use crate::{PageSet, PagesError};

/// Seed of the built-in set. Changing it changes every default benchmark figure.
pub const DEFAULT_SEED: u64 = 0x7a6d_656d_5f64_6566; // "zmem_def"
/// Pages in the built-in set: 24 MiB of 4 KiB pages, seconds per algorithm in the bench.
pub const DEFAULT_PAGES: usize = 6144;

/// The built-in default page set: [`crate::generate::mixed`] with [`DEFAULT_SEED`], [`DEFAULT_PAGES`]
/// pages of 4 KiB, generated on the fly (deterministic: the same bytes every run and version).
pub fn default_set() -> PageSet {
    // 4096 is always a valid page size, so this cannot fail.
    default_set_with(crate::DEFAULT_PAGE_SIZE).expect("4096 is a valid page size")
}

/// [`default_set`] for another page size (the same number of bytes, cut into `page_size` pages).
pub fn default_set_with(page_size: usize) -> Result<PageSet, PagesError> {
    crate::format::check_page_size(page_size)?;
    let pages = DEFAULT_PAGES * crate::DEFAULT_PAGE_SIZE / page_size;
    crate::generate::mixed::generate(pages.max(1), page_size, DEFAULT_SEED)
}
