//! One module per subcommand: its clap arguments and its `run`.

pub mod codec;
pub mod comp_bench;
pub mod mapbench;
mod pages;
mod progress;
