//! zmem-zram: the zram device engine over `zmem-comp` streams and any `zmem-pool` allocator, with
//! the kernel's control surface and stat formats; and the live kernel's zram as an oracle.

pub mod kernel;
mod stats;

pub use stats::{BdStat, IoStat, MmStat, StatParseError, debug_stat};
