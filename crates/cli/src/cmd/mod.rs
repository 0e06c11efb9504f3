//! One module per subcommand: its clap arguments and its `run`. What several commands share
//! lives in modules of its own (`args`, `pages`, `progress`), never in a command's module.

pub mod agent;
mod args;
pub mod capture;
pub mod codec;
pub mod cold;
pub mod comp_bench;
pub mod conform;
pub mod damon;
pub mod dict;
pub mod evidence;
pub mod export;
pub mod exporter;
pub mod generate;
pub mod lab;
pub mod mapbench;
pub mod memcg_reclaim;
mod pages;
mod progress;
pub mod replay;
pub mod status;
pub mod study;
pub mod trace;
pub mod validate;
pub mod zram;
pub mod zram_speed;

/// Writes one line to stderr with no control character: it may carry process names, cgroup
/// paths or notes read from the machine.
pub(crate) fn note(line: &str) {
    eprintln!("{}", zmem_render::script::sanitize(line));
}

/// Prints `value` as pretty JSON when `json` is set, else the text `render` makes of it, with no
/// control character but line breaks and tabs (names and paths come from the machine and from
/// page sets: an escape sequence among them must not reach the terminal).
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
        print!("{}", zmem_render::script::terminal(&render(value)));
    }
    Ok(())
}
