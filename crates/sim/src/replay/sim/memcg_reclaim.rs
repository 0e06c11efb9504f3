//! A memcg's own reclaim, priority by priority, as 6.18 runs it for a charge that finds no
//! margin: mm/memcontrol.c `try_charge_memcg()` → mm/vmscan.c `try_to_free_mem_cgroup_pages()`
//! → `do_try_to_free_pages()`.
//!
//! - `do_try_to_free_pages()` starts at `DEF_PRIORITY` (12) and lowers the priority by one
//!   after each pass until `SWAP_CLUSTER_MAX` pages are reclaimed (`nr_to_reclaim`) or
//!   priority 0 is done.
//! - Each pass (`shrink_node()` → `shrink_node_memcgs()`) first sets `may_deactivate` per
//!   type and `cache_trim_mode` (`prepare_scan_control()`: plenty of inactive file pages and
//!   no file refaults activated since the last reclaim scan the file lists only), then
//!   `shrink_lruvec()`: `get_scan_count()` gives each list its target
//!   ([`super::super::scan`]), taken in chunks of `SWAP_CLUSTER_MAX` in
//!   `for_each_evictable_lru()` order while an inactive or the active file target lasts; an
//!   active chunk is deactivated only with its type's `may_deactivate` (else
//!   `skipped_deactivate`). Once the pass reclaimed `nr_to_reclaim` it stops if one type has
//!   nothing left to scan (a memcg with no file pages breaks out there), else nudges the
//!   targets once (`scan::proportional`) and goes on; it ends by deactivating an anon chunk if
//!   the inactive anon list is low ([`Lru::end_of_pass`]). Each `shrink_inactive_list()`
//!   chunk notes its type's cost (`lru_note_cost_unlock_irq()`); a file victim is clean and
//!   dropped (`__remove_mapping()`, its shadow left), no io.
//! - After the lists, `shrink_slab()` for the memcg at the pass's priority: only the
//!   memcg-aware shrinkers (`shrink_slab_memcg()`), so zswap's, never zsmalloc's.
//! - A reclaim that freed nothing is walked again (`memcg_full_walk`), and once more with
//!   `force_deactivate` where a pass skipped deactivation; then `snapshot_refaults()`.
//!
//! So the batch overshoots 32 by what the last chunk freed beyond it, and a small memcg
//! reaches low priorities (see `scan`): what zswap's shrinker is asked to scan grows with it.

use super::{Cached, Reclaimed, SimError, Simulator};
use crate::replay::lru::{SWAP_CLUSTER_MAX, Scanned};
use crate::replay::scan::{ScanControl, proportional, scan_targets};
use zmem_zswap::{DEF_PRIORITY, SlabScope};

impl Simulator<'_> {
    /// `try_to_free_mem_cgroup_pages()` for one charge (module doc): the pages freed.
    pub(super) fn reclaim_memcg(&mut self) -> Result<usize, SimError> {
        let (mut freed, mut skipped) = self.priority_walk(false)?;
        if freed == 0 {
            // `memcg_full_walk`: the same walk again (one memcg: the same lists).
            let (again, skipped_again) = self.priority_walk(false)?;
            freed = again;
            skipped |= skipped_again;
        }
        if freed == 0 && skipped {
            freed = self.priority_walk(true)?.0;
        }
        self.ram.snapshot_refaults();
        Ok(freed)
    }

    /// `do_try_to_free_pages()`'s loop from `DEF_PRIORITY` down: the pages freed, and whether
    /// a pass skipped deactivation.
    fn priority_walk(&mut self, force_deactivate: bool) -> Result<(usize, bool), SimError> {
        let (mut freed, mut skipped) = (0, false);
        for priority in (0..=DEF_PRIORITY).rev() {
            let (pass, skipped_here) = self.shrink_pass(priority, force_deactivate)?;
            freed += pass;
            skipped |= skipped_here;
            if freed >= SWAP_CLUSTER_MAX {
                break;
            }
        }
        Ok((freed, skipped))
    }

    /// One priority's `shrink_lruvec()` and `shrink_slab()`: the pages freed, and whether an
    /// active chunk went unscanned for want of `may_deactivate`.
    fn shrink_pass(&mut self, priority: u32, force: bool) -> Result<(usize, bool), SimError> {
        let deactivate = [false, true].map(|file| force || self.ram.may_deactivate(file));
        let sizes = self.ram.list_sizes();
        let cache_trim_mode = sizes[2] >> priority > 0 && !deactivate[1];
        let sc = ScanControl {
            priority,
            swappiness: self.cfg.swappiness,
            costs: self.ram.costs,
            cache_trim_mode,
        };
        let targets = scan_targets(sizes, sc);
        let mut nr = targets;
        let (mut freed, mut skipped) = (0, false);
        while nr[0] > 0 || nr[2] > 0 || nr[3] > 0 {
            for (lru, n) in nr.iter_mut().enumerate() {
                let chunk = (*n as usize).min(SWAP_CLUSTER_MAX);
                *n -= chunk as u64;
                let (got, skip) = self.shrink_list(lru, chunk, deactivate)?;
                freed += got;
                skipped |= skip;
            }
            if freed < SWAP_CLUSTER_MAX {
                continue;
            }
            if nr[0] + nr[1] == 0 || nr[2] + nr[3] == 0 {
                break;
            }
            proportional(&mut nr, &targets);
        }
        self.ram.end_of_pass();
        if self.swap.slab_reclaim().is_none() {
            self.swap.shrink_slab(priority, SlabScope::Memcg);
        }
        Ok((freed, skipped))
    }

    /// `shrink_list()` of a chunk of list `lru` (`scan::Lists` order): an inactive list's
    /// pages scanned for reclaim, an active list's deactivated where its type's
    /// `may_deactivate` is set (else skipped). The pages freed, and whether it skipped.
    fn shrink_list(
        &mut self,
        lru: usize,
        chunk: usize,
        deactivate: [bool; 2],
    ) -> Result<(usize, bool), SimError> {
        let file = lru >= 2;
        if chunk == 0 {
            return Ok((0, false));
        }
        if lru.is_multiple_of(2) {
            return Ok((self.shrink_inactive(file, chunk)?, false));
        }
        if !deactivate[usize::from(file)] {
            return Ok((0, true));
        }
        self.ram.deactivate(file, chunk);
        Ok((0, false))
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

    /// `shrink_inactive_list()` of `n` pages from one type's inactive tail: the pages freed;
    /// its cost noted (a cluster per page written out, one per page scanned and kept).
    fn shrink_inactive(&mut self, file: bool, n: usize) -> Result<usize, SimError> {
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
        let lru_size = self.ram.len() as u64;
        self.ram.costs.note(file, pageouts, scanned - freed, lru_size);
        Ok(freed as usize)
    }
}
