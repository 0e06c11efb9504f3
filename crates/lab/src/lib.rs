//! zmem-lab: experiments as functions from (workload, configuration) to result structs, and the
//! renderers that print them. Measuring and rendering are kept apart: an experiment returns plain
//! data (serialisable with serde), and `render_*` functions turn it into text.
//!
//! What this crate is not for: argument parsing, terminals and files (the `zmem` binary), or the
//! engines themselves (zmem-comp, zmem-pool, zmem-zram, zmem-zswap).

pub mod comp_bench;
pub mod conform;
mod cputime;
pub mod dict;
mod error;
pub mod lab;
pub mod latency;
pub mod live;
pub mod mapbench;
pub mod objects;
mod progress;
pub mod replay;
pub mod report;
pub mod study;
pub mod swap_device;
pub mod validate;
pub mod zram_run;
pub mod zram_speed;

pub use error::LabError;
pub use progress::{NoProgress, Progress};
// What the command line needs of the engines, so that it depends on this crate, not on them.
pub use zmem_zram::DEFAULT_ALGORITHM;
pub use zmem_zram::parse::parse_size;
pub use zmem_zswap::Incompressible;
