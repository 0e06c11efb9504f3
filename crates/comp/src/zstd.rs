//! `zstd`: zram's zstd backend through the zstd crate (libzstd).
//!
//! zram compresses each page as one frame with `zstd_get_params(level, PAGE_SIZE)`: the
//! small-input parameter table with the window shrunk to the page, content size in the header,
//! no checksum. `ZSTD_compress2` on a whole page picks the same table because it knows the source
//! size, so the context only needs the level. With a dictionary zram builds a CDict/DDict once per
//! device; here once per stream (the dictionary content is shared through [`Params::dict`]).

use crate::{CompError, Compressor, Params};
use zstd_safe::{CCtx, CDict, CParameter, DCtx, DDict};

const NAME: &str = "zstd";
/// `zstd_default_clevel()`.
pub(crate) const DEFAULT_LEVEL: i32 = 3;
/// `zstd_min_clevel()` of libzstd 1.5 (`-ZSTD_TARGETLENGTH_MAX`).
pub(crate) const MIN_LEVEL: i32 = -131072;
/// `zstd_max_clevel()`.
pub(crate) const MAX_LEVEL: i32 = 22;

/// A zstd stream: one compression and one decompression context, and the dictionary if any.
pub struct Zstd {
    cctx: CCtx<'static>,
    dctx: DCtx<'static>,
    dict: Option<(CDict<'static>, DDict<'static>)>,
}

impl std::fmt::Debug for Zstd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zstd").field("dict", &self.dict.is_some()).finish_non_exhaustive()
    }
}

fn backend(msg: &str, code: usize) -> CompError {
    CompError::Backend { algo: NAME, msg: format!("{msg}: {}", zstd_safe::get_error_name(code)) }
}

impl Zstd {
    /// Builds a stream from zram parameters (`level`, `dict`).
    pub fn new(params: &Params, _page_size: usize) -> Result<Self, CompError> {
        let level = params.level.unwrap_or(DEFAULT_LEVEL);
        let mut cctx = CCtx::try_create().ok_or_else(|| backend("cannot create context", 0))?;
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .map_err(|c| backend("bad level", c))?;
        let dctx = DCtx::try_create().ok_or_else(|| backend("cannot create context", 0))?;
        let dict = match &params.dict {
            None => None,
            Some(content) => {
                let cdict =
                    CDict::try_create(content, level).ok_or_else(|| CompError::InvalidParam {
                        algo: NAME,
                        msg: "dictionary rejected by libzstd".into(),
                    })?;
                Some((cdict, DDict::create(content)))
            }
        };
        Ok(Zstd { cctx, dctx, dict })
    }
}

impl Compressor for Zstd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let result = match &self.dict {
            None => self.cctx.compress2(dst, src),
            Some((cdict, _)) => self.cctx.compress_using_cdict(dst, src, cdict),
        };
        result.map_err(|code| {
            if zstd_safe::is_error_kind(
                code,
                zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall,
            ) {
                CompError::OutputTooSmall { capacity: dst.len() }
            } else {
                backend("compression failed", code)
            }
        })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let result = match &self.dict {
            None => self.dctx.decompress(dst, src),
            Some((_, ddict)) => self.dctx.decompress_using_ddict(dst, src, ddict),
        };
        // libzstd does not say where in the frame it stopped; 0 marks "somewhere in the frame".
        result.map_err(|code| CompError::Corrupt {
            algo: NAME,
            at: 0,
            what: zstd_safe::get_error_name(code),
        })
    }
}
