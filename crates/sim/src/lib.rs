//! zmem-sim: memory pressure, simulated. A trace of page accesses runs against RAM of a given
//! size, modelled as the kernel's active/inactive anonymous LRU lists, in front of zram or zswap
//! (with a swap file behind it whose device latency is charged), and every swap-out, swap-in and
//! pool size is counted ([`replay`]). Around it: the swap device's cost ([`swap_device`]), the
//! one way a zram device is built from a configuration and filled ([`device`]), CPU-time and
//! latency measurement ([`cputime`], [`latency`]) and progress reporting ([`Progress`]).
//!
//! Not for: touching the running kernel (zmem-kernel), choosing between configurations
//! (zmem-lab), or printing (zmem-render).

pub mod cputime;
pub mod device;
mod error;
pub mod latency;
mod progress;
pub mod replay;
pub mod swap_device;

pub use error::SimError;
pub use progress::{NoProgress, Progress};
