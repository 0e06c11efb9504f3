//! What the agent reads and writes under its proc root (`/proc`, or a test's fake tree).

use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::KernelError;
use crate::cold::{PF_KTHREAD, Smaps, parse_smaps, parse_stat};

/// pagemap entry bit: the page is in a swap area (Documentation/admin-guide/mm/pagemap.rst).
pub(super) const PM_SWAP: u64 = 1 << 62;

/// Who a pid is now: its name, whether a kernel thread, and when it started (a pid reused by
/// another process starts at another time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Identity {
    pub comm: String,
    pub kernel_thread: bool,
    pub start_time: u64,
}

fn pid_dir(root: &Path, pid: u32) -> PathBuf {
    root.join(pid.to_string())
}

/// Every pid under `root` (its numeric entries), ascending.
pub(super) fn pids(root: &Path) -> Result<Vec<u32>, KernelError> {
    let dir = std::fs::read_dir(root).map_err(|e| KernelError::io(root, e))?;
    let mut pids: Vec<u32> =
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    pids.sort_unstable();
    Ok(pids)
}

pub(super) fn identity(root: &Path, pid: u32) -> Result<Identity, KernelError> {
    let path = pid_dir(root, pid).join("stat");
    let text = std::fs::read_to_string(&path).map_err(|e| KernelError::io(&path, e))?;
    let (comm, flags, start_time) =
        parse_stat(&text).ok_or_else(|| KernelError::parse(&path, "not a stat line"))?;
    Ok(Identity { comm, kernel_thread: flags & PF_KTHREAD != 0, start_time })
}

/// The process's memory cgroup as its `cgroup` file shows it: the v1 `memory` line's path,
/// else the v2 line's (`0::/path`). `None` where neither is there.
pub(super) fn memory_cgroup(root: &Path, pid: u32) -> Result<Option<String>, KernelError> {
    let path = pid_dir(root, pid).join("cgroup");
    let text = std::fs::read_to_string(&path).map_err(|e| KernelError::io(&path, e))?;
    let mut v2 = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(p)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if controllers.split(',').any(|c| c == "memory") {
            return Ok(Some(p.to_string()));
        }
        if controllers.is_empty() {
            v2 = Some(p.to_string());
        }
    }
    Ok(v2)
}

/// Whether `cgroup` is `prefix` or below it, path component by component.
pub(super) fn under(cgroup: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty()
        || cgroup == prefix
        || cgroup.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

pub(super) fn smaps(root: &Path, pid: u32) -> Result<Smaps, KernelError> {
    let path = pid_dir(root, pid).join("smaps");
    let f = File::open(&path).map_err(|e| KernelError::io(&path, e))?;
    parse_smaps(BufReader::with_capacity(64 << 10, f)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            KernelError::parse(&path, e.to_string())
        } else {
            KernelError::io(&path, e)
        }
    })
}

/// Clears the referenced bits of the process's anonymous pages. `2` (CLEAR_REFS_ANON), not
/// `1`: fs/proc/task_mmu.c `clear_refs_test_walk()` then skips file-backed VMAs, so the page
/// cache's aging is left alone; the agent looks at anonymous mappings only.
pub(super) fn clear_refs(root: &Path, pid: u32) -> Result<(), KernelError> {
    let path = pid_dir(root, pid).join("clear_refs");
    std::fs::write(&path, "2").map_err(|e| KernelError::io(&path, e))
}

/// A process's pagemap, open for reads of runs of entries.
pub(super) struct Pagemap {
    file: File,
    path: PathBuf,
    page_size: u64,
}

impl Pagemap {
    pub(super) fn open(root: &Path, pid: u32, page_size: u64) -> Result<Self, KernelError> {
        let path = pid_dir(root, pid).join("pagemap");
        let file = File::open(&path).map_err(|e| KernelError::io(&path, e))?;
        Ok(Self { file, path, page_size })
    }

    /// The entries of `n` pages from `vaddr` into `out` (replacing what it held).
    pub(super) fn read(&self, vaddr: u64, n: u64, out: &mut Vec<u64>) -> Result<(), KernelError> {
        let mut buf = vec![0u8; n as usize * 8];
        self.file
            .read_exact_at(&mut buf, vaddr / self.page_size * 8)
            .map_err(|e| KernelError::io(&self.path, e))?;
        out.clear();
        out.extend(
            buf.chunks_exact(8)
                .map(|e| u64::from_le_bytes(e.try_into().expect("chunks_exact(8) gives 8 bytes"))),
        );
        Ok(())
    }
}

/// The memory PSI's `some avg10` (percent), or `None` where the kernel has no PSI (built
/// without CONFIG_PSI, or booted with psi=0: kernel/sched/psi.c makes no file then).
pub(super) fn psi_some_avg10(root: &Path) -> Result<Option<f64>, KernelError> {
    let path = root.join("pressure/memory");
    match std::fs::read_to_string(&path) {
        Ok(text) => crate::pressure::parse_psi(&text)
            .map(|p| Some(p.some.avg10))
            .map_err(|e| KernelError::parse(&path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // EOPNOTSUPP: PSI built but disabled at boot.
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(None),
        Err(e) => Err(KernelError::io(&path, e)),
    }
}

/// Why no page can go to swap now, if none can: no active swap area, or the areas (nearly)
/// full (SwapFree under 1 % of SwapTotal or under 4 MiB).
pub(super) fn swap_full(root: &Path) -> Result<Option<String>, KernelError> {
    let m = crate::stat::meminfo_at(root)?;
    let total = m.get("SwapTotal").copied().unwrap_or(0);
    let free = m.get("SwapFree").copied().unwrap_or(0);
    if total == 0 {
        return Ok(Some("no swap area is active".into()));
    }
    if free < (total / 100).max(4 << 20) {
        return Ok(Some(format!(
            "swap nearly full: {} MiB free of {} MiB",
            free >> 20,
            total >> 20
        )));
    }
    Ok(None)
}
