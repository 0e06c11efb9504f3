//! zsmalloc compaction (mm/zsmalloc.c `zs_compact()`): move objects out of the sparsest
//! zspages into the fullest ones of the same class until the class cannot free a whole zspage
//! any more.
//!
//! Per class, from the largest class index down (merged indices are visited once, as their
//! class: `zs_compact()` skips `class->index != i`), `__zs_compact()`: while
//! `zs_can_compact()`, `(objs_allocated - objs_inuse) / objs_per_zspage * pages_per_zspage`,
//! is above 0, hold a *destination* (`isolate_dst_zspage()`: the head of the fullest group, `_99`
//! down to `_10`, taken off its list and kept across rounds until it fills up) and take a
//! *source* (`isolate_src_zspage()`: the head of the sparsest group, `_10` up to `_99`).
//! Objects move in ascending slot order (`migrate_zspage()`, `find_alloced_obj()`), each into
//! the destination's free-list head, their handle rewritten to the new place, until the
//! destination is full or the source is empty. The source goes back to the head of its group's
//! list (`putback_zspage()`), or is released when empty (its pages are counted as freed); a
//! full destination goes back to the full list and is dropped. Each round either releases a
//! zspage or fills one, so the loop ends. A class is compacted under its own lock (the kernel
//! holds `class->lock` and write-holds the pool-wide `pool->lock` per class, and also drops the
//! destination when that lock is contended, which it never is here; objects never leave their
//! class, so here the class lock is enough).

use super::size_class::ClassState;
use super::zspage::{self, RATIO_0, RATIO_10, RATIO_99, RATIO_100, SlotWord};
use super::{ArenaGuard, ObjLoc};
use crate::handle::Handle;

impl ClassState {
    fn isolate(&mut self, groups: impl Iterator<Item = usize>) -> Option<u32> {
        for g in groups {
            if let Some(z) = self.lists.head(g) {
                self.lists.remove(z);
                return Some(z);
            }
        }
        None
    }

    /// `putback_zspage()`: files the zspage under its current group, at the head.
    fn putback(&mut self, z: u32) -> usize {
        let g = self.group_of(z);
        self.insert_zspage(z, g);
        g
    }

    /// `__zs_compact()` for this class, under its lock; `arena` is called to give back each
    /// zspage that empties. Returns the pages freed.
    pub(crate) fn compact<'a>(&mut self, arena: &dyn Fn() -> ArenaGuard<'a>) -> u64 {
        let ppz = self.class.pages_per_zspage as u64;
        let mut freed = 0;
        let mut dst: Option<u32> = None;
        while self.can_compact() > 0 {
            let d = match dst {
                Some(d) => d,
                None => match self.isolate((RATIO_10..=RATIO_99).rev()) {
                    Some(d) => d,
                    None => break,
                },
            };
            dst = Some(d);
            let Some(src) = self.isolate(RATIO_10..=RATIO_99) else { break };
            self.migrate(src, d);
            if self.putback(src) == RATIO_0 {
                self.free_zspage(src, &mut arena());
                freed += ppz;
            }
            if self.group_of(d) == RATIO_100 {
                self.putback(d);
                dst = None;
            }
        }
        if let Some(d) = dst {
            self.putback(d);
        }
        freed
    }

    /// `migrate_zspage()`: moves allocated objects from `src` to `dst` in ascending slot order.
    fn migrate(&mut self, src: u32, dst: u32) {
        let c = self.class;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(c.size, 0);
        for idx in 0..c.objs_per_zspage as u32 {
            let SlotWord::Allocated(h) = zspage::decode(self.read_word(src, idx)) else {
                continue;
            };
            let new_idx = self.obj_malloc(dst);
            self.zspage(src).chain.read(idx as usize * c.size, &mut scratch);
            self.zspage_mut(dst).chain.write(new_idx as usize * c.size, &scratch);
            // The handle was read from a slot this class wrote; it is live.
            let _ = self.handles.relocate(Handle(h), ObjLoc { zspage: dst, idx: new_idx });
            self.obj_free(src, idx);
            let (d, s) = (self.zspage(dst), self.zspage(src));
            if d.inuse as usize == c.objs_per_zspage || s.inuse == 0 {
                break;
            }
        }
        self.scratch = scratch;
    }
}

#[cfg(test)]
mod tests {
    use crate::{PoolConfig, ZPool, ZsPool};

    #[test]
    fn the_documented_1000_byte_example() {
        // docs/REFERENCES.md [zsmalloc-accounting]: 1000 objects of 1000 B -> 250 pages; free
        // every second one -> still 250; compact -> 125 pages, pages_compacted 125.
        let pool = ZsPool::new(&PoolConfig::default()).unwrap();
        let hs: Vec<_> = (0..1000).map(|_| pool.malloc(1000).unwrap()).collect();
        assert_eq!(pool.total_pages(), 250);
        for h in hs.iter().step_by(2) {
            pool.free(*h).unwrap();
        }
        assert_eq!(pool.total_pages(), 250);
        assert_eq!(pool.compact(), 125);
        assert_eq!((pool.total_pages(), pool.pages_compacted()), (125, 125));
        assert_eq!(pool.compact(), 0);
        pool.audit().unwrap();
    }

    #[test]
    fn the_measured_40_object_example() {
        // docs/REFERENCES.md [live-zsmalloc]: 40 x L=1000, zero every 2nd, compact: 10 -> 10 -> 5,
        // +5.
        let pool = ZsPool::new(&PoolConfig::default()).unwrap();
        let hs: Vec<_> = (0..40).map(|_| pool.malloc(1000).unwrap()).collect();
        assert_eq!(pool.total_pages(), 10);
        for h in hs.iter().skip(1).step_by(2) {
            pool.free(*h).unwrap();
        }
        assert_eq!(pool.total_pages(), 10);
        assert_eq!(pool.compact(), 5);
        assert_eq!(pool.total_pages(), 5);
        pool.audit().unwrap();
    }
}
