//! The swap device behind zswap: a file of page-size slots addressed by swap offset.
//!
//! In the kernel the swap device is a partition or a swap file, and a page's swap entry (type,
//! offset) is its address there. zswap is a cache in front of it: a page it stores never reaches
//! the device unless the shrinker writes it back, and a page it rejects is written by the swap
//! layer instead. Here the device is the byte range `offset * page_size ..` of a [`SlotStore`]
//! (a real file, or memory for tests), wrapped in a [`SwapFile`] that counts page reads and
//! writes (`/proc/vmstat` pswpin and pswpout, which mm/page_io.c counts per page of each folio
//! read from or written to the device: `count_swpout_vm_event()`, `swap_read_folio_bdev_sync()`
//! and `_async()`). The store is a trait so tests can inject the
//! failures real devices have.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ZswapError;

/// Raw storage for page slots: positioned reads and writes of whole pages.
pub trait SlotStore: Send + Sync + std::fmt::Debug {
    /// Writes `data` at byte `pos`.
    fn write_at(&self, data: &[u8], pos: u64) -> io::Result<()>;
    /// Fills `out` from byte `pos`.
    fn read_at(&self, out: &mut [u8], pos: u64) -> io::Result<()>;
}

/// A regular file (sparse: slots never written read back as zeros).
#[derive(Debug)]
pub struct FileSlots(File);

impl FileSlots {
    /// An anonymous file of `bytes` bytes in `dir`, for swapped pages: made 0600 in a private
    /// directory of its own under `dir` (zmem-files' `PrivateTempDir`, 0700), then unlinked with
    /// its directory at once, so it disappears with the process and nobody else can open it.
    /// The error names where it failed when that is not `dir`.
    pub fn temporary(dir: &Path, bytes: u64) -> io::Result<Self> {
        let io_error = |e: zmem_files::FileError| {
            if e.path() == dir { e.into_io() } else { io::Error::from(e) }
        };
        let private = zmem_files::PrivateTempDir::new_in(dir, "zmem-swap").map_err(io_error)?;
        let (f, path) = private.create_file("slots").map_err(io_error)?;
        f.set_len(bytes)?;
        std::fs::remove_file(&path)?;
        Ok(Self(f))
    }
}

impl SlotStore for FileSlots {
    fn write_at(&self, data: &[u8], pos: u64) -> io::Result<()> {
        self.0.write_all_at(data, pos)
    }

    fn read_at(&self, out: &mut [u8], pos: u64) -> io::Result<()> {
        // A sparse file reads zeros past its data, but a short read means the file shrank.
        self.0.read_exact_at(out, pos)
    }
}

/// Slots in memory, for tests and for replays that should not touch the disk.
#[derive(Debug, Default)]
pub struct MemSlots(Mutex<Vec<u8>>);

impl SlotStore for MemSlots {
    fn write_at(&self, data: &[u8], pos: u64) -> io::Result<()> {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let end = pos as usize + data.len();
        if v.len() < end {
            v.resize(end, 0);
        }
        v[pos as usize..end].copy_from_slice(data);
        Ok(())
    }

    fn read_at(&self, out: &mut [u8], pos: u64) -> io::Result<()> {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let start = (pos as usize).min(v.len());
        let end = (pos as usize + out.len()).min(v.len());
        let n = end - start;
        out[..n].copy_from_slice(&v[start..end]);
        out[n..].fill(0);
        Ok(())
    }
}

/// The swap device: `nr_slots` page slots over a [`SlotStore`], with I/O counters.
#[derive(Debug)]
pub struct SwapFile {
    store: Box<dyn SlotStore>,
    page_size: usize,
    nr_slots: u64,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl SwapFile {
    /// A device of `nr_slots` pages of `page_size` bytes over `store`.
    pub fn new(store: Box<dyn SlotStore>, page_size: usize, nr_slots: u64) -> Self {
        Self { store, page_size, nr_slots, reads: AtomicU64::new(0), writes: AtomicU64::new(0) }
    }

    /// An in-memory device.
    pub fn in_memory(page_size: usize, nr_slots: u64) -> Self {
        Self::new(Box::new(MemSlots::default()), page_size, nr_slots)
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn nr_slots(&self) -> u64 {
        self.nr_slots
    }

    /// Pages read from the device so far (pswpin).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Pages written to the device so far (pswpout).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    fn check(&self, offset: u64, len: usize) -> Result<u64, ZswapError> {
        if len != self.page_size {
            return Err(ZswapError::BadLength { len, page_size: self.page_size });
        }
        if offset >= self.nr_slots {
            return Err(ZswapError::OffsetOutOfRange { offset, slots: self.nr_slots });
        }
        Ok(offset * self.page_size as u64)
    }

    /// Writes one page to slot `offset`.
    pub fn write_page(&self, offset: u64, page: &[u8]) -> Result<(), ZswapError> {
        let pos = self.check(offset, page.len())?;
        self.store.write_at(page, pos).map_err(|err| ZswapError::Io {
            op: "write",
            offset,
            err,
        })?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Reads slot `offset` into `out` (one page).
    pub fn read_page(&self, offset: u64, out: &mut [u8]) -> Result<(), ZswapError> {
        let pos = self.check(offset, out.len())?;
        self.store.read_at(out, pos).map_err(|err| ZswapError::Io { op: "read", offset, err })?;
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_land_at_their_offsets_in_a_real_file() {
        let dir = std::env::temp_dir();
        let f = SwapFile::new(Box::new(FileSlots::temporary(&dir, 4 * 4096).unwrap()), 4096, 4);
        f.write_page(2, &[7u8; 4096]).unwrap();
        f.write_page(0, &[1u8; 4096]).unwrap();
        let mut out = vec![0u8; 4096];
        f.read_page(2, &mut out).unwrap();
        assert_eq!(out, vec![7u8; 4096]);
        f.read_page(1, &mut out).unwrap();
        assert_eq!(out, vec![0u8; 4096], "an unwritten slot of a sparse file reads as zeros");
        assert_eq!((f.reads(), f.writes()), (2, 2));
    }

    #[test]
    fn bad_offsets_and_lengths_are_errors_and_not_counted() {
        let f = SwapFile::in_memory(4096, 2);
        assert!(matches!(
            f.write_page(2, &[0u8; 4096]),
            Err(ZswapError::OffsetOutOfRange { offset: 2, slots: 2 })
        ));
        assert!(matches!(f.write_page(0, &[0u8; 100]), Err(ZswapError::BadLength { .. })));
        assert_eq!(f.writes(), 0);
    }
}
