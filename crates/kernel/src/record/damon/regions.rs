//! Reading a scheme's `tried_regions` directory (usage.rst, `schemes/<N>/tried_regions/` and
//! `tried_regions/<N>/`) and telling which target each region belongs to.
//!
//! Each region directory has `start`, `end`, `nr_accesses` and `age` (newer kernels add files,
//! such as `sz_filter_passed`, and the parent holds `total_bytes`: both ignored). Only `start`,
//! `end` and `nr_accesses` are read: a [`DamonRegion`] has no age.
//!
//! Directories are named by integers from 0 in the order the kernel added them, but a region the
//! kernel failed to add leaves its number unused (`damon_sysfs_before_damos_apply` in
//! mm/damon/sysfs-schemes.c counts before adding), so the names are listed, not counted.
//!
//! A region does not say its target. The kernel adds them while it applies the scheme
//! (`kdamond_apply_schemes` in mm/damon/core.c): target after target in the order of
//! `targets/<N>`, and each target's regions in address order, never overlapping. So the address
//! order restarts (a region starts below the previous one's end) exactly where a new target
//! begins, and the `k`-th run of ascending regions is target `k`'s. A boundary the address order
//! cannot show (a target whose lowest region lies above the previous target's highest: with
//! `vaddr`, whose regions reach from a process's lowest mapping up to its stack at the top of the
//! address space, that does not happen to ordinary processes) leaves fewer runs than targets, and
//! then which run is whose cannot be told: [`assign`] refuses rather than guess. One target is
//! never ambiguous.

use std::path::{Path, PathBuf};

use super::sysfs;
use crate::KernelError;
use zmem_pages::trace::convert::DamonRegion;

/// A region as read, before it has a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tried {
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u32,
}

/// The regions under `dir` (a `tried_regions` directory), in the order of their numbers.
pub(super) fn read(dir: &Path) -> Result<Vec<Tried>, KernelError> {
    let mut numbered: Vec<(u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| KernelError::io(dir, e))? {
        let entry = entry.map_err(|e| KernelError::io(dir, e))?;
        if let Some(n) = entry.file_name().to_str().and_then(|s| s.parse::<u64>().ok()) {
            numbered.push((n, entry.path()));
        }
    }
    numbered.sort_unstable();
    numbered
        .into_iter()
        .map(|(_, d)| {
            let r = Tried {
                start: sysfs::read_num(&d.join("start"))?,
                end: sysfs::read_num(&d.join("end"))?,
                nr_accesses: sysfs::read_num(&d.join("nr_accesses"))?,
            };
            if r.end <= r.start {
                return Err(KernelError::Invalid(format!(
                    "{}: region ends ({:#x}) at or before its start ({:#x})",
                    d.display(),
                    r.end,
                    r.start
                )));
            }
            Ok(r)
        })
        .collect()
}

/// Gives each region its target's pid (`pids` in the order of `targets/<N>`; see the module
/// doc), or says why it cannot.
pub(super) fn assign(pids: &[u32], tried: &[Tried]) -> Result<Vec<DamonRegion>, KernelError> {
    let mut target = 0;
    let mut prev_end: Option<u64> = None;
    let mut out = Vec::with_capacity(tried.len());
    for r in tried {
        if let Some(end) = prev_end
            && r.start < end
        {
            target += 1;
        }
        let Some(&pid) = pids.get(target) else {
            return Err(KernelError::Invalid(format!(
                "DAMON's tried regions restart their address order {target} times for {} \
                 target(s): they are not in the order the kernel is documented to give",
                pids.len()
            )));
        };
        out.push(DamonRegion { pid, start: r.start, end: r.end, nr_accesses: r.nr_accesses });
        prev_end = Some(r.end);
    }
    let runs = if tried.is_empty() { 0 } else { target + 1 };
    if runs != 0 && runs < pids.len() {
        return Err(KernelError::Invalid(format!(
            "DAMON's tried regions form {runs} run(s) in address order for {} targets: which \
             regions belong to which process cannot be told (record fewer processes at once)",
            pids.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: u64, end: u64, nr_accesses: u32) -> Tried {
        Tried { start, end, nr_accesses }
    }

    #[test]
    fn an_address_restart_starts_the_next_target() {
        let tried = [t(0x5000, 0x6000, 1), t(0x7000, 0x9000, 2), t(0x1000, 0x2000, 3)];
        let r = assign(&[7, 9], &tried).unwrap();
        assert_eq!(r.iter().map(|r| r.pid).collect::<Vec<_>>(), [7, 7, 9]);
        assert_eq!(r[2], DamonRegion { pid: 9, start: 0x1000, end: 0x2000, nr_accesses: 3 });
        assert!(assign(&[7, 9], &[]).unwrap().is_empty());
    }

    #[test]
    fn ambiguous_or_impossible_orders_are_refused() {
        let ascending = [t(0x1000, 0x2000, 0), t(0x2000, 0x3000, 0)];
        let e = assign(&[7, 9], &ascending).unwrap_err().to_string();
        assert!(e.contains("1 run(s)") && e.contains("2 targets"), "{e}");
        assert_eq!(assign(&[7], &ascending).unwrap().len(), 2);
        let restarts = [t(0x3000, 0x4000, 0), t(0x1000, 0x2000, 0)];
        let e = assign(&[7], &restarts).unwrap_err().to_string();
        assert!(e.contains("restart"), "{e}");
    }
}
