//! zmem-zram: the zram compressed block device, in user space.
//!
//! A [`Zram`] is a disk of page-size slots. A page written to it is stored as the fill word if it
//! is same-filled, as a compressed object in a `zmem-pool` allocator otherwise, or raw when it
//! does not compress below `huge_class_size`; reads decompress it back. Around that core sit the
//! kernel's features (memory limit, idle tracking, writeback to a backing file, recompression
//! with secondary algorithms) and its control surface: [`Zram::store`] / [`Zram::show`] take the
//! attribute names, strings, errors and stat formats of `/sys/block/zramN` (Linux 6.18), so
//! scripts written for the kernel's device drive this one unchanged.
//!
//! What it is not: a kernel block device (there is no /dev node; I/O is by page index), or
//! tied to zsmalloc: any allocator of `zmem-pool` can hold the objects.
//!
//! zmem-kernel's `zram_device` drives the live kernel's zram, the oracle this crate is checked
//! against (tests/kernel.rs).

mod attrs;
mod backing;
mod device;
mod errno;

#[doc(hidden)]
pub mod parse;
mod postprocess;
mod shrinker;
mod slot;
mod stats;
mod sync;
mod zcomp;

pub use backing::{BackingStore, FileStore, MemStore, StoreFault};
pub use device::{
    ClaimGuard, Clock, DEFAULT_ALGORITHM, Features, MAX_COMPS, MonotonicClock, ObjectSource,
    OpenGuard, Zram, ZramConfig, same_filled,
};
pub use errno::{Errno, ZramError};
pub use stats::{BdStat, IoStat, MmStat, StatParseError, debug_stat};
