//! What could identify a process or a service in findings, replaced consistently: the judge
//! compares process ids and cgroup paths only with each other (equal, or one below another),
//! so a one-to-one renaming that keeps those relations leaves the judgement as it was.

use std::collections::BTreeMap;

use super::Findings;

/// Every process id becomes its order of first appearance (from 1; 0, "no process", stays).
pub(super) fn renumber_pids(f: &mut Findings) {
    let mut ids: BTreeMap<u32, u32> = BTreeMap::new();
    let mut id = |pid: &mut u32| {
        if *pid != 0 {
            let next = ids.len() as u32 + 1;
            *pid = *ids.entry(*pid).or_insert(next);
        }
    };
    let op = &mut f.operating;
    op.page_pids.iter_mut().flatten().for_each(&mut id);
    op.cgroup_pids.iter_mut().flat_map(|(_, p)| p.iter_mut()).for_each(&mut id);
    if let Some(c) = op.cold.as_mut() {
        c.per_process.iter_mut().for_each(|p| id(&mut p.pid));
        // Each reason names the process it is about.
        let n = c.skipped.reasons.len();
        c.skipped.reasons = if n == 0 { Vec::new() } else { vec![format!("{n} left out")] };
    }
}

/// Cgroup paths renamed component by component (`/system.slice/db.service` becomes
/// `/c1/c2`: one name per component, so paths equal before are equal after and a path below
/// another stays below it); process names and the source's and trace's own words left out.
pub(super) fn rename(f: &mut Findings) {
    let mut names = Components::default();
    let op = &mut f.operating;
    op.cgroup_limits.iter_mut().for_each(|(p, _)| names.rename(p));
    op.cgroup_pids.iter_mut().for_each(|(p, _)| names.rename(p));
    if let Some(c) = op.cold.as_mut() {
        for p in &mut c.per_process {
            p.comm = "process".into();
            p.memory_cgroup.iter_mut().for_each(|g| names.rename(g));
        }
    }
    if let Some(pr) = f.pressure.as_mut() {
        pr.now.cgroups.iter_mut().for_each(|c| names.rename(&mut c.path));
        // A note about a cgroup hierarchy names where it stopped.
        for note in pr.now.notes.iter_mut().filter(|n| n.starts_with("cgroup hierarchy at ")) {
            *note = "a cgroup hierarchy's reading stopped early (its path left out)".into();
        }
    }
    if let Some(z) = f.zswap.as_mut() {
        z.live.state.cgroups.iter_mut().for_each(|c| names.rename(&mut c.path));
        let after = z.after.iter_mut().flat_map(|s| s.cgroups.iter_mut());
        after.for_each(|c| names.rename(&mut c.path));
    }
    let s = &mut f.source;
    s.detail = "where the pages came from is left out (zmem evidence without --names)".into();
    if s.fallback_reason.is_some() {
        s.fallback_reason = Some("left out (zmem evidence without --names)".into());
    }
    if f.trace.kind == "file" {
        f.trace.detail = "a trace file, named only with --names".into();
    }
    f.host.retain(|k, _| k == "host" || k.starts_with("label."));
}

/// One neutral name per path component, in order of first appearance.
#[derive(Default)]
struct Components(BTreeMap<String, String>);

impl Components {
    fn rename(&mut self, path: &mut String) {
        let renamed: Vec<String> = path
            .split('/')
            .map(|part| {
                if part.is_empty() {
                    return String::new();
                }
                let next = format!("c{}", self.0.len() + 1);
                self.0.entry(part.to_string()).or_insert(next).clone()
            })
            .collect();
        *path = renamed.join("/");
    }
}
