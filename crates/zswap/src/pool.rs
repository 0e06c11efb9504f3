//! One zswap pool: a compressor (with its streams) and its allocator pools, as the kernel's
//! `struct zswap_pool` pairs a per-CPU acomp context with [`NR_ZPOOLS`] zsmalloc pools.
//!
//! **32 allocator pools.** zswap spreads its entries over `ZSWAP_NR_ZPOOLS` (32) zpools, by a
//! hash of the entry's address (`zswap_find_zpool`: `hash_ptr(entry, 5)`, since 6.5), to spread
//! the allocator's lock. Each pool keeps its own partly filled zspage per size class, so the
//! pool is larger than one packing of the same objects. That this 6.18 kernel still does is
//! measured, not read from its source: the live test's 16,574 copies of a 343-byte object
//! (class 352, 93 to a zspage of 8 pages) took 196 zspages (1,568 pages), where one pool packs
//! them into 179 (1,432 pages) and 32 pools of about 518 each into 192 to 196. An entry's address cannot be known here; zmem hashes its swap offset the
//! same way (the golden-ratio multiply of `hash_64`), which spreads consecutive offsets evenly.
//!
//! Changing the `compressor` parameter makes a new pool current; entries keep a reference to the
//! pool they were compressed with, so an old pool lives until its last entry is gone. Streams
//! sit in a free list (user space has no stable CPU to pin per-CPU contexts to): a store takes
//! one, compresses, and gives it back.

use std::sync::{Arc, Mutex};

use zmem_comp::{Compressor, Params};
use zmem_pool::{PoolConfig, ZPool};

use crate::ZswapError;
use crate::shrinker::NrDeferred;

/// Allocator pools per zswap pool (6.18 `ZSWAP_NR_ZPOOLS`).
pub const NR_ZPOOLS: usize = 32;

/// The allocator pool of the entry for swap offset `offset`: the top five bits of the offset
/// times the 64-bit golden ratio (`hash_64(val, 5)`).
pub fn zpool_index(offset: u64) -> usize {
    const GOLDEN_RATIO_64: u64 = 0x61c8_8646_80b5_83eb;
    (offset.wrapping_mul(GOLDEN_RATIO_64) >> (64 - NR_ZPOOLS.trailing_zeros())) as usize
}

/// A compression context: the compressor and its two-page destination buffer.
#[derive(Debug)]
pub(crate) struct Stream {
    pub comp: Box<dyn Compressor>,
    pub buffer: Vec<u8>,
}

#[derive(Debug)]
pub(crate) struct ZswapPool {
    pub compressor: String,
    params: Params,
    page_size: usize,
    /// The allocator pools (1 to [`NR_ZPOOLS`]); an entry's is [`zpool_index`] of its swap
    /// offset, modulo their number.
    pub zpools: Vec<Arc<dyn ZPool>>,
    /// Each allocator pool's own shrinker's deferred work (each zsmalloc pool registers one).
    pub nr_deferred: Vec<NrDeferred>,
    streams: Mutex<Vec<Stream>>,
}

impl ZswapPool {
    /// Builds the allocator and a first stream, so a bad compressor fails here and not on the
    /// first store.
    pub fn new(
        compressor: &str,
        params: &Params,
        zpool: &str,
        pool_config: &PoolConfig,
        nr_zpools: usize,
    ) -> Result<Arc<Self>, ZswapError> {
        let p = Self {
            compressor: compressor.to_string(),
            params: params.clone(),
            page_size: pool_config.page_size,
            zpools: (0..nr_zpools.clamp(1, NR_ZPOOLS))
                .map(|_| zmem_pool::create(zpool, pool_config))
                .collect::<Result<_, _>>()?,
            nr_deferred: (0..nr_zpools.clamp(1, NR_ZPOOLS))
                .map(|_| NrDeferred::default())
                .collect(),
            streams: Mutex::new(Vec::new()),
        };
        let first = p.new_stream()?;
        p.put(first);
        Ok(Arc::new(p))
    }

    /// Pages all its allocator pools hold.
    pub fn total_pages(&self) -> u64 {
        self.zpools.iter().map(|z| z.total_pages()).sum()
    }

    fn new_stream(&self) -> Result<Stream, ZswapError> {
        Ok(Stream {
            comp: zmem_comp::create(&self.compressor, &self.params, self.page_size)?,
            buffer: vec![0; 2 * self.page_size],
        })
    }

    pub fn get(&self) -> Result<Stream, ZswapError> {
        let cached = self.streams.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match cached {
            Some(s) => Ok(s),
            None => self.new_stream(),
        }
    }

    pub fn put(&self, s: Stream) {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden-ratio hash of consecutive offsets fills the 32 pools evenly (a kernel entry's
    /// address hash is as even, on average), and never names a pool past the last.
    #[test]
    fn consecutive_offsets_spread_evenly_over_the_pools() {
        let mut count = [0u32; NR_ZPOOLS];
        for offset in 0..3200 {
            count[zpool_index(offset)] += 1;
        }
        assert!(count.iter().all(|&c| (99..=101).contains(&c)), "{count:?}");
        assert!((0..1 << 20).step_by(977).all(|o| zpool_index(o) < NR_ZPOOLS));
        assert_eq!(zpool_index(u64::MAX), zpool_index(u64::MAX));
    }
}
