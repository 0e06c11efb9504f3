//! The slot table: one 16-byte entry per page of the disk, as drivers/block/zram/zram_drv.h
//! `struct zram_table_entry` (its `dep_map` is empty without lockdep):
//! the allocator handle (or the fill word of a SAME slot, or the block index of a WB slot) and a
//! 32-bit word of object size plus flags. With CONFIG_ZRAM_TRACK_ENTRY_ACTIME each entry also has
//! its access time, in nanoseconds as 6.18's `ktime_t ac_time` (7.0 cut it to 32-bit seconds);
//! those live in a parallel array that exists only when tracking is on, so an entry costs 16
//! bytes without it and 24 with it, as in 6.18.
//!
//! The flags word keeps the object size in its low `PAGE_SHIFT + 1` bits and the kernel's
//! `zram_pageflags` above, in the kernel's order. One of them, ENTRY_LOCK, is the per-slot lock
//! (zram_drv.c `zram_slot_lock()`: a bit lock on `flags`): taking it is a compare-and-swap on
//! the word, so a slot costs no more memory than the kernel's
//! and readers and writers of different pages never contend.

use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::sync::{spin_loop, yield_now};

/// Flags in the kernel's order (`enum zram_pageflags`, 6.15+). Values are bit positions above
/// the size field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Flag {
    /// One repeated machine word; the word is in the handle field.
    Same = 0,
    /// The slot lock.
    EntryLock = 1,
    /// The data lives on the backing device; the handle field is the block index.
    Wb = 2,
    /// Selected for post-processing (writeback or recompression); any access clears it.
    PpSlot = 3,
    /// Stored raw, a whole page.
    Huge = 4,
    /// Marked idle by the `idle` attribute; any access clears it.
    Idle = 5,
    /// Every secondary algorithm failed to shrink it; recompression skips it.
    Incompressible = 6,
    /// Low bit of the 2-bit compression priority.
    Prio1 = 7,
    /// High bit of the priority.
    Prio2 = 8,
}

/// One entry. 16 bytes: the kernel's budget (the access time, when tracked, is beside it).
#[derive(Debug, Default)]
pub struct Slot {
    handle: AtomicU64,
    flags: AtomicU32,
}

// loom's atomics carry model state and are larger; the budget holds for the real build.
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Slot>() == 16);

/// The table and the geometry of its flags word.
#[derive(Debug)]
pub struct SlotTable {
    slots: Box<[Slot]>,
    /// Access times in nanoseconds, one per slot; empty when access times are not tracked.
    /// Read and written only under the slot's lock.
    ac_times: Box<[AtomicU64]>,
    /// Bits below this hold the object size (PAGE_SHIFT + 1).
    flag_shift: u32,
}

impl SlotTable {
    /// A table that tracks access times (the unit tests' table).
    #[cfg(test)]
    pub fn new(nr_pages: usize, page_size: usize) -> Self {
        Self::with_actime(nr_pages, page_size, true)
    }

    /// A table that tracks access times only if `track_actime`
    /// (CONFIG_ZRAM_TRACK_ENTRY_ACTIME); without, `ac_time` reads 0 and setting it does nothing.
    pub fn with_actime(nr_pages: usize, page_size: usize, track_actime: bool) -> Self {
        let slots = (0..nr_pages).map(|_| Slot::default()).collect();
        let ac_times = if track_actime {
            (0..nr_pages).map(|_| AtomicU64::new(0)).collect()
        } else {
            [].into()
        };
        Self { slots, ac_times, flag_shift: page_size.trailing_zeros() + 1 }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    fn bit(&self, f: Flag) -> u32 {
        1 << (self.flag_shift + f as u32)
    }

    /// Locks a slot, spinning briefly and then yielding: holders only ever do memory work.
    pub fn lock(&self, index: usize) -> SlotGuard<'_> {
        let slot = &self.slots[index];
        let lock = self.bit(Flag::EntryLock);
        let mut spins = 0u32;
        loop {
            let cur = slot.flags.load(Ordering::Relaxed);
            if cur & lock == 0
                && slot
                    .flags
                    .compare_exchange_weak(cur, cur | lock, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return SlotGuard { table: self, slot, index };
            }
            spins += 1;
            if spins < 64 {
                spin_loop();
            } else {
                yield_now();
            }
        }
    }

    /// Takes the lock only if it is free (`swap_slot_free_notify`'s trylock): `None` means the
    /// lock was seen held.
    ///
    /// A test, then a compare-and-swap, where the kernel uses `test_and_set_bit`: a failed
    /// attempt writes nothing, so every write to a flags word is made by the thread that takes,
    /// holds or releases its lock, and the lock orders them all. A `fetch_or` that found the lock
    /// held wrote the word back unchanged under the holder's plain stores: correct in the memory
    /// model, but loom 0.7 does not keep a read-modify-write atomic against a racing plain store
    /// (tokio-rs/loom#254) and reported lost flag updates that cannot happen.
    pub fn try_lock(&self, index: usize) -> Option<SlotGuard<'_>> {
        let slot = &self.slots[index];
        let lock = self.bit(Flag::EntryLock);
        let mut cur = slot.flags.load(Ordering::Relaxed);
        // The guard is built only once the lock is taken: building it first and dropping it on
        // failure released the holder's lock (found by tests/stress.rs: free_notify racing
        // writeback/recompress let a discard and a recompression own one slot at once;
        // tests/loom.rs fails if it comes back).
        while cur & lock == 0 {
            match slot.flags.compare_exchange(cur, cur | lock, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return Some(SlotGuard { table: self, slot, index }),
                // The word changed while the lock looked free: look again.
                Err(now) => cur = now,
            }
        }
        None
    }
}

/// A locked slot. Every field access goes through it; dropping it unlocks.
#[derive(Debug)]
pub struct SlotGuard<'a> {
    table: &'a SlotTable,
    slot: &'a Slot,
    index: usize,
}

impl SlotGuard<'_> {
    fn word(&self) -> u32 {
        // Relaxed: the lock's acquire/release orders every access made under it.
        self.slot.flags.load(Ordering::Relaxed)
    }

    fn set_word(&self, w: u32) {
        self.slot.flags.store(w, Ordering::Relaxed);
    }

    pub fn test(&self, f: Flag) -> bool {
        self.word() & self.table.bit(f) != 0
    }

    pub fn set(&self, f: Flag) {
        self.set_word(self.word() | self.table.bit(f));
    }

    pub fn clear(&self, f: Flag) {
        self.set_word(self.word() & !self.table.bit(f));
    }

    /// Object size in bytes (0 for none).
    pub fn size(&self) -> usize {
        (self.word() & ((1 << self.table.flag_shift) - 1)) as usize
    }

    pub fn set_size(&self, size: usize) {
        let mask = (1u32 << self.table.flag_shift) - 1;
        debug_assert!(size as u32 <= mask);
        self.set_word((self.word() & !mask) | (size as u32 & mask));
    }

    pub fn handle(&self) -> u64 {
        self.slot.handle.load(Ordering::Relaxed)
    }

    pub fn set_handle(&self, h: u64) {
        self.slot.handle.store(h, Ordering::Relaxed);
    }

    /// The compression priority that wrote this slot (0 = primary).
    pub fn priority(&self) -> usize {
        self.test(Flag::Prio1) as usize | (self.test(Flag::Prio2) as usize) << 1
    }

    pub fn set_priority(&self, prio: usize) {
        self.clear(Flag::Prio1);
        self.clear(Flag::Prio2);
        if prio & 1 != 0 {
            self.set(Flag::Prio1);
        }
        if prio & 2 != 0 {
            self.set(Flag::Prio2);
        }
    }

    /// Access time in nanoseconds (0: never accessed, or not tracked).
    pub fn ac_time(&self) -> u64 {
        self.table.ac_times.get(self.index).map_or(0, |t| t.load(Ordering::Relaxed))
    }

    pub fn set_ac_time(&self, t: u64) {
        if let Some(a) = self.table.ac_times.get(self.index) {
            a.store(t, Ordering::Relaxed);
        }
    }

    /// A slot holds something when it has a size, or is SAME or WB (`zram_allocated`).
    pub fn allocated(&self) -> bool {
        self.size() != 0 || self.test(Flag::Same) || self.test(Flag::Wb)
    }

    /// Clears everything but the lock: size, flags, handle, access time.
    pub fn reset(&self) {
        self.set_word(self.word() & self.table.bit(Flag::EntryLock));
        self.set_handle(0);
        self.set_ac_time(0);
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.slot.flags.fetch_and(!self.table.bit(Flag::EntryLock), Ordering::Release);
    }
}

// Under `--cfg loom` these would run outside a loom model; tests/loom.rs covers the lock there.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn size_and_flags_share_a_word_without_clobbering() {
        for page_size in [4096usize, 16384, 65536] {
            let t = SlotTable::new(4, page_size);
            let g = t.lock(1);
            g.set_size(page_size);
            g.set(Flag::Huge);
            g.set_priority(3);
            assert_eq!(g.size(), page_size);
            assert!(g.test(Flag::Huge) && !g.test(Flag::Idle));
            assert_eq!(g.priority(), 3);
            g.set_priority(2);
            assert_eq!(g.priority(), 2);
            g.set_size(17);
            assert_eq!(g.size(), 17);
            assert!(g.test(Flag::Huge));
            assert!(g.test(Flag::EntryLock));
            g.reset();
            assert!(!g.allocated());
            assert!(g.test(Flag::EntryLock), "reset keeps the lock held");
            drop(g);
            assert!(t.try_lock(1).is_some());
        }
    }

    /// 6.18's `zram_table_entry.ac_time` is a `ktime_t` (nanoseconds of boot time), kept only
    /// with CONFIG_ZRAM_TRACK_ENTRY_ACTIME; the entry itself stays 16 bytes.
    #[test]
    fn ac_time_is_nanoseconds_and_only_kept_when_tracked() {
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        let ns = 5_000_000_123_456u64; // past u32 and past u32 seconds' resolution
        let t = SlotTable::with_actime(2, 4096, true);
        t.lock(1).set_ac_time(ns);
        assert_eq!(t.lock(1).ac_time(), ns);
        assert_eq!(t.lock(0).ac_time(), 0);
        t.lock(1).reset();
        assert_eq!(t.lock(1).ac_time(), 0, "reset clears the access time");
        let untracked = SlotTable::with_actime(2, 4096, false);
        untracked.lock(1).set_ac_time(ns);
        assert_eq!(untracked.lock(1).ac_time(), 0);
    }

    #[test]
    fn try_lock_fails_while_held() {
        let t = SlotTable::new(2, 4096);
        let g = t.lock(0);
        assert!(t.try_lock(0).is_none());
        // A failed attempt leaves the holder's lock in place.
        assert!(t.try_lock(0).is_none(), "a failed try_lock released the holder's lock");
        assert!(g.test(Flag::EntryLock));
        assert!(t.try_lock(1).is_some());
        drop(g);
        assert!(t.try_lock(0).is_some());
    }

    #[test]
    fn the_lock_excludes() {
        let t = SlotTable::new(1, 4096);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        let g = t.lock(0);
                        // A non-atomic read-modify-write: lost updates would show without the lock.
                        let h = g.handle();
                        g.set_handle(h + 1);
                    }
                });
            }
        });
        assert_eq!(t.lock(0).handle(), 40_000);
    }
}
