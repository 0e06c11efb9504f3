//! zmem-pages: the inputs of every zmem experiment, as data.
//!
//! - **Page sets** ([`PageSet`]): pages plus optional per-page metadata (pid, process name,
//!   virtual address, mapping kind or zram slot) and optional set-level metadata
//!   ([`SetMeta`]). Read from the versioned, checksummed page-set format ([`mod@format`],
//!   documented in docs/FORMATS.md), optionally zstd-compressed, or from plain files
//!   of bare pages; in memory, streamed ([`PageReader`]) or mapped ([`PageSet::map`]).
//! - **Generators** ([`generate`]): the zram-perf pattern of the vivo multi-compression study
//!   (docs/REFERENCES.md), and a calibrated mix of typical anonymous memory;
//!   [`builtin::default_set`] is the set used when no file is given.
//! - **Traces** ([`trace`]): sequences of page accesses over time, their file format, a
//!   generator of Zipf-popular working sets with phases and idle periods, and the conversion of
//!   per-interval observations into accesses.
//!
//! Not for: reading the running kernel or its processes (zmem-kernel captures and records into
//! these types), compressing or storing pages (the engines), or measuring anything.

pub mod access;
pub mod builtin;
mod error;
pub mod format;
pub mod generate;
pub mod limits;
mod meta;
mod pageset;
pub mod private;
pub mod prng;
mod stream;
pub mod trace;

pub use error::PagesError;
pub use meta::{MappingKind, PageMeta, SetMeta};
pub use pageset::{Compression, PageSet, PageSetBuilder};
pub use stream::{Page, PageReader, ReadOptions};

/// Page size assumed for raw page files and generated sets unless told otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 4096;
