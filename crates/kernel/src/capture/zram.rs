//! Capture of a zram device's contents (`zmem capture --zram /dev/zramN`): the pages it stores,
//! each with its slot index, and the device's state as set metadata.
//!
//! The device is read from start to end with `O_DIRECT`, 1 MiB at a time into a page-aligned
//! buffer. A buffered read would not do: swap I/O bypasses the block device's page cache, so a
//! buffered read returns whatever that cache held from an earlier read (zeros where data has been
//! written since).
//!
//! Which slots are kept: page 0, always (on a swap device it is the swap header, itself a page
//! that zram stores: `mkswap` wrote it), every slot whose page is not all zeros, and as many
//! all-zero slots as were written. An all-zero page read back is either a slot never written
//! (or freed) or a zero page zram stores as a same-filled page; the read cannot tell which, but
//! `same_pages` in `mm_stat` counts the second kind together with the same-filled pages of a
//! non-zero pattern, which the read does see. So the written zero pages are `same_pages` (read
//! before the scan) less the non-zero same-filled pages read (and less page 0, kept anyway, if
//! it is zero). On a swap device they come from large folios: 6.18's swap layer keeps a folio
//! out of the device only when the whole folio is zero (mm/page_io.c `swap_writeout()` ->
//! `is_folio_zero_filled()`), so a THP with some zero subpages reaches zram whole and zram's
//! own check (`zram_write_page()` -> `page_same_filled()`) stores each zero subpage as a
//! same-filled page (measured on 6.18.44: a 2 MiB THP of 256 zero and 256 random pages paged
//! out gave `same_pages` +256 and `swpout_zero` +0). Which all-zero slots they are cannot be
//! read from user space (without `CONFIG_ZRAM_MEMORY_TRACKING`'s `block_state`): the capture
//! takes the first ones in slot order and visits them after the others, once their number is
//! known. The kept pages, written to a fresh device with the same algorithm, give the live
//! device's `orig_data_size`, `compr_data_size`, `same_pages` and `huge_pages` exactly (while
//! nothing swaps meanwhile: freeze the programs using it first).
//!
//! Every kept page carries [`MappingKind::ZramSlot`] metadata: `vaddr` = slot index, `pid` 0,
//! `comm` the device name. The set metadata (keys below) records the device's state before the
//! read and `mm_stat` after it, so a reader can tell whether the device changed meanwhile:
//!
//! | key | value |
//! |---|---|
//! | `source` | `zram` |
//! | `zram.device`, `zram.path` | `zram1`, the path given |
//! | `zram.comp_algorithm` | the whole `comp_algorithm` line (`lzo [lzo-rle] lz4`) |
//! | `zram.algorithm` | the selected one (`lzo-rle`) |
//! | `zram.recomp_algorithm`, `zram.algorithm_params` | those attributes, where readable |
//! | `zram.mm_stat`, `zram.io_stat`, `zram.bd_stat`, `zram.stat` | the lines, before the read (`bd_stat` where present) |
//! | `zram.mm_stat.after` | `mm_stat` after the read |
//! | `zram.disksize` | bytes |
//! | `zram.mem_limit` | bytes (the attribute where readable, else `mm_stat`'s fourth field) |
//! | `swap.priority`, `swap.size_kib`, `swap.used_kib` | from /proc/swaps, when the device is active swap |
//! | `kernel.release` | `uname -r` |
//! | `capture.time`, `capture.unix_time` | RFC 3339 UTC, seconds since the epoch |
//! | `capture.page_size`, `capture.slots`, `capture.pages`, `capture.zero_slots` | page size, slots read, pages kept, all-zero slots dropped (never written) |
//! | `capture.zero_pages` | all-zero slots kept as written zero pages (`same_pages` less the non-zero same-filled pages read) |
//! | `capture.zmem_version` | the zmem version that captured |
//! | `capture.sampled` | pages held, when [`capture_device_sampled`] kept a random sample of the `capture.pages` |

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::KernelError;
use crate::stat as live;
use zmem_pages::PageSet;
use zmem_pages::PageSetBuilder;
use zmem_pages::prng::SplitMix64;
use zmem_pages::{MappingKind, PageMeta, SetMeta};

/// Bytes read per `pread`.
const CHUNK: usize = 1 << 20;

/// What [`capture_device`] found besides the pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZramSummary {
    /// `zram1`.
    pub device: String,
    /// Slots read (disksize / page size).
    pub slots: u64,
    /// Pages kept (page 0, every slot that is not all zeros, and the written zero pages).
    pub pages: u64,
    /// All-zero slots dropped: never written, or freed.
    pub zero_slots: u64,
    /// All-zero slots kept as written zero pages (stored by zram as same-filled pages).
    pub zero_pages: u64,
    /// `mm_stat` before and after the read; they differ when the device changed meanwhile.
    pub mm_stat_before: String,
    pub mm_stat_after: String,
    /// The device's write counters (`stat`: write I/Os, write sectors, discard I/Os) before and
    /// after the read, where readable. A page swapped out while another was freed can leave
    /// `mm_stat` as it was; these still move.
    pub writes_before: Option<[u64; 3]>,
    pub writes_after: Option<[u64; 3]>,
}

impl ZramSummary {
    /// Whether the device held still during the read: `mm_stat` and the write counters the
    /// same before and after it (our own reads move only the read counters).
    pub fn stable(&self) -> bool {
        self.mm_stat_before == self.mm_stat_after && self.writes_before == self.writes_after
    }
}

/// Device `id`'s write counters from `/sys/block/zramN/stat`: write I/Os, write sectors,
/// discard I/Os (a freed swap slot reaches zram as `slot_free_notify`, which mm_stat shows).
fn write_counters(id: u32) -> Option<[u64; 3]> {
    live::zram_block_stat(id).ok().map(|b| [b.write_ios, b.write_sectors, b.discard_ios])
}

/// Up to `capacity` pages chosen uniformly at random from a stream of pages of unknown length
/// (reservoir sampling, Vitter's algorithm R), each with its slot, in bounded memory:
/// `capacity` pages whatever the stream's length. Seeded, so a capture is repeatable.
#[derive(Debug, Clone)]
pub struct Reservoir {
    page_size: usize,
    capacity: usize,
    seen: u64,
    slots: Vec<u64>,
    bytes: Vec<u8>,
    rng: SplitMix64,
}

impl Reservoir {
    pub fn new(capacity: usize, page_size: usize, seed: u64) -> Self {
        Self {
            page_size,
            capacity,
            seen: 0,
            slots: Vec::new(),
            bytes: Vec::new(),
            rng: SplitMix64::new(seed),
        }
    }

    /// Offers the next page of the stream.
    pub fn offer(&mut self, slot: u64, page: &[u8]) {
        let ps = self.page_size;
        self.seen += 1;
        if self.slots.len() < self.capacity {
            self.slots.push(slot);
            self.bytes.extend_from_slice(page);
            return;
        }
        let j = self.rng.below(self.seen) as usize;
        if j < self.capacity {
            self.slots[j] = slot;
            self.bytes[j * ps..(j + 1) * ps].copy_from_slice(page);
        }
    }

    /// Pages offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Pages held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Keeps `k` of the pages held, uniformly (a uniform subset of a uniform sample is one).
    pub fn shrink_to(&mut self, k: usize) {
        let ps = self.page_size;
        while self.slots.len() > k {
            let j = self.rng.below(self.slots.len() as u64) as usize;
            let last = self.slots.len() - 1;
            self.slots.swap(j, last);
            self.slots.pop();
            if j != last {
                self.bytes.copy_within(last * ps..(last + 1) * ps, j * ps);
            }
            self.bytes.truncate(last * ps);
        }
    }

    /// The pages held with their slots, in slot order.
    pub fn into_sorted(self) -> Vec<(u64, Vec<u8>)> {
        let ps = self.page_size;
        let mut v: Vec<(u64, Vec<u8>)> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, self.bytes[i * ps..(i + 1) * ps].to_vec()))
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }
}

impl std::fmt::Display for ZramSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "captured {} pages from {} ({} slots, {} of them written zero pages, {} all-zero \
             slots never written dropped){}",
            self.pages,
            self.device,
            self.slots,
            self.zero_pages,
            self.zero_slots,
            if self.stable() { "" } else { "; mm_stat changed during the read" }
        )
    }
}

/// Reads zram device `path` (`/dev/zramN`) into a page set with slot metadata and set
/// metadata (see the module documentation). `progress(done, total)` is called in bytes after
/// every chunk. Holds every kept page: [`capture_device_sampled`] holds at most a given number.
///
/// Fails for a path that is not a zram device, a device that is not initialised (disksize 0),
/// and a device that cannot be read (not root).
pub fn capture_device(
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(PageSet, ZramSummary), KernelError> {
    let page_size = super::system_page_size();
    let mut builder = PageSetBuilder::new(page_size, true)?;
    let mut comm: Option<Arc<str>> = None;
    let (set_meta, summary) = capture_device_with(
        path,
        &mut |device, slot, page| {
            let comm = comm.get_or_insert_with(|| Arc::from(device)).clone();
            let meta = PageMeta { pid: 0, comm, vaddr: slot, kind: MappingKind::ZramSlot };
            Ok(builder.push(page, Some(meta))?)
        },
        progress,
    )?;
    let set = builder.finish().with_set_meta(set_meta)?;
    Ok((set, summary))
}

/// [`capture_device`] until the device held still across a read ([`ZramSummary::stable`]: other
/// processes may swap into it meanwhile; the boot kdamond pages cold memory out into any swap),
/// `attempts` reads at most, each after `pause`; the last read when none held still, with the
/// number of reads made.
pub fn capture_device_still(
    path: &Path,
    attempts: u32,
    pause: std::time::Duration,
) -> Result<(PageSet, ZramSummary, u32), KernelError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        std::thread::sleep(pause);
        let (set, summary) = capture_device(path, &mut |_, _| {})?;
        if summary.stable() || attempt >= attempts.max(1) {
            return Ok((set, summary, attempt));
        }
    }
}

/// [`capture_device`] keeping at most `max_pages` of the kept pages, chosen uniformly at random
/// as the device is read ([`Reservoir`], seed `seed`), so the memory it holds is
/// `max_pages` pages whatever the device's size; the set metadata then also has
/// `capture.sampled` (pages held) of `capture.pages` (pages kept on the device).
pub fn capture_device_sampled(
    path: &Path,
    max_pages: usize,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(PageSet, ZramSummary), KernelError> {
    let page_size = super::system_page_size();
    let mut r = Reservoir::new(max_pages, page_size, seed);
    let mut name = String::new();
    let (mut set_meta, summary) = capture_device_with(
        path,
        &mut |device, slot, page| {
            if name.is_empty() {
                name = device.to_string();
            }
            r.offer(slot, page);
            Ok(())
        },
        progress,
    )?;
    set_meta.insert("capture.sampled".into(), r.len().to_string());
    let comm: Arc<str> = Arc::from(name.as_str());
    let mut builder = PageSetBuilder::new(page_size, true)?;
    for (slot, page) in r.into_sorted() {
        let meta =
            PageMeta { pid: 0, comm: comm.clone(), vaddr: slot, kind: MappingKind::ZramSlot };
        builder.push(&page, Some(meta))?;
    }
    Ok((builder.finish().with_set_meta(set_meta)?, summary))
}

/// What [`capture_device_with`] calls for every kept page: `(device, slot, page)`.
pub type PageVisitor<'a> = dyn FnMut(&str, u64, &[u8]) -> Result<(), KernelError> + 'a;

/// Reads zram device `path` page by page: `visit(device, slot, page)` is called for every kept
/// page (page 0 and every slot that is not all zeros) in slot order, then for the written zero
/// pages (see the module documentation) in slot order; nothing else is held but a 1 MiB read
/// buffer and the slot numbers of at most `same_pages` all-zero slots. Returns the set metadata (the module documentation's keys) and the
/// summary.
pub fn capture_device_with(
    path: &Path,
    visit: &mut PageVisitor<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(SetMeta, ZramSummary), KernelError> {
    let id = live::zram_id_of(path)?;
    zmem_pages::private::hold_captured_memory()
        .map_err(|e| KernelError::io("prctl(PR_SET_DUMPABLE)", e))?;
    let device = format!("zram{id}");
    let attr = |name: &str| live::read_zram_attr(id, name);
    let disksize: u64 = attr("disksize")?
        .trim()
        .parse()
        .map_err(|_| KernelError::Invalid(format!("{device}: unreadable disksize")))?;
    if disksize == 0 {
        return Err(KernelError::Invalid(format!(
            "{} ({device}) is not initialised (disksize 0): nothing to capture",
            path.display()
        )));
    }
    let page_size = super::system_page_size();
    let comp_algorithm = attr("comp_algorithm")?;
    let writes_before = write_counters(id);
    let mm_stat_before = attr("mm_stat")?;

    let mut set_meta = SetMeta::new();
    let mut put = |k: &str, v: String| {
        set_meta.insert(k.to_string(), v);
    };
    put("source", "zram".into());
    put("zram.device", device.clone());
    put("zram.path", path.display().to_string());
    if let Some(sel) = live::selected_algorithm(&comp_algorithm) {
        put("zram.algorithm", sel);
    }
    put("zram.comp_algorithm", comp_algorithm);
    for name in ["recomp_algorithm", "algorithm_params", "io_stat", "bd_stat", "stat"] {
        if let Ok(v) = attr(name) {
            put(&format!("zram.{name}"), v);
        }
    }
    put("zram.disksize", disksize.to_string());
    let mm_before = crate::parse::parse_mm_stat(&mm_stat_before).ok();
    let mem_limit = attr("mem_limit")
        .ok()
        .map(|v| v.trim().to_string())
        .or_else(|| mm_before.map(|m| m.mem_limit.to_string()));
    if let Some(limit) = mem_limit {
        put("zram.mem_limit", limit);
    }
    put("zram.mm_stat", mm_stat_before.clone());
    if let Ok(swaps) = live::swaps()
        && let Some(area) = swaps.iter().find(|a| a.zram_id() == Some(id))
    {
        put("swap.priority", area.priority.to_string());
        put("swap.size_kib", (area.size_bytes / 1024).to_string());
        put("swap.used_kib", (area.used_bytes / 1024).to_string());
    }
    if let Ok(release) = live::kernel_release() {
        put("kernel.release", release);
    }
    // What this host's kernel offers (a fleet report says it per host; the lab judges the
    // candidates for this capture against it).
    for (k, v) in crate::caps::set_meta(&crate::caps::read(), &crate::caps::host_name()) {
        put(&k, v);
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    put("capture.time", live::rfc3339_utc(now));
    put("capture.unix_time", now.to_string());
    put("capture.page_size", page_size.to_string());
    put("capture.zmem_version", env!("CARGO_PKG_VERSION").to_string());

    let file = File::options()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| KernelError::io(path, e))?;
    // A page-aligned window into a slightly larger buffer: O_DIRECT needs the alignment.
    // Cleared when dropped: it held the device's pages.
    let mut backing = zeroize::Zeroizing::new(vec![0u8; CHUNK + page_size]);
    let skip = backing.as_ptr().align_offset(page_size);
    let buf = &mut backing[skip..skip + CHUNK];
    let slots = disksize / page_size as u64;
    let total = slots * page_size as u64;
    // Candidates for the written zero pages: at most `same_pages` of them can be.
    let same_before = mm_before.map_or(0, |m| m.same_pages);
    let mut zero_candidates: Vec<u64> = Vec::new();
    let mut same_seen = 0u64;
    let mut zero_slots = 0u64;
    let mut kept = 0u64;
    let mut pos = 0u64;
    while pos < total {
        let want = (total - pos).min(CHUNK as u64) as usize;
        let chunk = &mut buf[..want];
        let mut got = 0;
        while got < want {
            match file.read_at(&mut chunk[got..], pos + got as u64) {
                Ok(0) => {
                    return Err(KernelError::Invalid(format!(
                        "{}: device ended at byte {} before its disksize {disksize}",
                        path.display(),
                        pos + got as u64
                    )));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(KernelError::io(path, e)),
            }
        }
        for (i, page) in chunk.chunks_exact(page_size).enumerate() {
            let slot = pos / page_size as u64 + i as u64;
            let zero = is_zero(page);
            if slot != 0 && zero {
                zero_slots += 1;
                if (zero_candidates.len() as u64) < same_before {
                    zero_candidates.push(slot);
                }
                continue;
            }
            if is_same_filled(page) {
                same_seen += 1;
            }
            visit(&device, slot, page)?;
            kept += 1;
        }
        pos += want as u64;
        progress(pos, total);
    }
    let written_zero = same_before.saturating_sub(same_seen).min(zero_candidates.len() as u64);
    let zero_page = vec![0u8; page_size];
    for &slot in &zero_candidates[..written_zero as usize] {
        visit(&device, slot, &zero_page)?;
        kept += 1;
    }
    zero_slots -= written_zero;
    let mm_stat_after = attr("mm_stat")?;
    let writes_after = write_counters(id);
    set_meta.insert("zram.mm_stat.after".into(), mm_stat_after.clone());
    set_meta.insert("capture.slots".into(), slots.to_string());
    set_meta.insert("capture.pages".into(), kept.to_string());
    set_meta.insert("capture.zero_slots".into(), zero_slots.to_string());
    set_meta.insert("capture.zero_pages".into(), written_zero.to_string());
    let summary = ZramSummary {
        device,
        slots,
        pages: kept,
        zero_slots,
        zero_pages: written_zero,
        mm_stat_before,
        mm_stat_after,
        writes_before,
        writes_after,
    };
    Ok((set_meta, summary))
}

/// Whether every byte of `page` is zero (64 bytes at a time, so it vectorises).
fn is_zero(page: &[u8]) -> bool {
    let mut chunks = page.chunks_exact(64);
    chunks.all(|c| c.iter().fold(0u8, |a, &b| a | b) == 0)
        && chunks.remainder().iter().all(|&b| b == 0)
}

/// zram's `page_same_filled()`: every 8-byte word equals the first (a zero page included).
fn is_same_filled(page: &[u8]) -> bool {
    let mut words = page.chunks_exact(8);
    let Some(first) = words.next() else {
        return false;
    };
    words.remainder().is_empty() && words.all(|w| w == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_filled_pages_are_recognised_as_zram_does() {
        let mut p = vec![0u8; 4096];
        assert!(is_same_filled(&p));
        for w in p.chunks_exact_mut(8) {
            w.copy_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
        }
        assert!(is_same_filled(&p));
        p[4095] ^= 1;
        assert!(!is_same_filled(&p));
        // A byte pattern repeating every 4 bytes is one 8-byte word repeated: same-filled.
        let q: Vec<u8> = (0..4096).map(|i| (i % 4) as u8).collect();
        assert!(is_same_filled(&q));
        let r: Vec<u8> = (0..4096).map(|i| (i % 3) as u8).collect();
        assert!(!is_same_filled(&r));
    }

    #[test]
    fn zero_pages_are_recognised() {
        let mut p = vec![0u8; 4096];
        assert!(is_zero(&p));
        p[4095] = 1;
        assert!(!is_zero(&p));
        p[4095] = 0;
        p[0] = 0x80;
        assert!(!is_zero(&p));
        assert!(!is_zero(&[0, 0, 1]));
    }

    /// Every page of a stream shorter than the reservoir is held; of a longer one, exactly
    /// `capacity`, each page about equally often over many seeds, and in slot order.
    #[test]
    fn the_reservoir_holds_a_uniform_bounded_sample() {
        let page = |i: u64| vec![i as u8; 16];
        let mut r = Reservoir::new(8, 16, 1);
        (0..5).for_each(|i| r.offer(i, &page(i)));
        let all = r.into_sorted();
        assert_eq!(all.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        let mut hits = [0u32; 100];
        for seed in 0..2000 {
            let mut r = Reservoir::new(10, 16, seed);
            (0..100).for_each(|i| r.offer(i, &page(i)));
            assert_eq!((r.len(), r.seen()), (10, 100));
            let v = r.into_sorted();
            assert!(v.windows(2).all(|w| w[0].0 < w[1].0));
            for (slot, p) in v {
                assert_eq!(p, page(slot), "a page stays with its slot");
                hits[slot as usize] += 1;
            }
        }
        // 2000 draws of 10 of 100: each page 200 times on average, sd ~13.4.
        assert!(hits.iter().all(|&h| (140..=260).contains(&h)), "{hits:?}");
        let mut r = Reservoir::new(10, 16, 3);
        (0..100).for_each(|i| r.offer(i, &page(i)));
        r.shrink_to(4);
        let v = r.into_sorted();
        assert_eq!(v.len(), 4);
        assert!(v.iter().all(|(s, p)| *p == page(*s)));
    }

    #[test]
    fn a_path_that_is_not_zram_is_refused() {
        let e = capture_device(Path::new("/proc/self/status"), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("not a block device"), "{e}");
    }
}
