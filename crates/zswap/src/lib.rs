//! zmem-zswap: the zswap compressed swap cache, in user space, on any `zmem-pool` allocator.
//!
//! zswap sits between reclaim and a swap device: a page being swapped out is compressed into a
//! pool instead of written, and a later swap-in decompresses it (and drops it: loads are
//! exclusive). The pool is capped at `max_pool_percent` of RAM; once full it refuses stores
//! until it shrinks below `accept_threshold_percent` of the cap, and a shrink worker writes the
//! least recently stored entries (with a second chance) back to the swap device. A memory-
//! pressure shrinker does the same on request. Semantics follow Linux 6.18: no same-filled
//! handling (zero pages are the swap layer's zeromap), incompressible pages stored as-is, the
//! debugfs counters by their names; [`Incompressible::Reject`] and the zbud/z3fold allocators
//! give the behaviour of older kernels.
//!
//! What it is not: a swap layer. Swap offsets are given by the caller; [`Zswap::swap_out`] and
//! [`Zswap::swap_in`] are the minimal "zswap, else the device" paths around the cache.

mod config;
mod engine;
mod error;
mod lru;
mod pool;
mod stats;
mod swapfile;

pub use config::{Incompressible, ZswapConfig};
pub use engine::{MAX_RECLAIM_RETRIES, Meminfo, Reject, StoreOutcome, Where, Zswap};
pub use error::ZswapError;
pub use stats::ZswapStats;
pub use swapfile::{FileSlots, MemSlots, SlotStore, SwapFile};
