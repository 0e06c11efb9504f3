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

pub use config::{DEFAULT_ACCEPT_THRESHOLD, Incompressible, ZswapConfig, ZswapParams};
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
/// The seam of [`Zswap::store_folio_with`] and [`SwapLayer::swap_out_with`] (zmem-comp's, shared
/// with zram).
pub use zmem_comp::ObjectSource;

/// The pages of a folio of `len` bytes at swap offset `offset`: a power-of-two number of whole
/// pages of `page_size` (a large folio's order), all below `nr_slots`.
pub(crate) fn folio_pages(
    offset: u64,
    len: usize,
    page_size: usize,
    nr_slots: u64,
) -> Result<u64, ZswapError> {
    if len == 0 || !len.is_multiple_of(page_size) || !(len / page_size).is_power_of_two() {
        return Err(ZswapError::BadLength { len, page_size });
    }
    let nr = (len / page_size) as u64;
    match offset.checked_add(nr) {
        Some(end) if end <= nr_slots => Ok(nr),
        _ => Err(ZswapError::OffsetOutOfRange { offset, slots: nr_slots }),
    }
}
