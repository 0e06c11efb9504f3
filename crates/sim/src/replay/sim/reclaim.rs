//! Reclaim, priority by priority, as 6.18 runs it for each of its three callers
//! ([`Reclaimer`]): a memcg's charge that finds no margin (mm/memcontrol.c
//! `try_charge_memcg()` → mm/vmscan.c `try_to_free_mem_cgroup_pages()`), an allocation under
//! the min watermark (mm/page_alloc.c `__alloc_pages_direct_reclaim()` → `try_to_free_pages()`),
//! both through `do_try_to_free_pages()`, and kswapd (`balance_pgdat()`, in `super::kswapd`).
//!
//! - `do_try_to_free_pages()` starts at `DEF_PRIORITY` (12) and lowers the priority by one
//!   after each pass until `SWAP_CLUSTER_MAX` pages are reclaimed (`nr_to_reclaim`) or
//!   priority 0 is done.
//! - Each pass (`shrink_node()` → `shrink_node_memcgs()`) first sets `may_deactivate` per
//!   type, `cache_trim_mode` (`prepare_scan_control()`: plenty of inactive file pages and no
//!   file refaults activated since the last reclaim scan the file lists only) and, for global
//!   reclaim only, `file_is_tiny` (file pages and free pages together under the high
//!   watermark: the anon lists only), then `shrink_lruvec()`: `get_scan_count()` gives each
//!   list its target ([`super::super::scan`]), taken in chunks of `SWAP_CLUSTER_MAX` in
//!   `for_each_evictable_lru()` order while an inactive or the active file target lasts; an
//!   active chunk is deactivated only with its type's `may_deactivate` (else
//!   `skipped_deactivate`). Once the pass reclaimed `nr_to_reclaim` it stops if one type has
//!   nothing left to scan (a memcg with no file pages breaks out there), else nudges the
//!   targets once (`scan::proportional`) and goes on; direct reclaim at `DEF_PRIORITY`
//!   (`proportional_reclaim`) scans its whole targets instead. It ends by deactivating an anon
//!   chunk if the inactive anon list is low ([`Lru::end_of_pass`]). Each
//!   `shrink_inactive_list()` chunk notes its type's cost (`lru_note_cost_unlock_irq()`); a
//!   file victim is clean and dropped (`__remove_mapping()`, its shadow left), no io.
//! - After the lists, `shrink_slab()` at the pass's priority: a memcg's own reclaim runs only
//!   the memcg-aware shrinkers (`shrink_slab_memcg()`, so zswap's, never zsmalloc's); global
//!   reclaim reaches the root memcg, whose `shrink_slab()` runs every shrinker. zswap's count
//!   flushes the memcg's statistics first (`Zswap::shrinker_flushes_stats`), so the next
//!   pass's decisions read current lists.
//! - A reclaim that freed nothing is walked again (`memcg_full_walk`), and once more with
//!   `force_deactivate` where a pass skipped deactivation; then `snapshot_refaults()`.
//!
//! So the batch overshoots 32 by what the last chunk freed beyond it, and a small memcg
//! reaches low priorities (see `scan`): what zswap's shrinker is asked to scan grows with it.
//!
//! [`Lru::end_of_pass`]: super::super::lru::Lru::end_of_pass

use super::{Cached, Reclaimed, SimError, Simulator};
use crate::replay::lru::{SWAP_CLUSTER_MAX, Scanned};
use crate::replay::scan::{ScanControl, proportional, scan_targets};
use zmem_zswap::{DEF_PRIORITY, SlabScope};

/// Who reclaims: what each caller sets in its `scan_control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reclaimer {
    /// A memcg at its limit (`cgroup_reclaim()` true).
    Memcg,
    /// An allocation under the min watermark, in the faulting task (global).
    Direct,
    /// kswapd (`current_is_kswapd()`; global).
    Kswapd,
}

impl Reclaimer {
    /// `shrink_lruvec()`'s `proportional_reclaim`: global direct reclaim at `DEF_PRIORITY`
    /// does not stop at `nr_to_reclaim` ("best to do a batch of work at once").
    fn proportional(self, priority: u32) -> bool {
        self == Self::Direct && priority == DEF_PRIORITY
    }

    /// Whose shrinkers `shrink_slab()` runs: the memcg's, or the root's (all).
    fn slab_scope(self) -> SlabScope {
        if self == Self::Memcg { SlabScope::Memcg } else { SlabScope::Global }
    }
}

/// One `shrink_node()` pass's settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pass {
    pub who: Reclaimer,
    pub priority: u32,
    pub nr_to_reclaim: usize,
    /// `sc->force_deactivate`: both types may deactivate.
    pub force_deactivate: bool,
    /// `sc->no_cache_trim_mode` (kswapd's restart after `cache_trim_mode` failed).
    pub no_cache_trim_mode: bool,
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PassResult {
    /// Pages reclaimed (`sc->nr_reclaimed`'s growth).
    pub freed: usize,
    /// Inactive pages scanned (`sc->nr_scanned`'s growth, `shrink_folio_list()`).
    pub scanned: usize,
    /// An active chunk went unscanned for want of `may_deactivate`.
    pub skipped_deactivate: bool,
    /// The pass ran in `cache_trim_mode`.
    pub cache_trim_mode: bool,
}

impl Simulator<'_> {
    /// `try_to_free_mem_cgroup_pages()` for one charge (module doc): the pages freed.
    pub(super) fn reclaim_memcg(&mut self) -> Result<usize, SimError> {
        self.try_to_free(Reclaimer::Memcg)
    }

    /// `try_to_free_pages()` for an allocation under the min watermark: the pages freed.
    pub(super) fn reclaim_direct(&mut self) -> Result<usize, SimError> {
        self.try_to_free(Reclaimer::Direct)
    }

    /// `do_try_to_free_pages()` with its retries (module doc).
    fn try_to_free(&mut self, who: Reclaimer) -> Result<usize, SimError> {
        self.flush_stats_at_first_fill();
        let (mut freed, mut skipped) = self.priority_walk(who, false)?;
        if freed == 0 {
            // `memcg_full_walk`: the same walk again (one memcg: the same lists).
            let (again, skipped_again) = self.priority_walk(who, false)?;
            freed = again;
            skipped |= skipped_again;
        }
        if freed == 0 && skipped {
            freed = self.priority_walk(who, true)?.0;
        }
        self.end_of_reclaim();
        Ok(freed)
    }

    /// The end of a reclaim: `snapshot_refaults()`; zswap's shrink worker, if a store the
    /// reclaim made was rejected at the pool limit since it last ran (it runs on its own
    /// kworker, and gets to run at the latest when the storing stops:
    /// [`super::super::SHRINK_WORK_REJECTED_STORES`]); and the pages zswap wrote back during it
    /// noted for the swap cache ([`Self::install_written_back`]).
    pub(super) fn end_of_reclaim(&mut self) {
        self.ram.snapshot_refaults();
        if let Some(z) = self.swap.zswap() {
            z.run_queued_work();
            self.written_back.extend(z.take_written_back());
        }
    }

    /// mm/zswap.c `zswap_writeback_entry()` for each page zswap's shrinker or shrink worker
    /// wrote back: `__read_swap_cache_async()` charged a folio to the memcg (forced: reclaim
    /// runs with `PF_MEMALLOC`, so `try_charge_memcg()` goes over the limit rather than recurse)
    /// and put it on the LRU after `workingset_refault()`, so it may be activated; the folio is
    /// clean once written and `PG_reclaim` moves it to the inactive tail when the write ends
    /// (`folio_rotate_reclaimable()`). Until then it sits in a per-CPU LRU batch, under
    /// writeback, where reclaim does not reach it, and its slot's `SWAP_HAS_CACHE` makes a
    /// fault on it wait: the replay installs it once the access whose reclaim wrote it back is
    /// done, unless that access faulted the page in itself (then the fault read it back from
    /// the device; in the kernel the writeback would have found the fault's folio in the swap
    /// cache and left the entry in zswap, `-EEXIST`). A fault on it later is a minor fault; the
    /// next reclaim drops it without a write. (The shrink worker runs without `PF_MEMALLOC`,
    /// and its charge may reclaim instead; the replay charges its folios as the shrinker's.)
    pub(super) fn install_written_back(&mut self) {
        for offset in std::mem::take(&mut self.written_back) {
            let Some(p) = self.slots.page_at(offset) else { continue };
            if self.ram.is_resident(p) || self.slots.slot(p) != Some(offset) {
                continue;
            }
            self.cached[p as usize] = Cached::Written;
            self.slots.set_clean(p, true);
            self.ram.install_unmapped(p, true);
            self.ram.rotate_reclaimable(p);
            self.counts.writeback_cached += 1;
        }
    }

    /// `do_try_to_free_pages()`'s loop from `DEF_PRIORITY` down: the pages freed, and whether
    /// a pass skipped deactivation.
    fn priority_walk(
        &mut self,
        who: Reclaimer,
        force_deactivate: bool,
    ) -> Result<(usize, bool), SimError> {
        let (mut freed, mut skipped) = (0, false);
        for priority in (0..=DEF_PRIORITY).rev() {
            let pass = Pass {
                who,
                priority,
                nr_to_reclaim: SWAP_CLUSTER_MAX,
                force_deactivate,
                no_cache_trim_mode: false,
            };
            let r = self.shrink_pass(pass)?;
            freed += r.freed;
            skipped |= r.skipped_deactivate;
            if freed >= SWAP_CLUSTER_MAX {
                break;
            }
        }
        Ok((freed, skipped))
    }

    /// One priority's `shrink_lruvec()` and `shrink_slab()` (module doc).
    pub(super) fn shrink_pass(&mut self, p: Pass) -> Result<PassResult, SimError> {
        let deactivate =
            [false, true].map(|file| p.force_deactivate || self.ram.may_deactivate(file));
        let sizes = self.ram.list_sizes();
        let cache_trim_mode = self.ram.stat_inactive_file() >> p.priority > 0
            && !deactivate[1]
            && !p.no_cache_trim_mode;
        let cgroup_reclaim = p.who == Reclaimer::Memcg;
        let sc = ScanControl {
            priority: p.priority,
            swappiness: self.cfg.swappiness,
            costs: self.ram.costs,
            cache_trim_mode,
            cgroup_reclaim,
            file_is_tiny: !cgroup_reclaim && self.file_is_tiny(sizes, deactivate[0], p.priority),
        };
        let targets = scan_targets(sizes, sc);
        let mut nr = targets;
        let mut r = PassResult { cache_trim_mode, ..PassResult::default() };
        while nr[0] > 0 || nr[2] > 0 || nr[3] > 0 {
            for (lru, n) in nr.iter_mut().enumerate() {
                let chunk = (*n as usize).min(SWAP_CLUSTER_MAX);
                *n -= chunk as u64;
                self.shrink_list(lru, chunk, deactivate, &mut r)?;
            }
            if r.freed < p.nr_to_reclaim || p.who.proportional(p.priority) {
                continue;
            }
            if nr[0] + nr[1] == 0 || nr[2] + nr[3] == 0 {
                break;
            }
            proportional(&mut nr, &targets);
        }
        self.ram.end_of_pass();
        if self.swap.zswap().is_some_and(|z| z.shrinker_flushes_stats()) {
            // `zswap_shrinker_count()`'s flush, before the shrinker counts.
            self.ram.flush_stats();
        }
        self.swap.shrink_slab(p.priority, p.who.slab_scope());
        if r.freed > 0 {
            // `shrink_node()`: any reclaim that frees a page resets `kswapd_failures` ("a
            // successful direct reclaim run will revive a dormant kswapd").
            self.kswapd_failures = 0;
        }
        Ok(r)
    }

    /// `prepare_scan_control()`'s `file_is_tiny` for global reclaim: the file lists and free
    /// pages together at most the high watermark, anon not deactivating, and the inactive anon
    /// list not empty at this priority. Without watermarks (a memcg's reclaim) never.
    fn file_is_tiny(&self, sizes: [u64; 4], deactivate_anon: bool, priority: u32) -> bool {
        let Some(w) = self.cfg.watermarks else { return false };
        sizes[2] + sizes[3] + self.free_pages() <= w.high
            && !deactivate_anon
            && sizes[0] >> priority > 0
    }

    /// `shrink_list()` of a chunk of list `lru` (`scan::Lists` order): an inactive list's
    /// pages scanned for reclaim, an active list's deactivated where its type's
    /// `may_deactivate` is set (else skipped), into `r`.
    fn shrink_list(
        &mut self,
        lru: usize,
        chunk: usize,
        deactivate: [bool; 2],
        r: &mut PassResult,
    ) -> Result<(), SimError> {
        let file = lru >= 2;
        if chunk == 0 {
            return Ok(());
        }
        if lru.is_multiple_of(2) {
            let (freed, scanned) = self.shrink_inactive(file, chunk)?;
            r.freed += freed;
            r.scanned += scanned;
        } else if deactivate[usize::from(file)] {
            self.ram.deactivate(file, chunk);
        } else {
            r.skipped_deactivate = true;
        }
        Ok(())
    }

    /// `shrink_folio_list()`'s `activate_locked`: a folio in the swap cache whose slot nothing
    /// else holds (a mapped page that kept its slot through a swap-in) gives the slot back where
    /// swap is more than half full (`mem_cgroup_swap_full()`, `folio_free_swap()`), so its next
    /// reclaim writes it again. A read-ahead page's slot is still the page table's: kept.
    fn free_swap_on_activation(&mut self, p: u32) {
        let anon = (p as usize) < self.cached.len();
        if !anon || self.cached[p as usize] != Cached::Mapped || !self.slots.vm_swap_full() {
            return;
        }
        if let Some(slot) = self.slots.slot(p) {
            self.swap.free(slot);
            self.slots.release(p);
            self.counts.activation_freed += 1;
        }
    }

    /// `shrink_inactive_list()` of `n` pages from one type's inactive tail: the pages freed
    /// and scanned; its cost noted (a cluster per page written out, one per page scanned and
    /// kept).
    fn shrink_inactive(&mut self, file: bool, n: usize) -> Result<(usize, usize), SimError> {
        let (mut scanned, mut freed, mut pageouts) = (0u64, 0u64, 0u64);
        for _ in 0..n {
            let victim = match self.ram.scan_tail(file) {
                Scanned::Empty => break,
                Scanned::Kept => None,
                Scanned::Activated(p) => {
                    self.free_swap_on_activation(p);
                    None
                }
                Scanned::Victim(v) => Some(v),
            };
            scanned += 1;
            if let Some(v) = victim
                && let Reclaimed::Freed { pageout } = self.reclaim_page(v)?
            {
                freed += 1;
                pageouts += u64::from(pageout);
            }
        }
        let lru_size = self.ram.stat_lru_size();
        self.ram.costs.note(file, pageouts, scanned - freed, lru_size);
        Ok((freed as usize, scanned as usize))
    }
}
