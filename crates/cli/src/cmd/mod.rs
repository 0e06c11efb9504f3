//! One module per subcommand: its clap arguments and its `run`.

pub mod capture;
pub mod codec;
pub mod comp_bench;
pub mod conform;
pub mod export;
pub mod generate;
pub mod lab;
pub mod mapbench;
mod pages;
mod progress;
pub mod trace;
pub mod zram;
pub mod zram_speed;
