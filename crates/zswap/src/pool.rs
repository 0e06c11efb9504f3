//! One zswap pool: a compressor (with its streams) and an allocator, as the kernel's
//! `struct zswap_pool` pairs a per-CPU acomp context with a zsmalloc pool.
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
    pub zpool: Arc<dyn ZPool>,
    /// The allocator's own shrinker's deferred work (each zsmalloc pool registers one).
    pub nr_deferred: NrDeferred,
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
    ) -> Result<Arc<Self>, ZswapError> {
        let p = Self {
            compressor: compressor.to_string(),
            params: params.clone(),
            page_size: pool_config.page_size,
            zpool: zmem_pool::create(zpool, pool_config)?,
            nr_deferred: NrDeferred::default(),
            streams: Mutex::new(Vec::new()),
        };
        let first = p.new_stream()?;
        p.put(first);
        Ok(Arc::new(p))
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
