//! The rest of the swap stack for the decision: vm.swappiness, vm.page-cluster from the
//! measured read-ahead, the swap device behind zswap, and what each active swap area holds.
//! Data only: render says why in words.

use super::*;
use crate::candidate::{Candidate, Config};
use crate::decision::{Decision, Kind};

/// The kernel's swap read-ahead since boot (`/proc/vmstat`): pages read ahead (`swap_ra`,
/// counted by mm/swap_state.c `swap_cluster_readahead()` / `swap_vma_readahead()`) and, of
/// those, pages then asked for (`swap_ra_hit`, `swap_update_readahead()`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadAhead {
    pub pages: u64,
    pub hits: u64,
}

impl ReadAhead {
    /// Fewer pages read ahead than this say nothing about the workload.
    pub const MIN_PAGES: u64 = 1000;

    pub fn of(vmstat: &BTreeMap<String, u64>) -> Option<Self> {
        Some(Self { pages: *vmstat.get("swap_ra")?, hits: *vmstat.get("swap_ra_hit")? })
    }

    /// The fraction of pages read ahead that were used, where enough were read ahead.
    pub fn used(&self) -> Option<f64> {
        (self.pages >= Self::MIN_PAGES)
            .then(|| self.hits.min(self.pages) as f64 / self.pages as f64)
    }
}

/// vm.page-cluster, from where swap-ins are served (`from_memory`: zram, or zswap hits at
/// least half) and how much of the kernel's read-ahead was used (`swap_ra_hit / swap_ra` since
/// boot): from memory, a page read ahead costs a decompression, worth it only when the pages
/// are mostly used (3 in 4: 1, two pages a fault; else 0); from a device it saves a device
/// read, and is cut only when it is mostly wasted (1 in 4 used: 1; else the kernel's 3,
/// mm/swap.c `swap_setup()` above 16 MiB of RAM). The 3-in-4 and 1-in-4 cut-offs are zmem's
/// judgement, not a kernel rule. Without enough read-ahead to judge, 0 from memory and 3 from
/// a device.
pub fn page_cluster(from_memory: bool, ra: Option<ReadAhead>) -> u32 {
    match (from_memory, ra.and_then(|r| r.used())) {
        (true, Some(u)) if u >= 0.75 => 1,
        (true, _) => 0,
        (false, Some(u)) if u < 0.25 => 1,
        (false, _) => 3,
    }
}

/// vm.swappiness: a swap-in from compressed memory costs microseconds of CPU, less than
/// re-reading a file page from the device, so favour swapping anonymous memory (150); zswap's
/// misses read the same device file pages come from: weigh the two equally (100).
pub fn swappiness(from_memory_only: bool) -> u32 {
    if from_memory_only { 150 } else { 100 }
}

/// The stack for `decision` (its chosen candidate among `cands`), for `pages` of `ps` bytes.
pub fn stack(
    live: &ZswapLive,
    decision: &Decision,
    cands: &[Candidate],
    rates: &Rates,
    ps: usize,
    device: &SwapDevice,
) -> StackAdvice {
    let chosen = decision.chosen(cands);
    let zswap = matches!(chosen.map(|c| &c.config), Some(Config::Zswap { .. }))
        || (decision.kind == Kind::Keep && decision.basis.now_config.starts_with("zswap"));
    let hit = chosen.and_then(|c| c.device.as_ref()).map_or(1.0, |d| d.hit_fraction);
    let from_memory = !zswap || hit >= 0.5;
    let read_ahead = ReadAhead::of(&live.state.vmstat);
    let stored = live
        .state
        .debugfs
        .as_ref()
        .and_then(|d| d.get("stored_pages").copied())
        .or(live.state.meminfo_zswapped_bytes.map(|b| b / live.state.page_size.max(1)));
    StackAdvice {
        swappiness_now: live.swappiness,
        swappiness: swappiness(!zswap),
        page_cluster_now: live.page_cluster,
        page_cluster: page_cluster(from_memory, read_ahead),
        zswap,
        from_memory,
        hit_fraction: hit,
        read_ahead_pages: read_ahead.map(|r| r.pages),
        read_ahead_used: read_ahead.and_then(|r| r.used()),
        swap_ins_per_sec: rates.swap_ins_per_sec,
        device: device.name.clone(),
        pages: decision.basis.pages,
        page_size: ps as u64,
        swap_device_bytes: decision.basis.pages * ps as u64,
        disk_swap_bytes: live.swaps.iter().filter(|s| s.kind != "zram").map(|s| s.size_bytes).sum(),
        zswap_stored_pages: stored.filter(|_| live.state.enabled),
    }
}
