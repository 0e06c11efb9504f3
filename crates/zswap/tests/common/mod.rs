//! Pages and builders shared by the integration tests.

#![allow(dead_code)]

use std::sync::Arc;

use zmem_pages::prng::SplitMix64;
use zmem_zswap::{Incompressible, SwapFile, SwapLayer, Zswap, ZswapConfig, ZswapParams};

pub const PS: usize = 4096;

/// `random` bytes of noise, then zeros: compresses to a little more than `random` bytes.
pub fn page_with_noise(seed: u64, random: usize) -> Vec<u8> {
    let mut p = vec![0u8; PS];
    SplitMix64::new(seed).fill(&mut p[..random]);
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
        module: ZswapParams {
            max_pool_percent: max_pct,
            accept_threshold_percent: accept_pct,
            ..ZswapParams::default()
        },
        incompressible: Incompressible::StoreAsIs,
        ..ZswapConfig::default()
    }
}

pub fn build(cfg: &ZswapConfig, slots: u64) -> Zswap {
    Zswap::new(cfg, Arc::new(SwapFile::in_memory(PS, slots))).unwrap()
}

/// zswap in front of an in-memory swap file, behind the swap layer.
pub fn build_layer(cfg: &ZswapConfig, slots: u64) -> SwapLayer {
    SwapLayer::with_zswap(build(cfg, slots))
}

/// A page of one of three kinds by `kind` (0: small, 1: half a page of noise, else noise).
pub fn page(kind: u8, seed: u64) -> Vec<u8> {
    match kind {
        0 => small(seed),
        1 => half_page(seed),
        _ => noise(seed),
    }
}
