//! The page arena: where every allocator gets its page frames, and the one place they are counted.
//!
//! In the kernel an allocator calls `alloc_page()` and the buddy allocator hands it a physical
//! page; the pool then counts the pages it holds (`pool->pages_allocated` in zsmalloc, `pages_nr`
//! in zbud and z3fold), and that count is what zram's `mem_used_total` reports. Here the arena
//! plays the buddy allocator: it hands out page-size *frames*, takes them back, and counts them.
//! `frames_in_use()` is the figure "memory used" means everywhere in zmem.
//!
//! Frames are named by a [`FrameId`] (an index, the analogue of a PFN), never by a pointer, so
//! the allocators' bookkeeping is plain integers and safe code. Two backings exist:
//!
//! - **Heap** (default): frames are carved from 2 MiB chunks of heap memory on small pages
//!   (`chunk_cache`; its `madvise(MADV_POPULATE_WRITE)` call is the only `unsafe` on this path).
//!   Chunks are not returned while the arena lives; a freed frame goes on a LIFO free list and
//!   is reused first, as a just-freed page is the hottest one the buddy allocator has. A dropped
//!   arena parks its chunks for the next one (`chunk_cache`), as freed pages stay mapped on the
//!   kernel's free lists.
//! - **Memfd**: frames are pages of one `memfd`, all mapped once into a reserved virtual range
//!   (grown with `ftruncate` as frames are first used). Because every frame is also a file
//!   offset, two arbitrary frames can be mapped *side by side* into a 2-page virtual window with
//!   `mmap(MAP_FIXED)`, which is what zsmalloc's old page-table mapping method
//!   (`CONFIG_PGTABLE_MAPPING`, dropped in 5.10) did with `map_vm_area` for an object that
//!   straddles two pages. See [`Window`].
//!
//! The arena never knows about objects; allocators own the layout inside frames.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::PoolError;
use crate::chunk_cache::{self, Chunk};

/// A page frame of an arena: its index, the analogue of a page frame number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// Which memory backs the arena's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArenaKind {
    /// Heap chunks (safe code, bar one `madvise` per chunk). Cannot map two frames side by side.
    #[default]
    Heap,
    /// A memfd mapped once; offers the side-by-side [`Window`].
    Memfd,
}

/// Bytes of one heap chunk (one huge page), and of one memfd growth step.
const CHUNK_BYTES: usize = chunk_cache::HUGE_PAGE;

/// Virtual address space a memfd arena reserves when no frame limit is given.
const MEMFD_DEFAULT_RESERVE: usize = 16 << 30;

/// Hands out page-size frames and counts those in use.
#[derive(Debug)]
pub struct PageArena {
    page_size: usize,
    /// The most frames that may be in use at once.
    limit: u64,
    in_use: u64,
    /// Frames handed out at least once (ids `0..high_water`).
    high_water: u32,
    /// Freed frames, reused last-in first-out.
    free: Vec<u32>,
    backing: Backing,
}

#[derive(Debug)]
enum Backing {
    Heap(Vec<Chunk>),
    Memfd(MemfdFrames),
}

impl Drop for PageArena {
    fn drop(&mut self) {
        if let Backing::Heap(chunks) = &mut self.backing {
            chunk_cache::give(std::mem::take(chunks));
        }
    }
}

impl PageArena {
    /// An arena of `page_size` frames; at most `limit` frames in use at once (`None`: no limit
    /// beyond what the backing can address).
    pub fn new(kind: ArenaKind, page_size: usize, limit: Option<u64>) -> Result<Self, PoolError> {
        if !page_size.is_power_of_two() || !(4096..=65536).contains(&page_size) {
            return Err(PoolError::InvalidConfig(format!(
                "page size {page_size} (use 4096, 16384 or 65536)"
            )));
        }
        let id_limit = u64::from(u32::MAX);
        let (backing, addressable) = match kind {
            ArenaKind::Heap => (Backing::Heap(Vec::new()), id_limit),
            ArenaKind::Memfd => {
                let frames = limit
                    .map(|l| l.max(1))
                    .unwrap_or((MEMFD_DEFAULT_RESERVE / page_size) as u64)
                    .min(id_limit);
                (Backing::Memfd(MemfdFrames::new(page_size, frames)?), frames)
            }
        };
        Ok(Self {
            page_size,
            limit: limit.unwrap_or(addressable).min(addressable),
            in_use: 0,
            high_water: 0,
            free: Vec::new(),
            backing,
        })
    }

    /// Size of one frame in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Frames currently handed out: the pool's memory, in pages.
    pub fn frames_in_use(&self) -> u64 {
        self.in_use
    }

    /// The most frames that may be in use at once.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Which backing this arena has.
    pub fn kind(&self) -> ArenaKind {
        match self.backing {
            Backing::Heap(_) => ArenaKind::Heap,
            Backing::Memfd(_) => ArenaKind::Memfd,
        }
    }

    /// Bytes of bookkeeping the arena itself holds (free list and chunk table), not frames.
    pub fn metadata_bytes(&self) -> usize {
        let chunks = match &self.backing {
            Backing::Heap(c) => c.capacity() * std::mem::size_of::<Chunk>(),
            Backing::Memfd(_) => 0,
        };
        self.free.capacity() * 4 + chunks
    }

    fn frames_per_chunk(&self) -> u32 {
        (CHUNK_BYTES / self.page_size).max(1) as u32
    }

    /// Frames this arena can hand out without taking a new chunk: its free list plus the unused
    /// rest of its last chunk (`u64::MAX` for a memfd arena, which never takes chunks).
    pub fn frames_before_new_chunk(&self) -> u64 {
        match &self.backing {
            Backing::Heap(chunks) => {
                let mapped = chunks.len() as u64 * u64::from(self.frames_per_chunk());
                self.free.len() as u64 + mapped - u64::from(self.high_water)
            }
            Backing::Memfd(_) => u64::MAX,
        }
    }

    /// Frames of one heap chunk for an arena of `page_size` frames.
    pub fn frames_per_heap_chunk(page_size: usize) -> u64 {
        (CHUNK_BYTES / page_size).max(1) as u64
    }

    /// Heap chunks this arena holds (0 for a memfd arena).
    pub fn chunks(&self) -> u64 {
        match &self.backing {
            Backing::Heap(chunks) => chunks.len() as u64,
            Backing::Memfd(_) => 0,
        }
    }

    /// Asks for a heap chunk for an arena of `page_size` frames to be made and faulted in off
    /// the caller's path, so that the arena's next new chunk costs no page faults
    /// (`chunk_cache::prepare_in_background`). Returns at once.
    pub fn prepare_chunk(page_size: usize) {
        let len = Self::frames_per_heap_chunk(page_size) as usize * page_size;
        chunk_cache::prepare_in_background(len);
    }

    /// Takes a frame: the most recently freed one if any, else a fresh one.
    pub fn alloc(&mut self) -> Result<FrameId, PoolError> {
        if self.in_use >= self.limit {
            return Err(PoolError::NoMemory { limit: self.limit });
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let id = self.high_water;
                let per_chunk = self.frames_per_chunk();
                if id.is_multiple_of(per_chunk) {
                    let chunk_bytes = per_chunk as usize * self.page_size;
                    match &mut self.backing {
                        Backing::Heap(chunks) => chunks.push(chunk_cache::take(chunk_bytes)),
                        Backing::Memfd(m) => m.grow_to(u64::from(id) + u64::from(per_chunk))?,
                    }
                }
                self.high_water += 1;
                id
            }
        };
        self.in_use += 1;
        Ok(FrameId(id))
    }

    /// Gives a frame back. The caller must not use it afterwards (its id may be handed out again).
    pub fn free(&mut self, frame: FrameId) {
        debug_assert!(frame.0 < self.high_water && !self.free.contains(&frame.0));
        self.free.push(frame.0);
        self.in_use -= 1;
    }

    /// The bytes of a frame.
    pub fn frame(&self, frame: FrameId) -> &[u8] {
        // SAFETY: `frame_ptr` checked that the frame's `page_size` bytes lie in the arena's
        // memory; the slice borrows the arena, so no `&mut` view exists while it lives, and the
        // only other way to the bytes, `frame_ptr`'s addresses, is zsmalloc's, which never asks
        // the arena for a frame's bytes.
        unsafe { std::slice::from_raw_parts(self.frame_ptr(frame), self.page_size) }
    }

    /// The address of a frame's first byte, for an allocator that reaches its frames under
    /// locks of its own rather than through the arena (zsmalloc's per-class `Chain`). It stays
    /// valid while the arena lives: chunks never move or go away before it, and the memfd
    /// mapping is made once. The arena hands out no reference to a frame of which it gave such
    /// an address (the caller takes it right after `alloc` and owns the frame until `free`), so
    /// the caller's own rules decide who may touch the bytes.
    pub(crate) fn frame_ptr(&self, frame: FrameId) -> *mut u8 {
        let ps = self.page_size;
        match &self.backing {
            Backing::Heap(chunks) => {
                assert!(frame.0 < self.high_water, "frame not in this arena");
                let per = self.frames_per_chunk();
                let chunk = &chunks[(frame.0 / per) as usize];
                let off = (frame.0 % per) as usize * ps;
                assert!(off + ps <= chunk.len());
                // SAFETY: the frame's `ps` bytes lie inside the chunk (asserted).
                unsafe { chunk.ptr().add(off) }
            }
            Backing::Memfd(m) => m.frame_ptr(frame, self.high_water),
        }
    }

    /// The bytes of a frame, writable.
    pub fn frame_mut(&mut self, frame: FrameId) -> &mut [u8] {
        // SAFETY: as in `frame`, and `&mut self` makes this the only view through the arena.
        unsafe { std::slice::from_raw_parts_mut(self.frame_ptr(frame), self.page_size) }
    }

    /// Maps frames `first` and `second` side by side into `window` and returns the 2-page view.
    /// Only a memfd arena can do this. The view lives until the returned guard is dropped, which
    /// unmaps the window again (as `unmap_kernel_range` did).
    pub fn map_pair<'a>(
        &'a mut self,
        window: &'a mut Window,
        first: FrameId,
        second: FrameId,
    ) -> Result<MappedPair<'a>, PoolError> {
        let hw = self.high_water;
        match &mut self.backing {
            Backing::Heap(_) => {
                Err(PoolError::Unsupported("the mapped window needs a memfd arena"))
            }
            Backing::Memfd(m) => {
                if window.page_size != self.page_size {
                    return Err(PoolError::InvalidConfig("window page size differs".into()));
                }
                if first.0 >= hw || second.0 >= hw {
                    return Err(PoolError::InvalidConfig("frame not in this arena".into()));
                }
                window.map(m, first, second)?;
                Ok(MappedPair { window, _arena: m })
            }
        }
    }
}

/// The memfd backing: one shared mapping of the whole file, grown on demand.
#[derive(Debug)]
struct MemfdFrames {
    fd: OwnedFd,
    base: *mut u8,
    page_size: usize,
    /// Frames the reservation covers.
    reserved: u64,
    /// Frames the file is long enough for.
    file_frames: u64,
}

// SAFETY: `base` points into a mapping this struct owns exclusively; shared access only reads
// (`&self`), writes need `&mut self`, so the usual borrow rules make cross-thread use sound; the
// frame addresses `PageArena::frame_ptr` gives out are used under the same rule by their one
// user (zsmalloc's `Chain`, under its class's lock).
unsafe impl Send for MemfdFrames {}
// SAFETY: as above: `&self` methods only read the mapping.
unsafe impl Sync for MemfdFrames {}

fn os_error(call: &'static str) -> PoolError {
    PoolError::Os { call, errno: std::io::Error::last_os_error().to_string() }
}

impl MemfdFrames {
    fn new(page_size: usize, frames: u64) -> Result<Self, PoolError> {
        let bytes = usize::try_from(frames)
            .ok()
            .and_then(|f| f.checked_mul(page_size))
            .ok_or_else(|| PoolError::InvalidConfig("memfd arena too large".into()))?;
        // SAFETY: memfd_create takes a NUL-terminated name and flags; it touches no Rust memory.
        let raw = unsafe { libc::memfd_create(c"zmem-arena".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(os_error("memfd_create"));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a new shared mapping chosen by the kernel (no MAP_FIXED): it cannot overlap
        // any existing Rust object. Pages past the file's end are never touched: frames are only
        // handed out below `file_frames`.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        Ok(Self { fd, base: base.cast(), page_size, reserved: frames, file_frames: 0 })
    }

    fn grow_to(&mut self, frames: u64) -> Result<(), PoolError> {
        let frames = frames.min(self.reserved);
        if frames <= self.file_frames {
            return Ok(());
        }
        let len = i64::try_from(frames * self.page_size as u64)
            .map_err(|_| PoolError::InvalidConfig("memfd arena too large".into()))?;
        // SAFETY: ftruncate on a descriptor we own; lengthening a file never invalidates the
        // mapped pages below the old end.
        if unsafe { libc::ftruncate(self.fd.as_raw_fd(), len) } != 0 {
            return Err(os_error("ftruncate"));
        }
        self.file_frames = frames;
        Ok(())
    }

    fn frame_ptr(&self, frame: FrameId, high_water: u32) -> *mut u8 {
        assert!(frame.0 < high_water && u64::from(frame.0) < self.file_frames);
        // SAFETY: the frame lies inside the mapping and below the file's end (asserted).
        unsafe { self.base.add(frame.0 as usize * self.page_size) }
    }
}

impl Drop for MemfdFrames {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the reservation made in `new`; no slice into it outlives `self`.
        unsafe { libc::munmap(self.base.cast(), self.reserved as usize * self.page_size) };
    }
}

/// A reserved 2-page virtual window into which two frames of a memfd arena are mapped side by
/// side (the per-CPU `vm_struct` of zsmalloc's page-table method). Each pool keeps one; the
/// pool's window mutex makes it single-user, as disabled preemption did per CPU.
#[derive(Debug)]
pub struct Window {
    addr: *mut u8,
    page_size: usize,
}

// SAFETY: the window's address range is owned by this struct and only used through `&mut self`.
unsafe impl Send for Window {}
// SAFETY: no `&self` method touches the mapped memory.
unsafe impl Sync for Window {}

impl Window {
    /// Reserves 2 pages of address space (inaccessible until something is mapped there).
    pub fn new(page_size: usize) -> Result<Self, PoolError> {
        // SAFETY: a fresh anonymous PROT_NONE reservation chosen by the kernel; overlaps nothing.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page_size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        Ok(Self { addr: addr.cast(), page_size })
    }

    fn map(&mut self, m: &MemfdFrames, first: FrameId, second: FrameId) -> Result<(), PoolError> {
        let ps = self.page_size;
        for (slot, frame) in [first, second].into_iter().enumerate() {
            // SAFETY: MAP_FIXED replaces pages only inside our own 2-page reservation
            // (`addr + slot * ps`, one page); the file offset is a frame below the file's end
            // (checked by the caller), so the new mapping is backed.
            let got = unsafe {
                libc::mmap(
                    self.addr.add(slot * ps).cast(),
                    ps,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_FIXED,
                    m.fd.as_raw_fd(),
                    (frame.0 as usize * ps) as libc::off_t,
                )
            };
            if got == libc::MAP_FAILED {
                self.unmap();
                return Err(os_error("mmap"));
            }
        }
        Ok(())
    }

    fn unmap(&mut self) {
        // SAFETY: replaces our own 2-page reservation with a fresh PROT_NONE one (MAP_FIXED),
        // dropping the frames' mappings; no slice into the window outlives the `MappedPair`.
        unsafe {
            libc::mmap(
                self.addr.cast(),
                2 * self.page_size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: releases the reservation made in `new`.
        unsafe { libc::munmap(self.addr.cast(), 2 * self.page_size) };
    }
}

/// Two frames mapped side by side; dropping it unmaps them.
#[derive(Debug)]
pub struct MappedPair<'a> {
    window: &'a mut Window,
    _arena: &'a mut MemfdFrames,
}

impl MappedPair<'_> {
    /// The 2-page view.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: both pages of the window are mapped read/write (by `Window::map`) until `drop`;
        // the slice borrows `self`, and `self` holds the arena mutably, so no other view of
        // these frames exists while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.window.addr, 2 * self.window.page_size) }
    }
}

impl Drop for MappedPair<'_> {
    fn drop(&mut self) {
        self.window.unmap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_counted_and_reused_lifo() {
        let mut a = PageArena::new(ArenaKind::Heap, 4096, Some(3)).unwrap();
        let f0 = a.alloc().unwrap();
        let f1 = a.alloc().unwrap();
        let f2 = a.alloc().unwrap();
        assert_eq!(a.frames_in_use(), 3);
        assert_eq!(a.alloc(), Err(PoolError::NoMemory { limit: 3 }));
        a.free(f1);
        a.free(f0);
        assert_eq!(a.frames_in_use(), 1);
        assert_eq!(a.alloc().unwrap(), f0);
        assert_eq!(a.alloc().unwrap(), f1);
        assert_ne!(f2, f0);
    }

    #[test]
    fn frames_are_disjoint_pages_that_keep_their_bytes() {
        let mut a = PageArena::new(ArenaKind::Heap, 4096, None).unwrap();
        // Across a chunk boundary too (512 frames of 4 KiB to a 2 MiB chunk).
        // (Miri: three frames; interpreting 2 MiB of fills would take minutes.)
        let n = if cfg!(miri) { 3 } else { 514 };
        let frames: Vec<_> = (0..n).map(|_| a.alloc().unwrap()).collect();
        for (k, &f) in frames.iter().enumerate() {
            a.frame_mut(f).fill(k as u8);
        }
        for (k, &f) in frames.iter().enumerate() {
            assert!(a.frame(f).iter().all(|&b| b == k as u8), "frame {k}");
        }
        assert_eq!(a.frame_ptr(frames[1]) as usize - a.frame_ptr(frames[0]) as usize, 4096);
    }

    #[test]
    fn bad_page_sizes_are_refused() {
        for ps in [0, 1000, 2048, 8193, 131072] {
            assert!(PageArena::new(ArenaKind::Heap, ps, None).is_err(), "{ps}");
        }
    }

    #[test]
    fn heap_arena_has_no_window() {
        let mut a = PageArena::new(ArenaKind::Heap, 4096, None).unwrap();
        let (f0, f1) = (a.alloc().unwrap(), a.alloc().unwrap());
        if cfg!(miri) {
            return; // the window reservation is an mmap, which Miri cannot run
        }
        let mut w = Window::new(4096).unwrap();
        assert!(matches!(a.map_pair(&mut w, f0, f1), Err(PoolError::Unsupported(_))));
    }

    #[cfg(not(miri))]
    #[test]
    fn memfd_window_shows_two_frames_side_by_side() {
        let mut a = PageArena::new(ArenaKind::Memfd, 4096, Some(600)).unwrap();
        let frames: Vec<_> = (0..600).map(|_| a.alloc().unwrap()).collect();
        // Frames far apart in the file, mapped in reverse order.
        let (lo, hi) = (frames[3], frames[517]);
        a.frame_mut(hi)[4000..].fill(0xAB);
        a.frame_mut(lo)[..200].fill(0xCD);
        let mut w = Window::new(4096).unwrap();
        {
            let mut pair = a.map_pair(&mut w, hi, lo).unwrap();
            let view = pair.bytes();
            assert!(view[4000..4096].iter().all(|&b| b == 0xAB));
            assert!(view[4096..4296].iter().all(|&b| b == 0xCD));
            // A write through the window lands in the frame itself.
            view[4090] = 7;
            view[4100] = 9;
        }
        assert_eq!(a.frame(hi)[4090], 7);
        assert_eq!(a.frame(lo)[4], 9);
        // Remapping with another pair works after the unmap.
        let mut pair = a.map_pair(&mut w, lo, hi).unwrap();
        assert_eq!(pair.bytes()[4], 9);
    }
}
