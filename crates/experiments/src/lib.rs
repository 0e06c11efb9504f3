//! zmem-experiments: what zmem's measuring subcommands measure, each a function from (pages,
//! configuration) to a serde result value: the compressor table ([`comp_bench`]), a page set
//! through one zram device ([`zram_run`]), zmem's zram against the kernel's ([`conform`],
//! [`zram_speed`]), zsmalloc's object mapping ([`mapbench`]), the allocator study ([`study`]),
//! dictionaries ([`dict`]), and the compressed objects one measurement keeps for another
//! ([`objects`]). The replay checked against the kernel is zmem-validate's.
//!
//! Not for: choosing a configuration (zmem-lab), printing results (zmem-render), or setting up
//! the kernel (zmem-kernel): measuring never prints.

pub mod comp_bench;
pub mod conform;
pub mod dict;
mod error;
pub mod machine;
pub mod mapbench;
pub mod objects;
pub mod readahead;
pub mod study;
pub mod zram_run;
pub mod zram_speed;

pub use error::LabError;
pub use zmem_sim::{NoProgress, Progress};
