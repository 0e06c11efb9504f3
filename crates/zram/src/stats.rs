//! The stat files in the kernel's exact text formats (drivers/block/zram/zram_drv.c, Linux 6.18:
//! `mm_stat_show()`, `io_stat_show()`, `bd_stat_show()`, `debug_stat_show()`, each a
//! `sysfs_emit()` of `struct zram_stats` counters). Every counter is zeroed by
//! `zram_reset_device()` (`memset(&zram->stats, 0, ...)`).
//!
//! Scripts parse these files by position, so the widths, the literal `0` columns that stand for
//! removed counters, and the trailing newline are part of the interface.

use std::fmt;
use std::str::FromStr;

/// `mm_stat` (`mm_stat_show()`): nine fields,
/// `"%8llu %8llu %8llu %8lu %8ld %8llu %8lu %8llu %8llu\n"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MmStat {
    /// `pages_stored << PAGE_SHIFT`: every allocated slot (compressed, huge, same, written
    /// back; `zram_writeback_slots()` counts the page again after `zram_free_page()`) x page.
    pub orig_data_size: u64,
    /// `compr_data_size`: sum of the stored object lengths (`write_incompressible_page()` adds
    /// `PAGE_SIZE`; same-filled and written-back slots add nothing).
    pub compr_data_size: u64,
    /// `zs_get_total_pages() << PAGE_SHIFT` (0 before `disksize`), fragmentation included.
    pub mem_used_total: u64,
    /// `limit_pages << PAGE_SHIFT`, 0 for none.
    pub mem_limit: u64,
    /// `max_used_pages << PAGE_SHIFT`: the most `mem_used_total` has been when a write checked
    /// it (`zram_can_store_page()`'s `update_used_max()`), since `mem_used_max` was last reset.
    pub mem_used_max: u64,
    /// `same_pages`: slots holding a same-filled page.
    pub same_pages: u64,
    /// `zs_pool_stats()`'s `pages_compacted`: pages freed by compaction (the `compact`
    /// attribute and the pool's shrinker), cumulative; 0 before `disksize`.
    pub pages_compacted: u64,
    /// `huge_pages`: slots stored raw because the object reached `huge_class_size`
    /// (`zram_write_page()`: `comp_len >= huge_class_size`).
    pub huge_pages: u64,
    /// `huge_pages_since`: huge stores since the last reset, never decremented.
    pub huge_pages_since: u64,
}

impl MmStat {
    /// Field names in file order, for diffs and JSON.
    pub const FIELDS: [&'static str; 9] = [
        "orig_data_size",
        "compr_data_size",
        "mem_used_total",
        "mem_limit",
        "mem_used_max",
        "same_pages",
        "pages_compacted",
        "huge_pages",
        "huge_pages_since",
    ];

    /// The values in file order.
    pub fn values(&self) -> [u64; 9] {
        [
            self.orig_data_size,
            self.compr_data_size,
            self.mem_used_total,
            self.mem_limit,
            self.mem_used_max,
            self.same_pages,
            self.pages_compacted,
            self.huge_pages,
            self.huge_pages_since,
        ]
    }

    /// The fields whose values differ: (name, ours, theirs).
    pub fn diff(&self, other: &MmStat) -> Vec<(&'static str, u64, u64)> {
        let (a, b) = (self.values(), other.values());
        (0..9).filter(|&i| a[i] != b[i]).map(|i| (Self::FIELDS[i], a[i], b[i])).collect()
    }
}

impl fmt::Display for MmStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.values();
        writeln!(
            f,
            "{:8} {:8} {:8} {:8} {:8} {:8} {:8} {:8} {:8}",
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]
        )
    }
}

/// A stat line that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {file} line {line:?}")]
pub struct StatParseError {
    file: &'static str,
    line: String,
}

fn parse_fields<const N: usize>(file: &'static str, s: &str) -> Result<[u64; N], StatParseError> {
    let err = || StatParseError { file, line: s.to_string() };
    let mut out = [0u64; N];
    let mut words = s.split_whitespace();
    for slot in &mut out {
        *slot = words.next().ok_or_else(err)?.parse().map_err(|_| err())?;
    }
    if words.next().is_some() {
        return Err(err());
    }
    Ok(out)
}

impl FromStr for MmStat {
    type Err = StatParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = parse_fields::<9>("mm_stat", s)?;
        Ok(Self {
            orig_data_size: v[0],
            compr_data_size: v[1],
            mem_used_total: v[2],
            mem_limit: v[3],
            mem_used_max: v[4],
            same_pages: v[5],
            pages_compacted: v[6],
            huge_pages: v[7],
            huge_pages_since: v[8],
        })
    }
}

/// `io_stat` (`io_stat_show()`): `"%8llu %8llu 0 %8llu\n"`; the literal 0 stands for the
/// removed `invalid_io` counter (Documentation/admin-guide/blockdev/zram.rst still names it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoStat {
    pub failed_reads: u64,
    pub failed_writes: u64,
    /// Pages freed by discard or write-zeroes (`zram_bio_discard()`) and swap-slot-free
    /// notifications (`zram_slot_free_notify()`, counted even when the trylock fails).
    pub notify_free: u64,
}

impl fmt::Display for IoStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:8} {:8} 0 {:8}", self.failed_reads, self.failed_writes, self.notify_free)
    }
}

impl FromStr for IoStat {
    type Err = StatParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = parse_fields::<4>("io_stat", s)?;
        if v[2] != 0 {
            return Err(StatParseError { file: "io_stat", line: s.to_string() });
        }
        Ok(Self { failed_reads: v[0], failed_writes: v[1], notify_free: v[3] })
    }
}

/// `bd_stat` (`bd_stat_show()`): `"%8llu %8llu %8llu\n"`, each in 4 KiB units whatever the
/// page size (`FOUR_K()`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BdStat {
    /// Blocks reserved on the backing device (`alloc_block_bdev()` / `free_block_bdev()`).
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
}

impl fmt::Display for BdStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:8} {:8} {:8}", self.bd_count, self.bd_reads, self.bd_writes)
    }
}

/// `debug_stat` (`debug_stat_show()`): `"version: %d\n0 %8llu\n"`; the literal 0 is the
/// removed `writestall`, the number `miss_free`.
pub fn debug_stat(miss_free: u64) -> String {
    format!("version: 1\n0 {miss_free:8}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm_stat_has_the_kernel_layout() {
        let s = MmStat { orig_data_size: 355225600, same_pages: 1629, ..Default::default() };
        let text = s.to_string();
        // Nine fields of width 8 (this one overflows to 9 digits, as printf does), single spaces.
        assert_eq!(
            text,
            "355225600        0        0        0        0     1629        0        0        0\n"
        );
        assert_eq!(text.parse::<MmStat>().unwrap(), s);
        assert_eq!(MmStat::default().to_string().len(), 81, "the kernel's file is 81 bytes");
    }

    #[test]
    fn io_and_debug_stat_layouts() {
        assert_eq!(IoStat::default().to_string().len(), 29, "the kernel's file is 29 bytes");
        let io = IoStat { failed_reads: 1, failed_writes: 22, notify_free: 333 };
        assert_eq!(io.to_string(), "       1       22 0      333\n");
        assert_eq!(io.to_string().parse::<IoStat>().unwrap(), io);
        assert_eq!(debug_stat(0), "version: 1\n0        0\n");
        assert_eq!(debug_stat(0).len(), 22);
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert!("1 2 3".parse::<MmStat>().is_err());
        assert!("1 2 3 4 5 6 7 8 9 10".parse::<MmStat>().is_err());
        assert!("1 2 x 4 5 6 7 8 9".parse::<MmStat>().is_err());
        assert!("1 2 7 4".parse::<IoStat>().is_err());
    }

    #[test]
    fn diff_names_the_fields() {
        let a = MmStat { huge_pages: 3, ..Default::default() };
        let b = MmStat { huge_pages: 4, mem_limit: 1, ..Default::default() };
        assert_eq!(a.diff(&b), vec![("mem_limit", 0, 1), ("huge_pages", 3, 4)]);
    }
}
