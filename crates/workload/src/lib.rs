//! zmem-workload: the inputs of every zmem experiment.
//!
//! - **Page sets** ([`PageSet`]): pages plus optional per-page metadata (pid, process name,
//!   virtual address, mapping kind or zram slot) and optional set-level metadata
//!   ([`SetMeta`]). Read from the versioned, checksummed page-set format ([`mod@format`],
//!   documented in docs/FORMATS.md), optionally zstd-compressed, or from plain files
//!   of bare pages; in memory, streamed ([`PageReader`]) or mapped ([`PageSet::map`]).
//! - **Capture** ([`capture`]): the resident anonymous pages of live processes, through
//!   /proc/PID/maps, pagemap and mem; and the pages a zram device stores, each with its slot
//!   index, with the device's state as set-level metadata ([`capture::zram`]).
//! - **Live system** ([`live`]): parsers and readers for /proc/swaps (the active zram swap
//!   devices), /proc/vmstat's swap counters, block-device `stat` and zram's sysfs attributes.
//! - **Generators** ([`generate`]): seed 004's zram-perf pattern (docs/REFERENCES.md [seed-004]),
//!   and a calibrated mix of typical anonymous memory; [`builtin::default_set`] is the set used when no file is given.
//! - **Traces** ([`trace`]): sequences of page accesses over time, their file format, and a
//!   generator of Zipf-popular working sets with phases and idle periods.
//!
//! Not for: compressing or storing pages (zmem-comp, zmem-pool, zmem-zram), or measuring anything
//! (zmem-lab).

pub mod builtin;
pub mod capture;
mod error;
pub mod format;
pub mod generate;
pub mod live;
mod meta;
mod pageset;
pub mod prng;
pub mod status;
mod stream;
pub mod trace;

pub use error::WorkloadError;
pub use meta::{MappingKind, PageMeta, SetMeta};
pub use pageset::{Compression, PageSet, PageSetBuilder};
pub use stream::{Page, PageReader, ReadOptions};

/// Page size assumed for raw page files and generated sets unless told otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 4096;
