//! Pages and builders shared by the integration tests.

#![allow(dead_code)]

use std::sync::Arc;

use zmem_zswap::{Incompressible, SwapFile, Zswap, ZswapConfig};

pub const PS: usize = 4096;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// `random` bytes of noise, then zeros: compresses to a little more than `random` bytes.
pub fn page_with_noise(seed: u64, random: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut p = vec![0u8; PS];
    for b in &mut p[..random] {
        *b = xorshift(&mut s) as u8;
    }
    p
}

/// Compresses to a little over half a page: zbud keeps one such object per page, so the pool's
/// page count equals its entry count.
pub fn half_page(seed: u64) -> Vec<u8> {
    page_with_noise(seed, 2200)
}

/// Does not compress.
pub fn noise(seed: u64) -> Vec<u8> {
    page_with_noise(seed, PS)
}

/// Compresses well.
pub fn small(seed: u64) -> Vec<u8> {
    page_with_noise(seed, 300)
}

pub fn config(zpool: &str, ram_pages: u64, max_pct: u32, accept_pct: u32) -> ZswapConfig {
    ZswapConfig {
        zpool: zpool.into(),
        total_ram_pages: ram_pages,
        max_pool_percent: max_pct,
        accept_threshold_percent: accept_pct,
        incompressible: Incompressible::StoreAsIs,
        ..ZswapConfig::default()
    }
}

pub fn build(cfg: &ZswapConfig, slots: u64) -> Zswap {
    Zswap::new(cfg, Arc::new(SwapFile::in_memory(PS, slots))).unwrap()
}
