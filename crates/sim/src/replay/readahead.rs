//! Swap readahead as Linux 6.18 does it on a swap-in fault: which pages around the faulting one
//! are read into the swap cache with it, and the adaptive window that decides how many.
//! Described and re-implemented from the 6.18.35 sources (no kernel code is copied):
//!
//! - `do_swap_page()` (mm/memory.c): a fault on a swap entry first looks the entry up in the swap
//!   cache (`swap_cache_get_folio()`, mm/swap_state.c) and, when found, calls
//!   `swap_update_readahead()`. When not found, a device with `SWP_SYNCHRONOUS_IO` (zram: the
//!   flag is set in `SYSCALL_DEFINE2(swapon)`, mm/swapfile.c, for a `bdev_synchronous()` device)
//!   whose entry has a swap count of 1 (`__swap_count(entry) == 1`) skips the swap cache and
//!   readahead: only the faulting page is read. Every other fault calls `swapin_readahead()`.
//! - `swapin_readahead()` (mm/swap_state.c): `swap_vma_readahead()` when
//!   `swap_use_vma_readahead()` (`/sys/kernel/mm/swap/vma_ra_enabled`, true by default, and no
//!   rotational swap area active: `nr_rotate_swap`), else `swap_cluster_readahead()`.
//! - Both loop over a window of entries in ascending order and call
//!   `__read_swap_cache_async()` for each: an entry already in the swap cache is left as it is,
//!   an entry no longer in use is skipped (`swap_entry_swapped()`), any other gets a new folio,
//!   charged to the memcg, given its shadow's `workingset_refault()`, put on the LRU
//!   (`folio_add_lru()`) and read (`swap_read_folio()`, mm/page_io.c: the zeromap, else
//!   `zswap_load()`, else the device). A folio allocated for an entry other than the faulting
//!   one gets `PG_readahead` and counts one `SWAP_RA` (`swap_ra` in /proc/vmstat).
//! - `swap_update_readahead()` (mm/swap_state.c): a swap-cache hit clears `PG_readahead`
//!   (`folio_test_clear_readahead()`); if it was set it counts one `SWAP_RA_HIT`
//!   (`swap_ra_hit`) and, for cluster readahead, adds one to the global
//!   `swapin_readahead_hits`; for VMA readahead it stores the VMA's hits (plus one if it was a
//!   read-ahead page, capped at `SWAP_RA_HITS_MAX`) with the fault address and the old window
//!   in `vma->swap_readahead_info`.
//! - The window: `__swapin_nr_pages()` ([`swapin_nr_pages`]), fed by `swapin_nr_pages()` (global
//!   state, [`ClusterRa`]) or `swap_vma_ra_win()` (per-VMA state, [`VmaRa`]).
//! - `vm.page-cluster` (`page_cluster`, mm/swap.c: `swap_setup()` sets 3, or 2 below 16 MiB of
//!   RAM) caps the window at `1 << page_cluster` pages; VMA readahead also at
//!   `1 << SWAP_RA_ORDER_CEILING` (32). 0 turns readahead off.
//!
//! The replay's address space is one VMA over the whole page set: page id `i` is the virtual
//! page `VMA_BASE_PAGE + i`, the VMA starting on a PMD boundary (so PMD boundaries fall every
//! `page_size / 8` page ids, 512 with 4 KiB pages). Cluster readahead works in swap offsets:
//! each swapped page's slot, which the slot allocator ([`super::slots`], mm/swapfile.c
//! `cluster_alloc_swap_entry()`) handed out in reclaim order, so a fault reads the pages
//! reclaim wrote next to it. VMA readahead, the default, depends only on addresses.

use std::ops::Range;
use std::str::FromStr;

use serde::Serialize;

/// `SWAP_RA_ORDER_CEILING` (mm/swap_state.c): VMA readahead's window is at most `1 << 5` pages.
pub const SWAP_RA_ORDER_CEILING: u32 = 5;

/// `swap_setup()` (mm/swap.c): `vm.page-cluster` on a machine with 16 MiB of RAM or more.
pub const DEFAULT_PAGE_CLUSTER: u32 = 3;

/// The largest `vm.page-cluster` the sysctl takes (`page_cluster_max`, mm/swap.c).
pub const PAGE_CLUSTER_MAX: u32 = 31;

/// The replay's VMA starts at this virtual page (1 GiB with 4 KiB pages): PMD-aligned for any
/// page size whose page table holds a power of two of entries up to 2^18, and never 0, so the
/// VMA's readahead state is never confused with "no state yet" (`GET_SWAP_RA_VAL()`'s `?: 4`).
pub const VMA_BASE_PAGE: u64 = 1 << 18;

/// Which readahead a swap-in fault does (`swapin_readahead()`, mm/swap_state.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Readahead {
    /// `swap_vma_readahead()`: the pages around the fault's address in its VMA and PMD
    /// (`/sys/kernel/mm/swap/vma_ra_enabled` true, no rotational swap area).
    Vma,
    /// `swap_cluster_readahead()`: an aligned block of swap offsets around the entry.
    Cluster,
    /// Only the faulting page (the kernel's `vm.page-cluster=0`).
    None,
}

impl FromStr for Readahead {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "vma" => Ok(Self::Vma),
            "cluster" => Ok(Self::Cluster),
            "none" => Ok(Self::None),
            _ => Err(format!("unknown readahead {s:?} (vma, cluster or none)")),
        }
    }
}

impl std::fmt::Display for Readahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Vma => "vma",
            Self::Cluster => "cluster",
            Self::None => "none",
        })
    }
}

/// `__swapin_nr_pages()` (mm/swap_state.c): the readahead window in pages, from the offset (or
/// virtual page) of the previous fault that had no hits to judge by, this fault's, the
/// read-ahead hits since the last window, the cap, and the previous window.
///
/// `hits + 2` pages, rounded up to a power of two of at least 4; with no hits, 2 pages when
/// this fault is next to the previous one (either side), else 1. Then at most `max_pages`, and
/// at least half the previous window (it does not shrink faster than by half).
pub fn swapin_nr_pages(
    prev_offset: u64,
    offset: u64,
    hits: u32,
    max_pages: u32,
    prev_win: u32,
) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        // The kernel's unsigned arithmetic: prev_offset - 1 wraps at 0.
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    pages.max(prev_win / 2)
}

/// `swapin_nr_pages()` and `swap_cluster_readahead()`'s state (mm/swap_state.c): global to the
/// kernel (one per replay here): `swapin_readahead_hits` (starts at 4), `prev_offset`,
/// `last_readahead_pages`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRa {
    pub hits: u32,
    pub prev_offset: u64,
    pub last_pages: u32,
}

impl Default for ClusterRa {
    fn default() -> Self {
        Self { hits: 4, prev_offset: 0, last_pages: 0 }
    }
}

impl ClusterRa {
    /// `swapin_nr_pages(offset)`: the window for a fault at swap offset `offset`. A window of
    /// one page (`page_cluster` 0) leaves the state as it is; otherwise the hits are taken
    /// (reset to 0), `prev_offset` moves to `offset` only when there were none, and the window
    /// is remembered.
    pub fn nr_pages(&mut self, offset: u64, page_cluster: u32) -> u32 {
        let max_pages = 1u32 << page_cluster.min(PAGE_CLUSTER_MAX);
        if max_pages <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.hits);
        let pages = swapin_nr_pages(self.prev_offset, offset, hits, max_pages, self.last_pages);
        if hits == 0 {
            self.prev_offset = offset;
        }
        self.last_pages = pages;
        pages
    }

    /// `swap_cluster_readahead()`'s offsets for a fault at `offset` in a swap area of `max`
    /// offsets (`si->max`), inclusive: the block of `nr` (a power of two) aligned offsets
    /// holding `offset` (`mask = nr - 1`: `offset & !mask ..= offset | mask`), without offset 0
    /// (the swap header) and at most `max - 1`. `None` for a window of one page: only the
    /// faulting entry is read.
    pub fn window(offset: u64, nr: u32, max: u64) -> Option<(u64, u64)> {
        let mask = u64::from(nr) - 1;
        if mask == 0 {
            return None;
        }
        let start = (offset & !mask).max(1);
        let end = (offset | mask).min(max.saturating_sub(1));
        Some((start, end))
    }

    /// `swap_update_readahead()` without a VMA state: a hit on a read-ahead page.
    pub fn hit(&mut self) {
        self.hits += 1;
    }
}

/// `vma->swap_readahead_info` (mm/swap_state.c `SWAP_RA_VAL()`): the address of the last fault
/// (here a virtual page), the window and the read-ahead hits since, packed into one word in the
/// kernel; a VMA that never had it set reads as hits 4, window 0, address 0
/// (`GET_SWAP_RA_VAL()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmaRa {
    /// `(virtual page, window, hits)`; `None` until first set.
    info: Option<(u64, u32, u32)>,
    /// `SWAP_RA_HITS_MAX`: `(1 << (PAGE_SHIFT / 2)) - 1`, 63 with 4 KiB pages.
    hits_max: u32,
}

impl VmaRa {
    /// A VMA's fresh state, for pages of `page_size` bytes.
    pub fn new(page_size: usize) -> Self {
        let page_shift = page_size.max(2).trailing_zeros();
        Self { info: None, hits_max: (1u32 << (page_shift / 2)) - 1 }
    }

    fn get(&self) -> (u64, u32, u32) {
        self.info.unwrap_or((0, 0, 4))
    }

    /// `swap_vma_ra_win()`: the window for a fault at virtual page `fpage` of the VMA
    /// `vm_start..vm_end` (virtual pages) with page tables of `ptrs_per_pte` entries (a PMD
    /// covers that many pages), as the half-open range of virtual pages to read. A cap of one
    /// page (`page_cluster` 0) returns only the faulting page and leaves the state; otherwise the
    /// new state is the fault's page, the window and no hits, stored before the window is
    /// looked at. A sequential fault (the page after the last one) reads forward from it, a
    /// fault on the page before the last one reads backward, any other centres the window
    /// (`(win - 1) / 2` pages before). The window stays inside the VMA and the fault's PMD.
    pub fn window(
        &mut self,
        fpage: u64,
        page_cluster: u32,
        vm: Range<u64>,
        ptrs_per_pte: u64,
    ) -> Range<u64> {
        let max_win = 1u32 << page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return fpage..fpage + 1;
        }
        let (prev, prev_win, hits) = self.get();
        let win = swapin_nr_pages(prev, fpage, hits, max_win, prev_win);
        self.info = Some((fpage, win, 0));
        if win == 1 {
            return fpage..fpage + 1;
        }
        let w = i128::from(win);
        let f = i128::from(fpage);
        let left = if fpage == prev.wrapping_add(1) {
            f
        } else if prev == fpage.wrapping_add(1) {
            f - w + 1
        } else {
            f - (w - 1) / 2
        };
        let right = left + w;
        let left = left.max(0);
        let pmd = fpage & !(ptrs_per_pte - 1);
        let start = (left as u64).max(vm.start).max(pmd);
        let end = (right as u64).min(vm.end).min(pmd + ptrs_per_pte);
        start..end
    }

    /// `swap_update_readahead()` with this VMA: a swap-cache hit at virtual page `page`; the
    /// hits grow by one when the folio had `PG_readahead` (capped at `SWAP_RA_HITS_MAX`), the
    /// window stays and the address becomes `page`.
    pub fn hit(&mut self, page: u64, readahead: bool) {
        let (_, win, mut hits) = self.get();
        if readahead {
            hits = (hits + 1).min(self.hits_max);
        }
        self.info = Some((page, win, hits));
    }
}

/// The pages a swap-in fault reads into the swap cache: a range of page ids (VMA readahead,
/// or none) or of swap offsets (cluster readahead), ascending, the faulting page's among them.
/// The caller skips what `__read_swap_cache_async()` would: pages not in swap, slots free or
/// already in the swap cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RaWindow {
    Pages(Range<u64>),
    Slots(Range<u64>),
}

/// One replay's readahead: the mode, `vm.page-cluster`, the kernel's state for the mode, and the
/// replay's VMA and swap area (see the module doc).
#[derive(Debug, Clone)]
pub struct SwapRa {
    mode: Readahead,
    page_cluster: u32,
    cluster: ClusterRa,
    vma: VmaRa,
    pages: u64,
    /// `si->max` of the swap area.
    area: u64,
    ptrs_per_pte: u64,
}

impl SwapRa {
    /// Readahead `mode` with `vm.page-cluster` = `page_cluster` over a page set of `pages` pages
    /// of `page_size` bytes, swapped to an area of `area` slots (the header's included).
    pub fn new(
        mode: Readahead,
        page_cluster: u32,
        pages: u64,
        area: u64,
        page_size: usize,
    ) -> Self {
        Self {
            mode,
            page_cluster,
            cluster: ClusterRa::default(),
            vma: VmaRa::new(page_size),
            pages,
            area,
            ptrs_per_pte: (page_size as u64 / 8).next_power_of_two().max(1),
        }
    }

    /// Whether a swap-in fault may read more than its own page.
    pub fn reads_ahead(&self) -> bool {
        self.mode != Readahead::None && self.page_cluster > 0
    }

    /// The window of `swap_vma_readahead()` or `swap_cluster_readahead()` for a swap-in fault
    /// on `page`, whose slot is `slot`. Updates the mode's window state.
    pub fn window(&mut self, page: u64, slot: u64) -> RaWindow {
        match self.mode {
            Readahead::None => RaWindow::Pages(page..page + 1),
            Readahead::Vma => {
                let vm = VMA_BASE_PAGE..VMA_BASE_PAGE + self.pages;
                let r =
                    self.vma.window(VMA_BASE_PAGE + page, self.page_cluster, vm, self.ptrs_per_pte);
                RaWindow::Pages(r.start - VMA_BASE_PAGE..r.end - VMA_BASE_PAGE)
            }
            Readahead::Cluster => {
                let nr = self.cluster.nr_pages(slot, self.page_cluster);
                match ClusterRa::window(slot, nr, self.area) {
                    Some((start, end)) => RaWindow::Slots(start..end + 1),
                    None => RaWindow::Slots(slot..slot + 1),
                }
            }
        }
    }

    /// `swap_update_readahead()`: a fault found `page` in the swap cache; `readahead` is
    /// whether the folio still had `PG_readahead`.
    pub fn cache_hit(&mut self, page: u64, readahead: bool) {
        match self.mode {
            Readahead::Vma => self.vma.hit(VMA_BASE_PAGE + page, readahead),
            Readahead::Cluster if readahead => self.cluster.hit(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `__swapin_nr_pages()` by hand from its rules (mm/swap_state.c, 6.18).
    #[test]
    fn the_window_follows_the_kernels_rules() {
        // No hits, not adjacent: 1 page; adjacent either side: 2.
        assert_eq!(swapin_nr_pages(100, 200, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(100, 101, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(100, 99, 0, 8, 0), 2);
        // prev_offset 0: offset 1 is adjacent, and 0 - 1 wraps (u64::MAX is "adjacent").
        assert_eq!(swapin_nr_pages(0, 1, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(0, u64::MAX, 0, 8, 0), 2);
        // hits + 2, rounded up to a power of two of at least 4: 1 -> 3 -> 4, 2 -> 4, 3 -> 5 -> 8,
        // 6 -> 8 -> 8, 7 -> 9 -> 16.
        assert_eq!(swapin_nr_pages(0, 500, 1, 64, 0), 4);
        assert_eq!(swapin_nr_pages(0, 500, 2, 64, 0), 4);
        assert_eq!(swapin_nr_pages(0, 500, 3, 64, 0), 8);
        assert_eq!(swapin_nr_pages(0, 500, 6, 64, 0), 8);
        assert_eq!(swapin_nr_pages(0, 500, 7, 64, 0), 16);
        // The initial 4 hits: 6 -> 8.
        assert_eq!(swapin_nr_pages(0, 500, 4, 64, 0), 8);
        // Capped at max_pages (page_cluster 3: 8) ...
        assert_eq!(swapin_nr_pages(0, 500, 30, 8, 0), 8);
        // ... but never below half the previous window, even above the cap.
        assert_eq!(swapin_nr_pages(100, 200, 0, 8, 8), 4);
        assert_eq!(swapin_nr_pages(100, 200, 0, 8, 4), 2);
        assert_eq!(swapin_nr_pages(100, 200, 0, 8, 3), 1);
        assert_eq!(swapin_nr_pages(100, 200, 0, 4, 32), 16);
    }

    /// `swapin_nr_pages()`'s global state: hits are taken, `prev_offset` moves only when there
    /// were none, and a window halves at most per fault.
    #[test]
    fn cluster_state_takes_hits_and_halves_slowly() {
        let mut c = ClusterRa::default();
        // The initial 4 hits: 8 pages; prev_offset stays 0 (there were hits).
        assert_eq!(c.nr_pages(1000, 3), 8);
        assert_eq!(c, ClusterRa { hits: 0, prev_offset: 0, last_pages: 8 });
        // No hits, not adjacent to 0: 1, but at least 8 / 2.
        assert_eq!(c.nr_pages(2000, 3), 4);
        assert_eq!(c.prev_offset, 2000);
        assert_eq!(c.nr_pages(5000, 3), 2);
        // Adjacent: 2, at least 2 / 2.
        assert_eq!(c.nr_pages(5001, 3), 2);
        assert_eq!(c.nr_pages(9000, 3), 1);
        // Three hits: 5 -> 8.
        c.hit();
        c.hit();
        c.hit();
        assert_eq!(c.nr_pages(9100, 3), 8);
        assert_eq!(c.prev_offset, 9000, "a fault with hits does not move prev_offset");
        // page_cluster 0: one page, the state untouched.
        let before = c.clone();
        assert_eq!(c.nr_pages(1, 0), 1);
        assert_eq!(c, before);
    }

    /// `swap_cluster_readahead()`'s aligned block: `offset & ~mask ..= offset | mask`, without
    /// the header at 0 and inside the area.
    #[test]
    fn the_cluster_block_is_aligned_around_the_offset() {
        assert_eq!(ClusterRa::window(13, 8, 1000), Some((8, 15)));
        assert_eq!(ClusterRa::window(16, 8, 1000), Some((16, 23)));
        assert_eq!(ClusterRa::window(5, 8, 1000), Some((1, 7)), "offset 0 is the header");
        assert_eq!(ClusterRa::window(998, 8, 1000), Some((992, 999)), "si->max - 1 at most");
        assert_eq!(ClusterRa::window(13, 4, 1000), Some((12, 15)));
        assert_eq!(ClusterRa::window(13, 1, 1000), None);
    }

    /// `swap_vma_ra_win()` by hand: page_cluster 3 (max 8), a PMD of 512 pages.
    #[test]
    fn the_vma_window_follows_the_fault_direction_inside_vma_and_pmd() {
        let vm = 1024..4096;
        let mut v = VmaRa::new(4096);
        // First fault: hits 4 (no state) -> 8 pages, centred: 3 before.
        assert_eq!(v.window(2000, 3, vm.clone(), 512), 1997..2005);
        assert_eq!(v.info, Some((2000, 8, 0)));
        // Next page, no hits: adjacent -> 2, at least 8 / 2 = 4; sequential: forward from it.
        assert_eq!(v.window(2001, 3, vm.clone(), 512), 2001..2005);
        // The page before the last: 2, at least 2; backward: 2000 - 2 + 1 = 1999 ..
        assert_eq!(v.window(2000, 3, vm.clone(), 512), 1999..2001);
        // Two read-ahead hits: 4 pages; far away: centred, (4 - 1) / 2 = 1 before.
        v.hit(1999, true);
        v.hit(2005, true);
        assert_eq!(v.info, Some((2005, 2, 2)));
        assert_eq!(v.window(3000, 3, vm.clone(), 512), 2999..3003);
        // A hit without PG_readahead only moves the address.
        v.hit(3001, false);
        assert_eq!(v.info, Some((3001, 4, 0)));
        // Clipped to the fault's PMD (2048 = 4 * 512): centred, the window would be 2045..2053.
        let mut v = VmaRa::new(4096);
        assert_eq!(v.window(2048, 3, vm.clone(), 512), 2048..2053);
        // ... and at its end: 2044..2052 becomes 2044..2048.
        let mut v = VmaRa::new(4096);
        assert_eq!(v.window(2047, 3, vm.clone(), 512), 2044..2048);
        // Clipped to the VMA's end.
        let mut v = VmaRa::new(4096);
        assert_eq!(v.window(4094, 3, vm.clone(), 512), 4091..4096);
        // Capped at 1 << SWAP_RA_ORDER_CEILING even with a larger page_cluster: 63 hits -> 65
        // -> 128 -> 32.
        let mut v = VmaRa::new(4096);
        for p in 0..70 {
            v.hit(1500 + p, true);
        }
        assert_eq!(v.info.unwrap().2, 63, "hits stop at SWAP_RA_HITS_MAX");
        let r = v.window(3500, 8, vm.clone(), 512);
        assert_eq!(r, 3500 - 15..3500 + 17);
        // page_cluster 0: only the fault, state untouched.
        let before = v.clone();
        assert_eq!(v.window(3600, 0, vm, 512), 3600..3601);
        assert_eq!(v, before);
    }

    #[test]
    fn the_replays_vma_windows_are_in_page_ids_and_cluster_windows_in_slots() {
        // VMA: first fault at page 100 of 1000: 8 pages, 3 before; the slot does not matter.
        let mut r = SwapRa::new(Readahead::Vma, 3, 1000, 2024, 4096);
        assert_eq!(r.window(100, 7), RaWindow::Pages(97..105));
        // Page 0's window cannot start before the VMA.
        let mut r = SwapRa::new(Readahead::Vma, 3, 1000, 2024, 4096);
        assert_eq!(r.window(0, 7), RaWindow::Pages(0..5));
        // Cluster: the page's slot 101 (whatever its id): block 96..=103.
        let mut r = SwapRa::new(Readahead::Cluster, 3, 1000, 2024, 4096);
        assert_eq!(r.window(5, 101), RaWindow::Slots(96..104));
        // Slot 1: block 0..=7 without the header; the area's last slot is si->max - 1.
        let mut r = SwapRa::new(Readahead::Cluster, 3, 1000, 2024, 4096);
        assert_eq!(r.window(0, 1), RaWindow::Slots(1..8));
        let mut r = SwapRa::new(Readahead::Cluster, 3, 1000, 2024, 4096);
        assert_eq!(r.window(0, 2022), RaWindow::Slots(2016..2024));
        for mode in [Readahead::Vma, Readahead::Cluster, Readahead::None] {
            let mut r = SwapRa::new(mode, 0, 1000, 2024, 4096);
            assert!(!r.reads_ahead());
            let w = r.window(100, 100);
            assert!(w == RaWindow::Pages(100..101) || w == RaWindow::Slots(100..101), "{w:?}");
        }
    }
}
