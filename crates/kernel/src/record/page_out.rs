//! Page-out sampling: which captured pages a process touches, seen by taking them away. The
//! recorder's method where DAMON and soft-dirty bits cannot be used (this project's own machines
//! have neither: see [`super::record`]), or where reads must be seen too.
//!
//! At the start of each interval the captured pages still in RAM are paged out with
//! `process_madvise(pidfd, .., MADV_PAGEOUT)` (mm/madvise.c `madvise_cold_or_pageout_pte_range`
//! reclaims a process's private anonymous pages to swap at once; a caller other than the process
//! needs CAP_SYS_NICE and ptrace read access to it). pagemap then says which went: the page is no
//! longer present, it is *armed*. At the interval's end an armed page that is present again was
//! faulted back in: the process read or wrote it during the interval. An armed page still out
//! was not touched. So each armed page gives one bit per interval, for reads and writes alike,
//! at page resolution, like the Accessed bit DAMON samples.
//!
//! A page faulted back in waits in the LRU add batch of the CPU it faulted on (mm/swap.c
//! `folio_add_lru`: up to 31 folios a CPU) until that batch fills, and MADV_PAGEOUT can take only
//! folios on the LRU lists (`folio_isolate_lru`), draining just the calling CPU's batch. A
//! process whose CPU is otherwise idle keeps its recent faults there for good. On this
//! project's 2-core VM, the live recording test (`crates/lab/tests/trace_record.rs`) without a
//! drain failed 8 runs in 10, its written pages seen in 1 interval of 12; so each pass over the
//! pages begins by draining every CPU's batches ([`Pager::drain_lru`]), and it passed 30 in 30.
//!
//! Pages the kernel leaves in RAM are *unobserved* that interval and counted: pages mapped by
//! another process too (`folio_maybe_mapped_shared`: the kernel skips them), mlocked or
//! unevictable pages, pages it could not write because the swap area is full, and pages
//! touched again between the page-out and the pagemap read that follows it (one group of 64
//! pages apart: a millisecond or so).
//!
//! What it costs the process, and why the recorder says so: every page it touches in an
//! interval is written to swap once and read back on its first touch, a major fault (a few µs
//! from zram); its resident set shrinks to what it touches. It needs an active swap area; the
//! recorder makes a zram one of its own for the recording ([`super::record::SwapForPageOut`]).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::pagemap::{self, PM_PRESENT};
use crate::KernelError;

/// Pages paged out before their pagemap entries are read back (see [`Sampler::arm`]).
const ARM_GROUP: usize = 64;

/// Most iovecs one process_madvise call takes (UIO_MAXIOV).
const MAX_IOVECS: usize = 1024;

/// Pages the captured pages of a process out (runs of consecutive pages: (start, pages)).
pub trait Pager {
    /// Pages out the runs of `pid`. A run that is no longer mapped is not an error (the process
    /// freed it; its pages stay unobserved); a process that is gone is.
    fn page_out(&mut self, pid: u32, runs: &[(u64, u64)]) -> Result<(), KernelError>;

    /// Moves the folios waiting in every CPU's LRU add batches onto the LRU lists, where the
    /// next page-out can take them (see the module doc).
    fn drain_lru(&mut self) -> Result<(), KernelError>;

    /// Forgets what it holds for `pid` (the process exited: a long-running caller such as the
    /// reclaim agent must not keep a descriptor per dead process, nor reach a reused pid
    /// through the old one).
    fn forget(&mut self, _pid: u32) {}
}

/// The kernel's pager: process_madvise(MADV_PAGEOUT) through a pidfd per process.
#[derive(Debug, Default)]
pub struct Madvise {
    pidfds: Vec<(u32, OwnedFd)>,
    page_size: u64,
    /// The node mask [`Pager::drain_lru`] migrates from and to, once read.
    drain_nodes: Option<[libc::c_ulong; DRAIN_MASK_WORDS]>,
}

/// Words of the node mask given to migrate_pages: 1024 nodes, the kernel's largest MAX_NUMNODES.
const DRAIN_MASK_WORDS: usize = 16;

/// Where the kernel lists the NUMA nodes that have memory.
const NODES_WITH_MEMORY: &str = "/sys/devices/system/node/has_memory";

impl Madvise {
    /// A pager for pages of `page_size` bytes.
    pub fn new(page_size: u64) -> Self {
        Self { pidfds: Vec::new(), page_size, drain_nodes: None }
    }

    /// A mask holding the first node with memory: migrate_pages accepts only such nodes.
    fn drain_nodes(&mut self) -> Result<[libc::c_ulong; DRAIN_MASK_WORDS], KernelError> {
        if let Some(m) = self.drain_nodes {
            return Ok(m);
        }
        let list = std::fs::read_to_string(NODES_WITH_MEMORY)
            .map_err(|e| KernelError::Invalid(format!("{NODES_WITH_MEMORY}: {e}")))?;
        let first: String = list.trim().chars().take_while(char::is_ascii_digit).collect();
        let bits = libc::c_ulong::BITS as usize;
        let node =
            first.parse::<usize>().ok().filter(|&n| n < DRAIN_MASK_WORDS * bits).ok_or_else(
                || KernelError::Invalid(format!("{NODES_WITH_MEMORY}: no node in {list:?}")),
            )?;
        let mut mask = [0; DRAIN_MASK_WORDS];
        mask[node / bits] |= 1 << (node % bits);
        self.drain_nodes = Some(mask);
        Ok(mask)
    }

    fn pidfd(&mut self, pid: u32) -> Result<&OwnedFd, KernelError> {
        if let Some(i) = self.pidfds.iter().position(|(p, _)| *p == pid) {
            return Ok(&self.pidfds[i].1);
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(sys_err(format!("pidfd_open({pid})")));
        }
        // SAFETY: `fd` is a descriptor the kernel just gave us and nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        self.pidfds.push((pid, fd));
        Ok(&self.pidfds.last().expect("just pushed").1)
    }

    /// One process_madvise call over `iov`: the bytes advised, or the error.
    fn advise(fd: &OwnedFd, iov: &[libc::iovec]) -> Result<usize, std::io::Error> {
        // SAFETY: `iov` points at `iov.len()` (at most UIO_MAXIOV) initialised iovecs that
        // describe address ranges of the *target* process; the kernel only reads the array.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                fd.as_raw_fd(),
                iov.as_ptr(),
                iov.len(),
                libc::MADV_PAGEOUT,
                0u32,
            )
        };
        if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(rc as usize) }
    }
}

impl Pager for Madvise {
    fn page_out(&mut self, pid: u32, runs: &[(u64, u64)]) -> Result<(), KernelError> {
        let ps = self.page_size;
        let iovs: Vec<libc::iovec> = runs
            .iter()
            .map(|&(start, n)| libc::iovec {
                iov_base: start as *mut libc::c_void,
                iov_len: (n * ps) as usize,
            })
            .collect();
        let fd = self.pidfd(pid)?;
        for batch in iovs.chunks(MAX_IOVECS) {
            let want: usize = batch.iter().map(|v| v.iov_len).sum();
            match Self::advise(fd, batch) {
                Ok(n) if n == want => continue,
                // A range unmapped since the capture stops the call there (ENOMEM, or a short
                // count): go through the batch one run at a time, skipping the unmapped ones.
                Ok(_) | Err(_) => {}
            }
            for v in batch {
                match Self::advise(fd, std::slice::from_ref(v)) {
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                        return Err(KernelError::Invalid(format!("process {pid} exited")));
                    }
                    Err(e) => {
                        return Err(KernelError::Invalid(format!(
                            "process_madvise(MADV_PAGEOUT) on process {pid}: {e}"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn forget(&mut self, pid: u32) {
        self.pidfds.retain(|(p, _)| *p != pid);
    }

    /// migrate_pages(2) of this process from a node to the same node: nothing moves, but
    /// mm/mempolicy.c `do_migrate_pages` begins with `lru_cache_disable()`, which drains the LRU
    /// batches of every CPU (about 33 µs on this project's 2-core VM).
    fn drain_lru(&mut self) -> Result<(), KernelError> {
        let mask = self.drain_nodes()?;
        let max_node = (DRAIN_MASK_WORDS * libc::c_ulong::BITS as usize + 1) as libc::c_ulong;
        // SAFETY: both masks point at DRAIN_MASK_WORDS initialised words, the max_node - 1 bits
        // the kernel reads; pid 0 is this process.
        let rc = unsafe {
            libc::syscall(libc::SYS_migrate_pages, 0, max_node, mask.as_ptr(), mask.as_ptr())
        };
        if rc < 0 {
            return Err(sys_err("migrate_pages (to drain the LRU batches)".into()));
        }
        Ok(())
    }
}

fn sys_err(what: String) -> KernelError {
    KernelError::Invalid(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// Why page-out sampling cannot be used here, or `None` where it can: the syscalls must exist
/// (Linux 5.10 and later) and we must be allowed to page out another process's memory.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "not root (paging out another process's pages needs CAP_SYS_NICE, and the swap \
             area it needs, swapon)"
                .into(),
        );
    }
    let mut m = Madvise::new(crate::capture::system_page_size() as u64);
    // No range: checks that both syscalls exist and accept us, pages nothing out.
    match m.pidfd(std::process::id()).map(|fd| Madvise::advise(fd, &[])) {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("process_madvise is not usable: {e}")),
        Err(e) => Some(e.to_string()),
    }
}

/// What one interval saw: the pages touched, and how many were watched and unobserved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// (pid, page address) of the armed pages found back in RAM.
    pub touched: Vec<(u32, u64)>,
    /// Captured pages watched in the interval (armed).
    pub armed: u64,
    /// Captured pages the page-out left in RAM: nothing is known of them this interval.
    pub unobserved: u64,
}

/// The captured pages of one process and which of them are armed.
#[derive(Debug)]
struct Watched {
    pid: u32,
    vaddrs: Vec<u64>,
    armed: Vec<bool>,
}

/// Page-out sampling over the captured pages of some processes (see the module doc).
#[derive(Debug)]
pub struct Sampler<P> {
    proc_root: PathBuf,
    page_size: u64,
    pager: P,
    watched: Vec<Watched>,
    /// Why the LRU batches could not be drained, from the first failure on.
    drain_error: Option<String>,
}

impl<P: Pager> Sampler<P> {
    /// Watches `pages` ((pid, captured page addresses, ascending) per process) under
    /// `proc_root` and arms them for the first interval. An error names the process.
    pub fn start(
        proc_root: &Path,
        pages: Vec<(u32, Vec<u64>)>,
        page_size: u64,
        pager: P,
    ) -> Result<(Self, u64), (u32, KernelError)> {
        let watched = pages
            .into_iter()
            .map(|(pid, vaddrs)| Watched { pid, armed: vec![false; vaddrs.len()], vaddrs })
            .collect();
        let mut s = Self {
            proc_root: proc_root.to_path_buf(),
            page_size,
            pager,
            watched,
            drain_error: None,
        };
        s.drain_lru();
        let mut armed = 0;
        for i in 0..s.watched.len() {
            armed += s.arm(i, None)?;
        }
        Ok((s, armed))
    }

    /// Ends an interval: the armed pages back in RAM are the touched ones; then every page in
    /// RAM is paged out again for the next interval. An error names the process.
    pub fn observe(&mut self) -> Result<Seen, (u32, KernelError)> {
        self.drain_lru();
        let mut seen = Seen::default();
        for i in 0..self.watched.len() {
            let w = &self.watched[i];
            let pid = w.pid;
            let entries = pagemap::entries(&self.proc_root, pid, &w.vaddrs, self.page_size)
                .map_err(|e| (pid, e))?;
            let present: Vec<bool> = entries.iter().map(|e| e & PM_PRESENT != 0).collect();
            for (k, (&a, &p)) in w.armed.iter().zip(&present).enumerate() {
                if a {
                    seen.armed += 1;
                    if p {
                        seen.touched.push((pid, w.vaddrs[k]));
                    }
                } else {
                    seen.unobserved += 1;
                }
            }
            self.arm(i, Some(&present))?;
        }
        Ok(seen)
    }

    /// Why the LRU batches could not be drained, if they could not: pages a process faulted in
    /// on another CPU than the recorder's may then stay unobserved.
    pub fn drain_error(&self) -> Option<&str> {
        self.drain_error.as_deref()
    }

    /// Drains the LRU batches before a pass; after a failure, not tried again (the cause, a
    /// kernel without NUMA or migration, does not go away).
    fn drain_lru(&mut self) {
        if self.drain_error.is_none()
            && let Err(e) = self.pager.drain_lru()
        {
            self.drain_error = Some(e.to_string());
        }
    }

    /// Pages out process `i`'s captured pages in RAM (`present`, where already read) and marks
    /// the ones that went as armed. Returns how many are armed.
    ///
    /// In groups of [`ARM_GROUP`] pages, each group's pagemap read right after its page-out: a
    /// page the process touches again between the two is unobserved, so the gap is kept to one
    /// group's page-out (tens of µs a page) rather than the whole pass's.
    fn arm(&mut self, i: usize, present: Option<&[bool]>) -> Result<u64, (u32, KernelError)> {
        let w = &mut self.watched[i];
        let pid = w.pid;
        let mut armed = 0;
        for g in (0..w.vaddrs.len()).step_by(ARM_GROUP) {
            let end = (g + ARM_GROUP).min(w.vaddrs.len());
            let group = &w.vaddrs[g..end];
            let in_ram: Vec<u64> = match present {
                Some(p) => {
                    group.iter().zip(&p[g..end]).filter(|(_, p)| **p).map(|(&a, _)| a).collect()
                }
                None => group.to_vec(),
            };
            let runs = pagemap::runs(&in_ram, self.page_size);
            if !runs.is_empty() {
                self.pager.page_out(pid, &runs).map_err(|e| (pid, e))?;
            }
            let entries = pagemap::entries(&self.proc_root, pid, group, self.page_size)
                .map_err(|e| (pid, e))?;
            for (a, e) in w.armed[g..end].iter_mut().zip(&entries) {
                *a = e & PM_PRESENT == 0;
                armed += u64::from(*a);
            }
        }
        Ok(armed)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::os::unix::fs::FileExt;
    use std::rc::Rc;

    use super::*;

    const PS: u64 = 4096;

    /// The runs of each page-out call, shared between the test and its pager.
    type Calls = Rc<RefCell<Vec<Vec<(u64, u64)>>>>;

    /// A fake process 42 whose pagemap file the fake pager and the test edit: the pager clears
    /// the present bit of what it pages out, except pages listed as pinned (shared, mlocked) and
    /// pages faulted in since the last drain (waiting in a CPU's LRU batch, as in the kernel).
    struct FakePager {
        pagemap: PathBuf,
        pinned: Vec<u64>,
        batched: Rc<RefCell<Vec<u64>>>,
        calls: Calls,
        drain_fails: bool,
    }

    fn set_present(pagemap: &Path, vaddr: u64, present: bool) {
        let f = std::fs::File::options().write(true).open(pagemap).unwrap();
        let e: u64 = if present { PM_PRESENT } else { 1 << 62 };
        f.write_all_at(&e.to_le_bytes(), vaddr / PS * 8).unwrap();
    }

    impl FakePager {
        /// The process touches `vaddr`: it faults back in and waits in an LRU batch.
        fn fault(pagemap: &Path, batched: &RefCell<Vec<u64>>, vaddr: u64) {
            set_present(pagemap, vaddr, true);
            batched.borrow_mut().push(vaddr);
        }
    }

    impl Pager for FakePager {
        fn page_out(&mut self, pid: u32, runs: &[(u64, u64)]) -> Result<(), KernelError> {
            assert_eq!(pid, 42);
            self.calls.borrow_mut().push(runs.to_vec());
            for &(start, n) in runs {
                for a in (0..n).map(|k| start + k * PS) {
                    if !self.pinned.contains(&a) && !self.batched.borrow().contains(&a) {
                        set_present(&self.pagemap, a, false);
                    }
                }
            }
            Ok(())
        }

        fn drain_lru(&mut self) -> Result<(), KernelError> {
            if self.drain_fails {
                return Err(KernelError::Invalid("migrate_pages: no NUMA here".into()));
            }
            self.batched.borrow_mut().clear();
            Ok(())
        }
    }

    /// Process 42 with pages 0..32 in RAM, watched: pages 8..16 and 20; page 10 cannot be paged
    /// out. Returns the sampler, the pages armed at the start, the pagemap, the LRU batch and
    /// the page-out calls.
    #[allow(clippy::type_complexity)]
    fn watch(
        dir: &Path,
        drain_fails: bool,
    ) -> (Sampler<FakePager>, u64, PathBuf, Rc<RefCell<Vec<u64>>>, Calls) {
        let pid_dir = dir.join("42");
        std::fs::create_dir(&pid_dir).unwrap();
        let pagemap = pid_dir.join("pagemap");
        std::fs::write(&pagemap, PM_PRESENT.to_le_bytes().repeat(32)).unwrap();
        let vaddrs: Vec<u64> = (8..16).chain([20]).map(|v| v * PS).collect();
        let (calls, batched) = (Calls::default(), Rc::new(RefCell::new(Vec::new())));
        let pager = FakePager {
            pagemap: pagemap.clone(),
            pinned: vec![10 * PS],
            batched: batched.clone(),
            calls: calls.clone(),
            drain_fails,
        };
        let (s, armed) = Sampler::start(dir, vec![(42, vaddrs)], PS, pager).unwrap();
        (s, armed, pagemap, batched, calls)
    }

    #[test]
    fn armed_pages_back_in_ram_are_the_touched_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, armed, pagemap, batched, calls) = watch(dir.path(), false);
        assert_eq!(armed, 8);
        assert_eq!(calls.borrow()[0], [(8 * PS, 8), (20 * PS, 1)]);

        // The process touches pages 9 and 20 (they fault back in).
        FakePager::fault(&pagemap, &batched, 9 * PS);
        FakePager::fault(&pagemap, &batched, 20 * PS);
        let seen = s.observe().unwrap();
        assert_eq!(seen.touched, [(42, 9 * PS), (42, 20 * PS)]);
        assert_eq!((seen.armed, seen.unobserved), (8, 1));
        // Only the pages in RAM were paged out again: 9, the pinned 10, and 20; the batch was
        // drained first, so 9 and 20 went.
        assert_eq!(calls.borrow()[1], [(9 * PS, 2), (20 * PS, 1)]);
        assert!(s.drain_error().is_none());

        // An interval with no touch: nothing seen, everything but page 10 still armed.
        let seen = s.observe().unwrap();
        assert!(seen.touched.is_empty());
        assert_eq!((seen.armed, seen.unobserved), (8, 1));
        assert_eq!(calls.borrow()[2], [(10 * PS, 1)]);

        // The process is gone: the error names it.
        std::fs::remove_file(&pagemap).unwrap();
        let (pid, e) = s.observe().unwrap_err();
        assert_eq!(pid, 42);
        assert!(e.to_string().contains("pagemap"), "{e}");
    }

    #[test]
    fn undrained_pages_stay_unobserved_and_the_failure_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, armed, pagemap, batched, _) = watch(dir.path(), true);
        assert_eq!(armed, 8);
        assert_eq!(s.drain_error(), Some("migrate_pages: no NUMA here"));

        FakePager::fault(&pagemap, &batched, 9 * PS);
        let seen = s.observe().unwrap();
        assert_eq!(seen.touched, [(42, 9 * PS)]);
        // Page 9 sat in the batch: the page-out left it in RAM, unobserved with page 10.
        let seen = s.observe().unwrap();
        assert_eq!((seen.armed, seen.unobserved), (7, 2));
    }

    /// The kernel's drain, where the kernel lists memory nodes (NUMA kernels; every kernel
    /// with migrate_pages has the file).
    #[test]
    #[ignore = "live: needs /sys/devices/system/node/has_memory (scripts/test runs it)"]
    fn the_kernel_drain_works_where_nodes_are_listed() {
        let live = zmem_testkit::may_skip();
        if !Path::new(NODES_WITH_MEMORY).exists() {
            return live.skip(format!("no {NODES_WITH_MEMORY}"));
        }
        let mut m = Madvise::new(PS);
        m.drain_lru().unwrap();
        // Twice: the node mask, read once, is kept.
        m.drain_lru().unwrap();
        assert!(m.drain_nodes.is_some());
    }

    #[test]
    fn the_kernel_pager_refuses_a_process_that_does_not_exist() {
        // pid_max is at most 2^22: this pid cannot exist.
        let err = Madvise::new(PS).page_out(1 << 23, &[(0x1000, 1)]).unwrap_err();
        assert!(err.to_string().contains("pidfd_open"), "{err}");
    }
}
