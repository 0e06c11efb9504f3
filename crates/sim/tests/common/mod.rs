//! The replay tests' page sets and traces.

use zmem_pages::prng::SplitMix64;
use zmem_sim::replay::{Access, ReplayConfig, ReplayResult};
use zmem_zswap::ZswapParams;

pub const PS: usize = 4096;

/// Pages of five kinds: zero, text-like, half noise, noise, small noise.
pub fn pages(n: usize, seed: u64) -> Vec<u8> {
    let mut r = SplitMix64::new(seed);
    let mut v = vec![0u8; n * PS];
    for (i, p) in v.chunks_mut(PS).enumerate() {
        let noisy = match i % 5 {
            0 => 0,
            1 => {
                for (j, b) in p.iter_mut().enumerate() {
                    *b = b"the quick brown fox "[(j + i) % 20];
                }
                0
            }
            2 => PS / 2 + 200,
            3 => PS,
            _ => 500,
        };
        for b in &mut p[..noisy] {
            *b = r.next_u64() as u8;
        }
    }
    v
}

/// Skewed accesses: half of them to the first eighth of the pages.
pub fn trace(n: u64, len: usize, seed: u64) -> Vec<Access> {
    let mut r = SplitMix64::new(seed);
    (0..len)
        .map(|k| {
            let x = r.next_u64();
            let page = if x & 1 == 0 { (x >> 8) % (n / 8).max(1) } else { (x >> 8) % n };
            Access { page, write: x & 2 != 0, file: false, time_ns: k as u64 * 1000 }
        })
        .collect()
}

/// Everything but the timings.
pub fn counts(r: &ReplayResult) -> String {
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {:?} {} {} {} {} {}",
        r.reads,
        r.writes,
        r.first_touches,
        r.swap_outs,
        r.zero_swap_outs,
        r.swap_ins,
        r.stored,
        r.rejected,
        r.kept_in_ram,
        r.max_pool_bytes,
        r.disk_reads,
        r.disk_writes,
        r.store_hist.count + r.load_hist.count,
        r.counters,
        r.verified,
        r.swap_ra,
        r.swap_ra_hit,
        r.ra_reclaimed,
        r.ra_dropped
    )
}

/// The replay's default zswap parameters with a pool of `max_pool_percent`.
pub fn zswap_pool(max_pool_percent: u32) -> ZswapParams {
    ZswapParams { max_pool_percent, ..ReplayConfig::default().zswap }
}
