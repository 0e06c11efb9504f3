//! Heap chunks that outlive their arena: the kernel's free page lists, for user space.
//!
//! When a kernel zram device is reset, zsmalloc's pages go back to the buddy allocator still
//! mapped, and the next pool takes them without a page fault. A heap chunk freed to the C
//! allocator instead goes back to the OS (glibc unmaps allocations of this size), so the next
//! arena pays a page fault for every page of fresh memory it touches: on the 2-core VM of
//! docs/BENCHMARKS.md that cost a fresh device 6-25% of its write speed. So a dropped arena parks
//! its chunks here and a new one takes them first, zeroed again, as a fresh chunk would be. At
//! most [`MAX_CACHED_BYTES`] wait here; beyond that chunks go back to the OS as before.

use std::sync::Mutex;

/// The most bytes of chunks kept for later arenas.
pub(crate) const MAX_CACHED_BYTES: usize = 256 << 20;

struct Cache {
    chunks: Vec<Box<[u8]>>,
    bytes: usize,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { chunks: Vec::new(), bytes: 0 });

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    // A panic elsewhere cannot leave the list inconsistent: every change is one push or one
    // swap_remove with its byte count.
    CACHE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A zeroed chunk of `len` bytes: a parked one if one of that length waits, else a new one.
pub(crate) fn take(len: usize) -> Box<[u8]> {
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
            chunk.fill(0);
            chunk
        }
        None => vec![0u8; len].into_boxed_slice(),
    }
}

/// Parks the chunks of a dropped arena, as many as fit under [`MAX_CACHED_BYTES`].
pub(crate) fn give(chunks: Vec<Box<[u8]>>) {
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
    fn a_parked_chunk_comes_back_zeroed() {
        let mut dirty = vec![0xa5u8; ODD].into_boxed_slice();
        dirty[0] = 1;
        let ptr = dirty.as_ptr();
        give(vec![dirty]);
        let again = take(ODD);
        assert_eq!(again.as_ptr(), ptr, "the parked chunk is reused");
        assert!(again.iter().all(|&b| b == 0), "a reused chunk is zeroed");
        // Taken, not copied: nothing of that length is parked now.
        assert!(cache().chunks.iter().all(|ch| ch.len() != ODD));
    }

    #[test]
    #[cfg_attr(miri, ignore = "allocates 256 MiB")]
    fn parking_stops_at_the_cap() {
        // Two chunks of just over half the cap, of a length only this test uses: at most one
        // fits, whatever other tests have parked meanwhile.
        let len = MAX_CACHED_BYTES / 2 + 1;
        give(vec![vec![0u8; len].into_boxed_slice(), vec![0u8; len].into_boxed_slice()]);
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
