//! One zram device as the advisor samples it: its panel of slots ([`super::panel`]), what each
//! slot held when last read (the stored length for every candidate, or nothing), and the CPU
//! our codecs spent on its pages.
//!
//! A slot is read as `zmem capture --zram` reads the device: `O_DIRECT` (a buffered read would
//! return the block device's page cache, which swap I/O bypasses), one page into a page-aligned
//! buffer. The device is opened for each round and closed after it: an open file descriptor
//! counts in `disk_openers()`, and zram refuses `reset` and `hot_remove` (`-EBUSY`,
//! zram_drv.c `reset_store()`, `zram_remove()`) while one is open; held between rounds it
//! would block the administrator's reset for as long as the exporter runs.
//!
//! A slot that reads all zeros is a slot never written (or freed) or a zero page; a slot that
//! is same-filled is a same-filled page. Both belong to the stratum mm_stat counts exactly
//! (`same_pages`; unwritten slots are not stored), so they take no place in the sample. Every
//! other slot holds a stored page, and the panel's are a uniform sample of them.

use std::fs::File;

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Instant;
use zeroize::Zeroize;

use zmem_comp::Compressor;
use zmem_pool::zsmalloc::class::ClassTable;

use super::estimate;
use super::panel::Permutation;

/// One candidate codec and what it cost on this device's pages.
pub struct Codec {
    pub name: String,
    comp: Box<dyn Compressor>,
    /// Thread CPU ns over pages, compressing and decompressing.
    pub compress_ns: f64,
    pub decompress_ns: f64,
    pub timed_pages: u64,
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codec").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Codec {
    pub fn new(name: &str, page_size: usize) -> Option<Self> {
        let comp = zmem_comp::create(name, &zmem_comp::Params::default(), page_size).ok()?;
        Some(Self {
            name: name.to_string(),
            comp,
            compress_ns: 0.0,
            decompress_ns: 0.0,
            timed_pages: 0,
        })
    }

    /// Compresses `page` into `out` and back into `back`, timing both on the thread's CPU
    /// clock; the compressed length, or `None` when the codec cannot compress it.
    pub fn measure(&mut self, page: &[u8], out: &mut [u8], back: &mut [u8]) -> Option<usize> {
        let t0 = thread_cpu_ns();
        let len = self.comp.compress(page, out).ok()?;
        let t1 = thread_cpu_ns();
        let _ = self.comp.decompress(&out[..len], back);
        let t2 = thread_cpu_ns();
        self.compress_ns += t1.saturating_sub(t0) as f64;
        self.decompress_ns += t2.saturating_sub(t1) as f64;
        self.timed_pages += 1;
        Some(len)
    }

    /// Mean thread CPU ns per page: (compress, decompress).
    pub fn per_page_ns(&self) -> (f64, f64) {
        let n = self.timed_pages.max(1) as f64;
        (self.compress_ns / n, self.decompress_ns / n)
    }
}

/// What a panel slot held when last read.
#[derive(Debug, Clone, PartialEq)]
pub enum Held {
    /// Not read yet.
    Unread,
    /// Zeros or a same-filled page: the exactly counted stratum, or no page.
    Same,
    /// A stored page: its stored length for each codec, in the codecs' order.
    Page(Box<[u32]>),
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub slot: u64,
    pub read_at: Option<Instant>,
    pub held: Held,
}

/// The sampler's state for one device.
#[derive(Debug)]
pub struct Device {
    pub id: u32,
    pub name: String,
    /// The block device read (`/dev/zramN` under the advisor's root).
    pub dev_path: std::path::PathBuf,
    /// disksize when the state was made: another disksize is another device (reset).
    pub disksize: u64,
    pub algorithm: String,
    pub codecs: Vec<Codec>,
    pub perm: Permutation,
    pub panel: Vec<Entry>,
    /// Next panel position to read.
    pub cursor: usize,
    /// When the current pass over the panel began, and whether one pass has completed.
    pub pass_started: Instant,
    pub filled: bool,
    /// Slots read (the device's read I/Os that are ours).
    pub slots_read: u64,
    pub read_failures: u64,
    pub last_error: Option<String>,
    /// The last round of reads succeeded (true before the first).
    pub readable: bool,
    /// The idle share caps the panel.
    pub idle_capped: bool,
    /// After a failed round: not read again before this.
    pub retry_at: Option<Instant>,
    page_size: usize,
    buf: Vec<u8>,
    out: Vec<u8>,
    back: Vec<u8>,
}

/// Whether every 8-byte word of `page` equals the first (zram's `page_same_filled()`).
fn same_filled(page: &[u8]) -> bool {
    zmem_zram::same_filled(page).is_some()
}

/// The whole process's CPU time in ns (0 where the system refuses).
pub fn process_cpu_ns() -> u64 {
    zmem_sim::cputime::process_cpu_ns().unwrap_or(0)
}

/// Thread CPU time in ns (0 where the system refuses).
pub fn thread_cpu_ns() -> u64 {
    zmem_sim::cputime::thread_cpu_ns().unwrap_or(0)
}

impl Device {
    pub fn new(
        id: u32,
        disksize: u64,
        algorithm: String,
        candidates: &[String],
        page_size: usize,
        seed: u64,
    ) -> Self {
        let codecs = candidates.iter().filter_map(|c| Codec::new(c, page_size)).collect();
        let slots = disksize / page_size as u64;
        Self {
            id,
            name: format!("zram{id}"),
            dev_path: std::path::PathBuf::from(format!("/dev/zram{id}")),
            disksize,
            algorithm,
            codecs,
            perm: Permutation::new(slots, seed ^ u64::from(id)),
            panel: Vec::new(),
            cursor: 0,
            pass_started: Instant::now(),
            filled: false,
            slots_read: 0,
            read_failures: 0,
            last_error: None,
            readable: true,
            idle_capped: false,
            retry_at: None,
            page_size,
            buf: vec![0u8; 2 * page_size],
            out: vec![0u8; zmem_comp::compress_bound(page_size).max(page_size)],
            back: vec![0u8; page_size],
        }
    }

    /// Sets the panel's size to `p` slots (at most the device's): grows by the permutation's
    /// next slots, shrinks by dropping its last ones, so the panel stays a prefix of it.
    pub fn resize_panel(&mut self, p: u64) {
        let p = p.min(self.perm.len()) as usize;
        if p < self.panel.len() {
            self.panel.truncate(p);
            if self.cursor >= p {
                self.cursor = 0;
            }
        }
        while self.panel.len() < p {
            let slot = self.perm.at(self.panel.len() as u64);
            self.panel.push(Entry { slot, read_at: None, held: Held::Unread });
        }
    }

    /// Reads up to `k` panel slots from the cursor on, opening the device once for them, and
    /// stores what each held. Returns the slots read; an error (the device was reset or removed
    /// meanwhile, or cannot be opened) is counted and kept as the last error.
    pub fn read_round(&mut self, k: usize, classes: &ClassTable) -> usize {
        let read = self.read_slots(k, classes);
        // The last page read and its compressed forms stay in no buffer between rounds.
        for b in [&mut self.buf, &mut self.out, &mut self.back] {
            b.as_mut_slice().zeroize();
        }
        read
    }

    /// [`Self::read_round`]'s reads.
    fn read_slots(&mut self, k: usize, classes: &ClassTable) -> usize {
        if self.panel.is_empty() {
            return 0;
        }
        if let Err(e) = zmem_pages::private::hold_captured_memory() {
            self.fail(format!("prctl(PR_SET_DUMPABLE): {e}"));
            return 0;
        }
        let path = self.dev_path.display().to_string();
        let file = match File::options().read(true).custom_flags(libc::O_DIRECT).open(&path) {
            Ok(f) => f,
            Err(e) => {
                self.fail(format!("{path}: {e}"));
                return 0;
            }
        };
        let ps = self.page_size;
        let mut read = 0;
        for _ in 0..k {
            if self.cursor >= self.panel.len() {
                break;
            }
            let slot = self.panel[self.cursor].slot;
            let skip = self.buf.as_ptr().align_offset(ps);
            let got = {
                let page = &mut self.buf[skip..skip + ps];
                read_exact_at(&file, page, slot * ps as u64)
            };
            if let Err(e) = got {
                self.fail(format!("{path} slot {slot}: {e}"));
                return read;
            }
            self.slots_read += 1;
            read += 1;
            let held = self.judge_page(skip, classes);
            let e = &mut self.panel[self.cursor];
            e.held = held;
            e.read_at = Some(Instant::now());
            self.cursor += 1;
        }
        self.readable = true;
        read
    }

    fn fail(&mut self, why: String) {
        self.readable = false;
        self.read_failures += 1;
        self.last_error = Some(why);
    }

    /// What the page at `buf[skip..]` is for the sample: compressed with every codec, timed.
    fn judge_page(&mut self, skip: usize, classes: &ClassTable) -> Held {
        let ps = self.page_size;
        let page = &self.buf[skip..skip + ps];
        if same_filled(page) {
            return Held::Same;
        }
        let mut lens = Vec::with_capacity(self.codecs.len());
        for c in &mut self.codecs {
            // A codec that cannot compress the page stores it whole, as zram would.
            let len = c.measure(page, &mut self.out, &mut self.back).unwrap_or(ps);
            lens.push(estimate::stored_len(classes, ps, len) as u32);
        }
        Held::Page(lens.into_boxed_slice())
    }

    /// The sample: every read panel slot that held a page, with its codecs' stored lengths.
    pub fn pages(&self) -> impl Iterator<Item = &[u32]> {
        self.panel.iter().filter_map(|e| match &e.held {
            Held::Page(l) => Some(&l[..]),
            _ => None,
        })
    }

    /// The oldest read among the panel's read slots.
    pub fn oldest_read(&self) -> Option<Instant> {
        self.panel.iter().filter_map(|e| e.read_at).min()
    }
}

/// `pread` of the whole buffer at `pos`; a device that ends first (reset to disksize 0) is an
/// error, not a short page.
fn read_exact_at(file: &File, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], pos + got as u64) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the device ended (reset or resized)",
                ));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
