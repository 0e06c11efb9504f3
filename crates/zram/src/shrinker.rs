//! The device's zsmalloc shrinker. zram_drv.c `zram_meta_alloc()` creates the pool with
//! `zs_create_pool(disk_name)`, and mm/zsmalloc.c `zs_register_shrinker()` registers
//! "mm-zspool:zram0" (`shrinker_alloc(0, ...)`: neither memcg- nor NUMA-aware). mm/shrinker.c
//! `shrink_slab()` runs such a shrinker only for the root memcg (global reclaim, or memcg
//! disabled; a child memcg's reclaim goes to `shrink_slab_memcg()`, which skips it): it asks
//! how many pages compaction could free (`zs_shrinker_count()`) and has it compact
//! (`zs_shrinker_scan()`), with no zram lock taken, and the pages it frees show in `mm_stat`'s
//! `pages_compacted` as the `compact` attribute's do. The arithmetic of how often it is asked
//! is the caller's (zmem-zswap's `do_shrink_slab`).

use crate::Zram;

impl Zram {
    /// `zs_shrinker_count()` of the device's pool (the sum of `zs_can_compact()` over the
    /// classes): pages compaction could free now; 0 before
    /// `disksize` or after `reset` (no pool, no shrinker).
    pub fn shrinker_count(&self) -> u64 {
        self.live().map_or(0, |l| l.pool.shrinker_count())
    }

    /// `zs_shrinker_scan()` of the device's pool: `zs_compact()`; `Some(pages freed)`, or
    /// `None` (`SHRINK_STOP`) when nothing was freed or there is no pool.
    pub fn shrinker_scan(&self) -> Option<u64> {
        self.live().and_then(|l| l.pool.shrinker_scan())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Zram, ZramConfig};

    #[test]
    fn the_pool_shrinker_compacts_and_counts_into_pages_compacted() {
        let z = Zram::new(ZramConfig::default()).unwrap();
        assert_eq!((z.shrinker_count(), z.shrinker_scan()), (0, None), "no pool before disksize");
        z.store("disksize", "4M").unwrap();
        // Pages that compress to about 1000 bytes; free every second slot.
        let page = |i: u64| {
            let mut p = vec![0u8; 4096];
            let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for b in &mut p[..950] {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            p
        };
        for i in 0..400 {
            z.write_page(i, &page(i)).unwrap();
        }
        for i in (0..400).step_by(2) {
            z.slot_free_notify(i);
        }
        let count = z.shrinker_count();
        assert!(count > 0);
        let before = z.mm_stat();
        let freed = z.shrinker_scan().expect("compaction frees pages");
        assert!(freed > 0 && freed <= count);
        let after = z.mm_stat();
        assert_eq!(after.pages_compacted, before.pages_compacted + freed);
        assert_eq!(after.mem_used_total, before.mem_used_total - freed * 4096);
        assert_eq!(z.shrinker_scan(), None);
    }
}
