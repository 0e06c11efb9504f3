//! Heap chunks: how the heap arena gets its memory, and where chunks wait between arenas.
//!
//! **No huge pages.** A heap chunk is 2 MiB, aligned to a 2 MiB boundary inside an allocation
//! one huge page larger (the slack is never touched, so it costs address space, not memory),
//! but it is not advised with `MADV_HUGEPAGE`. It was, to spare the object copies TLB misses as
//! the kernel's direct map does, and that made warm writes 1.5-2.5 % faster; but a fresh
//! process's huge pages come from the free 2 MiB blocks that a VM's free page reporting
//! (virtio-balloon) has handed back to the host, and the first write to each then waits for
//! the host to back it again: on the 2-core VM of docs/BENCHMARKS.md a fresh `zmem zram` of 400
//! MB wrote at 630-800 MB/s three seconds after any other run and at 1,300-1,450 right after one
//! (whose freed blocks were not yet reported), and `clear_page_erms` went from 2 % to 23 % of
//! the profile. Small pages come from the allocator's recently freed ones first: 1,160-1,430
//! MB/s fresh, and no loss warm (docs/BENCHMARKS.md, "Where a fresh process's time goes").
//!
//! **Reuse.** When a kernel zram device is reset, zsmalloc's pages go back to the buddy
//! allocator still mapped, and the next pool takes them without a page fault. A heap chunk freed
//! to the C allocator instead goes back to the OS (glibc unmaps allocations of this size), so the
//! next arena pays a page fault for every page of fresh memory it touches: on the same VM that
//! cost a fresh device 6-25% of its write speed. So a dropped arena parks its chunks here and a
//! new one takes them first. At most [`MAX_CACHED_BYTES`] wait here; beyond that chunks go back
//! to the OS as before.
//!
//! **Faulting ahead, off the writer's path.** A fresh chunk's memory is faulted in (and zeroed
//! by the kernel, page by page) on its first write, and that write is an object copy made
//! under a class lock: the writer paid the zeroing inside its write, and every other writer of
//! the class waited for it. The kernel's zsmalloc takes pages that are already mapped and are
//! not zeroed. So a pool that will soon need a fresh chunk asks for one with
//! [`prepare_in_background`]: a helper thread (one per process, started on the first request)
//! makes the chunk, faults all its pages in and parks it here, where the arena takes it; a
//! chunk not ready in time is faulted in by its first writes, as before.
//!
//! A parked chunk comes back holding what its last arena wrote, as a page from the buddy
//! allocator does: no allocator reads bytes it has not written. Debug builds (so the test
//! suites) fill reused chunks with a pattern instead of zeros, so a reader that relied on
//! zeroed frames would fail there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, Once};

/// The most bytes of chunks kept for later arenas.
pub(crate) const MAX_CACHED_BYTES: usize = 256 << 20;

/// A huge page, the alignment of a chunk's usable bytes.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Bytes allocated beyond a chunk's length to align it; none under Miri, which has no huge
/// pages and would spend its time on the slack.
const SLACK: usize = if cfg!(miri) { 0 } else { HUGE_PAGE };

/// Memory for frames: `len` bytes at a huge-page boundary inside a larger zeroed allocation.
///
/// The allocation is held as a raw pointer (taken from its `Box` once, given back to it on drop)
/// rather than as the `Box`, so that zsmalloc may keep the addresses of its frames
/// ([`Chunk::ptr`]) and reach them under its size classes' locks without a reference to the
/// whole chunk, which would claim all of it (see `zsmalloc::chain`).
pub(crate) struct Chunk {
    /// The whole allocation (`alloc_len` bytes), from `Box::into_raw`.
    alloc: std::ptr::NonNull<u8>,
    alloc_len: usize,
    start: usize,
    len: usize,
}

// SAFETY: a chunk owns its allocation as a `Box<[u8]>` would, and gives access to it only
// through `&self` (shared bytes) and `&mut self` (exclusive bytes), or through `ptr`, whose
// users keep to the same rule under their own locks (zsmalloc's `Chain`).
unsafe impl Send for Chunk {}
// SAFETY: as above; `&self` methods only read.
unsafe impl Sync for Chunk {}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk").field("len", &self.len).finish_non_exhaustive()
    }
}

impl Chunk {
    /// A fresh chunk of `len` zero bytes, at a huge-page boundary (any length works).
    fn new(len: usize) -> Self {
        // `calloc` of this size maps fresh zero pages and touches none of them.
        let boxed = vec![0u8; len + SLACK].into_boxed_slice();
        let alloc_len = boxed.len();
        let alloc = std::ptr::NonNull::from(Box::leak(boxed)).cast::<u8>();
        let addr = alloc.as_ptr() as usize;
        let start = if SLACK == 0 { 0 } else { addr.next_multiple_of(HUGE_PAGE) - addr };
        Chunk { alloc, alloc_len, start, len }
    }

    /// Usable bytes (an inherent method, so that asking makes no reference to the bytes, which
    /// `Deref` would: zsmalloc's classes write other frames of the chunk meanwhile).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The address of the chunk's first usable byte. Valid until the chunk is dropped; not a
    /// reference, so holding it claims nothing.
    pub(crate) fn ptr(&self) -> *mut u8 {
        // SAFETY: `start + len <= alloc_len`, so the offset stays inside the allocation.
        unsafe { self.alloc.as_ptr().add(self.start) }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let whole = std::ptr::slice_from_raw_parts_mut(self.alloc.as_ptr(), self.alloc_len);
        // SAFETY: `alloc` and `alloc_len` are exactly what `Box::leak` gave up in `new`, and
        // nothing has freed it since; no slice into the chunk outlives it.
        drop(unsafe { Box::from_raw(whole) });
    }
}

impl std::ops::Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes from `ptr()` lie inside the live allocation; the slice borrows
        // `self`, so it cannot outlive it, and `&self` allows no writes through the chunk.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len) }
    }
}

impl std::ops::DerefMut for Chunk {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only view through the chunk.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.len) }
    }
}

struct Cache {
    chunks: Vec<Chunk>,
    bytes: usize,
}

/// What debug builds fill reused chunks with.
const POISON: u8 = 0xa5;

static CACHE: Mutex<Cache> = Mutex::new(Cache { chunks: Vec::new(), bytes: 0 });

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    // A panic elsewhere cannot leave the list inconsistent: every change is one push or one
    // swap_remove with its byte count.
    CACHE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A chunk of `len` bytes: a parked one if one of that length waits (holding what it held), else
/// a new, zeroed one.
pub(crate) fn take(len: usize) -> Chunk {
    let parked = {
        let mut c = cache();
        let at = c.chunks.iter().rposition(|ch| ch.len() == len);
        at.map(|i| {
            c.bytes -= len;
            c.chunks.swap_remove(i)
        })
    };
    match parked {
        Some(mut chunk) => {
            if cfg!(debug_assertions) {
                chunk.fill(POISON);
            }
            chunk
        }
        None => Chunk::new(len),
    }
}

/// Requests for [`prepare`] (chunk lengths), served newest first by the helper thread.
static REQUESTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static REQUESTED: Condvar = Condvar::new();
static HELPER: Once = Once::new();

/// Asks the helper thread to [`prepare`] a chunk of `len` bytes, and returns at once. Where no
/// thread can be started (or under Miri), prepares it on the caller's thread instead.
pub(crate) fn prepare_in_background(len: usize) {
    HELPER.call_once(|| {
        let started = cfg!(not(miri))
            && std::thread::Builder::new().name("zmem-chunk-prep".into()).spawn(helper).is_ok();
        // No helper: later calls prepare on their own thread.
        NO_HELPER.store(!started, Ordering::Relaxed);
    });
    if NO_HELPER.load(Ordering::Relaxed) {
        prepare(len);
        return;
    }
    REQUESTS.lock().unwrap_or_else(|p| p.into_inner()).push(len);
    REQUESTED.notify_one();
}

static NO_HELPER: AtomicBool = AtomicBool::new(false);

/// The helper thread: prepares each requested chunk, for the life of the process (it holds
/// nothing but the chunks it parks, which the cache owns).
fn helper() {
    loop {
        let len = {
            let mut q = REQUESTS.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(len) = q.pop() {
                    break len;
                }
                q = REQUESTED.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        prepare(len);
    }
}

/// Makes sure a chunk of `len` bytes is parked, making one and faulting all its pages in if none
/// is (see the module's "Faulting ahead"). Two callers may both make one; the second waits here
/// for the next arena or goes back to the OS at the cap.
pub(crate) fn prepare(len: usize) {
    {
        let c = cache();
        // One waits already, or a new one could not be parked (the arena will fault its own).
        if c.chunks.iter().any(|ch| ch.len() == len) || c.bytes + len > MAX_CACHED_BYTES {
            return;
        }
    }
    let chunk = Chunk::new(len);
    populate(&chunk);
    give(vec![chunk]);
}

/// Bytes faulted in per `madvise` call: the call holds the process's `mmap_lock` for reading
/// while it faults, and a writer thread that needs the lock for writing (glibc growing a thread's
/// heap with `mprotect`, a large `malloc`'s `mmap`) waits for the whole call; on the VM of
/// docs/BENCHMARKS.md one call over a 2 MiB chunk held it about a millisecond, and a 64 MiB
/// write waited that long six to eight times. 64 KiB at a time bounds the wait to a sixteenth.
const POPULATE_STEP: usize = 64 << 10;

#[cfg(all(target_os = "linux", not(miri)))]
fn populate(chunk: &Chunk) {
    let mut at = 0;
    while at < chunk.len() {
        let n = POPULATE_STEP.min(chunk.len() - at);
        // SAFETY: `madvise` reads and writes no memory of ours: MADV_POPULATE_WRITE (Linux
        // 5.14) faults the range's pages in as a write would, leaving their contents (zeros,
        // as the allocation was zeroed) unchanged. The range lies inside the chunk, which this
        // thread owns. A failure (an older kernel) only leaves the faults to the first writes,
        // as before.
        unsafe { libc::madvise(chunk.ptr().add(at).cast(), n, libc::MADV_POPULATE_WRITE) };
        at += n;
    }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn populate(_chunk: &Chunk) {}

/// Parks the chunks of a dropped arena, as many as fit under [`MAX_CACHED_BYTES`].
pub(crate) fn give(chunks: Vec<Chunk>) {
    let mut c = cache();
    for chunk in chunks {
        if c.bytes + chunk.len() > MAX_CACHED_BYTES {
            break;
        }
        c.bytes += chunk.len();
        c.chunks.push(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A length no arena uses, so tests running in parallel cannot take each other's chunks.
    const ODD: usize = 12_345;

    #[test]
    fn a_parked_chunk_is_reused_in_place() {
        let mut dirty = take(ODD);
        dirty.fill(7);
        let ptr = dirty.as_ptr();
        give(vec![dirty]);
        let again = take(ODD);
        assert_eq!(again.as_ptr(), ptr, "the parked chunk is reused");
        let expect = if cfg!(debug_assertions) { POISON } else { 7 };
        assert!(again.iter().all(|&b| b == expect), "a reused chunk holds {expect:#x}");
        // Taken, not copied: nothing of that length is parked now.
        assert!(cache().chunks.iter().all(|ch| ch.len() != ODD));
    }

    #[test]
    fn a_fresh_chunk_is_zeroed_and_starts_at_a_huge_page() {
        let chunk = Chunk::new(HUGE_PAGE);
        assert_eq!(chunk.len(), HUGE_PAGE);
        // Every byte, or under Miri (slow to interpret 2 MiB of loop) one in 61.
        let stride = if cfg!(miri) { 61 } else { 1 };
        assert!(chunk.iter().step_by(stride).all(|&b| b == 0));
        if !cfg!(miri) {
            assert_eq!(chunk.as_ptr() as usize % HUGE_PAGE, 0);
        }
    }

    #[test]
    fn a_prepared_chunk_is_parked_zeroed_and_taken_next() {
        // Another length no other test uses.
        const LEN: usize = 3 * 4096 + 17;
        prepare(LEN);
        let parked = cache().chunks.iter().filter(|ch| ch.len() == LEN).count();
        assert_eq!(parked, 1, "one chunk of the length is parked");
        let ptr = cache().chunks.iter().find(|ch| ch.len() == LEN).map(|ch| ch.as_ptr());
        // Preparing again while one waits makes no second chunk.
        prepare(LEN);
        assert_eq!(cache().chunks.iter().filter(|ch| ch.len() == LEN).count(), 1);
        let chunk = take(LEN);
        assert_eq!(Some(chunk.as_ptr()), ptr, "the prepared chunk is the one taken");
        let expect = if cfg!(debug_assertions) { POISON } else { 0 };
        assert!(chunk.iter().all(|&b| b == expect));
    }

    #[test]
    fn a_background_request_parks_a_chunk() {
        const LEN: usize = 5 * 4096 + 29;
        prepare_in_background(LEN);
        // The helper serves it soon; wait for it (no timing is asserted, only the outcome).
        let parked = (0..2000).any(|_| {
            let found = cache().chunks.iter().any(|ch| ch.len() == LEN);
            if !found {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            found
        });
        assert!(parked, "the requested chunk was parked");
        let chunk = take(LEN);
        assert_eq!(chunk.len(), LEN);
    }

    #[test]
    #[cfg_attr(miri, ignore = "allocates 256 MiB")]
    fn parking_stops_at_the_cap() {
        // Two chunks of just over half the cap, of a length only this test uses: at most one
        // fits, whatever other tests have parked meanwhile.
        let len = MAX_CACHED_BYTES / 2 + 1;
        give(vec![Chunk::new(len), Chunk::new(len)]);
        let mut c = cache();
        assert!(c.bytes <= MAX_CACHED_BYTES);
        assert!(c.chunks.iter().filter(|ch| ch.len() == len).count() <= 1);
        assert_eq!(c.bytes, c.chunks.iter().map(|ch| ch.len()).sum::<usize>());
        while let Some(i) = c.chunks.iter().position(|ch| ch.len() == len) {
            c.bytes -= len;
            c.chunks.swap_remove(i);
        }
    }
}
