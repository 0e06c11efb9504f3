//! Step 1 of the lab: where the evidence comes from.
//!
//! Takes what the user asked for ([`Input`]) and gives the pages the lab measures, with a
//! [`Source`] that says what they are and why they were chosen, the live device's "Now" when
//! the pages are a zram swap device's, and the zram devices whose traffic is worth watching;
//! and the access trace the replay runs ([`trace_for`]).
//!
//! The order, when nothing is named ([`Input::Auto`]): every active zram swap device (from
//! /proc/swaps; what the kernel compresses right now), else this machine's processes (their
//! resident anonymous pages, where zmem may read them), else the built-in generated set, saying
//! at each step why the one before was not used (no zram swap, not root, device unreadable,
//! capture too small). A page set captured from a zram device (`zmem capture --zram`) carries
//! the device's configuration and mm_stat, so it gets its "Now" too. How many pages are measured
//! is the [`Coverage`]: every page, at most `max` sampled evenly (every `len / max`-th page, so
//! the sample spans every process of a capture), or a stratified random sample whose estimates
//! for the whole input carry confidence intervals ([`super::sample`]); the "Now" prediction uses
//! every page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zmem_kernel::caps::KernelCaps;
use zmem_kernel::{capture, stat as live};
use zmem_pages::{PageSet, SetMeta, builtin};

use crate::now::{self, LiveConfig, Now};
use crate::sample::{self, Design};
use crate::{LabError, Progress};
use zmem_sim::replay::{self, Access};

/// Where the pages came from, for the report's first line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Source {
    /// `zram`, `captured`, `file` or `builtin`.
    pub kind: String,
    /// Human description: which device or file, what was captured, or why the built-in set was
    /// used.
    pub detail: String,
    pub pages: u64,
    pub page_size: usize,
    /// Why the default order fell back from what it tried first (no zram swap, capture refused
    /// or too small, ...) to these pages; absent when the first choice was used or the user
    /// named the source. An explicit source never falls back: it is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// What the user asked the lab to run on.
#[derive(Debug)]
pub enum Input {
    /// A page set they named (already opened; `label` names it, usually the path).
    Pages { set: PageSet, label: String },
    /// The live zram swap devices, else the processes, else the built-in set.
    Auto,
    /// The live zram swap devices only (`--source zram`): none is an error.
    Zram,
    /// This machine's processes only (`--source processes`): a capture that fails or gives too
    /// few pages is an error, never a silent fall back to generated pages.
    Processes,
    /// The built-in generated set.
    Builtin,
    /// Findings read from an evidence file (`zmem evidence`): judged as they are, nothing
    /// gathered or measured ([`crate::findings`]).
    Findings(Box<crate::Findings>),
}

/// Fewer captured pages than this say little about a machine: use the built-in set instead.
pub const MIN_CAPTURE_PAGES: usize = 1024;

/// The pages the lab measures, and where they came from.
#[derive(Debug)]
pub struct Evidence {
    /// Whole pages of `source.page_size`.
    pub pages: Vec<u8>,
    pub source: Source,
    /// The live zram device the pages are, or were captured from.
    pub now: Option<Now>,
    /// zram devices whose reads and writes give the swap rates (`/dev/zramN` numbers).
    pub zram_ids: Vec<u32>,
    /// How the pages were sampled at random from the input, when they were
    /// ([`Coverage::Sample`] of fewer pages than the input has).
    pub sample: Option<Design>,
    /// Pages in the set `pages` were sampled from (what a trace's page ids index).
    pub set_pages: u64,
    /// What the kernel the advice is for can run: this machine's (`zmem_kernel::caps::read`),
    /// or, for a page set whose metadata records its host's (`zmem capture`), that host's.
    pub kernel: KernelCaps,
    /// The process each of `pages` came from, where the input records it (a capture of
    /// processes; 0 for a zram slot): zswap's Now weighs each process by its swapped pages.
    pub pids: Option<Vec<u32>>,
    /// The host and labels a fleet groups by, from a page set's metadata ([`host_labels`]).
    pub host: BTreeMap<String, String>,
}

/// A page set's `host` (else `capture.host`) and `label.NAME` metadata: what a fleet groups
/// hosts by, carried into the findings.
pub fn host_labels(meta: Option<&SetMeta>) -> BTreeMap<String, String> {
    let Some(m) = meta else { return BTreeMap::new() };
    let mut out: BTreeMap<String, String> = m
        .iter()
        .filter(|(k, _)| k.starts_with("label."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(h) = m.get("host").or_else(|| m.get("capture.host")) {
        out.insert("host".into(), h.clone());
    }
    out
}

/// How many of the input's pages the lab measures, and how they are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every page (`--max-pages all`).
    All,
    /// At most this many, evenly spaced (`--max-pages N`).
    Even(usize),
    /// A stratified random sample of this many ([`sample::draw`]; `--sample N`), every page if
    /// the input has no more.
    Sample(usize),
}

impl From<usize> for Coverage {
    fn from(max: usize) -> Self {
        Self::Even(max)
    }
}

impl Coverage {
    /// Pages sampled at random when neither a number nor a sample size is given.
    pub const DEFAULT_SAMPLE: usize = 6144;

    /// `zmem lab`'s choice from `--max-pages` and `--sample` (they conflict): the one given,
    /// else a random sample of [`Self::DEFAULT_SAMPLE`].
    pub fn choose(max_pages: Option<Coverage>, sample: Option<usize>) -> Self {
        match (max_pages, sample) {
            (Some(c), _) => c,
            (None, Some(n)) => Self::Sample(n),
            (None, None) => Self::Sample(Self::DEFAULT_SAMPLE),
        }
    }

    /// Pages measured of an input of `total`.
    pub fn used(self, total: usize) -> usize {
        match self {
            Self::All => total,
            Self::Even(n) | Self::Sample(n) => total.min(n),
        }
    }
}

/// Every `len / max`-th page of `set`, at most `max` pages (all of them if it has no more).
pub fn sample(set: &PageSet, max: usize) -> Vec<u8> {
    even_indices(set.len(), max).flat_map(|i| set.page(i).iter().copied()).collect()
}

/// The indices [`sample`] takes: every page, or `max` evenly spaced.
fn even_indices(n: usize, max: usize) -> Box<dyn Iterator<Item = usize>> {
    if n <= max { Box::new(0..n) } else { Box::new((0..max).map(move |k| k * n / max)) }
}

fn evidence(kind: &str, detail: String, set: &PageSet, coverage: Coverage) -> Evidence {
    let (indices, design): (Vec<usize>, _) = match coverage {
        Coverage::All => ((0..set.len()).collect(), None),
        Coverage::Even(max) => (even_indices(set.len(), max).collect(), None),
        Coverage::Sample(n) if n < set.len() => {
            let (picked, design) = sample::draw_indices(set, n, sample::DEFAULT_SEED);
            (picked, Some(design))
        }
        Coverage::Sample(_) => ((0..set.len()).collect(), None),
    };
    let pages = if indices.len() == set.len() {
        set.bytes().to_vec()
    } else {
        indices.iter().flat_map(|&i| set.page(i).iter().copied()).collect()
    };
    // The process of each page, where the set records it (a capture of processes).
    let pids = set.metas().map(|m| indices.iter().map(|&i| m[i].pid).collect());
    let source = Source {
        kind: kind.into(),
        detail,
        pages: (pages.len() / set.page_size()) as u64,
        page_size: set.page_size(),
        fallback_reason: None,
    };
    Evidence {
        pages,
        source,
        now: None,
        zram_ids: Vec::new(),
        sample: design,
        set_pages: set.len() as u64,
        kernel: KernelCaps::default(),
        pids,
        host: host_labels(set.set_meta()),
    }
}

/// Gathers the pages for `input`, as many as `coverage` says (a number: at most that many,
/// evenly spaced), and what the kernel can run (read once, here).
pub fn gather(
    input: Input,
    coverage: impl Into<Coverage>,
    progress: &dyn Progress,
) -> Result<Evidence, LabError> {
    let mut e = gather_pages(input, coverage.into(), progress)?;
    if e.kernel == KernelCaps::default() {
        e.kernel = zmem_kernel::caps::read();
    }
    Ok(e)
}

fn gather_pages(
    input: Input,
    max_pages: Coverage,
    progress: &dyn Progress,
) -> Result<Evidence, LabError> {
    let mut why_not = Vec::new();
    let explicit = matches!(input, Input::Processes);
    match input {
        Input::Pages { set, label } => return from_file(set, &label, max_pages, progress),
        Input::Builtin => {
            let set = builtin::default_set_with(4096)?;
            let detail = "built-in generated set (asked for)".to_string();
            return Ok(evidence("builtin", detail, &set, max_pages));
        }
        Input::Zram => return from_zram(max_pages, progress)?.map_err(LabError::Setup),
        Input::Auto => match from_zram(max_pages, progress)? {
            Ok(e) => return Ok(e),
            Err(why) => why_not.push(why),
        },
        Input::Processes => {}
        Input::Findings(_) => {
            return Err(LabError::Setup("an evidence file holds findings, not pages".into()));
        }
    }
    let captured = match capture_processes(progress) {
        Ok((set, summary)) => Ok((set, summary.to_string())),
        Err(e) => Err(format!("capture failed: {e}")),
    };
    processes_or_builtin(captured, why_not, explicit, max_pages)
}

/// The evidence from a capture of this machine's processes (or why there is none), after
/// `why_not` said why the sources before it were not used. `explicit`: the user named
/// `processes`, so a failed or too small capture is an error; otherwise the built-in set is
/// used and `fallback_reason` says why.
fn processes_or_builtin(
    captured: Result<(PageSet, String), String>,
    mut why_not: Vec<String>,
    explicit: bool,
    max_pages: Coverage,
) -> Result<Evidence, LabError> {
    let captured = match captured {
        Ok((set, summary)) if set.len() >= MIN_CAPTURE_PAGES => Ok((set, summary)),
        Ok((set, summary)) => Err(format!(
            "capture gave only {} pages, fewer than {MIN_CAPTURE_PAGES} ({summary})",
            set.len()
        )),
        Err(e) => Err(e),
    };
    match captured {
        Ok((set, summary)) => {
            let used = max_pages.used(set.len());
            let mut detail = format!("this machine: {summary}; {used} pages sampled");
            if !why_not.is_empty() {
                detail += &format!(" ({})", why_not.join("; "));
            }
            let mut e = evidence("captured", detail, &set, max_pages);
            e.source.fallback_reason = (!why_not.is_empty()).then(|| why_not.join("; "));
            Ok(e)
        }
        Err(why) if explicit => Err(LabError::Setup(format!(
            "--source processes: {why}; nothing measured (no fall back to generated pages)"
        ))),
        Err(why) => {
            why_not.push(why);
            let set = builtin::default_set_with(4096)?;
            let reason = why_not.join("; ");
            let detail = format!("built-in generated set; {reason}");
            let mut e = evidence("builtin", detail, &set, max_pages);
            e.source.fallback_reason = Some(reason);
            Ok(e)
        }
    }
}

/// A page set the user named; one captured from a zram device also gives its "Now".
fn from_file(
    set: PageSet,
    label: &str,
    max_pages: Coverage,
    progress: &dyn Progress,
) -> Result<Evidence, LabError> {
    let used = max_pages.used(set.len());
    let detail = format!("{label} ({} pages, {used} used)", set.len());
    let mut e = evidence("file", detail, &set, max_pages);
    // Its processes were another time's, or another host's: their ids mean nothing here.
    e.pids = None;
    // A capture records what its host's kernel offers: the advice is for that kernel.
    if let Some((mut k, host)) = set.set_meta().and_then(zmem_kernel::caps::from_set_meta) {
        let host = if host.is_empty() { "an unnamed host".to_string() } else { host };
        k.source = format!("recorded by the capture on {host}: {}", k.source);
        e.kernel = k;
    }
    if let Some(meta) = set.set_meta().filter(|m| m.get("source").is_some_and(|s| s == "zram")) {
        let mut config = live_config(meta, None)?;
        // A `dict=` path names a file on the host that made the capture, and the set's metadata
        // is the file's word: never read a path it names here (root would read any file).
        if let Some(params) = config.algorithm_params.take() {
            let (kept, dropped) = without_dict(&params);
            config.algorithm_params = (!kept.is_empty()).then_some(kept);
            if dropped {
                e.source.detail += " (its recorded dictionary is not in the capture and was \
                                     not read: Now is predicted without it)";
            }
        }
        let mm_stat = meta_get(meta, "zram.mm_stat")?;
        e.now = Some(now::assess(set.bytes(), set.page_size(), config, mm_stat, progress)?);
        e.source.detail += " (a capture of a zram device: its mm_stat is compared below)";
    }
    Ok(e)
}

/// Every active zram swap device, read once each in bounded memory: the pages sampled as they
/// are read ([`sample::StreamDraw`]; `max_pages` pages whatever the devices' size, unless every
/// page is asked for) and "Now" predicted page by page ([`now::Predictor`]), so nothing holds a
/// whole device. A device that cannot be read (removed meanwhile, reset) is skipped with a
/// note; `Ok(Err(why))` when none is left to use.
fn from_zram(
    max_pages: Coverage,
    progress: &dyn Progress,
) -> Result<Result<Evidence, String>, LabError> {
    let mut devices = match live::active_zram_swaps() {
        Ok(d) if d.is_empty() => return Ok(Err("no active zram swap (/proc/swaps)".into())),
        Ok(d) => d,
        Err(e) => return Ok(Err(format!("cannot read the active swaps: {e}"))),
    };
    // The one the kernel fills first is the one "Now" describes.
    devices.sort_by_key(|d| std::cmp::Reverse(d.priority));
    let ps = capture::system_page_size();
    let n = match max_pages {
        Coverage::All => usize::MAX,
        Coverage::Even(n) | Coverage::Sample(n) => n,
    };
    let mut draw = Draw::new(n, ps);
    let mut now = None;
    let mut read = Vec::new();
    let mut notes = Vec::new();
    let mut changed = false;
    for d in &devices {
        // Each device is read once: a device that changed while it was read (mm_stat or its
        // write counters moved) is said to have changed, not read again, so a run costs one
        // pass over each device however busy it is.
        let first = now.is_none();
        let before = draw.clone();
        let mut predictor = if first { Some(predictor_for(d.id, ps)) } else { None };
        let got = match predictor.take().transpose() {
            Err(e) => Err(e.to_string()),
            Ok(mut predictor) => {
                let mut done_bytes = 0;
                let got = capture::zram::capture_device_with(
                    &d.path,
                    &mut |_, _, page| {
                        if let Some(p) = predictor.as_mut() {
                            p.push(page)
                                .map_err(|e| zmem_pages::PagesError::Invalid(e.to_string()))?;
                        }
                        draw.offer(page);
                        Ok(())
                    },
                    &mut |done, total| {
                        if done_bytes == 0 {
                            progress.start(&format!("read {}", d.path.display()), total / 4096);
                        }
                        progress.advance((done - done_bytes) / 4096);
                        done_bytes = done;
                    },
                );
                progress.finish();
                got.map(|(meta, summary)| (meta, summary, predictor)).map_err(|e| e.to_string())
            }
        };
        match got {
            Err(why) => {
                // Whatever it offered before it failed is dropped with it.
                draw = before;
                notes.push(format!("{} skipped: {why}", d.path.display()));
            }
            Ok((meta, summary, predictor)) => {
                if let Some(p) = predictor {
                    changed = !summary.stable();
                    let config = live_config(&meta, Some(d.priority))?;
                    now = Some(p.finish(config, &summary.mm_stat_after)?);
                }
                read.push((d, summary.pages));
            }
        }
    }
    if read.is_empty() {
        return Ok(Err(notes.join("; ")));
    }
    let names: Vec<String> = read
        .iter()
        .map(|(d, pages)| format!("{} ({pages} pages, priority {})", d.path.display(), d.priority))
        .collect();
    let set_pages = draw.seen();
    let (pages, design) = draw.finish(max_pages);
    let used = pages.len() / ps;
    let mut detail = format!("live zram swap: {}; {used} pages sampled", names.join(", "));
    if changed {
        detail += "; the device changed while it was read";
    }
    for note in &notes {
        detail += &format!("; {note}");
    }
    let source = Source {
        kind: "zram".into(),
        detail,
        pages: used as u64,
        page_size: ps,
        fallback_reason: None,
    };
    Ok(Ok(Evidence {
        pages,
        source,
        now,
        zram_ids: read.iter().map(|(d, _)| d.id).collect(),
        sample: design,
        set_pages,
        kernel: KernelCaps::default(),
        pids: None,
        host: BTreeMap::new(),
    }))
}

/// The pages of a device kept as it is read: every one ([`Coverage::All`]), or a stratified
/// random sample of at most `n` ([`sample::StreamDraw`]).
#[derive(Clone)]
enum Draw {
    All { pages: Vec<u8>, page_size: usize },
    Sample(sample::StreamDraw),
}

impl Draw {
    fn new(n: usize, page_size: usize) -> Self {
        if n == usize::MAX {
            Self::All { pages: Vec::new(), page_size }
        } else {
            Self::Sample(sample::StreamDraw::new(n, page_size, sample::DEFAULT_SEED))
        }
    }

    fn offer(&mut self, page: &[u8]) {
        match self {
            Self::All { pages, .. } => pages.extend_from_slice(page),
            Self::Sample(d) => d.offer(page),
        }
    }

    fn seen(&self) -> u64 {
        match self {
            Self::All { pages, page_size } => (pages.len() / *page_size) as u64,
            Self::Sample(d) => d.seen(),
        }
    }

    /// The pages and, for a random sample ([`Coverage::Sample`]) of part of the input, its
    /// design. `--max-pages N` on a live device is a random sample too (a device is read once,
    /// so "evenly spaced" cannot be known in advance), without estimates.
    fn finish(self, coverage: Coverage) -> (Vec<u8>, Option<Design>) {
        match self {
            Self::All { pages, .. } => (pages, None),
            Self::Sample(d) => {
                let (pages, design) = d.finish(sample::DEFAULT_SEED);
                (pages, design.filter(|_| matches!(coverage, Coverage::Sample(_))))
            }
        }
    }
}

/// The streamed "Now" predictor for zram device `id`, configured as it is now.
fn predictor_for(id: u32, ps: usize) -> Result<now::Predictor, LabError> {
    let attr = |name: &str| live::read_zram_attr(id, name);
    let line = attr("comp_algorithm")?;
    let algo = live::selected_algorithm(&line)
        .ok_or_else(|| LabError::Setup(format!("zram{id}: no algorithm selected in {line:?}")))?;
    let config = LiveConfig {
        device: format!("/dev/zram{id}"),
        comp_algorithm: algo.to_string(),
        recomp_algorithm: None,
        algorithm_params: attr("algorithm_params").ok().filter(|p| !p.trim().is_empty()),
        disksize_bytes: 0,
        mem_limit_bytes: 0,
        swap_priority: None,
        offered: Vec::new(),
        recompress: false,
    };
    now::Predictor::new(&config, ps)
}

fn meta_get<'m>(meta: &'m SetMeta, key: &str) -> Result<&'m str, LabError> {
    meta.get(key)
        .map(String::as_str)
        .ok_or_else(|| LabError::Setup(format!("zram capture without {key} in its metadata")))
}

/// `zram.device` and `zram.algorithm` from a page set's metadata, checked: a file anyone can
/// hand over names them, and they end up in the lab's words and apply script (which checks
/// them again). A device is `zram[0-9]+`; an algorithm a kernel name (`[a-z0-9-]+`).
fn device_and_algorithm(meta: &SetMeta) -> Result<(String, String), LabError> {
    let dev = meta_get(meta, "zram.device")?;
    let digits = dev.strip_prefix("zram").unwrap_or("");
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LabError::Setup(format!(
            "set metadata zram.device: {dev:?}: not a zram device name (zram[0-9]+)"
        )));
    }
    let algo = meta_get(meta, "zram.algorithm")?;
    let name = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if algo.is_empty() || algo.len() > 64 || !algo.bytes().all(name) {
        return Err(LabError::Setup(format!(
            "set metadata zram.algorithm: {algo:?}: not a compressor name ([a-z0-9-]+)"
        )));
    }
    Ok((dev.to_string(), algo.to_string()))
}

/// `algorithm_params` without its `dict=` arguments (zram's own argument splitter), and
/// whether one was dropped.
fn without_dict(params: &str) -> (String, bool) {
    let args = zmem_zram::parse::args(params);
    let kept: Vec<String> = args
        .iter()
        .filter(|a| a.param != "dict")
        .map(|a| match a.val {
            Some(v) => format!("{}={v}", a.param),
            None => a.param.to_string(),
        })
        .collect();
    (kept.join(" "), kept.len() < args.len())
}

/// The live configuration recorded in a zram capture's metadata.
pub fn live_config(meta: &SetMeta, priority: Option<i32>) -> Result<LiveConfig, LabError> {
    let num = |key: &str| meta.get(key).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
    let text = |key: &str| {
        meta.get(key).map(|v| zmem_kernel::parse::one_line(v)).filter(|v| !v.is_empty())
    };
    let (device, comp_algorithm) = device_and_algorithm(meta)?;
    Ok(LiveConfig {
        device: format!("/dev/{device}"),
        comp_algorithm,
        recomp_algorithm: text("zram.recomp_algorithm"),
        algorithm_params: text("zram.algorithm_params"),
        disksize_bytes: num("zram.disksize"),
        mem_limit_bytes: num("zram.mem_limit"),
        swap_priority: priority.or_else(|| meta.get("swap.priority")?.parse().ok()),
        offered: meta
            .get("zram.comp_algorithm")
            .map(|line| {
                line.split_whitespace().map(|a| a.trim_matches(['[', ']']).to_string()).collect()
            })
            .unwrap_or_default(),
        // The capture records recomp_algorithm only where the attribute exists.
        recompress: meta.contains_key("zram.recomp_algorithm"),
    })
}

/// The resident anonymous pages of every process but zmem itself.
fn capture_processes(progress: &dyn Progress) -> Result<(PageSet, capture::Summary), LabError> {
    let pids = capture::all_pids()?;
    progress.start("capture", pids.len() as u64);
    let result = capture::capture(&pids, &mut |event| {
        if !matches!(event, capture::Event::Start { .. }) {
            progress.advance(1);
        }
    });
    progress.finish();
    Ok(result?)
}

/// The access trace the replay ran, for the report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TraceSource {
    /// `generated` ([`trace_for`]) or `file` (`zmem lab --trace`).
    pub kind: String,
    /// Human description: the generator's settings, or the file, how it was made (its header's
    /// origin: generated, damon, soft-dirty) and how its pages were fitted to the sample.
    pub detail: String,
    pub accesses: u64,
}

impl Default for TraceSource {
    /// What [`trace_for`] gives (and what reports from before `--trace` replayed).
    fn default() -> Self {
        Self {
            kind: "generated".into(),
            detail: "Zipf over half the pages, 3 phases, seed 1, 8 accesses per page up to \
                     100,000"
                .into(),
            accesses: 0,
        }
    }
}

/// A trace the user named, with its page ids over `set_pages` pages (the page set the lab's
/// pages were sampled from), fitted to the `sample_pages` the lab runs on: page `p` becomes the
/// sampled page at or before it (the last `k` with `k * set / sample <= p`, as [`sample`]
/// picks; for a random sample ([`Coverage::Sample`]) the `k`-th sampled page in the input's
/// order, which lies near `p` but not exactly at or before it), so a sampled set replays its
/// neighbours' accesses too. A page id not below
/// `set_pages` is an error. A file read's id is the file's own (any value the trace allows), and
/// is folded by the same ratio: the page cache shrinks with the sample, as the RAM budget does.
pub fn fit_trace(
    trace: &zmem_pages::trace::Trace,
    set_pages: u64,
    sample_pages: u64,
) -> Result<Vec<Access>, LabError> {
    let anon = trace.accesses.iter().filter(|a| a.op != zmem_pages::trace::Op::FileRead);
    if let Some(bad) = anon.map(|a| u64::from(a.page)).find(|&p| p >= set_pages) {
        return Err(LabError::Setup(format!(
            "the trace names page {bad} but the page set has {set_pages} pages (ids 0 to {}): \
             it was recorded for another page set",
            set_pages.saturating_sub(1)
        )));
    }
    let (n, m) = (u128::from(set_pages), u128::from(sample_pages.min(set_pages)));
    Ok(trace
        .accesses
        .iter()
        .map(|a| {
            let mut x = Access::from(a);
            if m < n {
                // The largest k with k * n / m <= p, i.e. k * n < (p + 1) * m.
                x.page = (((u128::from(x.page) + 1) * m).div_ceil(n) - 1) as u64;
            }
            x
        })
        .collect())
}

/// The access trace the lab replays over `pages` pages: generated (Zipf over a working set of
/// half the pages, three phases, a fixed seed), eight accesses per page up to 100,000.
pub fn trace_for(pages: u64) -> Result<Vec<Access>, LabError> {
    let opts = zmem_pages::trace::generate::Options {
        pages,
        accesses: (8 * pages).clamp(1, 100_000),
        working_set: (pages / 2).max(1),
        phases: 3,
        seed: 1,
        ..Default::default()
    };
    Ok(replay::accesses(&zmem_pages::trace::generate::generate(&opts)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    fn numbered(n: usize) -> PageSet {
        let bytes: Vec<u8> = (0..n).flat_map(|i| [i as u8; 4096]).collect();
        PageSet::from_raw(bytes, 4096).unwrap()
    }

    #[test]
    fn a_sample_takes_every_kth_page_and_a_small_set_whole() {
        let set = numbered(10);
        let s = sample(&set, 4);
        let firsts: Vec<u8> = s.chunks(4096).map(|p| p[0]).collect();
        assert_eq!(firsts, [0, 2, 5, 7]);
        assert_eq!(sample(&set, 10).len(), 10 * 4096);
        assert_eq!(sample(&set, 99).len(), 10 * 4096);
    }

    #[test]
    fn a_named_page_set_is_used_and_described() {
        let input = Input::Pages { set: numbered(10), label: "x.pages".into() };
        let e = gather(input, 4, &NoProgress).unwrap();
        assert_eq!(e.source.kind, "file");
        assert_eq!(e.source.pages, 4);
        assert_eq!(e.pages.len(), 4 * 4096);
        assert!(e.source.detail.contains("x.pages (10 pages, 4 used)"), "{}", e.source.detail);
    }

    #[test]
    fn every_page_or_a_random_sample_with_its_design() {
        let file = || Input::Pages { set: numbered(10), label: "x.pages".into() };
        let e = gather(file(), Coverage::All, &NoProgress).unwrap();
        assert_eq!((e.source.pages, e.pages.len()), (10, 10 * 4096));
        assert!(e.sample.is_none());
        let e = gather(file(), Coverage::Sample(4), &NoProgress).unwrap();
        assert_eq!((e.source.pages, e.pages.len()), (4, 4 * 4096));
        let d = e.sample.expect("a random sample has a design");
        assert_eq!((d.population_pages, d.population_same_filled, d.sample_pages), (10, 10, 4));
        // A sample as large as the input is the input, with nothing to estimate.
        let e = gather(file(), Coverage::Sample(10), &NoProgress).unwrap();
        assert_eq!((e.pages.as_slice(), e.sample), (numbered(10).bytes(), None));
    }

    #[test]
    fn builtin_says_why() {
        let e = gather(Input::Builtin, 64, &NoProgress).unwrap();
        assert_eq!(e.source.kind, "builtin");
        assert_eq!(e.source.pages, 64);
        assert!(e.source.detail.contains("asked for"), "{}", e.source.detail);
        assert!(e.now.is_none() && e.zram_ids.is_empty());
    }

    /// Hostile device and algorithm names in a page set's metadata are refused at the source,
    /// one line naming the key.
    #[test]
    fn hostile_zram_metadata_is_refused() {
        let meta = |dev: &str, algo: &str| -> SetMeta {
            [("zram.device", dev), ("zram.algorithm", algo)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(live_config(&meta("zram3", "lzo-rle"), None).is_ok());
        for bad in ["zram0\ntouch /tmp/X", "zram0$(touch x)", "zram", "/dev/zram0", "zram0 "] {
            let e = live_config(&meta(bad, "lz4"), None).unwrap_err().to_string();
            assert!(e.contains("zram.device: ") && !e.contains('\n'), "{e}");
        }
        for bad in ["lz4\nx", "lz4'", "$(x)", "`x`", "lz4;x", ""] {
            let e = live_config(&meta("zram0", bad), None).unwrap_err().to_string();
            assert!(e.contains("zram.algorithm: ") && !e.contains('\n'), "{e}");
        }
    }

    /// A page set saved by `zmem capture --zram` carries the device's configuration and
    /// mm_stat: the lab compares them with its prediction from the file's pages.
    #[test]
    fn a_zram_capture_file_gets_its_now() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = set.bytes()[..200 * 4096].to_vec();
        let live = zmem_experiments::conform::ours("lz4", &pages).unwrap();
        let meta: SetMeta = [
            ("source", "zram".to_string()),
            ("zram.device", "zram3".into()),
            ("zram.algorithm", "lz4".into()),
            ("zram.comp_algorithm", "lzo-rle lzo [lz4]".into()),
            ("zram.disksize", "1073741824".into()),
            ("zram.mm_stat", live.to_string().trim_end().to_string()),
            ("swap.priority", "100".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let set = PageSet::from_raw(pages, 4096).unwrap().with_set_meta(meta).unwrap();
        let e = gather(Input::Pages { set, label: "z.zpages".into() }, 64, &NoProgress).unwrap();
        assert_eq!((e.source.kind.as_str(), e.source.pages), ("file", 64));
        let now = e.now.expect("a Now section");
        assert!(now.exact, "{:?}", now.drift);
        assert_eq!(now.config.device, "/dev/zram3");
        assert_eq!(now.config.comp_algorithm, "lz4");
        assert_eq!(now.config.swap_priority, Some(100));
        assert_eq!(now.stored_pages, 200);
        assert_eq!(now.config.offered, ["lzo-rle", "lzo", "lz4"]);
        assert!(!now.config.recompress, "no recomp_algorithm recorded");
    }

    /// Issue 53's audit: `zram.algorithm_params dict=/etc/shadow` in a page set made root read
    /// that file (and a FIFO hung the lab). A recorded dictionary path is never read; the other
    /// parameters stay; a newline in recorded text cannot start a report line of its own.
    #[test]
    fn a_captures_dictionary_path_is_never_read() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = set.bytes()[..200 * 4096].to_vec();
        let live = zmem_experiments::conform::ours("lz4", &pages).unwrap();
        // A path that does not exist here: reading it (the old behaviour) fails the gather.
        let missing = "/nonexistent/zmem-dict";
        let meta: SetMeta = [
            ("source", "zram".to_string()),
            ("zram.device", "zram3".into()),
            ("zram.algorithm", "lz4".into()),
            ("zram.comp_algorithm", "lzo-rle lzo [lz4]".into()),
            ("zram.algorithm_params", format!("algo=lz4 level=3 dict={missing}")),
            ("zram.recomp_algorithm", "#1: zstd\nFAKELINE: run this".into()),
            ("zram.mm_stat", live.to_string().trim_end().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let set = PageSet::from_raw(pages, 4096).unwrap().with_set_meta(meta).unwrap();
        let e = gather(Input::Pages { set, label: "z.zpages".into() }, 64, &NoProgress).unwrap();
        let now = e.now.expect("a Now section");
        assert_eq!(now.config.algorithm_params.as_deref(), Some("algo=lz4 level=3"));
        assert!(e.source.detail.contains("recorded dictionary is not in the capture"));
        assert_eq!(now.config.recomp_algorithm.as_deref(), Some("#1: zstd FAKELINE: run this"));
        assert_eq!(without_dict("dict=\"/a b\" level=1"), ("level=1".to_string(), true));
        assert_eq!(without_dict("level=1"), ("level=1".to_string(), false));
    }

    #[test]
    fn a_fitted_trace_lands_on_the_sampled_pages() {
        use zmem_pages::trace::{Access as A, Op, Trace};
        let t = Trace {
            page_count: 10,
            file_pages: 0,
            accesses: (0..10).map(|p| A { time_ns: p.into(), page: p, op: Op::Write }).collect(),
        };
        // 10 pages sampled down to 4: pages 0, 2, 5, 7 (k * 10 / 4).
        let got: Vec<u64> = fit_trace(&t, 10, 4).unwrap().iter().map(|a| a.page).collect();
        assert_eq!(got, [0, 0, 1, 1, 1, 2, 2, 3, 3, 3]);
        let set =
            PageSet::from_raw((0..10u8).flat_map(|i| std::iter::repeat_n(i, 4096)).collect(), 4096)
                .unwrap();
        let sampled = sample(&set, 4);
        for (a, fitted) in t.accesses.iter().zip(fit_trace(&t, 10, 4).unwrap()) {
            // The sampled page it lands on is the original page or the last sampled before it.
            let on = sampled[fitted.page as usize * 4096];
            assert!(u32::from(on) <= a.page, "{} -> {on}", a.page);
            assert!(fitted.write && fitted.time_ns == a.time_ns);
        }
        // No sampling: ids unchanged.
        let same: Vec<u64> = fit_trace(&t, 10, 10).unwrap().iter().map(|a| a.page).collect();
        assert_eq!(same, (0..10).collect::<Vec<u64>>());
        // A trace over more pages than the set.
        let err = fit_trace(&t, 9, 9).unwrap_err().to_string();
        assert!(err.contains("names page 9") && err.contains("has 9 pages"), "{err}");
        // File reads: ids of the file's own, past the set, folded by the same ratio, still
        // file reads.
        let f = Trace {
            page_count: 10,
            file_pages: 40,
            accesses: vec![A { time_ns: 0, page: 39, op: Op::FileRead }],
        };
        let got = fit_trace(&f, 10, 4).unwrap();
        assert_eq!((got[0].page, got[0].file), (15, true), "40 file pages sampled down to 16");
    }

    #[test]
    fn the_trace_stays_inside_the_page_set_and_is_deterministic() {
        let t = trace_for(300).unwrap();
        assert_eq!(t.len(), 2400);
        assert!(t.iter().all(|a| a.page < 300));
        assert_eq!(t, trace_for(300).unwrap());
    }

    /// `--source processes` whose capture is too small (or failed) is an error naming why,
    /// never the built-in set measured in its place.
    #[test]
    fn an_explicit_processes_source_never_falls_back() {
        let small = PageSet::from_raw(vec![7u8; 3 * 4096], 4096).unwrap();
        let err = processes_or_builtin(
            Ok((small, "captured 3 pages".into())),
            Vec::new(),
            true,
            Coverage::Even(64),
        )
        .unwrap_err();
        assert!(matches!(err, LabError::Setup(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("--source processes") && text.contains("only 3 pages"), "{text}");
        let err =
            processes_or_builtin(Err("capture failed: EPERM".into()), Vec::new(), true, 64.into())
                .unwrap_err();
        assert!(err.to_string().contains("capture failed: EPERM"), "{err}");
    }

    /// Under the default order the fall back to the built-in set is kept, and says why in
    /// `fallback_reason`; a capture that was used after zram was not says why too.
    #[test]
    fn a_fallback_under_the_default_order_says_why() {
        let why_not = vec!["no active zram swap (/proc/swaps)".to_string()];
        let e = processes_or_builtin(
            Err("capture failed: EPERM".into()),
            why_not.clone(),
            false,
            Coverage::Even(64),
        )
        .unwrap();
        assert_eq!(e.source.kind, "builtin");
        assert_eq!(
            e.source.fallback_reason.as_deref(),
            Some("no active zram swap (/proc/swaps); capture failed: EPERM")
        );
        let big = PageSet::from_raw(vec![7u8; MIN_CAPTURE_PAGES * 4096], 4096).unwrap();
        let e =
            processes_or_builtin(Ok((big, "captured".into())), why_not, false, 64.into()).unwrap();
        assert_eq!(e.source.kind, "captured");
        assert_eq!(e.source.fallback_reason.as_deref(), Some("no active zram swap (/proc/swaps)"));
    }

    /// A page set made by `zmem capture` on another host carries that host's kernel: the lab
    /// judges candidates against it, and says where it came from.
    #[test]
    fn a_capture_brings_its_hosts_kernel() {
        let caps = KernelCaps {
            release: "6.1.0".into(),
            zram_present: true,
            zram_algorithms: vec!["lzo-rle".into(), "zstd".into()],
            zram_recompress: true,
            source: "zram algorithms from /sys/block/zram0/comp_algorithm".into(),
            ..KernelCaps::default()
        };
        let meta: SetMeta = zmem_kernel::caps::set_meta(&caps, "web-7").into_iter().collect();
        let set =
            PageSet::from_raw(vec![1u8; 8 * 4096], 4096).unwrap().with_set_meta(meta).unwrap();
        let e = from_file(set, "web-7.zmem", Coverage::All, &crate::NoProgress).unwrap();
        assert_eq!(e.kernel.zram_algorithms, caps.zram_algorithms);
        assert!(e.kernel.zram_recompress && e.kernel.release == "6.1.0");
        assert!(
            e.kernel.source.starts_with("recorded by the capture on web-7: "),
            "{}",
            e.kernel.source
        );
        // A set without it leaves the kernel to be read from this machine.
        let plain = PageSet::from_raw(vec![1u8; 8 * 4096], 4096).unwrap();
        let e = from_file(plain, "x", Coverage::All, &crate::NoProgress).unwrap();
        assert_eq!(e.kernel, KernelCaps::default());
    }
}
