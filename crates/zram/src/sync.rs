//! The atomics and spin hints of the slot lock: std's, or loom's under `RUSTFLAGS="--cfg loom"`,
//! where `tests/loom.rs` model-checks `slot.rs` against them (every interleaving of a few
//! threads, within a preemption bound). Nothing else in the crate goes through this module: the
//! slot table is the only lock-free code here; the rest of the shared state sits behind std's
//! mutexes.
//!
//! Under `--cfg loom` a slot table only works inside `loom::model`, so only the loom test is
//! meaningful in such a build.

#[cfg(loom)]
pub(crate) mod atomic {
    pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
}
#[cfg(loom)]
pub(crate) use loom::{hint::spin_loop, thread::yield_now};

#[cfg(not(loom))]
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
}
#[cfg(not(loom))]
pub(crate) use std::{hint::spin_loop, thread::yield_now};
