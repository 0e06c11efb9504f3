//! Whether DAMON's sysfs interface (the kernel's Documentation/admin-guide/mm/damon/usage.rst,
//! /sys/kernel/mm/damon/admin) can monitor processes for the recorder, without disturbing any
//! kdamond that is not ours.
//!
//! The interface has one list of kdamonds, `kdamonds/0..nr_kdamonds`. Adding one means writing
//! `nr_kdamonds`, and the kernel (`damon_sysfs_kdamonds_add_dirs` in mm/damon/sysfs.c) then
//! removes every kdamond directory and makes fresh ones: while any kdamond runs it refuses the
//! write (EBUSY); while one is configured but stopped, the write deletes its owner's
//! configuration. So the only way that never disturbs anyone is to use DAMON where no kdamond
//! exists at all, and to remove ours afterwards. Monitoring processes also needs the `vaddr`
//! operations set (`CONFIG_DAMON_VADDR`), which a context's `avail_operations` lists.
//!
//! [`unavailable_reason`] reads (never writes) the interface and says why it cannot be used.
//! Driving a kdamond of our own (targets, a stat-only scheme, `update_schemes_tried_regions`)
//! is not implemented: no machine this project runs on has offered DAMON in a state it could be
//! tested in (docs/FORMATS.md, recorded traces); regions, once read, become trace accesses through
//! [`super::convert::damon_counts`].

use std::path::Path;

/// Where the DAMON sysfs interface is.
pub const ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// Why the recorder cannot use DAMON under `admin` (the sysfs directory), or `None` where it
/// could. Reads only.
pub fn unavailable_reason(admin: &Path) -> Option<String> {
    let kdamonds = admin.join("kdamonds");
    let nr = match std::fs::read_to_string(kdamonds.join("nr_kdamonds")) {
        Ok(s) => match s.trim().parse::<u32>() {
            Ok(n) => n,
            Err(_) => return Some(format!("{}/nr_kdamonds is not a number", kdamonds.display())),
        },
        Err(e) => return Some(format!("no DAMON sysfs interface ({}: {e})", admin.display())),
    };
    let mut why = Vec::new();
    // Any existing context lists the operations sets this kernel has.
    if let Some(ops) = (0..nr).find_map(|k| {
        std::fs::read_to_string(kdamonds.join(format!("{k}/contexts/0/avail_operations"))).ok()
    }) && !ops.split_whitespace().any(|o| o == "vaddr")
    {
        why.push(format!(
            "the kernel has no DAMON operations for processes (avail_operations: {}; \
             CONFIG_DAMON_VADDR is off)",
            ops.trim()
        ));
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
    } else if nr > 0 {
        why.push(format!(
            "{nr} kdamond(s) are configured by someone else: writing nr_kdamonds to add ours \
             would delete their configuration"
        ));
    } else {
        why.push("zmem does not drive a kdamond of its own yet".into());
    }
    Some(why.join("; "))
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
    fn a_missing_interface_says_so() {
        let d = tempfile::tempdir().unwrap();
        let why = unavailable_reason(&d.path().join("admin")).unwrap();
        assert!(why.starts_with("no DAMON sysfs interface"), "{why}");
    }
}
