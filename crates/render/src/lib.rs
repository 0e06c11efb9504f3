//! zmem-render: every result of zmem as something a person reads or runs: the measuring
//! subcommands' tables ([`experiments`], [`replay`]), the lab's terminal summary ([`summary`]),
//! its offline HTML report with inline SVG charts ([`html`], [`svg`]), the decision in words and
//! its two scripts ([`decision`], with [`apply`]'s zram forms), the operating point in words
//! and the cold curve's plot ([`operating`]), `zmem status`'s one screen
//! ([`status`]), `zmem cold`'s curve ([`cold`]), and the lab's JSON document ([`json`]: the report value plus the decision's
//! scripts, so the CLI's `--json` and Python's `zmem.lab` return the same document).
//!
//! [`script`] holds what the apply scripts' one generated part is made of: values checked
//! against their grammar and shell-quoted; the rest of each script is fixed text in
//! `templates/`.
//!
//! [`outputs`] writes the lab's files (its scripts and report), the one place both front doors
//! have them written.
//!
//! Not for: measuring or deciding anything (every number here was computed by zmem-lab,
//! zmem-experiments or zmem-sim), or writing any other file (the front ends do).

pub mod apply;
pub mod cold;
pub mod decision;
pub mod experiments;
pub mod html;
pub mod json;
pub mod operating;
pub mod outputs;
pub mod pressure;
pub mod proactive;
pub mod replay;
pub mod script;
pub mod status;
pub mod summary;
mod svg;
mod table;
pub mod units;
pub mod validate_apply;
pub mod validate_lab;
pub mod zswap;

pub use html::{PLOT_COLORS, render_html};
pub use outputs::{LabOutputs, OutputError, write_lab_outputs};
pub use summary::{render_apply_script, render_summary};
