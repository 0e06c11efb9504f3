//! How much a memcg's reclaim scans of the anon lists at each priority: 6.18 mm/vmscan.c
//! `get_scan_count()` for a memcg with no page cache, its `calculate_pressure_balance()`, and
//! the costs mm/swap.c `lru_note_cost_unlock_irq()` keeps.
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

/// The lruvec's `anon_cost` and `file_cost` (the replay has no file pages: the file cost only
/// decays).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Costs {
    pub anon: u64,
    pub file: u64,
}

impl Costs {
    /// `lru_note_cost_unlock_irq()` for the anon lists, as `shrink_inactive_list()` calls it:
    /// `nr_io * SWAP_CLUSTER_MAX + nr_rotated`, both costs halved once their sum passes a
    /// quarter of the LRU's `lru_size` pages.
    pub fn note_anon(&mut self, nr_io: u64, nr_rotated: u64, lru_size: u64) {
        let cost = nr_io * SWAP_CLUSTER_MAX as u64 + nr_rotated;
        if cost == 0 {
            return;
        }
        self.anon += cost;
        if self.anon + self.file > lru_size / 4 {
            self.anon /= 2;
            self.file /= 2;
        }
    }
}

/// `get_scan_count()`'s target for one anon list of `size` pages at `priority` in a memcg's
/// reclaim: none at swappiness 0 (`SCAN_FILE`), the whole `size >> 0` at priority 0
/// (`SCAN_EQUAL`), else `(size >> priority) * ap / (ap + fp)` rounded down (`SCAN_FRACT`, an
/// online memcg's `div64_u64()`).
pub(crate) fn anon_scan(size: u64, priority: u32, swappiness: u32, costs: Costs) -> u64 {
    if swappiness == 0 {
        return 0;
    }
    let scan = size.checked_shr(priority).unwrap_or(0);
    if priority == 0 {
        return scan;
    }
    let (ap, fp) = pressure_balance(swappiness.min(MAX_SWAPPINESS), costs);
    (u128::from(scan) * u128::from(ap) / u128::from(ap + fp)) as u64
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

    /// Worked by hand from `calculate_pressure_balance()`: costs 0 give 60 : 140; a settled
    /// anon cost of 1000 gives ap = 60 * 3001 / 2001 = 89, fp = 140 * 3001 / 1001 = 419.
    #[test]
    fn the_balance_leaves_the_file_lists_their_share() {
        assert_eq!(pressure_balance(60, Costs::default()), (60, 140));
        assert_eq!(pressure_balance(60, Costs { anon: 1000, file: 0 }), (89, 419));
        assert_eq!(pressure_balance(200, Costs { anon: 1000, file: 0 }), (299, 0));
        // 23,040 pages: 5 at priority 12 -> 5 * 89 / 508 = 0; 720 at priority 5 -> 126.
        let c = Costs { anon: 1000, file: 0 };
        assert_eq!(anon_scan(23_040, 12, 60, c), 0);
        assert_eq!(anon_scan(23_040, 5, 60, c), 126);
        assert_eq!(anon_scan(23_040, 0, 60, c), 23_040, "SCAN_EQUAL");
        assert_eq!(anon_scan(23_040, 5, 0, c), 0, "swappiness 0: SCAN_FILE");
        assert_eq!(anon_scan(23_040, 5, 200, c), 720);
    }

    /// `lru_note_cost_unlock_irq()`: each page out costs a cluster, each rotation one; past a
    /// quarter of the LRU both halve.
    #[test]
    fn costs_add_and_decay() {
        let mut c = Costs { anon: 0, file: 10 };
        c.note_anon(2, 5, 1000);
        assert_eq!(c, Costs { anon: 69, file: 10 });
        c.note_anon(6, 0, 1000);
        assert_eq!(c, Costs { anon: 130, file: 5 }, "261 + 10 > 250: halved");
        c.note_anon(0, 0, 1000);
        assert_eq!(c, Costs { anon: 130, file: 5 }, "no cost, no decay");
    }
}
