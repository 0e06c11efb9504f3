//! One process: the pages that came back, a look at its smaps, and the page-out of its idle
//! mappings, verified by pagemap.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::Agent;
use super::bits::{CHUNK_PAGES, Pages, State};
use super::procfs::{self, PM_SWAP, Pagemap};
use crate::KernelError;
use crate::cold::Smaps;
use crate::record::page_out::Pager;
use crate::record::pagemap::{PM_PRESENT, runs};

/// What the agent keeps of a watched process.
#[derive(Debug)]
pub(super) struct Proc {
    /// Its start time: a pid with another one is another process.
    pub start_time: u64,
    /// When its referenced bits were last cleared (`None`: never yet).
    pub cleared_at: Option<Instant>,
    /// When its hot marks last aged.
    rotated_at: Option<Instant>,
    /// Per anonymous mapping with a page state, by start address.
    maps: BTreeMap<u64, Map>,
    /// Mappings found idle at the last look whose page-out is not finished (the CPU budget
    /// ran out, or a sample's rest waits for the next tick).
    pending: Vec<Pending>,
    /// Sampled mappings whose rest is paged out at the next tick, once the samples that were
    /// touched have come back.
    rest: Vec<Pending>,
    /// Looks so far: which page of each group the next sample takes.
    looks: u64,
    /// The kernel refused to show or change its memory (EACCES, EPERM: another user
    /// namespace's init, say): left alone while it lives.
    pub refused: bool,
}

/// How often, in T, the hot marks age: a page that came back stays hot for one to two of
/// these (see [`super::bits::Pages::rotate`]).
pub const HOT_AGES_EVERY_T: u32 = 4;

/// The most T a page that came back is held resident while idle for T again: hot for up to
/// 2 · [`HOT_AGES_EVERY_T`] T, of which the first T it is not idle for T yet. The lab bounds
/// what the agent leaves resident with it (by Little's law, the return rate times this).
pub const HELD_IDLE_MAX_T: u32 = 2 * HOT_AGES_EVERY_T - 1;

/// Pages in a sample's group: one page of each group is paged out first, and the group's
/// others follow only where that one did not come back.
pub const GROUP_PAGES: u64 = 16;

/// Which of a mapping's resident pages with no mark a page-out takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// All of them: nothing in the mapping was referenced for T.
    All,
    /// Page `n` of each group: the mapping holds referenced pages, and the counts per mapping
    /// do not say which. Those touched come back within a period (and are marked hot).
    Sample(u64),
    /// The rest of each group whose sample `n` stayed out.
    Rest(u64),
}

/// A mapping to page out from page `next` on.
#[derive(Debug, Clone, Copy)]
struct Pending {
    start: u64,
    end: u64,
    next: u64,
    pass: Pass,
}

#[derive(Debug)]
struct Map {
    end: u64,
    pages: Pages,
}

impl Proc {
    pub(super) fn new(start_time: u64) -> Self {
        Self {
            start_time,
            cleared_at: None,
            rotated_at: None,
            maps: BTreeMap::new(),
            pending: Vec::new(),
            rest: Vec::new(),
            looks: 0,
            refused: false,
        }
    }

    pub(super) fn out_pages(&self) -> u64 {
        self.maps.values().map(|m| m.pages.out()).sum()
    }

    pub(super) fn pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub(super) fn drop_pending(&mut self) {
        self.pending.clear();
        self.rest.clear();
    }

    /// Keeps the state of the anonymous mappings still there at the same start; a mapping
    /// that shrank forgets its pages past the new end.
    fn reconcile(&mut self, smaps: &Smaps, page_size: u64) {
        let live: BTreeMap<u64, u64> = smaps
            .mappings
            .iter()
            .filter(|m| m.anonymous_mapping && m.end > m.start)
            .map(|m| (m.start, m.end))
            .collect();
        self.maps.retain(|start, m| {
            let Some(&end) = live.get(start) else { return false };
            if end < m.end {
                m.pages.truncate((end - start) / page_size);
            }
            m.end = end;
            !m.pages.is_empty()
        });
    }

    /// Ages the hot marks every [`HOT_AGES_EVERY_T`] T (see [`Pages::rotate`]).
    fn age_hot_marks(&mut self, now: Instant, cold_age: Duration) {
        let at = *self.rotated_at.get_or_insert(now);
        if now.saturating_duration_since(at) >= cold_age * HOT_AGES_EVERY_T {
            self.maps.values_mut().for_each(|m| m.pages.rotate());
            self.rotated_at = Some(now);
        }
    }
}

impl<P: Pager> Agent<P> {
    /// Reads the pagemap of every page the agent holds out of `pid`: present again means it
    /// came back (counted, and marked hot); neither present nor in swap means the process freed
    /// it (forgotten, not counted).
    pub(super) fn came_back(&mut self, pid: u32) -> Result<(), KernelError> {
        let Some(p) = self.procs.get_mut(&pid) else { return Ok(()) };
        if p.refused || p.out_pages() == 0 {
            return Ok(());
        }
        let ps = self.page_size;
        let pm = Pagemap::open(&self.proc_root, pid, ps)?;
        let mut buf = Vec::new();
        for (&start, m) in &mut p.maps {
            let npages = (m.end - start) / ps;
            for c in m.pages.chunks_out() {
                let first = c * CHUNK_PAGES;
                let n = CHUNK_PAGES.min(npages.saturating_sub(first));
                if n == 0 {
                    continue;
                }
                pm.read(start + first * ps, n, &mut buf)?;
                for (page, &e) in (first..).zip(&buf) {
                    if m.pages.get(page) != State::Out {
                        continue;
                    }
                    if e & PM_PRESENT != 0 {
                        m.pages.set(page, State::Hot);
                        self.stats.came_back_bytes += ps;
                    } else if e & PM_SWAP == 0 {
                        m.pages.set(page, State::Free);
                    }
                }
            }
        }
        Ok(())
    }

    /// The sampled mappings' rest joins the page-outs: a period has passed since the sample,
    /// and [`Self::came_back`] has marked the samples that were touched.
    pub(super) fn rest_due(&mut self, pid: u32) {
        if let Some(p) = self.procs.get_mut(&pid) {
            let rest = std::mem::take(&mut p.rest);
            p.pending.extend(rest);
        }
    }

    /// Reads `pid`'s smaps, clears its referenced bits, and (but at its first look) lists its
    /// anonymous mappings with a page or more resident and unreferenced since the last look,
    /// where the process has `min_idle_bytes` of them, for [`Self::page_out_pending`].
    pub(super) fn look(&mut self, pid: u32, now: Instant) -> Result<(), KernelError> {
        let smaps = procfs::smaps(&self.proc_root, pid)?;
        procfs::clear_refs(&self.proc_root, pid)?;
        // The pid may have been reused since it was listed: then this is another process, whose
        // smaps says nothing of the one watched (the caller drops it).
        let known = self.procs.get(&pid).map(|p| p.start_time);
        if Some(procfs::identity(&self.proc_root, pid)?.start_time) != known {
            let gone = std::io::Error::from_raw_os_error(libc::ESRCH);
            return Err(KernelError::io(self.proc_root.join(pid.to_string()), gone));
        }
        let (ps, min_idle) = (self.page_size, self.config.min_idle_bytes.max(1));
        let cold_age = Duration::from_secs(self.config.cold_age_secs);
        let Some(p) = self.procs.get_mut(&pid) else { return Ok(()) };
        let first = p.cleared_at.replace(now).is_none();
        p.reconcile(&smaps, ps);
        p.age_hot_marks(now, cold_age);
        p.drop_pending();
        if first {
            return Ok(());
        }
        p.looks += 1;
        let n = p.looks % GROUP_PAGES;
        // The threshold is the process's: a runtime's heap is often many small mappings (V8
        // maps its pages 256 KiB at a time), each under any per-mapping threshold.
        let idle = |m: &&crate::cold::SmapsEntry| {
            m.anon_bytes(smaps.has_anonymous).saturating_sub(m.referenced)
        };
        let anon = smaps.mappings.iter().filter(|m| m.anonymous_mapping && m.end > m.start);
        if anon.clone().map(|m| idle(&m)).sum::<u64>() < min_idle {
            return Ok(());
        }
        p.pending = anon
            .filter(|m| idle(m) >= ps)
            .map(|m| {
                let pass = if m.referenced == 0 { Pass::All } else { Pass::Sample(n) };
                Pending { start: m.start, end: m.end, next: 0, pass }
            })
            .collect();
        Ok(())
    }

    /// Pages out the listed idle mappings of `pid` until they are done or the budget is spent
    /// (then the next tick goes on where this one stopped).
    pub(super) fn page_out_pending(&mut self, pid: u32) -> Result<(), KernelError> {
        if !self.procs.get(&pid).is_some_and(Proc::pending) {
            return Ok(());
        }
        let pm = Pagemap::open(&self.proc_root, pid, self.page_size)?;
        let done = self.page_out_listed(pid, &pm);
        // A descriptor per process only during its pass: a daemon watching every process must
        // not hold one each (RLIMIT_NOFILE).
        self.pager.forget(pid);
        done
    }

    /// Works down `pid`'s list of idle mappings; a mapping the budget cut short stays first,
    /// with where to go on.
    fn page_out_listed(&mut self, pid: u32, pm: &Pagemap) -> Result<(), KernelError> {
        while let Some(&job) = self.procs.get(&pid).and_then(|p| p.pending.first()) {
            let stopped = self.page_out_mapping(pid, pm, job)?;
            let Some(p) = self.procs.get_mut(&pid) else { return Ok(()) };
            match stopped {
                Some(next) => {
                    p.pending[0].next = next;
                    return Ok(());
                }
                None => {
                    p.pending.remove(0);
                    if let Pass::Sample(n) = job.pass {
                        p.rest.push(Pending { next: 0, pass: Pass::Rest(n), ..job });
                    }
                }
            }
        }
        Ok(())
    }

    /// Pages out, a chunk of 512 pages at a time from page `from`, the mapping's resident
    /// pages the agent has no mark on (not hot, not out). Returns where it stopped if the
    /// budget ran out first.
    fn page_out_mapping(
        &mut self,
        pid: u32,
        pm: &Pagemap,
        job: Pending,
    ) -> Result<Option<u64>, KernelError> {
        let npages = (job.end - job.start) / self.page_size;
        let mut buf = Vec::new();
        let mut first = job.next;
        while first < npages {
            if self.budget.exhausted() {
                return Ok(Some(first));
            }
            let n = CHUNK_PAGES.min(npages - first);
            pm.read(job.start + first * self.page_size, n, &mut buf)?;
            self.page_out_chunk(pid, pm, job, first, &mut buf)?;
            first += n;
        }
        Ok(None)
    }

    /// One chunk: `buf` holds its pagemap entries from page `first`. After the page-out the
    /// entries are read again: a candidate gone to swap is out; one still present was refused
    /// by the kernel (shared, unevictable, swap full, or touched at once) and is not retried
    /// before the next look.
    fn page_out_chunk(
        &mut self,
        pid: u32,
        pm: &Pagemap,
        job: Pending,
        first: u64,
        buf: &mut Vec<u64>,
    ) -> Result<(), KernelError> {
        let (ps, start, end) = (self.page_size, job.start, job.end);
        let map = self.procs.get(&pid).and_then(|p| p.maps.get(&start));
        let state = |page: u64| map.map_or(State::Free, |m| m.pages.get(page));
        let taken = |page: u64| match job.pass {
            Pass::All => true,
            Pass::Sample(n) => page % GROUP_PAGES == n,
            Pass::Rest(n) => {
                page % GROUP_PAGES != n && state(page - page % GROUP_PAGES + n) == State::Out
            }
        };
        let candidates: Vec<u64> = (first..)
            .zip(buf.iter())
            .filter(|&(page, &e)| e & PM_PRESENT != 0 && state(page) == State::Free && taken(page))
            .map(|(page, _)| page)
            .collect();
        if candidates.is_empty() {
            return Ok(());
        }
        self.drain_once();
        let vaddrs: Vec<u64> = candidates.iter().map(|&page| start + page * ps).collect();
        self.pager.page_out(pid, &runs(&vaddrs, ps))?;
        pm.read(start + first * ps, buf.len() as u64, buf)?;
        let Some(p) = self.procs.get_mut(&pid) else { return Ok(()) };
        let m = p.maps.entry(start).or_insert_with(|| Map { end, pages: Pages::default() });
        for page in candidates {
            let e = buf[(page - first) as usize];
            if e & PM_PRESENT != 0 {
                self.stats.refused_bytes += ps;
            } else if e & PM_SWAP != 0 {
                m.pages.set(page, State::Out);
                self.stats.paged_out_bytes += ps;
            }
        }
        if m.pages.is_empty() {
            p.maps.remove(&start);
        }
        Ok(())
    }

    /// Moves every CPU's LRU add batch onto the LRU lists once a tick, before the first
    /// page-out: MADV_PAGEOUT takes only folios on the lists (see record::page_out's module
    /// doc). A failure is kept and not tried again (its cause does not go away).
    fn drain_once(&mut self) {
        if self.drained || self.drain_error.is_some() {
            return;
        }
        self.drained = true;
        if let Err(e) = self.pager.drain_lru() {
            let why = format!("draining the LRU batches: {e}");
            self.last_error = Some(why.clone());
            self.drain_error = Some(why);
        }
    }
}
