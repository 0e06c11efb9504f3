//! zmem-lab: experiments as functions from (workload, configuration) to result structs, and the
//! renderers that print them. Measuring and rendering are kept apart: an experiment returns plain
//! data (serialisable with serde), and `render_*` functions turn it into text.
//!
//! What this crate is not for: argument parsing, terminals and files (the `zmem` binary), or the
//! engines themselves (zmem-comp, zmem-pool, zmem-zram, zmem-zswap).

pub mod comp_bench;
pub mod conform;
mod error;
pub mod lab;
pub mod mapbench;
mod progress;
pub mod report;
pub mod zram_run;
pub mod zram_speed;

pub use error::LabError;
pub use progress::{NoProgress, Progress};
