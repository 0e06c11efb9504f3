//! The backing device of writeback: page-size blocks in a file (or a block device), a bitmap of
//! the blocks in use, and the `bd_stat` counters.
//!
//! Block 0 is never handed out, as in 6.18 (`alloc_block_bdev` starts at bit 1, so a WB slot's
//! handle is never 0). The store behind the bitmap is a trait so tests can inject the failures
//! a real device has: failed writes, short writes, a full disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::errno::{Errno, ZramError};

/// Where written-back pages go: page-size blocks addressed by index.
pub trait BackingStore: Send + Sync + std::fmt::Debug {
    /// Capacity in bytes.
    fn capacity(&self) -> u64;
    /// Writes one block of `data.len()` bytes at `offset`.
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()>;
    /// Reads one block into `out` from `offset`.
    fn read_at(&self, out: &mut [u8], offset: u64) -> io::Result<()>;
}

/// A regular file or block device.
#[derive(Debug)]
pub struct FileStore {
    file: File,
    len: u64,
}

impl FileStore {
    /// Opens `path` read-write, whatever it is (no checks: see [`FileStore::open_backing_dev`]).
    pub fn open(path: &Path) -> io::Result<Self> {
        Self::from_file(OpenOptions::new().read(true).write(true).open(path)?)
    }

    fn from_file(mut file: File) -> io::Result<Self> {
        // Seeking works for block devices too, whose metadata length is 0.
        let len = file.seek(SeekFrom::End(0))?;
        Ok(Self { file, len })
    }

    /// What `backing_dev` accepts, in 6.18's order (drivers/block/zram/zram_drv.c
    /// `backing_dev_store()`): one `filp_open(O_RDWR | O_LARGEFILE | O_EXCL)`, its errors as
    /// they are (ENOENT; and EBUSY for a block device mounted, swapped on or held by another
    /// backing_dev, since block/fops.c `blkdev_open()` opens a block device exclusively under
    /// `O_EXCL`, the file as holder), then ENOTBLK for anything but a block device. The size
    /// check (`nr_pages == 0`: EINVAL) is [`crate::Zram::set_backing_store`]'s.
    ///
    /// With `allow_regular` (zmem's [`crate::ZramConfig::allow_regular_backing_file`]) a
    /// regular file is accepted too, opened without `O_EXCL` (which means nothing for an
    /// existing file).
    pub fn open_backing_dev(path: &Path, allow_regular: bool) -> Result<Self, ZramError> {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let os_err = |e: io::Error| {
            let errno = e.raw_os_error().and_then(Errno::from_code).unwrap_or(Errno::EINVAL);
            ZramError::new(errno, format!("{}: {e}", path.display()))
        };
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(os_err)?;
        let kind = file.metadata().map_err(os_err)?.file_type();
        let file = if kind.is_block_device() {
            drop(file);
            OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_EXCL)
                .open(path)
                .map_err(os_err)?
        } else if allow_regular && kind.is_file() {
            file
        } else {
            return Err(ZramError::new(
                Errno::ENOTBLK,
                format!("{} is not a block device", path.display()),
            ));
        };
        Self::from_file(file).map_err(os_err)
    }
}

impl BackingStore for FileStore {
    fn capacity(&self) -> u64 {
        self.len
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn read_at(&self, out: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(out, offset)
    }
}

/// A shared store: the caller keeps one `Arc` to change or inspect the store (a [`MemStore`]'s
/// faults) while the device holds the other.
impl<T: BackingStore + ?Sized> BackingStore for Arc<T> {
    fn capacity(&self) -> u64 {
        (**self).capacity()
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        (**self).write_at(data, offset)
    }

    fn read_at(&self, out: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_at(out, offset)
    }
}

/// What a [`MemStore`] does wrong, to drive the error paths of writeback and backing reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreFault {
    /// Nothing: a perfect device.
    #[default]
    None,
    /// Every write fails (EIO) and changes nothing.
    FailWrites,
    /// Every write stores the first half of the block and then fails (`WriteZero`, what
    /// `write_all_at` reports when the device stops accepting bytes).
    ShortWrites,
    /// Writes succeed until this many have been made, then fail with "no space left" (a sparse
    /// file on a full filesystem).
    FullAfter(u64),
    /// Every `n`th write fails (EIO); the others succeed.
    FailEvery(u64),
    /// Every read fails (EIO).
    FailReads,
}

/// A backing store in memory with injectable faults: what the fault tests, the stress test
/// and the fuzz targets attach instead of a file.
#[derive(Debug)]
pub struct MemStore {
    data: Mutex<Vec<u8>>,
    fault: Mutex<StoreFault>,
    writes: AtomicU64,
    failed_writes: AtomicU64,
}

impl MemStore {
    /// A store of `capacity` bytes, zero-filled, with no fault.
    pub fn new(capacity: usize) -> Self {
        Self {
            data: Mutex::new(vec![0; capacity]),
            fault: Mutex::new(StoreFault::None),
            writes: AtomicU64::new(0),
            failed_writes: AtomicU64::new(0),
        }
    }

    /// Changes what the store does wrong from the next call on.
    pub fn set_fault(&self, fault: StoreFault) {
        *self.fault.lock().unwrap_or_else(|p| p.into_inner()) = fault;
    }

    /// Writes attempted so far (failed ones included).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Writes that failed so far.
    pub fn failed_writes(&self) -> u64 {
        self.failed_writes.load(Ordering::Relaxed)
    }

    fn fault(&self) -> StoreFault {
        *self.fault.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn range(&self, offset: u64, len: usize, cap: usize) -> io::Result<std::ops::Range<usize>> {
        usize::try_from(offset)
            .ok()
            .and_then(|o| Some(o..o.checked_add(len)?))
            .filter(|r| r.end <= cap)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "beyond the store"))
    }
}

impl BackingStore for MemStore {
    fn capacity(&self) -> u64 {
        self.data.lock().unwrap_or_else(|p| p.into_inner()).len() as u64
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        let nth = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        let mut store = self.data.lock().unwrap_or_else(|p| p.into_inner());
        let range = self.range(offset, data.len(), store.len())?;
        let fail = |kind: io::ErrorKind, msg: &str| {
            self.failed_writes.fetch_add(1, Ordering::Relaxed);
            Err(io::Error::new(kind, msg.to_string()))
        };
        match self.fault() {
            StoreFault::FailWrites => return fail(io::ErrorKind::Other, "injected write error"),
            StoreFault::ShortWrites => {
                let half = data.len() / 2;
                store[range.start..range.start + half].copy_from_slice(&data[..half]);
                return fail(io::ErrorKind::WriteZero, "injected short write");
            }
            StoreFault::FullAfter(n) if nth > n => {
                return fail(io::ErrorKind::StorageFull, "injected full device");
            }
            StoreFault::FailEvery(n) if n > 0 && nth.is_multiple_of(n) => {
                return fail(io::ErrorKind::Other, "injected write error");
            }
            _ => {}
        }
        store[range].copy_from_slice(data);
        Ok(())
    }

    fn read_at(&self, out: &mut [u8], offset: u64) -> io::Result<()> {
        if self.fault() == StoreFault::FailReads {
            return Err(io::Error::other("injected read error"));
        }
        let store = self.data.lock().unwrap_or_else(|p| p.into_inner());
        let range = self.range(offset, out.len(), store.len())?;
        out.copy_from_slice(&store[range]);
        Ok(())
    }
}

/// The backing device of one initialised zram device.
#[derive(Debug)]
pub struct Backing {
    pub path: PathBuf,
    store: Box<dyn BackingStore>,
    page_size: usize,
    /// One bit per block; bit 0 is reserved.
    bitmap: Mutex<Vec<u64>>,
    nr_blocks: u64,
}

impl Backing {
    /// Attaches a store. One of less than a page is EINVAL (`backing_dev_store`'s
    /// `nr_pages == 0` check, which `set_backing_store` makes first); one of exactly a page is
    /// accepted and has no usable block (block 0 is reserved), so writeback finds it full.
    pub fn new(
        path: PathBuf,
        store: Box<dyn BackingStore>,
        page_size: usize,
    ) -> Result<Self, ZramError> {
        let nr_blocks = store.capacity() / page_size as u64;
        if nr_blocks == 0 {
            return Err(ZramError::new(
                Errno::EINVAL,
                format!(
                    "backing device {} is too small ({} bytes)",
                    path.display(),
                    store.capacity()
                ),
            ));
        }
        let mut bitmap = vec![0u64; nr_blocks.div_ceil(64) as usize];
        bitmap[0] = 1;
        Ok(Self { path, store, page_size, bitmap: Mutex::new(bitmap), nr_blocks })
    }

    /// Reserves the first free block, or `None` when the device is full.
    pub fn alloc_block(&self) -> Option<u64> {
        let mut bm = self.bitmap.lock().unwrap_or_else(|p| p.into_inner());
        for (w, word) in bm.iter_mut().enumerate() {
            if *word != u64::MAX {
                let bit = word.trailing_ones() as u64;
                let block = w as u64 * 64 + bit;
                if block >= self.nr_blocks {
                    return None;
                }
                *word |= 1 << bit;
                return Some(block);
            }
        }
        None
    }

    pub fn free_block(&self, block: u64) {
        let mut bm = self.bitmap.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(word) = bm.get_mut((block / 64) as usize) {
            *word &= !(1 << (block % 64));
        }
    }

    pub fn write_block(&self, block: u64, data: &[u8]) -> io::Result<()> {
        self.store.write_at(data, block * self.page_size as u64)
    }

    pub fn read_block(&self, block: u64, out: &mut [u8]) -> io::Result<()> {
        self.store.read_at(out, block * self.page_size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Mem(u64);
    impl BackingStore for Mem {
        fn capacity(&self) -> u64 {
            self.0
        }
        fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
            Ok(())
        }
        fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn blocks_start_at_one_and_run_out() {
        let b = Backing::new("m".into(), Box::new(Mem(4096 * 70)), 4096).unwrap();
        let got: Vec<u64> = std::iter::from_fn(|| b.alloc_block()).collect();
        assert_eq!(got, (1..70).collect::<Vec<_>>());
        b.free_block(33);
        assert_eq!(b.alloc_block(), Some(33));
        assert_eq!(b.alloc_block(), None);
    }

    #[test]
    fn devices_under_a_page_are_refused_and_one_page_has_no_block() {
        let e = Backing::new("m".into(), Box::new(Mem(4095)), 4096).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
        let b = Backing::new("m".into(), Box::new(Mem(4096)), 4096).unwrap();
        assert_eq!(b.alloc_block(), None, "block 0 is reserved");
    }
}
