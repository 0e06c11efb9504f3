//! `deflate`: zram's deflate backend through zlib-rs.
//!
//! zram uses `zlib_deflateInit2(level, Z_DEFLATED, winbits, MAX_MEM_LEVEL, Z_DEFAULT_STRATEGY)`
//! with winbits -11 (raw deflate, 2 KiB window) unless `deflate.winbits` says otherwise, and the
//! kernel's `MAX_MEM_LEVEL` is 8. Each page is `deflateReset` + one `deflate(Z_FINISH)`, which must
//! end the stream. zlib-rs exposes exactly those knobs (flate2 hides memLevel), so it is used
//! directly. Byte identity with the kernel's old zlib fork is not a goal.

use crate::{CompError, Compressor, Params};
use zlib_rs::{DeflateConfig, DeflateFlush, InflateFlush, Method, Status, Strategy};

const NAME: &str = "deflate";
/// `Z_DEFAULT_COMPRESSION` resolves to 6.
pub(crate) const DEFAULT_LEVEL: i32 = 6;
/// zram's `DEFLATE_DEF_WINBITS`.
pub const DEFAULT_WINBITS: i32 = -11;
/// The kernel's `MAX_MEM_LEVEL` (include/linux/zconf.h); upstream zlib uses 9.
const KERNEL_MAX_MEM_LEVEL: i32 = 8;

/// A deflate stream: one zlib deflate state and one inflate state, reset per page.
pub struct Deflate {
    deflate: zlib_rs::Deflate,
    inflate: zlib_rs::Inflate,
    zlib_header: bool,
}

impl std::fmt::Debug for Deflate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflate").field("zlib_header", &self.zlib_header).finish_non_exhaustive()
    }
}

impl Deflate {
    /// Builds a stream from zram parameters (`level`, `deflate.winbits`).
    pub fn new(params: &Params) -> Result<Self, CompError> {
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
        let config = DeflateConfig {
            level,
            method: Method::Deflated,
            window_bits: winbits,
            mem_level: KERNEL_MAX_MEM_LEVEL,
            strategy: Strategy::Default,
        };
        let zlib_header = winbits > 0;
        Ok(Deflate {
            deflate: zlib_rs::Deflate::new_with_config(config),
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
        self.deflate.reset();
        match self.deflate.compress(src, dst, DeflateFlush::Finish) {
            Ok(Status::StreamEnd) => Ok(self.deflate.total_out() as usize),
            Ok(_) => Err(CompError::OutputTooSmall { capacity: dst.len() }),
            Err(e) => Err(CompError::Backend { algo: NAME, msg: format!("deflate failed: {e:?}") }),
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
