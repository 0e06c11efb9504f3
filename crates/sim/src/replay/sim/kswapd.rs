//! Machine-wide reclaim with [`ReplayConfig::watermarks`]: the page allocator's watermarks and
//! kswapd, as 6.18 runs them for one node with one zone.
//!
//! - mm/page_alloc.c `__zone_watermark_ok()`: a mark is met while free pages are over it
//!   (`free_pages <= min` fails). The fast path (`get_page_from_freelist()` at the low mark)
//!   takes a page while free pages are over the low mark; otherwise the slow path wakes kswapd
//!   (`wake_all_kswapds()`; `wakeup_kswapd()` leaves a node alone once kswapd failed
//!   `MAX_RECLAIM_RETRIES` times in a row), takes a page over the min mark, and else reclaims
//!   directly (`__alloc_pages_direct_reclaim()` → `try_to_free_pages()`, a batch of
//!   `SWAP_CLUSTER_MAX`; [`super::reclaim`]) and tries again.
//! - mm/vmscan.c `balance_pgdat()`: from `DEF_PRIORITY`, while the node is not balanced
//!   (`pgdat_balanced()`: free pages over the high mark), age the anon lists
//!   (`kswapd_age_node()`: a chunk deactivated if the inactive anon list is low), then
//!   `kswapd_shrink_node()`: one `shrink_node()` pass asking for `max(high mark,
//!   SWAP_CLUSTER_MAX)` pages, which scans its priority's targets until it has them. The
//!   priority drops after a pass that scanned and reclaimed less than it asked for, or
//!   reclaimed nothing, down to 1. A walk that reclaimed nothing with `cache_trim_mode` failing
//!   restarts without it (`no_cache_trim_mode`); one that reclaimed nothing counts a failure
//!   (`kswapd_failures`), which any reclaim that frees a page resets (`shrink_node()`).
//!   Then `snapshot_refaults()`.
//! - mm/vmscan.c `kswapd()`: after `balance_pgdat()`, kswapd sleeps only if the node is
//!   balanced (`prepare_kswapd_sleep()`) or hopeless (`MAX_RECLAIM_RETRIES` failures); else it
//!   balances again.
//!
//! kswapd runs beside the program; the replay runs it at once after the fault that woke it.
//!
//! [`ReplayConfig::watermarks`]: super::super::ReplayConfig::watermarks

use super::reclaim::{Pass, Reclaimer};
use super::{SimError, Simulator};
use crate::replay::Watermarks;
use crate::replay::lru::SWAP_CLUSTER_MAX;
use zmem_zswap::{DEF_PRIORITY, MAX_RECLAIM_RETRIES};

impl Simulator<'_> {
    /// The page allocator for one fault's page (module doc): whether kswapd was woken.
    pub(super) fn allocate(&mut self) -> Result<bool, SimError> {
        let Some(w) = self.cfg.watermarks else { return Ok(false) };
        if self.free_pages() > w.low {
            return Ok(false);
        }
        let woken = self.kswapd_failures < MAX_RECLAIM_RETRIES;
        self.counts.kswapd_wakes += u64::from(woken);
        while self.free_pages() <= w.min && self.ram.evictable() > 0 {
            let n = self.reclaim_direct()?;
            if n == 0 {
                break;
            }
            self.counts.direct_reclaimed += n as u64;
        }
        Ok(woken)
    }

    /// kswapd once woken: `balance_pgdat()` until the node is balanced or hopeless.
    pub(super) fn kswapd(&mut self) -> Result<(), SimError> {
        let Some(w) = self.cfg.watermarks else { return Ok(()) };
        while !self.balanced(w)
            && self.ram.evictable() > 0
            && self.kswapd_failures < MAX_RECLAIM_RETRIES
        {
            let n = self.balance_pgdat(w)?;
            self.counts.kswapd_reclaimed += n as u64;
        }
        Ok(())
    }

    /// `pgdat_balanced()` at order 0: free pages over the high mark.
    fn balanced(&self, w: Watermarks) -> bool {
        self.free_pages() > w.high
    }

    /// One `balance_pgdat()` (module doc): the pages it reclaimed.
    fn balance_pgdat(&mut self, w: Watermarks) -> Result<usize, SimError> {
        self.flush_stats_at_first_fill();
        let nr_to_reclaim = (w.high as usize).max(SWAP_CLUSTER_MAX);
        let mut no_cache_trim_mode = false;
        loop {
            let (mut reclaimed, mut trim_failed) = (0, false);
            let mut priority = DEF_PRIORITY;
            while priority >= 1 && !self.balanced(w) && self.ram.evictable() > 0 {
                self.ram.end_of_pass();
                let pass = Pass {
                    who: Reclaimer::Kswapd,
                    priority,
                    nr_to_reclaim,
                    force_deactivate: false,
                    no_cache_trim_mode,
                };
                let r = self.shrink_pass(pass)?;
                reclaimed += r.freed;
                trim_failed |= r.freed == 0 && r.cache_trim_mode;
                let raise_priority = r.scanned.max(r.freed) < nr_to_reclaim;
                if raise_priority || r.freed == 0 {
                    priority -= 1;
                }
            }
            if reclaimed == 0 && priority < 1 && !no_cache_trim_mode && trim_failed {
                no_cache_trim_mode = true;
                continue;
            }
            if reclaimed == 0 {
                self.kswapd_failures += 1;
            }
            self.end_of_reclaim();
            return Ok(reclaimed);
        }
    }
}
