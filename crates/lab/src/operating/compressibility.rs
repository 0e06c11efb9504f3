//! A memory cgroup's own compressibility: what its reclaim moves out is its processes' pages,
//! not the machine's mix, so where the pages are a capture of processes (each page's pid
//! known) the sampled pages of the cgroup's processes are compared with every sampled page,
//! by each compressor's length for each page (the page facts, [`PageFacts`]). zram stores a same-filled page in no
//! bytes and a page that compresses to the huge class or more whole
//! (drivers/block/zram/zram_drv.c `zram_write_page()`), so the comparison is on the bytes it
//! would store; the pool's fragmentation is taken to be the same for both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::facts::PageFacts;

/// Fewer sampled pages of a cgroup than this: its pages are too few to tell its
/// compressibility from the sample's, and the sample's is used.
pub const MIN_PAGES: u64 = 64;

/// What the sample tells of the pages a point moves out: each cgroup's own, and the cold
/// bytes' (per compressor, their pool per page over every sampled page's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Own {
    pub cgroups: Vec<CgroupPages>,
    pub cold: BTreeMap<String, f64>,
}

/// One cgroup's sampled pages and how they compress against every sampled page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupPages {
    pub path: String,
    /// Sampled pages whose process is in it (or a cgroup below it), of every sampled page.
    pub sampled_pages: u64,
    pub of_sampled_pages: u64,
    /// Per compressor: the bytes zram would store per page of the cgroup's, over the same of
    /// every sampled page (empty with fewer than [`MIN_PAGES`]).
    pub pool_factor: BTreeMap<String, f64>,
}

/// The processes of the cgroup at `path` (as a user names it) and every cgroup below it.
pub fn processes(path: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    zmem_kernel::cgroups::walk(Path::new(path), &mut |d| {
        pids.extend(zmem_kernel::capture::cgroup_pids(d).unwrap_or_default())
    });
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Per compressor, what each sampled page would take in zram: computed once, read by the
/// cgroups' and the cold bytes' factors alike.
pub type Lengths = Vec<(String, Vec<u64>)>;

/// [`Lengths`] of the pages `facts` describes for each of `algos` (what zram stores of each:
/// [`PageFacts::stored`]).
pub fn lengths(facts: &PageFacts, algos: &[&str]) -> Result<Lengths, LabError> {
    algos.iter().map(|a| Ok((a.to_string(), facts.stored(a)?))).collect()
}

/// For each cgroup of `cgroups` (its path and processes), its sampled pages (`page_pids[i]` is
/// page i's process) and, with enough of them, its pool factor for each compressor of `lens`.
pub fn measure(
    lens: &Lengths,
    page_pids: &[u32],
    cgroups: &[(String, Vec<u32>)],
) -> Vec<CgroupPages> {
    cgroups
        .iter()
        .map(|(path, pids)| {
            let m: BTreeSet<u32> = pids.iter().copied().collect();
            let weights: Vec<f64> =
                page_pids.iter().map(|p| if m.contains(p) { 1.0 } else { 0.0 }).collect();
            let sampled_pages = weights.iter().filter(|&&w| w > 0.0).count() as u64;
            let pool_factor =
                if sampled_pages < MIN_PAGES { BTreeMap::new() } else { factors(lens, &weights) };
            CgroupPages {
                path: path.clone(),
                sampled_pages,
                of_sampled_pages: page_pids.len() as u64,
                pool_factor,
            }
        })
        .collect()
}

/// Per compressor of `lens`, the factor of pages weighted by `weights` ([`factor`]).
fn factors(lens: &Lengths, weights: &[f64]) -> BTreeMap<String, f64> {
    lens.iter().filter_map(|(a, l)| Some((a.clone(), factor(l, weights)?))).collect()
}

/// The bytes stored per page of pages weighted by `weights`, over every page's; none where
/// either is 0 (nothing stored, or no weight).
fn factor(lens: &[u64], weights: &[f64]) -> Option<f64> {
    let all = lens.iter().sum::<u64>() as f64 / lens.len().max(1) as f64;
    let w: f64 = weights.iter().sum();
    let own: f64 = lens.iter().zip(weights).map(|(&l, &w)| l as f64 * w).sum();
    (all > 0.0 && w > 0.0).then(|| own / w / all)
}

/// The cold bytes' compressibility, told apart by process: each sampled page weighted by its
/// process's share of anonymous memory idle at the cold age (`cold_share(pid)`), per
/// compressor, over every sampled page's (1: cold memory compresses as the sample does).
pub fn cold_weighted(
    lens: &Lengths,
    page_pids: &[u32],
    cold_share: impl Fn(u32) -> f64,
) -> BTreeMap<String, f64> {
    let weights: Vec<f64> = page_pids.iter().map(|&p| cold_share(p)).collect();
    factors(lens, &weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half the pages zeros (stored in nothing) from process 1, half text from process 2: the
    /// cgroup of process 2 stores twice the sample's bytes per page, that of 1 none.
    #[test]
    fn a_cgroup_of_heavier_pages_has_a_larger_factor() {
        let ps = 4096;
        let n = 2 * MIN_PAGES as usize;
        let mut pages = vec![0u8; n * ps];
        let mut pids = vec![1u32; n];
        for i in (0..n).step_by(2) {
            for (j, b) in pages[i * ps..(i + 1) * ps].iter_mut().enumerate() {
                *b = b"the quick brown fox jumps over the lazy dog "[(j * 7 + i) % 44];
            }
            pids[i] = 2;
        }
        let cgroups = vec![
            ("/two".to_string(), vec![2]),
            ("/one".into(), vec![1]),
            ("/none".into(), vec![9]),
        ];
        let facts = PageFacts::of_pages(&pages, ps, &["lz4", "zstd"]).unwrap();
        let lens = lengths(&facts, &["lz4", "zstd"]).unwrap();
        let m = measure(&lens, &pids, &cgroups);
        assert_eq!(
            m.iter().map(|c| c.sampled_pages).collect::<Vec<_>>(),
            [n as u64 / 2, n as u64 / 2, 0]
        );
        for algo in ["lz4", "zstd"] {
            assert!((m[0].pool_factor[algo] - 2.0).abs() < 1e-9, "{algo}: {:?}", m[0]);
            assert_eq!(m[1].pool_factor[algo], 0.0);
        }
        assert!(m[2].pool_factor.is_empty(), "no page of its own: the sample's");
        // Process 2 all cold, process 1 a third: the cold bytes are three quarters text.
        let share = |p: u32| if p == 2 { 1.0 } else { 1.0 / 3.0 };
        let w = cold_weighted(&lens, &pids, share);
        assert!((w["lz4"] - 1.5).abs() < 1e-9, "{w:?}");
    }
}
