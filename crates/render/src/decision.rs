//! The lab's one answer in words ([`text`], the report's opening block) and as the two
//! scripts a user runs: [`apply_script`] sets up the decision, and nothing else, from the
//! state the machine is in when it runs; [`undo_script`] puts back what it changed.
//!
//! The apply script saves what it changes in a state directory (`$ZMEM_STATE`, default
//! `/var/lib/zmem/undo`) before changing it: the zswap parameters it writes, the zram device
//! it reconfigures or creates, the swap areas it turns off or makes, and every file it writes
//! (backed up if it existed, listed if it did not). The undo script reads that directory, so it
//! is right for whatever state the apply met, even one other than the lab saw; it refuses to run
//! twice, as the apply refuses while an earlier apply is not undone. Never stacked: zram
//! decided turns zswap off (it would otherwise cache in front of the zram device, mm/zswap.c
//! `zswap_store()` runs for every swap-out whatever the device), zswap decided turns the zram
//! swap devices off and puts zswap in front of a disk swap (the one there is, or a swap file it
//! makes). Persistence is for what was decided only: zram-generator's drop-in (and the
//! recompression timer) for zram, tmpfiles.d for zswap's parameters and a swap unit for the
//! swap file it made, a drop-in that sets `zram-size = 0` (no device at boot) for zram
//! devices zram-generator would otherwise make beside zswap. `ZMEM_ROOT` prefixes every file
//! path (tests install into a scratch root), `ZMEM_ZRAM_DEVICE` names the zram device and
//! `ZMEM_SWAPFILE` the swap file; `ZMEM_SYSFS` and `ZMEM_PROCFS` stand for /sys and /proc.
//!
//! The scripts' code is fixed text (`templates/`); what a decision changes in them is one block
//! of assignments at the top, each value checked against its grammar ([`crate::script`]) or
//! the script refused with an error naming the field. A dictionary is never in a script: it
//! goes beside it ([`apply::DICT_FILE`]) and only its SHA-256 is in the block.

use zmem_lab::ZswapParams;
use zmem_lab::decision::{Decision, Kind, Reason, TieBreak};
use zmem_lab::{Config, LabReport, Policy};

use crate::units::human_bytes;

use crate::apply;
use crate::script::{self, Assignments, ScriptError};

/// The decision's opening block for the terminal, with no control character but its line
/// breaks (names and reasons can come from a page set's metadata).
pub fn text(r: &LabReport) -> String {
    script::terminal(&text_raw(r))
}

fn text_raw(r: &LabReport) -> String {
    let d = &r.decision;
    let mut s = String::new();
    let mib = |b: i64| human_bytes(b as f64);
    match d.kind {
        Kind::None => {
            s += &format!("Decision: none. {}.\n", reason_words(d));
            return s + "\n";
        }
        Kind::Keep if d.config == "none" => {
            s += "Decision: keep no compressed swap (change nothing).\n"
        }
        Kind::Keep => s += &format!("Decision: keep {} (change nothing).\n", d.config),
        Kind::Zram => s += &format!("Decision: run {} (and no zswap in front of it).\n", d.config),
        Kind::Zswap => {
            let behind = d.swap_behind.as_ref().map_or("a disk swap".to_string(), |b| {
                match (&b.existing, &b.new_file) {
                    (Some(e), _) => format!("the disk swap {e}"),
                    (None, Some(f)) => {
                        format!("a new {} swap file {f}", human_bytes(b.size_bytes as f64))
                    }
                    _ => "a disk swap".into(),
                }
            });
            s += &format!("Decision: run {} in front of {behind} (no zram swap).\n", d.config)
        }
    }
    if let Some(words) = crate::operating::sentence(r) {
        s += &format!("  {words}\n");
    }
    if let Some(words) = crate::operating::proactive(r) {
        s += &format!("  {words}\n");
    }
    if chosen_zram(r, d).is_some_and(|(p, bytes)| p.dict && bytes.is_none()) {
        s += "  Its dictionary is not in these findings (they hold no memory): the apply script \
              trains one on the host's memory when it runs (zmem dict train --live).\n";
    }
    if d.kind != Kind::Keep {
        for f in crate::operating::figures(r) {
            s += &format!("  {f}\n");
        }
        if let Some(size) = crate::operating::sizing(r) {
            s += &format!("  {size}\n");
        }
        s += &format!(
            "  {}saves {} [{} .. {}, 95 %] against now ({}: {} for {} pages)\n",
            if d.operating_point.is_some() { "every page swapped: " } else { "" },
            mib(d.all_pages_saved_bytes),
            mib(d.all_pages_saved_ci[0]),
            mib(d.all_pages_saved_ci[1]),
            d.basis.now_config,
            human_bytes(d.basis.now_bytes as f64),
            d.basis.pages
        );
    }
    let cpu = if r.rates.source == "none" {
        "CPU not priced (no swap rates: see Rates below)".to_string()
    } else {
        format!("{:.3} % of a core", 100.0 * d.cpu_seconds_per_second)
    };
    s += &format!(
        "  costs {cpu}; swap-in p99 {:.0} us end to end where memory is full (fault, read, and \
         the reclaim a fault then does)\n",
        d.swap_in_p99_ns as f64 / 1e3
    );
    s += &format!("  why: {}\n", reason_words(d));
    if let Some(ru) = d.runner_up(&r.candidates) {
        let tie = if d.tie { "tie" } else { "runner-up" };
        s += &format!(
            "  {tie}: {} saves {} ({} {} the choice; the difference's uncertainty is +-{}){}\n",
            ru.name,
            mib(ru.memory_saved_bytes),
            mib(d.margin_bytes.abs()),
            if d.margin_bytes >= 0 { "less than" } else { "more than" },
            mib(d.uncertainty_bytes),
            if d.tie {
                format!(
                    "; it would tip once the difference exceeds +-{} (a larger --sample narrows it)",
                    mib(d.uncertainty_bytes)
                )
            } else {
                String::new()
            }
        );
    }
    // What the reader must know before acting on it (generated pages; a kernel that cannot
    // run it), said with the answer, not only in the script.
    for w in warnings(r) {
        s += &format!("  WARNING: {w}\n");
    }
    if matches!(d.kind, Kind::Zram | Kind::Zswap) {
        s += "  apply: zmem lab --apply-script apply.sh --undo-script undo.sh, review, then `sudo sh apply.sh`;\n  \
              `sudo sh undo.sh` puts back what it changed\n";
    }
    s + "\n"
}

/// The decision's opening block for the HTML report: the same lines as [`text`], and the apply
/// script in a box (collapsed) to review, or why zmem refuses to write one.
pub fn html(r: &LabReport) -> String {
    let esc = crate::script::html_text;
    let t = text(r);
    let mut lines = t.lines().filter(|l| !l.trim().is_empty());
    let Some(head) = lines.next() else { return String::new() };
    let mut s = format!("<div class=\"rec\"><h2>{}</h2>", esc(head));
    for l in lines {
        s += &format!("<p>{}</p>", esc(l.trim()));
    }
    if matches!(r.decision.kind, Kind::Zram | Kind::Zswap) {
        s += &match apply_script(r) {
            Ok(script) => format!(
                "<details><summary>apply.sh (zmem lab --apply-script apply.sh)</summary><pre>{}</pre></details>",
                esc(&script)
            ),
            Err(e) => format!("<p>zmem writes no apply script for it: {}</p>", esc(&e.to_string())),
        };
    }
    s + "</div>"
}

/// Why, in words.
pub fn reason_words(d: &Decision) -> String {
    match &d.reason {
        Reason::SavesMost => "it saves the most memory within the budgets".into(),
        Reason::Tie { by } => format!(
            "equal to the runner-up within the uncertainty; the tie rule picks it by {}",
            match by {
                TieBreak::LessCpu => "clearly less CPU",
                TieBreak::Simpler => "the simpler setup",
                TieBreak::RunsNow => "running now",
                TieBreak::KernelOrder => {
                    "a fixed order (zram first, the kernel's order of compressors, the lab's list)"
                }
            }
        ),
        Reason::NothingFits => "no configuration fits the budgets: what runs now is kept".into(),
        Reason::TooFewPages { measured_pages, min_pages } => format!(
            "the input is too small to advise on ({measured_pages} pages measured, fewer than \
             the {min_pages} the lab needs)"
        ),
        Reason::NothingRuns => "this kernel runs none of the candidates (no zram, no zswap)".into(),
    }
}

/// The zswap parameters the decision chose, if it chose zswap.
fn chosen_zswap<'a>(r: &'a LabReport, d: &Decision) -> Option<&'a ZswapParams> {
    match &d.chosen(&r.candidates)?.config {
        Config::Zswap { params, .. } => Some(params),
        _ => None,
    }
}

/// The zram policy the decision chose, if it did, and its dictionary.
fn chosen_zram<'a>(r: &'a LabReport, d: &Decision) -> Option<(&'a Policy, Option<&'a [u8]>)> {
    let Config::Zram { policy } = &d.chosen(&r.candidates)?.config else { return None };
    let row = r.policies.iter().find(|row| row.policy == *policy)?;
    Some((&row.policy, row.dict.as_deref()))
}

/// The templates: fixed text that reads the assignment block above it (`templates/`).
const HEAD: &str = include_str!("../templates/apply-head.sh");
const ZRAM: &str = include_str!("../templates/apply-zram.sh");
const ZSWAP: &str = include_str!("../templates/apply-zswap.sh");
const UNDO: &str = include_str!("../templates/undo.sh");
const KEEP: &str = include_str!("../templates/keep.sh");
const REFUSE: &str = include_str!("../templates/refuse.sh");
const TAIL: &str = include_str!("../templates/apply-tail.sh");

/// The apply script for the report's decision, or the value that cannot go into one (a
/// device, algorithm or path from the page set's metadata or the machine that breaks its
/// grammar), named by its field.
pub fn apply_script(r: &LabReport) -> Result<String, ScriptError> {
    let d = &r.decision;
    match d.kind {
        Kind::None => Ok(refuse(&reason_words(d))),
        Kind::Keep => Ok(keep(d)),
        Kind::Zram => match chosen_zram(r, d) {
            Some((p, dict)) => zram_apply_script(
                d,
                p,
                r.now.as_ref(),
                r.budgets.recompress_period_secs,
                dict,
                &warnings(r),
            ),
            None => Ok(refuse("the decision names no zram configuration")),
        },
        Kind::Zswap => match chosen_zswap(r, d) {
            Some(c) => zswap_apply_script(d, c),
            None => Ok(refuse("the decision names no zswap configuration")),
        },
    }
}

/// The dictionary the decision's apply script needs beside it ([`apply::DICT_FILE`]), if it
/// needs one.
pub fn dictionary(r: &LabReport) -> Option<&[u8]> {
    match chosen_zram(r, &r.decision)? {
        (p, dict) if p.dict => dict,
        _ => None,
    }
}

/// The files the apply script needs beside it, by name (the JSON's `decision.files_needed`).
pub fn files_needed(r: &LabReport) -> Vec<&'static str> {
    // Without the dictionary (a decision from evidence), the script trains one: none needed.
    if dictionary(r).is_some() { vec![apply::DICT_FILE] } else { Vec::new() }
}

/// A script that only says why nothing is applied.
fn refuse(why: &str) -> String {
    let vars = Assignments::default().text("ZMEM_WHY", why);
    format!(
        "#!/bin/sh\n{}{}{REFUSE}",
        script::comment(&format!("zmem lab: nothing to apply: {why}.")),
        vars.block()
    )
}

/// The script of a decision to keep what runs.
fn keep(d: &Decision) -> String {
    let vars = Assignments::default().text("ZMEM_CONFIG", &d.config);
    format!(
        "#!/bin/sh\n{}{}{KEEP}",
        script::comment(&format!(
            "zmem lab decision: keep {} ({}). Nothing to change.",
            d.config,
            reason_words(d)
        )),
        vars.block()
    )
}

/// What the reader must know before acting on the decision, one sentence each: it was made
/// from generated pages; the kernel cannot run it.
pub fn warnings(r: &LabReport) -> Vec<String> {
    let mut w = Vec::new();
    if r.source.kind == "builtin" {
        w.push(format!(
            "made from zmem's built-in generated pages, not this machine's memory ({})",
            r.source.fallback_reason.as_deref().unwrap_or("the built-in set was asked for")
        ));
    }
    if r.rates.source == "replay" && r.trace.kind == "generated" {
        w.push(
            "its CPU cost is priced at the swap rates of zmem's generated access trace, not this \
             machine's: nothing swapped to observe and no cold curve was read (--trace FILE \
             prices it on an access trace of yours)"
                .into(),
        );
    }
    if let Some(c) = r.decision.chosen(&r.candidates).filter(|c| !c.available) {
        w.push(format!(
            "this kernel cannot run it: {}",
            c.unavailable_reason.as_deref().unwrap_or("unknown reason")
        ));
    }
    w
}

/// The script's opening comment: warnings, the decision, usage, what it changes and writes.
/// Every line sanitized ([`script::comment`]): free text cannot end the comment.
fn header(d: &Decision, changes: &[String], persist: &[String], warnings: &[String]) -> String {
    let mut s = String::new();
    for w in warnings {
        s += &script::comment(&format!("WARNING: {w}."));
    }
    let kind = if matches!(d.kind, Kind::Zram | Kind::Zswap) { "run" } else { "" };
    s += &script::comment(&format!("zmem lab decision: {kind} {}.", d.config));
    s += &script::comment(&format!(
        "Saves {} [{} .. {}, 95 %] against now ({}) {}; {}.",
        human_bytes(d.memory_saved_bytes as f64),
        human_bytes(d.memory_saved_ci[0] as f64),
        human_bytes(d.memory_saved_ci[1] as f64),
        d.basis.now_config,
        crate::operating::named_words(d),
        reason_words(d),
    ));
    s += &format!(
        "#\n\
         # Written by zmem {} for you to review; zmem ran none of it. Run it as root:\n\
         #   sh THIS-FILE                 changes the machine now and at every boot\n\
         #   sh THIS-FILE --no-persist    changes it now only\n\
         # It changes, in this order:\n",
        env!("CARGO_PKG_VERSION")
    );
    for c in changes {
        s += &script::comment(&format!("  - {c}"));
    }
    s += "# and, unless --no-persist, writes (for what was decided only):\n";
    for p in persist {
        s += &script::comment(&format!("  - {p}"));
    }
    s
}

/// The apply script of a zram decision for policy `p` (`now`: the live device the pages came
/// from, if any; `period_secs`: the recompression timer's; `dict`: the trained dictionary,
/// which only its SHA-256 enters: the file goes beside the script).
pub fn zram_apply_script(
    d: &Decision,
    p: &Policy,
    now: Option<&zmem_lab::Now>,
    period_secs: f64,
    dict: Option<&[u8]>,
    warnings: &[String],
) -> Result<String, ScriptError> {
    let vars = zram_vars(d, p, now, period_secs, dict)?.and(crate::proactive::vars(d)?);
    let a = &apply::forms(p, now, d.sizing.as_ref());
    let mut changes = vec![
        "zswap off where it is on (it would cache in front of the zram device)".to_string(),
        format!(
            "{}: reconfigured to {} (swapped off first, so its pages move back into RAM), or \
             created where it does not exist",
            a.device, d.config
        ),
    ];
    changes.extend(crate::proactive::change(d));
    let mut persist = vec![
        "$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf (zram-generator: the device at \
         every boot)"
            .to_string(),
        "$ROOT/etc/tmpfiles.d/zmem-zswap.conf (zswap off at every boot), where zswap was on".into(),
    ];
    persist.extend(crate::proactive::persist(d));
    if a.timer {
        persist.push(format!(
            "$ROOT/etc/systemd/system/{u}.service and .timer (the periodic recompression)",
            u = apply::UNIT
        ));
    }
    let mut s = header(d, &changes, &persist, warnings);
    match (p.dict, dict) {
        (true, Some(_)) => {
            s += &script::comment(&format!(
                "It needs {} beside it (the dictionary, 0600; its SHA-256 below), which it \
                 installs 0600 at $ROOT{} before anything else.",
                apply::DICT_FILE,
                apply::DICT_PATH
            ))
        }
        (true, None) => {
            s += &script::comment(&format!(
                "The decision came without its dictionary (made from evidence, or a report \
                 read back): before anything else it trains one on this machine's memory \
                 (zmem dict train --live, nothing written but the dictionary) and installs it \
                 0600 at $ROOT{}.",
                apply::DICT_PATH
            ))
        }
        _ => {}
    }
    s += &script::comment(&format!("Device: {}.", a.device_note));
    s += &script::comment(&format!("Size: {}.", a.size_rule));
    s += &script::comment(&format!("mem_limit: {}.", a.mem_limit_rule));
    s += "# zram-generator versions:\n";
    for v in &a.generator_versions {
        s += &script::comment(&format!("  {v}"));
    }
    Ok(format!("#!/bin/sh\n{s}{}{HEAD}{ZRAM}{TAIL}", vars.block()))
}

/// The zram script's values, each checked against its grammar.
fn zram_vars(
    d: &Decision,
    p: &Policy,
    now: Option<&zmem_lab::Now>,
    period_secs: f64,
    dict: Option<&[u8]>,
) -> Result<Assignments, ScriptError> {
    let dev = match now {
        Some(n) => script::zram_device("now.config.device", &n.config.device)?,
        None => "zram0".to_string(),
    };
    let algo = script::algorithm("policy.algo", &p.algo)?;
    let mut recomp = Vec::new();
    for (i, a) in p.recomp.iter().enumerate() {
        recomp.push(script::algorithm(&format!("policy.recomp[{i}]"), a)?);
    }
    let recompress = match &p.recompress {
        Some(r) => script::recompress_args("policy.recompress", r)?,
        None => String::new(),
    };
    let period = script::period_secs("budgets.recompress_period_secs", period_secs)?;
    let prio = now.and_then(|n| n.config.swap_priority).unwrap_or(100);
    let prio = script::swap_priority("now.config.swap_priority", prio)?;
    let live = now.map_or(0, |n| n.config.disksize_bytes);
    let (size_mib, _) = apply::size(live, d.sizing.as_ref());
    let limit_mib = d.sizing.map_or(0, |s| s.mem_limit_bytes.div_ceil(1 << 20));
    // Decided from evidence (or a report read back from JSON), the decision comes without its
    // dictionary: the script trains one on this host's memory.
    let (sha, train) = match (p.dict, dict) {
        (false, _) => (String::new(), false),
        (true, Some(bytes)) => (script::sha256_hex(bytes), false),
        (true, None) => (String::new(), true),
    };
    let bin = crate::proactive::zmem_bin();
    let bin = if bin == "zmem" { bin } else { script::path("zmem binary", &bin)? };
    Ok(Assignments::default()
        .text("ZMEM_DEVICE", &dev)
        .text("ZMEM_CONFIG", &d.config)
        .text("ZMEM_ALGO", &algo)
        .text("ZMEM_RECOMP", &recomp.join(" "))
        .text("ZMEM_RECOMPRESS", &recompress)
        .flag("ZMEM_MARK_IDLE", p.mark_idle)
        .int("ZMEM_PERIOD", i64::try_from(period).unwrap_or(i64::MAX))
        .int("ZMEM_SIZE_MIB", i64::try_from(size_mib).unwrap_or(i64::MAX))
        .int("ZMEM_MEM_LIMIT_MIB", i64::try_from(limit_mib).unwrap_or(i64::MAX))
        .int("ZMEM_PRIORITY", prio)
        .flag("ZMEM_DICT", p.dict)
        .flag("ZMEM_DICT_TRAIN", train)
        .text("ZMEM_DICT_BIN", &bin)
        .text("ZMEM_DICT_FILE", apply::DICT_FILE)
        .text("ZMEM_DICT_SHA256", &sha))
}

/// The swap behind zswap the decision names (a new swap file at the default path if none).
fn swap_behind(d: &Decision) -> zmem_lab::decision::SwapBehind {
    d.swap_behind.clone().unwrap_or(zmem_lab::decision::SwapBehind {
        existing: None,
        size_bytes: 0,
        new_file: Some(zmem_lab::decision::SWAP_FILE.into()),
    })
}

/// The apply script of a zswap decision for candidate `c`.
pub fn zswap_apply_script(d: &Decision, c: &ZswapParams) -> Result<String, ScriptError> {
    let vars = zswap_vars(c, d.sizing.and_then(|s| s.max_pool_percent), &swap_behind(d))?
        .and(crate::proactive::vars(d)?);
    let b = swap_behind(d);
    let mib = b.size_bytes.max(zmem_lab::decision::MIN_SWAP_FILE_BYTES).div_ceil(1 << 20);
    let behind = match &b.existing {
        Some(e) => format!("the disk swap {e} (kept as it is)"),
        None => format!(
            "a {mib} MiB swap file ($ZMEM_SWAPFILE, default {})",
            b.new_file.as_deref().unwrap_or(zmem_lab::decision::SWAP_FILE)
        ),
    };
    let mut changes = vec![
        format!("zswap in front of {behind}"),
        "every zram swap device swapped off (its pages move back into RAM or to the disk swap): \
         no zswap stacked on zram"
            .into(),
        format!(
            "zswap's parameters: compressor={} max_pool_percent={} accept_threshold_percent={} \
             shrinker_enabled={}, then enabled=Y",
            c.compressor,
            c.max_pool_percent,
            c.accept_threshold_percent,
            if c.shrinker_enabled { "Y" } else { "N" }
        ),
    ];
    let mut persist = vec![
        "$ROOT/etc/tmpfiles.d/zmem-zswap.conf (zswap's parameters at every boot)".to_string(),
        "$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf with zram-size = 0 for each zram \
         swap device swapped off (zram-generator makes none at boot)"
            .into(),
    ];
    changes.extend(crate::proactive::change(d));
    persist.extend(crate::proactive::persist(d));
    if b.existing.is_none() {
        persist
            .push("$ROOT/etc/systemd/system/<swap file>.swap (the swap file at every boot)".into());
    }
    let s = header(d, &changes, &persist, &[]);
    Ok(format!("#!/bin/sh\n{s}{}{HEAD}{ZSWAP}{TAIL}", vars.block()))
}

/// The zswap script's values, each checked against its grammar.
fn zswap_vars(
    c: &ZswapParams,
    sized_pool: Option<u32>,
    b: &zmem_lab::decision::SwapBehind,
) -> Result<Assignments, ScriptError> {
    let compressor = script::algorithm("zswap.candidate.compressor", &c.compressor)?;
    // The size the operating point asks for, where it raised the judged candidate's.
    let pool = match sized_pool {
        Some(p) => script::percent("decision.sizing.max_pool_percent", p)?,
        None => script::percent("zswap.candidate.max_pool_percent", c.max_pool_percent)?,
    };
    let accept =
        script::percent("zswap.candidate.accept_threshold_percent", c.accept_threshold_percent)?;
    let existing = match &b.existing {
        Some(e) => script::path("decision.swap_behind.existing", e)?,
        None => String::new(),
    };
    let new_file = b.new_file.as_deref().unwrap_or(zmem_lab::decision::SWAP_FILE);
    let new_file = script::path("decision.swap_behind.new_file", new_file)?;
    let mib = b.size_bytes.max(zmem_lab::decision::MIN_SWAP_FILE_BYTES).div_ceil(1 << 20);
    Ok(Assignments::default()
        .text("ZMEM_COMPRESSOR", &compressor)
        .int("ZMEM_MAX_POOL_PERCENT", pool)
        .int("ZMEM_ACCEPT_THRESHOLD_PERCENT", accept)
        .text("ZMEM_SHRINKER_ENABLED", if c.shrinker_enabled { "Y" } else { "N" })
        .flag("ZMEM_NEW_SWAPFILE", b.existing.is_none())
        .text("ZMEM_SWAPFILE_DEFAULT", &new_file)
        .int("ZMEM_SWAPFILE_MIB", i64::try_from(mib).unwrap_or(i64::MAX))
        .text("ZMEM_SWAP_BEHIND", &existing))
}

/// The undo script: puts back, from `$ZMEM_STATE`, what the apply script changed, last change
/// first. The same for every decision (it reads what the apply did): fixed text.
pub fn undo_script() -> String {
    format!("#!/bin/sh\n# Written by zmem {}.\n{UNDO}", env!("CARGO_PKG_VERSION"))
}
