//! zsmalloc: the kernel's allocator for compressed pages, with its exact page accounting.
//!
//! Compressed pages come in every size from a few bytes to a page. A buddy allocator would
//! round each up to a power of two, and a slab per size would waste the tail of every page.
//! zsmalloc instead sorts requests into *size classes* (every `PAGE_SIZE >> 8` bytes, 16 B at
//! 4 KiB; see [`class`]) and gives each class *zspages*: chains of 1..=chain-size page frames
//! whose length is chosen so that slots of that size waste the least at the chain's end. Slots
//! are laid end to end across the frames of the chain, so an object may *straddle* two frames;
//! reading it means either copying its two halves into a buffer or mapping the two frames side
//! by side (see [`map`]).
//!
//! Every request grows by the 8-byte handle header (`ZS_HANDLE_SIZE`) written at the start of
//! its slot, which lets compaction find an object's handle from its slot. Classes that hold one
//! object in one page ("huge") have no header: the whole page is usable.
//!
//! Each class keeps its zspages on twelve *fullness lists* by percentage of slots in use
//! (`ZS_INUSE_RATIO_0`, `_10` ... `_99`, `_100`; see [`zspage`]). Allocation takes the head of
//! the fullest non-full list (so zspages fill up before new ones are made, and the most recently
//! touched zspage of a group is used first); a zspage moves to the head of another list only
//! when its group changes, and it is released the moment its last object is freed. The pool's
//! size is `pages_allocated`: the sum of the chain lengths of the live zspages, which is exactly
//! the arena's count of frames in use. Handles and zspage descriptors are not counted (the
//! kernel keeps them in slab caches that `zs_get_total_pages` does not see either).
//!
//! Frees leave holes; [`compact`] moves objects out of the sparsest zspages into the fullest
//! ones of the same class, as `zs_compact` does, and counts the pages it frees.

pub mod class;
pub mod compact;
pub mod map;
pub mod zspage;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::arena::{ArenaKind, PageArena, Window};
use crate::handle::{Handle, HandleTable};
use crate::list::Lists;
use crate::{ClassStat, PoolConfig, PoolError, ZPool};
use class::{ClassTable, SizeClass, ZS_HANDLE_SIZE};
use zspage::{NO_FREE, NR_FULLNESS_GROUPS, SlotWord, ZsPage, fullness_group};

pub use map::{MapMethod, MapMode};

/// Where an object lives: zspage slab index and object index within the zspage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ObjLoc {
    pub zspage: u32,
    pub idx: u32,
}

/// Per-class counters (`ZS_OBJS_ALLOCATED`, `ZS_OBJS_INUSE`, zspages).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClassCounters {
    pub objs_allocated: u64,
    pub objs_inuse: u64,
    pub zspages: u64,
}

/// Everything behind the pool lock.
#[derive(Debug)]
pub(crate) struct Inner {
    pub table: ClassTable,
    pub arena: PageArena,
    pub zspages: Vec<Option<ZsPage>>,
    pub free_ids: Vec<u32>,
    pub lists: Lists,
    pub counters: Vec<ClassCounters>,
    pub handles: HandleTable<ObjLoc>,
    pub window: Option<Window>,
    pub pages_compacted: u64,
    pub scratch: Vec<u8>,
}

/// The write-locked state. Only it changes the arena, and dropping it publishes the frame count
/// to `ZsPool::pages` before the lock is released.
pub(crate) struct InnerMut<'a> {
    guard: RwLockWriteGuard<'a, Inner>,
    pages: &'a AtomicU64,
    headroom: &'a AtomicU64,
    chunks: &'a AtomicU64,
}

impl std::ops::Deref for InnerMut<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.guard
    }
}

impl std::ops::DerefMut for InnerMut<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.guard
    }
}

impl Drop for InnerMut<'_> {
    fn drop(&mut self) {
        self.pages.store(self.guard.arena.frames_in_use(), Ordering::Relaxed);
        self.headroom.store(self.guard.arena.frames_before_new_chunk(), Ordering::Relaxed);
        self.chunks.store(self.guard.arena.chunks(), Ordering::Relaxed);
    }
}

/// A zsmalloc pool.
#[derive(Debug)]
pub struct ZsPool {
    table: ClassTable,
    page_size: usize,
    compaction_in_progress: AtomicBool,
    /// The arena's frames in use, as of the last write-locked operation: the kernel's atomic
    /// `pages_allocated`, which zram reads on every write without taking the pool lock.
    pages: AtomicU64,
    /// The arena's `frames_before_new_chunk` and chunk count, as of the last write-locked
    /// operation: a writer that sees the headroom low asks for the next chunk to be faulted in
    /// ahead (`store`), once per chunk (`prepared`: the chunk count asked for so far).
    headroom: AtomicU64,
    chunks: AtomicU64,
    prepared: AtomicU64,
    /// Headroom at which to ask: half a chunk.
    prepare_ahead: u64,
    /// Written by allocation, free, object writes and compaction; read (shared) by object
    /// reads and the counters, so readers of different objects never wait for each other.
    inner: RwLock<Inner>,
}

impl ZsPool {
    /// A pool for `config.page_size` pages and `config.chain_size` (the kernel's
    /// `CONFIG_ZSMALLOC_CHAIN_SIZE`).
    pub fn new(config: &PoolConfig) -> Result<Self, PoolError> {
        let table = ClassTable::new(config.page_size, config.chain_size)?;
        let arena = PageArena::new(config.arena, config.page_size, config.max_pages)?;
        let headroom = AtomicU64::new(arena.frames_before_new_chunk());
        let n = table.classes().len();
        Ok(Self {
            page_size: config.page_size,
            compaction_in_progress: AtomicBool::new(false),
            pages: AtomicU64::new(0),
            headroom,
            chunks: AtomicU64::new(0),
            prepared: AtomicU64::new(0),
            prepare_ahead: PageArena::frames_per_heap_chunk(config.page_size) / 2,
            inner: RwLock::new(Inner {
                table: table.clone(),
                arena,
                zspages: Vec::new(),
                free_ids: Vec::new(),
                lists: Lists::new(n * NR_FULLNESS_GROUPS),
                counters: vec![ClassCounters::default(); n],
                handles: HandleTable::default(),
                window: None,
                pages_compacted: 0,
                scratch: Vec::new(),
            }),
            table,
        })
    }

    /// The class table.
    pub fn class_table(&self) -> &ClassTable {
        &self.table
    }

    /// `zs_huge_class_size()`.
    pub fn huge_class_size(&self) -> usize {
        self.table.huge_class_size()
    }

    /// `zs_lookup_class_index()`: the class index a size lands in (used by zram recompression).
    pub fn lookup_class_index(&self, size: usize) -> usize {
        self.table.lookup_class_index(size)
    }

    /// Which arena backs the pool.
    pub fn arena_kind(&self) -> ArenaKind {
        self.read_lock().arena.kind()
    }

    pub(crate) fn lock(&self) -> InnerMut<'_> {
        // A panic while holding the lock cannot leave the state half-updated in a way that
        // breaks memory safety; keep serving rather than propagating the poison.
        InnerMut {
            guard: self.inner.write().unwrap_or_else(|e| e.into_inner()),
            pages: &self.pages,
            headroom: &self.headroom,
            chunks: &self.chunks,
        }
    }

    /// The state, shared with other readers.
    pub(crate) fn read_lock(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The size class slot an allocation of `size` bytes takes, or why it cannot be made.
    fn class_slot(&self, size: usize) -> Result<usize, PoolError> {
        if size == 0 {
            return Err(PoolError::ZeroSize);
        }
        if size > self.page_size {
            return Err(PoolError::TooLarge { allocator: "zsmalloc", size, max: self.page_size });
        }
        Ok(self.table.slot_for_request(size))
    }

    /// Checks every internal invariant (free lists, counters, fullness lists, page count).
    /// For tests; O(pool size).
    pub fn audit(&self) -> Result<(), String> {
        let g = self.read_lock();
        let published = self.pages.load(Ordering::Relaxed);
        if published != g.arena.frames_in_use() {
            return Err(format!("{published} pages published, {} frames", g.arena.frames_in_use()));
        }
        g.audit()
    }
}

impl Inner {
    pub(crate) fn class(&self, slot: usize) -> SizeClass {
        self.table.classes()[slot]
    }

    pub(crate) fn list_id(slot: usize, group: usize) -> usize {
        slot * NR_FULLNESS_GROUPS + group
    }

    pub(crate) fn zspage(&self, z: u32) -> &ZsPage {
        self.zspages[z as usize].as_ref().expect("live zspage")
    }

    fn zspage_mut(&mut self, z: u32) -> &mut ZsPage {
        self.zspages[z as usize].as_mut().expect("live zspage")
    }

    /// The first word of slot `idx` of zspage `z`.
    pub(crate) fn read_word(&self, z: u32, idx: u32) -> u64 {
        let size = self.class(usize::from(self.zspage(z).class)).size;
        let mut b = [0u8; 8];
        self.arena.read_span(&self.zspage(z).frames, idx as usize * size, &mut b);
        u64::from_le_bytes(b)
    }

    pub(crate) fn write_word(&mut self, z: u32, idx: u32, word: u64) {
        let zs = self.zspages[z as usize].as_ref().expect("live zspage");
        let size = self.table.classes()[usize::from(zs.class)].size;
        self.arena.write_span(&zs.frames, idx as usize * size, &word.to_le_bytes());
    }

    /// `alloc_zspage` + `init_zspage`: takes the frames, chains the free list 0 -> 1 -> ...
    fn alloc_zspage(&mut self, slot: usize) -> Result<u32, PoolError> {
        let c = self.class(slot);
        let mut frames = Vec::with_capacity(c.pages_per_zspage);
        for _ in 0..c.pages_per_zspage {
            match self.arena.alloc() {
                Ok(f) => frames.push(f),
                Err(e) => {
                    for f in frames.into_iter().rev() {
                        self.arena.free(f);
                    }
                    return Err(e);
                }
            }
        }
        let zs = ZsPage {
            class: slot as u16,
            fullness: 0,
            inuse: 0,
            freeobj: 0,
            frames: frames.into_boxed_slice(),
        };
        let z = match self.free_ids.pop() {
            Some(z) => {
                self.zspages[z as usize] = Some(zs);
                z
            }
            None => {
                self.zspages.push(Some(zs));
                (self.zspages.len() - 1) as u32
            }
        };
        let opz = c.objs_per_zspage as u32;
        for i in 0..opz {
            let next = if i + 1 < opz { i + 1 } else { NO_FREE };
            self.write_word(z, i, zspage::encode_free(next));
        }
        let k = &mut self.counters[slot];
        k.objs_allocated += c.objs_per_zspage as u64;
        k.zspages += 1;
        Ok(z)
    }

    /// `free_zspage`: off its list, frames back to the arena.
    pub(crate) fn free_zspage(&mut self, z: u32) {
        self.lists.remove(z);
        let zs = self.zspages[z as usize].take().expect("live zspage");
        debug_assert_eq!(zs.inuse, 0);
        for &f in zs.frames.iter() {
            self.arena.free(f);
        }
        let slot = usize::from(zs.class);
        let c = self.class(slot);
        let k = &mut self.counters[slot];
        k.objs_allocated -= c.objs_per_zspage as u64;
        k.zspages -= 1;
        self.free_ids.push(z);
    }

    /// `obj_malloc`: pops the head of the zspage's free list.
    pub(crate) fn obj_malloc(&mut self, z: u32) -> u32 {
        let idx = self.zspage(z).freeobj;
        debug_assert_ne!(idx, NO_FREE);
        let next = match zspage::decode(self.read_word(z, idx)) {
            SlotWord::Free(next) => next,
            SlotWord::Allocated(_) => NO_FREE, // unreachable unless memory was corrupted
        };
        let zs = self.zspage_mut(z);
        zs.freeobj = next;
        zs.inuse += 1;
        idx
    }

    /// `obj_free`: pushes the slot on the head of the zspage's free list.
    pub(crate) fn obj_free(&mut self, z: u32, idx: u32) {
        let head = self.zspage(z).freeobj;
        self.write_word(z, idx, zspage::encode_free(head));
        let zs = self.zspage_mut(z);
        zs.freeobj = idx;
        zs.inuse -= 1;
    }

    pub(crate) fn group_of(&self, z: u32) -> usize {
        let zs = self.zspage(z);
        fullness_group(zs.inuse as usize, self.class(usize::from(zs.class)).objs_per_zspage)
    }

    /// `insert_zspage`: at the head of the list of `group`.
    pub(crate) fn insert_zspage(&mut self, z: u32, group: usize) {
        let slot = usize::from(self.zspage(z).class);
        self.lists.push_front(Self::list_id(slot, group), z);
        self.zspage_mut(z).fullness = group as u8;
    }

    /// `fix_fullness_group`: moves the zspage only if its group changed.
    fn fix_fullness_group(&mut self, z: u32) -> usize {
        let new = self.group_of(z);
        if new != usize::from(self.zspage(z).fullness) {
            self.lists.remove(z);
            self.insert_zspage(z, new);
        }
        new
    }

    /// `find_get_zspage`: head of the fullest non-full group.
    fn find_get_zspage(&self, slot: usize) -> Option<u32> {
        (zspage::RATIO_0..=zspage::RATIO_99)
            .rev()
            .find_map(|g| self.lists.head(Self::list_id(slot, g)))
    }

    fn malloc(&mut self, slot: usize, size: usize) -> Result<Handle, PoolError> {
        let c = self.class(slot);
        let (z, new) = match self.find_get_zspage(slot) {
            Some(z) => (z, false),
            None => (self.alloc_zspage(slot)?, true),
        };
        let idx = self.obj_malloc(z);
        let h = self.handles.insert(ObjLoc { zspage: z, idx }, size);
        if !c.is_huge() {
            self.write_word(z, idx, zspage::encode_allocated(h.0));
        }
        self.counters[slot].objs_inuse += 1;
        if new {
            let g = self.group_of(z);
            self.insert_zspage(z, g);
        } else {
            self.fix_fullness_group(z);
        }
        Ok(h)
    }

    fn free(&mut self, h: Handle) -> Result<(), PoolError> {
        let (loc, _) = self.handles.remove(h)?;
        let slot = usize::from(self.zspage(loc.zspage).class);
        self.obj_free(loc.zspage, loc.idx);
        self.counters[slot].objs_inuse -= 1;
        if self.fix_fullness_group(loc.zspage) == zspage::RATIO_0 {
            self.free_zspage(loc.zspage);
        }
        Ok(())
    }

    /// `zs_obj_write`: `data` at the start of the object.
    fn write(&mut self, handle: Handle, data: &[u8]) -> Result<(), PoolError> {
        let (loc, size) = self.handles.get(handle)?;
        if data.len() > size {
            return Err(PoolError::BadLength { len: data.len(), size });
        }
        let zs = self.zspages[loc.zspage as usize].as_ref().expect("live zspage");
        let c = self.table.classes()[usize::from(zs.class)];
        let hdr = if c.is_huge() { 0 } else { ZS_HANDLE_SIZE };
        self.arena.write_span(&zs.frames, loc.idx as usize * c.size + hdr, data);
        Ok(())
    }

    /// Byte offset of the object's data within its zspage chain, and the chain's frames.
    pub(crate) fn data_span(&self, loc: ObjLoc) -> (usize, &[crate::arena::FrameId], SizeClass) {
        let zs = self.zspage(loc.zspage);
        let c = self.class(usize::from(zs.class));
        let hdr = if c.is_huge() { 0 } else { ZS_HANDLE_SIZE };
        (loc.idx as usize * c.size + hdr, &zs.frames, c)
    }

    fn audit(&self) -> Result<(), String> {
        let mut pages = 0u64;
        let mut per_class = vec![ClassCounters::default(); self.counters.len()];
        for (z, zs) in self.zspages.iter().enumerate() {
            let Some(zs) = zs else { continue };
            let z = z as u32;
            let slot = usize::from(zs.class);
            let c = self.class(slot);
            pages += c.pages_per_zspage as u64;
            if zs.frames.len() != c.pages_per_zspage {
                return Err(format!("zspage {z}: {} frames", zs.frames.len()));
            }
            // Walk the free list.
            let mut free = 0usize;
            let mut cur = zs.freeobj;
            while cur != NO_FREE {
                free += 1;
                if free > c.objs_per_zspage || cur as usize >= c.objs_per_zspage {
                    return Err(format!("zspage {z}: free list broken at {cur}"));
                }
                match zspage::decode(self.read_word(z, cur)) {
                    SlotWord::Free(next) => cur = next,
                    SlotWord::Allocated(_) => {
                        return Err(format!("zspage {z}: allocated on free list"));
                    }
                }
            }
            if free + zs.inuse as usize != c.objs_per_zspage || zs.inuse == 0 {
                return Err(format!("zspage {z}: inuse {} free {free}", zs.inuse));
            }
            let g = fullness_group(zs.inuse as usize, c.objs_per_zspage);
            if usize::from(zs.fullness) != g
                || self.lists.list_of(z) != Some(Self::list_id(slot, g))
            {
                return Err(format!("zspage {z}: filed under the wrong group"));
            }
            let k = &mut per_class[slot];
            k.objs_allocated += c.objs_per_zspage as u64;
            k.objs_inuse += u64::from(zs.inuse);
            k.zspages += 1;
        }
        for (slot, (a, b)) in per_class.iter().zip(&self.counters).enumerate() {
            if (a.objs_allocated, a.objs_inuse, a.zspages)
                != (b.objs_allocated, b.objs_inuse, b.zspages)
            {
                return Err(format!("class slot {slot}: counters {b:?}, actual {a:?}"));
            }
        }
        if pages != self.arena.frames_in_use() {
            return Err(format!("{pages} pages in zspages, {} frames", self.arena.frames_in_use()));
        }
        let lists = 0..self.counters.len() * NR_FULLNESS_GROUPS;
        let listed: usize = lists.clone().map(|l| self.lists.iter(l).count()).sum();
        let counted: usize = lists.map(|l| self.lists.len(l)).sum();
        let live = self.zspages.iter().flatten().count();
        if listed != live || counted != live {
            return Err(format!("{live} zspages, {listed} listed, list lengths say {counted}"));
        }
        let inuse: u64 = per_class.iter().map(|k| k.objs_inuse).sum();
        if inuse != self.handles.len() as u64 {
            return Err(format!("{inuse} objects, {} handles", self.handles.len()));
        }
        Ok(())
    }
}

impl ZPool for ZsPool {
    fn name(&self) -> &'static str {
        "zsmalloc"
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn max_alloc_size(&self) -> usize {
        self.page_size
    }

    fn malloc(&self, size: usize) -> Result<Handle, PoolError> {
        let slot = self.class_slot(size)?;
        self.lock().malloc(slot, size)
    }

    fn free(&self, handle: Handle) -> Result<(), PoolError> {
        self.lock().free(handle)
    }

    fn write(&self, handle: Handle, data: &[u8]) -> Result<(), PoolError> {
        self.lock().write(handle, data)
    }

    /// One lock for both halves: zram stores an object per page written.
    fn store(&self, data: &[u8]) -> Result<Handle, PoolError> {
        let slot = self.class_slot(data.len())?;
        // Half way through the arena's last chunk, have the next one faulted in off this path,
        // rather than in an object copy under the lock, where every other writer would wait.
        if self.headroom.load(Ordering::Relaxed) < self.prepare_ahead {
            let next = self.chunks.load(Ordering::Relaxed) + 1;
            if self.prepared.fetch_max(next, Ordering::Relaxed) < next {
                PageArena::prepare_chunk(self.page_size);
            }
        }
        let mut g = self.lock();
        let h = g.malloc(slot, data.len())?;
        // Fails only on a length the allocation just ruled out; free rather than leak anyway.
        if let Err(e) = g.write(h, data) {
            let _ = g.free(h);
            return Err(e);
        }
        Ok(h)
    }

    fn read(&self, handle: Handle, out: &mut [u8]) -> Result<usize, PoolError> {
        let g = self.read_lock();
        let (loc, size) = g.handles.get(handle)?;
        if out.len() < size {
            return Err(PoolError::BadLength { len: out.len(), size });
        }
        let (off, frames, _) = g.data_span(loc);
        g.arena.read_span(frames, off, &mut out[..size]);
        Ok(size)
    }

    fn read_with(
        &self,
        handle: Handle,
        scratch: &mut [u8],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), PoolError> {
        let g = self.read_lock();
        let (loc, size) = g.handles.get(handle)?;
        let (off, frames, _) = g.data_span(loc);
        let (page, in_page) = (off / self.page_size, off % self.page_size);
        if in_page + size <= self.page_size {
            // Inside one frame: in place, with the lock held so compaction cannot move it.
            f(&g.arena.frame(frames[page])[in_page..in_page + size]);
            return Ok(());
        }
        if let Some(bytes) = g.arena.span(frames, off, size) {
            f(bytes);
            return Ok(());
        }
        if scratch.len() < size {
            return Err(PoolError::BadLength { len: scratch.len(), size });
        }
        g.arena.read_span(frames, off, &mut scratch[..size]);
        drop(g);
        f(&scratch[..size]);
        Ok(())
    }

    fn object_size(&self, handle: Handle) -> Result<usize, PoolError> {
        Ok(self.read_lock().handles.get(handle)?.1)
    }

    fn total_pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed)
    }

    fn compact(&self) -> u64 {
        if self.compaction_in_progress.swap(true, Ordering::Acquire) {
            return 0;
        }
        let freed = self.lock().compact();
        self.compaction_in_progress.store(false, Ordering::Release);
        freed
    }

    fn pages_compacted(&self) -> u64 {
        self.read_lock().pages_compacted
    }

    /// `zs_shrinker_count`: `zs_can_compact` over every class (merged size indices count
    /// once, as the kernel skips `class->index != i`; huge classes give 0).
    fn shrinker_count(&self) -> u64 {
        let g = self.read_lock();
        (0..self.table.classes().len()).map(|slot| g.can_compact(slot)).sum()
    }

    /// `zs_shrinker_scan`: `zs_compact` (which counts into `pages_compacted` and returns 0 when
    /// a compaction is already running), `SHRINK_STOP` when it freed nothing.
    fn shrinker_scan(&self) -> Option<u64> {
        match self.compact() {
            0 => None,
            freed => Some(freed),
        }
    }

    fn objects(&self) -> usize {
        self.read_lock().handles.len()
    }

    fn class_stats(&self) -> Vec<ClassStat> {
        let g = self.read_lock();
        self.table
            .classes()
            .iter()
            .zip(&g.counters)
            .map(|(c, k)| ClassStat {
                index: c.index,
                size: c.size,
                pages_per_zspage: c.pages_per_zspage,
                objs_per_zspage: c.objs_per_zspage,
                objs_allocated: k.objs_allocated,
                objs_inuse: k.objs_inuse,
                zspages: k.zspages,
                pages: k.zspages * c.pages_per_zspage as u64,
            })
            .collect()
    }

    fn class_index(&self, size: usize) -> usize {
        self.lookup_class_index(size)
    }

    fn huge_class_size(&self) -> usize {
        self.table.huge_class_size()
    }

    fn metadata_bytes(&self) -> usize {
        let g = self.read_lock();
        let descriptors = g.zspages.capacity() * std::mem::size_of::<Option<ZsPage>>()
            + g.zspages.iter().flatten().map(|z| z.frames.len() * 4).sum::<usize>()
            + g.free_ids.capacity() * 4;
        g.handles.metadata_bytes()
            + g.lists.metadata_bytes()
            + descriptors
            + g.counters.capacity() * std::mem::size_of::<ClassCounters>()
            + g.arena.metadata_bytes()
    }
}
