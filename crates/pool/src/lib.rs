//! zmem-pool: the zpool allocators that pack compressed pages, over a counting page arena.
//!
//! What it is for: storing variable-size objects (compressed pages) densely and counting the
//! page frames that takes, with the kernel's placement and accounting, so zmem's zram and zswap
//! engines report the memory the kernel would. [`ZsPool`] is zsmalloc (kernel >= 6.3: min-waste
//! chains, twelve fullness groups, compaction); [`ZbudPool`] and [`Z3foldPool`] are the two
//! allocators the kernel removed in 6.15 (6.18's mm/ has no zbud.c, z3fold.c or zpool.c),
//! kept as the seeds' baselines. All sit behind the
//! [`ZPool`] trait and are built by name through [`registry`].
//!
//! What it is not for: general-purpose allocation, or modelling the kernel's slab caches (the
//! memory for handles and zspage descriptors is not counted, as the kernel does not count it in
//! `zs_get_total_pages()`; [`ZPool::metadata_bytes`] reports ours separately).

pub mod arena;
mod chunk_cache;
mod error;
pub mod handle;
mod list;
pub mod registry;
mod sync;
pub mod z3fold;
pub mod zbud;
pub mod zsmalloc;

pub use arena::{ArenaKind, FrameId, PageArena};
pub use error::PoolError;
pub use handle::Handle;
pub use registry::{allocators, create};
pub use z3fold::Z3foldPool;
pub use zbud::ZbudPool;
pub use zsmalloc::{MapMethod, MapMode, ZsPool};

/// Page sizes the pools accept (4 KiB everywhere; 16 KiB and 64 KiB as on arm64/Android).
pub const PAGE_SIZES: [usize; 3] = [4096, 16384, 65536];

/// How to build a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Page (frame) size: 4096, 16384 or 65536.
    pub page_size: usize,
    /// zsmalloc's `CONFIG_ZSMALLOC_CHAIN_SIZE` (4..=16); ignored by zbud and z3fold.
    pub chain_size: usize,
    /// Most pages the pool may hold (`None`: no limit). Allocations past it fail with
    /// [`PoolError::NoMemory`].
    pub max_pages: Option<u64>,
    /// Frame backing; [`ArenaKind::Memfd`] enables zsmalloc's mapped-window access.
    pub arena: ArenaKind,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            page_size: 4096,
            chain_size: zsmalloc::class::DEFAULT_CHAIN_SIZE,
            max_pages: None,
            arena: ArenaKind::Heap,
        }
    }
}

/// Statistics of one size class (zsmalloc's debugfs `classes` columns, mm/zsmalloc.c
/// `zs_stats_size_show()`). zbud and z3fold report
/// pseudo-classes (see their modules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassStat {
    /// Class index.
    pub index: usize,
    /// Slot size in bytes.
    pub size: usize,
    /// Pages of one zspage (1 for zbud/z3fold pages).
    pub pages_per_zspage: usize,
    /// Most objects one zspage (page) holds.
    pub objs_per_zspage: usize,
    /// Slots in the class's zspages (`obj_allocated`).
    pub objs_allocated: u64,
    /// Live objects (`obj_used`).
    pub objs_inuse: u64,
    /// Live zspages.
    pub zspages: u64,
    /// Pages of those zspages (`pages_used`).
    pub pages: u64,
}

/// The zpool interface: what zram and zswap need from an allocator. Methods take `&self` and
/// lock internally, so one pool can be shared across threads (`Arc<dyn ZPool>`).
pub trait ZPool: Send + Sync + std::fmt::Debug {
    /// The allocator's kernel name.
    fn name(&self) -> &'static str;
    /// Page size in bytes.
    fn page_size(&self) -> usize;
    /// Largest accepted `malloc` size.
    fn max_alloc_size(&self) -> usize;
    /// Allocates an object of `size` bytes (contents unspecified until written).
    fn malloc(&self, size: usize) -> Result<Handle, PoolError>;
    /// Frees an object; its handle becomes invalid.
    fn free(&self, handle: Handle) -> Result<(), PoolError>;
    /// Writes `data` at the start of the object (`data.len()` at most the object's size).
    fn write(&self, handle: Handle, data: &[u8]) -> Result<(), PoolError>;
    /// Copies the whole object into `out[..size]` (`out` at least the object's size); returns
    /// the size.
    fn read(&self, handle: Handle, out: &mut [u8]) -> Result<usize, PoolError>;
    /// Runs `f` on the object's bytes, in place where the pool can hand them out without a
    /// copy (an object inside one page, as mm/zsmalloc.c `zs_obj_read_begin()` maps it, or,
    /// unlike the kernel, which always copies one that straddles two pages, across two frames
    /// that lie side by side in the arena), else copied into
    /// `scratch` first (at least the object's size). `f` may run under a lock of the pool, held
    /// for reading, so it must not call back into the pool. The default copies, as `read`.
    fn read_with(
        &self,
        handle: Handle,
        scratch: &mut [u8],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), PoolError> {
        let n = self.read(handle, scratch)?;
        f(&scratch[..n]);
        Ok(())
    }
    /// The size the object was allocated with.
    fn object_size(&self, handle: Handle) -> Result<usize, PoolError>;
    /// Pages the pool holds: the memory it uses.
    fn total_pages(&self) -> u64;
    /// Compacts the pool; returns the pages freed by this call (0 if the allocator has no
    /// compaction or another compaction is running).
    fn compact(&self) -> u64;
    /// Pages freed by all compactions so far (zram's `pages_compacted`), the shrinker's
    /// included.
    fn pages_compacted(&self) -> u64;
    /// The pool's memory-pressure shrinker, `count_objects` side (mm/zsmalloc.c
    /// `zs_shrinker_count()`): the pages compaction could free now, `zs_can_compact()` summed
    /// over the classes. Allocators the kernel registers no shrinker for (zbud, z3fold) return 0,
    /// which vmscan's `do_shrink_slab` takes as "nothing to do".
    fn shrinker_count(&self) -> u64 {
        0
    }
    /// The shrinker's `scan_objects` side (mm/zsmalloc.c `zs_shrinker_scan()`): compacts the whole pool, as
    /// the kernel does whatever `nr_to_scan` asks, counting the freed pages into
    /// [`ZPool::pages_compacted`]; `Some(pages freed)`, or `None` for `SHRINK_STOP` (nothing
    /// freed, or another compaction running, or no shrinker).
    fn shrinker_scan(&self) -> Option<u64> {
        None
    }
    /// Live objects.
    fn objects(&self) -> usize;
    /// Per-class statistics.
    fn class_stats(&self) -> Vec<ClassStat>;
    /// Heap bytes of bookkeeping (handles, descriptors, lists), not counted in `total_pages`.
    fn metadata_bytes(&self) -> usize;

    /// The size class an object of `size` bytes lands in (`zs_lookup_class_index`). zram's
    /// recompression keeps a result only when its class index is smaller. Allocators without
    /// size classes count 1/64-page chunks, their unit of placement.
    fn class_index(&self, size: usize) -> usize {
        size.div_ceil(self.page_size() / 64)
    }

    /// Compressed sizes at or above this are stored raw by zram (`zs_huge_class_size`).
    /// Allocators other than zsmalloc use zsmalloc's threshold for the same page size, so the
    /// choice of allocator changes where objects go, never what is stored.
    fn huge_class_size(&self) -> usize {
        zsmalloc::class::ClassTable::new(self.page_size(), zsmalloc::class::DEFAULT_CHAIN_SIZE)
            .map_or(self.page_size(), |t| t.huge_class_size())
    }

    /// `malloc` + `write`: stores `data` as a new object.
    fn store(&self, data: &[u8]) -> Result<Handle, PoolError> {
        let h = self.malloc(data.len())?;
        if let Err(e) = self.write(h, data) {
            let _ = self.free(h);
            return Err(e);
        }
        Ok(h)
    }

    /// Bytes the pool holds (`total_pages * page_size`, zram's `mem_used_total`).
    fn total_bytes(&self) -> u64 {
        self.total_pages() * self.page_size() as u64
    }
}

fn check_page_size(page_size: usize) -> Result<(), PoolError> {
    if PAGE_SIZES.contains(&page_size) {
        Ok(())
    } else {
        Err(PoolError::InvalidConfig(format!("page size {page_size} (use 4096, 16384 or 65536)")))
    }
}
