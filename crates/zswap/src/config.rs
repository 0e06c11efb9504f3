//! What a zswap instance is built with: the five module parameters of 6.18 plus what the kernel
//! takes from elsewhere (RAM size, page size, the memcg writeback switch) and the choices older
//! kernels made differently (allocator, incompressible pages).

use zmem_comp::Params;

/// What happens to a page that does not compress below a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incompressible {
    /// 6.18+: stored uncompressed (object length = page size, counted in
    /// `stored_incompressible_pages`) so it keeps its place in the LRU and writeback order.
    /// Only while writeback is allowed; otherwise rejected as in 6.18.
    StoreAsIs,
    /// Before 6.18: rejected (`reject_compress_poor`), the page goes to the swap device.
    Reject,
}

/// Configuration of a [`crate::Zswap`].
#[derive(Debug, Clone)]
pub struct ZswapConfig {
    /// 4096, 16384 or 65536.
    pub page_size: usize,
    /// `compressor`: any algorithm of the zmem-comp registry (kernel default `lzo`).
    pub compressor: String,
    /// Compressor parameters (zswap has no knob for them; the algorithm's defaults apply).
    pub params: Params,
    /// Allocator of `zmem_pool::allocators()` (6.18 has only zsmalloc; zbud and z3fold are the
    /// zpool choices of older kernels).
    pub zpool: String,
    /// zsmalloc chain size.
    pub chain_size: usize,
    /// `totalram_pages()`: the RAM size the pool limit is a percentage of.
    pub total_ram_pages: u64,
    /// `max_pool_percent` (default 20).
    pub max_pool_percent: u32,
    /// `accept_threshold_percent` (default 90; 100 disables the hysteresis).
    pub accept_threshold_percent: u32,
    /// `enabled`.
    pub enabled: bool,
    /// `shrinker_enabled`: the memory-pressure shrinker ([`crate::Zswap::shrinker_scan`]).
    pub shrinker_enabled: bool,
    /// `memory.zswap.writeback` of the (single) memcg: 0 disables writeback, the shrinker and
    /// as-is storage.
    pub writeback: bool,
    pub incompressible: Incompressible,
}

impl Default for ZswapConfig {
    fn default() -> Self {
        Self {
            page_size: 4096,
            compressor: "lzo".into(),
            params: Params::default(),
            zpool: "zsmalloc".into(),
            chain_size: 8,
            total_ram_pages: 1 << 18,
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            enabled: true,
            shrinker_enabled: false,
            writeback: true,
            incompressible: Incompressible::StoreAsIs,
        }
    }
}

/// Parses a kernel bool parameter (`param_set_bool`: y/Y/1/n/N/0, also on/off).
pub(crate) fn parse_bool(v: &str) -> Option<bool> {
    match v.trim() {
        "1" | "y" | "Y" | "on" => Some(true),
        "0" | "n" | "N" | "off" => Some(false),
        _ => None,
    }
}

/// Parses a percentage parameter with the kernel's bounds.
pub(crate) fn parse_percent(name: &str, v: &str, min: u32) -> Result<u32, crate::ZswapError> {
    match v.trim().parse::<u32>() {
        Ok(p) if (min..=100).contains(&p) => Ok(p),
        _ => Err(crate::ZswapError::Config(format!("{name}={v:?} (want {min}..=100)"))),
    }
}
