//! One module per subcommand: its clap arguments and its `run`. What several commands share
//! lives in modules of its own (`args`, `pages`, `progress`), never in a command's module.

mod args;
pub mod capture;
pub mod codec;
pub mod comp_bench;
pub mod conform;
pub mod dict;
pub mod export;
pub mod exporter;
pub mod generate;
pub mod lab;
pub mod mapbench;
mod pages;
mod progress;
pub mod replay;
pub mod status;
pub mod study;
pub mod trace;
pub mod validate;
pub mod zram;
pub mod zram_speed;

/// Prints `value` as pretty JSON when `json` is set, else the text `render` makes of it.
pub(crate) fn emit<T: serde::Serialize>(
    json: bool,
    value: &T,
    render: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    if json {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| anyhow::anyhow!("encoding JSON: {e}"))?;
        println!("{text}");
    } else {
        print!("{}", render(value));
    }
    Ok(())
}
