//! `zmem lab`: this machine's memory (or a page file, or the built-in set) through every
//! configuration, a report and a recommendation.

use std::path::PathBuf;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::parser::ValueSource;
use zmem_lab::request::{LAB_OPTIONS, LabArgs, LabOption, ValueKind};
use zmem_lab::{self as lab, Input, LabRequest};
use zmem_render as report;

/// `zmem lab`'s flags: the outputs and the page file are the CLI's own; every other option is
/// the lab's, declared in its table ([`LabFlags`]).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON (schema: docs/lab-report.schema.json) instead of the summary.
    #[arg(long)]
    json: bool,
    /// Also write report.html and report.json into this directory (`--out` works too).
    #[arg(short = 'o', long, visible_alias = "out", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Write the shell script that applies the decision (and nothing else) from this
    /// machine's state, for you to review and run as root; zmem runs none of it.
    #[arg(long, value_name = "FILE")]
    apply_script: Option<PathBuf>,
    /// Write the shell script that undoes what the apply script changed (it reads the state
    /// the apply saved in /var/lib/zmem/undo).
    #[arg(long, value_name = "FILE")]
    undo_script: Option<PathBuf>,
    #[command(flatten)]
    options: LabFlags,
    /// Page file (raw pages or a page set, such as `zmem capture --zram`'s), or an evidence
    /// file (`zmem evidence`), judged as it is; none: see --source.
    #[arg(conflicts_with_all = ["source", "no_capture"])]
    pages: Option<PathBuf>,
}

/// Which of the lab's options a command takes ([`LabFlags`]' parameter).
pub const ALL_OPTIONS: u8 = 0;
/// The options that measure, without those that judge (`zmem evidence`).
pub const MEASURING_OPTIONS: u8 = 1;

fn takes<const W: u8>(o: &LabOption) -> bool {
    W == ALL_OPTIONS || !o.judges
}

/// The lab's options as the user gave them (a flag as `true`), in the table's order, for the
/// table's parsers: clap only builds the arguments (help, default shown, conflicts) from the
/// declaration, so the CLI and Python refuse a bad value in the same words.
#[derive(Debug, Default)]
pub struct LabFlags<const W: u8 = ALL_OPTIONS>(pub Vec<(&'static LabOption, String)>);

impl<const W: u8> clap::Args for LabFlags<W> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        LAB_OPTIONS.iter().filter(|o| takes::<W>(o)).fold(cmd, |c, o| c.arg(arg(o)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl<const W: u8> clap::FromArgMatches for LabFlags<W> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let given = LAB_OPTIONS
            .iter()
            .filter(|o| takes::<W>(o))
            // A default clap shows is the request's own already: only what the user typed.
            .filter(|o| m.value_source(o.name) == Some(ValueSource::CommandLine))
            .map(|o| {
                let text = match o.kind {
                    ValueKind::Flag => m.get_flag(o.name).to_string(),
                    _ => m.get_one::<String>(o.name).cloned().unwrap_or_default(),
                };
                (o, text)
            })
            .collect();
        Ok(Self(given))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The clap argument of one lab option.
fn arg(o: &'static LabOption) -> clap::Arg {
    let a = clap::Arg::new(o.name)
        .long(o.flag())
        .help(o.help())
        .conflicts_with_all(o.conflicts_with.iter().copied());
    if o.kind == ValueKind::Flag {
        return a.action(clap::ArgAction::SetTrue);
    }
    let a =
        a.action(clap::ArgAction::Set).value_name(o.value_name).value_parser(AsGiven(o.choices));
    match o.default_text() {
        Some(d) => a.default_value(d),
        None => a,
    }
}

/// A lab option's value as typed (UTF-8), for the table's parser; its choices, where it has
/// some, listed by `--help` (clap's `[possible values: ...]`) but checked by the table.
#[derive(Debug, Clone)]
struct AsGiven(&'static [&'static str]);

impl TypedValueParser for AsGiven {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        if self.0.is_empty() {
            return None;
        }
        Some(Box::new(self.0.iter().map(|c| PossibleValue::new(*c))))
    }
}

/// The request the flags make: each lab option through the table, then the page file (or
/// the evidence file, which takes only the options that judge).
fn request(args: &Args) -> anyhow::Result<LabRequest> {
    let given = given(&args.options)?;
    let evidence = args.pages.as_deref().filter(|p| lab::findings::is_evidence(p));
    if let Some(path) = evidence {
        given.check_phase(true).map_err(|e| anyhow::anyhow!(e.flag()))?;
        let findings = lab::findings::read(path)?;
        let mut req = given.finish().map_err(|e| anyhow::anyhow!(e.flag()))?;
        req.input = Input::Findings(Box::new(findings));
        return Ok(req);
    }
    let mut req = given.finish().map_err(|e| anyhow::anyhow!(e.flag()))?;
    if let Some(path) = &args.pages {
        req.input = page_input(path)?;
    }
    Ok(req)
}

/// Each lab option the user gave, through the table.
pub fn given<const W: u8>(flags: &LabFlags<W>) -> anyhow::Result<LabArgs> {
    let mut given = LabArgs::default();
    for (o, text) in &flags.0 {
        given.set(o, text).map_err(|e| anyhow::anyhow!(e.flag()))?;
    }
    Ok(given)
}

/// A page file as the lab's input. The lab has no --page-size: a page set of another size is
/// refused in its own words.
pub fn page_input(path: &std::path::Path) -> anyhow::Result<Input> {
    let opts = zmem_pages::ReadOptions { page_size: 4096, ..Default::default() };
    let set = super::pages::map(path, &opts)?;
    if set.page_size() != 4096 {
        anyhow::bail!(
            "{} holds {}-byte pages; zmem lab FILE measures 4096-byte pages only",
            path.display(),
            set.page_size()
        );
    }
    Ok(Input::Pages { set, label: path.display().to_string() })
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args)?;
    let bar = super::progress::Bar::new();
    let r = lab::run_lab(req, &bar)?;
    drop(bar);
    // The source's words can come from a page set's metadata: no control character passes.
    let clean = report::script::terminal;
    eprintln!(
        "zmem lab: {} pages ({}: {})",
        r.source.pages,
        clean(&r.source.kind),
        clean(&r.source.detail)
    );
    if r.trace.kind == "file" {
        eprintln!("zmem lab: replayed {}", clean(&r.trace.detail));
    }
    let outputs = report::LabOutputs {
        apply_script: args.apply_script.clone(),
        undo_script: args.undo_script.clone(),
        dir: args.output.clone(),
    };
    // The error's own line (`writing PATH: why`) without its source again (`{:#}` adds it).
    let json = report::write_lab_outputs(&r, &outputs).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(path) = &outputs.apply_script {
        eprintln!("zmem lab: wrote {} (review it; nothing was run)", path.display());
    }
    if let Some(path) = &outputs.undo_script {
        eprintln!("zmem lab: wrote {} (it undoes what the apply script did)", path.display());
    }
    if let Some(dir) = &outputs.dir {
        let (html, json) = (dir.join("report.html"), dir.join("report.json"));
        eprintln!("zmem lab: wrote {} and {}", html.display(), json.display());
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", report::render_summary(&r));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `zmem lab` as the binary parses it (built: a flag's `false` default set).
    fn lab_command() -> clap::Command {
        let mut cmd = crate::command();
        cmd.build();
        cmd.find_subcommand("lab").expect("zmem lab").clone()
    }

    #[test]
    fn every_flags_default_is_the_declarations_and_the_requests() {
        let cmd = lab_command();
        let d = LabRequest::default();
        for o in LAB_OPTIONS {
            let a = cmd.get_arguments().find(|a| a.get_id() == o.name).expect(o.name);
            let shown: Vec<String> =
                a.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            let want: Vec<String> = match o.kind {
                ValueKind::Flag => vec!["false".into()],
                _ => o.default_text().into_iter().collect(),
            };
            assert_eq!(shown, want, "--{}", o.flag());
            // The shown default typed in makes the request the bare command makes.
            if let (ValueKind::Flag, _) | (_, None) = (o.kind, o.default_text()) {
                continue;
            }
            let flag = format!("--{}={}", o.flag(), shown[0]);
            let cli: Args = super::super::args::parse_flags(&["lab", &flag]);
            assert_eq!(format!("{:?}", request(&cli).unwrap()), format!("{d:?}"), "{flag}");
        }
        let bare: Args = super::super::args::parse_flags(&["lab"]);
        assert!(bare.options.0.is_empty(), "{:?}", bare.options);
        assert_eq!(format!("{:?}", request(&bare).unwrap()), format!("{d:?}"));
    }

    #[test]
    fn the_help_states_the_declarations_defaults() {
        let help = lab_command().render_long_help().to_string();
        // Each option's block: its `--flag <VALUE>` line and its help (clap does not wrap).
        let mut blocks: Vec<String> = Vec::new();
        for line in help.lines() {
            if line.trim_start().starts_with('-') {
                blocks.push(String::new());
            }
            if let Some(b) = blocks.last_mut() {
                b.push_str(line.trim());
                b.push(' ');
            }
        }
        for (name, default) in zmem_lab::request::defaults("lab").unwrap_or_default() {
            let flag = format!("--{} ", name.replace('_', "-"));
            let block = blocks.iter().find(|b| b.starts_with(&flag)).expect(&flag);
            assert!(block.contains(&format!("[default: {default}]")), "{block}");
        }
        assert!(help.contains("[possible values: zram, processes, builtin]"), "{help}");
    }

    #[test]
    fn a_bad_value_is_the_tables_refusal_worded_as_a_flag() {
        for flag in [
            "--observe=-1",
            "--sample=1",
            "--max-pages=0",
            "--source=disk",
            "--cpu-budget=nan",
            "--swap-device=nvm3",
        ] {
            let cli: Args = super::super::args::parse_flags(&["lab", flag]);
            let (name, value) = flag[2..].split_once('=').unwrap_or_default();
            let o = zmem_lab::request::lab_option(&name.replace('-', "_")).expect(name);
            let want = LabArgs::default().set(o, value).unwrap_err().flag();
            let got = request(&cli).unwrap_err().to_string();
            assert_eq!(got, want, "{flag}");
            assert!(got.starts_with(&format!("--{name}")), "{got}");
        }
    }

    #[test]
    fn clap_refuses_options_that_conflict() {
        let cmd = crate::command();
        for argv in [
            &["zmem", "lab", "--max-pages", "5", "--sample", "10"][..],
            &["zmem", "lab", "--source", "zram", "--no-capture"],
            &["zmem", "lab", "--source", "zram", "pages.zpages"],
        ] {
            let e = cmd.clone().try_get_matches_from(argv).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{argv:?}");
        }
        // A default clap shows is no conflict.
        let ok = cmd.try_get_matches_from(["zmem", "lab", "--max-pages", "all"]);
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn the_default_sample_is_written_once() {
        // Its one constant: every door's help and docs read it from the declaration.
        let n = lab::Coverage::DEFAULT_SAMPLE.to_string();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for file in [
            "crates/cli/src/cmd/lab.rs",
            "crates/lab/src/request/lab.rs",
            "crates/lab/src/request/lab_options.rs",
            "crates/lab/src/request/mod.rs",
            "python/src/lib.rs",
            "python/src/args.rs",
            "python/zmem/__init__.py",
            "python/zmem/_native.pyi",
            "python/zmem/fleet/__init__.py",
            "python/zmem/fleet/__main__.py",
            "python/zmem/fleet/boxplot.py",
            "python/zmem/fleet/choice.py",
            "python/zmem/fleet/cli.py",
            "python/zmem/fleet/driver.py",
            "python/zmem/fleet/evidence.py",
            "python/zmem/fleet/inputs.py",
            "python/zmem/fleet/options.py",
            "python/zmem/fleet/points.py",
            "python/zmem/fleet/report.py",
            "python/zmem/fleet/results.py",
            "python/zmem/fleet/tasks.py",
        ] {
            let text = std::fs::read_to_string(root.join(file)).expect(file);
            assert!(!text.contains(&n), "{file} restates the default sample {n}");
        }
    }
}
