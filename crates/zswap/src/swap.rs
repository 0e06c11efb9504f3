//! The swap layer around the cache: what happens to a page between reclaim choosing it and
//! the swap device, and back. This is the one path into zswap and the device for everything
//! that swaps (the lab's replay and allocator study, tests, library users).
//!
//! Out (`swap_writeout()`, mm/page_io.c, 6.18), one folio at a time (a page, or a large folio
//! such as a THP's 512 pages: [`SwapLayer::swap_out_folio`]): an all-zero folio
//! (`is_folio_zero_filled()`, every word of every subpage) only sets its slots' bits in the swap
//! area's zeromap (6.12+) and reaches neither zswap nor the device; any other folio, whole, with
//! its zero subpages, clears the bits and is offered to `zswap_store()`; a folio zswap rejects
//! is written to the device (`__swap_writepage()`), unless the memcg has
//! `memory.zswap.writeback` at 0 (`mem_cgroup_zswap_writeback_enabled()`), in which case it
//! stays in RAM (`folio_mark_dirty()` + `AOP_WRITEPAGE_ACTIVATE`, which mm/vmscan.c `pageout()`
//! turns into `PAGE_ACTIVATE`: `shrink_folio_list()` activates it and moves on). After the
//! store, the shrink worker the store may have queued runs, and, unless the caller runs them
//! itself ([`SwapLayer::set_slab_reclaim`]), mm/shrinker.c `shrink_slab()` runs the shrinkers
//! (zswap's, its pools' zsmalloc compaction, the device's) with `do_shrink_slab()`'s arithmetic
//! ([`crate::shrinker`]).
//!
//! In (mm/page_io.c `swap_read_folio()`): the zeromap (`swap_read_folio_zeromap()`), else
//! `zswap_load()`, else the device; a page read from the device is counted for the shrinker
//! (`zswap_folio_swapin()`). [`SwapLayer::swap_in`] then frees the slot, as when the swap
//! entry's last reference goes (mm/swapfile.c `swap_entries_free()` → `swap_range_free()`: the
//! zeromap bit is cleared, `zswap_invalidate()`, and, for a block device, its
//! `swap_slot_free_notify`, which frees a zram slot). That is 6.18 for zram
//! (`SWP_SYNCHRONOUS_IO`, swap count 1: mm/memory.c `do_swap_page()` reads into a private folio
//! and `swap_free_nr()` drops the last reference); a fault through the swap cache keeps the
//! slot in 6.18 unless `should_try_to_free_swap()` (swap over half full, `VM_LOCKED`, or a
//! write fault on an exclusive folio), so a clean page read back from a swap file could be
//! reclaimed again without a write. Here every swap-in frees its slot (a simplification).
//!
//! The device is anything that stores pages by offset ([`SwapDevice`]): a [`SwapFile`], or a
//! zram device (the lab implements the trait for it, so zram swap gets the same zeromap). zswap
//! is optional, as in the kernel, where it is a frontswap in front of whatever swap device.
//!
//! What is timed is the caller's business: [`SwapHook::around`] wraps each store, load and
//! device I/O, so the lab can time `zswap_store`/`zswap_load` as seed 001's bpftrace did
//! (docs/REFERENCES.md [seed-001]; and leave the device out), or charge device I/O with a latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::shrinker::{
    DEF_PRIORITY, NrDeferred, ShrinkSlab, Shrinker, ZPoolShrinker, do_shrink_slab,
};
use crate::{ObjectSource, StoreOutcome, SwapFile, Zswap, ZswapError};

/// The block device behind a swap area, by page offset.
pub trait SwapDevice: Send + Sync {
    fn write_page(&self, offset: u64, page: &[u8]) -> Result<(), ZswapError>;
    fn read_page(&self, offset: u64, out: &mut [u8]) -> Result<(), ZswapError>;
    /// [`SwapDevice::write_page`], a device that compresses (zram) taking the page's object
    /// from `objects` (asked for by `offset`) where it has one ([`ObjectSource`]). A device
    /// that stores pages as they are ignores `objects`.
    fn write_page_with(
        &self,
        offset: u64,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<(), ZswapError> {
        let _ = objects;
        self.write_page(offset, page)
    }
    /// `block_device_operations.swap_slot_free_notify`, called by mm/swapfile.c
    /// `swap_range_free()` for a block device: the swap entry at `offset` is gone. A file
    /// ignores it; zram frees the slot (`zram_slot_free_notify()`).
    fn free_slot(&self, _offset: u64) {}
    /// The device's memory-pressure shrinker, if it has one: zram's zsmalloc pool registers
    /// "mm-zspool:zram0" (mm/zsmalloc.c `zs_register_shrinker()`, not memcg-aware), which
    /// compacts the pool when `shrink_slab()` runs for the root memcg. The swap layer keeps
    /// its deferred work and runs it in [`SwapLayer::shrink_slab`].
    fn shrinker(&self) -> Option<&dyn Shrinker> {
        None
    }
    /// `SWP_SYNCHRONOUS_IO`: set at swapon for a `bdev_synchronous()` device (zram; mm/swapfile.c,
    /// `SYSCALL_DEFINE2(swapon)`), not for a swap file. `do_swap_page()` (mm/memory.c) reads a
    /// faulting entry of such a device whose swap count is 1 straight into a private folio,
    /// without the swap cache and without readahead.
    fn synchronous_io(&self) -> bool {
        false
    }
}

impl SwapDevice for SwapFile {
    fn write_page(&self, offset: u64, page: &[u8]) -> Result<(), ZswapError> {
        SwapFile::write_page(self, offset, page)
    }
    fn read_page(&self, offset: u64, out: &mut [u8]) -> Result<(), ZswapError> {
        SwapFile::read_page(self, offset, out)
    }
}

impl<D: SwapDevice + ?Sized> SwapDevice for Arc<D> {
    fn write_page(&self, offset: u64, page: &[u8]) -> Result<(), ZswapError> {
        (**self).write_page(offset, page)
    }
    fn read_page(&self, offset: u64, out: &mut [u8]) -> Result<(), ZswapError> {
        (**self).read_page(offset, out)
    }
    fn write_page_with(
        &self,
        offset: u64,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<(), ZswapError> {
        (**self).write_page_with(offset, page, objects)
    }
    fn free_slot(&self, offset: u64) {
        (**self).free_slot(offset)
    }
    fn shrinker(&self) -> Option<&dyn Shrinker> {
        (**self).shrinker()
    }
    fn synchronous_io(&self) -> bool {
        (**self).synchronous_io()
    }
}

/// The steps a [`SwapHook`] sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `zswap_store()`.
    ZswapStore,
    /// `zswap_load()`.
    ZswapLoad,
    /// A page written to the swap device.
    DeviceWrite,
    /// A page read from the swap device.
    DeviceRead,
}

/// Sees each stage of a swap-out or swap-in, around the call that does it.
pub trait SwapHook {
    fn around<R>(&mut self, _stage: Stage, f: impl FnOnce() -> R) -> R {
        f()
    }

    /// A swap-in finished, from `from`: a hook that times swap-ins end to end learns here
    /// whether a `zswap_load()` it saw was a hit or a miss that went on to the device.
    fn swapped_in(&mut self, _from: SwapIn) {}
}

/// No hook.
impl SwapHook for () {}

/// Where a page went on swap-out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapOut {
    /// All zeros: only the zeromap bit.
    Zeromap,
    /// Kept by zswap.
    Zswap,
    /// Written to the swap device (rejected by zswap, or no zswap).
    Device,
    /// zswap rejected it and the memcg forbids writeback: the page stays in RAM, activated.
    KeptInRam,
}

/// Where a page came from on swap-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapIn {
    Zeromap,
    Zswap,
    Device,
}

/// Whose shrinkers a reclaim pass runs (vmscan's `shrink_slab()` with the memcg it reclaims).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlabScope {
    /// Reclaim of the root memcg (kswapd, or a machine out of memory): every shrinker
    /// (mm/shrinker.c `shrink_slab()` walks `shrinker_list`).
    Global,
    /// A memcg's own reclaim (its `memory.max` / `memory.high`): mm/shrinker.c
    /// `shrink_slab_memcg()`, only the `SHRINKER_MEMCG_AWARE` shrinkers (zswap's; not
    /// zsmalloc's).
    Memcg,
}

/// The shrinker pass [`SwapLayer::swap_out`] runs after each store: at which reclaim priority,
/// over which shrinkers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabReclaim {
    pub priority: u32,
    pub scope: SlabScope,
}

impl Default for SlabReclaim {
    /// `DEF_PRIORITY` (12, include/linux/mmzone.h; the priority a reclaim pass that meets its target
    /// never leaves: mm/vmscan.c `do_try_to_free_pages()` lowers it only while short), all
    /// shrinkers.
    fn default() -> Self {
        Self { priority: DEF_PRIORITY, scope: SlabScope::Global }
    }
}

/// What one [`SwapLayer::shrink_slab`] did, by shrinker.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SlabShrinkResult {
    /// zswap's shrinker (entries written back).
    pub zswap: ShrinkSlab,
    /// The allocator shrinkers of zswap's pools, the current pool last (pages compacted).
    pub zswap_pools: Vec<ShrinkSlab>,
    /// The device's shrinker (zram's zsmalloc pool: pages compacted).
    pub device: ShrinkSlab,
}

impl SlabShrinkResult {
    /// Objects freed by every shrinker (`shrink_slab()`'s return).
    pub fn freed(&self) -> u64 {
        self.zswap.freed + self.zswap_pools.iter().map(|s| s.freed).sum::<u64>() + self.device.freed
    }
}

/// A swap area: its zeromap, zswap (optional) and the device. Shared by threads as the
/// kernel's is: the zeromap's bits are atomic, zswap and the device lock themselves.
pub struct SwapLayer {
    page_size: usize,
    nr_slots: u64,
    zeromap: Box<[AtomicU64]>,
    zswap: Option<Zswap>,
    device: Box<dyn SwapDevice>,
    writeback: bool,
    /// zswap's shrinker's `nr_deferred`.
    zswap_deferred: NrDeferred,
    /// The device's shrinker's `nr_deferred`.
    device_deferred: NrDeferred,
    slab_reclaim: Option<SlabReclaim>,
}

impl std::fmt::Debug for SwapLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapLayer")
            .field("page_size", &self.page_size)
            .field("nr_slots", &self.nr_slots)
            .field("zswap", &self.zswap.is_some())
            .field("writeback", &self.writeback)
            .finish_non_exhaustive()
    }
}

impl SwapLayer {
    /// A swap area of `nr_slots` pages on `device`, with no zswap in front (zram swap).
    pub fn new(device: Box<dyn SwapDevice>, page_size: usize, nr_slots: u64) -> Self {
        Self {
            page_size,
            nr_slots,
            zeromap: (0..nr_slots.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            zswap: None,
            device,
            writeback: true,
            zswap_deferred: NrDeferred::default(),
            device_deferred: NrDeferred::default(),
            slab_reclaim: Some(SlabReclaim::default()),
        }
    }

    /// zswap in front of its own swap file, with zswap's `memory.zswap.writeback` setting
    /// (which also decides what happens to a page zswap rejects).
    pub fn with_zswap(zswap: Zswap) -> Self {
        let file: Arc<SwapFile> = Arc::clone(zswap.swap_file());
        let mut s = Self::new(Box::new(file.clone()), zswap.page_size(), file.nr_slots());
        s.writeback = zswap.writeback_enabled();
        s.zswap = Some(zswap);
        s
    }

    pub fn zswap(&self) -> Option<&Zswap> {
        self.zswap.as_ref()
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Whether the device is `SWP_SYNCHRONOUS_IO` ([`SwapDevice::synchronous_io`]): swap-in
    /// faults on it read only their own page (no swap cache, no readahead).
    pub fn synchronous_io(&self) -> bool {
        self.device.synchronous_io()
    }

    /// The shrinker pass each [`SwapLayer::swap_out`] runs after its store; `None`: none, the
    /// caller runs [`SwapLayer::shrink_slab`] itself, as vmscan does once per pass over the
    /// LRU (`shrink_node()`: `shrink_lruvec()` then `shrink_slab()`), at the pass's priority.
    /// The default, one pass per swap-out at `DEF_PRIORITY` over every shrinker, is a reclaim
    /// that always meets its target (so its priority never drops) and calls the shrinkers
    /// once per page rather than once per batch of `SWAP_CLUSTER_MAX`.
    pub fn set_slab_reclaim(&mut self, reclaim: Option<SlabReclaim>) {
        self.slab_reclaim = reclaim;
    }

    pub fn slab_reclaim(&self) -> Option<SlabReclaim> {
        self.slab_reclaim
    }

    /// mm/shrinker.c `shrink_slab()` over this swap area's shrinkers at reclaim priority
    /// `priority` (`DEF_PRIORITY` 12 down to 0; see [`crate::shrinker`]), each with its own
    /// deferred work, in `shrinker_list` order (`shrinker_register()` adds at the tail):
    /// zswap's ("mm-zswap"), then the allocator shrinkers of zswap's pools ("mm-zspool:...";
    /// mm/zswap.c `zswap_setup()` registers its shrinker before it creates its first pool),
    /// then the device's ([`SwapDevice::shrinker`]). [`SlabScope::Memcg`] runs only the memcg-aware
    /// ones (zswap's).
    pub fn shrink_slab(&self, priority: u32, scope: SlabScope) -> SlabShrinkResult {
        let mut r = SlabShrinkResult::default();
        let global = scope == SlabScope::Global;
        if let Some(z) = &self.zswap {
            r.zswap = do_shrink_slab(z, &self.zswap_deferred, priority);
            if global {
                for p in z.pools() {
                    let s = ZPoolShrinker(&*p.zpool);
                    r.zswap_pools.push(do_shrink_slab(&s, &p.nr_deferred, priority));
                }
            }
        }
        if let Some(s) = self.device.shrinker()
            && (global || s.memcg_aware())
        {
            r.device = do_shrink_slab(s, &self.device_deferred, priority);
        }
        r
    }

    fn check(&self, offset: u64, len: usize) -> Result<(), ZswapError> {
        if len != self.page_size {
            return Err(ZswapError::BadLength { len, page_size: self.page_size });
        }
        if offset >= self.nr_slots {
            return Err(ZswapError::OffsetOutOfRange { offset, slots: self.nr_slots });
        }
        Ok(())
    }

    fn zero_bit(&self, offset: u64) -> bool {
        self.zeromap[(offset / 64) as usize].load(Ordering::Relaxed) & (1 << (offset % 64)) != 0
    }

    fn set_zero_bit(&self, offset: u64, on: bool) {
        let (word, bit) = (&self.zeromap[(offset / 64) as usize], 1u64 << (offset % 64));
        if on {
            word.fetch_or(bit, Ordering::Relaxed);
        } else {
            word.fetch_and(!bit, Ordering::Relaxed);
        }
    }

    /// mm/page_io.c `swap_writeout()`: `page` leaves RAM for swap slot `offset`. Then, with
    /// [`SwapLayer::set_slab_reclaim`]'s setting, one `shrink_slab()` pass, whatever became of
    /// the page (the pass belongs to the reclaim, not to the page).
    pub fn swap_out(
        &self,
        offset: u64,
        page: &[u8],
        hook: &mut impl SwapHook,
    ) -> Result<SwapOut, ZswapError> {
        self.check(offset, page.len())?;
        self.swap_out_folio(offset, page, hook)
    }

    /// [`SwapLayer::swap_out`], the page's compressed object taken from `objects` (asked for
    /// by `offset`) where zswap, or a device that compresses (zram), would compress it
    /// ([`Zswap::store_folio_with`], [`SwapDevice::write_page_with`]); the same swap-out
    /// otherwise.
    pub fn swap_out_with(
        &self,
        offset: u64,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
        hook: &mut impl SwapHook,
    ) -> Result<SwapOut, ZswapError> {
        self.check(offset, page.len())?;
        self.writeout_folio(offset, page, objects, hook)
    }

    /// `swap_writeout()` of a folio: one page, or a large folio of a power-of-two number of
    /// pages (a THP: 512) at slots `offset..offset + nr`. 6.18 decides a folio as a whole
    /// (mm/page_io.c `swap_writeout()`): `is_folio_zero_filled()` is true only when every word
    /// of every subpage is zero, and then every slot's zeromap bit is set
    /// (`swap_zeromap_folio_set()`, `swpout_zero` += nr); a folio with one non-zero word
    /// anywhere clears its bits (`swap_zeromap_folio_clear()`) and goes whole to
    /// `zswap_store()` ([`Zswap::store_folio`]: all its pages, or none) and, failing that, to
    /// the device, where a zram device sees each page (its own same-filled check then counts
    /// the zero subpages in `same_pages`). One [`SwapOut`] for the whole folio.
    pub fn swap_out_folio(
        &self,
        offset: u64,
        folio: &[u8],
        hook: &mut impl SwapHook,
    ) -> Result<SwapOut, ZswapError> {
        self.writeout_folio(offset, folio, None, hook)
    }

    /// A checked folio's `swap_writeout()`, then the reclaim's `shrink_slab()` pass.
    fn writeout_folio(
        &self,
        offset: u64,
        folio: &[u8],
        objects: Option<&dyn ObjectSource>,
        hook: &mut impl SwapHook,
    ) -> Result<SwapOut, ZswapError> {
        self.check_folio(offset, folio.len())?;
        let out = self.writeout(offset, folio, objects, hook);
        if let Some(r) = self.slab_reclaim {
            self.shrink_slab(r.priority, r.scope);
        }
        out
    }

    /// A power-of-two number of whole pages, all inside the swap area.
    fn check_folio(&self, offset: u64, len: usize) -> Result<u64, ZswapError> {
        crate::folio_pages(offset, len, self.page_size, self.nr_slots)
    }

    /// Writes each page of `folio` to the device at its slot.
    fn device_write_folio(
        &self,
        offset: u64,
        folio: &[u8],
        objects: Option<&dyn ObjectSource>,
        hook: &mut impl SwapHook,
    ) -> Result<(), ZswapError> {
        for (i, page) in folio.chunks_exact(self.page_size).enumerate() {
            let o = offset + i as u64;
            hook.around(Stage::DeviceWrite, || self.device.write_page_with(o, page, objects))?;
        }
        Ok(())
    }

    fn writeout(
        &self,
        offset: u64,
        folio: &[u8],
        objects: Option<&dyn ObjectSource>,
        hook: &mut impl SwapHook,
    ) -> Result<SwapOut, ZswapError> {
        let nr = (folio.len() / self.page_size) as u64;
        if is_zero_filled(folio) {
            // A zero folio replaces whatever its slots held before. (6.18's `swap_writeout()`
            // does not invalidate here: a slot being written out never has a zswap entry, as
            // `swap_range_free()` and `zswap_load()` into the swap cache drop them; this is a
            // no-op kept for callers that reuse a slot without freeing it.)
            for o in offset..offset + nr {
                if let Some(z) = &self.zswap {
                    z.invalidate(o);
                }
                self.set_zero_bit(o, true);
            }
            return Ok(SwapOut::Zeromap);
        }
        for o in offset..offset + nr {
            self.set_zero_bit(o, false);
        }
        let Some(z) = &self.zswap else {
            self.device_write_folio(offset, folio, objects, hook)?;
            return Ok(SwapOut::Device);
        };
        let outcome =
            hook.around(Stage::ZswapStore, || z.store_folio_with(offset, folio, objects))?;
        let out = match outcome {
            StoreOutcome::Stored { .. } => SwapOut::Zswap,
            StoreOutcome::Rejected(_) if !self.writeback => SwapOut::KeptInRam,
            StoreOutcome::Rejected(_) => {
                self.device_write_folio(offset, folio, objects, hook)?;
                SwapOut::Device
            }
        };
        z.run_pending_work();
        Ok(out)
    }

    /// mm/page_io.c `swap_read_folio()` and then the slot's release: the page at `offset` comes
    /// back into `out`, and the swap slot is free again (zram's path in 6.18; see the module
    /// comment for the swap-cache path, which may keep the slot).
    pub fn swap_in(
        &self,
        offset: u64,
        out: &mut [u8],
        hook: &mut impl SwapHook,
    ) -> Result<SwapIn, ZswapError> {
        let from = self.read(offset, out, hook)?;
        self.free(offset);
        Ok(from)
    }

    /// mm/page_io.c `swap_read_folio()`: reads slot `offset` without freeing it (zswap's loads
    /// into the swap cache are exclusive all the same: mm/zswap.c `zswap_load()` erases the
    /// entry and dirties the folio).
    pub fn read(
        &self,
        offset: u64,
        out: &mut [u8],
        hook: &mut impl SwapHook,
    ) -> Result<SwapIn, ZswapError> {
        self.check(offset, out.len())?;
        if self.zero_bit(offset) {
            out.fill(0);
            hook.swapped_in(SwapIn::Zeromap);
            return Ok(SwapIn::Zeromap);
        }
        if let Some(z) = &self.zswap
            && hook.around(Stage::ZswapLoad, || z.load(offset, out))?
        {
            hook.swapped_in(SwapIn::Zswap);
            return Ok(SwapIn::Zswap);
        }
        hook.around(Stage::DeviceRead, || self.device.read_page(offset, out))?;
        if let Some(z) = &self.zswap {
            // `zswap_folio_swapin()`: a page zswap wrote back was still in use.
            z.note_disk_swapin();
        }
        hook.swapped_in(SwapIn::Device);
        Ok(SwapIn::Device)
    }

    /// mm/swapfile.c `swap_entries_free()` → `swap_range_free()`: slot `offset` holds nothing
    /// any more (zeromap bit, `zswap_invalidate()`, the device's `swap_slot_free_notify`).
    pub fn free(&self, offset: u64) {
        if offset >= self.nr_slots {
            return;
        }
        self.set_zero_bit(offset, false);
        if let Some(z) = &self.zswap {
            z.invalidate(offset);
        }
        self.device.free_slot(offset);
    }
}

/// `is_folio_zero_filled()` (mm/page_io.c): every 8-byte word of every page is zero.
fn is_zero_filled(folio: &[u8]) -> bool {
    let mut words = folio.chunks_exact(64);
    words.all(|c| c.iter().fold(0u8, |a, &b| a | b) == 0)
        && words.remainder().iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ZswapConfig;

    fn layer(cfg: ZswapConfig, slots: u64) -> SwapLayer {
        let file = Arc::new(SwapFile::in_memory(cfg.page_size, slots));
        SwapLayer::with_zswap(Zswap::new(&cfg, file).unwrap())
    }

    fn text_page(seed: u8) -> Vec<u8> {
        (0..4096u32).map(|i| (i / 64) as u8 ^ seed).collect()
    }

    /// Bytes no compressor can shrink.
    fn noise_page(seed: u64) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        zmem_pages::prng::SplitMix64::new(seed).fill(&mut p);
        p
    }

    #[derive(Default)]
    struct Seen(Vec<Stage>, Vec<SwapIn>);
    impl SwapHook for Seen {
        fn around<R>(&mut self, stage: Stage, f: impl FnOnce() -> R) -> R {
            self.0.push(stage);
            f()
        }
        fn swapped_in(&mut self, from: SwapIn) {
            self.1.push(from);
        }
    }

    #[test]
    fn zero_pages_go_to_the_zeromap_and_reach_neither_zswap_nor_the_device() {
        let s = layer(ZswapConfig::default(), 8);
        let mut seen = Seen::default();
        assert_eq!(s.swap_out(3, &[0u8; 4096], &mut seen).unwrap(), SwapOut::Zeromap);
        assert!(seen.0.is_empty(), "{:?}", seen.0);
        let z = s.zswap().unwrap();
        assert_eq!((z.nr_entries(), z.stats().zswpout, z.swap_file().writes()), (0, 0, 0));
        let mut out = vec![1u8; 4096];
        assert_eq!(s.swap_in(3, &mut out, &mut seen).unwrap(), SwapIn::Zeromap);
        assert_eq!(seen.1, [SwapIn::Zeromap]);
        assert!(out.iter().all(|&b| b == 0));
        // The slot was freed: a non-zero page stored there later is not read as zeros.
        let p = text_page(9);
        assert_eq!(s.swap_out(3, &p, &mut ()).unwrap(), SwapOut::Zswap);
        assert_eq!(s.swap_in(3, &mut out, &mut ()).unwrap(), SwapIn::Zswap);
        assert_eq!(out, p);
    }

    /// A THP-sized folio of 256 zero and 256 text pages.
    fn half_zero_folio() -> Vec<u8> {
        let mut f = vec![0u8; 512 * 4096];
        for (i, p) in f.chunks_exact_mut(4096).enumerate().skip(256) {
            p.copy_from_slice(&text_page(i as u8));
        }
        f
    }

    /// 6.18 `swap_writeout()`: `is_folio_zero_filled()` is false for the folio as a whole, so
    /// its 256 zero subpages reach the device with the rest (measured on 6.18.44: a 2 MiB THP of
    /// 256 zero and 256 random pages paged out to zram gave `same_pages` +256 and
    /// `swpout_zero` +0). Per-page zero detection would send them to the zeromap.
    #[test]
    fn a_half_zero_large_folio_reaches_the_device_whole() {
        struct Counting(SwapFile, AtomicU64);
        impl SwapDevice for Counting {
            fn write_page(&self, o: u64, p: &[u8]) -> Result<(), ZswapError> {
                self.1.fetch_add(1, Ordering::Relaxed);
                self.0.write_page(o, p)
            }
            fn read_page(&self, o: u64, out: &mut [u8]) -> Result<(), ZswapError> {
                self.0.read_page(o, out)
            }
        }
        let dev = Arc::new(Counting(SwapFile::in_memory(4096, 1024), AtomicU64::new(0)));
        let s = SwapLayer::new(Box::new(Arc::clone(&dev)), 4096, 1024);
        let folio = half_zero_folio();
        assert_eq!(s.swap_out_folio(512, &folio, &mut ()).unwrap(), SwapOut::Device);
        assert_eq!(dev.1.load(Ordering::Relaxed), 512, "every subpage written, zeros too");
        let mut out = vec![1u8; 4096];
        assert_eq!(s.swap_in(512, &mut out, &mut ()).unwrap(), SwapIn::Device);
        assert!(out.iter().all(|&b| b == 0), "a zero subpage comes back from the device");
        assert_eq!(s.swap_in(1023, &mut out, &mut ()).unwrap(), SwapIn::Device);
        assert_eq!(out, text_page(255));

        // An all-zero folio: the zeromap only, for each of its slots.
        assert_eq!(s.swap_out_folio(0, &[0u8; 512 * 4096], &mut ()).unwrap(), SwapOut::Zeromap);
        assert_eq!(dev.1.load(Ordering::Relaxed), 512, "nothing more written");
        assert_eq!(s.swap_in(511, &mut out, &mut ()).unwrap(), SwapIn::Zeromap);
    }

    /// zswap takes the half-zero folio whole: one entry per subpage, `zswpout` += 512; a folio
    /// with one page zswap cannot keep is rejected whole, the entries it had made erased, and
    /// goes to the device whole (`zswap_store()`'s `check_old` loop).
    #[test]
    fn zswap_stores_a_large_folio_whole_or_not_at_all() {
        let s = layer(ZswapConfig::default(), 2048);
        assert_eq!(s.swap_out_folio(0, &half_zero_folio(), &mut ()).unwrap(), SwapOut::Zswap);
        let z = s.zswap().unwrap();
        assert_eq!((z.nr_entries(), z.stats().zswpout, z.stats().stored_pages), (512, 512, 512));
        let mut out = vec![1u8; 4096];
        assert_eq!(s.swap_in(7, &mut out, &mut ()).unwrap(), SwapIn::Zswap);
        assert!(out.iter().all(|&b| b == 0));

        let cfg =
            ZswapConfig { incompressible: crate::Incompressible::Reject, ..ZswapConfig::default() };
        let s = layer(cfg, 2048);
        let mut folio = half_zero_folio();
        folio[511 * 4096..].copy_from_slice(&noise_page(3));
        let mut seen = Seen::default();
        assert_eq!(s.swap_out_folio(512, &folio, &mut seen).unwrap(), SwapOut::Device);
        let z = s.zswap().unwrap();
        let st = z.stats();
        assert_eq!((z.nr_entries(), st.zswpout, st.stored_pages), (0, 0, 0));
        assert_eq!(st.reject_compress_poor, 1, "one page failed, one rejection");
        assert_eq!(z.swap_file().writes(), 512);
        assert_eq!(seen.0.iter().filter(|&&x| x == Stage::DeviceWrite).count(), 512);
        assert_eq!(s.swap_in(512 + 300, &mut out, &mut ()).unwrap(), SwapIn::Device);
        assert_eq!(out, text_page(44), "page 300 of the folio");
    }

    #[test]
    fn a_folio_must_be_a_power_of_two_of_pages_inside_the_area() {
        let s = layer(ZswapConfig::default(), 16);
        let three = vec![1u8; 3 * 4096];
        assert!(matches!(s.swap_out_folio(0, &three, &mut ()), Err(ZswapError::BadLength { .. })));
        let four = vec![1u8; 4 * 4096];
        assert!(matches!(
            s.swap_out_folio(13, &four, &mut ()),
            Err(ZswapError::OffsetOutOfRange { .. })
        ));
        assert!(matches!(
            s.swap_out_folio(u64::MAX - 1, &four, &mut ()),
            Err(ZswapError::OffsetOutOfRange { .. })
        ));
        assert_eq!(s.swap_out_folio(12, &four, &mut ()).unwrap(), SwapOut::Zswap);
    }

    #[test]
    fn a_page_zswap_keeps_comes_back_from_zswap_and_the_slot_is_freed() {
        let s = layer(ZswapConfig::default(), 8);
        let p = text_page(1);
        let mut seen = Seen::default();
        assert_eq!(s.swap_out(2, &p, &mut seen).unwrap(), SwapOut::Zswap);
        let mut out = vec![0u8; 4096];
        assert_eq!(s.swap_in(2, &mut out, &mut seen).unwrap(), SwapIn::Zswap);
        assert_eq!(out, p);
        assert_eq!(seen.0, [Stage::ZswapStore, Stage::ZswapLoad]);
        assert_eq!(seen.1, [SwapIn::Zswap], "the hook learns the load was a hit");
        assert_eq!(s.zswap().unwrap().nr_entries(), 0);
    }

    /// 6.18 `swap_writeout()`: a page zswap rejects goes to the device only when the memcg
    /// allows writeback; with `memory.zswap.writeback=0` it is activated and stays in RAM.
    #[test]
    fn a_rejected_page_stays_in_ram_when_writeback_is_disabled() {
        // zswap off: every store is rejected.
        let cfg = ZswapConfig { enabled: false, writeback: false, ..ZswapConfig::default() };
        let s = layer(cfg, 8);
        let mut seen = Seen::default();
        assert_eq!(s.swap_out(1, &text_page(2), &mut seen).unwrap(), SwapOut::KeptInRam);
        assert_eq!(seen.0, [Stage::ZswapStore], "nothing was written to the device");
        assert_eq!(s.zswap().unwrap().swap_file().writes(), 0);

        let cfg = ZswapConfig { enabled: false, ..ZswapConfig::default() };
        let s = layer(cfg, 8);
        let mut seen = Seen::default();
        assert_eq!(s.swap_out(1, &text_page(2), &mut seen).unwrap(), SwapOut::Device);
        assert_eq!(seen.0, [Stage::ZswapStore, Stage::DeviceWrite]);
        let mut out = vec![0u8; 4096];
        assert_eq!(s.swap_in(1, &mut out, &mut ()).unwrap(), SwapIn::Device);
        assert_eq!(out, text_page(2));
    }

    #[test]
    fn an_incompressible_page_rejected_by_old_kernels_goes_to_the_device() {
        let cfg =
            ZswapConfig { incompressible: crate::Incompressible::Reject, ..ZswapConfig::default() };
        let s = layer(cfg, 8);
        let p = noise_page(7);
        let mut seen = Seen::default();
        assert_eq!(s.swap_out(5, &p, &mut seen).unwrap(), SwapOut::Device);
        let mut out = vec![0u8; 4096];
        assert_eq!(s.swap_in(5, &mut out, &mut seen).unwrap(), SwapIn::Device);
        assert_eq!(out, p);
        assert_eq!(
            seen.0,
            [Stage::ZswapStore, Stage::DeviceWrite, Stage::ZswapLoad, Stage::DeviceRead]
        );
        assert_eq!(seen.1, [SwapIn::Device], "the hook learns the load missed");
    }

    #[test]
    fn without_zswap_pages_go_straight_to_the_device_and_are_freed_there() {
        struct Counting(SwapFile, std::sync::atomic::AtomicU64);
        impl SwapDevice for Counting {
            fn write_page(&self, o: u64, p: &[u8]) -> Result<(), ZswapError> {
                self.0.write_page(o, p)
            }
            fn read_page(&self, o: u64, out: &mut [u8]) -> Result<(), ZswapError> {
                self.0.read_page(o, out)
            }
            fn free_slot(&self, _: u64) {
                self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let dev = Arc::new(Counting(SwapFile::in_memory(4096, 4), Default::default()));
        let s = SwapLayer::new(Box::new(Arc::clone(&dev)), 4096, 4);
        let p = text_page(3);
        assert_eq!(s.swap_out(0, &p, &mut ()).unwrap(), SwapOut::Device);
        let mut out = vec![0u8; 4096];
        assert_eq!(s.swap_in(0, &mut out, &mut ()).unwrap(), SwapIn::Device);
        assert_eq!(out, p);
        assert_eq!(dev.1.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[test]
    fn bad_offsets_and_lengths_are_errors() {
        let s = layer(ZswapConfig::default(), 2);
        assert!(matches!(
            s.swap_out(2, &text_page(0), &mut ()),
            Err(ZswapError::OffsetOutOfRange { offset: 2, slots: 2 })
        ));
        assert!(matches!(s.swap_out(0, &[1u8; 10], &mut ()), Err(ZswapError::BadLength { .. })));
        let mut out = vec![0u8; 4096];
        assert!(s.swap_in(9, &mut out, &mut ()).is_err());
    }

    /// The per-swap-out pass at `DEF_PRIORITY` never reaches an LRU of 200 entries (delta
    /// `(count >> 12) * 4 / 2` is 0); the same pages at priority 0 are scanned whole.
    #[test]
    fn the_per_swap_out_pass_uses_its_priority() {
        let mut cfg = ZswapConfig::default();
        cfg.module.shrinker_enabled = true;
        let s = layer(cfg.clone(), 256);
        assert_eq!(s.slab_reclaim(), Some(SlabReclaim::default()));
        for i in 0..200 {
            assert_eq!(s.swap_out(i, &text_page(i as u8), &mut ()).unwrap(), SwapOut::Zswap);
        }
        assert_eq!(s.zswap().unwrap().stats().written_back_pages, 0);

        let mut s = layer(cfg, 256);
        s.set_slab_reclaim(Some(SlabReclaim { priority: 0, scope: SlabScope::Memcg }));
        for i in 0..200 {
            s.swap_out(i, &text_page(i as u8), &mut ()).unwrap();
        }
        assert!(s.zswap().unwrap().stats().written_back_pages > 0);
    }
}
