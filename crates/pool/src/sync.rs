//! The locks and atomics of zsmalloc's pool: std's, or loom's under `RUSTFLAGS="--cfg loom"`,
//! where `tests/loom.rs` model-checks the per-class locking against them (every interleaving of
//! a few threads, within a preemption bound). zbud, z3fold and the chunk cache use std's
//! directly: they have one lock each, and nothing of theirs is model-checked.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
