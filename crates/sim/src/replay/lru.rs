//! RAM as the kernel's two anonymous LRU lists (the classic, non-MGLRU reclaim of Linux 6.18,
//! mm/vmscan.c), with the accessed bit of each page's PTE and the folio's `PG_referenced`:
//!
//! - A faulted-in page (first touch or swap-in) goes to the head of the inactive list with its
//!   accessed bit set (the fault's access): mm/memory.c `do_anonymous_page()` /
//!   `do_swap_page()` → mm/swap.c `folio_add_lru()` (new anonymous folios start inactive since
//!   Linux 5.9). A swap-in goes to the active list instead when mm/workingset.c
//!   `workingset_refault()` finds its refault distance (`nonresident_age` since its eviction:
//!   evictions and activations, `workingset_age_nonresident()`) at most the workingset size,
//!   which for anon with free swap and no file pages (as here) is the active anon list
//!   (`workingset_test_recent()`).
//! - An access to a resident page sets its accessed bit.
//! - Reclaim (`shrink_lruvec()`) scans the inactive tail (`shrink_inactive_list()` →
//!   `shrink_folio_list()` with `folio_check_references()`): `PG_referenced` is tested and
//!   cleared; an accessed page has its bit cleared (`folio_referenced()`) and `PG_referenced`
//!   set, and is activated if the flag was set before, else rotated to the inactive head
//!   (`FOLIOREF_KEEP`); a page not accessed is reclaimed. A folio that `trylock` fails on is
//!   put back without a check. Activations age `nonresident_age` (`move_folios_to_lru()`).
//! - Every [`SWAP_CLUSTER_MAX`] inactive pages scanned, when the inactive list is smaller than
//!   the active one, as many pages move from the active tail to the inactive head with their
//!   bits cleared (`shrink_active_list()`: anonymous pages are deactivated, accessed or not).
//!   6.18 decides that with `inactive_is_low()` (ratio `int_sqrt(10 * GiB)`, 1 below 1 GiB; this
//!   model keeps ratio 1 at every size) and scans both lists in `SWAP_CLUSTER_MAX` chunks sized
//!   by `get_scan_count()`; one active batch per inactive batch is this model's simplification.
//!
//! Lists are index-linked over page ids, so every step is O(1).

/// include/linux/swap.h `SWAP_CLUSTER_MAX`: pages isolated per `shrink_list()` call, and what
/// mm/memcontrol.c `try_charge_memcg()` asks `try_to_free_mem_cgroup_pages()` for at least.
pub(crate) const SWAP_CLUSTER_MAX: usize = 32;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    Out,
    Inactive,
    Active,
}

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
    nonresident_age: u64,
    inactive: List,
    active: List,
    /// Inactive pages scanned since the last rebalance.
    scanned: usize,
    capacity: usize,
    /// A page reclaim must pass over (the faulting page while its fault reads ahead), or NONE.
    pinned: u32,
}

impl Lru {
    /// Room for `capacity` resident pages of a page set of `pages`.
    pub(crate) fn new(capacity: usize, pages: usize) -> Self {
        let empty = List { head: NONE, tail: NONE, len: 0 };
        Self {
            prev: vec![NONE; pages],
            next: vec![NONE; pages],
            on: vec![Where::Out; pages],
            accessed: vec![false; pages],
            referenced: vec![false; pages],
            shadow: vec![0; pages],
            nonresident_age: 0,
            inactive: empty,
            active: empty,
            scanned: 0,
            capacity,
            pinned: NONE,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Resident pages.
    pub(crate) fn len(&self) -> usize {
        self.inactive.len + self.active.len
    }

    pub(crate) fn is_resident(&self, page: u32) -> bool {
        self.on[page as usize] != Where::Out
    }

    /// Whether the page is on the active list.
    #[cfg(test)]
    fn is_active(&self, page: u32) -> bool {
        self.on[page as usize] == Where::Active
    }

    fn list(&mut self, w: Where) -> &mut List {
        match w {
            Where::Inactive => &mut self.inactive,
            Where::Active => &mut self.active,
            Where::Out => unreachable!("pages out of RAM are on no list"),
        }
    }

    fn unlink(&mut self, p: u32) {
        let w = self.on[p as usize];
        let (pr, nx) = (self.prev[p as usize], self.next[p as usize]);
        if pr != NONE {
            self.next[pr as usize] = nx;
        } else {
            self.list(w).head = nx;
        }
        if nx != NONE {
            self.prev[nx as usize] = pr;
        } else {
            self.list(w).tail = pr;
        }
        self.list(w).len -= 1;
        self.on[p as usize] = Where::Out;
    }

    fn push_head(&mut self, p: u32, w: Where) {
        let head = self.list(w).head;
        self.prev[p as usize] = NONE;
        self.next[p as usize] = head;
        if head != NONE {
            self.prev[head as usize] = p;
        }
        let l = self.list(w);
        l.head = p;
        if l.tail == NONE {
            l.tail = p;
        }
        l.len += 1;
        self.on[p as usize] = w;
    }

    /// An access to a resident page: the hardware sets its PTE's accessed bit.
    pub(crate) fn touch(&mut self, page: u32) {
        self.accessed[page as usize] = true;
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

    /// Keeps `page` (resident) out of [`Lru::victim`]'s choice until unpinned (`None`): a folio
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
        let i = page as usize;
        self.accessed[i] = accessed;
        self.referenced[i] = false;
        let activate = refault && {
            let distance = self.nonresident_age.wrapping_sub(self.shadow[i]);
            distance <= self.active.len as u64
        };
        if activate {
            self.nonresident_age += 1;
            self.push_head(page, Where::Active);
        } else {
            self.push_head(page, Where::Inactive);
        }
    }

    /// mm/vmscan.c `shrink_active_list()`: moves up to a batch from the active tail to the
    /// inactive head, accessed bits cleared (`folio_referenced()`; only file-backed executable
    /// folios stay active), `PG_referenced` untouched.
    fn deactivate_batch(&mut self) {
        for _ in 0..SWAP_CLUSTER_MAX {
            let t = self.active.tail;
            if t == NONE {
                break;
            }
            self.unlink(t);
            self.accessed[t as usize] = false;
            self.push_head(t, Where::Inactive);
        }
    }

    /// The next page reclaim evicts (RAM full; at least one page not pinned): scans as
    /// `shrink_folio_list()` does (`folio_check_references()`) until an inactive page not
    /// accessed since the last scan is at the tail; its `PG_referenced` is cleared. The page stays resident
    /// until [`Lru::evict`] (reclaim may fail to write it out and keep it).
    pub(crate) fn victim(&mut self) -> u32 {
        loop {
            if self.scanned >= SWAP_CLUSTER_MAX || self.inactive.len == 0 {
                self.scanned = 0;
                if self.inactive.len < self.active.len {
                    self.deactivate_batch();
                }
            }
            let t = self.inactive.tail;
            assert!(t != NONE, "victim() of an empty RAM");
            self.scanned += 1;
            if t == self.pinned {
                self.unlink(t);
                self.push_head(t, Where::Inactive);
                continue;
            }
            let i = t as usize;
            if !self.accessed[i] {
                // `folio_test_clear_referenced()`: FOLIOREF_RECLAIM leaves the flag clear.
                self.referenced[i] = false;
                return t;
            }
            self.accessed[i] = false;
            self.unlink(t);
            if std::mem::replace(&mut self.referenced[i], true) {
                self.nonresident_age += 1;
                self.push_head(t, Where::Active);
            } else {
                self.push_head(t, Where::Inactive);
            }
        }
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

    #[test]
    fn an_unaccessed_inactive_page_goes_first() {
        let mut l = Lru::new(4, 8);
        for p in 0..4 {
            l.install(p, false);
        }
        // Every page carries its fault's access: the first scan clears bits and rotates.
        // Then 0 is accessed again: it is marked referenced on the first pass, so the second
        // access activates it.
        l.touch(0);
        let v = l.victim();
        assert_eq!(v, 0, "all four were accessed once: one rotation each, then the oldest");
        l.touch(0);
        l.touch(1);
        let v = l.victim();
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
        let mut l = Lru::new(1, 1);
        l.install(0, false);
        // The fault's access: marked referenced and rotated; then, not accessed, chosen.
        assert_eq!(l.victim(), 0);
        assert!(!l.referenced[0], "folio_test_clear_referenced() at the check that chose it");
        l.activate(0);
        assert!(l.is_active(0));
    }

    #[test]
    fn the_lists_stay_consistent_under_random_work() {
        let mut rng = SplitMix64::new(3);
        let n = 200;
        let cap = 50;
        let mut l = Lru::new(cap, n);
        let mut evicted_once = vec![false; n];
        for _ in 0..20_000 {
            let p = rng.below(n as u64) as u32;
            if l.is_resident(p) {
                l.touch(p);
                continue;
            }
            if l.len() == l.capacity() {
                let v = l.victim();
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
        let ina = walk(&l, &l.inactive);
        let act = walk(&l, &l.active);
        assert_eq!(ina.len(), l.inactive.len);
        assert_eq!(act.len(), l.active.len);
        assert!(ina.iter().all(|&p| l.on[p as usize] == Where::Inactive));
        assert!(act.iter().all(|&p| l.on[p as usize] == Where::Active));
        let resident = (0..n as u32).filter(|&p| l.is_resident(p)).count();
        assert_eq!(resident, ina.len() + act.len());
    }

    #[test]
    fn deactivation_keeps_the_inactive_list_from_running_dry() {
        let mut l = Lru::new(64, 64);
        for p in 0..64 {
            l.install(p, false);
        }
        // Two rounds of accesses activate everything scanned.
        for _ in 0..2 {
            for p in 0..64 {
                l.touch(p);
            }
            for _ in 0..64 {
                let v = l.victim();
                l.touch(v);
            }
        }
        let v = l.victim();
        assert!(l.is_resident(v));
        assert!(l.inactive.len > 0);
    }
}
