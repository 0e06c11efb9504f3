//! Whether a kdamond already running pages out anonymous memory: read from DAMON's sysfs
//! interface (usage.rst, `kdamonds/<N>/contexts/<N>/schemes/<N>/`), never written. The lab
//! asks before it adds proactive reclaim of its own: a machine whose kdamond already moves idle
//! anonymous memory out needs none.
//!
//! A scheme pages a page out when its action is `pageout` and its filters let the page pass.
//! 6.18 mm/damon/paddr.c `damos_pa_filter_out()` walks the operations-layer filters in order:
//! the first whose type matches the folio as its `matching` asks decides (`allow` passes, else
//! the page is filtered out); a page no filter matched is rejected where the last filter
//! allows (mm/damon/core.c `damos_filters_default_reject()`: the default is the opposite of
//! the last filter). The page asked about is an ordinary process's heap page: anonymous and
//! mapped. Filters whose answer depends on the page itself (`memcg`, `young`, `active`,
//! `hugepage_size`, `addr`, `target`) make the answer "some" rather than "all".

use std::path::Path;

/// A running scheme that pages out anonymous memory.
#[derive(Debug, Clone, PartialEq)]
pub struct AnonPageout {
    pub kdamond: u32,
    /// The context's operations set (`paddr`, `vaddr`, ...).
    pub operations: String,
    /// Its `access_pattern/age/min` in seconds (aggregation intervals times `aggr_us`).
    pub min_age_secs: f64,
    /// Every anonymous page passes its filters, or only some (filters on the page's cgroup,
    /// age, address... come first).
    pub all: bool,
}

impl AnonPageout {
    /// One line for the user.
    pub fn describe(&self) -> String {
        format!(
            "kdamond {} ({}) pages out {} anonymous memory idle for at least {:.0} s",
            self.kdamond,
            self.operations,
            if self.all { "all" } else { "some" },
            self.min_age_secs
        )
    }
}

/// One filter: its type, `matching` and `allow`.
#[derive(Debug, Clone, PartialEq)]
struct Filter {
    kind: String,
    matching: bool,
    allow: bool,
}

/// What a filter says of a mapped anonymous page: `Some(matched)`, or `None` where that
/// depends on the page.
fn matches_anon(f: &Filter) -> Option<bool> {
    let is = match f.kind.as_str() {
        "anon" => true,
        "unmapped" => false,
        _ => return None,
    };
    Some(is == f.matching)
}

/// How many mapped anonymous pages pass a scheme's filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    All,
    Some,
    None,
}

/// Whether a mapped anonymous page passes `filters`, in the kernel's order (module doc).
/// Filters that depend on the page decide for some pages before the ones that do not.
fn anon_passes(filters: &[Filter]) -> Pass {
    let (mut some_allowed, mut some_rejected) = (false, false);
    let end = |passes: bool, allowed: bool, rejected: bool| match (passes, allowed, rejected) {
        (true, _, false) => Pass::All,
        (false, false, _) => Pass::None,
        _ => Pass::Some,
    };
    for f in filters {
        match matches_anon(f) {
            Some(true) => return end(f.allow, some_allowed, some_rejected),
            Some(false) => {}
            None if f.allow => some_allowed = true,
            None => some_rejected = true,
        }
    }
    // No filter matched: rejected where the last filter allows.
    let passes = !filters.last().is_some_and(|f| f.allow);
    end(passes, some_allowed, some_rejected)
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// The numbered subdirectories of `dir` (`0`, `1`, ...), in order.
fn numbered(dir: &Path) -> Vec<std::path::PathBuf> {
    let name = dir.file_name().and_then(|f| f.to_str()).unwrap_or("");
    // Every filter directory counts its entries in `nr_filters`.
    let nr = if name.ends_with("filters") { "nr_filters".into() } else { format!("nr_{name}") };
    let n: u32 = read(&dir.join(nr)).and_then(|n| n.parse().ok()).unwrap_or(0);
    (0..n).map(|i| dir.join(i.to_string())).filter(|d| d.is_dir()).collect()
}

/// The filters of a scheme, from every filter directory 6.18 has (`filters`, `core_filters`,
/// `ops_filters`); core filters (`addr`, `target`) make the answer depend on the page too.
fn filters(scheme: &Path) -> Vec<Filter> {
    let mut out = Vec::new();
    for group in ["core_filters", "filters", "ops_filters"] {
        for f in numbered(&scheme.join(group)) {
            let kind = read(&f.join("type")).unwrap_or_default();
            let yes = |name: &str| read(&f.join(name)).is_some_and(|v| v == "Y" || v == "1");
            // Before `allow` existed (6.14), a matching filter always filtered out.
            let allow = f.join("allow").exists() && yes("allow");
            out.push(Filter { kind, matching: yes("matching"), allow });
        }
    }
    out
}

/// The running schemes under `admin` that page out anonymous memory (all of it or some).
/// No DAMON interface, or no kdamond: none.
pub fn anon_pageout(admin: &Path) -> Vec<AnonPageout> {
    let mut out = Vec::new();
    for (k, kd) in numbered(&admin.join("kdamonds")).into_iter().enumerate() {
        if read(&kd.join("state")).as_deref() != Some("on") {
            continue;
        }
        for ctx in numbered(&kd.join("contexts")) {
            let operations = read(&ctx.join("operations")).unwrap_or_default();
            let aggr_us: f64 = read(&ctx.join("monitoring_attrs/intervals/aggr_us"))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            for s in numbered(&ctx.join("schemes")) {
                if read(&s.join("action")).as_deref() != Some("pageout") {
                    continue;
                }
                let all = match anon_passes(&filters(&s)) {
                    Pass::All => true,
                    Pass::Some => false,
                    Pass::None => continue,
                };
                let age: f64 = read(&s.join("access_pattern/age/min"))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0.0);
                out.push(AnonPageout {
                    kdamond: k as u32,
                    operations: operations.clone(),
                    min_age_secs: age * aggr_us / 1e6,
                    all,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(kind: &str, matching: bool, allow: bool) -> Filter {
        Filter { kind: kind.into(), matching, allow }
    }

    /// This machine's boot kdamond: anon rejected first, unmapped allowed: no anonymous page.
    #[test]
    fn an_anon_reject_filter_keeps_every_anonymous_page() {
        let boot = [f("anon", true, false), f("unmapped", true, true)];
        assert_eq!(anon_passes(&boot), Pass::None);
        // Only unmapped pages allowed: a mapped anonymous page matches nothing and is
        // rejected by default (the last filter allows).
        assert_eq!(anon_passes(&[f("unmapped", true, true)]), Pass::None);
        // No filter: every page.
        assert_eq!(anon_passes(&[]), Pass::All);
        // Anonymous allowed; or file pages rejected (a non-matching anon filter), default pass.
        assert_eq!(anon_passes(&[f("anon", true, true)]), Pass::All);
        assert_eq!(anon_passes(&[f("anon", false, false)]), Pass::All);
    }

    /// A filter on the page's cgroup or age first: some pages only.
    #[test]
    fn page_dependent_filters_make_it_some() {
        assert_eq!(anon_passes(&[f("memcg", true, true), f("anon", true, false)]), Pass::Some);
        assert_eq!(anon_passes(&[f("young", true, false)]), Pass::Some);
        assert_eq!(anon_passes(&[f("young", true, false), f("anon", true, false)]), Pass::None);
        assert_eq!(anon_passes(&[f("memcg", true, true)]), Pass::Some);
    }

    fn put(root: &Path, rel: &str, v: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, v).expect("write");
    }

    /// A sysfs tree like this machine's, then one whose scheme pages out anonymous memory.
    #[test]
    fn reads_running_schemes_from_sysfs() {
        let d = tempfile::tempdir().expect("tempdir");
        let r = d.path();
        let s = "kdamonds/0/contexts/0/schemes/0";
        for (k, v) in [
            ("kdamonds/nr_kdamonds", "1"),
            ("kdamonds/0/state", "on"),
            ("kdamonds/0/contexts/nr_contexts", "1"),
            ("kdamonds/0/contexts/0/operations", "paddr"),
            ("kdamonds/0/contexts/0/monitoring_attrs/intervals/aggr_us", "5000000"),
            ("kdamonds/0/contexts/0/schemes/nr_schemes", "1"),
            (&format!("{s}/action"), "pageout"),
            (&format!("{s}/access_pattern/age/min"), "12"),
            (&format!("{s}/filters/nr_filters"), "0"),
            (&format!("{s}/ops_filters/nr_filters"), "2"),
            (&format!("{s}/ops_filters/0/type"), "anon"),
            (&format!("{s}/ops_filters/0/matching"), "Y"),
            (&format!("{s}/ops_filters/0/allow"), "N"),
            (&format!("{s}/ops_filters/1/type"), "unmapped"),
            (&format!("{s}/ops_filters/1/matching"), "Y"),
            (&format!("{s}/ops_filters/1/allow"), "Y"),
        ] {
            put(r, k, v);
        }
        assert!(anon_pageout(r).is_empty());
        put(r, &format!("{s}/ops_filters/nr_filters"), "0");
        let got = anon_pageout(r);
        assert_eq!(got.len(), 1);
        assert!(got[0].all);
        assert!((got[0].min_age_secs - 60.0).abs() < 1e-9, "{got:?}");
        put(r, "kdamonds/0/state", "off");
        assert!(anon_pageout(r).is_empty(), "a stopped kdamond pages out nothing");
        assert!(anon_pageout(&r.join("absent")).is_empty());
    }
}
