//! From what a recorder observes per interval to page accesses in the trace format.
//!
//! A recorder (the recorder (zmem-kernel)) sees the monitored processes once per interval, never the
//! accesses themselves:
//! - DAMON gives, per aggregation interval, address regions of each process with
//!   `nr_accesses`: in how many of the interval's sampling checks the region's sampled page had
//!   its Accessed bit set (0 up to aggregation / sampling interval). Every page of a region
//!   shares the region's count: DAMON's resolution is the region (it splits and merges regions
//!   to keep between `min_nr_regions` and `max_nr_regions` of them), not the page.
//! - Soft-dirty bits give, per interval, the pages written since the bits were last cleared:
//!   one bit per page, whether it was written once or a million times.
//!
//! Both become, per interval `k` (time `[k * interval, (k + 1) * interval)`), a count `n` of
//! accesses for each captured page ([`IntervalCounts`]); [`spread`] writes them as `n` accesses
//! of that page at evenly spaced times inside the interval (at `k * interval + (2j + 1) *
//! interval / 2n`, `j < n`: the middles of `n` equal slices), ordered by time then page id. So
//! the trace's time resolution is the interval divided by the count, its rate resolution one
//! access per sampling check (DAMON) or per interval (soft-dirty), and a replay sees the relative
//! heat and the idle periods DAMON or the dirty bits saw, not the real access counts (a page
//! read a thousand times between two checks is one access). DAMON's Accessed bit does not tell
//! reads from writes: its accesses are reads. Soft-dirty sees only writes: its accesses are
//! writes, and pages only read never appear.
//!
//! Page ids are indices into the page set captured at the start ([`PageIndex`]): a page that is
//! not in that set (mapped or first touched later, or not anonymous) has no id and is left out.

use std::collections::BTreeMap;

use super::{Access, Op, Trace};
use crate::{PageSet, PagesError};

/// Where each page of a captured page set was: (pid, virtual address) to page id.
#[derive(Debug, Clone, Default)]
pub struct PageIndex {
    ids: BTreeMap<(u32, u64), u32>,
    page_count: u64,
}

impl PageIndex {
    /// The index of a page set captured from processes (every page must carry its pid and
    /// address).
    pub fn from_set(set: &PageSet) -> Result<Self, PagesError> {
        let metas = set.metas().ok_or_else(|| {
            PagesError::Invalid("the page set has no per-page pid and address".into())
        })?;
        Self::from_pages(metas.iter().map(|m| (m.pid, m.vaddr)))
    }

    /// The index of pages given in page-id order as (pid, page-aligned virtual address).
    pub fn from_pages(pages: impl IntoIterator<Item = (u32, u64)>) -> Result<Self, PagesError> {
        let mut ids = BTreeMap::new();
        let mut n = 0u64;
        for key in pages {
            let id = u32::try_from(n)
                .map_err(|_| PagesError::Invalid("more pages than a trace can name".into()))?;
            if ids.insert(key, id).is_some() {
                return Err(PagesError::Invalid(format!(
                    "page {:#x} of pid {} is in the set twice",
                    key.1, key.0
                )));
            }
            n += 1;
        }
        Ok(Self { ids, page_count: n })
    }

    /// Pages in the set: every id is below this.
    pub fn page_count(&self) -> u64 {
        self.page_count
    }

    /// The id of the page of `pid` at `vaddr` (page-aligned), if it was captured.
    pub fn id(&self, pid: u32, vaddr: u64) -> Option<u32> {
        self.ids.get(&(pid, vaddr)).copied()
    }

    /// The captured pages of `pid` in `[start, end)`: (address, id) in address order.
    pub fn range(&self, pid: u32, start: u64, end: u64) -> impl Iterator<Item = (u64, u32)> + '_ {
        let r = if start < end { (pid, start)..(pid, end) } else { (pid, start)..(pid, start) };
        self.ids.range(r).map(|(&(_, a), &id)| (a, id))
    }

    /// The captured pages of `pid`, in address order.
    pub fn pages_of(&self, pid: u32) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.range(pid, 0, u64::MAX)
    }
}

/// One DAMON region of one process in one aggregation interval (a `tried_regions` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamonRegion {
    /// The process (the kdamond target) the region belongs to.
    pub pid: u32,
    /// Start address (inclusive).
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// Sampling checks of the interval that found the region accessed.
    pub nr_accesses: u32,
}

/// The accesses of one interval: (page id, count), at most one entry per page.
pub type IntervalCounts = Vec<(u32, u32)>;

/// One DAMON aggregation interval's regions as counts per captured page. Counts are capped at
/// `max_nr_accesses` (aggregation / sampling interval: more cannot have been seen); where
/// regions overlap (they should not), a page takes the larger count.
pub fn damon_counts(
    index: &PageIndex,
    regions: &[DamonRegion],
    max_nr_accesses: u32,
) -> IntervalCounts {
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for r in regions {
        let n = r.nr_accesses.min(max_nr_accesses);
        if n == 0 {
            continue;
        }
        for (_, id) in index.range(r.pid, r.start, r.end) {
            let c = counts.entry(id).or_insert(0);
            *c = (*c).max(n);
        }
    }
    counts.into_iter().collect()
}

/// One interval's pages seen, (pid, page address), as one access per captured page: what
/// soft-dirty bits and page-out sampling give (a bit per page per interval).
pub fn once_each(index: &PageIndex, dirty: &[(u32, u64)]) -> IntervalCounts {
    let mut ids: Vec<u32> = dirty.iter().filter_map(|&(pid, a)| index.id(pid, a)).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter().map(|id| (id, 1)).collect()
}

/// Spreads per-interval counts into a trace over `page_count` pages: interval `k` covers
/// `[k * interval_ns, (k + 1) * interval_ns)`, and a page with count `n` gets `n` accesses (all
/// `op`) at the middles of `n` equal slices of it. Fails on a page id not below `page_count` or
/// a zero interval.
pub fn spread(
    page_count: u64,
    interval_ns: u64,
    intervals: &[IntervalCounts],
    op: Op,
) -> Result<Trace, PagesError> {
    if interval_ns == 0 {
        return Err(PagesError::Invalid("the interval must be above 0".into()));
    }
    let mut accesses = Vec::new();
    for (k, counts) in intervals.iter().enumerate() {
        let base = (k as u64).checked_mul(interval_ns).ok_or_else(|| {
            PagesError::Invalid("the recording is longer than a trace can time".into())
        })?;
        let first = accesses.len();
        for &(page, n) in counts {
            if u64::from(page) >= page_count {
                return Err(PagesError::Invalid(format!(
                    "interval {k}: page {page} not below page count {page_count}"
                )));
            }
            for j in 0..u64::from(n) {
                // The middle of slice j of n: (2j + 1) * interval / 2n, below interval_ns.
                let at = (2 * j + 1) as u128 * interval_ns as u128 / (2 * u128::from(n));
                accesses.push(Access { time_ns: base + at as u64, page, op });
            }
        }
        accesses[first..].sort_unstable_by_key(|a| (a.time_ns, a.page));
    }
    Ok(Trace { page_count, file_pages: 0, accesses })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> PageIndex {
        // pid 7: pages at 0x1000..0x5000 (ids 0-3); pid 9: 0x1000, 0x3000 (ids 4, 5).
        let pages = [(7, 0x1000), (7, 0x2000), (7, 0x3000), (7, 0x4000), (9, 0x1000), (9, 0x3000)];
        PageIndex::from_pages(pages).unwrap()
    }

    #[test]
    fn the_index_finds_pages_by_process_and_address() {
        let i = index();
        assert_eq!(i.page_count(), 6);
        assert_eq!(i.id(7, 0x3000), Some(2));
        assert_eq!(i.id(9, 0x3000), Some(5));
        assert_eq!(i.id(9, 0x2000), None);
        assert_eq!(i.id(8, 0x1000), None);
        let r: Vec<_> = i.range(7, 0x2000, 0x4000).collect();
        assert_eq!(r, [(0x2000, 1), (0x3000, 2)]);
        assert_eq!(i.range(7, 0x4000, 0x2000).count(), 0);
        assert_eq!(i.pages_of(9).map(|(_, id)| id).collect::<Vec<_>>(), [4, 5]);
        assert!(PageIndex::from_pages([(1, 0), (1, 0)]).is_err());
    }

    #[test]
    fn damon_regions_give_their_count_to_the_captured_pages_they_cover() {
        let regions = [
            DamonRegion { pid: 7, start: 0x1000, end: 0x3000, nr_accesses: 3 },
            DamonRegion { pid: 7, start: 0x3000, end: 0x5000, nr_accesses: 0 },
            // Covers pid 9's 0x1000 only: 0x2000 was not captured.
            DamonRegion { pid: 9, start: 0x0, end: 0x3000, nr_accesses: 50 },
        ];
        assert_eq!(damon_counts(&index(), &regions, 20), [(0, 3), (1, 3), (4, 20)]);
    }

    #[test]
    fn soft_dirty_pages_are_one_write_each() {
        let dirty = [(7, 0x4000), (9, 0x3000), (7, 0x4000), (9, 0x9000)];
        assert_eq!(once_each(&index(), &dirty), [(3, 1), (5, 1)]);
    }

    #[test]
    fn counts_are_spread_evenly_inside_their_interval() {
        let intervals = vec![vec![(2, 2), (0, 1)], vec![], vec![(1, 4)]];
        let t = spread(3, 1000, &intervals, Op::Read).unwrap();
        let got: Vec<(u64, u32)> = t.accesses.iter().map(|a| (a.time_ns, a.page)).collect();
        assert_eq!(got, [(250, 2), (500, 0), (750, 2), (2125, 1), (2375, 1), (2625, 1), (2875, 1)]);
        assert!(t.accesses.iter().all(|a| a.op == Op::Read));
        t.validate().unwrap();
        assert!(spread(2, 1000, &intervals, Op::Read).is_err(), "page 2 is not below 2");
        assert!(spread(3, 0, &intervals, Op::Read).is_err());
    }
}
