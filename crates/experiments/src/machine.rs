//! This machine's reclaim settings, which a replay takes where its caller did not say.

use zmem_sim::replay::{DEFAULT_SWAPPINESS, scan::MAX_SWAPPINESS};

/// The swappiness a memcg made now reclaims with: what was asked, else `vm.swappiness` (a new
/// memcg under the root inherits it, mm/memcontrol.c `mem_cgroup_css_alloc()`; on cgroup v2
/// and for the root include/linux/swap.h `mem_cgroup_swappiness()` reads it directly), else
/// the kernel's default. At most `MAX_SWAPPINESS`.
pub fn swappiness(asked: Option<u32>) -> u32 {
    let live = || {
        let v = zmem_kernel::stat::vm_sysctl("swappiness").ok()?;
        u32::try_from(v).ok()
    };
    asked.or_else(live).unwrap_or(DEFAULT_SWAPPINESS).min(MAX_SWAPPINESS)
}

/// The machine's RAM in bytes that zswap's `max_pool_percent` is a share of
/// (`totalram_pages()`): what was asked, else this machine's `/proc/meminfo` `MemTotal`, else
/// `fallback`.
pub fn total_ram_bytes(asked: Option<u64>, fallback: u64) -> u64 {
    let live = || zmem_kernel::stat::meminfo().ok()?.get("MemTotal").copied();
    asked.or_else(live).unwrap_or(fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asked_wins_and_is_capped() {
        assert_eq!(swappiness(Some(0)), 0);
        assert_eq!(swappiness(Some(150)), 150);
        assert_eq!(swappiness(Some(500)), MAX_SWAPPINESS);
        let live = std::fs::read_to_string("/proc/sys/vm/swappiness")
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .unwrap_or(DEFAULT_SWAPPINESS);
        assert_eq!(swappiness(None), live.min(MAX_SWAPPINESS));
    }

    #[test]
    fn total_ram_is_asked_else_meminfos() {
        assert_eq!(total_ram_bytes(Some(1 << 30), 5), 1 << 30);
        let mem = zmem_kernel::stat::meminfo().ok().and_then(|m| m.get("MemTotal").copied());
        assert_eq!(total_ram_bytes(None, 5), mem.unwrap_or(5));
    }
}
