//! A zmem zram device built from a typed configuration and filled with pages: the one way every
//! replay, experiment and lab measurement sets up and fills a device.

use zmem_zram::{Features, ObjectSource, Zram, ZramConfig, ZramError};

use crate::{Progress, SimError};

/// How to build and drive the device.
#[derive(Debug, Clone)]
pub struct ZramRunConfig {
    pub algo: String,
    /// `algorithm_params` line for the primary (e.g. `level=3`), if any.
    pub params: Option<String>,
    pub pool: String,
    pub page_size: usize,
    pub threads: usize,
    /// Secondary algorithms, priority 1, 2, 3 in order.
    pub recomp: Vec<String>,
    /// Written to `recompress` after the writes (e.g. `type=huge`), if given.
    pub recompress: Option<String>,
}

impl Default for ZramRunConfig {
    fn default() -> Self {
        Self {
            algo: zmem_zram::DEFAULT_ALGORITHM.into(),
            params: None,
            pool: "zsmalloc".into(),
            page_size: 4096,
            threads: 1,
            recomp: Vec::new(),
            recompress: None,
        }
    }
}

/// What [`write_pages`] does when the device refuses a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// Stop with [`SimError::ZramWrite`].
    Fail,
    /// Count it and go on (an allocator that cannot hold some objects, such as zbud a whole
    /// page, is measured with what it holds).
    Count,
}

/// Writes `pages` (whole pages of `ps`) to slots `first`, `first + 1`, ... of `z`, in order,
/// advancing `progress` by one per page. Returns the pages the device refused (always 0 with
/// [`OnRefusal::Fail`]). `config` names the device in errors. This is the one loop every
/// experiment that fills a device uses.
pub fn write_pages(
    z: &Zram,
    pages: &[u8],
    ps: usize,
    first: u64,
    on_refusal: OnRefusal,
    config: &str,
    progress: &dyn Progress,
) -> Result<u64, SimError> {
    write_pages_with(z, pages, ps, first, on_refusal, config, None, progress)
}

/// [`write_pages`], the device taking each compressed object from `objects` where it has one
/// ([`Zram::write_page_with`]) instead of compressing the page; slot `i`'s object is asked for
/// by its slot index.
#[allow(clippy::too_many_arguments)]
pub fn write_pages_with(
    z: &Zram,
    pages: &[u8],
    ps: usize,
    first: u64,
    on_refusal: OnRefusal,
    config: &str,
    objects: Option<&dyn ObjectSource>,
    progress: &dyn Progress,
) -> Result<u64, SimError> {
    const STEP: u64 = 256;
    let mut refused = 0;
    let mut failed = None;
    // One request per progress step, as a bio of 256 pages (dd's 1 MiB): the device is held
    // once per request rather than once per page.
    for (k, batch) in pages.chunks(STEP as usize * ps).enumerate() {
        let whole = batch.len() / ps * ps;
        let start = first + (k as u64) * STEP;
        let mut each = |index: u64, written: Result<(), ZramError>| match written {
            Ok(()) => true,
            Err(err) => match on_refusal {
                OnRefusal::Fail => {
                    failed = Some(SimError::ZramWrite { config: config.into(), page: index, err });
                    false
                }
                OnRefusal::Count => {
                    refused += 1;
                    true
                }
            },
        };
        z.write_pages(start, &batch[..whole], objects, &mut each)
            .map_err(|err| SimError::ZramWrite { config: config.into(), page: start, err })?;
        if let Some(e) = failed {
            return Err(e);
        }
        progress.advance((whole / ps) as u64);
    }
    Ok(refused)
}

/// Builds a device for `pages` pages with the run's configuration.
pub fn build_device(cfg: &ZramRunConfig, nr_pages: u64) -> Result<Zram, SimError> {
    build_device_with_backing(cfg, nr_pages, None)
}

/// [`build_device`] with a backing device (`backing_dev`, set before `disksize` as the kernel
/// requires), so `writeback` can move slots to it.
pub fn build_device_with_backing(
    cfg: &ZramRunConfig,
    nr_pages: u64,
    backing: Option<(std::path::PathBuf, Box<dyn zmem_zram::BackingStore>)>,
) -> Result<Zram, SimError> {
    let z = Zram::new(ZramConfig {
        page_size: cfg.page_size,
        pool: cfg.pool.clone(),
        features: Features::default(),
        // The lab runs the research codecs (lz4m, wkdm) too; a kernel device does not offer them.
        research_codecs: true,
        ..ZramConfig::default()
    })?;
    z.store("comp_algorithm", &cfg.algo)?;
    if let Some(p) = &cfg.params {
        z.store("algorithm_params", p)?;
    }
    for (i, algo) in cfg.recomp.iter().enumerate() {
        z.store("recomp_algorithm", &format!("algo={algo} priority={}", i + 1))?;
    }
    if let Some((path, store)) = backing {
        z.set_backing_store(path, store)?;
    }
    z.store("disksize", &(nr_pages.max(1) * cfg.page_size as u64).to_string())?;
    Ok(z)
}
