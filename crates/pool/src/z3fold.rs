//! z3fold: up to three objects per page (first, middle, last), and headless pages for large
//! objects.
//!
//! The kernel removed z3fold in 6.15 (and the zpool layer in 6.18); it is here as the seeds'
//! baseline (seed 001, docs/REFERENCES.md [seed-001]: pool 1.8 % larger than zsmalloc's, the
//! slowest of the three).
//!
//! Like zbud, a page is 64 chunks of `PAGE_SIZE / 64` bytes, objects never straddle pages, and
//! the *first* object is left-justified after the header while the *last* is right-justified
//! against the page's end. The header is bigger (88 B on x86_64: rounded up to 2 chunks at
//! 4 KiB, 1 chunk at 16 and 64 KiB), leaving `NCHUNKS` = 62 chunks at 4 KiB. The third,
//! *middle* object goes right after the first one when placed; it is what lets z3fold beat
//! zbud's 2:1. An object too large to share a page (more than `PAGE_SIZE - header - 1 chunk`)
//! gets a *headless* page of its own, all of it usable.
//!
//! Pages with free room sit on `unbuddied[n]` by their free chunk count `n` (with a middle
//! object: the larger of the gap before it, if the first slot is empty, and the gap after it, if
//! the last slot is empty); full pages are on no list. Allocation takes the head of the first
//! non-empty `unbuddied[i]` from the object's chunk count up and fills the first slot if it is
//! free (and, with a middle object, large enough), else the last, else the middle.
//!
//! When an object is freed the page is compacted in place: if only the middle object remains it
//! moves to the start and becomes the first; if the first is present, the last slot is empty and
//! at least 3 chunks separate the first from the middle, the middle slides down to the first
//! (symmetrically towards the last). Before that, a page left with a single object (not one that
//! was itself moved in from another page) tries to hand it to another page that has room
//! (`compact_single_buddy`) and is released if that works. The kernel runs this compaction
//! asynchronously on the page's CPU and keeps per-CPU unbuddied lists; this is the single-CPU,
//! synchronous emulation (the kernel's own path when the page's CPU is offline). Handles go
//! through the pool's handle table, so moving an object only rewrites its table entry, where the
//! kernel rewrites the word in the page's `slots` array.

use std::sync::{Mutex, MutexGuard};

use crate::arena::{FrameId, PageArena};
use crate::handle::{Handle, HandleTable};
use crate::list::Lists;
use crate::{ClassStat, PoolConfig, PoolError, ZPool};

/// Chunks per page.
const TOTAL_CHUNKS: usize = 64;
/// `sizeof(struct z3fold_header)` on x86_64 without lock debugging.
const ZHDR_SIZE: usize = 88;
/// `BIG_CHUNK_GAP`: the least gap worth moving the middle object for.
const BIG_CHUNK_GAP: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bud {
    First = 0,
    Middle = 1,
    Last = 2,
    Headless = 3,
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    page: u32,
    bud: Bud,
}

#[derive(Debug)]
struct Z3Page {
    frame: FrameId,
    headless: bool,
    first_chunks: usize,
    middle_chunks: usize,
    last_chunks: usize,
    start_middle: usize,
    /// The handle of the object in each of first/middle/last.
    handles: [Option<Handle>; 3],
    /// Which of those were moved in from another page (`foreign_handles`).
    foreign: [bool; 3],
}

impl Z3Page {
    fn chunks(&self, bud: Bud) -> usize {
        match bud {
            Bud::First => self.first_chunks,
            Bud::Middle => self.middle_chunks,
            Bud::Last => self.last_chunks,
            Bud::Headless => TOTAL_CHUNKS,
        }
    }

    fn set_chunks(&mut self, bud: Bud, n: usize) {
        match bud {
            Bud::First => self.first_chunks = n,
            Bud::Middle => self.middle_chunks = n,
            Bud::Last => self.last_chunks = n,
            Bud::Headless => {}
        }
    }

    fn objects(&self) -> usize {
        [self.first_chunks, self.middle_chunks, self.last_chunks]
            .iter()
            .filter(|&&c| c != 0)
            .count()
    }
}

/// Page geometry for one page size.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    page_size: usize,
    chunk: usize,
    zhdr_chunks: usize,
    nchunks: usize,
}

impl Geometry {
    fn new(page_size: usize) -> Self {
        let chunk = page_size / TOTAL_CHUNKS;
        let zhdr_chunks = ZHDR_SIZE.div_ceil(chunk);
        Self { page_size, chunk, zhdr_chunks, nchunks: TOTAL_CHUNKS - zhdr_chunks }
    }

    /// Largest object that shares a page; larger ones are headless.
    fn max_buddy_size(&self) -> usize {
        self.page_size - self.zhdr_chunks * self.chunk - self.chunk
    }

    fn offset(&self, p: &Z3Page, bud: Bud) -> usize {
        match bud {
            Bud::First => self.zhdr_chunks * self.chunk,
            Bud::Middle => p.start_middle * self.chunk,
            Bud::Last => self.page_size - p.last_chunks * self.chunk,
            Bud::Headless => 0,
        }
    }

    /// `num_free_chunks`.
    fn free_chunks(&self, p: &Z3Page) -> usize {
        if p.middle_chunks != 0 {
            let before = if p.first_chunks == 0 { p.start_middle - self.zhdr_chunks } else { 0 };
            let after = if p.last_chunks == 0 {
                TOTAL_CHUNKS - (p.start_middle + p.middle_chunks)
            } else {
                0
            };
            before.max(after)
        } else {
            self.nchunks - p.first_chunks - p.last_chunks
        }
    }

    /// `get_free_buddy`.
    fn free_buddy(&self, p: &Z3Page, chunks: usize) -> Option<Bud> {
        if p.middle_chunks != 0 {
            if p.first_chunks == 0 && chunks <= p.start_middle - self.zhdr_chunks {
                Some(Bud::First)
            } else if p.last_chunks == 0 {
                Some(Bud::Last)
            } else {
                None
            }
        } else if p.first_chunks == 0 {
            Some(Bud::First)
        } else if p.last_chunks == 0 {
            Some(Bud::Last)
        } else {
            Some(Bud::Middle)
        }
    }
}

#[derive(Debug)]
struct Inner {
    geo: Geometry,
    arena: PageArena,
    pages: Vec<Option<Z3Page>>,
    free_ids: Vec<u32>,
    lists: Lists,
    handles: HandleTable<Loc>,
}

/// A z3fold pool.
#[derive(Debug)]
pub struct Z3foldPool {
    geo: Geometry,
    inner: Mutex<Inner>,
}

impl Z3foldPool {
    /// A pool of `config.page_size` pages.
    pub fn new(config: &PoolConfig) -> Result<Self, PoolError> {
        crate::check_page_size(config.page_size)?;
        let geo = Geometry::new(config.page_size);
        Ok(Self {
            geo,
            inner: Mutex::new(Inner {
                geo,
                arena: PageArena::new(config.arena, config.page_size, config.max_pages)?,
                pages: Vec::new(),
                free_ids: Vec::new(),
                lists: Lists::new(geo.nchunks),
                handles: HandleTable::default(),
            }),
        })
    }

    /// Usable chunks of a page with a header (`NCHUNKS`).
    pub fn nchunks(&self) -> usize {
        self.geo.nchunks
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// For every page, the (offset, length) of each live object in it, found from the handles.
    pub fn page_layout(&self) -> Vec<Vec<(usize, usize)>> {
        let g = self.lock();
        let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); g.pages.len()];
        for (loc, size) in g.handles.iter_live() {
            let p = g.page(loc.page);
            out[loc.page as usize].push((self.geo.offset(p, loc.bud), size));
        }
        out.retain(|v| !v.is_empty());
        out
    }
}

impl Inner {
    fn page(&self, id: u32) -> &Z3Page {
        self.pages[id as usize].as_ref().expect("live page")
    }

    fn page_mut(&mut self, id: u32) -> &mut Z3Page {
        self.pages[id as usize].as_mut().expect("live page")
    }

    fn new_page(&mut self, headless: bool) -> Result<u32, PoolError> {
        let frame = self.arena.alloc()?;
        let page = Z3Page {
            frame,
            headless,
            first_chunks: 0,
            middle_chunks: 0,
            last_chunks: 0,
            start_middle: 0,
            handles: [None; 3],
            foreign: [false; 3],
        };
        Ok(match self.free_ids.pop() {
            Some(id) => {
                self.pages[id as usize] = Some(page);
                id
            }
            None => {
                self.pages.push(Some(page));
                (self.pages.len() - 1) as u32
            }
        })
    }

    fn release_page(&mut self, id: u32) {
        self.lists.remove(id);
        let p = self.pages[id as usize].take().expect("live page");
        self.arena.free(p.frame);
        self.free_ids.push(id);
    }

    /// `add_to_unbuddied`: pages with a free slot go on the list of their free chunk count.
    fn add_to_unbuddied(&mut self, id: u32) {
        let p = self.page(id);
        if p.first_chunks == 0 || p.middle_chunks == 0 || p.last_chunks == 0 {
            let n = self.geo.free_chunks(p);
            self.lists.push_front(n, id);
        }
    }

    /// `__z3fold_alloc` without a new page: an existing page with room for `chunks`, taken off
    /// its list, and the slot to use. `except` is never chosen.
    fn find_page(&mut self, chunks: usize, except: Option<u32>) -> Option<(u32, Bud)> {
        for i in chunks..self.geo.nchunks {
            let Some(id) = self.lists.head(i) else { continue };
            if Some(id) == except {
                continue;
            }
            if let Some(bud) = self.geo.free_buddy(self.page(id), chunks) {
                self.lists.remove(id);
                return Some((id, bud));
            }
        }
        None
    }

    /// Fills `bud` of page `id` with an object of `chunks` chunks owned by `handle`.
    fn place(&mut self, id: u32, bud: Bud, chunks: usize, handle: Handle, foreign: bool) {
        let zhdr_chunks = self.geo.zhdr_chunks;
        let p = self.page_mut(id);
        if bud == Bud::Middle {
            p.start_middle = p.first_chunks + zhdr_chunks;
        }
        p.set_chunks(bud, chunks);
        p.handles[bud as usize] = Some(handle);
        p.foreign[bud as usize] = foreign;
    }

    fn malloc(&mut self, size: usize) -> Result<Handle, PoolError> {
        if size > self.geo.max_buddy_size() {
            let id = self.new_page(true)?;
            return Ok(self.handles.insert(Loc { page: id, bud: Bud::Headless }, size));
        }
        let chunks = size.div_ceil(self.geo.chunk);
        let (id, bud) = match self.find_page(chunks, None) {
            Some(found) => found,
            None => (self.new_page(false)?, Bud::First),
        };
        let h = self.handles.insert(Loc { page: id, bud }, size);
        self.place(id, bud, chunks, h, false);
        self.add_to_unbuddied(id);
        Ok(h)
    }

    fn free(&mut self, h: Handle) -> Result<(), PoolError> {
        let (loc, _) = self.handles.remove(h)?;
        if loc.bud == Bud::Headless {
            self.release_page(loc.page);
            return Ok(());
        }
        let p = self.page_mut(loc.page);
        p.set_chunks(loc.bud, 0);
        p.handles[loc.bud as usize] = None;
        p.foreign[loc.bud as usize] = false;
        if p.objects() == 0 {
            self.release_page(loc.page);
            return Ok(());
        }
        self.do_compact_page(loc.page);
        Ok(())
    }

    /// `do_compact_page`: single-object pages try to move out; then in-page compaction.
    fn do_compact_page(&mut self, id: u32) {
        self.lists.remove(id);
        let p = self.page(id);
        if p.objects() == 1 && !p.foreign.iter().any(|&f| f) && self.compact_single_buddy(id) {
            self.release_page(id);
            return;
        }
        self.compact_in_page(id);
        self.add_to_unbuddied(id);
    }

    /// `compact_single_buddy`: moves the page's only object into another page with room.
    fn compact_single_buddy(&mut self, id: u32) -> bool {
        let p = self.page(id);
        let Some(bud) =
            [Bud::First, Bud::Middle, Bud::Last].into_iter().find(|&b| p.chunks(b) != 0)
        else {
            return false;
        };
        let Some(h) = p.handles[bud as usize] else { return false };
        let chunks = p.chunks(bud);
        let (from_frame, from_off) = (p.frame, self.geo.offset(p, bud));
        let Some((to, to_bud)) = self.find_page(chunks, Some(id)) else { return false };
        self.place(to, to_bud, chunks, h, true);
        let to_page = self.page(to);
        let (to_frame, to_off) = (to_page.frame, self.geo.offset(to_page, to_bud));
        let len = chunks * self.geo.chunk;
        let mut tmp = vec![0u8; len];
        tmp.copy_from_slice(&self.arena.frame(from_frame)[from_off..from_off + len]);
        self.arena.frame_mut(to_frame)[to_off..to_off + len].copy_from_slice(&tmp);
        let _ = self.handles.relocate(h, Loc { page: to, bud: to_bud });
        self.add_to_unbuddied(to);
        let p = self.page_mut(id);
        p.set_chunks(bud, 0);
        p.handles[bud as usize] = None;
        true
    }

    /// `z3fold_compact_page`: moves the middle object towards an end when that gains room.
    fn compact_in_page(&mut self, id: u32) {
        let geo = self.geo;
        let p = self.page(id);
        if p.middle_chunks == 0 || p.headless {
            return;
        }
        let len = p.middle_chunks * geo.chunk;
        let from = p.start_middle * geo.chunk;
        let frame = p.frame;
        if p.first_chunks == 0 && p.last_chunks == 0 {
            self.arena.frame_mut(frame).copy_within(from..from + len, geo.zhdr_chunks * geo.chunk);
            let p = self.page_mut(id);
            p.first_chunks = p.middle_chunks;
            p.middle_chunks = 0;
            p.start_middle = 0;
            p.handles[Bud::First as usize] = p.handles[Bud::Middle as usize].take();
            p.foreign[Bud::First as usize] = std::mem::take(&mut p.foreign[Bud::Middle as usize]);
            if let Some(h) = p.handles[Bud::First as usize] {
                let _ = self.handles.relocate(h, Loc { page: id, bud: Bud::First });
            }
            return;
        }
        let new_start = if p.first_chunks != 0
            && p.last_chunks == 0
            && p.start_middle - (p.first_chunks + geo.zhdr_chunks) >= BIG_CHUNK_GAP
        {
            p.first_chunks + geo.zhdr_chunks
        } else if p.last_chunks != 0
            && p.first_chunks == 0
            && TOTAL_CHUNKS - (p.last_chunks + p.start_middle + p.middle_chunks) >= BIG_CHUNK_GAP
        {
            TOTAL_CHUNKS - p.last_chunks - p.middle_chunks
        } else {
            return;
        };
        self.arena.frame_mut(frame).copy_within(from..from + len, new_start * geo.chunk);
        self.page_mut(id).start_middle = new_start;
    }
}

impl ZPool for Z3foldPool {
    fn name(&self) -> &'static str {
        "z3fold"
    }

    fn page_size(&self) -> usize {
        self.geo.page_size
    }

    fn max_alloc_size(&self) -> usize {
        self.geo.page_size
    }

    fn malloc(&self, size: usize) -> Result<Handle, PoolError> {
        if size == 0 {
            return Err(PoolError::ZeroSize);
        }
        if size > self.geo.page_size {
            let max = self.geo.page_size;
            return Err(PoolError::TooLarge { allocator: "z3fold", size, max });
        }
        self.lock().malloc(size)
    }

    fn free(&self, handle: Handle) -> Result<(), PoolError> {
        self.lock().free(handle)
    }

    fn write(&self, handle: Handle, data: &[u8]) -> Result<(), PoolError> {
        let mut g = self.lock();
        let (loc, size) = g.handles.get(handle)?;
        if data.len() > size {
            return Err(PoolError::BadLength { len: data.len(), size });
        }
        let p = g.page(loc.page);
        let (frame, off) = (p.frame, self.geo.offset(p, loc.bud));
        g.arena.frame_mut(frame)[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, handle: Handle, out: &mut [u8]) -> Result<usize, PoolError> {
        let g = self.lock();
        let (loc, size) = g.handles.get(handle)?;
        if out.len() < size {
            return Err(PoolError::BadLength { len: out.len(), size });
        }
        let p = g.page(loc.page);
        let off = self.geo.offset(p, loc.bud);
        out[..size].copy_from_slice(&g.arena.frame(p.frame)[off..off + size]);
        Ok(size)
    }

    fn object_size(&self, handle: Handle) -> Result<usize, PoolError> {
        Ok(self.lock().handles.get(handle)?.1)
    }

    fn total_pages(&self) -> u64 {
        self.lock().arena.frames_in_use()
    }

    /// z3fold compacts pages as objects are freed; the pool-level call has nothing to do.
    fn compact(&self) -> u64 {
        0
    }

    fn pages_compacted(&self) -> u64 {
        0
    }

    fn objects(&self) -> usize {
        self.lock().handles.len()
    }

    /// Two pseudo-classes: index 0 for pages with a header (3 slots), 1 for headless pages.
    fn class_stats(&self) -> Vec<ClassStat> {
        let g = self.lock();
        let mut headless = 0u64;
        let mut normal = 0u64;
        let mut objs = 0u64;
        for p in g.pages.iter().flatten() {
            if p.headless {
                headless += 1;
            } else {
                normal += 1;
                objs += p.objects() as u64;
            }
        }
        let stat = |index, opz: usize, pages: u64, inuse| ClassStat {
            index,
            size: self.geo.page_size,
            pages_per_zspage: 1,
            objs_per_zspage: opz,
            objs_allocated: pages * opz as u64,
            objs_inuse: inuse,
            zspages: pages,
            pages,
        };
        vec![stat(0, 3, normal, objs), stat(1, 1, headless, headless)]
    }

    fn metadata_bytes(&self) -> usize {
        let g = self.lock();
        g.handles.metadata_bytes()
            + g.lists.metadata_bytes()
            + g.pages.capacity() * std::mem::size_of::<Option<Z3Page>>()
            + g.free_ids.capacity() * 4
            + g.arena.metadata_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_per_page_size() {
        let g = Geometry::new(4096);
        assert_eq!((g.chunk, g.zhdr_chunks, g.nchunks, g.max_buddy_size()), (64, 2, 62, 3904));
        let g = Geometry::new(16384);
        assert_eq!((g.chunk, g.zhdr_chunks, g.nchunks), (256, 1, 63));
        let g = Geometry::new(65536);
        assert_eq!((g.chunk, g.zhdr_chunks, g.nchunks), (1024, 1, 63));
    }

    #[test]
    fn the_documented_examples() {
        // docs/REFERENCES.md [z3fold-kernel]: 1000 B -> first, last, middle at chunk 18: 3 per
        // page, 334 pages.
        let pool = Z3foldPool::new(&PoolConfig::default()).unwrap();
        for _ in 0..1000 {
            pool.malloc(1000).unwrap();
        }
        assert_eq!(pool.total_pages(), 334);
        let layout = pool.page_layout();
        let full = layout.iter().find(|p| p.len() == 3).unwrap();
        let mut offs: Vec<_> = full.iter().map(|&(o, _)| o / 64).collect();
        offs.sort_unstable();
        assert_eq!(offs, [2, 18, 64 - 16]);
        let pool = Z3foldPool::new(&PoolConfig::default()).unwrap();
        for _ in 0..5 {
            pool.malloc(3000).unwrap();
        }
        assert_eq!(pool.total_pages(), 5);
        pool.malloc(3905).unwrap(); // headless
        assert_eq!(pool.class_stats()[1].pages, 1);
    }

    #[test]
    fn a_lone_middle_object_becomes_the_first() {
        let pool = Z3foldPool::new(&PoolConfig::default()).unwrap();
        let a = pool.malloc(1000).unwrap();
        let b = pool.malloc(1000).unwrap();
        let c = pool.malloc(1000).unwrap(); // middle
        pool.write(c, &[7; 1000]).unwrap();
        pool.free(a).unwrap();
        pool.free(b).unwrap(); // only the middle remains -> moved to chunk 2
        assert_eq!(pool.page_layout(), vec![vec![(128, 1000)]]);
        let mut out = vec![0; 1000];
        pool.read(c, &mut out).unwrap();
        assert_eq!(out, [7; 1000]);
    }

    #[test]
    fn a_single_object_moves_to_a_page_with_room() {
        let pool = Z3foldPool::new(&PoolConfig::default()).unwrap();
        // Page A: three 1000-B objects. Page B: 1000 + 1000, then a 2000-B one opens page C.
        let hs: Vec<_> = (0..5).map(|_| pool.malloc(1000).unwrap()).collect();
        assert_eq!(pool.total_pages(), 2);
        let big = pool.malloc(2000).unwrap();
        assert_eq!(pool.total_pages(), 3);
        pool.write(hs[3], &[3; 1000]).unwrap();
        // Free one of page B's objects: B keeps one, which moves into page C's free room.
        pool.free(hs[4]).unwrap();
        assert_eq!(pool.total_pages(), 2);
        let mut out = vec![0; 1000];
        pool.read(hs[3], &mut out).unwrap();
        assert_eq!(out, [3; 1000]);
        pool.free(big).unwrap();
        assert!(pool.page_layout().iter().all(|p| p.len() <= 3));
    }
}
