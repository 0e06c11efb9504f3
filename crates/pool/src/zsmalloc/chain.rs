//! A zspage's frames and the bytes in them: the one way zsmalloc reaches its memory.
//!
//! With one lock per size class (as the kernel's `size_class->lock`), two classes work on their
//! zspages at once while the arena that holds all frames is shared. So a zspage does not reach
//! its bytes through the arena (which would need the arena's lock, or a reference to a whole
//! 2 MiB chunk shared with other classes' frames): it keeps the address of each of its frames,
//! taken when the frame was allocated ([`PageArena::frame_ptr`]), as the kernel's zspage keeps
//! its `struct page`s.
//!
//! A [`Chain`] owns its frames' bytes as a `Box<[u8]>` owns its own: reads need `&Chain`,
//! writes `&mut Chain`, and nothing else in the process touches those frames between the
//! arena's `alloc` and `free` (the arena hands out no view of a frame zsmalloc holds). The
//! borrow rules on the chain are therefore the borrow rules on the bytes, and the class's
//! `RwLock` (which owns the chain) turns them into "readers share, writers exclude" across
//! threads. A frame passes from one class to another only through the arena's mutex, which
//! orders the first class's last access before the second's first.

use crate::PoolError;
use crate::arena::{FrameId, PageArena};

/// The address of a frame's first byte.
#[derive(Debug, Clone, Copy)]
struct FramePtr(*mut u8);

/// A zspage's frames, in order, and their addresses.
#[derive(Debug)]
pub(crate) struct Chain {
    ids: Box<[FrameId]>,
    ptrs: Box<[FramePtr]>,
    page_size: usize,
}

// SAFETY: a chain owns its frames' bytes exclusively (see the module's text) and reads them
// only through `&self`, writes them only through `&mut self`, as a `Box<[u8]>` would; the
// frames stay mapped while the arena lives, and the pool drops every chain before its arena.
unsafe impl Send for Chain {}
// SAFETY: as above: `&self` methods only read.
unsafe impl Sync for Chain {}

impl Chain {
    /// Takes `n` frames from the arena (all or none).
    pub(crate) fn alloc(arena: &mut PageArena, n: usize) -> Result<Self, PoolError> {
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            match arena.alloc() {
                Ok(f) => ids.push(f),
                Err(e) => {
                    for f in ids.into_iter().rev() {
                        arena.free(f);
                    }
                    return Err(e);
                }
            }
        }
        let ptrs = ids.iter().map(|&f| FramePtr(arena.frame_ptr(f))).collect();
        Ok(Self { ids: ids.into_boxed_slice(), ptrs, page_size: arena.page_size() })
    }

    /// Gives the frames back to the arena (in chain order, as `free_zspage` frees its pages).
    pub(crate) fn free(self, arena: &mut PageArena) {
        for &f in self.ids.iter() {
            arena.free(f);
        }
    }

    /// The frames, in order.
    pub(crate) fn ids(&self) -> &[FrameId] {
        &self.ids
    }

    /// Frames in the chain.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Checks that `offset..offset + len` lies inside the chain.
    fn check(&self, offset: usize, len: usize) {
        assert!(offset + len <= self.ids.len() * self.page_size, "span past the zspage's end");
    }

    /// Bytes `offset..offset + len` of the chain as pieces that each lie in one frame: the
    /// address of the piece's first byte, its position in the range, and its length. Panics
    /// if the range leaves the chain.
    fn pieces(&self, offset: usize, len: usize) -> impl Iterator<Item = (*mut u8, usize, usize)> {
        self.check(offset, len);
        let ps = self.page_size;
        let mut done = 0;
        std::iter::from_fn(move || {
            (done < len).then(|| {
                let pos = offset + done;
                let (page, in_page) = (pos / ps, pos % ps);
                let n = (ps - in_page).min(len - done);
                // SAFETY: `in_page < ps`: the address lies inside frame `page` of the chain
                // (the range was checked above).
                let at = unsafe { self.ptrs[page].0.add(in_page) };
                let piece = (at, done, n);
                done += n;
                piece
            })
        })
    }

    /// Copies `out.len()` bytes from byte `offset` of the chain (an object may straddle two
    /// frames: the kernel's copy-in on map).
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) {
        for (at, done, n) in self.pieces(offset, out.len()) {
            // SAFETY: the piece's `n` bytes lie in one frame this chain owns (`pieces`);
            // `&self` means no writer exists (module text); `out` is ours and cannot overlap a
            // frame, which no Rust reference outside the chain points into.
            unsafe { std::ptr::copy_nonoverlapping(at, out.as_mut_ptr().add(done), n) };
        }
    }

    /// Writes `data` at byte `offset` of the chain (copy-out on unmap, `zs_obj_write`).
    pub(crate) fn write(&mut self, offset: usize, data: &[u8]) {
        for (at, done, n) in self.pieces(offset, data.len()) {
            // SAFETY: as in `read`, and `&mut self` makes this the only access to the frame's
            // bytes; `data` cannot overlap a frame for the same reason `out` cannot there.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr().add(done), at, n) };
        }
    }

    /// The 8-byte word at byte `offset` (a slot's header or free-list link; never straddles).
    pub(crate) fn word(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read(offset, &mut b);
        u64::from_le_bytes(b)
    }

    /// Writes the 8-byte word at byte `offset`.
    pub(crate) fn set_word(&mut self, offset: usize, word: u64) {
        self.write(offset, &word.to_le_bytes());
    }

    /// Where bytes `offset..offset + len` start, when they lie in one frame or in frames that
    /// follow each other in memory (a zspage built from fresh frames of one arena chunk).
    fn contiguous(&self, offset: usize, len: usize) -> Option<*mut u8> {
        self.check(offset, len);
        let ps = self.page_size;
        let (first, last) = (offset / ps, (offset + len.max(1) - 1) / ps);
        let base = self.ptrs[first].0;
        let adjacent =
            (first..=last).all(|k| self.ptrs[k].0 as usize == base as usize + (k - first) * ps);
        // SAFETY: `offset % ps < ps`: inside the first frame.
        adjacent.then(|| unsafe { base.add(offset % ps) })
    }

    /// Bytes `offset..offset + len` in place, when they lie in one frame or in frames that
    /// follow each other in memory, so most objects that cross a page boundary are read
    /// without a copy (the kernel's pages are never adjacent in its mapping, so it always
    /// copies). `None` otherwise.
    pub(crate) fn span(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let start = self.contiguous(offset, len)?;
        // SAFETY: the range lies in the chain (checked) in consecutive frames, so `len` bytes
        // from `start` are the frames' bytes; the slice borrows `self`, so no writer can exist
        // while it lives (module text).
        Some(unsafe { std::slice::from_raw_parts(start, len) })
    }

    /// As [`Chain::span`], writable.
    pub(crate) fn span_mut(&mut self, offset: usize, len: usize) -> Option<&mut [u8]> {
        let start = self.contiguous(offset, len)?;
        // SAFETY: as in `span`, and `&mut self` makes this the only view of the chain's bytes
        // while the slice lives.
        Some(unsafe { std::slice::from_raw_parts_mut(start, len) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::ArenaKind;

    #[test]
    fn spans_cross_frame_boundaries_and_adjacent_frames_read_in_place() {
        let mut a = PageArena::new(ArenaKind::Heap, 4096, None).unwrap();
        let mut c = Chain::alloc(&mut a, 3).unwrap();
        assert_eq!((c.len(), a.frames_in_use()), (3, 3));
        let data: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        c.write(4096 - 40, &data[..100]);
        let mut back = vec![0; 100];
        c.read(4096 - 40, &mut back);
        assert_eq!(back, data[..100]);
        // Fresh frames of one chunk follow each other: in place across the boundary.
        assert_eq!(c.span(4096 - 40, 100), Some(&data[..100]));
        c.set_word(8192, 0x0123_4567_89ab_cdef);
        assert_eq!(c.word(8192), 0x0123_4567_89ab_cdef);
        c.free(&mut a);
        assert_eq!(a.frames_in_use(), 0);
        // Reused frames come back last-in first-out: reversed, so not adjacent.
        let mut r = Chain::alloc(&mut a, 2).unwrap();
        r.write(4000, &data[..200]);
        assert_eq!(r.span(4000, 200), None);
        assert_eq!(r.span(0, 4096).map(<[u8]>::len), Some(4096));
        r.read(4000, &mut back[..]);
        assert_eq!(back, data[..100]);
        r.free(&mut a);
    }

    #[test]
    fn a_chain_is_all_or_nothing_at_the_limit() {
        let mut a = PageArena::new(ArenaKind::Heap, 4096, Some(2)).unwrap();
        assert!(matches!(Chain::alloc(&mut a, 3), Err(PoolError::NoMemory { limit: 2 })));
        assert_eq!(a.frames_in_use(), 0);
    }

    #[test]
    #[should_panic(expected = "past the zspage's end")]
    fn a_span_past_the_end_is_refused() {
        let mut a = PageArena::new(ArenaKind::Heap, 4096, None).unwrap();
        let c = Chain::alloc(&mut a, 1).unwrap();
        let mut out = [0u8; 16];
        c.read(4090, &mut out);
    }
}
