//! Every option of the lab, declared once: [`LAB_OPTIONS`]. `zmem lab`'s flags are clap
//! arguments built from it (the CLI's `cmd/lab.rs`), `zmem.lab`'s keyword arguments are set
//! through it (the extension's `lab`, whose table Python reads as `zmem._native.lab_options()`
//! for its signature and docs), and zmem-fleet builds its lab flags from that table. Each door
//! hands an option's value over as text, as a user wrote it (a Python int or float as `str()`
//! writes it), to the option's one parser here, so the same bad value is refused with the same
//! reason by every door, each wording only the option's name (`--observe -1: ...`,
//! `observe=-1: ...`, [`ArgError`]).
//!
//! A default is never written here: an option's stated default is read from
//! [`LabRequest::default`] (which takes the budgets from `Budgets::default()`, the pass time from
//! `LabOptions::default()` and the sample from `Coverage::DEFAULT_SAMPLE`), and so is any
//! default a help text mentions.
//!
//! A new lab option: its field in [`LabRequest`] (`lab.rs`), its entry here, and its use.

use std::path::PathBuf;
use std::time::Duration;

use super::lab::{budget, parse_max_pages, parse_source, parse_swap_device, swap_device_text};
use super::{ArgError, LabRequest, MAX_SECS, MAX_THREADS, parse_count};
use crate::{Coverage, Input};

/// How an option's value is written; each door maps it onto its own types (clap takes text,
/// Python the type [`ValueKind::python`] names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Given or not: a CLI flag with no value, a Python `bool` (`False` is not given).
    Flag,
    /// A whole number.
    Count,
    /// A number with fractions.
    Number,
    /// A whole number or a word (`--max-pages 512`, `--max-pages all`).
    CountOrWord,
    /// A word or other text.
    Text,
    /// A file's path.
    Path,
}

impl ValueKind {
    /// Its name in the table Python reads (`zmem._native.lab_options()`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::Count => "count",
            Self::Number => "number",
            Self::CountOrWord => "count_or_word",
            Self::Text => "text",
            Self::Path => "path",
        }
    }

    /// What Python passes for it, as a TypeError states it.
    pub fn python(self) -> &'static str {
        match self {
            Self::Flag => "True or False",
            Self::Count => "an int",
            Self::Number => "a number",
            Self::CountOrWord => "an int or a str",
            Self::Text => "a str",
            Self::Path => "a str or os.PathLike",
        }
    }
}

/// One option of the lab: its name (Python's keyword; the CLI's flag is the same with dashes),
/// how it is written and shown, and the parser that sets it on a [`LabRequest`].
#[derive(Debug)]
pub struct LabOption {
    /// The Python keyword (`min_time_ms`); the CLI's flag is `--min-time-ms`.
    pub name: &'static str,
    /// The value's placeholder in `--help` (`SECONDS`); empty for a flag.
    pub value_name: &'static str,
    pub kind: ValueKind,
    /// The words the value is one of, where it is (`--help` lists them); else empty.
    pub choices: &'static [&'static str],
    /// Options this one cannot be given with (each pair declared on one side).
    pub conflicts_with: &'static [&'static str],
    /// About the live machine the lab runs on (its memory, its swap traffic, its debugfs): no
    /// option of zmem-fleet, which runs the lab on captures from other machines.
    pub live: bool,
    /// Read by the judgement only (the budgets, proactive reclaim's): what an evidence file is
    /// judged with (`zmem lab FILE`), never something `zmem evidence` measures.
    pub judges: bool,
    /// The help text, one paragraph without a final period (clap's style), given the
    /// defaults: a default it mentions is read from them, never restated.
    help: fn(&LabRequest) -> String,
    /// The default as `--help` states it (`[default: ...]`), read from the defaults; `None`
    /// where there is none to state (a flag; a source chosen at run time).
    shown: fn(&LabRequest) -> Option<String>,
    /// Sets the option on a request from its text; the refusal names the option.
    parse: fn(&mut LabRequest, &str) -> Result<(), ArgError>,
}

impl LabOption {
    /// The CLI's flag without its dashes (`min-time-ms`).
    pub fn flag(&self) -> String {
        self.name.replace('_', "-")
    }

    pub fn help(&self) -> String {
        (self.help)(&LabRequest::default())
    }

    /// The default `--help` states, read from [`LabRequest::default`].
    pub fn default_text(&self) -> Option<String> {
        (self.shown)(&LabRequest::default())
    }
}

/// `zmem lab`'s options, in `--help`'s order. Front-end outputs (`--json`, `--output`, the
/// apply and undo scripts) and the page file are each door's own.
pub const LAB_OPTIONS: &[LabOption] = &[
    LabOption {
        name: "source",
        value_name: "SOURCE",
        kind: ValueKind::Text,
        choices: &["zram", "processes", "builtin"],
        conflicts_with: &["no_capture"],
        live: true,
        judges: false,
        help: |_| {
            "Where the pages come from: `zram` (the active zram swap devices: what the kernel \
             compresses now), `processes` (this machine's processes' anonymous memory) or \
             `builtin` (a generated set). Default: zram if any is active and readable, else \
             processes, else builtin, and the report says which and why (its first line says a \
             fallback). A source named never falls back: if it cannot be used, zmem says why \
             and exits with status 2"
                .into()
        },
        shown: |_| None,
        parse: |r, t| {
            r.input = parse_source(t)?;
            Ok(())
        },
    },
    LabOption {
        name: "no_capture",
        value_name: "",
        kind: ValueKind::Flag,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: false,
        help: |_| "Same as `--source builtin`".into(),
        shown: |_| None,
        parse: |r, _| {
            r.input = Input::Builtin;
            Ok(())
        },
    },
    LabOption {
        name: "mount_debugfs",
        value_name: "",
        kind: ValueKind::Flag,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: false,
        help: |_| {
            "As root, mount debugfs at /sys/kernel/debug for the read of zswap's counters where \
             it is not mounted, and unmount it after (without this flag zmem changes nothing \
             and says which counters it could not read)"
                .into()
        },
        shown: |_| None,
        parse: |r, _| {
            r.mount_debugfs = true;
            Ok(())
        },
    },
    LabOption {
        name: "observe",
        value_name: "SECONDS",
        kind: ValueKind::Count,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: false,
        help: |d| {
            format!(
                "Seconds to observe the machine beside the measurements: its swap traffic (the \
                 CPU cost projection's rates), its memory pressure, and how long its processes' \
                 memory stays idle (the cold curve, read up to --cold-age; default {} s). A \
                 window shorter than the cold age cannot see what has been idle that long, and \
                 the report says so (0 skips it all)",
                d.cold_age_secs
            )
        },
        shown: |d| Some(d.observe_secs.to_string()),
        parse: |r, t| {
            r.observe_secs = count("observe", t, 0, MAX_SECS)?;
            Ok(())
        },
    },
    LabOption {
        name: "cold_age",
        value_name: "AGE",
        kind: ValueKind::Text,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: false,
        help: |d| {
            format!(
                "The cold age T: memory idle this long is what reclaim moves out first and \
                 proactive reclaim would move out now; the report gives each configuration's \
                 savings there beside today's (10s, 2m; default the longest of 10 s, 30 s and \
                 1 min that the default --observe of {} s reads; a longer one lengthens the \
                 window unless --observe is given)",
                d.observe_secs
            )
        },
        shown: |d| Some(format!("{}s", d.cold_age_secs)),
        parse: |r, t| {
            r.cold_age_secs = super::parse_age(t).map_err(|e| ArgError::new("cold_age", e))?;
            Ok(())
        },
    },
    LabOption {
        name: "no_cold",
        value_name: "",
        kind: ValueKind::Flag,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: false,
        help: |_| {
            "Do not read the cold curve. Reading it writes 1 to each user process's \
             /proc/PID/clear_refs once (clearing the referenced bits reclaim ages pages by), \
             and zmem does so only while memory is not short, when no reclaim runs"
                .into()
        },
        shown: |_| None,
        parse: |r, _| {
            r.no_cold = true;
            Ok(())
        },
    },
    LabOption {
        name: "no_proactive",
        value_name: "",
        kind: ValueKind::Flag,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: true,
        help: |_| {
            "Leave proactive reclaim out of the decision: without it the savings are at \
             today's pressure (a compressed swap holds nothing until memory is short); with it \
             (the default where this machine has none for anonymous memory) memory idle for \
             the cold age is paged out by the kernel's tools and the savings are at the cold age"
                .into()
        },
        shown: |_| None,
        parse: |r, _| {
            r.no_proactive = true;
            Ok(())
        },
    },
    LabOption {
        name: "exclude",
        value_name: "PID|NAME|/CGROUP,...",
        kind: ValueKind::Text,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: true,
        help: |_| {
            "Processes the proactive reclaim never pages out: pids, process names (comm) and \
             memory cgroup path prefixes (/system.slice), comma-separated"
                .into()
        },
        shown: |_| None,
        parse: |r, t| {
            r.exclude =
                zmem_kernel::reclaim::Exclude::parse(t).map_err(|e| ArgError::new("exclude", e))?;
            Ok(())
        },
    },
    LabOption {
        name: "cgroup_limit",
        value_name: "CGROUP=SIZE,...",
        kind: ValueKind::Text,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: false,
        help: |_| {
            "Figure today's savings as if these memory cgroups had these limits (a cgroup's \
             path as the report's pressure lines show it, e.g. \
             /sys/fs/cgroup/memory/app=1G): what their reclaim would move out to stay under \
             them once swap exists"
                .into()
        },
        shown: |_| None,
        parse: |r, t| {
            r.cgroup_limits = parse_cgroup_limits(t)?;
            Ok(())
        },
    },
    LabOption {
        name: "max_pages",
        value_name: "N|all",
        kind: ValueKind::CountOrWord,
        choices: &[],
        conflicts_with: &["sample"],
        live: false,
        judges: false,
        help: |d| {
            format!(
                "Most pages to run on: a number (a larger capture or file is sampled evenly down \
                 to it) or `all` (every page). Without it (and without --sample) a larger input \
                 is sampled at random as by `--sample {}`",
                shown_sample(d).unwrap_or_default()
            )
        },
        shown: |_| None,
        parse: |r, t| {
            r.coverage = parse_max_pages(t)?;
            Ok(())
        },
    },
    LabOption {
        name: "sample",
        value_name: "N",
        kind: ValueKind::Count,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: false,
        help: |_| {
            "Run on a stratified random sample of N pages (every page of an input of no more) \
             and estimate the pool, ratio and memory saved of every page of the input, with 95 \
             % confidence intervals (docs/BENCHMARKS.md, \"Sampling\")"
                .into()
        },
        shown: shown_sample,
        parse: |r, t| {
            let n = count("sample", t, 2, 1 << 32)?;
            r.coverage = Coverage::Sample(usize::try_from(n).unwrap_or(usize::MAX));
            Ok(())
        },
    },
    LabOption {
        name: "cpu_budget",
        value_name: "PERCENT",
        kind: ValueKind::Number,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: true,
        help: |_| {
            "CPU the recommended configuration may use, in percent of one core (compression of \
             the swap-outs, decompression of the swap-ins, background recompression)"
                .into()
        },
        shown: |d| Some(d.budgets.cpu_percent_of_core.to_string()),
        parse: |r, t| {
            r.budgets.cpu_percent_of_core = budget("cpu_budget", t)?;
            Ok(())
        },
    },
    LabOption {
        name: "latency_budget",
        value_name: "MICROSECONDS",
        kind: ValueKind::Number,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: true,
        help: |_| {
            "Most the recommended configuration may add to the p99 swap-in latency end to end, \
             in microseconds: the read's, and where memory is full the 32 pages a fault \
             reclaims, each compressed by the candidate"
                .into()
        },
        shown: |d| Some(d.budgets.added_load_p99_us.to_string()),
        parse: |r, t| {
            r.budgets.added_load_p99_us = budget("latency_budget", t)?;
            Ok(())
        },
    },
    LabOption {
        name: "promotion_budget",
        value_name: "PERCENT",
        kind: ValueKind::Number,
        choices: &[],
        conflicts_with: &[],
        live: true,
        judges: true,
        help: |_| {
            "Memory idle for the cold age that may come back, in percent of the working set \
             (the memory touched within the cold age) per minute: a cold age whose memory \
             comes back faster is flagged as too short to move memory out at"
                .into()
        },
        shown: |d| Some(d.budgets.promotion_percent_per_min.to_string()),
        parse: |r, t| {
            r.budgets.promotion_percent_per_min = budget("promotion_budget", t)?;
            Ok(())
        },
    },
    LabOption {
        name: "swap_device",
        value_name: "auto|PATH|nvme|ssd|emmc|hdd",
        kind: ValueKind::Text,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: false,
        help: |_| {
            "The block device behind a swap file, whose 4 KiB latency the zram-vs-zswap replays \
             charge to every device read and write: `auto` (this machine's: its swap file's \
             directory or the one zswap's swap file would go in, measured for about a second \
             with O_DIRECT; a swap partition's kind), a profile (nvme, ssd, emmc, hdd) or a path \
             on the device to measure"
                .into()
        },
        shown: |d| Some(swap_device_text(&d.swap_device)),
        parse: |r, t| {
            r.swap_device = parse_swap_device(t)?;
            Ok(())
        },
    },
    LabOption {
        name: "trace",
        value_name: "TRACE",
        kind: ValueKind::Path,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: false,
        help: |_| {
            "Replay this access trace (`zmem trace record`'s, `zmem trace gen`'s, any) instead \
             of the generated one; its page ids index the page set (before sampling to \
             --max-pages)"
                .into()
        },
        shown: |_| None,
        parse: |r, t| {
            r.trace = Some(PathBuf::from(t));
            Ok(())
        },
    },
    LabOption {
        name: "generated_trace",
        value_name: "",
        kind: ValueKind::Flag,
        choices: &[],
        conflicts_with: &["trace"],
        live: false,
        judges: false,
        help: |_| {
            "Where nothing gives swap rates (no swap to observe, no cold curve, no --trace), price \
             CPU at the swap rates of zmem's generated access trace; without it that CPU is not \
             priced, and the report says so"
                .into()
        },
        shown: |_| None,
        parse: |r, _| {
            r.generated_trace = true;
            Ok(())
        },
    },
    LabOption {
        name: "threads",
        value_name: "N",
        kind: ValueKind::Count,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: false,
        help: |_| "Threads the measurements run on (0: one per core)".into(),
        shown: |d| Some(d.threads.to_string()),
        parse: |r, t| {
            let n = count("threads", t, 0, MAX_THREADS)?;
            r.threads = usize::try_from(n).unwrap_or(usize::MAX);
            Ok(())
        },
    },
    LabOption {
        name: "min_time_ms",
        value_name: "MS",
        kind: ValueKind::Count,
        choices: &[],
        conflicts_with: &[],
        live: false,
        judges: false,
        help: |_| "Least time each compressor pass is timed for, in milliseconds".into(),
        shown: |d| Some(d.min_time.as_millis().to_string()),
        parse: |r, t| {
            r.min_time = Duration::from_millis(count("min_time_ms", t, 0, MAX_SECS * 1000)?);
            Ok(())
        },
    },
];

/// `--cgroup-limit`: `PATH=SIZE` pairs, comma-separated; a path is absolute.
pub fn parse_cgroup_limits(text: &str) -> Result<Vec<(String, u64)>, ArgError> {
    let bad = |why: String| ArgError::new("cgroup_limit", why);
    text.split(',')
        .map(|pair| {
            let (path, size) = pair
                .trim()
                .rsplit_once('=')
                .ok_or_else(|| bad(format!("{pair:?} is not CGROUP=SIZE")))?;
            if !path.starts_with('/') || path.contains("/../") || path.ends_with("/..") {
                return Err(bad(format!("{path:?} is not a cgroup's absolute path")));
            }
            let size = crate::parse_size(size.trim())
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| bad(format!("{size:?} is not a size over 0 (1G, 512M)")))?;
            Ok((path.trim_end_matches('/').to_string(), size))
        })
        .collect()
}

/// The option named `name` (Python's keyword), if the lab has it.
pub fn lab_option(name: &str) -> Option<&'static LabOption> {
    LAB_OPTIONS.iter().find(|o| o.name == name)
}

/// The sample a request measures by default, as `--help` states it.
fn shown_sample(d: &LabRequest) -> Option<String> {
    match d.coverage {
        Coverage::Sample(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A count option's value: a whole number in `min..=max`.
fn count(name: &'static str, text: &str, min: u64, max: u64) -> Result<u64, ArgError> {
    parse_count(text, min, max).map_err(|why| ArgError::with_value(name, text.trim(), why))
}

/// A [`LabRequest`] made from the options a door was given, one at a time: each set through
/// its parser, then the request as a whole checked ([`LabArgs::finish`]). What was not given
/// keeps [`LabRequest::default`]'s value.
#[derive(Debug, Default)]
pub struct LabArgs {
    req: LabRequest,
    given: Vec<&'static str>,
}

impl LabArgs {
    /// Sets `opt` from `text` (a flag's: `true` or `false`; `false` is not given).
    pub fn set(&mut self, opt: &'static LabOption, text: &str) -> Result<(), ArgError> {
        if opt.kind == ValueKind::Flag {
            match text {
                "true" => {}
                "false" => return Ok(()),
                other => return Err(ArgError::with_value(opt.name, other, "not true or false")),
            }
        }
        (opt.parse)(&mut self.req, text)?;
        self.given.push(opt.name);
        Ok(())
    }

    /// Refuses what the phase does not take: judging findings from an evidence file
    /// (`judging`) takes only the options that judge ([`LabOption::judges`]); measuring for
    /// one (`zmem evidence`) only the others.
    pub fn check_phase(&self, judging: bool) -> Result<(), ArgError> {
        let wrong = self.given.iter().filter_map(|&n| lab_option(n)).find(|o| o.judges != judging);
        match wrong {
            None => Ok(()),
            Some(o) if judging => Err(ArgError::new(
                o.name,
                "measures pages, and an evidence file was measured already (give it to \
                 `zmem evidence`)",
            )),
            Some(o) => Err(ArgError::new(
                o.name,
                "judges the findings, which evidence leaves to its judge (give it to \
                 `zmem lab EVIDENCE`)",
            )),
        }
    }

    /// Whether the option `name` was given (a flag: given as true).
    pub fn given(&self, name: &str) -> bool {
        self.given.contains(&name)
    }

    /// The request, refused where two options that conflict were both given (the CLI's clap
    /// refuses them first, in its words; Python's are these).
    pub fn finish(mut self) -> Result<LabRequest, ArgError> {
        for o in LAB_OPTIONS.iter().filter(|o| self.given(o.name)) {
            if let Some(other) = o.conflicts_with.iter().find(|c| self.given(c)) {
                return Err(ArgError::new("", format!("give {} or {other}, not both", o.name)));
            }
        }
        // A cold age past the default window lengthens it, unless --observe says how long.
        if !self.given("observe") {
            self.req.observe_secs = self.req.observe_secs.max(self.req.cold_age_secs);
        }
        Ok(self.req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(given: &[(&str, &str)]) -> Result<LabRequest, ArgError> {
        let mut a = LabArgs::default();
        for (name, text) in given {
            a.set(lab_option(name).expect(name), text)?;
        }
        a.finish()
    }

    #[test]
    fn every_stated_default_is_the_requests() {
        let want = format!("{:?}", LabRequest::default());
        let mut stated = 0;
        for o in LAB_OPTIONS {
            if let Some(d) = o.default_text() {
                let got =
                    request(&[(o.name, d.as_str())]).unwrap_or_else(|e| panic!("{}: {e}", o.name));
                assert_eq!(format!("{got:?}"), want, "{} {d} is not the default", o.name);
                stated += 1;
            }
        }
        assert!(stated >= 7, "{stated}");
        assert_eq!(format!("{:?}", request(&[]).unwrap()), want);
    }

    #[test]
    fn the_table_is_well_formed() {
        for (i, o) in LAB_OPTIONS.iter().enumerate() {
            assert!(LAB_OPTIONS[..i].iter().all(|p| p.name != o.name), "{} twice", o.name);
            assert!(o.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{}", o.name);
            let help = o.help();
            assert!(!help.is_empty() && !help.ends_with('.'), "{}: {help:?}", o.name);
            assert_eq!(o.value_name.is_empty(), o.kind == ValueKind::Flag, "{}", o.name);
            for c in o.conflicts_with {
                assert!(lab_option(c).is_some(), "{} conflicts with unknown {c}", o.name);
            }
            for c in o.choices {
                assert!(request(&[(o.name, c)]).is_ok(), "{} {c}", o.name);
            }
        }
        let sample = Coverage::DEFAULT_SAMPLE.to_string();
        assert!(lab_option("max_pages").unwrap().help().contains(&format!("--sample {sample}`")));
    }

    #[test]
    fn each_option_sets_its_field() {
        let r = request(&[
            ("observe", "3"),
            ("sample", "100"),
            ("cpu_budget", "2.5"),
            ("latency_budget", "0"),
            ("swap_device", "hdd"),
            ("trace", "t.trace"),
            ("threads", "4"),
            ("min_time_ms", "7"),
            ("mount_debugfs", "true"),
            ("no_capture", "true"),
        ])
        .unwrap();
        assert_eq!((r.observe_secs, r.coverage), (3, Coverage::Sample(100)));
        assert_eq!((r.budgets.cpu_percent_of_core, r.budgets.added_load_p99_us), (2.5, 0.0));
        assert_eq!(swap_device_text(&r.swap_device), "hdd");
        assert_eq!(r.trace, Some(PathBuf::from("t.trace")));
        assert_eq!((r.threads, r.min_time), (4, Duration::from_millis(7)));
        assert!(r.mount_debugfs && matches!(r.input, Input::Builtin));
        assert_eq!(request(&[("max_pages", "all")]).unwrap().coverage, Coverage::All);
        assert!(!request(&[("mount_debugfs", "false")]).unwrap().mount_debugfs);
    }

    #[test]
    fn bad_values_are_refused_naming_the_option() {
        for (name, bad, why) in [
            ("observe", "-1", "negative; give a number from 0 to 604800"),
            ("sample", "1", "less than 2"),
            ("threads", "x", "not a whole number"),
            ("cpu_budget", "-1", "must be a number >= 0"),
            ("latency_budget", "NaN", "must be a number >= 0"),
            ("max_pages", "0", "\"0\" is neither a number of pages (1 or more) nor `all`"),
            ("source", "disk", "unknown source \"disk\" (zram, processes or builtin)"),
            ("no_capture", "yes", "not true or false"),
        ] {
            let e = request(&[(name, bad)]).unwrap_err();
            assert_eq!((e.arg, e.why.as_str()), (name, why), "{name} {bad}");
        }
        let e = request(&[("swap_device", "nvm3")]).unwrap_err();
        assert!(e.flag().starts_with("--swap-device: ") && e.why.contains("nvme"), "{e}");
        let e = request(&[("sample", "10"), ("max_pages", "5")]).unwrap_err();
        assert_eq!(e.keyword(), "give max_pages or sample, not both");
        let e = request(&[("no_capture", "true"), ("source", "zram")]).unwrap_err();
        assert_eq!(e.keyword(), "give source or no_capture, not both");
    }

    #[test]
    fn the_operating_point_options_parse_and_refuse() {
        let r = request(&[
            ("cold_age", "2m"),
            ("cgroup_limit", "/sys/fs/cgroup/memory/a/=1G, /b=512M"),
            ("no_cold", "true"),
            ("promotion_budget", "0.5"),
        ])
        .unwrap();
        assert_eq!(r.cold_age_secs, 120);
        assert_eq!(r.observe_secs, 120, "the window reaches the cold age asked for");
        let given = request(&[("cold_age", "2m"), ("observe", "30")]).unwrap();
        assert_eq!(given.observe_secs, 30, "an --observe given stands");
        assert_eq!(
            r.cgroup_limits,
            [("/sys/fs/cgroup/memory/a".to_string(), 1 << 30), ("/b".to_string(), 512 << 20)]
        );
        assert!(r.no_cold);
        assert_eq!(r.budgets.promotion_percent_per_min, 0.5);
        for (name, bad) in [
            ("cold_age", "0s"),
            ("cgroup_limit", "relative=1G"),
            ("cgroup_limit", "/a=0"),
            ("cgroup_limit", "/a"),
            ("cgroup_limit", "/a/../b=1G"),
            ("promotion_budget", "-1"),
        ] {
            let e = request(&[(name, bad)]).unwrap_err();
            assert_eq!(e.arg, name, "{bad}");
        }
    }
}
