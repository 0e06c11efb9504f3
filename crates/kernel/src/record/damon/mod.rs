//! DAMON's sysfs interface (the kernel's Documentation/admin-guide/mm/damon/usage.rst,
//! /sys/kernel/mm/damon/admin) for the recorder: whether it can monitor processes without
//! disturbing any kdamond that is not ours ([`unavailable_reason`]), and a kdamond of our own
//! that does ([`Kdamond`]).
//!
//! The interface has one list of kdamonds, `kdamonds/0..nr_kdamonds`. Adding one means writing
//! `nr_kdamonds`, and the kernel (`damon_sysfs_kdamonds_add_dirs` in mm/damon/sysfs.c) then
//! removes every kdamond directory and makes fresh ones: while any kdamond runs it refuses the
//! write (EBUSY); while one is configured but stopped, the write deletes its owner's
//! configuration. So the only way that never disturbs anyone is to use DAMON where no kdamond
//! exists at all, and to remove ours afterwards. Monitoring processes also needs the `vaddr`
//! operations set (`CONFIG_DAMON_VADDR`), which a context's `avail_operations` lists.
//!
//! Use, for a recorder observing every `interval`:
//!
//! ```no_run
//! # use std::path::Path;
//! # use std::time::Duration;
//! # use zmem_kernel::record::damon::{ADMIN, Attrs, Kdamond};
//! # fn f(pids: &[u32]) -> Result<(), zmem_kernel::KernelError> {
//! let attrs = Attrs::for_interval(Duration::from_millis(100));
//! let k = Kdamond::start(Path::new(ADMIN), pids, &attrs)?;
//! for _ in 0..10 {
//!     // Blocks until the next aggregation interval (the interval) has ended.
//!     let regions = k.snapshot()?;
//!     // convert::damon_counts(&index, &regions, k.max_nr_accesses()) ...
//! #   let _ = regions;
//! }
//! drop(k); // stops and removes our kdamond
//! # Ok(()) }
//! ```
//!
//! Which process a region belongs to: a `tried_regions` entry does not say (usage.rst,
//! `tried_regions/<N>/`: `start`, `end`, `nr_accesses`, `age`). The kernel adds them target after
//! target, in the order of `targets/<N>`, each target's in address order without overlap
//! (`kdamond_apply_schemes` in mm/damon/core.c walks targets, then their regions), so the address
//! order restarts exactly where the next target begins. [`Kdamond::snapshot`] gives the `k`-th
//! ascending run to the `k`-th pid, and refuses, rather than guess, where there are fewer runs
//! than targets (a process whose lowest region lies above the previous one's highest; with
//! `vaddr`, whose regions reach up to each process's stack near the top of the address space,
//! ordinary processes do not do that). One process is never ambiguous. (Not taken: one scheme
//! per target with a `target` filter, which only newer kernels have (usage.rst,
//! `damon_target_idx`); one kdamond per process, whose snapshots would be serialised, as kernels
//! that keep a single pending sysfs command, `damon_sysfs_cmd_request` in mm/damon/sysfs.c,
//! refuse a second with EBUSY, each taking an aggregation interval.)
//!
//! Regions, once read, become trace accesses through [`super::convert::damon_counts`]. No
//! machine this project runs on has offered DAMON in a state it could be tried on (docs/FORMATS.md,
//! recorded traces), so the kdamond is tested against fake sysfs trees only.

#[cfg(test)]
pub(crate) mod fake;
mod kdamond;
mod regions;
mod schemes;
pub(crate) mod sysfs;

use std::path::Path;

pub(crate) use kdamond::remove_ours;
pub use kdamond::{Attrs, Kdamond};
pub use schemes::{AnonPageout, anon_pageout};

/// Where the DAMON sysfs interface is.
pub const ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// Why the recorder cannot use DAMON under `admin` (the sysfs directory), or `None` where it
/// could: the interface exists and has no kdamond. Reads only.
///
/// With no kdamond there is no context whose `avail_operations` would say whether `vaddr` is
/// there, so `None` does not promise it: [`Kdamond::start`] looks once its context exists.
pub fn unavailable_reason(admin: &Path) -> Option<String> {
    let kdamonds = admin.join("kdamonds");
    let nr = match std::fs::read_to_string(kdamonds.join("nr_kdamonds")) {
        Ok(s) => match s.trim().parse::<u32>() {
            Ok(n) => n,
            Err(_) => return Some(format!("{}/nr_kdamonds is not a number", kdamonds.display())),
        },
        Err(e) => return Some(format!("no DAMON sysfs interface ({}: {e})", admin.display())),
    };
    if nr == 0 {
        return None;
    }
    let mut why = Vec::new();
    // Any existing context lists the operations sets this kernel has.
    if let Some(ops) = (0..nr).find_map(|k| {
        std::fs::read_to_string(kdamonds.join(format!("{k}/contexts/0/avail_operations"))).ok()
    }) && let Some(no) = no_vaddr(&ops)
    {
        why.push(no);
    }
    let running: Vec<u32> = (0..nr)
        .filter(|k| {
            std::fs::read_to_string(kdamonds.join(format!("{k}/state")))
                .is_ok_and(|s| s.trim() == "on")
        })
        .collect();
    if !running.is_empty() {
        why.push(format!(
            "kdamond {} is running and is not ours: DAMON's sysfs interface cannot add a kdamond \
             while any runs (writing nr_kdamonds rebuilds the list and is refused with EBUSY)",
            running.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ));
    } else {
        why.push(format!(
            "{nr} kdamond(s) are configured by someone else: writing nr_kdamonds to add ours \
             would delete their configuration"
        ));
    }
    Some(why.join("; "))
}

/// Why `avail_operations` (its content) rules out monitoring processes, if it does.
fn no_vaddr(avail_operations: &str) -> Option<String> {
    (!avail_operations.split_whitespace().any(|o| o == "vaddr")).then(|| {
        format!(
            "the kernel has no DAMON operations for processes (avail_operations: {}; \
             CONFIG_DAMON_VADDR is off)",
            avail_operations.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admin(kdamonds: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kdamonds");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("nr_kdamonds"), format!("{}\n", kdamonds.len())).unwrap();
        for (i, (state, ops)) in kdamonds.iter().enumerate() {
            let c = k.join(format!("{i}/contexts/0"));
            std::fs::create_dir_all(&c).unwrap();
            std::fs::write(k.join(format!("{i}/state")), format!("{state}\n")).unwrap();
            std::fs::write(c.join("avail_operations"), format!("{ops}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn a_running_kdamond_without_vaddr_gives_both_reasons() {
        let d = admin(&[("on", "paddr")]);
        let why = unavailable_reason(d.path()).unwrap();
        assert!(why.contains("CONFIG_DAMON_VADDR"), "{why}");
        assert!(why.contains("kdamond 0 is running"), "{why}");
    }

    #[test]
    fn a_stopped_kdamond_of_someone_else_is_not_rebuilt() {
        let d = admin(&[("off", "vaddr fvaddr paddr")]);
        let why = unavailable_reason(d.path()).unwrap();
        assert!(why.contains("would delete their configuration"), "{why}");
        assert!(!why.contains("CONFIG_DAMON_VADDR"), "{why}");
    }

    #[test]
    fn no_kdamond_at_all_is_usable() {
        let d = admin(&[]);
        assert_eq!(unavailable_reason(d.path()), None);
        assert!(no_vaddr("fvaddr paddr\n").unwrap().contains("avail_operations: fvaddr paddr;"));
        assert_eq!(no_vaddr("vaddr fvaddr paddr\n"), None);
    }

    #[test]
    fn a_missing_interface_says_so() {
        let d = tempfile::tempdir().unwrap();
        let why = unavailable_reason(&d.path().join("admin")).unwrap();
        assert!(why.starts_with("no DAMON sysfs interface"), "{why}");
    }
}
