//! A memory cgroup this process created: v1 (`/sys/fs/cgroup/memory`, `memory.limit_in_bytes`)
//! or v2 (a cgroup2 hierarchy whose root delegates the memory controller, `memory.max`). Dropping
//! it kills the processes still in it, waits for them to leave, and removes the directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{setup, unique_name};
use crate::KernelError;

/// Which cgroup interface a [`MemCgroup`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

/// Finds the memory controller: the root of a v1 `memory` hierarchy, or of a cgroup2 hierarchy
/// whose root delegates `memory` to its children (`cgroup.subtree_control`). The error says what
/// was looked for.
pub(super) fn find_memory_controller() -> Result<(PathBuf, CgroupVersion), KernelError> {
    let mounts = std::fs::read_to_string("/proc/mounts")
        .map_err(|e| KernelError::Setup(format!("cannot read /proc/mounts: {e}")))?;
    let mut v2_seen = Vec::new();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let dir = PathBuf::from(f[1].replace("\\040", " "));
        match f[2] {
            "cgroup"
                if f[3].split(',').any(|o| o == "memory")
                    && dir.join("memory.limit_in_bytes").exists() =>
            {
                return Ok((dir, CgroupVersion::V1));
            }
            "cgroup2" => {
                let has = |file: &str| {
                    std::fs::read_to_string(dir.join(file))
                        .is_ok_and(|s| s.split_whitespace().any(|c| c == "memory"))
                };
                if has("cgroup.controllers") && has("cgroup.subtree_control") {
                    return Ok((dir, CgroupVersion::V2));
                }
                v2_seen.push(dir.display().to_string());
            }
            _ => {}
        }
    }
    Err(KernelError::Unsupported(if v2_seen.is_empty() {
        "no memory cgroup: neither a v1 memory hierarchy nor cgroup2 is mounted".into()
    } else {
        format!(
            "no memory cgroup: no v1 memory hierarchy, and cgroup2 at {} does not delegate the \
             memory controller",
            v2_seen.join(", ")
        )
    }))
}

/// A memory cgroup this process created, with a memory limit.
#[derive(Debug)]
pub struct MemCgroup {
    dir: PathBuf,
    version: CgroupVersion,
    limit: u64,
}

impl MemCgroup {
    /// Creates a uniquely named child of the memory controller's root and sets its limit.
    pub fn create(limit_bytes: u64) -> Result<Self, KernelError> {
        let (root, version) = find_memory_controller()?;
        let dir = root.join(unique_name("zmem"));
        std::fs::create_dir(&dir).map_err(|e| setup(format!("mkdir {}", dir.display()), e))?;
        let me = Self { dir, version, limit: limit_bytes };
        let file = match version {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        };
        me.write(file, &limit_bytes.to_string())?;
        Ok(me)
    }

    /// The cgroup's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// v1 or v2.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The memory limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Reads one of its files (`memory.stat`, `memory.usage_in_bytes` / `memory.current`, ...).
    pub fn read(&self, file: &str) -> Result<String, KernelError> {
        let p = self.dir.join(file);
        std::fs::read_to_string(&p).map_err(|e| setup(p.display(), e))
    }

    /// Writes one of its files.
    pub fn write(&self, file: &str, value: &str) -> Result<(), KernelError> {
        let p = self.dir.join(file);
        std::fs::write(&p, value)
            .map_err(|e| setup(format!("write {value:?} to {}", p.display()), e))
    }

    /// Bytes of memory it is charged now (`memory.usage_in_bytes` or `memory.current`).
    pub fn usage(&self) -> Result<u64, KernelError> {
        let file = match self.version {
            CgroupVersion::V1 => "memory.usage_in_bytes",
            CgroupVersion::V2 => "memory.current",
        };
        let text = self.read(file)?;
        text.trim().parse().map_err(|_| KernelError::Setup(format!("{file}: {text:?}")))
    }

    /// The processes in it (`cgroup.procs`).
    pub fn procs(&self) -> Result<Vec<u32>, KernelError> {
        Ok(self.read("cgroup.procs")?.lines().filter_map(|l| l.trim().parse().ok()).collect())
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // Only processes we put here (and their children) can be in it.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let procs = self.procs().unwrap_or_default();
            if procs.is_empty() || Instant::now() > deadline {
                break;
            }
            for pid in procs {
                if let Ok(pid) = libc::pid_t::try_from(pid) {
                    // SAFETY: kill has no memory-safety preconditions; `pid` is a process in
                    // the cgroup this guard created.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut tries = 0;
        while let Err(e) = std::fs::remove_dir(&self.dir) {
            tries += 1;
            if tries > 200 {
                eprintln!("zmem: rmdir {} failed: {e} (left behind)", self.dir.display());
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
