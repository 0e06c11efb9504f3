//! Step 1 of the lab: where the evidence comes from.
//!
//! Takes what the user asked for ([`Input`]) and gives the pages the lab measures with a
//! [`Source`] that says what they are and why they were chosen, and the access trace the
//! replay runs ([`trace_for`]).
//!
//! The order, when nothing is named: this machine's processes (their resident anonymous
//! pages, where zmem may read them), else the built-in generated set, saying why (capture not
//! requested, failed, or too small to say anything about the machine). A capture or file larger
//! than `max_pages` is sampled evenly (every `len / max`-th page), so the sample spans every
//! process of a capture.

use serde::{Deserialize, Serialize};
use zmem_workload::{PageSet, builtin, capture};

use crate::replay::{self, Access};
use crate::{LabError, Progress};

/// Where the pages came from, for the report's first line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Source {
    /// `captured`, `file` or `builtin`.
    pub kind: String,
    /// Human description: what was captured, which file, or why the built-in set was used.
    pub detail: String,
    pub pages: u64,
    pub page_size: usize,
}

/// What the user asked the lab to run on.
#[derive(Debug)]
pub enum Input {
    /// A page set they named (already opened; `label` names it, usually the path).
    Pages { set: PageSet, label: String },
    /// This machine's processes, falling back to the built-in set.
    Capture,
    /// The built-in generated set.
    Builtin,
}

/// Fewer captured pages than this say little about a machine: use the built-in set instead.
pub const MIN_CAPTURE_PAGES: usize = 1024;

/// The pages the lab measures, and where they came from.
#[derive(Debug)]
pub struct Evidence {
    /// Whole pages of `source.page_size`.
    pub pages: Vec<u8>,
    pub source: Source,
}

/// Every `len / max`-th page of `set`, at most `max` pages (all of them if it has no more).
pub fn sample(set: &PageSet, max: usize) -> Vec<u8> {
    let n = set.len();
    if n <= max {
        return set.bytes().to_vec();
    }
    (0..max).flat_map(|k| set.page(k * n / max).iter().copied()).collect()
}

fn evidence(kind: &str, detail: String, set: &PageSet, max_pages: usize) -> Evidence {
    let pages = sample(set, max_pages);
    let source = Source {
        kind: kind.into(),
        detail,
        pages: (pages.len() / set.page_size()) as u64,
        page_size: set.page_size(),
    };
    Evidence { pages, source }
}

/// Gathers the pages for `input`, at most `max_pages` of them.
pub fn gather(
    input: Input,
    max_pages: usize,
    progress: &dyn Progress,
) -> Result<Evidence, LabError> {
    let why_builtin = match input {
        Input::Pages { set, label } => {
            let used = set.len().min(max_pages);
            let detail = format!("{label} ({} pages, {used} used)", set.len());
            return Ok(evidence("file", detail, &set, max_pages));
        }
        Input::Builtin => "capture not requested (--no-capture)".to_string(),
        Input::Capture => match capture_processes(progress) {
            Ok((set, summary)) if set.len() >= MIN_CAPTURE_PAGES => {
                let used = set.len().min(max_pages);
                let detail = format!("this machine: {summary}; {used} pages sampled");
                return Ok(evidence("captured", detail, &set, max_pages));
            }
            Ok((set, summary)) => format!("capture gave only {} pages ({summary})", set.len()),
            Err(e) => format!("capture failed: {e}"),
        },
    };
    let set = builtin::default_set_with(4096)?;
    Ok(evidence("builtin", format!("built-in generated set; {why_builtin}"), &set, max_pages))
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

/// The access trace the lab replays over `pages` pages: generated (Zipf over a working set of
/// half the pages, three phases, a fixed seed), eight accesses per page up to 100,000.
pub fn trace_for(pages: u64) -> Result<Vec<Access>, LabError> {
    let opts = zmem_workload::trace::generate::Options {
        pages,
        accesses: (8 * pages).clamp(1, 100_000),
        working_set: (pages / 2).max(1),
        phases: 3,
        seed: 1,
        ..Default::default()
    };
    Ok(replay::accesses(&zmem_workload::trace::generate::generate(&opts)?))
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
    fn builtin_says_why() {
        let e = gather(Input::Builtin, 64, &NoProgress).unwrap();
        assert_eq!(e.source.kind, "builtin");
        assert_eq!(e.source.pages, 64);
        assert!(e.source.detail.contains("--no-capture"), "{}", e.source.detail);
    }

    #[test]
    fn the_trace_stays_inside_the_page_set_and_is_deterministic() {
        let t = trace_for(300).unwrap();
        assert_eq!(t.len(), 2400);
        assert!(t.iter().all(|a| a.page < 300));
        assert_eq!(t, trace_for(300).unwrap());
    }
}
