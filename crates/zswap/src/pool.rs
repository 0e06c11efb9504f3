//! One zswap pool: a compressor (with its streams) and one zsmalloc pool, as 6.18's `struct
//! zswap_pool` pairs a per-CPU acomp context with one `struct zs_pool *zs_pool` (mm/zswap.c,
//! `struct zswap_pool`; `zswap_pool_create()` calls `zs_create_pool(name)` once, and
//! `zswap_compress()` allocates every entry with `zs_malloc(pool->zs_pool, ...)`), and
//! `zswap_total_pages()` sums one `zs_get_total_pages()` per compressor pool. Kernels from 6.5
//! spread entries over 32 zpools (`ZSWAP_NR_ZPOOLS`, `zswap_find_zpool()`); "mm/zswap: use only
//! one pool in zswap" (2024) removed that, and 6.18 has no zpool layer at all (the live 6.18.44
//! kernel has no `zswap_find_zpool` or `zpool_*` symbol in /proc/kallsyms).
//!
//! Changing the `compressor` parameter makes a new pool current; entries keep a reference to the
//! pool they were compressed with, so an old pool lives until its last entry is gone. Streams
//! sit in a free list (user space has no stable CPU to pin per-CPU contexts to): a store takes
//! one, compresses, and gives it back.
//!
//! **The destination buffer.** 6.18's per-CPU buffer is one page (`zswap_cpu_comp_prepare()`:
//! `kmalloc_node(PAGE_SIZE, ...)`; `zswap_compress()` gives the compressor `PAGE_SIZE` of
//! output), so an output that would not fit fails inside the compressor (crypto/lzo.c
//! `__lzo_compress()` and crypto/lz4.c return -EINVAL) and `zswap_compress()` treats it as it
//! treats `dlen >= PAGE_SIZE`. Ours is two pages, so our compressors take their unchecked fast
//! path (a destination of their worst case); an output of a page or more is then handled as the
//! kernel handles the failure (`crate::engine`), with the same outcome and counters.

use std::sync::{Arc, Mutex};

use zmem_comp::{Compressor, Params};
use zmem_pool::{PoolConfig, ZPool};

use crate::ZswapError;
use crate::shrinker::NrDeferred;

/// A compression context: the compressor and its destination buffer (two pages; see above).
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
    /// The allocator pool (`pool->zs_pool`).
    pub zpool: Arc<dyn ZPool>,
    /// The allocator's own shrinker's deferred work (`zs_create_pool()` registers one,
    /// "mm-zspool:zswapN").
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

    /// The parameters its streams are built with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Pages its allocator pool holds (`zs_get_total_pages()`).
    pub fn total_pages(&self) -> u64 {
        self.zpool.total_pages()
    }

    /// A stream of the registry's algorithm at the pool's parameters: the same stream zram and
    /// the lab's compressor table build (`zmem_comp::create`), so objects they made of a page
    /// are this pool's bytes for it ([`crate::Zswap::store_folio_with`]). In 6.18 that holds
    /// for lzo, lzo-rle, lz4, lz4hc, deflate (crypto/deflate.c and zram's backend_deflate.c
    /// share level, window bits and memLevel) and 842; crypto/zstd.c sizes its parameters for
    /// `ZSTD_MAX_SIZE` (`zstd_get_params(ZSTD_DEF_LEVEL, ZSTD_MAX_SIZE)`) where zram's
    /// backend_zstd.c sizes them for a page, and zmem's zswap builds zram's zstd.
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
