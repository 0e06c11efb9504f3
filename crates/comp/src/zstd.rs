//! `zstd`: zram's zstd backend, the kernel's call sequence on libzstd 1.5.7.
//!
//! Linux 6.18's `lib/zstd` is an import of upstream zstd v1.5.7 (the release the `zstd-sys`
//! crate bundles, `2.1.3+zstd.1.5.7`), so the library is the same; what has to match is how the
//! kernel drives it (docs/REFERENCES.md [zstd-kernel]):
//!
//! - `backend_zstd.c: zstd_setup_params` takes `zstd_get_params(level, PAGE_SIZE)`, i.e.
//!   `ZSTD_getParams(level, PAGE_SIZE, 0)`: the table row for a one-page source, window shrunk to
//!   the page, frame parameters content size on, checksum off, dictionary ID on.
//! - Without a dictionary each page goes through `zstd_compress_cctx`, which
//!   (`zstd_compress_module.c: zstd_cctx_init`) resets the context with its parameters, pledges
//!   the source size, sets the seven compression parameters and three frame flags one by one
//!   from those parameters, and calls `ZSTD_compress2`. The compression level itself is never
//!   set: the parameters carry it.
//! - With a dictionary, `zstd_setup_params` builds one CDict per device with
//!   `ZSTD_createCDict_advanced(dict, ZSTD_dlm_byRef, ZSTD_dct_auto,
//!   ZSTD_getCParams(level, PAGE_SIZE, dict_size))` and each page is
//!   `ZSTD_compress_usingCDict`.
//! - The kernel's copy has one change to the library that shows in the bytes:
//!   `ZSTD_resolveRowMatchFinderMode` turns the row-based match finder on only above window
//!   log 17 (upstream 1.5.7: above 14), because the kernel has no SIMD. That decides the match
//!   finder of the greedy, lazy and lazy2 strategies (levels 5-12 or so on a page) whenever the
//!   window log is 15..=17: a 64 KiB page, or a dictionary. Every context and dictionary here
//!   therefore sets `ZSTD_c_useRowMatchFinder` to what the kernel's rule resolves to, so the
//!   library never applies its own.
//!
//! Decompression is `ZSTD_decompressDCtx` / `ZSTD_decompress_usingDDict` as in the kernel.

use crate::{CompError, Compressor, Params};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;
use zstd_safe::zstd_sys as sys;
use zstd_safe::{DCtx, DDict};

const NAME: &str = "zstd";
/// `zstd_default_clevel()`.
pub(crate) const DEFAULT_LEVEL: i32 = 3;
/// `zstd_min_clevel()` of libzstd 1.5 (`-ZSTD_TARGETLENGTH_MAX`).
pub(crate) const MIN_LEVEL: i32 = -131072;
/// `zstd_max_clevel()`.
pub(crate) const MAX_LEVEL: i32 = 22;

/// The window log above which the kernel's libzstd uses the row-based match finder
/// (`lib/zstd/compress/zstd_compress.c: ZSTD_resolveRowMatchFinderMode`, `kWindowLogLowerBound`;
/// upstream 1.5.7 uses 14).
pub(crate) const KERNEL_ROW_MATCH_FINDER_MIN_WINDOW_LOG: u32 = 17;

/// What the kernel's `ZSTD_resolveRowMatchFinderMode` resolves `ZSTD_ps_auto` to for these
/// parameters: enabled only for the strategies that have a row-based finder (greedy, lazy,
/// lazy2) and a window log above 17.
pub(crate) fn kernel_row_match_finder(
    cparams: &sys::ZSTD_compressionParameters,
) -> sys::ZSTD_ParamSwitch_e {
    let strategy = cparams.strategy as u32;
    let row_capable = (sys::ZSTD_strategy::ZSTD_greedy as u32
        ..=sys::ZSTD_strategy::ZSTD_lazy2 as u32)
        .contains(&strategy);
    if row_capable && cparams.windowLog > KERNEL_ROW_MATCH_FINDER_MIN_WINDOW_LOG {
        sys::ZSTD_ParamSwitch_e::ZSTD_ps_enable
    } else {
        sys::ZSTD_ParamSwitch_e::ZSTD_ps_disable
    }
}

/// A libzstd compression context, owned.
struct RawCCtx(NonNull<sys::ZSTD_CCtx>);

// SAFETY: a ZSTD_CCtx has no thread affinity; `&mut self` serialises all use.
unsafe impl Send for RawCCtx {}

impl Drop for RawCCtx {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCCtx and is freed once.
        unsafe { sys::ZSTD_freeCCtx(self.0.as_ptr()) };
    }
}

/// A libzstd compression dictionary that references `content` (`ZSTD_dlm_byRef`, as the
/// kernel's `zstd_create_cdict_byreference`). Field order matters: the CDict is freed before
/// the content it points into.
struct RawCDict {
    cdict: NonNull<sys::ZSTD_CDict>,
    _content: Arc<[u8]>,
}

// SAFETY: a CDict is read-only after creation and its content is an immutable shared slice.
unsafe impl Send for RawCDict {}

impl Drop for RawCDict {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCDict_advanced2 and is freed once.
        unsafe { sys::ZSTD_freeCDict(self.cdict.as_ptr()) };
    }
}

/// Owns a `ZSTD_CCtx_params` for the duration of building a CDict.
struct RawCCtxParams(NonNull<sys::ZSTD_CCtx_params>);

impl Drop for RawCCtxParams {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCCtxParams and is freed once.
        unsafe { sys::ZSTD_freeCCtxParams(self.0.as_ptr()) };
    }
}

/// A zstd stream: one compression and one decompression context, the page parameters, and the
/// dictionary if any.
pub struct Zstd {
    cctx: RawCCtx,
    dctx: DCtx<'static>,
    /// `zstd_get_params(level, PAGE_SIZE)`.
    cprm: sys::ZSTD_parameters,
    /// The row-match-finder switch the kernel's library resolves `cprm` to.
    row_match_finder: sys::ZSTD_ParamSwitch_e,
    /// Field order: the DDict borrows nothing, the CDict references its own `Arc` of the content.
    dict: Option<(RawCDict, DDict<'static>)>,
}

impl std::fmt::Debug for Zstd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zstd")
            .field("cparams", &self.cprm.cParams)
            .field("dict", &self.dict.is_some())
            .finish_non_exhaustive()
    }
}

fn backend(msg: &str, code: usize) -> CompError {
    CompError::Backend { algo: NAME, msg: format!("{msg}: {}", zstd_safe::get_error_name(code)) }
}

/// `ZSTD_FORWARD_IF_ERR` of `zstd_compress_module.c`.
fn check(code: usize, what: &str) -> Result<usize, CompError> {
    // SAFETY: a pure function of its argument.
    if unsafe { sys::ZSTD_isError(code) } != 0 { Err(backend(what, code)) } else { Ok(code) }
}

/// The ten `ZSTD_CCtx_setParameter` calls of `zstd_cctx_init`, in its order.
fn kernel_cctx_parameters(p: &sys::ZSTD_parameters) -> [(sys::ZSTD_cParameter, i32); 10] {
    use sys::ZSTD_cParameter::*;
    let c = &p.cParams;
    [
        (ZSTD_c_windowLog, c.windowLog as i32),
        (ZSTD_c_hashLog, c.hashLog as i32),
        (ZSTD_c_chainLog, c.chainLog as i32),
        (ZSTD_c_searchLog, c.searchLog as i32),
        (ZSTD_c_minMatch, c.minMatch as i32),
        (ZSTD_c_targetLength, c.targetLength as i32),
        (ZSTD_c_strategy, c.strategy as i32),
        (ZSTD_c_contentSizeFlag, p.fParams.contentSizeFlag),
        (ZSTD_c_checksumFlag, p.fParams.checksumFlag),
        (ZSTD_c_dictIDFlag, i32::from(p.fParams.noDictIDFlag == 0)),
    ]
}

/// `ZSTD_c_useRowMatchFinder` (an experimental parameter; the bindings name it by number).
const C_USE_ROW_MATCH_FINDER: sys::ZSTD_cParameter =
    sys::ZSTD_cParameter::ZSTD_c_experimentalParam14;

impl Zstd {
    /// Builds a stream from zram parameters (`level`, `dict`) for pages of `page_size` bytes.
    pub fn new(params: &Params, page_size: usize) -> Result<Self, CompError> {
        // backend_zstd.c: zstd_setup_params.
        let level = params.level.unwrap_or(DEFAULT_LEVEL);
        // SAFETY: pure functions of their arguments.
        let cprm = unsafe { sys::ZSTD_getParams(level, page_size as u64, 0) };
        // A page's window log is at most log2(page_size) (16 for 64 KiB), so for every supported
        // page size this is "disabled"; the frame's own source size can only shrink it further.
        let row_match_finder = kernel_row_match_finder(&cprm.cParams);
        // SAFETY: plain constructors; null is checked.
        let cctx = NonNull::new(unsafe { sys::ZSTD_createCCtx() })
            .map(RawCCtx)
            .ok_or_else(|| backend("cannot create context", 0))?;
        let dctx = DCtx::try_create().ok_or_else(|| backend("cannot create context", 0))?;
        let dict = match &params.dict {
            None => None,
            Some(content) => {
                let cdict = kernel_cdict(content, level, page_size)?;
                Some((cdict, DDict::create(content)))
            }
        };
        Ok(Zstd { cctx, dctx, cprm, row_match_finder, dict })
    }

    /// `zstd_compress_module.c: zstd_compress_cctx` with the kernel's row-match-finder rule.
    fn compress_cctx(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let cctx = self.cctx.0.as_ptr();
        // SAFETY: `cctx` is a live context owned by `self`; the parameter calls only store
        // values, and ZSTD_compress2 reads `src.len()` bytes of `src` and writes at most
        // `dst.len()` bytes to `dst`.
        unsafe {
            check(
                sys::ZSTD_CCtx_reset(
                    cctx,
                    sys::ZSTD_ResetDirective::ZSTD_reset_session_and_parameters,
                ),
                "reset",
            )?;
            check(sys::ZSTD_CCtx_setPledgedSrcSize(cctx, src.len() as u64), "pledged size")?;
            for (param, value) in kernel_cctx_parameters(&self.cprm) {
                check(sys::ZSTD_CCtx_setParameter(cctx, param, value), "parameter")?;
            }
            check(
                sys::ZSTD_CCtx_setParameter(
                    cctx,
                    C_USE_ROW_MATCH_FINDER,
                    self.row_match_finder as i32,
                ),
                "row match finder",
            )?;
            Ok(sys::ZSTD_compress2(
                cctx,
                dst.as_mut_ptr().cast::<c_void>(),
                dst.len(),
                src.as_ptr().cast::<c_void>(),
                src.len(),
            ))
        }
        .and_then(|n| self.result(n, dst.len()))
    }

    fn result(&self, code: usize, capacity: usize) -> Result<usize, CompError> {
        // SAFETY: pure functions of their argument.
        if unsafe { sys::ZSTD_isError(code) } == 0 {
            return Ok(code);
        }
        if zstd_safe::is_error_kind(code, sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall) {
            Err(CompError::OutputTooSmall { capacity })
        } else {
            Err(backend("compression failed", code))
        }
    }
}

/// `backend_zstd.c: zstd_setup_params`'s dictionary: `ZSTD_createCDict_advanced(dict, size,
/// ZSTD_dlm_byRef, ZSTD_dct_auto, ZSTD_getCParams(level, PAGE_SIZE, size), mem)`, built through
/// `ZSTD_createCDict_advanced2` (which `_advanced` calls with a parameter set initialised at
/// level 0 and these compression parameters) so that the row-match-finder switch can be the
/// kernel's.
fn kernel_cdict(content: &Arc<[u8]>, level: i32, page_size: usize) -> Result<RawCDict, CompError> {
    let rejected =
        || CompError::InvalidParam { algo: NAME, msg: "dictionary rejected by libzstd".into() };
    // SAFETY: pure functions of their arguments.
    let cparams = unsafe { sys::ZSTD_getCParams(level, page_size as u64, content.len()) };
    // The CDict's final window: ZSTD_createCDict_advanced2 re-derives the parameters for an
    // unknown source size, which ZSTD_adjustCParams_internal (ZSTD_cpm_createCDict) treats as a
    // 513-byte source next to the dictionary; the public ZSTD_adjustCParams with that size
    // shrinks the window the same way, and the window is all the rule looks at.
    // SAFETY: pure function of its arguments.
    let final_cparams = unsafe { sys::ZSTD_adjustCParams(cparams, 513, content.len()) };
    let row = kernel_row_match_finder(&final_cparams);
    // SAFETY: a plain constructor; null is checked.
    let p = NonNull::new(unsafe { sys::ZSTD_createCCtxParams() })
        .map(RawCCtxParams)
        .ok_or_else(rejected)?;
    let pp = p.0.as_ptr();
    let c = &cparams;
    let settings = [
        (sys::ZSTD_cParameter::ZSTD_c_windowLog, c.windowLog as i32),
        (sys::ZSTD_cParameter::ZSTD_c_hashLog, c.hashLog as i32),
        (sys::ZSTD_cParameter::ZSTD_c_chainLog, c.chainLog as i32),
        (sys::ZSTD_cParameter::ZSTD_c_searchLog, c.searchLog as i32),
        (sys::ZSTD_cParameter::ZSTD_c_minMatch, c.minMatch as i32),
        (sys::ZSTD_cParameter::ZSTD_c_targetLength, c.targetLength as i32),
        (sys::ZSTD_cParameter::ZSTD_c_strategy, c.strategy as i32),
        (C_USE_ROW_MATCH_FINDER, row as i32),
    ];
    // SAFETY: `pp` is a live parameter set owned by `p`; `content` outlives the CDict because the
    // CDict keeps its own `Arc` of it (by-reference load, as the kernel's).
    let cdict = unsafe {
        check(sys::ZSTD_CCtxParams_init(pp, 0), "params")?;
        for (param, value) in settings {
            check(sys::ZSTD_CCtxParams_setParameter(pp, param, value), "dictionary parameter")?;
        }
        sys::ZSTD_createCDict_advanced2(
            content.as_ptr().cast::<c_void>(),
            content.len(),
            sys::ZSTD_dictLoadMethod_e::ZSTD_dlm_byRef,
            sys::ZSTD_dictContentType_e::ZSTD_dct_auto,
            pp,
            sys::ZSTD_customMem {
                customAlloc: None,
                customFree: None,
                opaque: std::ptr::null_mut(),
            },
        )
    };
    let cdict = NonNull::new(cdict).ok_or_else(rejected)?;
    Ok(RawCDict { cdict, _content: Arc::clone(content) })
}

impl Compressor for Zstd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        match &self.dict {
            None => self.compress_cctx(src, dst),
            Some((cdict, _)) => {
                // SAFETY: the context and CDict are live and owned by `self`; libzstd reads
                // `src.len()` bytes and writes at most `dst.len()`.
                let n = unsafe {
                    sys::ZSTD_compress_usingCDict(
                        self.cctx.0.as_ptr(),
                        dst.as_mut_ptr().cast::<c_void>(),
                        dst.len(),
                        src.as_ptr().cast::<c_void>(),
                        src.len(),
                        cdict.cdict.as_ptr(),
                    )
                };
                self.result(n, dst.len())
            }
        }
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
