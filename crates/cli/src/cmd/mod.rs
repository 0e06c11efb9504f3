//! One module per subcommand: its clap arguments and its `run`.

pub mod codec;
pub mod comp_bench;
pub mod conform;
pub mod zram;
mod pages;
mod progress;
