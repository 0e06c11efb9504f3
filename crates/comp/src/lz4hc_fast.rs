//! The lz4hc fast path: liblz4 1.10's HC compressor (lz4-sys), zmem's lz4hc before it became
//! kernel-exact. liblz4 >= 1.8 has another level table (levels 1..=2 a faster "mid" parser, 10..12
//! the optimal parser, above 12 as 12) and other searches, so its bytes are not the kernel's; it
//! is 1.1 to 1.9 times as fast at levels 1..=9 on real pages (docs/BENCHMARKS.md). Only built
//! with the `liblz4` feature, and never by name: the registry (so zram, `conform` and the lab's
//! "Now") builds the exact [`crate::Lz4Hc`].

use crate::lz4::{MAX_INPUT_SIZE, decompress_block};
use crate::lz4hc::{DEFAULT_LEVEL, MAX_LEVEL, MIN_LEVEL};
use crate::{CompError, Compressor, Params};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

// Linking: the declarations below are resolved from the liblz4 that lz4-sys builds and links.
use lz4_sys as _;

const NAME: &str = "lz4hc";

unsafe extern "C" {
    fn LZ4_sizeofStateHC() -> c_int;
    fn LZ4_initStreamHC(buffer: *mut c_void, size: usize) -> *mut c_void;
    fn LZ4_compress_HC_extStateHC(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        max_dst_size: c_int,
        level: c_int,
    ) -> c_int;
    fn LZ4_resetStreamHC_fast(stream: *mut c_void, level: c_int);
    fn LZ4_loadDictHC(stream: *mut c_void, dict: *const c_char, dict_size: c_int) -> c_int;
    fn LZ4_compress_HC_continue(
        stream: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        max_dst_size: c_int,
    ) -> c_int;
}

/// The fast path: liblz4's HC at the same level and dictionary. Not the kernel's bytes.
pub struct Lz4HcFast {
    level: i32,
    /// `LZ4_sizeofStateHC()` bytes, 8-byte aligned as liblz4 requires.
    state: Box<[u64]>,
    dict: Option<Arc<[u8]>>,
}

impl std::fmt::Debug for Lz4HcFast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lz4HcFast")
            .field("level", &self.level)
            .field("dict_len", &self.dict.as_ref().map(|d| d.len()))
            .finish_non_exhaustive()
    }
}

impl Lz4HcFast {
    /// Builds a stream from zram parameters (`level` 1..=16, `dict`).
    pub fn new(params: &Params) -> Result<Self, CompError> {
        let level = params.level.unwrap_or(DEFAULT_LEVEL);
        if !(MIN_LEVEL..=MAX_LEVEL).contains(&level) {
            return Err(CompError::InvalidParam {
                algo: NAME,
                msg: format!("level {level} out of range {MIN_LEVEL}..={MAX_LEVEL}"),
            });
        }
        // SAFETY: a pure query of a constant.
        let size = unsafe { LZ4_sizeofStateHC() };
        let size = usize::try_from(size).unwrap_or(0);
        let mut state = vec![0u64; size.div_ceil(8)].into_boxed_slice();
        // SAFETY: `state` is `size` writable bytes (rounded up), 8-byte aligned, and owned by
        // this stream for as long as liblz4 uses it.
        let init = unsafe { LZ4_initStreamHC(state.as_mut_ptr().cast(), state.len() * 8) };
        if init.is_null() {
            return Err(CompError::Backend { algo: NAME, msg: "LZ4_initStreamHC failed".into() });
        }
        // liblz4 reads at most the last 64 KiB of a dictionary; keep what the decoder needs.
        Ok(Lz4HcFast { level, state, dict: params.dict.clone() })
    }
}

impl Compressor for Lz4HcFast {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        if src.len() > MAX_INPUT_SIZE {
            return Err(CompError::InputTooLarge {
                algo: NAME,
                len: src.len(),
                max: MAX_INPUT_SIZE,
            });
        }
        let src_len = src.len() as c_int;
        let cap = dst.len().min(c_int::MAX as usize) as c_int;
        let state: *mut c_void = self.state.as_mut_ptr().cast();
        let n = match &self.dict {
            // SAFETY: `state` is an initialised LZ4_streamHC_t owned by `self`; `src` and `dst`
            // are valid for `src_len` and `cap` bytes, which liblz4 never exceeds.
            None => unsafe {
                LZ4_compress_HC_extStateHC(
                    state,
                    src.as_ptr().cast(),
                    dst.as_mut_ptr().cast(),
                    src_len,
                    cap,
                    self.level,
                )
            },
            Some(dict) => {
                // liblz4 keeps only the last 64 KiB of a dictionary itself; clamp the length
                // so it fits a C int.
                let keep = dict.len().min(64 * 1024);
                let tail = &dict[dict.len() - keep..];
                // SAFETY: as above; the dictionary slice outlives the call, and the stream is
                // reset before it is loaded, so no pointer from an earlier call is kept.
                unsafe {
                    LZ4_resetStreamHC_fast(state, self.level);
                    LZ4_loadDictHC(state, tail.as_ptr().cast(), keep as c_int);
                    LZ4_compress_HC_continue(
                        state,
                        src.as_ptr().cast(),
                        dst.as_mut_ptr().cast(),
                        src_len,
                        cap,
                    )
                }
            }
        };
        if n <= 0 {
            return Err(CompError::OutputTooSmall { capacity: dst.len() });
        }
        Ok(n as usize)
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let prefix = self.dict.as_deref().unwrap_or(&[]);
        decompress_block(src, dst, prefix).map_err(|e| match e {
            CompError::Corrupt { at, what, .. } => CompError::Corrupt { algo: NAME, at, what },
            other => other,
        })
    }
}
