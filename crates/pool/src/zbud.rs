//! zbud: at most two objects per page, one at each end ("buddies").
//!
//! The kernel removed zbud in 6.15 (and the zpool layer in 6.18); it is here as the seeds'
//! baseline (seed 001, docs/REFERENCES.md [seed-001], measured zswap's pool 32.7 % larger with
//! zbud than with zsmalloc).
//!
//! A page is cut into 64 chunks of `PAGE_SIZE / 64` bytes (64 B at 4 KiB). Chunk 0 holds the
//! page header, so 63 chunks are usable. The *first* buddy is left-justified right after the
//! header; the *last* buddy is right-justified against the page's end. An object takes
//! `ceil(size / chunk)` chunks; the largest accepted size leaves room for the header and one
//! chunk (`PAGE_SIZE - 2 * chunk`, 3968 B at 4 KiB). Objects never straddle pages, so reads are
//! always in place, and a page never holds more than two objects, so the ratio tops out at 2:1.
//!
//! Pages with one buddy free sit on `unbuddied[n]`, where `n` is the number of free chunks;
//! pages with both in use sit on the `buddied` list. Allocation takes the head of the first
//! non-empty `unbuddied[i]` for `i` from the object's chunk count up (the smallest gap that
//! fits, most recently added first), filling the first buddy if it is free, else the last. With
//! none, a new page is taken. A free clears the buddy; an empty page goes back to the arena at
//! once, otherwise the page is re-added at the head of `unbuddied[free chunks]`. There is no
//! compaction. Page metadata lives outside the page here (the kernel keeps it in chunk 0), but
//! chunk 0 is still reserved so the geometry and the page count are the kernel's.

use std::sync::{Mutex, MutexGuard};

use crate::arena::{FrameId, PageArena};
use crate::handle::{Handle, HandleTable};
use crate::list::Lists;
use crate::{ClassStat, PoolConfig, PoolError, ZPool};

/// Chunks per page (`1 << NCHUNKS_ORDER`).
const TOTAL_CHUNKS: usize = 64;
/// Usable chunks (chunk 0 is the header): `NCHUNKS`.
pub const NCHUNKS: usize = TOTAL_CHUNKS - 1;
/// List index of the buddied list (after `unbuddied[0..NCHUNKS]`).
const BUDDIED: usize = NCHUNKS;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bud {
    First,
    Last,
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    page: u32,
    bud: Bud,
}

#[derive(Debug)]
struct ZbudPage {
    frame: FrameId,
    first_chunks: usize,
    last_chunks: usize,
}

#[derive(Debug)]
struct Inner {
    arena: PageArena,
    pages: Vec<Option<ZbudPage>>,
    free_ids: Vec<u32>,
    lists: Lists,
    handles: HandleTable<Loc>,
}

/// A zbud pool.
#[derive(Debug)]
pub struct ZbudPool {
    page_size: usize,
    chunk: usize,
    inner: Mutex<Inner>,
}

impl ZbudPool {
    /// A pool of `config.page_size` pages.
    pub fn new(config: &PoolConfig) -> Result<Self, PoolError> {
        crate::check_page_size(config.page_size)?;
        Ok(Self {
            page_size: config.page_size,
            chunk: config.page_size / TOTAL_CHUNKS,
            inner: Mutex::new(Inner {
                arena: PageArena::new(config.arena, config.page_size, config.max_pages)?,
                pages: Vec::new(),
                free_ids: Vec::new(),
                lists: Lists::new(NCHUNKS + 1),
                handles: HandleTable::default(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Byte offset of a buddy within its page.
    fn offset(&self, page: &ZbudPage, bud: Bud) -> usize {
        match bud {
            Bud::First => self.chunk,
            Bud::Last => self.page_size - page.last_chunks * self.chunk,
        }
    }

    /// For every page, the (offset, length) of each live object in it, found from the handles.
    pub fn page_layout(&self) -> Vec<Vec<(usize, usize)>> {
        let g = self.lock();
        let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); g.pages.len()];
        for (loc, size) in g.handles.iter_live() {
            let page = g.pages[loc.page as usize].as_ref().expect("live page");
            out[loc.page as usize].push((self.offset(page, loc.bud), size));
        }
        out.retain(|v| !v.is_empty());
        out
    }
}

fn free_chunks(p: &ZbudPage) -> usize {
    NCHUNKS - p.first_chunks - p.last_chunks
}

impl Inner {
    fn page(&self, id: u32) -> &ZbudPage {
        self.pages[id as usize].as_ref().expect("live page")
    }

    fn relist(&mut self, id: u32) {
        let p = self.page(id);
        let list = if p.first_chunks == 0 || p.last_chunks == 0 { free_chunks(p) } else { BUDDIED };
        self.lists.push_front(list, id);
    }
}

impl ZPool for ZbudPool {
    fn name(&self) -> &'static str {
        "zbud"
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn max_alloc_size(&self) -> usize {
        self.page_size - 2 * self.chunk
    }

    fn malloc(&self, size: usize) -> Result<Handle, PoolError> {
        if size == 0 {
            return Err(PoolError::ZeroSize);
        }
        if size > self.max_alloc_size() {
            let max = self.max_alloc_size();
            return Err(PoolError::TooLarge { allocator: "zbud", size, max });
        }
        let chunks = size.div_ceil(self.chunk);
        let mut g = self.lock();
        let found = (chunks..NCHUNKS).find_map(|i| g.lists.head(i));
        let (id, bud) = match found {
            Some(id) => {
                g.lists.remove(id);
                let bud = if g.page(id).first_chunks == 0 { Bud::First } else { Bud::Last };
                (id, bud)
            }
            None => {
                let frame = g.arena.alloc()?;
                let page = ZbudPage { frame, first_chunks: 0, last_chunks: 0 };
                let id = match g.free_ids.pop() {
                    Some(id) => {
                        g.pages[id as usize] = Some(page);
                        id
                    }
                    None => {
                        g.pages.push(Some(page));
                        (g.pages.len() - 1) as u32
                    }
                };
                (id, Bud::First)
            }
        };
        let p = g.pages[id as usize].as_mut().expect("live page");
        match bud {
            Bud::First => p.first_chunks = chunks,
            Bud::Last => p.last_chunks = chunks,
        }
        g.relist(id);
        Ok(g.handles.insert(Loc { page: id, bud }, size))
    }

    fn free(&self, handle: Handle) -> Result<(), PoolError> {
        let mut g = self.lock();
        let (loc, _) = g.handles.remove(handle)?;
        g.lists.remove(loc.page);
        let p = g.pages[loc.page as usize].as_mut().expect("live page");
        match loc.bud {
            Bud::First => p.first_chunks = 0,
            Bud::Last => p.last_chunks = 0,
        }
        if p.first_chunks == 0 && p.last_chunks == 0 {
            let frame = p.frame;
            g.pages[loc.page as usize] = None;
            g.free_ids.push(loc.page);
            g.arena.free(frame);
        } else {
            g.relist(loc.page);
        }
        Ok(())
    }

    fn write(&self, handle: Handle, data: &[u8]) -> Result<(), PoolError> {
        let mut g = self.lock();
        let (loc, size) = g.handles.get(handle)?;
        if data.len() > size {
            return Err(PoolError::BadLength { len: data.len(), size });
        }
        let page = g.page(loc.page);
        let (frame, off) = (page.frame, self.offset(page, loc.bud));
        g.arena.frame_mut(frame)[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, handle: Handle, out: &mut [u8]) -> Result<usize, PoolError> {
        let g = self.lock();
        let (loc, size) = g.handles.get(handle)?;
        if out.len() < size {
            return Err(PoolError::BadLength { len: out.len(), size });
        }
        let page = g.page(loc.page);
        let off = self.offset(page, loc.bud);
        out[..size].copy_from_slice(&g.arena.frame(page.frame)[off..off + size]);
        Ok(size)
    }

    fn object_size(&self, handle: Handle) -> Result<usize, PoolError> {
        Ok(self.lock().handles.get(handle)?.1)
    }

    fn total_pages(&self) -> u64 {
        self.lock().arena.frames_in_use()
    }

    fn compact(&self) -> u64 {
        0
    }

    fn pages_compacted(&self) -> u64 {
        0
    }

    fn objects(&self) -> usize {
        self.lock().handles.len()
    }

    /// One pseudo-class: the whole pool, two slots per page.
    fn class_stats(&self) -> Vec<ClassStat> {
        let g = self.lock();
        let pages = g.arena.frames_in_use();
        vec![ClassStat {
            index: 0,
            size: self.page_size,
            pages_per_zspage: 1,
            objs_per_zspage: 2,
            objs_allocated: 2 * pages,
            objs_inuse: g.handles.len() as u64,
            zspages: pages,
            pages,
        }]
    }

    fn metadata_bytes(&self) -> usize {
        let g = self.lock();
        g.handles.metadata_bytes()
            + g.lists.metadata_bytes()
            + g.pages.capacity() * std::mem::size_of::<Option<ZbudPage>>()
            + g.free_ids.capacity() * 4
            + g.arena.metadata_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_examples() {
        // docs/REFERENCES.md [zbud-kernel]: 1000 B -> 16 chunks, two per page; 3000 B -> one per
        // page.
        let pool = ZbudPool::new(&PoolConfig::default()).unwrap();
        for _ in 0..1000 {
            pool.malloc(1000).unwrap();
        }
        assert_eq!(pool.total_pages(), 500);
        let pool = ZbudPool::new(&PoolConfig::default()).unwrap();
        for _ in 0..10 {
            pool.malloc(3000).unwrap();
        }
        assert_eq!(pool.total_pages(), 10);
        assert_eq!(pool.max_alloc_size(), 3968);
        assert!(pool.malloc(3969).is_err() && pool.malloc(0).is_err());
    }

    #[test]
    fn a_small_object_joins_the_smallest_fitting_gap() {
        let pool = ZbudPool::new(&PoolConfig::default()).unwrap();
        let a = pool.malloc(3000).unwrap(); // 47 chunks: 16 free
        let _b = pool.malloc(1900).unwrap(); // 30 chunks: does not fit, new page: 33 free
        let _c = pool.malloc(900).unwrap(); // 15 chunks: fits the 16-chunk gap of a's page
        assert_eq!(pool.total_pages(), 2);
        let layout = pool.page_layout();
        let with_a = layout.iter().find(|p| p.contains(&(64, 3000))).unwrap();
        assert_eq!(with_a.len(), 2);
        assert!(with_a.contains(&(4096 - 15 * 64, 900)));
        pool.free(a).unwrap();
        assert_eq!(pool.total_pages(), 2);
    }
}
