//! RAM as the kernel's LRU lists (the classic, non-MGLRU reclaim of Linux 6.18, mm/vmscan.c):
//! two for anonymous pages and, where a trace reads a file, two for its page cache, with the
//! accessed bit of each page's PTE and the folio's `PG_referenced`. The file's pages are mapped
//! (the player maps the file, not executable), so `folio_check_references()` and
//! `shrink_active_list()` treat them as they treat anonymous pages, except where the mapping
//! has no recency (`MADV_RANDOM`, `vma_has_recency()`: their accesses are never seen); what
//! differs is what reclaim does with a victim (a clean file page is dropped, no swap) and the
//! workingset:
//!
//! - A faulted-in page (first touch or swap-in) goes to the head of the inactive list with its
//!   accessed bit set (the fault's access): mm/memory.c `do_anonymous_page()` /
//!   `do_swap_page()` → mm/swap.c `folio_add_lru()` (new anonymous folios start inactive since
//!   Linux 5.9). A swap-in goes to the active list instead when mm/workingset.c
//!   `workingset_refault()` finds its refault distance (`nonresident_age` since its eviction:
//!   evictions and activations, `workingset_age_nonresident()`) at most the workingset size,
//!   (`workingset_test_recent()`, swap assumed not full): for an anon refault the active anon
//!   list and both file lists, for a file refault (mm/filemap.c `filemap_add_folio()`) the
//!   active file list and both anon lists. Where the evicted page had `PG_workingset` (set by
//!   `shrink_active_list()` on every folio it deactivates) the refault also costs its type a
//!   page of io (`lru_note_cost_refault()`).
//! - An access to a resident page sets its accessed bit.
//! - Reclaim (`shrink_lruvec()`) scans the inactive tail (`shrink_inactive_list()` →
//!   `shrink_folio_list()` with `folio_check_references()`): `PG_referenced` is tested and
//!   cleared; an accessed page has its bit cleared (`folio_referenced()`) and `PG_referenced`
//!   set, and is activated if the flag was set before, else rotated to the inactive head
//!   (`FOLIOREF_KEEP`); a page not accessed is reclaimed. A folio that `trylock` fails on is
//!   put back without a check. Activations age `nonresident_age` (`move_folios_to_lru()`).
//! - The active list is scanned ([`Lru::deactivate`]) when `prepare_scan_control()` sets
//!   `may_deactivate` for its type: when refaults were activated since the last reclaim ended
//!   (`WORKINGSET_ACTIVATE_ANON` / `_FILE` against the snapshot `snapshot_refaults()` takes at
//!   the end of `do_try_to_free_pages()` or `balance_pgdat()`: "a new workingset is being
//!   established"), or when `inactive_is_low()` (inactive × `int_sqrt(10 * GiB)` < active,
//!   ratio 1 below 1 GiB). Scanned active pages move to the inactive head with their bits
//!   cleared (`shrink_active_list()`: anonymous pages are deactivated, accessed or not).
//! - How many: `get_scan_count()` gives each list `size >> priority` times its type's
//!   fraction, and `shrink_lruvec()` takes them in `SWAP_CLUSTER_MAX` chunks, one of each per
//!   round while an inactive target lasts; every reclaim walks the priorities so (the
//!   simulator's `reclaim` and `kswapd`, with [`Lru::scan_tail`] and [`Lru::deactivate`]).
//! - At the end of the pass, `shrink_lruvec()` deactivates one more chunk if the inactive list
//!   is low, `may_deactivate` or not ([`Lru::end_of_pass`]).
//! - What these decisions read (the refault activations, `inactive_is_low()`'s sizes, the
//!   workingset size, `cache_trim_mode`'s inactive file pages) is `lruvec_page_state()`: the
//!   memcg's statistics as of their last rstat flush (mm/memcontrol.c), not the lists as they
//!   are. Where [`Lru::stale_stats`] is set they are a snapshot that [`Lru::flush_stats`]
//!   takes (empty until the first flush, as a new memcg's are); else they are the lists
//!   themselves (statistics flushed before every reclaim, as `zmem validate`'s harness does by
//!   reading `memory.stat`). `get_scan_count()` reads the lists' exact sizes
//!   (`lruvec_lru_size()`), always.
//!
//! Lists are index-linked over page ids, so every step is O(1).

pub(crate) use super::scan::SWAP_CLUSTER_MAX;

const NONE: u32 = u32::MAX;

/// What one look at the inactive tail found ([`Lru::scan_tail`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scanned {
    /// The inactive list is empty.
    Empty,
    /// Rotated (accessed once, or the pinned page): not reclaimable now.
    Kept,
    /// Activated (accessed again since its last look): `shrink_folio_list()`'s
    /// `activate_locked`.
    Activated(u32),
    /// Not accessed since its last scan: reclaim may take it.
    Victim(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    Out,
    Inactive,
    Active,
}

const ANON: usize = 0;
const FILE: usize = 1;

#[derive(Debug, Default, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
    len: usize,
}

/// Resident pages on two LRU lists.
#[derive(Debug)]
pub(crate) struct Lru {
    prev: Vec<u32>,
    next: Vec<u32>,
    on: Vec<Where>,
    accessed: Vec<bool>,
    referenced: Vec<bool>,
    /// `nonresident_age` when the page was evicted (its shadow entry).
    shadow: Vec<u64>,
    /// `PG_workingset`: kept through an eviction, as the shadow entry packs it.
    workingset: Vec<bool>,
    nonresident_age: u64,
    /// The inactive and active lists of anon (`ANON`) and file (`FILE`) pages.
    inactive: [List; 2],
    active: [List; 2],
    /// Page ids from here on are file pages.
    file_base: u32,
    /// Whether the file's mapping has recency (include/linux/mm_inline.h `vma_has_recency()`):
    /// false for a mapping advised `MADV_RANDOM` or `MADV_SEQUENTIAL`, whose references
    /// mm/rmap.c `folio_referenced()` ignores (`invalid_folio_referenced_vma()`), so its pages
    /// count as never accessed.
    file_recency: bool,
    capacity: usize,
    /// A page reclaim must pass over (the faulting page while its fault reads ahead), or NONE.
    pinned: u32,
    /// Bytes per page, for `inactive_is_low()`'s ratio.
    page_size: usize,
    /// `WORKINGSET_ACTIVATE_ANON` and `_FILE`: refaults activated by `workingset_refault()`.
    refault_activations: [u64; 2],
    /// The cgroup's `lruvec->refaults[]`: `refault_activations` when the last reclaim ended
    /// (`snapshot_refaults()`).
    refaults_snapshot: [u64; 2],
    /// The lruvec's `anon_cost` and `file_cost` (`scan::Costs`).
    pub(crate) costs: super::scan::Costs,
    /// The statistics as of the last flush, or `None`: always current.
    flushed: Option<Stats>,
}

/// What `lruvec_page_state()` gives reclaim: the lists' sizes (`NR_INACTIVE_ANON` ...) and
/// the refaults activated (`WORKINGSET_ACTIVATE_ANON`, `_FILE`), by type.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Stats {
    inactive: [u64; 2],
    active: [u64; 2],
    refault_activations: [u64; 2],
}

impl Lru {
    /// Room for `capacity` resident pages of `page_size` bytes, of a page set of `pages`.
    #[cfg(test)]
    pub(crate) fn new(capacity: usize, pages: usize, page_size: usize) -> Self {
        Self::with_file(capacity, pages, 0, page_size)
    }

    /// As [`Lru::new`], with `file` file pages after the `anon` anonymous ones (ids
    /// `anon..anon + file`).
    pub(crate) fn with_file(capacity: usize, anon: usize, file: usize, page_size: usize) -> Self {
        let empty = List { head: NONE, tail: NONE, len: 0 };
        let pages = anon + file;
        Self {
            prev: vec![NONE; pages],
            next: vec![NONE; pages],
            on: vec![Where::Out; pages],
            accessed: vec![false; pages],
            referenced: vec![false; pages],
            shadow: vec![0; pages],
            workingset: vec![false; pages],
            nonresident_age: 0,
            inactive: [empty; 2],
            active: [empty; 2],
            file_base: anon as u32,
            file_recency: true,
            capacity,
            pinned: NONE,
            page_size,
            refault_activations: [0; 2],
            refaults_snapshot: [0; 2],
            costs: super::scan::Costs::default(),
            flushed: None,
        }
    }

    /// Reclaim reads statistics as of the last [`Lru::flush_stats`] from now on; until the
    /// first, they read empty (a new memcg's, before the flusher has run). Once stale, always.
    pub(crate) fn stale_stats(&mut self) {
        if self.flushed.is_none() {
            self.flushed = Some(Stats::default());
        }
    }

    /// An rstat flush (mm/memcontrol.c `css_rstat_flush()`): the statistics catch up with the
    /// lists. Nothing to do where they are always current.
    pub(crate) fn flush_stats(&mut self) {
        if self.flushed.is_some() {
            self.flushed = Some(self.current_stats());
        }
    }

    fn current_stats(&self) -> Stats {
        Stats {
            inactive: self.inactive.map(|l| l.len as u64),
            active: self.active.map(|l| l.len as u64),
            refault_activations: self.refault_activations,
        }
    }

    /// The statistics reclaim reads (`lruvec_page_state()`).
    fn stats(&self) -> Stats {
        self.flushed.unwrap_or_else(|| self.current_stats())
    }

    /// `lruvec_page_state(NR_INACTIVE_FILE)`, as `prepare_scan_control()` reads it for
    /// `cache_trim_mode`.
    pub(crate) fn stat_inactive_file(&self) -> u64 {
        self.stats().inactive[FILE]
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Resident pages.
    pub(crate) fn len(&self) -> usize {
        self.inactive.iter().chain(&self.active).map(|l| l.len).sum()
    }

    /// `ANON` or `FILE`: the lists page `p` belongs on.
    fn kind(&self, p: u32) -> usize {
        usize::from(p >= self.file_base)
    }

    pub(crate) fn is_resident(&self, page: u32) -> bool {
        self.on[page as usize] != Where::Out
    }

    /// Whether the page is on the active list.
    #[cfg(test)]
    fn is_active(&self, page: u32) -> bool {
        self.on[page as usize] == Where::Active
    }

    fn list(&mut self, w: Where, k: usize) -> &mut List {
        match w {
            Where::Inactive => &mut self.inactive[k],
            Where::Active => &mut self.active[k],
            Where::Out => unreachable!("pages out of RAM are on no list"),
        }
    }

    fn unlink(&mut self, p: u32) {
        let (w, k) = (self.on[p as usize], self.kind(p));
        let (pr, nx) = (self.prev[p as usize], self.next[p as usize]);
        if pr != NONE {
            self.next[pr as usize] = nx;
        } else {
            self.list(w, k).head = nx;
        }
        if nx != NONE {
            self.prev[nx as usize] = pr;
        } else {
            self.list(w, k).tail = pr;
        }
        self.list(w, k).len -= 1;
        self.on[p as usize] = Where::Out;
    }

    fn push_head(&mut self, p: u32, w: Where) {
        let k = self.kind(p);
        let head = self.list(w, k).head;
        self.prev[p as usize] = NONE;
        self.next[p as usize] = head;
        if head != NONE {
            self.prev[head as usize] = p;
        }
        let l = self.list(w, k);
        l.head = p;
        if l.tail == NONE {
            l.tail = p;
        }
        l.len += 1;
        self.on[p as usize] = w;
    }

    fn push_tail(&mut self, p: u32, w: Where) {
        let k = self.kind(p);
        let tail = self.list(w, k).tail;
        self.next[p as usize] = NONE;
        self.prev[p as usize] = tail;
        if tail != NONE {
            self.next[tail as usize] = p;
        }
        let l = self.list(w, k);
        l.tail = p;
        if l.head == NONE {
            l.head = p;
        }
        l.len += 1;
        self.on[p as usize] = w;
    }

    /// mm/swap.c `folio_rotate_reclaimable()`, as the writeback of a folio marked
    /// `PG_reclaim` ends: an inactive page moves to the inactive tail, reclaim's next pick; an
    /// active one stays where it is.
    pub(crate) fn rotate_reclaimable(&mut self, page: u32) {
        if self.on[page as usize] != Where::Inactive {
            return;
        }
        self.unlink(page);
        self.push_tail(page, Where::Inactive);
    }

    /// An access to a resident page: the hardware sets its PTE's accessed bit (which reclaim
    /// sees only where the mapping has recency).
    pub(crate) fn touch(&mut self, page: u32) {
        self.accessed[page as usize] = self.kind(page) == ANON || self.file_recency;
    }

    /// Sets whether the file's mapping has recency (the field's doc).
    pub(crate) fn set_file_recency(&mut self, recency: bool) {
        self.file_recency = recency;
    }

    /// A page faulted in (mm/swap.c `folio_add_lru()`): onto the inactive head, accessed; a
    /// swap-in (`refault`) whose refault distance is within the active list goes onto the
    /// active list (`workingset_refault()` sets it active and ages `nonresident_age`).
    pub(crate) fn install(&mut self, page: u32, refault: bool) {
        self.add(page, refault, true);
    }

    /// A page read ahead into the swap cache (`__read_swap_cache_async()`: `workingset_refault()`
    /// then `folio_add_lru()`): as [`Lru::install`], but no PTE maps it, so it is not accessed,
    /// and reclaim takes it at its first scan unless a fault maps and touches it first.
    pub(crate) fn install_unmapped(&mut self, page: u32, refault: bool) {
        self.add(page, refault, false);
    }

    /// Keeps `page` (resident) out of reclaim's scans until unpinned (`None`): a folio
    /// locked by its fault, which `shrink_folio_list()` cannot `folio_trylock()` and puts back
    /// (`keep`) before any reference check.
    pub(crate) fn pin(&mut self, page: Option<u32>) {
        self.pinned = page.unwrap_or(NONE);
    }

    /// Resident pages reclaim may take (all but a pinned one).
    pub(crate) fn evictable(&self) -> usize {
        let pinned = self.pinned != NONE && self.is_resident(self.pinned);
        self.len() - usize::from(pinned)
    }

    fn add(&mut self, page: u32, refault: bool, accessed: bool) {
        let (i, k) = (page as usize, self.kind(page));
        self.accessed[i] = accessed && (k == ANON || self.file_recency);
        self.referenced[i] = false;
        if !refault {
            self.workingset[i] = false;
        }
        let activate = refault && {
            let distance = self.nonresident_age.wrapping_sub(self.shadow[i]);
            distance <= self.workingset_size(k)
        };
        if !activate {
            self.push_head(page, Where::Inactive);
            return;
        }
        self.refault_activations[k] += 1;
        self.nonresident_age += 1;
        if self.workingset[i] {
            // `lru_note_cost_refault()`: a page of io for the refaulting type.
            let lru_size = self.stat_lru_size();
            self.costs.note(k == FILE, 1, 0, lru_size);
        }
        self.push_head(page, Where::Active);
    }

    /// The four lists' pages as `lru_note_cost()` reads them for its decay
    /// (`lruvec_page_state()`).
    pub(crate) fn stat_lru_size(&self) -> u64 {
        let s = self.stats();
        s.inactive.iter().chain(&s.active).sum()
    }

    /// `workingset_test_recent()`'s workingset size for a refault of type `k` (swap not full).
    fn workingset_size(&self, k: usize) -> u64 {
        let s = self.stats();
        if k == FILE {
            s.active[FILE] + s.inactive[ANON] + s.active[ANON]
        } else {
            s.active[FILE] + s.inactive[FILE] + s.active[ANON]
        }
    }

    /// mm/vmscan.c `shrink_active_list()`: moves up to a batch from the active tail to the
    /// inactive head, accessed bits cleared (`folio_referenced()`; only file-backed executable
    /// folios stay active, and the file here is not), `PG_referenced` untouched,
    /// `PG_workingset` set.
    fn deactivate_batch(&mut self, k: usize, n: usize) {
        for _ in 0..n {
            let t = self.active[k].tail;
            if t == NONE {
                break;
            }
            self.unlink(t);
            self.accessed[t as usize] = false;
            self.workingset[t as usize] = true;
            self.push_head(t, Where::Inactive);
        }
    }

    /// One look at the inactive tail, as `shrink_folio_list()` takes a folio: the pinned page
    /// is put back unchecked (`folio_trylock()` failed); an accessed one has its bit cleared and
    /// is activated if `PG_referenced` was set, else marked and rotated
    /// (`folio_check_references()`); one not accessed is the victim, `PG_referenced` cleared.
    pub(crate) fn scan_tail(&mut self, file: bool) -> Scanned {
        let t = self.inactive[usize::from(file)].tail;
        if t == NONE {
            return Scanned::Empty;
        }
        let i = t as usize;
        if t != self.pinned && !self.accessed[i] {
            // `folio_test_clear_referenced()`: FOLIOREF_RECLAIM leaves the flag clear.
            self.referenced[i] = false;
            return Scanned::Victim(t);
        }
        self.unlink(t);
        if t != self.pinned {
            self.accessed[i] = false;
            if std::mem::replace(&mut self.referenced[i], true) {
                self.nonresident_age += 1;
                self.push_head(t, Where::Active);
                return Scanned::Activated(t);
            }
        }
        self.push_head(t, Where::Inactive);
        Scanned::Kept
    }

    /// The four lists' sizes, in `for_each_evictable_lru()` order (`scan::Lists`).
    pub(crate) fn list_sizes(&self) -> super::scan::Lists {
        let [ia, ifl] = self.inactive.map(|l| l.len as u64);
        let [aa, af] = self.active.map(|l| l.len as u64);
        [ia, aa, ifl, af]
    }

    /// `prepare_scan_control()`'s `DEACTIVATE_ANON` (or `_FILE`): refaults of the type were
    /// activated since the last reclaim ended (`snapshot_refaults()`), or its inactive list is
    /// low.
    pub(crate) fn may_deactivate(&self, file: bool) -> bool {
        let k = usize::from(file);
        self.stats().refault_activations[k] != self.refaults_snapshot[k] || self.inactive_is_low(k)
    }

    /// `shrink_active_list()` of `n` pages of one type ([`Lru::deactivate_batch`]).
    pub(crate) fn deactivate(&mut self, file: bool, n: usize) {
        self.deactivate_batch(usize::from(file), n);
    }

    /// mm/vmscan.c `inactive_is_low()` for one type's lists.
    fn inactive_is_low(&self, k: usize) -> bool {
        let s = self.stats();
        let (inactive, active) = (s.inactive[k], s.active[k]);
        let gb = ((inactive + active) * self.page_size as u64) >> 30;
        let ratio = if gb > 0 { (10 * gb).isqrt() } else { 1 };
        inactive * ratio < active
    }

    /// The end of a reclaim pass over the memcg's lists (mm/vmscan.c `shrink_lruvec()`, its
    /// last step: "even if we did not try to evict anon pages at all, we want to rebalance the
    /// anon lru active/inactive ratio"): with swap present (`can_age_anon_pages()`) and the
    /// inactive list low (`inactive_is_low()`), `shrink_active_list(SWAP_CLUSTER_MAX, ...)`
    /// deactivates up to a chunk more, whether or not `may_deactivate` let the pass scan the
    /// active list. 6.18 runs it once per `shrink_lruvec()` call, one per priority a reclaim
    /// goes through, and kswapd once more before each (`kswapd_age_node()`).
    pub(crate) fn end_of_pass(&mut self) {
        if self.inactive_is_low(ANON) {
            self.deactivate_batch(ANON, SWAP_CLUSTER_MAX);
        }
    }

    /// The end of a reclaim (`do_try_to_free_pages()` → `snapshot_refaults()`): later reclaims
    /// deactivate for refaults only if more are activated meanwhile.
    pub(crate) fn snapshot_refaults(&mut self) {
        self.refaults_snapshot = self.stats().refault_activations;
    }

    /// The victim has left RAM; its shadow remembers when.
    pub(crate) fn evict(&mut self, page: u32) {
        self.unlink(page);
        self.shadow[page as usize] = self.nonresident_age;
        self.nonresident_age += 1;
    }

    /// Reclaim could not write the victim out: it is activated, as `shrink_folio_list()`
    /// activates a folio that `swap_writeout()` hands back (`AOP_WRITEPAGE_ACTIVATE` →
    /// `pageout()`'s `PAGE_ACTIVATE` → `activate_locked`), ageing `nonresident_age` when
    /// `move_folios_to_lru()` puts it back.
    pub(crate) fn activate(&mut self, page: u32) {
        self.unlink(page);
        self.nonresident_age += 1;
        self.push_head(page, Where::Active);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_pages::prng::SplitMix64;

    fn walk(l: &Lru, list: &List) -> Vec<u32> {
        let mut v = Vec::new();
        let mut p = list.head;
        while p != NONE {
            v.push(p);
            p = l.next[p as usize];
        }
        v
    }

    /// The next victim as a reclaim pass finds one: inactive tail scans, a chunk deactivated
    /// where the inactive list is low (`end_of_pass`) once it runs dry.
    fn victim(l: &mut Lru) -> u32 {
        loop {
            match l.scan_tail(false) {
                Scanned::Victim(t) => return t,
                Scanned::Empty => l.end_of_pass(),
                Scanned::Kept | Scanned::Activated(_) => {}
            }
        }
    }

    #[test]
    fn an_unaccessed_inactive_page_goes_first() {
        let mut l = Lru::new(4, 8, 4096);
        for p in 0..4 {
            l.install(p, false);
        }
        // Every page carries its fault's access: the first scan clears bits and rotates.
        // Then 0 is accessed again: it is marked referenced on the first pass, so the second
        // access activates it.
        l.touch(0);
        let v = victim(&mut l);
        assert_eq!(v, 0, "all four were accessed once: one rotation each, then the oldest");
        l.touch(0);
        l.touch(1);
        let v = victim(&mut l);
        assert_eq!(v, 2, "0 and 1 were accessed again since their scan");
        assert!(l.is_active(1), "a second access activates");
        // 0's PG_referenced was cleared by the check that chose it (`folio_check_references()`
        // test-and-clears it), so this access only marks it and rotates it again.
        assert!(!l.is_active(0) && l.referenced[0]);
        l.evict(v);
        assert!(!l.is_resident(2));
        assert_eq!(l.len(), 3);
    }

    /// mm/vmscan.c `folio_check_references()` test-and-clears `PG_referenced` on every check:
    /// a page reclaim picks (no PTE access) leaves with the flag clear, so if `swap_writeout()`
    /// hands it back (activated), a later single access after deactivation rotates it again
    /// rather than activating it at once.
    #[test]
    fn a_chosen_victim_has_pg_referenced_cleared() {
        let mut l = Lru::new(1, 1, 4096);
        l.install(0, false);
        // The fault's access: marked referenced and rotated; then, not accessed, chosen.
        assert_eq!(victim(&mut l), 0);
        assert!(!l.referenced[0], "folio_test_clear_referenced() at the check that chose it");
        l.activate(0);
        assert!(l.is_active(0));
    }

    #[test]
    fn the_lists_stay_consistent_under_random_work() {
        let mut rng = SplitMix64::new(3);
        let n = 200;
        let cap = 50;
        let mut l = Lru::new(cap, n, 4096);
        let mut evicted_once = vec![false; n];
        for _ in 0..20_000 {
            let p = rng.below(n as u64) as u32;
            if l.is_resident(p) {
                l.touch(p);
                continue;
            }
            if l.len() == l.capacity() {
                let v = victim(&mut l);
                if rng.below(10) == 0 {
                    l.activate(v);
                    continue;
                }
                l.evict(v);
                evicted_once[v as usize] = true;
            }
            l.install(p, evicted_once[p as usize]);
            assert!(l.len() <= cap);
        }
        let ina = walk(&l, &l.inactive[0]);
        let act = walk(&l, &l.active[0]);
        assert_eq!(ina.len(), l.inactive[0].len);
        assert_eq!(act.len(), l.active[0].len);
        assert!(ina.iter().all(|&p| l.on[p as usize] == Where::Inactive));
        assert!(act.iter().all(|&p| l.on[p as usize] == Where::Active));
        let resident = (0..n as u32).filter(|&p| l.is_resident(p)).count();
        assert_eq!(resident, ina.len() + act.len());
    }

    #[test]
    fn deactivation_keeps_the_inactive_list_from_running_dry() {
        let mut l = Lru::new(64, 64, 4096);
        for p in 0..64 {
            l.install(p, false);
        }
        // Two rounds of accesses activate everything scanned.
        for _ in 0..2 {
            for p in 0..64 {
                l.touch(p);
            }
            for _ in 0..64 {
                let v = victim(&mut l);
                l.touch(v);
            }
        }
        let v = victim(&mut l);
        assert!(l.is_resident(v));
        assert!(l.inactive[0].len > 0);
    }

    /// An LRU of `inactive` then `active` resident pages, put straight on their lists.
    fn lists(inactive: u32, active: u32) -> Lru {
        let n = (inactive + active) as usize;
        let mut l = Lru::new(n, n + 8, 4096);
        for p in 0..inactive {
            l.push_head(p, Where::Inactive);
        }
        for p in inactive..inactive + active {
            l.push_head(p, Where::Active);
        }
        l
    }

    /// `prepare_scan_control()`: with the inactive list not low, the active list may be
    /// scanned only after refaults were activated since the last reclaim (`snapshot_refaults()`);
    /// a low inactive list (ratio 1 below 1 GiB) may be refilled with no refaults.
    #[test]
    fn refault_activations_since_the_last_reclaim_deactivate() {
        let mut l = lists(64, 20);
        assert!(!l.may_deactivate(false), "no refaults, inactive not low");
        // Page 0 is evicted and faults straight back: refault distance 0, within the active list.
        l.evict(0);
        l.install(0, true);
        assert!(l.is_active(0));
        assert!(l.may_deactivate(false), "a refault was activated since the snapshot");
        assert!(!l.may_deactivate(true), "an anon refault says nothing of the file lists");
        l.snapshot_refaults();
        assert!(!l.may_deactivate(false), "the snapshot caught up");
        assert!(lists(40, 100).may_deactivate(false), "40 inactive against 100: low");
        assert!(!lists(50, 50).may_deactivate(false), "equal lists are not low");
    }

    /// `shrink_lruvec()`'s last step: a low inactive list gets a chunk from the active list at
    /// the end of every pass, with no refaults (`may_deactivate` unset) and on top of what the
    /// pass deactivated; a list that is not low gets nothing.
    #[test]
    fn the_end_of_a_pass_deactivates_a_chunk_when_the_inactive_list_is_low() {
        let mut l = lists(20, 100);
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (52, 68));
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (84, 36), "52 against 68: still low");
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (84, 36), "84 against 36: not low");
        let mut l = lists(10, 20);
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (30, 0), "at most the whole active list");
    }

    /// With stale statistics the end of a pass judges the lists by the last flush: a snapshot
    /// taken while the inactive list was long keeps it from deactivating after the list has
    /// run low, until the next flush; a new memcg's empty snapshot, until the first.
    #[test]
    fn stale_statistics_judge_the_lists_as_they_were_at_the_flush() {
        let mut l = lists(100, 20);
        l.stale_stats();
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (100, 20), "empty: nothing is low");
        l.flush_stats();
        for _ in 0..90 {
            let t = l.inactive[0].tail;
            l.unlink(t);
            l.push_head(t, Where::Active);
        }
        assert!(!l.may_deactivate(false), "10 inactive against 110 active, read as 100 and 20");
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (10, 110));
        l.flush_stats();
        assert!(l.may_deactivate(false));
        l.end_of_pass();
        assert_eq!((l.inactive[0].len, l.active[0].len), (42, 78));
    }

    /// The ratio grows with the lists (`int_sqrt(10 * GiB)`): 1 below a GiB, 3 from 1 GiB.
    #[test]
    fn the_inactive_ratio_follows_the_kernel() {
        let mut l = Lru::new(0, 0, 4096);
        l.inactive[0].len = 100_000;
        l.active[0].len = 200_000; // 1.14 GiB of 4 KiB pages: ratio int_sqrt(10) = 3
        assert!(!l.inactive_is_low(ANON), "100k * 3 >= 200k");
        l.active[0].len = 300_001;
        assert!(l.inactive_is_low(ANON));
        l.inactive[0].len = 1000;
        l.active[0].len = 1001; // 7.8 MiB: ratio 1
        assert!(l.inactive_is_low(ANON));
        l.active[0].len = 1000;
        assert!(!l.inactive_is_low(ANON));
    }

    /// `workingset_test_recent()`: a file refault counts the anon lists in its workingset
    /// (swap not full), an anon refault the file lists; a refault of a page that had
    /// `PG_workingset` (deactivated once) costs its type a page of io.
    #[test]
    fn a_refault_is_judged_against_the_other_types_lists_too() {
        // Pages 0..4 anon, 4..8 file; all four anon active, nothing else resident.
        let mut l = Lru::with_file(8, 4, 4, 4096);
        for p in 0..4 {
            l.push_head(p, Where::Active);
        }
        l.push_head(4, Where::Inactive);
        // File page 4 evicted, then 3 more evictions age `nonresident_age` by 3: distance 3.
        l.evict(4);
        l.nonresident_age += 2;
        l.install(4, true);
        assert!(l.is_active(4), "distance 3 <= 4 active anon pages");
        assert_eq!(l.refault_activations, [0, 1]);
        assert_eq!(l.costs, super::super::scan::Costs::default(), "no PG_workingset: no cost");
        // Deactivated (PG_workingset set), evicted, back at once: recent, and it costs.
        l.deactivate(true, 1);
        assert!(!l.is_active(4) && l.workingset[4]);
        l.evict(4);
        l.install(4, true);
        assert!(l.is_active(4));
        // 32 is more than a quarter of the 4 pages on the lists: halved at once.
        assert_eq!(l.costs.file, SWAP_CLUSTER_MAX as u64 / 2);
        // An anon refault's workingset is active anon and the file lists: with the anon lists
        // emptied, page 0 at distance 2 is not recent against 1 active file page.
        for p in 1..4 {
            l.evict(p);
        }
        l.evict(0);
        l.nonresident_age += 1;
        l.install(0, true);
        assert!(!l.is_active(0), "distance 2 > 1 active file + 0 inactive file + 0 active anon");
    }

    /// `folio_rotate_reclaimable()`: an inactive page goes to the tail, so the next scan takes
    /// it before pages that were older; an active page is left alone.
    #[test]
    fn a_rotated_page_is_the_next_victim() {
        let mut l = lists(3, 1);
        // Inactive head to tail: 2, 1, 0; active: 3.
        assert_eq!(walk(&l, &l.inactive[0]), vec![2, 1, 0]);
        l.rotate_reclaimable(2);
        assert_eq!(walk(&l, &l.inactive[0]), vec![1, 0, 2]);
        assert_eq!(l.scan_tail(false), Scanned::Victim(2));
        l.rotate_reclaimable(3);
        assert!(l.is_active(3));
        assert_eq!((l.inactive[0].len, l.active[0].len), (3, 1));
    }

    /// `vma_has_recency()` false: a file page's accesses are not seen, so it is the victim at
    /// its first scan however often it was read; an anon page beside it is rotated.
    #[test]
    fn without_recency_a_file_page_goes_at_its_first_scan() {
        let mut l = Lru::with_file(2, 1, 1, 4096);
        l.set_file_recency(false);
        l.install(1, false);
        l.touch(1);
        assert_eq!(l.scan_tail(true), Scanned::Victim(1));
        l.install(0, false);
        assert_eq!(l.scan_tail(false), Scanned::Kept, "the anon page's fault access is seen");
        l.set_file_recency(true);
        l.touch(1);
        assert_eq!(l.scan_tail(true), Scanned::Kept, "with recency the access is seen");
    }
}
