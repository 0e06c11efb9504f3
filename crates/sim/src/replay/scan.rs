//! How much a memcg's reclaim scans of each LRU list at each priority: 6.18 mm/vmscan.c
//! `get_scan_count()`, its `calculate_pressure_balance()`, `shrink_lruvec()`'s proportional
//! nudge, and the costs mm/swap.c `lru_note_cost_unlock_irq()` keeps.
//!
//! With no file pages the file lists scan nothing, yet the balance still gives them their
//! share of the pressure ("at least a third of the pressure is applied, before swappiness"):
//! at the default swappiness of 60 and a settled anon cost, the anon lists are scanned at
//! about 90 / 510 of `size >> priority`. A memcg of 23,000 pages therefore scans nothing at
//! priorities 12 and 11 and reaches `SWAP_CLUSTER_MAX` reclaimed pages only near priority 6;
//! every priority on the way runs the shrinkers.

/// include/linux/swap.h `SWAP_CLUSTER_MAX`: pages isolated per `shrink_list()` call, and what
/// mm/memcontrol.c `try_charge_memcg()` asks `try_to_free_mem_cgroup_pages()` for at least.
pub(crate) const SWAP_CLUSTER_MAX: usize = 32;

/// include/linux/swap.h `MAX_SWAPPINESS`.
pub const MAX_SWAPPINESS: u32 = 200;

/// The lruvec's `anon_cost` and `file_cost`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Costs {
    pub anon: u64,
    pub file: u64,
}

impl Costs {
    /// `lru_note_cost_unlock_irq()` for one type's lists, as `shrink_inactive_list()` (and, one
    /// page of io, `lru_note_cost_refault()`) calls it: `nr_io * SWAP_CLUSTER_MAX + nr_rotated`,
    /// both costs halved once their sum passes a quarter of the LRU's `lru_size` pages.
    pub fn note(&mut self, file: bool, nr_io: u64, nr_rotated: u64, lru_size: u64) {
        let cost = nr_io * SWAP_CLUSTER_MAX as u64 + nr_rotated;
        if cost == 0 {
            return;
        }
        *(if file { &mut self.file } else { &mut self.anon }) += cost;
        if self.anon + self.file > lru_size / 4 {
            self.anon /= 2;
            self.file /= 2;
        }
    }
}

/// The four evictable lists in `for_each_evictable_lru()` order: inactive anon, active anon,
/// inactive file, active file.
pub(crate) type Lists = [u64; 4];

/// What `get_scan_count()` reads besides the list sizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanControl {
    pub priority: u32,
    pub swappiness: u32,
    pub costs: Costs,
    /// `prepare_scan_control()`'s `cache_trim_mode`.
    pub cache_trim_mode: bool,
    /// A memcg's own reclaim (`cgroup_reclaim()`), where swappiness 0 scans no anon; global
    /// reclaim "will swap to prevent OOM even with no swappiness".
    pub cgroup_reclaim: bool,
    /// `prepare_scan_control()`'s `file_is_tiny` (global reclaim only): `SCAN_ANON`.
    pub file_is_tiny: bool,
}

/// `get_scan_count()`'s `scan_balance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Balance {
    Equal,
    Anon,
    File,
    Fract(u64, u64),
}

/// `get_scan_count()`'s choice, in its order (no `SWAPPINESS_ANON_ONLY`: proactive only).
fn balance(sc: ScanControl) -> Balance {
    let swappiness = sc.swappiness.min(MAX_SWAPPINESS);
    if sc.cgroup_reclaim && swappiness == 0 {
        Balance::File
    } else if sc.priority == 0 && swappiness != 0 {
        Balance::Equal
    } else if sc.file_is_tiny {
        Balance::Anon
    } else if sc.cache_trim_mode {
        Balance::File
    } else {
        let (ap, fp) = pressure_balance(swappiness, sc.costs);
        Balance::Fract(ap, fp)
    }
}

/// `get_scan_count()` for one memcg's lruvec (online, no protection): every list's
/// `size >> priority`, then by the balance ([`balance`]): none of anon at swappiness 0 in a
/// memcg's reclaim (`SCAN_FILE`); all of each at priority 0 (`SCAN_EQUAL`); only the anon lists
/// where the file is tiny (`SCAN_ANON`); only the file lists in `cache_trim_mode`
/// (`SCAN_FILE`); else each type's fraction, rounded down (`SCAN_FRACT`, `div64_u64()`).
pub(crate) fn scan_targets(sizes: Lists, sc: ScanControl) -> Lists {
    let b = balance(sc);
    let mut nr = [0; 4];
    for (lru, (&size, n)) in sizes.iter().zip(&mut nr).enumerate() {
        let file = lru >= 2;
        let scan = size.checked_shr(sc.priority).unwrap_or(0);
        *n = match b {
            Balance::Equal => scan,
            Balance::Anon if file => 0,
            Balance::File if !file => 0,
            Balance::Anon | Balance::File => scan,
            Balance::Fract(ap, fp) => {
                let f = if file { fp } else { ap };
                (u128::from(scan) * u128::from(f) / u128::from(ap + fp)) as u64
            }
        };
    }
    nr
}

/// `shrink_lruvec()`'s nudge once a pass reclaimed what it asked for with both types still
/// to scan: the type with less left stops, and the other keeps to the share of its target
/// that the first had left (`percentage`), less what it already scanned.
pub(crate) fn proportional(nr: &mut Lists, targets: &Lists) {
    let (nr_anon, nr_file) = (nr[0] + nr[1], nr[2] + nr[3]);
    let (stop, go, percentage) = if nr_file > nr_anon {
        (0, 2, nr_anon * 100 / (targets[0] + targets[1] + 1))
    } else {
        (2, 0, nr_file * 100 / (targets[2] + targets[3] + 1))
    };
    nr[stop] = 0;
    nr[stop + 1] = 0;
    for lru in [go, go + 1] {
        let scanned = targets[lru] - nr[lru];
        nr[lru] = targets[lru] * (100 - percentage) / 100;
        nr[lru] -= nr[lru].min(scanned);
    }
}

/// `calculate_pressure_balance()`: the anon and file fractions.
fn pressure_balance(swappiness: u32, c: Costs) -> (u64, u64) {
    let total = c.anon + c.file;
    let anon_cost = total + c.anon;
    let file_cost = total + c.file;
    let total = anon_cost + file_cost;
    let ap = u64::from(swappiness) * (total + 1) / (anon_cost + 1);
    let fp = u64::from(MAX_SWAPPINESS - swappiness) * (total + 1) / (file_cost + 1);
    (ap, fp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_zswap::DEF_PRIORITY;

    /// Worked by hand from `calculate_pressure_balance()`: costs 0 give 60 : 140; a settled
    /// anon cost of 1000 gives ap = 60 * 3001 / 2001 = 89, fp = 140 * 3001 / 1001 = 419.
    #[test]
    fn the_balance_leaves_the_file_lists_their_share() {
        assert_eq!(pressure_balance(60, Costs::default()), (60, 140));
        assert_eq!(pressure_balance(60, Costs { anon: 1000, file: 0 }), (89, 419));
        assert_eq!(pressure_balance(200, Costs { anon: 1000, file: 0 }), (299, 0));
        // 23,040 pages: 5 at priority 12 -> 5 * 89 / 508 = 0; 720 at priority 5 -> 126.
        let c = Costs { anon: 1000, file: 0 };
        let anon = |priority, swappiness| {
            let sc = ScanControl { priority, swappiness, costs: c, ..memcg() };
            scan_targets([23_040, 0, 0, 0], sc)[0]
        };
        assert_eq!(anon(12, 60), 0);
        assert_eq!(anon(5, 60), 126);
        assert_eq!(anon(0, 60), 23_040, "SCAN_EQUAL");
        assert_eq!(anon(5, 0), 0, "swappiness 0: SCAN_FILE");
        assert_eq!(anon(5, 200), 720);
    }

    /// With page cache: `SCAN_FRACT` splits by the costs, `cache_trim_mode` scans only the
    /// file lists (not at priority 0, where `SCAN_EQUAL` comes first), swappiness 0 never anon.
    #[test]
    fn the_file_lists_take_their_fraction_or_everything_in_cache_trim_mode() {
        let sizes = [4096, 2048, 8192, 1024];
        let costs = Costs { anon: 100, file: 300 };
        let sc = ScanControl { priority: 4, swappiness: 60, costs, ..memcg() };
        // anon_cost 500, file_cost 700, total 1200: ap = 60 * 1201 / 501 = 143,
        // fp = 140 * 1201 / 701 = 239; 256 * 143 / 382 = 95, 128 -> 47, 512 -> 320, 64 -> 40.
        assert_eq!(pressure_balance(60, costs), (143, 239));
        assert_eq!(scan_targets(sizes, sc), [95, 47, 320, 40]);
        let trim = ScanControl { cache_trim_mode: true, ..sc };
        assert_eq!(scan_targets(sizes, trim), [0, 0, 512, 64]);
        let equal = ScanControl { priority: 0, ..trim };
        assert_eq!(scan_targets(sizes, equal), sizes, "SCAN_EQUAL before cache_trim_mode");
        let none = ScanControl { swappiness: 0, ..sc };
        assert_eq!(scan_targets(sizes, none), [0, 0, 512, 64]);
    }

    /// A memcg's reclaim at priority 12, nothing else set.
    fn memcg() -> ScanControl {
        ScanControl {
            priority: DEF_PRIORITY,
            swappiness: 60,
            costs: Costs::default(),
            cache_trim_mode: false,
            cgroup_reclaim: true,
            file_is_tiny: false,
        }
    }

    /// Global reclaim (kswapd, direct): swappiness 0 still leaves anon its fraction's zero
    /// rather than `SCAN_FILE`, so a tiny file forces the anon lists (`SCAN_ANON`) where a
    /// memcg would scan file only; `SCAN_EQUAL` needs swappiness; `file_is_tiny` comes after
    /// `SCAN_EQUAL` and before `cache_trim_mode`.
    #[test]
    fn global_reclaim_swaps_at_swappiness_0_where_the_file_is_tiny() {
        let sizes = [4096, 2048, 64, 32];
        let global = ScanControl { priority: 4, cgroup_reclaim: false, ..memcg() };
        let tiny = ScanControl { file_is_tiny: true, swappiness: 0, ..global };
        assert_eq!(scan_targets(sizes, tiny), [256, 128, 0, 0], "SCAN_ANON");
        let memcg0 = ScanControl { swappiness: 0, file_is_tiny: true, ..memcg() };
        assert_eq!(scan_targets(sizes, ScanControl { priority: 4, ..memcg0 }), [0, 0, 4, 2]);
        // Swappiness 0, not tiny: `SCAN_FRACT` with ap = 0, at priority 0 too (no SCAN_EQUAL).
        let zero = ScanControl { swappiness: 0, ..global };
        assert_eq!(scan_targets(sizes, zero), [0, 0, 4, 2]);
        assert_eq!(scan_targets(sizes, ScanControl { priority: 0, ..zero }), [0, 0, 64, 32]);
        let trim = ScanControl { cache_trim_mode: true, file_is_tiny: true, ..global };
        assert_eq!(scan_targets(sizes, trim), [256, 128, 0, 0], "file_is_tiny first");
    }

    /// `shrink_lruvec()`'s nudge, worked by hand: anon has 10 of 100 left (10 %), so it stops
    /// and file keeps 90 % of its targets less what it scanned.
    #[test]
    fn the_nudge_stops_the_smaller_type_and_scales_the_other() {
        let targets = [80, 20, 200, 100];
        let mut nr = [8, 2, 150, 90];
        proportional(&mut nr, &targets);
        // percentage = 10 * 100 / 101 = 9; file: 200 * 91 / 100 = 182 less 50 scanned = 132;
        // 100 * 91 / 100 = 91 less 10 scanned = 81.
        assert_eq!(nr, [0, 0, 132, 81]);
    }

    /// `lru_note_cost_unlock_irq()`: each page out costs a cluster, each rotation one; past a
    /// quarter of the LRU both halve.
    #[test]
    fn costs_add_and_decay() {
        let mut c = Costs { anon: 0, file: 10 };
        c.note(false, 2, 5, 1000);
        assert_eq!(c, Costs { anon: 69, file: 10 });
        c.note(false, 6, 0, 1000);
        assert_eq!(c, Costs { anon: 130, file: 5 }, "261 + 10 > 250: halved");
        c.note(false, 0, 0, 1000);
        assert_eq!(c, Costs { anon: 130, file: 5 }, "no cost, no decay");
        c.note(true, 0, 7, 1000);
        assert_eq!(c, Costs { anon: 130, file: 12 }, "a file rotation costs the file lists");
    }
}
