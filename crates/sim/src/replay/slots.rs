//! Swap slots as Linux 6.18 hands them out to single pages (mm/swapfile.c, order 0): which
//! offset of the swap area a swap-out gets. It decides which pages lie next to each other in
//! the area, and so what cluster readahead (`swap_cluster_readahead()`, [`super::readahead`])
//! reads with a faulting page.
//!
//! The area is cut into clusters of `SWAPFILE_CLUSTER` slots (mm/swap.h: `HPAGE_PMD_NR`, 512
//! with 4 KiB pages, under `CONFIG_THP_SWAP`). Each cluster is on one list, in the order it
//! was put there: free, nonfull, frag or full (`move_cluster()` adds at the tail). The rules,
//! each from its function:
//! - `setup_clusters()`: slot 0 (the header) and the slots past the area's end in its last
//!   cluster are taken; clusters holding one go on the nonfull list, the others on the free
//!   list, in address order.
//! - `cluster_alloc_swap_entry()`: first the cluster of `global_cluster->next` (the slot after
//!   the last one handed out; a rotational area's, and on one CPU a solid-state area's
//!   per-CPU `percpu_swap_cluster.offset` is the same), if `cluster_is_usable()` (not full, and
//!   its table not freed: a cluster that emptied is not usable until taken from the free list
//!   again). Else the first cluster of the nonfull list (every one of them, until one gives a
//!   slot), then of the free list; then, where `vm_swap_full()`,
//!   `swap_reclaim_full_clusters()` on one full cluster; then the first of the frag list.
//!   Discard (`SWP_PAGE_DISCARD`, swapon's `--discard`) is not modelled: zmem's swap files are
//!   made without it.
//! - `alloc_swap_scan_cluster()`: the first free slot from the offset to the cluster's end; a
//!   slot held only by the swap cache (`SWAP_HAS_CACHE`: a page swapped in whose slot was kept)
//!   is taken back when `vm_swap_full()` (`cluster_scan_range()`, `cluster_reclaim_range()`,
//!   `__try_to_reclaim_swap()` with `TTRS_ANYWAY`: the page leaves the swap cache, dirty). The
//!   next offset is remembered while the cluster has room; the cluster then goes to the frag
//!   list, or the full list when full (`relocate_cluster()`).
//! - `swap_entries_free()`: a freed slot moves its cluster to the nonfull list
//!   (`partial_free_cluster()`), or to the free list when it empties (`free_cluster()`).

/// `SWAPFILE_CLUSTER` for pages of `page_size` bytes: a PMD's worth of pages (`HPAGE_PMD_NR`:
/// a page table of 8-byte entries fills one page).
pub fn cluster_slots(page_size: usize) -> u64 {
    (page_size / 8).max(1) as u64
}

/// One slot's `swap_map`, as far as allocation cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Free,
    /// A swap count (a page table or the header holds it).
    Used,
    /// `SWAP_HAS_CACHE` only: a swapped-in page kept its slot (`swap_free_nr()` dropped the
    /// count, `should_try_to_free_swap()` said no).
    CacheOnly,
}

/// `enum swap_cluster_flags`: the list a cluster is on (`None`: off every list, taken by an
/// allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    Free,
    Nonfull,
    Frag,
    Full,
}

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Cluster {
    count: u64,
    list: List,
    /// `cluster_table_is_alloced()`: false once `__free_cluster()` freed it, true again when
    /// `isolate_lock_cluster()` takes it from the free list.
    table: bool,
    prev: u32,
    next: u32,
}

/// 6.18's order-0 slot allocator over one swap area (see the module documentation).
#[derive(Debug, Clone)]
pub struct SwapSlots {
    /// `si->max`: slots, the header's included.
    max: u64,
    per_cluster: u64,
    map: Vec<Slot>,
    clusters: Vec<Cluster>,
    /// Head and tail of each list, indexed by `List as usize - 1`.
    lists: [(u32, u32); 4],
    /// `global_cluster->next[0]`.
    next: Option<u64>,
    /// `total_swap_pages` (this area's usable slots) and the slots taken.
    pages: u64,
    inuse: u64,
}

impl SwapSlots {
    /// A fresh area of `max` slots (the header's included) in clusters of `per_cluster`.
    pub fn new(max: u64, per_cluster: u64) -> Self {
        let per_cluster = per_cluster.max(1);
        let nr_clusters = max.div_ceil(per_cluster).max(1);
        let mut s = Self {
            max,
            per_cluster,
            map: vec![Slot::Free; max as usize],
            clusters: vec![
                Cluster {
                    count: 0,
                    list: List::None,
                    table: false,
                    prev: NIL,
                    next: NIL
                };
                nr_clusters as usize
            ],
            lists: [(NIL, NIL); 4],
            next: None,
            pages: max.saturating_sub(1),
            inuse: 0,
        };
        // The header, and the end of the last cluster past the area.
        if let Some(h) = s.map.first_mut() {
            *h = Slot::Used;
        }
        s.clusters[0].count += 1;
        let tail = nr_clusters * per_cluster - max;
        s.clusters[nr_clusters as usize - 1].count += tail;
        for c in 0..nr_clusters as u32 {
            let cl = &mut s.clusters[c as usize];
            if cl.count > 0 {
                cl.table = true;
                s.push(c, List::Nonfull);
            } else {
                s.push(c, List::Free);
            }
        }
        s
    }

    /// `vm_swap_full()`: fewer than half the area's slots are free.
    pub fn vm_swap_full(&self) -> bool {
        (self.pages - self.inuse) * 2 < self.pages
    }

    /// Slots taken (held by a page table or only by the swap cache).
    pub fn inuse(&self) -> u64 {
        self.inuse
    }

    /// `si->max`.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Whether `slot` is taken.
    pub fn is_used(&self, slot: u64) -> bool {
        self.map.get(slot as usize).is_some_and(|s| *s != Slot::Free)
    }

    /// A slot for one page, or `None` where the area is full. Where a slot is held only by
    /// the swap cache and the area is full enough to take it back, `reclaim(slot)` is asked
    /// to drop the page's claim (it says whether it did); the slot is then freed here.
    pub fn alloc(&mut self, reclaim: &mut dyn FnMut(u64) -> bool) -> Option<u64> {
        if let Some(offset) = self.next {
            let c = (offset / self.per_cluster) as u32;
            if self.usable(c) {
                let offset =
                    if self.clusters[c as usize].count == 0 { self.start(c) } else { offset };
                if let Some(found) = self.scan_cluster(c, offset, reclaim) {
                    return Some(found);
                }
            }
        }
        while let Some(c) = self.isolate(List::Nonfull) {
            if let Some(found) = self.scan_cluster(c, self.start(c), reclaim) {
                return Some(found);
            }
        }
        if let Some(c) = self.isolate(List::Free)
            && let Some(found) = self.scan_cluster(c, self.start(c), reclaim)
        {
            return Some(found);
        }
        if self.vm_swap_full() {
            self.reclaim_full_cluster(reclaim);
        }
        let c = self.isolate(List::Frag)?;
        self.scan_cluster(c, self.start(c), reclaim)
    }

    /// `swap_free_nr()` with the swap cache still holding the slot: the page table's count is
    /// dropped, `SWAP_HAS_CACHE` stays.
    pub fn keep_in_cache(&mut self, slot: u64) {
        if let Some(s) = self.map.get_mut(slot as usize)
            && *s == Slot::Used
        {
            *s = Slot::CacheOnly;
        }
    }

    /// A page's slot is swapped out again (its swap count taken anew).
    pub fn reuse(&mut self, slot: u64) {
        if let Some(s) = self.map.get_mut(slot as usize)
            && *s == Slot::CacheOnly
        {
            *s = Slot::Used;
        }
    }

    /// `swap_entries_free()`: the slot is free again. Freeing a free slot does nothing.
    pub fn free(&mut self, slot: u64) {
        let Some(s) = self.map.get_mut(slot as usize) else { return };
        if *s == Slot::Free || slot == 0 {
            return;
        }
        *s = Slot::Free;
        self.inuse -= 1;
        let c = (slot / self.per_cluster) as u32;
        self.clusters[c as usize].count -= 1;
        if self.clusters[c as usize].count == 0 {
            self.free_cluster(c);
        } else if self.clusters[c as usize].list != List::Nonfull {
            self.move_to(c, List::Nonfull);
        }
    }

    fn start(&self, c: u32) -> u64 {
        u64::from(c) * self.per_cluster
    }

    /// `cluster_is_usable()` for order 0.
    fn usable(&self, c: u32) -> bool {
        let cl = &self.clusters[c as usize];
        cl.list != List::Full && cl.table
    }

    /// `alloc_swap_scan_cluster()` from `offset`.
    fn scan_cluster(
        &mut self,
        c: u32,
        mut offset: u64,
        reclaim: &mut dyn FnMut(u64) -> bool,
    ) -> Option<u64> {
        let start = self.start(c);
        let end = (start + self.per_cluster).min(self.max);
        let mut found = None;
        let mut next = None;
        if end >= 1 && self.clusters[c as usize].count < self.per_cluster {
            let last = end - 1;
            while offset <= last {
                let slot = offset as usize;
                let ok = match self.map[slot] {
                    _ if self.clusters[c as usize].count == 0 => true,
                    Slot::Free => true,
                    Slot::CacheOnly if self.vm_swap_full() => {
                        // `cluster_reclaim_range()`: the page gives the slot back, or not.
                        let freed = reclaim(offset);
                        if freed {
                            self.free(offset);
                        }
                        if !self.usable(c) {
                            break;
                        }
                        if self.clusters[c as usize].count == 0 {
                            offset = start;
                        }
                        if !freed || self.map[offset as usize] != Slot::Free {
                            offset += 1;
                            continue;
                        }
                        true
                    }
                    _ => false,
                };
                if !ok {
                    offset += 1;
                    continue;
                }
                self.map[offset as usize] = Slot::Used;
                self.inuse += 1;
                self.clusters[c as usize].count += 1;
                found = Some(offset);
                if self.clusters[c as usize].count < self.per_cluster && offset < last {
                    next = Some(offset + 1);
                }
                break;
            }
        }
        self.relocate(c);
        self.next = next;
        found
    }

    /// `swap_reclaim_full_clusters(si, false)`: the first full cluster gives back the slots
    /// only the swap cache holds.
    fn reclaim_full_cluster(&mut self, reclaim: &mut dyn FnMut(u64) -> bool) {
        let Some(c) = self.isolate(List::Full) else { return };
        let start = self.start(c);
        let end = (start + self.per_cluster).min(self.max);
        for slot in start..end {
            if self.map[slot as usize] == Slot::CacheOnly && reclaim(slot) {
                self.free(slot);
            }
        }
        if self.clusters[c as usize].list == List::None {
            self.relocate(c);
        }
    }

    /// `relocate_cluster()`.
    fn relocate(&mut self, c: u32) {
        let cl = &self.clusters[c as usize];
        if cl.count == 0 {
            if cl.list != List::Free {
                self.free_cluster(c);
            }
        } else if cl.count != self.per_cluster {
            if cl.list != List::Frag {
                self.move_to(c, List::Frag);
            }
        } else if cl.list != List::Full {
            self.move_to(c, List::Full);
        }
    }

    /// `free_cluster()` (no discard): `__free_cluster()` frees its table.
    fn free_cluster(&mut self, c: u32) {
        self.clusters[c as usize].table = false;
        self.move_to(c, List::Free);
    }

    /// `isolate_lock_cluster()`: the list's first cluster, off every list; one from the free
    /// list gets its table.
    fn isolate(&mut self, list: List) -> Option<u32> {
        let c = self.lists[list as usize - 1].0;
        if c == NIL {
            return None;
        }
        self.unlink(c);
        self.clusters[c as usize].table = true;
        Some(c)
    }

    /// `move_cluster()`: to the tail of `list`.
    fn move_to(&mut self, c: u32, list: List) {
        self.unlink(c);
        self.push(c, list);
    }

    fn push(&mut self, c: u32, list: List) {
        let (head, tail) = self.lists[list as usize - 1];
        {
            let cl = &mut self.clusters[c as usize];
            cl.list = list;
            cl.prev = tail;
            cl.next = NIL;
        }
        if tail == NIL {
            self.lists[list as usize - 1] = (c, c);
        } else {
            self.clusters[tail as usize].next = c;
            self.lists[list as usize - 1] = (head, c);
        }
    }

    fn unlink(&mut self, c: u32) {
        let (list, prev, next) = {
            let cl = &self.clusters[c as usize];
            (cl.list, cl.prev, cl.next)
        };
        if list == List::None {
            return;
        }
        let ends = &mut self.lists[list as usize - 1];
        if prev == NIL {
            ends.0 = next;
        } else {
            self.clusters[prev as usize].next = next;
        }
        let ends = &mut self.lists[list as usize - 1];
        if next == NIL {
            ends.1 = prev;
        } else {
            self.clusters[next as usize].prev = prev;
        }
        let cl = &mut self.clusters[c as usize];
        cl.list = List::None;
        cl.prev = NIL;
        cl.next = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> impl FnMut(u64) -> bool {
        |_| false
    }

    fn take(s: &mut SwapSlots, n: usize) -> Vec<u64> {
        (0..n).map(|_| s.alloc(&mut none()).unwrap()).collect()
    }

    /// A fresh area hands out its slots in order, from 1: cluster 0 holds the header and is
    /// on the nonfull list, so it is first; then the free clusters in address order.
    #[test]
    fn a_fresh_area_hands_out_slots_in_order() {
        let mut s = SwapSlots::new(64, 8);
        assert_eq!(take(&mut s, 20), (1..21).collect::<Vec<_>>());
        assert_eq!(s.inuse(), 20);
        assert!(!s.vm_swap_full());
        // 63 usable; 32 taken leaves 31 free: 31 * 2 < 63.
        take(&mut s, 12);
        assert!(s.vm_swap_full());
    }

    /// Slots freed in a full cluster put it on the nonfull list, which is used before the
    /// next fresh cluster once the current one fills: the holes fill from the cluster's start.
    #[test]
    fn freed_slots_are_reused_before_a_fresh_cluster() {
        let mut s = SwapSlots::new(64, 8);
        let got = take(&mut s, 10); // 1..=10: cluster 0 full (with the header), cluster 1 at 11
        assert_eq!(got.last(), Some(&10));
        s.free(3);
        s.free(5);
        // The current cluster (1) goes on until it is full: 11..=15.
        assert_eq!(take(&mut s, 5), [11, 12, 13, 14, 15]);
        // Then the nonfull cluster 0, from its start: 3, then 5 (next pointer), then cluster 2.
        assert_eq!(take(&mut s, 3), [3, 5, 16]);
    }

    /// A cluster that empties goes to the free list's tail and its table is freed, so the
    /// next pointer into it is not followed: the next fresh cluster in list order comes first.
    #[test]
    fn an_emptied_cluster_goes_to_the_free_lists_tail() {
        let mut s = SwapSlots::new(40, 8); // clusters 0..5; 0 has the header
        let got = take(&mut s, 12); // 1..=12: cluster 0 full, cluster 1 at 8..=12
        assert_eq!(got[11], 12);
        for slot in 8..=12 {
            s.free(slot);
        }
        // Cluster 1 is empty and last on the free list (after 2, 3, 4): the next slot is 16.
        assert_eq!(take(&mut s, 1), [16]);
        assert_eq!(take(&mut s, 8), [17, 18, 19, 20, 21, 22, 23, 24]);
    }

    /// Where the area is more than half full, a slot only the swap cache holds is taken back
    /// as the scan passes it (the page is asked); otherwise it is skipped.
    #[test]
    fn cache_only_slots_are_taken_back_only_when_swap_is_full() {
        let mut s = SwapSlots::new(16, 4); // 15 usable
        let got = take(&mut s, 15);
        assert_eq!(got, (1..16).collect::<Vec<_>>());
        // Free 2 and keep 6 and 7 in the cache: 14 in use, swap full.
        s.free(2);
        s.keep_in_cache(6);
        s.keep_in_cache(7);
        let mut asked = Vec::new();
        let mut yes = |slot: u64| {
            asked.push(slot);
            true
        };
        assert_eq!(s.alloc(&mut yes), Some(2));
        // Cluster 1 (4..8) is full with two cache-only slots: nothing is nonfull, free or frag,
        // so the first full cluster gives back its cache-only slots, which makes it nonfull
        // (not frag, so the frag list is still empty): no slot this time.
        assert_eq!(s.alloc(&mut yes), None);
        assert_eq!(asked, [6, 7]);
        assert_eq!(s.alloc(&mut none()), Some(6));
        // Not full: a cache-only slot is skipped, never asked for.
        let mut s = SwapSlots::new(64, 8);
        take(&mut s, 7);
        s.keep_in_cache(2);
        s.free(3);
        let mut never = |_| panic!("asked while swap is not full");
        assert_eq!(s.alloc(&mut never), Some(3));
    }

    /// A model check: random allocations and frees never hand out a taken slot, never fail
    /// while a usable slot is free, and keep the count.
    #[test]
    fn random_traffic_keeps_the_books() {
        use std::collections::BTreeSet;
        let mut s = SwapSlots::new(1000, 64);
        let mut held = BTreeSet::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if !x.is_multiple_of(3) && (held.len() as u64) < 999 {
                let slot = s.alloc(&mut none()).expect("a free slot exists");
                assert!((1..1000).contains(&slot));
                assert!(held.insert(slot), "slot {slot} handed out twice");
            } else if let Some(&slot) = held.iter().nth((x >> 20) as usize % held.len().max(1)) {
                held.remove(&slot);
                s.free(slot);
            }
            assert_eq!(s.inuse(), held.len() as u64);
        }
    }
}
