//! `deflate`: zram's deflate backend: zlib's deflate at the kernel's parameters, zlib-rs's inflate.
//!
//! zram uses `zlib_deflateInit2(level, Z_DEFLATED, winbits, MAX_MEM_LEVEL, Z_DEFAULT_STRATEGY)`
//! with winbits -11 (raw deflate, 2 KiB window) unless `deflate.winbits` says otherwise, and the
//! kernel's `MAX_MEM_LEVEL` is 8. Each page is `deflateReset` + one `deflate(Z_FINISH)`, which must
//! end the stream (`backend_deflate.c: deflate_compress`).
//!
//! The kernel's `lib/zlib_deflate` is zlib 1.1.3's deflate (docs/REFERENCES.md [deflate-kernel]);
//! madler zlib kept that algorithm (match finder, lazy evaluation, configuration table, block
//! decisions), so compression goes through zlib itself, the copy libz-sys vendors (`static`),
//! called exactly as the kernel calls its copy. zlib-rs, which this used before, follows zlib-ng's
//! strategies and differs from zlib on almost every page (bench/deflate-ref). No zlib 1.1.3 can be
//! linked here, so the bytes are checked against zlib 1.3.2 and 1.2.13 (which agree), not against
//! the kernel's copy itself. Decompression's output does not depend on the implementation and
//! stays on zlib-rs.

use crate::{CompError, Compressor, Params};
use libz_sys as z;
use std::ffi::c_int;
use std::mem::MaybeUninit;
use zlib_rs::{InflateFlush, Status};

const NAME: &str = "deflate";
/// `Z_DEFAULT_COMPRESSION` resolves to 6.
pub(crate) const DEFAULT_LEVEL: i32 = 6;
/// zram's `DEFLATE_DEF_WINBITS`.
pub const DEFAULT_WINBITS: i32 = -11;
/// The kernel's `MAX_MEM_LEVEL` (include/linux/zconf.h); upstream zlib uses 9.
const KERNEL_MAX_MEM_LEVEL: i32 = 8;

/// A zlib deflate stream, initialised once and reset per page. zlib keeps a pointer back to the
/// `z_stream`, so it lives in a box that never moves; its allocator fields must be null (zlib's
/// defaults), which the Rust type cannot represent, so it is only ever used through a pointer.
struct ZDeflate(Box<MaybeUninit<z::z_stream>>);

// SAFETY: a z_stream has no thread affinity; `&mut self` serialises all use.
unsafe impl Send for ZDeflate {}

impl ZDeflate {
    fn ptr(&mut self) -> *mut z::z_stream {
        self.0.as_mut_ptr()
    }
}

impl Drop for ZDeflate {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by deflateInit2_ (a ZDeflate only exists then).
        unsafe { z::deflateEnd(self.ptr()) };
    }
}

/// Which deflate compresses: zlib (the kernel's bytes) or zlib-rs (the fast path).
enum Engine {
    Zlib(ZDeflate),
    ZlibRs(Box<zlib_rs::Deflate>),
}

/// A deflate stream: one deflate state and one inflate state, reset per page.
///
/// [`Deflate::new`] (what the registry builds, so `conform`, the lab's "Now" and zram use it)
/// compresses with zlib and gives the kernel's bytes. [`Deflate::new_fast`] compresses with
/// zlib-rs: the same format and about the same size at level 6, but other bytes, and 3-4 times
/// as fast at level 1 (docs/BENCHMARKS.md, bench/deflate-ref).
pub struct Deflate {
    deflate: Engine,
    inflate: zlib_rs::Inflate,
    zlib_header: bool,
}

impl std::fmt::Debug for Deflate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflate").field("zlib_header", &self.zlib_header).finish_non_exhaustive()
    }
}

/// `level` and `deflate.winbits` from zram parameters, checked.
fn level_and_winbits(params: &Params) -> Result<(i32, i32), CompError> {
    let level = params.level.unwrap_or(DEFAULT_LEVEL);
    let winbits = params.deflate_winbits.unwrap_or(DEFAULT_WINBITS);
    // Raw deflate (negative) or a zlib header (positive); zlib refuses 8 for raw streams and
    // gzip wrappers (16 + n) make no sense for a page.
    if !(-15..=-9).contains(&winbits) && !(9..=15).contains(&winbits) {
        return Err(CompError::InvalidParam {
            algo: NAME,
            msg: format!("deflate.winbits {winbits} out of range (-15..=-9 raw, 9..=15 zlib)"),
        });
    }
    Ok((level, winbits))
}

impl Deflate {
    /// The fast path: zlib-rs's deflate at the same parameters. Not the kernel's bytes; nothing
    /// in zmem builds it by name.
    pub fn new_fast(params: &Params) -> Result<Self, CompError> {
        let (level, winbits) = level_and_winbits(params)?;
        let config = zlib_rs::DeflateConfig {
            level,
            method: zlib_rs::Method::Deflated,
            window_bits: winbits,
            mem_level: KERNEL_MAX_MEM_LEVEL,
            strategy: zlib_rs::Strategy::Default,
        };
        let zlib_header = winbits > 0;
        Ok(Deflate {
            deflate: Engine::ZlibRs(Box::new(zlib_rs::Deflate::new_with_config(config))),
            inflate: zlib_rs::Inflate::new(zlib_header, winbits.unsigned_abs() as u8),
            zlib_header,
        })
    }

    /// Builds a stream from zram parameters (`level`, `deflate.winbits`): the kernel's bytes.
    pub fn new(params: &Params) -> Result<Self, CompError> {
        let (level, winbits) = level_and_winbits(params)?;
        let zlib_header = winbits > 0;
        let mut deflate = Box::new(MaybeUninit::<z::z_stream>::zeroed());
        // SAFETY: a zeroed z_stream is what deflateInit2_ expects (null allocators, no input),
        // and the version/size pair is the linked zlib's own.
        let rc = unsafe {
            z::deflateInit2_(
                deflate.as_mut_ptr(),
                level,
                z::Z_DEFLATED,
                winbits,
                KERNEL_MAX_MEM_LEVEL,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            )
        };
        if rc != z::Z_OK {
            // Nothing to end: zlib frees its state itself when init fails.
            return Err(CompError::InvalidParam {
                algo: NAME,
                msg: format!("zlib refuses level {level} with window bits {winbits} ({rc})"),
            });
        }
        Ok(Deflate {
            deflate: Engine::Zlib(ZDeflate(deflate)),
            inflate: zlib_rs::Inflate::new(zlib_header, winbits.unsigned_abs() as u8),
            zlib_header,
        })
    }
}

impl Compressor for Deflate {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let zd = match &mut self.deflate {
            Engine::Zlib(zd) => zd,
            Engine::ZlibRs(d) => {
                d.reset();
                return match d.compress(src, dst, zlib_rs::DeflateFlush::Finish) {
                    Ok(Status::StreamEnd) => Ok(d.total_out() as usize),
                    Ok(_) => Err(CompError::OutputTooSmall { capacity: dst.len() }),
                    Err(e) => Err(CompError::Backend {
                        algo: NAME,
                        msg: format!("deflate failed: {e:?}"),
                    }),
                };
            }
        };
        // zlib counts in `uInt`; a page never comes near that.
        let (Ok(avail_in), Ok(avail_out)) = (u32::try_from(src.len()), u32::try_from(dst.len()))
        else {
            return Err(CompError::InputTooLarge {
                algo: NAME,
                len: src.len(),
                max: u32::MAX as usize,
            });
        };
        let s = zd.ptr();
        // SAFETY: `s` is an initialised stream owned by `self`; zlib reads `avail_in` bytes from
        // `next_in` and writes at most `avail_out` bytes to `next_out`, and the pointers are not
        // kept past this call (the next one resets them).
        let (rc, total) = unsafe {
            if z::deflateReset(s) != z::Z_OK {
                return Err(CompError::Backend { algo: NAME, msg: "deflateReset failed".into() });
            }
            (*s).next_in = src.as_ptr().cast_mut();
            (*s).avail_in = avail_in;
            (*s).next_out = dst.as_mut_ptr();
            (*s).avail_out = avail_out;
            let rc = z::deflate(s, z::Z_FINISH);
            (rc, (*s).total_out as usize)
        };
        match rc {
            z::Z_STREAM_END => Ok(total),
            // Z_OK or Z_BUF_ERROR: the stream did not end in `dst` (backend_deflate.c: -EINVAL).
            z::Z_OK | z::Z_BUF_ERROR => Err(CompError::OutputTooSmall { capacity: dst.len() }),
            rc => Err(CompError::Backend { algo: NAME, msg: format!("deflate failed ({rc})") }),
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        self.inflate.reset(self.zlib_header);
        match self.inflate.decompress(src, dst, InflateFlush::Finish) {
            Ok(Status::StreamEnd) => Ok(self.inflate.total_out() as usize),
            // The stream did not end: either the input is cut short or it decodes to more than
            // `dst` holds. Both mean the object is not what was stored.
            Ok(_) => Err(CompError::corrupt(
                NAME,
                self.inflate.total_in() as usize,
                "stream does not end within the page",
            )),
            Err(_) => Err(CompError::corrupt(
                NAME,
                self.inflate.total_in() as usize,
                "invalid deflate data",
            )),
        }
    }
}
