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
//! [`SwapLayer`] is the swap layer around the cache (the zeromap, "zswap, else the device",
//! the memcg's writeback switch, vmscan's `shrink_slab()` over zswap's and the allocators'
//! shrinkers, [`shrinker`]): the one way pages enter and leave
//! zswap or a swap device. Swap offsets are the caller's: there is no slot allocator.

#![forbid(unsafe_code)]

mod config;
mod engine;
mod error;
mod lru;
mod pool;
pub mod shrinker;
mod stats;
mod swap;
mod swapfile;

pub use config::{Incompressible, ZswapConfig};
pub use engine::{MAX_RECLAIM_RETRIES, Meminfo, Reject, StoreOutcome, Zswap};
pub use error::ZswapError;
pub use shrinker::{
    DEF_PRIORITY, DEFAULT_SEEKS, NrDeferred, SHRINK_BATCH, ShrinkSlab, Shrinker, ZPoolShrinker,
};
pub use stats::ZswapStats;
pub use swap::{
    SlabReclaim, SlabScope, SlabShrinkResult, Stage, SwapDevice, SwapHook, SwapIn, SwapLayer,
    SwapOut,
};
pub use swapfile::{FileSlots, MemSlots, SlotStore, SwapFile};
