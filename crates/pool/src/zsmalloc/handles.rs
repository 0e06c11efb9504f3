//! zsmalloc's handles: one table for the whole pool, in allocation order, as the kernel's
//! `zs_handle` slab cache, while each entry belongs to the class of its object.
//!
//! A handle is `(generation << 40) | (class slot << 32) | index` ([`tag_of`] gives the slot),
//! and entry `index` holds the object's location and size; generations wrap after 2^23 reuses
//! of an entry, skipping 0, so that no handle is 0 and every handle fits the 63 bits of
//! zsmalloc's slot header. The table is shared by
//! every class so that objects written one after another have their entries side by side: a
//! device read back in the order it was written then walks the table from start to end, where a
//! table per class (tried first) had each page's entry in another class's table and missed the
//! cache on most of them (warm reads 3-4 % slower, docs/BENCHMARKS.md).
//!
//! Entries are atomics, read and written `Relaxed`: the lock of the entry's class orders every
//! access to a live entry (its class allocates, moves and frees it under that lock), so the
//! atomics are only there to make a forged or stale handle harmless: it may name an entry of
//! another class, being changed under that class's lock, and reading it must not be a data race.
//! Such a handle fails the generation and class check. Indices come from one counter shared by
//! all classes; an index a class frees goes on that class's own free list and is reused by it.
//! The table grows in buckets of doubling size that never move, so no reader ever waits for a
//! growth.

use std::sync::Arc;

use super::ObjLoc;
use crate::PoolError;
use crate::handle::Handle;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Mutex, Ordering};

const GENERATION_BITS: u32 = 23;
const GENERATION_SHIFT: u32 = 40;
const TAG_SHIFT: u32 = 32;
/// Entries of the first bucket; bucket `k` has `FIRST << k`. Small under loom, where every
/// atomic is a modelled object.
const FIRST: u64 = if cfg!(loom) { 4 } else { 1024 };
const BUCKETS: usize = 32;

/// One handle's entry: `state` is `generation << 9 | tag << 1 | live`, `loc` the zspage and
/// object index, `size` the requested size.
#[derive(Debug)]
struct Entry {
    state: AtomicU64,
    loc: AtomicU64,
    size: AtomicU32,
}

impl Entry {
    fn new() -> Self {
        Self { state: AtomicU64::new(0), loc: AtomicU64::new(0), size: AtomicU32::new(0) }
    }
}

fn state(generation: u32, tag: u8) -> u64 {
    (u64::from(generation) << 9) | (u64::from(tag) << 1) | 1
}

/// The class slot a handle names.
pub(crate) fn tag_of(h: Handle) -> u8 {
    (h.0 >> TAG_SHIFT) as u8
}

fn handle(generation: u32, tag: u8, index: u32) -> Handle {
    Handle(
        (u64::from(generation) << GENERATION_SHIFT)
            | (u64::from(tag) << TAG_SHIFT)
            | u64::from(index),
    )
}

/// Which bucket holds `index`, and where in it.
fn bucket_of(index: u64) -> (usize, usize) {
    let k = (index / FIRST + 1).ilog2() as usize;
    (k, (index - FIRST * ((1 << k) - 1)) as usize)
}

/// The pool's table of handle entries.
#[derive(Debug)]
pub(crate) struct HandleSlab {
    buckets: [AtomicPtr<Entry>; BUCKETS],
    /// Indices handed out so far.
    next: AtomicU64,
    /// Serialises making a bucket.
    grow: Mutex<()>,
}

impl Default for HandleSlab {
    fn default() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            next: AtomicU64::new(0),
            grow: Mutex::new(()),
        }
    }
}

impl Drop for HandleSlab {
    fn drop(&mut self) {
        for (k, b) in self.buckets.iter_mut().enumerate() {
            let p = b.load(Ordering::Relaxed);
            if !p.is_null() {
                let len = (FIRST << k) as usize;
                // SAFETY: `p` came from `Box::into_raw` of a `len`-entry boxed slice in `entry`
                // (bucket `k` always has `len` entries) and is freed only here, once;
                // `&mut self` means no reference into it remains.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)) });
            }
        }
    }
}

impl HandleSlab {
    /// Entry `index`, if its bucket exists.
    fn entry(&self, index: u64) -> Option<&Entry> {
        let (k, at) = bucket_of(index);
        let p = self.buckets.get(k)?.load(Ordering::Acquire);
        // SAFETY: a non-null bucket pointer was published (Release, after the bucket was fully
        // built) by `make_bucket` and stays valid until the slab is dropped, which `&self`
        // rules out; `at` is below the bucket's length by `bucket_of`'s arithmetic.
        (!p.is_null()).then(|| unsafe { &*p.add(at) })
    }

    /// A fresh index, its bucket made if need be.
    fn fresh(&self) -> Result<u32, PoolError> {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        if index >= u64::from(u32::MAX) {
            return Err(PoolError::InvalidConfig("more than 2^32 handles".into()));
        }
        if self.entry(index).is_none() {
            self.make_bucket(bucket_of(index).0);
        }
        Ok(index as u32)
    }

    fn make_bucket(&self, k: usize) {
        let _g = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        if self.buckets[k].load(Ordering::Acquire).is_null() {
            let bucket: Box<[Entry]> = (0..FIRST << k).map(|_| Entry::new()).collect();
            let p = Box::into_raw(bucket).cast::<Entry>();
            self.buckets[k].store(p, Ordering::Release);
        }
    }

    /// Bytes of the buckets made so far.
    pub(crate) fn metadata_bytes(&self) -> usize {
        let made = self.buckets.iter().enumerate();
        made.filter(|(_, b)| !b.load(Ordering::Relaxed).is_null())
            .map(|(k, _)| (FIRST << k) as usize * std::mem::size_of::<Entry>())
            .sum()
    }
}

/// One class's view of the table: the handles it issues carry its tag, and the indices it
/// frees wait on its own free list. Used under the class's lock.
#[derive(Debug)]
pub(crate) struct ClassHandles {
    slab: Arc<HandleSlab>,
    tag: u8,
    free: Vec<u32>,
    live: usize,
}

impl ClassHandles {
    pub(crate) fn new(slab: Arc<HandleSlab>, tag: u8) -> Self {
        Self { slab, tag, free: Vec::new(), live: 0 }
    }

    /// The live entry `h` names, if `h` is a live handle of this class.
    fn live_entry(&self, h: Handle) -> Result<&Entry, PoolError> {
        let bad = PoolError::BadHandle(h.0);
        if tag_of(h) != self.tag {
            return Err(bad);
        }
        let Some(e) = self.slab.entry(h.0 & 0xffff_ffff) else { return Err(bad) };
        let generation = (h.0 >> GENERATION_SHIFT) as u32;
        if e.state.load(Ordering::Relaxed) != state(generation, self.tag) || generation == 0 {
            return Err(bad);
        }
        Ok(e)
    }

    /// Issues a handle for an object of `size` bytes at `loc`.
    pub(crate) fn insert(&mut self, loc: ObjLoc, size: usize) -> Result<Handle, PoolError> {
        let index = match self.free.pop() {
            Some(i) => i,
            None => self.slab.fresh()?,
        };
        let e = self.slab.entry(u64::from(index)).expect("an issued index has its bucket");
        // The generation of a never-used entry is 0; skip it, so that no handle is ever 0.
        let old = (e.state.load(Ordering::Relaxed) >> 9) as u32;
        let generation = ((old + 1) & ((1 << GENERATION_BITS) - 1)).max(1);
        e.loc.store((u64::from(loc.zspage) << 32) | u64::from(loc.idx), Ordering::Relaxed);
        e.size.store(size as u32, Ordering::Relaxed);
        e.state.store(state(generation, self.tag), Ordering::Relaxed);
        self.live += 1;
        Ok(handle(generation, self.tag, index))
    }

    /// The location and size of a live object of this class.
    pub(crate) fn get(&self, h: Handle) -> Result<(ObjLoc, usize), PoolError> {
        let e = self.live_entry(h)?;
        let loc = e.loc.load(Ordering::Relaxed);
        let loc = ObjLoc { zspage: (loc >> 32) as u32, idx: loc as u32 };
        Ok((loc, e.size.load(Ordering::Relaxed) as usize))
    }

    /// Records that the object moved (compaction).
    pub(crate) fn relocate(&self, h: Handle, loc: ObjLoc) -> Result<(), PoolError> {
        let e = self.live_entry(h)?;
        e.loc.store((u64::from(loc.zspage) << 32) | u64::from(loc.idx), Ordering::Relaxed);
        Ok(())
    }

    /// Retires a handle; returns where its object was. The entry keeps its generation (the
    /// next handle for it gets the one after) and goes on this class's free list.
    pub(crate) fn remove(&mut self, h: Handle) -> Result<(ObjLoc, usize), PoolError> {
        let got = self.get(h)?;
        let e = self.slab.entry(h.0 & 0xffff_ffff).expect("`get` found the entry");
        e.state.fetch_and(!1, Ordering::Relaxed);
        self.free.push((h.0 & 0xffff_ffff) as u32);
        self.live -= 1;
        Ok(got)
    }

    /// Live handles of this class.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Bytes of this class's free list (the table is counted once, by the pool).
    pub(crate) fn metadata_bytes(&self) -> usize {
        self.free.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(z: u32, i: u32) -> ObjLoc {
        ObjLoc { zspage: z, idx: i }
    }

    #[test]
    fn buckets_double_and_cover_every_index() {
        assert_eq!(bucket_of(0), (0, 0));
        assert_eq!(bucket_of(FIRST - 1), (0, FIRST as usize - 1));
        assert_eq!(bucket_of(FIRST), (1, 0));
        assert_eq!(bucket_of(3 * FIRST - 1), (1, 2 * FIRST as usize - 1));
        assert_eq!(bucket_of(3 * FIRST), (2, 0));
        let last = bucket_of(u64::from(u32::MAX) - 1);
        assert!(last.0 < BUCKETS && (last.1 as u64) < FIRST << last.0);
    }

    #[test]
    fn classes_share_the_table_in_allocation_order_and_refuse_each_others_handles() {
        let slab = Arc::new(HandleSlab::default());
        let (mut a, mut b) = (ClassHandles::new(slab.clone(), 3), ClassHandles::new(slab, 200));
        let ha = a.insert(loc(1, 2), 10).unwrap();
        let hb = b.insert(loc(3, 4), 20).unwrap();
        let ha2 = a.insert(loc(5, 6), 30).unwrap();
        // Indices 0, 1, 2: one sequence across the classes.
        let idx = |h: Handle| h.0 & 0xffff_ffff;
        assert_eq!((idx(ha), idx(hb), idx(ha2)), (0, 1, 2));
        assert_eq!(a.get(ha), Ok((loc(1, 2), 10)));
        assert_eq!(b.get(hb), Ok((loc(3, 4), 20)));
        assert!(a.get(hb).is_err() && b.get(ha).is_err(), "another class's handle");
        // A handle with this class's tag but another class's index.
        let forged = Handle((hb.0 & !(0xff << TAG_SHIFT)) | (3 << TAG_SHIFT));
        assert!(a.get(forged).is_err());
        a.relocate(ha, loc(7, 8)).unwrap();
        assert_eq!(a.get(ha), Ok((loc(7, 8), 10)));
        assert_eq!(a.remove(ha), Ok((loc(7, 8), 10)));
        assert!(a.get(ha).is_err() && a.remove(ha).is_err(), "stale after free");
        // The freed index is this class's to reuse, with the next generation.
        let again = a.insert(loc(9, 9), 1).unwrap();
        assert_eq!(idx(again), idx(ha));
        assert_ne!(again, ha);
        assert!(a.get(ha).is_err());
        assert_eq!((a.len(), b.len()), (2, 1));
        assert!(a.get(Handle(0)).is_err() && a.get(Handle(u64::MAX)).is_err());
    }

    #[test]
    fn the_table_grows_past_its_first_buckets_and_wraps_generations_without_handle_zero() {
        let slab = Arc::new(HandleSlab::default());
        let mut c = ClassHandles::new(slab.clone(), 255);
        let n = (FIRST * 7) as u32;
        let hs: Vec<Handle> = (0..n).map(|i| c.insert(loc(i, i), i as usize).unwrap()).collect();
        for (i, &h) in hs.iter().enumerate() {
            assert_eq!(c.get(h), Ok((loc(i as u32, i as u32), i)));
        }
        assert!(slab.metadata_bytes() >= n as usize * std::mem::size_of::<Entry>());
        let mut h = hs[5];
        let rounds = if cfg!(miri) { 3 } else { (1 << GENERATION_BITS) + 2 };
        for _ in 0..rounds {
            c.remove(h).unwrap();
            h = c.insert(loc(0, 0), 1).unwrap();
            assert!(h.0 != 0 && h.0 < 1 << 63 && (h.0 >> TAG_SHIFT) as u8 == 255);
        }
    }
}
