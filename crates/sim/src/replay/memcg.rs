//! The memory cgroup the replay runs in: which cgroup version, what its limit (`ram_pages`,
//! `memory.max` / `memory.limit_in_bytes`) is charged with, and its zswap files.
//!
//! **The charge of zswap's pool.** 6.18, mm/zswap.c `zswap_store_page()`: once an entry is in
//! the tree it calls mm/memcontrol.c `obj_cgroup_charge_zswap()` with the entry's compressed
//! length; `zswap_entry_free()` uncharges it (`obj_cgroup_uncharge_zswap()`). Both return at
//! once unless the memory controller is on the default hierarchy (`cgroup_subsys_on_dfl()`):
//! on cgroup v2 the bytes go through `obj_cgroup_charge()` into the memcg's `memory` counter,
//! the one `memory.max` limits, forced past the limit if need be (reclaim runs `PF_MEMALLOC`:
//! `try_charge_memcg()` jumps to `force`), and into `MEMCG_ZSWAP_B` (`memory.zswap.current`).
//! On cgroup v1 nothing is charged. zram's pool is never charged to anyone: zram_drv.c
//! `zram_write_page()` allocates with `zs_malloc(..., GFP_NOIO | __GFP_NOWARN | __GFP_HIGHMEM |
//! __GFP_MOVABLE)`, no `__GFP_ACCOUNT`, in the context of whoever writes.
//!
//! The model: the memcg's usage is its resident pages plus, on v2 with zswap, the stored
//! entries' compressed bytes in whole pages ([`zswap_charge_pages`]). A fault charges one page
//! and, where usage is at the limit, reclaims until a page's margin is free
//! (`try_charge_memcg()`: `try_to_free_mem_cgroup_pages()` then `goto retry` while
//! `mem_cgroup_margin()` is short and reclaim made progress), so on v2 each page zswap keeps
//! still costs its compressed share of the limit, and reclaim swaps out more. Left out: the
//! per-CPU stocks (`obj_stock_pcp`'s pre-charged bytes, under two pages; the memcg's
//! `MEMCG_CHARGE_BATCH` of 64 pages, left out for resident pages already).
//!
//! **`memory.zswap.max` and `memory.zswap.writeback`** are cgroup v2 files (mm/memcontrol.c
//! `zswap_files`, added with `cgroup_add_dfl_cftypes()`). `zswap_store()` asks
//! `obj_cgroup_may_zswap()`, which walks from the memcg up to (not including) the root and
//! fails at the first level whose `MEMCG_ZSWAP_B / PAGE_SIZE` is not below its `zswap_max`
//! (a `zswap_max` of 0 fails outright); v1 always passes. A failed check costs one
//! `shrink_memcg()` step, and the store is rejected unless it wrote an entry back (zmem-zswap's
//! engine, `ZswapConfig::zswap_max_pages`). `mem_cgroup_zswap_writeback_enabled()` is off if
//! the file is 0 at the memcg or any ancestor, the root included. With the replay's memcg the
//! only one in zswap, every level counts the same bytes, so the hierarchy is its tightest
//! limit and the AND of the writeback files ([`ZswapFiles::effective`]).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which cgroup hierarchy the memory controller is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// cgroup v1 (`memory.limit_in_bytes`): zswap's pool is not charged, and the memcg has no
    /// zswap files. The lab's memcg on this project's machines.
    #[default]
    V1,
    /// cgroup v2 (`memory.max`): zswap's compressed bytes are charged, `memory.zswap.max` and
    /// `memory.zswap.writeback` apply.
    V2,
}

impl FromStr for CgroupVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "v1" | "1" => Ok(Self::V1),
            "v2" | "2" => Ok(Self::V2),
            _ => Err(format!("unknown cgroup version {s:?} (v1 or v2)")),
        }
    }
}

/// The text [`CgroupVersion::from_str`] reads back.
impl std::fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
        })
    }
}

/// The pages of the memcg's limit that zswap entries of `compressed_bytes` in all take on
/// cgroup v2 (`obj_cgroup_charge()` charges whole pages and keeps the rest pre-charged in its
/// stock); none on v1.
pub fn zswap_charge_pages(version: CgroupVersion, compressed_bytes: u64, page_size: usize) -> u64 {
    match version {
        CgroupVersion::V1 => 0,
        CgroupVersion::V2 => compressed_bytes.div_ceil(page_size as u64),
    }
}

/// One memcg's zswap files, as `memory.zswap.max` and `memory.zswap.writeback` read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZswapFiles {
    /// `memory.zswap.max` in bytes; `None`: `max`.
    pub max: Option<u64>,
    /// `memory.zswap.writeback`.
    pub writeback: bool,
}

impl Default for ZswapFiles {
    /// A new memcg's (mm/memcontrol.c `mem_cgroup_css_alloc()`: `zswap_max = PAGE_COUNTER_MAX`,
    /// `zswap_writeback = true`).
    fn default() -> Self {
        Self { max: None, writeback: true }
    }
}

impl ZswapFiles {
    /// What the stores of the first memcg of `path` (the memcg, then its ancestors below the
    /// root) see, `root_writeback` being the root's `memory.zswap.writeback` (the root has no
    /// `memory.zswap.max`: `CFTYPE_NOT_ON_ROOT`): the tightest limit, and writeback only if
    /// every level allows it (see the module doc).
    pub fn effective(path: &[ZswapFiles], root_writeback: bool) -> ZswapFiles {
        ZswapFiles {
            max: path.iter().filter_map(|f| f.max).min(),
            writeback: root_writeback && path.iter().all(|f| f.writeback),
        }
    }
}

/// `memory.zswap.max` of `bytes` in pages, as mm/page_counter.c `page_counter_memparse()`
/// stores it (rounded down).
pub fn zswap_max_pages(bytes: u64, page_size: usize) -> u64 {
    bytes / page_size as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `obj_cgroup_charge_zswap()` and `obj_cgroup_uncharge_zswap()` return at once unless
    /// `cgroup_subsys_on_dfl()`: v1 charges nothing; v2 whole pages of the compressed bytes.
    #[test]
    fn only_v2_charges_zswap_and_in_whole_pages() {
        assert_eq!(zswap_charge_pages(CgroupVersion::V1, 1 << 20, 4096), 0);
        assert_eq!(zswap_charge_pages(CgroupVersion::V2, 0, 4096), 0);
        assert_eq!(zswap_charge_pages(CgroupVersion::V2, 1, 4096), 1);
        assert_eq!(zswap_charge_pages(CgroupVersion::V2, 8192, 4096), 2);
        assert_eq!(zswap_charge_pages(CgroupVersion::V2, 8193, 4096), 3);
    }

    /// `obj_cgroup_may_zswap()` stops at the first level at its limit (any 0 rejects), and
    /// `mem_cgroup_zswap_writeback_enabled()` at the first 0, the root included.
    #[test]
    fn the_hierarchy_gives_the_tightest_limit_and_the_and_of_writeback() {
        let leaf = ZswapFiles { max: Some(64 << 20), writeback: true };
        let parent = ZswapFiles { max: Some(16 << 20), writeback: true };
        let e = ZswapFiles::effective(&[leaf, parent, ZswapFiles::default()], true);
        assert_eq!(e, ZswapFiles { max: Some(16 << 20), writeback: true });
        let off = ZswapFiles { max: None, writeback: false };
        assert!(!ZswapFiles::effective(&[leaf, off], true).writeback);
        assert!(!ZswapFiles::effective(&[leaf], false).writeback, "the root's file counts");
        assert_eq!(ZswapFiles::effective(&[], true), ZswapFiles::default());
        let zero = ZswapFiles { max: Some(0), writeback: true };
        assert_eq!(ZswapFiles::effective(&[leaf, zero], true).max, Some(0));
    }

    #[test]
    fn versions_and_limits_read_as_the_kernel_writes_them() {
        assert_eq!("v2".parse::<CgroupVersion>().unwrap(), CgroupVersion::V2);
        assert_eq!("1".parse::<CgroupVersion>().unwrap(), CgroupVersion::V1);
        assert!("v3".parse::<CgroupVersion>().is_err());
        assert_eq!(CgroupVersion::V2.to_string(), "v2");
        assert_eq!(zswap_max_pages(10_000, 4096), 2, "page_counter_memparse() rounds down");
    }
}
