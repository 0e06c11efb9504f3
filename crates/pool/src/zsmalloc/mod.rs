//! zsmalloc: the kernel's allocator for compressed pages (mm/zsmalloc.c), with its exact page
//! accounting.
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
//! Every request grows by the 8-byte handle header (`ZS_HANDLE_SIZE`, added by `zs_malloc()`)
//! written at the start of its slot, which lets compaction find an object's handle from its
//! slot (`find_alloced_obj()`). Classes that hold one object in one page ("huge",
//! `ZsHugePage()`) have no header: the whole page is usable.
//!
//! Each class keeps its zspages on twelve *fullness lists* by percentage of slots in use
//! (`ZS_INUSE_RATIO_0`, `_10` ... `_99`, `_100`; see [`zspage`]). Allocation takes the head of
//! the fullest non-full list (`find_get_zspage()`: so zspages fill up before new ones are made,
//! and the most recently touched zspage of a group is used first); a zspage moves to the head
//! of another list only when its group changes (`fix_fullness_group()`, `insert_zspage()`),
//! and `zs_free()` releases it the moment its last object is freed (`free_zspage()`). The
//! pool's size is `pages_allocated`: the sum of the chain lengths of the live zspages, which is
//! exactly the arena's count of frames in use. Handles and zspage descriptors are not counted
//! (the kernel keeps them in slab caches, `zs_handle` and `zspage`, that
//! `zs_get_total_pages()` does not see either).
//!
//! Frees leave holes; [`compact`] moves objects out of the sparsest zspages into the fullest
//! ones of the same class, as `zs_compact()` does, and counts the pages it frees
//! (`pages_compacted`).
//!
//! **Locking, as the kernel's.** Each size class has its own lock (`size_class->lock`), which
//! covers its fullness lists, counters, zspages, the handle entries of its objects (in one
//! table for the pool, in allocation order, as the kernel's handle slab: `handles`) and the
//! bytes of its objects ([`chain`]): allocation, free, object reads and writes, and compaction
//! of one class take that lock alone, so writers of different classes never wait for each
//! other. Object reads take it shared, so readers never wait for readers. The arena is shared by every class behind a mutex
//! taken only to allocate or free a zspage's frames (class lock first, then the arena's); its
//! frame count is published in an atomic, the kernel's `pages_allocated`. 6.18 also has a
//! pool-wide rwlock (`pool->lock`, the former `migrate_lock`) and a per-zspage lock, because
//! page migration and compaction move objects between zspages while `zs_obj_read_begin()`,
//! `zs_obj_write()` and `zs_free()` look a handle up; here an object never leaves its class, a
//! handle names its class, and the class's lock covers its entries, so the class lock serves
//! both ends.

pub(crate) mod chain;
pub mod class;
pub mod compact;
mod handles;
pub mod map;
mod size_class;
pub mod zspage;

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::arena::{ArenaKind, PageArena, Window};
use crate::handle::Handle;
use crate::sync::{
    AtomicBool, AtomicU64, Mutex, MutexGuard, Ordering, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use crate::{ClassStat, PoolConfig, PoolError, ZPool};
use class::ClassTable;
use handles::{HandleSlab, tag_of};
use size_class::ClassState;

pub use map::{MapMethod, MapMode};

/// Where an object lives within its class: zspage slab index and object index in the zspage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ObjLoc {
    pub zspage: u32,
    pub idx: u32,
}

/// What the arena's lock holder publishes for lock-free readers when it lets go.
#[derive(Debug)]
struct Published {
    /// The arena's frames in use: the kernel's atomic `pages_allocated`, which zram reads on
    /// every write without taking a lock.
    pages: AtomicU64,
    /// The arena's `frames_before_new_chunk` and chunk count: a writer that sees the headroom
    /// low asks for the next chunk to be faulted in ahead (`store`), once per chunk.
    headroom: AtomicU64,
    chunks: AtomicU64,
}

/// The locked arena. Only it changes the arena, and dropping it publishes the frame count
/// before the lock is released.
pub(crate) struct ArenaGuard<'a> {
    guard: MutexGuard<'a, PageArena>,
    published: &'a Published,
}

impl std::ops::Deref for ArenaGuard<'_> {
    type Target = PageArena;
    fn deref(&self) -> &PageArena {
        &self.guard
    }
}

impl std::ops::DerefMut for ArenaGuard<'_> {
    fn deref_mut(&mut self) -> &mut PageArena {
        &mut self.guard
    }
}

impl Drop for ArenaGuard<'_> {
    fn drop(&mut self) {
        let p = self.published;
        p.pages.store(self.guard.frames_in_use(), Ordering::Relaxed);
        p.headroom.store(self.guard.frames_before_new_chunk(), Ordering::Relaxed);
        p.chunks.store(self.guard.chunks(), Ordering::Relaxed);
    }
}

/// A zsmalloc pool. What every operation reads and what two threads write often sit on cache
/// lines of their own (`CachePadded`): a class's lock beside its neighbour's, or the arena's
/// lock beside the class table, would make two writers of different classes fight over one line
/// anyway.
pub struct ZsPool {
    table: ClassTable,
    page_size: usize,
    compaction_in_progress: AtomicBool,
    /// The chunk count asked for so far by the faulting-ahead in `store`.
    prepared: AtomicU64,
    /// Headroom at which to ask: half a chunk.
    prepare_ahead: u64,
    /// One lock per class slot (merged size indices share their class's).
    classes: Box<[CachePadded<RwLock<ClassState>>]>,
    /// Every class's handle entries, in allocation order (`handles`).
    slab: Arc<HandleSlab>,
    published: CachePadded<Published>,
    arena: CachePadded<Mutex<PageArena>>,
    /// The side-by-side window of [`map`] (memfd arena), made on first use.
    window: Mutex<Option<Window>>,
    pages_compacted: AtomicU64,
}

impl std::fmt::Debug for ZsPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZsPool")
            .field("page_size", &self.page_size)
            .field("classes", &self.classes.len())
            .field("pages", &self.total_pages())
            .finish_non_exhaustive()
    }
}

/// Takes a lock whatever a panicking holder left: every change under these locks leaves the
/// state consistent or only leaks, never unsound, so serving on beats propagating the poison.
fn unpoison<G>(r: std::sync::LockResult<G>) -> G {
    r.unwrap_or_else(|e| e.into_inner())
}

impl ZsPool {
    /// A pool for `config.page_size` pages and `config.chain_size` (the kernel's
    /// `CONFIG_ZSMALLOC_CHAIN_SIZE`).
    pub fn new(config: &PoolConfig) -> Result<Self, PoolError> {
        let table = ClassTable::new(config.page_size, config.chain_size)?;
        let arena = PageArena::new(config.arena, config.page_size, config.max_pages)?;
        let slab = Arc::new(HandleSlab::default());
        let classes = table
            .classes()
            .iter()
            .enumerate()
            .map(|(slot, &c)| {
                // The class table has at most 2^CLASS_BITS slots, so a slot fits a handle's tag.
                let tag = u8::try_from(slot).expect("class slots fit a handle tag");
                CachePadded::new(RwLock::new(ClassState::new(c, tag, slab.clone())))
            })
            .collect();
        // The first chunk too is asked for ahead, now: the kernel's pool starts on pages the
        // buddy allocator has mapped, and a fresh process's first writes would otherwise fault
        // their chunk in under class locks, in turns with the helper's faulting of the next.
        let heap = config.arena == ArenaKind::Heap;
        if heap && !cfg!(loom) {
            PageArena::prepare_chunk(config.page_size);
        }
        Ok(Self {
            page_size: config.page_size,
            compaction_in_progress: AtomicBool::new(false),
            published: CachePadded::new(Published {
                pages: AtomicU64::new(0),
                headroom: AtomicU64::new(arena.frames_before_new_chunk()),
                chunks: AtomicU64::new(0),
            }),
            prepared: AtomicU64::new(u64::from(heap)),
            prepare_ahead: PageArena::frames_per_heap_chunk(config.page_size) / 2,
            classes,
            slab,
            arena: CachePadded::new(Mutex::new(arena)),
            window: Mutex::new(None),
            pages_compacted: AtomicU64::new(0),
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
        self.arena().kind()
    }

    pub(crate) fn arena(&self) -> ArenaGuard<'_> {
        ArenaGuard { guard: unpoison(self.arena.lock()), published: &self.published }
    }

    /// A class's state, exclusively.
    pub(crate) fn class(&self, slot: usize) -> RwLockWriteGuard<'_, ClassState> {
        unpoison(self.classes[slot].write())
    }

    /// A class's state, shared with other readers.
    pub(crate) fn class_read(&self, slot: usize) -> RwLockReadGuard<'_, ClassState> {
        unpoison(self.classes[slot].read())
    }

    /// The class slot of the class that issued `handle` (its tag).
    pub(crate) fn slot_of(&self, handle: Handle) -> Result<usize, PoolError> {
        let slot = usize::from(tag_of(handle));
        if slot < self.classes.len() { Ok(slot) } else { Err(PoolError::BadHandle(handle.0)) }
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

    /// Half way through the arena's last chunk, has the next one faulted in off the writer's
    /// path, rather than in an object copy under a class lock, where other writers of the
    /// class would wait (`chunk_cache`). Not under loom, whose models run no helper thread.
    fn prepare_ahead(&self) {
        if cfg!(loom) || self.published.headroom.load(Ordering::Relaxed) >= self.prepare_ahead {
            return;
        }
        let next = self.published.chunks.load(Ordering::Relaxed) + 1;
        if self.prepared.fetch_max(next, Ordering::Relaxed) < next {
            PageArena::prepare_chunk(self.page_size);
        }
    }

    /// Checks every internal invariant (free lists, counters, fullness lists, page count) with
    /// every lock held. For tests; O(pool size).
    pub fn audit(&self) -> Result<(), String> {
        let classes: Vec<_> = (0..self.classes.len()).map(|s| self.class_read(s)).collect();
        let arena = unpoison(self.arena.lock());
        let mut pages = 0;
        for (slot, c) in classes.iter().enumerate() {
            pages += c.audit(slot)?;
        }
        let published = self.published.pages.load(Ordering::Relaxed);
        if published != arena.frames_in_use() {
            return Err(format!("{published} pages published, {} frames", arena.frames_in_use()));
        }
        if pages != arena.frames_in_use() {
            return Err(format!("{pages} pages in zspages, {} frames", arena.frames_in_use()));
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
        self.class(slot).malloc(size, || self.arena())
    }

    fn free(&self, handle: Handle) -> Result<(), PoolError> {
        self.class(self.slot_of(handle)?).free(handle, || self.arena())
    }

    fn write(&self, handle: Handle, data: &[u8]) -> Result<(), PoolError> {
        self.class(self.slot_of(handle)?).write(handle, data)
    }

    /// One lock for both halves: zram stores an object per page written.
    fn store(&self, data: &[u8]) -> Result<Handle, PoolError> {
        let slot = self.class_slot(data.len())?;
        self.prepare_ahead();
        let mut c = self.class(slot);
        let h = c.malloc(data.len(), || self.arena())?;
        // Fails only on a length the allocation just ruled out; free rather than leak anyway.
        if let Err(e) = c.write(h, data) {
            let _ = c.free(h, || self.arena());
            return Err(e);
        }
        Ok(h)
    }

    fn read(&self, handle: Handle, out: &mut [u8]) -> Result<usize, PoolError> {
        let c = self.class_read(self.slot_of(handle)?);
        let (off, size, chain) = c.data_span(handle)?;
        if out.len() < size {
            return Err(PoolError::BadLength { len: out.len(), size });
        }
        chain.read(off, &mut out[..size]);
        Ok(size)
    }

    fn read_with(
        &self,
        handle: Handle,
        scratch: &mut [u8],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), PoolError> {
        let c = self.class_read(self.slot_of(handle)?);
        let (off, size, chain) = c.data_span(handle)?;
        // Inside one frame, or across frames adjacent in memory: in place, with the class
        // lock held so compaction cannot move it.
        if let Some(bytes) = chain.span(off, size) {
            f(bytes);
            return Ok(());
        }
        if scratch.len() < size {
            return Err(PoolError::BadLength { len: scratch.len(), size });
        }
        chain.read(off, &mut scratch[..size]);
        drop(c);
        f(&scratch[..size]);
        Ok(())
    }

    fn object_size(&self, handle: Handle) -> Result<usize, PoolError> {
        Ok(self.class_read(self.slot_of(handle)?).handles.get(handle)?.1)
    }

    fn total_pages(&self) -> u64 {
        self.published.pages.load(Ordering::Relaxed)
    }

    /// mm/zsmalloc.c `zs_compact()`: class by class from the largest, each under its own lock,
    /// so writers of other classes go on meanwhile (the kernel also write-holds `pool->lock`
    /// per class, `__zs_compact()`). A second caller while one runs returns 0 at once
    /// (`compaction_in_progress`).
    fn compact(&self) -> u64 {
        if self.compaction_in_progress.swap(true, Ordering::Acquire) {
            return 0;
        }
        let mut freed = 0;
        for slot in (0..self.classes.len()).rev() {
            if self.table.classes()[slot].is_huge() {
                continue; // one object per zspage: nothing to gain
            }
            freed += self.class(slot).compact(&|| self.arena());
        }
        self.pages_compacted.fetch_add(freed, Ordering::Relaxed);
        self.compaction_in_progress.store(false, Ordering::Release);
        freed
    }

    fn pages_compacted(&self) -> u64 {
        self.pages_compacted.load(Ordering::Relaxed)
    }

    /// mm/zsmalloc.c `zs_shrinker_count()`: `zs_can_compact()` over every class (merged size
    /// indices count once, as the kernel skips `class->index != i`; huge classes give 0).
    fn shrinker_count(&self) -> u64 {
        (0..self.classes.len()).map(|slot| self.class_read(slot).can_compact()).sum()
    }

    /// mm/zsmalloc.c `zs_shrinker_scan()`: `zs_compact()` (which counts into `pages_compacted` and returns 0 when
    /// a compaction is already running), `SHRINK_STOP` when it freed nothing.
    fn shrinker_scan(&self) -> Option<u64> {
        match self.compact() {
            0 => None,
            freed => Some(freed),
        }
    }

    fn objects(&self) -> usize {
        (0..self.classes.len()).map(|slot| self.class_read(slot).handles.len()).sum()
    }

    fn class_stats(&self) -> Vec<ClassStat> {
        (0..self.classes.len())
            .map(|slot| {
                let g = self.class_read(slot);
                let (c, k) = (g.class, g.counters);
                ClassStat {
                    index: c.index,
                    size: c.size,
                    pages_per_zspage: c.pages_per_zspage,
                    objs_per_zspage: c.objs_per_zspage,
                    objs_allocated: k.objs_allocated,
                    objs_inuse: k.objs_inuse,
                    zspages: k.zspages,
                    pages: k.zspages * c.pages_per_zspage as u64,
                }
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
        let classes: usize =
            (0..self.classes.len()).map(|slot| self.class_read(slot).metadata_bytes()).sum();
        classes
            + self.classes.len() * std::mem::size_of::<CachePadded<RwLock<ClassState>>>()
            + self.slab.metadata_bytes()
            + self.arena().metadata_bytes()
    }
}
