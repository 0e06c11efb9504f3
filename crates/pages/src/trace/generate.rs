//! `zmem trace gen`: synthetic access traces with the three features replay studies need.
//!
//! - **Zipf popularity**: within a phase, the page of popularity rank `r` (1-based) is accessed
//!   with probability proportional to `1 / r^s`, so a few pages are hot and a long tail is cold;
//!   `s` near 1 matches measured page-access skew.
//! - **Phase changes**: the trace is cut into phases of equal length; each phase has its own
//!   working set (a random stride walk over the page ids, so sets of different phases overlap only
//!   by chance) and its own ranking, so yesterday's hot pages go cold and become candidates for
//!   idle recompression and writeback.
//! - **Idle periods**: accesses come in bursts (exponential gaps of mean `mean_gap_ns`); after each
//!   burst the clock jumps by an idle gap of 1-4 times `idle_ns`, which is what zram's idle
//!   marking and zswap's shrinker react to.
//! - **Page cache** (`file_pages` > 0): a share `file_fraction` of the accesses are reads of a
//!   file of `file_pages` pages, Zipf-ranked as the anonymous pages are, each phase over its
//!   own stride walk of the file's pages (all of them: a file's hot part moves too). A trace
//!   with no file pages draws nothing for them, so its seed gives the trace it always gave.
//!
//! Everything is drawn from one SplitMix64 stream, so a seed fixes the trace.

use super::{Access, Op, Trace};
use crate::PagesError;
use crate::prng::SplitMix64;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Page ids are below this.
    pub pages: u64,
    /// Number of accesses.
    pub accesses: u64,
    /// Pages in each phase's working set (at most `pages`).
    pub working_set: u64,
    /// Number of phases (at least 1).
    pub phases: u32,
    /// Zipf exponent `s` (> 0).
    pub zipf: f64,
    /// Probability that an access is a write.
    pub write_fraction: f64,
    /// Mean time between accesses within a burst.
    pub mean_gap_ns: u64,
    /// Bursts per phase (idle periods separate them).
    pub bursts_per_phase: u32,
    /// Base length of an idle period.
    pub idle_ns: u64,
    /// The seed.
    pub seed: u64,
    /// Pages of the trace's file (its page cache); 0 for none.
    pub file_pages: u64,
    /// Probability that an access is a file read (with `file_pages` > 0).
    pub file_fraction: f64,
}

/// One phase's ranking over a space of pages: rank `r` is page `offset + r * stride` (mod n),
/// the stride coprime to n.
struct Walk {
    offset: u64,
    stride: u64,
    n: u64,
}

impl Walk {
    fn draw(rng: &mut SplitMix64, n: u64) -> Self {
        let offset = rng.below(n);
        let stride = loop {
            let s = rng.range(1, n.max(2) - 1).max(1);
            if gcd(s, n) == 1 {
                break s;
            }
        };
        Self { offset, stride, n }
    }

    fn page(&self, rank: u64) -> u32 {
        ((u128::from(self.offset) + u128::from(rank) * u128::from(self.stride))
            % u128::from(self.n)) as u32
    }
}

fn rank(rng: &mut SplitMix64, cdf: &[f64]) -> u64 {
    let u = rng.unit();
    cdf.partition_point(|&c| c <= u).min(cdf.len() - 1) as u64
}

impl Default for Options {
    fn default() -> Self {
        Self {
            pages: 65536,
            accesses: 1_000_000,
            working_set: 16384,
            phases: 4,
            zipf: 0.99,
            write_fraction: 0.3,
            mean_gap_ns: 10_000,
            bursts_per_phase: 4,
            idle_ns: 2_000_000_000,
            seed: 0,
            file_pages: 0,
            file_fraction: 0.2,
        }
    }
}

/// Generates a trace.
pub fn generate(o: &Options) -> Result<Trace, PagesError> {
    let invalid = |m: &str| Err(PagesError::Invalid(m.into()));
    if o.pages == 0 || o.pages > u64::from(u32::MAX) + 1 {
        return invalid("pages must be in 1..=2^32");
    }
    if o.working_set == 0 || o.working_set > o.pages {
        return invalid("the working set must be 1..=pages");
    }
    if o.working_set > 1 << 26 {
        return invalid("the working set is limited to 2^26 pages");
    }
    if o.phases == 0 || o.bursts_per_phase == 0 {
        return invalid("phases and bursts per phase must be at least 1");
    }
    if !(o.zipf > 0.0 && o.zipf.is_finite()) {
        return invalid("the Zipf exponent must be positive");
    }
    if !(0.0..=1.0).contains(&o.write_fraction) {
        return invalid("the write fraction must be in 0..=1");
    }
    if o.file_pages > u64::from(u32::MAX) + 1 || o.file_pages > 1 << 26 {
        return invalid("file pages are limited to 2^26");
    }
    if !(0.0..=1.0).contains(&o.file_fraction) {
        return invalid("the file fraction must be in 0..=1");
    }
    let mut rng = SplitMix64::new(o.seed);
    let cdf = zipf_cdf(o.working_set, o.zipf);
    let file_cdf = zipf_cdf(o.file_pages, o.zipf);
    let mut accesses = Vec::with_capacity(o.accesses.min(1 << 24) as usize);
    let mut now = 0u64;
    let phases = u64::from(o.phases);
    let bursts = u64::from(o.bursts_per_phase);
    for phase in 0..phases {
        let begin = o.accesses * phase / phases;
        let end = o.accesses * (phase + 1) / phases;
        // The working set: ranks map to ids by a stride walk with a stride coprime to `pages`.
        let walk = Walk::draw(&mut rng, o.pages);
        let file_walk = (o.file_pages > 0).then(|| Walk::draw(&mut rng, o.file_pages));
        for burst in 0..bursts {
            let b_begin = begin + (end - begin) * burst / bursts;
            let b_end = begin + (end - begin) * (burst + 1) / bursts;
            for _ in b_begin..b_end {
                let (page, op) = match &file_walk {
                    Some(f) if rng.chance(o.file_fraction) => {
                        (f.page(rank(&mut rng, &file_cdf)), Op::FileRead)
                    }
                    _ => {
                        let page = walk.page(rank(&mut rng, &cdf));
                        (page, if rng.chance(o.write_fraction) { Op::Write } else { Op::Read })
                    }
                };
                let gap = (-(1.0 - rng.unit()).ln() * o.mean_gap_ns as f64) as u64;
                now = now.saturating_add(gap);
                accesses.push(Access { time_ns: now, page, op });
            }
            now = now.saturating_add(o.idle_ns.saturating_mul(rng.range(1, 4)));
        }
    }
    Ok(Trace { page_count: o.pages, file_pages: o.file_pages, accesses })
}

/// Cumulative Zipf probabilities of ranks 1..=n (last entry 1).
fn zipf_cdf(n: u64, s: f64) -> Vec<f64> {
    let mut cdf: Vec<f64> = Vec::with_capacity(n as usize);
    let mut sum = 0.0;
    for r in 1..=n {
        sum += (r as f64).powf(-s);
        cdf.push(sum);
    }
    for c in &mut cdf {
        *c /= sum;
    }
    cdf
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
