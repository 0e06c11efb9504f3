//! A trace described in a few numbers: its size, span, write share and hottest pages.

use std::collections::HashMap;

use serde::Serialize;

use super::{Op, Trace};

/// What `zmem trace info` prints about a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of accesses.
    pub accesses: u64,
    /// Page ids are below this (from the header).
    pub page_count: u64,
    /// Distinct pages accessed.
    pub pages_used: u64,
    /// Accesses that are writes.
    pub writes: u64,
    /// Writes as a share of all accesses (0 for an empty trace).
    pub write_fraction: f64,
    /// Time of the last access, in nanoseconds since the trace start.
    pub span_ns: u64,
    /// The most accessed anonymous pages, most accesses first, ties by lower page id.
    pub hottest: Vec<PageAccesses>,
    /// File page ids are below this (from the header; 0: no page cache).
    pub file_pages: u64,
    /// Accesses that are file reads.
    pub file_reads: u64,
    /// Distinct file pages read.
    pub file_pages_used: u64,
}

/// A page and how often the trace accesses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PageAccesses {
    pub page: u32,
    pub accesses: u64,
}

impl Trace {
    /// The trace's [`Summary`], listing its `top` most accessed pages.
    pub fn summary(&self, top: usize) -> Summary {
        let mut counts = HashMap::<u32, u64>::new();
        let mut writes = 0u64;
        let mut file = std::collections::HashSet::new();
        let mut file_reads = 0u64;
        for a in &self.accesses {
            if a.op == Op::FileRead {
                file.insert(a.page);
                file_reads += 1;
                continue;
            }
            *counts.entry(a.page).or_default() += 1;
            writes += u64::from(a.op == Op::Write);
        }
        let mut hottest: Vec<PageAccesses> =
            counts.iter().map(|(&page, &accesses)| PageAccesses { page, accesses }).collect();
        hottest.sort_unstable_by(|a, b| b.accesses.cmp(&a.accesses).then(a.page.cmp(&b.page)));
        hottest.truncate(top);
        let accesses = self.accesses.len() as u64;
        Summary {
            accesses,
            page_count: self.page_count,
            pages_used: counts.len() as u64,
            writes,
            write_fraction: if accesses == 0 { 0.0 } else { writes as f64 / accesses as f64 },
            span_ns: self.accesses.last().map_or(0, |a| a.time_ns),
            hottest,
            file_pages: self.file_pages,
            file_reads,
            file_pages_used: file.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Access;
    use super::*;

    fn trace(accesses: &[(u64, u32, Op)]) -> Trace {
        Trace {
            page_count: 10,
            file_pages: 0,
            accesses: accesses
                .iter()
                .map(|&(time_ns, page, op)| Access { time_ns, page, op })
                .collect(),
        }
    }

    #[test]
    fn counts_accesses_writes_pages_and_ranks_the_hottest() {
        use Op::{Read as R, Write as W};
        // Page 7: 3 accesses, pages 2 and 5: 2 each (a tie, 2 ranks first), page 9: 1.
        let t = trace(&[
            (0, 5, R),
            (10, 7, W),
            (20, 2, R),
            (20, 7, R),
            (35, 9, W),
            (40, 5, W),
            (50, 2, R),
            (90, 7, R),
        ]);
        let s = t.summary(3);
        assert_eq!(s.accesses, 8);
        assert_eq!(s.page_count, 10);
        assert_eq!(s.pages_used, 4);
        assert_eq!(s.writes, 3);
        assert_eq!(s.write_fraction, 3.0 / 8.0);
        assert_eq!(s.span_ns, 90);
        let hot: Vec<(u32, u64)> = s.hottest.iter().map(|h| (h.page, h.accesses)).collect();
        assert_eq!(hot, [(7, 3), (2, 2), (5, 2)]);
        assert_eq!(t.summary(10).hottest.len(), 4, "at most one entry per page used");
    }

    #[test]
    fn an_empty_trace_has_zero_everything() {
        let s = trace(&[]).summary(5);
        assert_eq!((s.accesses, s.pages_used, s.writes, s.span_ns), (0, 0, 0, 0));
        assert_eq!(s.write_fraction, 0.0);
        assert!(s.hottest.is_empty());
    }
}
