//! The player: the child process of `zmem validate replay` that performs a trace's accesses in
//! real memory, inside the memory cgroup, so that the kernel's reclaim sees what the replay sees.
//!
//! The parent streams the work over the player's stdin (a pipe): a header, then one record per
//! access. A page's first access carries the page's bytes, which the player copies into its
//! region (the page's first fault, as the replay's first touch); later accesses carry nothing: a
//! read loads a word of the page, a write loads it and stores it back (the page is dirtied, its
//! content stays the page set's, so the replay's pages and the kernel's are the same bytes).
//! Streaming keeps the player's own memory small and free of the page set: the pipe's buffers are
//! charged to the writer (the parent, outside the cgroup), and nothing is read from a file (whose
//! page cache would be charged to the cgroup and reclaimed before anonymous pages).
//!
//! ```text
//! header  8 bytes magic "ZMPLAY02", u32 page size, u64 region pages, u64 record count,
//!         u64 file pages, then where file pages > 0: u16 length, the file's path (UTF-8)
//! record  u32 page id, u8 flags (bit 0: write, bit 1: first touch: page_size bytes follow,
//!         bit 2: a read of the file's page, not the region's)
//! ```
//! Integers little-endian. The player answers on stdout: `ready` once its region (and file) is
//! mapped, `swapins C P50 P99 F` (see below), `files R M` (file reads, and those whose page
//! `mincore` said was not in the page cache: major faults), then `done N R` after the N-th and
//! last record (R: pages of its region in RAM then), then waits until stdin is closed and exits.
//!
//! Page cache: the file (made by the parent, out of the page cache when the player starts) is
//! mapped shared and read-only with `MADV_RANDOM`, so each fault reads only its own page (6.18
//! mm/filemap.c `do_sync_mmap_readahead()` returns at once for `VM_RAND_READ`; `POSIX_FADV_RANDOM`
//! would not stop the mapping's read-around) and the page is charged to the player's cgroup
//! (`filemap_add_folio()`). `VM_RAND_READ` also takes the mapping's recency away
//! (include/linux/mm_inline.h `vma_has_recency()`): reclaim ignores its accessed bits, so the
//! file's pages are reclaimed at their first scan unless a refault activated them. The
//! replay is told so (`ReplayConfig::file_recency`); measured before it was, the kernel
//! reclaimed all 40,237 file pages it scanned, activating and keeping none (perf,
//! `mm_vmscan_lru_shrink_inactive`), and the replay, reading the accessed bits, swapped 13 %
//! more. Mapped, because the boot's DAMON
//! pageout scheme (where one runs) allows only unmapped file pages (its last filter allows
//! `unmapped`, so a mapped folio takes the opposite: mm/damon/paddr.c `damos_pa_filter_out()`,
//! `ops_filters_default_reject`): the page cache is then reclaimed by the cgroup's reclaim alone,
//! as the replay models it.
//!
//! Swap-in latency: before each access to a page it touched before, the player asks `mincore(2)`
//! whether the page is in RAM (a page in the swap cache counts as in RAM: it faults without a
//! read). One that is not is swapped in by the access, which is timed end to end (the fault, the
//! device's read and decompression, the mapping): `swapins` gives their count and the p50 and
//! p99 in nanoseconds (nearest rank; 0 0 0 when none). The `mincore` call is made whether or not
//! the page is out, so it costs every run the same. `F` is the thread CPU time, in nanoseconds,
//! of every access that faults: the swap-ins and the first touches (the copy of the page's bytes
//! into the region, read from the pipe beforehand), with any reclaim their charge does: a memory
//! cgroup at its limit reclaims in the faulting task, zram's compression included.

use std::io::{BufRead, Read, Write};

use zmem_kernel::KernelError;
use zmem_pages::access::Access;

/// The stream's first eight bytes.
pub const MAGIC: [u8; 8] = *b"ZMPLAY02";
/// What the player prints once its region is mapped.
pub const READY: &str = "ready";
/// What the player prints after the last access (followed by the access count and the pages of
/// its region resident).
pub const DONE: &str = "done";

const WRITE: u8 = 1;
const FIRST_TOUCH: u8 = 2;
const FILE: u8 = 4;
const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 8;
/// The line that gives the file reads and their major faults.
pub const FILES: &str = "files";
const RECORD_LEN: usize = 5;

fn bad(what: impl std::fmt::Display) -> KernelError {
    KernelError::Setup(format!("player stream: {what}"))
}

/// The stream's header: page size, region pages, record count, and the file the records read
/// (its pages and path; none: 0 pages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub page_size: usize,
    pub pages: u64,
    pub records: u64,
    pub file_pages: u64,
    pub file: Option<std::path::PathBuf>,
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&(self.page_size as u32).to_le_bytes());
        h[12..20].copy_from_slice(&self.pages.to_le_bytes());
        h[20..28].copy_from_slice(&self.records.to_le_bytes());
        h[28..36].copy_from_slice(&self.file_pages.to_le_bytes());
        if self.file_pages > 0 {
            let path = self.file.as_deref().map(|p| p.to_string_lossy().into_owned());
            let path = path.unwrap_or_default();
            h.extend_from_slice(&(path.len() as u16).to_le_bytes());
            h.extend_from_slice(path.as_bytes());
        }
        h
    }

    /// Reads and checks a header.
    pub fn read(r: &mut impl Read) -> Result<Self, KernelError> {
        let mut h = [0u8; HEADER_LEN];
        r.read_exact(&mut h).map_err(|e| bad(format!("header: {e}")))?;
        if h[..8] != MAGIC {
            return Err(bad("bad magic"));
        }
        let page_size = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes")) as usize;
        if !page_size.is_power_of_two() || page_size < 512 {
            return Err(bad(format!("page size {page_size}")));
        }
        let pages = u64::from_le_bytes(h[12..20].try_into().expect("8 bytes"));
        let records = u64::from_le_bytes(h[20..28].try_into().expect("8 bytes"));
        let file_pages = u64::from_le_bytes(h[28..36].try_into().expect("8 bytes"));
        let mut file = None;
        if file_pages > 0 {
            let mut len = [0u8; 2];
            r.read_exact(&mut len).map_err(|e| bad(format!("file path: {e}")))?;
            let mut path = vec![0u8; u16::from_le_bytes(len).into()];
            r.read_exact(&mut path).map_err(|e| bad(format!("file path: {e}")))?;
            let path = String::from_utf8(path).map_err(|_| bad("file path is not UTF-8"))?;
            file = Some(std::path::PathBuf::from(path));
        }
        Ok(Self { page_size, pages, records, file_pages, file })
    }
}

/// Writes the records of `trace` over `pages` (whole pages of `page_size`) after their header:
/// the first access of each page carries its bytes. The caller checked every id is in range.
pub fn write_stream(
    out: &mut impl Write,
    pages: &[u8],
    page_size: usize,
    trace: &[Access],
) -> std::io::Result<()> {
    let n = pages.len() / page_size;
    let header = Header {
        page_size,
        pages: n as u64,
        records: trace.len() as u64,
        file_pages: 0,
        file: None,
    };
    out.write_all(&header.encode())?;
    write_stream_records(out, pages, page_size, trace)
}

/// The records of [`write_stream`] without the header.
pub fn write_stream_records(
    out: &mut impl Write,
    pages: &[u8],
    page_size: usize,
    trace: &[Access],
) -> std::io::Result<()> {
    let mut touched = vec![false; pages.len() / page_size];
    for a in trace {
        if a.file {
            let mut rec = [0u8; RECORD_LEN];
            rec[..4].copy_from_slice(&(a.page as u32).to_le_bytes());
            rec[4] = FILE;
            out.write_all(&rec)?;
            continue;
        }
        let i = a.page as usize;
        let first = !std::mem::replace(&mut touched[i], true);
        let flags = (if a.write { WRITE } else { 0 }) | (if first { FIRST_TOUCH } else { 0 });
        let mut rec = [0u8; RECORD_LEN];
        rec[..4].copy_from_slice(&(a.page as u32).to_le_bytes());
        rec[4] = flags;
        out.write_all(&rec)?;
        if first {
            out.write_all(&pages[i * page_size..(i + 1) * page_size])?;
        }
    }
    out.flush()
}

/// The line that gives the timed swap-ins (count, p50 ns, p99 ns).
pub const SWAPINS: &str = "swapins";

/// What [`play`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Played {
    pub accesses: u64,
    pub first_touches: u64,
    pub reads: u64,
    pub writes: u64,
    /// Nanoseconds of each access that found its page out of RAM (swapped in), in order.
    pub swap_in_ns: Vec<u64>,
    /// Thread CPU nanoseconds of the accesses that fault: first touches (the copy of the page's
    /// bytes into the region, its fault and any reclaim the charge does), swap-ins and file
    /// faults.
    pub fault_cpu_ns: u64,
    /// Reads of file pages, and those whose page was not in the page cache (major faults).
    pub file_reads: u64,
    pub file_faults: u64,
}

/// This thread's CPU time in nanoseconds (0 where the system refuses).
fn thread_cpu_ns() -> u64 {
    zmem_sim::cputime::thread_cpu_ns().unwrap_or(0)
}

/// The `p`-th percentile (0..=100) of `v` by nearest rank; 0 for none.
pub fn percentile(v: &[u64], p: f64) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

impl Played {
    /// The `swapins C P50 P99 FAULT_CPU_NS` line.
    pub fn swapins_line(&self) -> String {
        let v = &self.swap_in_ns;
        let (p50, p99) = (percentile(v, 50.0), percentile(v, 99.0));
        format!("{SWAPINS} {} {p50} {p99} {}", v.len(), self.fault_cpu_ns)
    }

    /// The `files READS FAULTS` line.
    pub fn files_line(&self) -> String {
        format!("{FILES} {} {}", self.file_reads, self.file_faults)
    }
}

/// Whether the page at `addr` (page-aligned) is in RAM, by `mincore(2)`; `None` where the
/// kernel cannot say (an address that is not page-aligned, or not mapped).
fn resident(addr: *const u8, page_size: usize) -> Option<bool> {
    if !(addr as usize).is_multiple_of(page_size) {
        return None;
    }
    let mut v = 0u8;
    // SAFETY: mincore only reads the page tables of `addr..addr+page_size` and writes one byte
    // to `v`; an unmapped range is an error, not a fault.
    let rc = unsafe { libc::mincore(addr as *mut libc::c_void, page_size, &mut v) };
    (rc == 0).then_some(v & 1 != 0)
}

/// Performs `records` records from `input` on `region` (pages of `page_size`). Each record
/// touches real memory: the kernel faults a page in (or back from swap) at the access that
/// faults it in the replay.
pub fn play(
    input: &mut impl Read,
    region: &mut [u8],
    file: &[u8],
    page_size: usize,
    records: u64,
) -> Result<Played, KernelError> {
    let pages = (region.len() / page_size) as u64;
    let mut done = Played::default();
    let mut rec = [0u8; RECORD_LEN];
    let mut bytes = vec![0u8; page_size];
    for _ in 0..records {
        input.read_exact(&mut rec).map_err(|e| bad(format!("record {}: {e}", done.accesses)))?;
        let page = u64::from(u32::from_le_bytes(rec[..4].try_into().expect("4 bytes")));
        if rec[4] & FILE != 0 {
            read_file_page(file, page, page_size, &mut done)?;
            continue;
        }
        if page >= pages {
            return Err(bad(format!("page {page} outside a region of {pages} pages")));
        }
        let at = page as usize * page_size;
        let flags = rec[4];
        let out = if flags & FIRST_TOUCH == 0 {
            resident(region[at..].as_ptr(), page_size) == Some(false)
        } else {
            false
        };
        let first = flags & FIRST_TOUCH != 0;
        if first {
            // Read before the clocks start: the pipe's cost is not the fault's.
            input.read_exact(&mut bytes).map_err(|e| bad(format!("page {page}'s bytes: {e}")))?;
        }
        let (t, cpu) = (std::time::Instant::now(), thread_cpu_ns());
        if first {
            region[at..at + page_size].copy_from_slice(&bytes);
            done.first_touches += 1;
        }
        if flags & WRITE != 0 {
            // The value passes through black_box, so the store cannot be proven redundant and
            // is made: the page is written (dirty) with the bytes it already holds.
            region[at] = std::hint::black_box(region[at]);
            done.writes += 1;
        } else {
            std::hint::black_box(region[at]);
            done.reads += 1;
        }
        if out {
            done.swap_in_ns.push(t.elapsed().as_nanos() as u64);
        }
        if out || first {
            done.fault_cpu_ns += thread_cpu_ns().saturating_sub(cpu);
        }
        done.accesses += 1;
    }
    Ok(done)
}

/// One read of the file's page `page`: a word loaded; a page `mincore` says is not in the page
/// cache faults (a major fault: the read from the file, the charge, any reclaim it does), its
/// thread CPU time counted with the other faults'.
fn read_file_page(
    file: &[u8],
    page: u64,
    page_size: usize,
    done: &mut Played,
) -> Result<(), KernelError> {
    let at = usize::try_from(page).ok().and_then(|p| p.checked_mul(page_size));
    let Some(at) = at.filter(|&a| a < file.len()) else {
        let pages = file.len() / page_size;
        return Err(bad(format!("file page {page} outside a file of {pages} pages")));
    };
    let out = resident(file[at..].as_ptr(), page_size) == Some(false);
    let cpu = thread_cpu_ns();
    std::hint::black_box(file[at]);
    if out {
        done.file_faults += 1;
        done.fault_cpu_ns += thread_cpu_ns().saturating_sub(cpu);
    }
    done.file_reads += 1;
    done.accesses += 1;
    Ok(())
}

/// Pages of our mapping `ptr..ptr+len` in RAM (`mincore(2)`).
fn resident_in(ptr: *mut u8, len: usize, page_size: usize) -> Result<u64, KernelError> {
    let mut vec = vec![0u8; len.div_ceil(page_size)];
    // SAFETY: `ptr..ptr+len` is a mapping of the caller's (page-aligned, as mmap returns it)
    // and `vec` has one byte per page of it, as mincore writes.
    let rc = unsafe { libc::mincore(ptr.cast(), len, vec.as_mut_ptr()) };
    if rc != 0 {
        return Err(KernelError::Setup(format!("mincore: {}", std::io::Error::last_os_error())));
    }
    Ok(vec.iter().filter(|&&b| b & 1 != 0).count() as u64)
}

/// The file a trace's file reads read, mapped shared and read-only with `MADV_RANDOM` (module
/// doc); unmapped when dropped.
#[derive(Debug)]
pub struct FileMap {
    ptr: *mut u8,
    len: usize,
}

impl FileMap {
    /// Maps the first `pages` pages of `path` (not followed where it is a link), and unlocks
    /// them ([`lock_own_memory`]'s `MCL_FUTURE` would lock them as they fault).
    pub fn open(path: &std::path::Path, pages: u64, page_size: usize) -> Result<Self, KernelError> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| KernelError::Setup(format!("{}: {e}", path.display())))?;
        let len = usize::try_from(pages).ok().and_then(|p| p.checked_mul(page_size));
        let have =
            f.metadata().map_err(|e| KernelError::Setup(format!("{}: {e}", path.display())))?.len();
        let Some(len) = len.filter(|&l| l > 0 && l as u64 <= have) else {
            return Err(KernelError::Setup(format!(
                "{} is shorter than {pages} pages",
                path.display()
            )));
        };
        use std::os::fd::AsRawFd;
        // SAFETY: a shared read-only mapping of an open file at an address of the kernel's
        // choice aliases nothing of ours; the file outlives no borrow (the mapping keeps it).
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(KernelError::Setup(format!(
                "mmap of {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        let map = Self { ptr: ptr.cast(), len };
        // SAFETY: `ptr..ptr+len` is the mapping just made; advice and munlock change no contents.
        let rc = unsafe { libc::madvise(ptr, len, libc::MADV_RANDOM) | libc::munlock(ptr, len) };
        if rc != 0 {
            return Err(KernelError::Setup(format!(
                "madvise/munlock: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(map)
    }

    /// Pages of the file in the page cache now (`mincore(2)` of a file mapping).
    pub fn resident_pages(&self, page_size: usize) -> Result<u64, KernelError> {
        resident_in(self.ptr, self.len, page_size)
    }

    /// The file's mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes, owned by this value for its lifetime;
        // nothing writes the file while the player runs (the parent made it and waits).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `open` made; no borrow of it outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// An anonymous private mapping of whole pages, with transparent huge pages off (the kernel must
/// reclaim and swap the same 4 KiB pages the replay does); unmapped when dropped.
#[derive(Debug)]
pub struct Region {
    ptr: *mut u8,
    len: usize,
}

impl Region {
    /// Maps `len` bytes (a multiple of the page size), untouched (nothing charged yet).
    pub fn map(len: usize) -> Result<Self, KernelError> {
        let len = len.max(1);
        // SAFETY: an anonymous mapping at an address of the kernel's choice aliases nothing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(KernelError::Setup(format!(
                "mmap of {len} bytes: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: `ptr..ptr+len` is the mapping just made. Advice only; failure (a kernel
        // without THP) changes nothing for us.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Ok(Self { ptr: ptr.cast(), len })
    }

    /// Pages of the mapping in RAM now (`mincore(2)`; a swapped-out page is not).
    pub fn resident_pages(&self, page_size: usize) -> Result<u64, KernelError> {
        resident_in(self.ptr, self.len, page_size)
    }

    /// Unlocks the mapping (`munlock`), so reclaim may take its pages though the process
    /// locked its memory ([`lock_own_memory`]'s `MCL_FUTURE` locks every later mapping).
    pub fn unlock(&mut self) -> Result<(), KernelError> {
        // SAFETY: `ptr..ptr+len` is our mapping; munlock changes no contents.
        if unsafe { libc::munlock(self.ptr.cast(), self.len) } != 0 {
            return Err(KernelError::Setup(format!(
                "munlock: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    /// The mapping's bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` readable and writable bytes (zero-filled on first touch),
        // owned by this value for its lifetime, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; no borrow of it outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Locks the player's own memory (`mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)`: each page
/// as it is faulted in, none populated ahead), so that reclaim in the cgroup can take only the
/// region's pages, as the replay assumes (it gives the page set the limit less the player's
/// charge). Without it the kernel swapped out about 90 of the player's own pages (its binary's
/// relocated data, heap, stack: pages of no page set) in a run of 4,000 swap-outs; their
/// compressed sizes fall in zsmalloc size classes the page set's do not use, each such class
/// taking a zspage of its own, and the kernel's pool was 7 % larger than the replay's for that
/// alone (docs/BENCHMARKS.md, "The pool's dynamics"). `false` where the kernel refused (no
/// CAP_IPC_LOCK and a small RLIMIT_MEMLOCK): the player runs unlocked.
fn lock_own_memory() -> bool {
    // SAFETY: mlockall has no memory-safety preconditions.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) };
    if rc != 0 {
        eprintln!(
            "player: mlockall: {} (the player's own pages may be swapped)",
            std::io::Error::last_os_error()
        );
    }
    rc == 0
}

/// The player's whole life over stdin and stdout (the `zmem validate play` entry point, and the
/// live tests' child mode): header, map, `ready`, the records, `done N`, wait for stdin's end.
pub fn run_stdio() -> Result<(), KernelError> {
    let locked = lock_own_memory();
    let mut input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let h = Header::read(&mut input)?;
    let len = usize::try_from(h.pages)
        .ok()
        .and_then(|p| p.checked_mul(h.page_size))
        .ok_or_else(|| bad(format!("{} pages do not fit the address space", h.pages)))?;
    let mut region = Region::map(len)?;
    if locked {
        region.unlock()?;
    }
    let file = match &h.file {
        Some(path) if h.file_pages > 0 => Some(FileMap::open(path, h.file_pages, h.page_size)?),
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock, s: &str| {
        writeln!(out, "{s}").and_then(|()| out.flush()).map_err(|e| bad(format!("stdout: {e}")))
    };
    say(&mut out, READY)?;
    let file_bytes = file.as_ref().map_or(&[][..], FileMap::bytes);
    let played = play(&mut input, region.bytes_mut(), file_bytes, h.page_size, h.records)?;
    let resident = region.resident_pages(h.page_size)?;
    say(&mut out, &played.swapins_line())?;
    say(&mut out, &played.files_line())?;
    say(&mut out, &format!("{DONE} {} {resident}", played.accesses))?;
    // Keep every page mapped until the parent has read the kernel's counters.
    loop {
        let buf = input.fill_buf().map_err(|e| bad(format!("stdin: {e}")))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        input.consume(n);
    }
    drop(region);
    drop(file);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_pages::prng::SplitMix64;

    fn acc(page: u64, write: bool) -> Access {
        Access { page, write, file: false, time_ns: 0 }
    }

    #[test]
    fn the_header_round_trips_and_is_checked() {
        let h = Header { page_size: 4096, pages: 77, records: 1 << 40, file_pages: 0, file: None };
        assert_eq!(Header::read(&mut &h.encode()[..]).unwrap(), h);
        let path = Some(std::path::PathBuf::from("/var/tmp/f.pages"));
        let with_file = Header { file_pages: 9, file: path, ..h.clone() };
        assert_eq!(Header::read(&mut &with_file.encode()[..]).unwrap(), with_file);
        let mut b = h.encode();
        b[0] = b'X';
        assert!(Header::read(&mut &b[..]).is_err());
        let odd = Header { page_size: 3000, ..h.clone() }.encode();
        assert!(Header::read(&mut &odd[..]).is_err());
        assert!(Header::read(&mut &h.encode()[..10]).is_err());
    }

    /// The player fills each page at its first access with the page set's bytes, leaves the
    /// pages the trace never touches untouched, and counts reads and writes as the trace says.
    #[test]
    fn playing_a_stream_fills_touched_pages_only() {
        let ps = 512;
        let n = 40;
        let mut rng = SplitMix64::new(7);
        let pages: Vec<u8> = (0..n * ps).map(|_| (rng.next_u64() | 1) as u8).collect();
        let trace: Vec<Access> = (0..500).map(|_| acc(rng.below(30), rng.below(3) == 0)).collect();
        let mut stream = Vec::new();
        write_stream(&mut stream, &pages, ps, &trace).unwrap();
        let mut input = &stream[..];
        let h = Header::read(&mut input).unwrap();
        let want =
            Header { page_size: ps, pages: n as u64, records: 500, file_pages: 0, file: None };
        assert_eq!(h, want);
        let mut region = vec![0u8; n * ps];
        let played = play(&mut input, &mut region, &[], ps, h.records).unwrap();
        assert!(input.is_empty(), "every byte of the stream was consumed");
        let mut touched: Vec<u64> = trace.iter().map(|a| a.page).collect();
        touched.sort_unstable();
        touched.dedup();
        assert_eq!(played.first_touches, touched.len() as u64);
        assert_eq!(played.accesses, 500);
        assert_eq!(played.writes, trace.iter().filter(|a| a.write).count() as u64);
        assert_eq!(played.reads + played.writes, 500);
        for i in 0..n {
            let got = &region[i * ps..(i + 1) * ps];
            if touched.contains(&(i as u64)) {
                assert_eq!(got, &pages[i * ps..(i + 1) * ps], "page {i}");
            } else {
                assert!(got.iter().all(|&b| b == 0), "page {i} was never touched");
            }
        }
        // Only first accesses carry bytes.
        assert_eq!(stream.len(), HEADER_LEN + 500 * RECORD_LEN + touched.len() * ps);
    }

    #[test]
    fn a_bad_or_short_stream_is_an_error() {
        let ps = 512;
        let pages = vec![1u8; 4 * ps];
        let mut stream = Vec::new();
        write_stream(&mut stream, &pages, ps, &[acc(3, false), acc(3, true)]).unwrap();
        let body = &stream[HEADER_LEN..];
        let mut region = vec![0u8; 4 * ps];
        // Cut inside the page's bytes.
        assert!(play(&mut &body[..100], &mut region, &[], ps, 2).is_err());
        // More records announced than sent.
        assert!(play(&mut &body[..], &mut region, &[], ps, 3).is_err());
        // A page outside the region.
        let mut small = vec![0u8; 2 * ps];
        let e = play(&mut &body[..], &mut small, &[], ps, 2).unwrap_err().to_string();
        assert!(e.contains("page 3 outside"), "{e}");
    }

    #[test]
    fn percentiles_are_by_nearest_rank() {
        assert_eq!(percentile(&[], 50.0), 0);
        let v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[7], 99.0), 7);
        let p = Played { swap_in_ns: vec![30, 10, 20], ..Played::default() };
        assert_eq!(p.swapins_line(), "swapins 3 20 30 0");
    }

    /// A page of a mapped region that was never touched is not in RAM; `play` times an access
    /// only to such a page (here: one the kernel dropped with MADV_DONTNEED after its first
    /// touch, which refaults as a zero page).
    #[test]
    fn only_accesses_to_pages_out_of_ram_are_timed() {
        let ps = 4096;
        let mut r = Region::map(4 * ps).unwrap();
        let pages = vec![3u8; 4 * ps];
        let trace = [acc(0, false), acc(1, false), acc(0, true), acc(1, false)];
        let mut stream = Vec::new();
        write_stream(&mut stream, &pages, ps, &trace[..2]).unwrap();
        let mut input = &stream[HEADER_LEN..];
        let p = play(&mut input, r.bytes_mut(), &[], ps, 2).unwrap();
        assert!(p.swap_in_ns.is_empty(), "first touches are not swap-ins");
        assert!(p.fault_cpu_ns > 0, "the first touches' faults took CPU time");
        let page1 = r.bytes_mut()[ps..].as_mut_ptr();
        assert_eq!(resident(page1, ps), Some(true));
        // SAFETY: page 1 of our own mapping; its contents are dropped, which nothing relies on.
        unsafe { libc::madvise(page1.cast(), ps, libc::MADV_DONTNEED) };
        assert_eq!(resident(page1, ps), Some(false));
        let mut recs = Vec::new();
        for a in &trace[2..] {
            recs.extend_from_slice(&(a.page as u32).to_le_bytes());
            recs.push(if a.write { WRITE } else { 0 });
        }
        let p = play(&mut &recs[..], r.bytes_mut(), &[], ps, 2).unwrap();
        assert_eq!(p.swap_in_ns.len(), 1, "only page 1 was out of RAM");
        assert_eq!(resident(r.bytes_mut()[1..].as_ptr(), ps), None, "not page-aligned");
    }

    /// File reads read the mapped file: a page out of the page cache is a major fault, counted;
    /// a page read before is not; a page past the file is an error.
    #[test]
    fn file_reads_fault_each_page_out_of_the_page_cache_once() {
        let ps = 4096;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let f = crate::page_cache::TraceFile::create(dir.path(), 8, ps).unwrap();
        f.drop_cached().unwrap();
        let map = FileMap::open(f.path(), 8, ps).unwrap();
        let file = |page| Access { page, write: false, file: true, time_ns: 0 };
        let trace = [file(2), file(5), file(2), acc(0, true), file(7)];
        let mut stream = Vec::new();
        write_stream(&mut stream, &vec![1u8; ps], ps, &trace).unwrap();
        let mut input = &stream[HEADER_LEN..];
        let mut region = vec![0u8; ps];
        let p = play(&mut input, &mut region, map.bytes(), ps, 5).unwrap();
        assert!(input.is_empty());
        assert_eq!((p.file_reads, p.file_faults, p.first_touches), (3 + 1, 3, 1));
        assert_eq!(p.files_line(), "files 4 3");
        let past = [file(8)];
        let mut stream = Vec::new();
        write_stream(&mut stream, &vec![1u8; ps], ps, &past).unwrap();
        let e = play(&mut &stream[HEADER_LEN..], &mut region, map.bytes(), ps, 1).unwrap_err();
        assert!(e.to_string().contains("file page 8 outside a file of 8 pages"), "{e}");
        assert!(FileMap::open(f.path(), 9, ps).is_err(), "the file is 8 pages");
    }

    #[test]
    fn a_region_is_zeroed_writable_memory() {
        let mut r = Region::map(3 * 4096).unwrap();
        assert_eq!(r.resident_pages(4096).unwrap(), 0, "nothing touched yet");
        r.bytes_mut()[5000] = 9;
        assert_eq!(r.resident_pages(4096).unwrap(), 1, "one page written");
        let b = r.bytes_mut();
        assert_eq!(b.len(), 3 * 4096);
        assert_eq!(b[5000], 9);
        assert!(b.iter().enumerate().all(|(i, &x)| x == 0 || i == 5000));
    }
}
