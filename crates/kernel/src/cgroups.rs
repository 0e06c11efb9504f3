//! Where the memory cgroups are, and the one walk over them that `zswap_state` and `pressure`
//! share: the v2 hierarchy (at `sys/fs/cgroup`, or `sys/fs/cgroup/unified` beside v1) where its
//! root offers the memory controller, and the v1 `memory` hierarchy. Reads only.

use std::path::{Path, PathBuf};

/// Memory cgroups visited at most per hierarchy, so a huge tree cannot stall a reader.
pub const MAX_CGROUPS: usize = 4096;

/// The two places a cgroup v2 hierarchy is mounted (alone, or beside v1 as systemd's hybrid).
pub const V2_ROOTS: [&str; 2] = ["sys/fs/cgroup", "sys/fs/cgroup/unified"];

/// The v1 memory hierarchy's usual mount point.
pub const V1_MEMORY: &str = "sys/fs/cgroup/memory";

/// A cgroup v2 hierarchy under a root, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V2Root {
    /// It offers the memory controller: walk it.
    Memory(PathBuf),
    /// It exists but offers no memory controller (its controllers listed).
    NoMemory { rel: &'static str, controllers: String },
}

/// The v2 hierarchies under `root` (none when cgroup v2 is not mounted in either place).
pub fn v2_roots(root: &Path) -> Vec<V2Root> {
    V2_ROOTS
        .iter()
        .filter_map(|rel| {
            let dir = root.join(rel);
            let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
            Some(if controllers.split_whitespace().any(|c| c == "memory") {
                V2Root::Memory(dir)
            } else {
                V2Root::NoMemory { rel, controllers: controllers.trim().to_string() }
            })
        })
        .collect()
}

/// Visits `dir` and every cgroup below it, depth first in name order, at most `MAX_CGROUPS`
/// in all; returns whether the walk stopped at that bound. Symbolic links are not followed: a
/// cgroup's children are real directories.
pub fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) -> bool {
    let mut visited = 0usize;
    walk_from(dir, &mut visited, visit);
    visited >= MAX_CGROUPS
}

fn walk_from(dir: &Path, visited: &mut usize, visit: &mut dyn FnMut(&Path)) {
    if *visited >= MAX_CGROUPS {
        return;
    }
    *visited += 1;
    visit(dir);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        walk_from(&child, visited, visit);
    }
}

/// The note for a walk of `dir` that [`walk`] stopped at its bound.
pub fn stopped(root: &Path, dir: &Path) -> String {
    format!("cgroup hierarchy at {}: stopped after {MAX_CGROUPS} cgroups", shown(root, dir))
}

/// `dir` as a path from `/`, whatever root it was read under (for reports).
pub fn shown(root: &Path, dir: &Path) -> String {
    format!("/{}", dir.strip_prefix(root).unwrap_or(dir).display())
}

/// Which hierarchy the memory controller is on under `root`: 1 where the v1 `memory`
/// hierarchy is mounted (it then owns the controller: a controller is on one hierarchy only),
/// else 2 where a v2 hierarchy offers it; none without either.
pub fn memory_controller_version(root: &Path) -> Option<u8> {
    if root.join(V1_MEMORY).join("memory.limit_in_bytes").is_file() {
        return Some(1);
    }
    v2_roots(root).iter().any(|r| matches!(r, V2Root::Memory(_))).then_some(2)
}

/// The memory cgroup of a process from its `/proc/PID/cgroup` text, as the pressure reading
/// names cgroups (`/sys/fs/cgroup/memory/app`): v1's `memory` line under [`V1_MEMORY`], else
/// the v2 line (`0::/app`) under the v2 hierarchy that offers the memory controller.
pub fn memory_cgroup(root: &Path, proc_cgroup: &str) -> Option<String> {
    let mut v2 = None;
    for line in proc_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            return Some(shown(root, &root.join(V1_MEMORY).join(path.trim_start_matches('/'))));
        }
        if controllers.is_empty() {
            v2 = Some(path);
        }
    }
    let dir = v2_memory_root(root)?;
    Some(shown(root, &dir.join(v2?.trim_start_matches('/'))))
}

/// The v2 hierarchy under `root` that offers the memory controller, if one does.
pub fn v2_memory_root(root: &Path) -> Option<PathBuf> {
    v2_roots(root).into_iter().find_map(|r| match r {
        V2Root::Memory(d) => Some(d),
        V2Root::NoMemory { .. } => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hierarchies_and_walks_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        assert!(v2_roots(r).is_empty());
        std::fs::create_dir_all(r.join("sys/fs/cgroup/unified/b.slice/x")).unwrap();
        std::fs::create_dir_all(r.join("sys/fs/cgroup/unified/a.slice")).unwrap();
        std::fs::write(r.join("sys/fs/cgroup/cgroup.controllers"), "cpu pids\n").unwrap();
        std::fs::write(r.join("sys/fs/cgroup/unified/cgroup.controllers"), "memory io\n").unwrap();
        let found = v2_roots(r);
        assert_eq!(
            found,
            vec![
                V2Root::NoMemory { rel: "sys/fs/cgroup", controllers: "cpu pids".into() },
                V2Root::Memory(r.join("sys/fs/cgroup/unified")),
            ]
        );
        let mut seen = Vec::new();
        let capped = walk(&r.join("sys/fs/cgroup/unified"), &mut |d| seen.push(shown(r, d)));
        assert!(!capped);
        assert_eq!(
            seen,
            [
                "/sys/fs/cgroup/unified",
                "/sys/fs/cgroup/unified/a.slice",
                "/sys/fs/cgroup/unified/b.slice",
                "/sys/fs/cgroup/unified/b.slice/x",
            ]
        );
    }

    #[test]
    fn the_memory_controller_is_on_v1_where_mounted_else_v2() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        assert_eq!(memory_controller_version(r), None);
        std::fs::create_dir_all(r.join("sys/fs/cgroup")).unwrap();
        std::fs::write(r.join("sys/fs/cgroup/cgroup.controllers"), "cpu memory\n").unwrap();
        assert_eq!(memory_controller_version(r), Some(2));
        std::fs::create_dir_all(r.join(V1_MEMORY)).unwrap();
        std::fs::write(r.join(V1_MEMORY).join("memory.limit_in_bytes"), "1\n").unwrap();
        assert_eq!(memory_controller_version(r), Some(1));
    }

    #[test]
    fn a_process_memory_cgroup_is_named_as_the_pressure_reading_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let hybrid = "12:memory:/lab\n1:name=systemd:/user.slice\n0::/user.slice\n";
        assert_eq!(memory_cgroup(r, hybrid).as_deref(), Some("/sys/fs/cgroup/memory/lab"));
        // v2 only: under the hierarchy with the memory controller; none without one.
        assert_eq!(memory_cgroup(r, "0::/app.slice\n"), None);
        std::fs::create_dir_all(r.join("sys/fs/cgroup")).unwrap();
        std::fs::write(r.join("sys/fs/cgroup/cgroup.controllers"), "cpu memory\n").unwrap();
        assert_eq!(
            memory_cgroup(r, "0::/app.slice\n").as_deref(),
            Some("/sys/fs/cgroup/app.slice")
        );
        assert_eq!(memory_cgroup(r, "0::/\n").as_deref(), Some("/sys/fs/cgroup"));
        assert_eq!(memory_cgroup(r, "garbage"), None);
    }
}
