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
use std::sync::Mutex;

use crate::errno::{Errno, ZramError};

/// Where written-back pages go: page-size blocks addressed by index.
pub trait BackingStore: Send + Sync + std::fmt::Debug {
    /// Capacity in bytes.
    fn len(&self) -> u64;
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
    pub fn open(path: &Path) -> io::Result<Self> {
        let mut file = OpenOptions::new().read(true).write(true).open(path)?;
        // Seeking works for block devices too, whose metadata length is 0.
        let len = file.seek(SeekFrom::End(0))?;
        Ok(Self { file, len })
    }
}

impl BackingStore for FileStore {
    fn len(&self) -> u64 {
        self.len
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn read_at(&self, out: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(out, offset)
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
    /// Attaches a store; a store smaller than two pages has no usable block (EINVAL, like the
    /// kernel's refusal of an empty device).
    pub fn new(path: PathBuf, store: Box<dyn BackingStore>, page_size: usize) -> Result<Self, ZramError> {
        let nr_blocks = store.len() / page_size as u64;
        if nr_blocks < 2 {
            return Err(ZramError::new(
                Errno::EINVAL,
                format!("backing device {} is too small ({} bytes)", path.display(), store.len()),
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
        fn len(&self) -> u64 {
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
    fn tiny_devices_are_refused() {
        let e = Backing::new("m".into(), Box::new(Mem(4096)), 4096).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
    }
}
