//! Pure parsers of the kernel files this crate reads (the leaf the readers in [`crate::stat`],
//! [`crate::caps`], [`crate::zswap_state`] and [`crate::status`] share), each over the file's
//! text, unit-tested on fixture text. The zram layouts follow zram_drv.c (Linux 6.18: `mm_stat_show`, `io_stat_show`,
//! `bd_stat_show`, `recomp_algorithm_show`), zsmalloc's follow zsmalloc.c `zs_stats_size_show`,
//! and zswap's debugfs files are one number each (zswap.c `zswap_debugfs_init`).
//!
//! The stat structs are the engine's (`zmem_zram::{MmStat, IoStat, BdStat}`, whose `FromStr`
//! takes 6.18's exact layout); the parsers here also take older kernels' shorter `mm_stat` (a
//! live machine may run one) and fill what they lack with 0.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::KernelError;
pub use zmem_zram::{BdStat, IoStat, MmStat};

fn numbers(file: &str, text: &str) -> Result<Vec<u64>, KernelError> {
    text.split_whitespace()
        .map(|f| {
            // `mem_used_max` is printed with %ld; a negative value never occurs, but a
            // malformed file must be an error, not a panic.
            f.parse::<u64>()
                .map_err(|_| KernelError::parse(file, format!("bad field {f:?} in {text:?}")))
        })
        .collect()
}

/// Parses `mm_stat`: nine fields since 5.15, eight before (no `huge_pages_since`), seven before
/// 5.10 (no `huge_pages`).
pub fn parse_mm_stat(text: &str) -> Result<MmStat, KernelError> {
    let v = numbers("mm_stat", text)?;
    if !(7..=9).contains(&v.len()) {
        return Err(KernelError::parse(
            "mm_stat",
            format!("{} fields, expected 7 to 9: {:?}", v.len(), text.trim()),
        ));
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Ok(MmStat {
        orig_data_size: at(0),
        compr_data_size: at(1),
        mem_used_total: at(2),
        mem_limit: at(3),
        mem_used_max: at(4),
        same_pages: at(5),
        pages_compacted: at(6),
        huge_pages: at(7),
        huge_pages_since: at(8),
    })
}

/// Parses `io_stat` (four fields).
pub fn parse_io_stat(text: &str) -> Result<IoStat, KernelError> {
    let v = numbers("io_stat", text)?;
    if v.len() != 4 {
        return Err(KernelError::parse("io_stat", format!("expected 4 fields: {text:?}")));
    }
    Ok(IoStat { failed_reads: v[0], failed_writes: v[1], notify_free: v[3] })
}

/// Parses `bd_stat` (three fields).
pub fn parse_bd_stat(text: &str) -> Result<BdStat, KernelError> {
    let v = numbers("bd_stat", text)?;
    if v.len() != 3 {
        return Err(KernelError::parse("bd_stat", format!("expected 3 fields: {text:?}")));
    }
    Ok(BdStat { bd_count: v[0], bd_reads: v[1], bd_writes: v[2] })
}

/// A device's `comp_algorithm` parsed: the offered compressors and the selected one.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CompAlgorithms {
    /// In the kernel's order, brackets removed.
    pub available: Vec<String>,
    /// The bracketed one, if any.
    pub current: Option<String>,
}

/// Parses zram's `comp_algorithm` (or `recomp_algorithm`'s per-priority lines' tail), e.g.
/// `"lzo-rle [lzo] lz4 \n"`: names separated by spaces, the current one in brackets
/// (`zcomp.c: zcomp_available_show`). Odd tokens (`[`, `[]`) are skipped; repeats kept once.
pub fn parse_comp_algorithm(text: &str) -> CompAlgorithms {
    let mut out = CompAlgorithms::default();
    for token in text.split_whitespace() {
        let bracketed = token.starts_with('[') && token.ends_with(']') && token.len() >= 2;
        let name = token.trim_start_matches('[').trim_end_matches(']');
        if name.is_empty() {
            continue;
        }
        if bracketed && out.current.is_none() {
            out.current = Some(name.to_string());
        }
        if !out.available.iter().any(|n| n == name) {
            out.available.push(name.to_string());
        }
    }
    out
}

/// The algorithms of a `comp_algorithm` line (`lzo [lzo-rle] lz4`): every one offered, and the
/// selected one (in brackets), by the one parser of that attribute ([`parse_comp_algorithm`]).
pub fn parse_algorithms(line: &str) -> (Vec<String>, Option<String>) {
    let c = parse_comp_algorithm(line);
    (c.available, c.current)
}

/// A secondary (recompression) algorithm of a zram device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Secondary {
    /// Its priority, 1 to 3 (zram_drv.c `recomp_algorithm_store`).
    pub priority: u32,
    pub algorithm: String,
}

/// Parses `recomp_algorithm` (CONFIG_ZRAM_MULTI_COMP): one `#N: list [selected]` line per
/// configured secondary (zram_drv.c `recomp_algorithm_show`). Lines without a selection are
/// slots not configured and are left out.
pub fn parse_recomp_algorithm(text: &str) -> Result<Vec<Secondary>, KernelError> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let bad = || KernelError::parse("recomp_algorithm", format!("{line:?}"));
        let rest = line.trim().strip_prefix('#').ok_or_else(bad)?;
        let (prio, list) = rest.split_once(':').ok_or_else(bad)?;
        let priority = prio.trim().parse().map_err(|_| bad())?;
        if let (_, Some(algorithm)) = parse_algorithms(list) {
            out.push(Secondary { priority, algorithm });
        }
    }
    Ok(out)
}

/// zsmalloc's per-class statistics (`/sys/kernel/debug/zsmalloc/<pool>/classes`), summed over
/// the classes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClassTotals {
    /// Size classes listed.
    pub classes: u64,
    /// Objects the zspages have room for.
    pub obj_allocated: u64,
    /// Objects in use.
    pub obj_used: u64,
    /// Pages the zspages hold.
    pub pages_used: u64,
    /// Pages compaction could free: zsmalloc.c `zs_can_compact`, the whole zspages' worth of
    /// unused objects in each class (`freeable` column).
    pub freeable_pages: u64,
}

/// Parses a zsmalloc `classes` file by its header's column names (the fullness columns changed
/// across kernels; the named ones did not). The `Total` line is ignored: the sums are ours.
pub fn parse_zs_classes(text: &str) -> Result<ClassTotals, KernelError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| KernelError::parse("classes", "zsmalloc classes: empty"))?
        .split_whitespace()
        .collect();
    let col = |name: &str| {
        header.iter().position(|h| *h == name).ok_or_else(|| {
            KernelError::parse(
                "classes",
                format!("zsmalloc classes: no {name} column in {header:?}"),
            )
        })
    };
    let (alloc, used, pages, free) =
        (col("obj_allocated")?, col("obj_used")?, col("pages_used")?, col("freeable")?);
    let mut t = ClassTotals::default();
    for line in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Class rows start with the class index; the summary row starts with "Total".
        if f.first().is_none_or(|c| c.parse::<u64>().is_err()) {
            continue;
        }
        if f.len() != header.len() {
            return Err(KernelError::parse(
                "classes",
                format!(
                    "zsmalloc classes: {} fields where the header has {}: {line:?}",
                    f.len(),
                    header.len()
                ),
            ));
        }
        let n = |i: usize| {
            f[i].parse::<u64>()
                .map_err(|_| KernelError::parse("classes", format!("zsmalloc classes: {line:?}")))
        };
        t.classes += 1;
        t.obj_allocated += n(alloc)?;
        t.obj_used += n(used)?;
        t.pages_used += n(pages)?;
        t.freeable_pages += n(free)?;
    }
    Ok(t)
}

/// Parses `/proc/meminfo` into bytes (`Name:  123 kB`; the unitless lines, such as
/// `HugePages_Total`, are kept as given).
pub fn parse_meminfo(text: &str) -> Result<BTreeMap<String, u64>, KernelError> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let bad = || KernelError::parse("/proc/meminfo", format!("{line:?}"));
        let (k, v) = line.split_once(':').ok_or_else(bad)?;
        let mut f = v.split_whitespace();
        let n: u64 = f.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        let n = match f.next() {
            // Every sized line is in kB (`show_val_kb`); one past u64 in bytes is garbled.
            Some("kB") => n.checked_mul(1024).ok_or_else(bad)?,
            None => n,
            Some(_) => return Err(bad()),
        };
        out.insert(k.trim().to_string(), n);
    }
    Ok(out)
}

pub use crate::zswap_state::parse_bool_param;

/// Idle and written-back slots counted in a zram `block_state` debugfs file
/// (CONFIG_ZRAM_MEMORY_TRACKING; zram_drv.c `read_block_state`): one line per allocated slot,
/// `index  ac_time  flags`, where the flags are one column of letters or `.`
/// (`s`ame, `w`ritten back, `h`uge, `i`dle, then `r`ecompressed and `n` incompressible).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BlockStateCounts {
    pub slots: u64,
    pub idle: u64,
    pub written_back: u64,
}

/// Counts a `block_state` file's flags.
pub fn parse_block_state(text: &str) -> Result<BlockStateCounts, KernelError> {
    let mut c = BlockStateCounts::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 3 || f[0].parse::<u64>().is_err() {
            return Err(KernelError::parse("block_state", format!("{line:?}")));
        }
        let flags = f[2];
        // The flags are positional: s w h i (then r n on newer kernels).
        let at = |i: usize| flags.as_bytes().get(i).copied();
        c.slots += 1;
        c.written_back += u64::from(at(1) == Some(b'w'));
        c.idle += u64::from(at(3) == Some(b'i'));
    }
    Ok(c)
}

/// A value from a file or the machine shown on one line: every control character (line breaks
/// included) becomes a space, and the ends are trimmed. Set metadata is untrusted: a newline
/// in a host name must not start a line of its own in a report.
pub fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm_stat_nine_eight_and_seven_fields() {
        let s = parse_mm_stat(
            "159350784 54726144 56344576        0 56344576     1034        7     1200      1300\n",
        )
        .unwrap();
        assert_eq!(s.orig_data_size, 159_350_784);
        assert_eq!(s.compr_data_size, 54_726_144);
        assert_eq!(s.mem_used_total, 56_344_576);
        assert_eq!((s.same_pages, s.pages_compacted), (1034, 7));
        assert_eq!((s.huge_pages, s.huge_pages_since), (1200, 1300));
        let old = parse_mm_stat("1 2 3 4 5 6 7 8").unwrap();
        assert_eq!((old.huge_pages, old.huge_pages_since), (8, 0));
        assert_eq!(parse_mm_stat("1 2 3 4 5 6 7").unwrap().pages_compacted, 7);
        assert!(parse_mm_stat("1 2 3").is_err());
        assert!(parse_mm_stat("1 2 3 4 5 6 7 8 9 10").is_err());
        assert!(parse_mm_stat("1 2 3 4 5 6 x 8 9").is_err());
    }

    #[test]
    fn io_and_bd_stat() {
        let io = parse_io_stat("       3        4        0       99\n").unwrap();
        assert_eq!(io, IoStat { failed_reads: 3, failed_writes: 4, notify_free: 99 });
        assert!(parse_io_stat("1 2 3").is_err());
        let bd = parse_bd_stat("      10       20       30\n").unwrap();
        assert_eq!(bd, BdStat { bd_count: 10, bd_reads: 20, bd_writes: 30 });
        assert!(parse_bd_stat("1 2").is_err());
    }

    #[test]
    fn algorithms_and_secondaries() {
        let (offered, sel) = parse_algorithms("lzo [lzo-rle] lz4");
        assert_eq!(offered, ["lzo", "lzo-rle", "lz4"]);
        assert_eq!(sel.as_deref(), Some("lzo-rle"));
        assert_eq!(parse_algorithms("lzo lz4").1, None);
        let sec =
            parse_recomp_algorithm("#1: lzo lz4 [zstd]\n#2: [lz4hc] zstd\n#3: lzo zstd\n").unwrap();
        assert_eq!(
            sec,
            [
                Secondary { priority: 1, algorithm: "zstd".into() },
                Secondary { priority: 2, algorithm: "lz4hc".into() }
            ]
        );
        assert!(parse_recomp_algorithm("1: zstd").is_err());
    }

    // zsmalloc.c zs_stats_size_show's layout (6.6+: fullness in 10 % steps).
    const CLASSES: &str = " class  size       10%       20%       30%       40%       50%       60%       70%       80%       90%       99%      100% obj_allocated   obj_used pages_used pages_per_zspage freeable
     0    32         0         0         0         0         0         0         0         0         0         0         0             0          0          0                1        0
    10   176         0         1         0         0         0         0         0         0         0         0         3            92         70          4                4        0
    54   896         0         0         0         0         0         2         0         0         0         0         5            63         40         21                3        6
 Total                 0         1         0         0         0         2         0         0         0         0         8           155        110         25                         6
";

    #[test]
    fn zsmalloc_classes_sum_by_column_name() {
        let t = parse_zs_classes(CLASSES).unwrap();
        assert_eq!(
            t,
            ClassTotals {
                classes: 3,
                obj_allocated: 155,
                obj_used: 110,
                pages_used: 25,
                freeable_pages: 6
            }
        );
        // Before 6.6 the fullness columns were almost_full / almost_empty.
        let old = " class  size almost_full almost_empty obj_allocated   obj_used pages_used pages_per_zspage freeable\n    54   896           1           12           117         57         26                2       12\n   111  1808           0            0            63         63         28                4        0\n";
        let t = parse_zs_classes(old).unwrap();
        assert_eq!((t.classes, t.obj_used, t.pages_used, t.freeable_pages), (2, 120, 54, 12));
        assert!(parse_zs_classes("class size\n 0 32\n").is_err());
        assert!(parse_zs_classes("").is_err());
    }

    #[test]
    fn meminfo_in_bytes() {
        let m = parse_meminfo(
            "MemTotal:        8000000 kB\nZswap:              1234 kB\nHugePages_Total:       3\n",
        )
        .unwrap();
        assert_eq!(m["MemTotal"], 8_000_000 * 1024);
        assert_eq!(m["Zswap"], 1234 * 1024);
        assert_eq!(m["HugePages_Total"], 3);
        assert!(parse_meminfo("MemTotal 3 kB\n").is_err());
    }

    #[test]
    fn block_state_counts_idle_and_written_back() {
        let text = "           0       125.118161 .w.i\n           1       125.118161 s..i..\n         300       126.000000 ..h.\n";
        let c = parse_block_state(text).unwrap();
        assert_eq!(c, BlockStateCounts { slots: 3, idle: 2, written_back: 1 });
        assert!(parse_block_state("x y z\n").is_err());
    }

    #[test]
    fn bool_params() {
        assert_eq!(parse_bool_param("Y\n"), Some(true));
        assert_eq!(parse_bool_param("N"), Some(false));
        assert_eq!(parse_bool_param("maybe"), None);
    }
}
