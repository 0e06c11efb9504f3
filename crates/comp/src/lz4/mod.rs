//! `lz4`: the kernel's LZ4 block compressor, reproduced byte for byte, and a bounds-checked
//! block decoder.
//!
//! # The block format
//! An LZ4 block is a list of *sequences*. Each starts with a token byte: the high nibble is the
//! number of literal bytes that follow, the low nibble the match length minus 4 (`MINMATCH`).
//! A nibble of 15 means "more follows": extension bytes are added to it, each 255 meaning
//! "and another byte". After the literals comes the match: a little-endian 16-bit offset back
//! into what has already been decoded (1..=65535; 0 is invalid), then the match-length
//! extension bytes. The last sequence has only literals and ends the block; nothing records
//! the decoded size, so the decoder stops when the input ends after a literal run. A match may
//! overlap its own output (offset < length), which is how runs are encoded.
//!
//! # Why a port and not liblz4
//! The kernel's compressor is LZ4 v1.7.3 (lib/lz4/lz4_compress.c, docs/REFERENCES.md [lz4-kernel],
//! [lz4-pr476]). Its output is not liblz4's: since 1.8.2 liblz4 searches one position further at
//! the end of the input (`mflimitPlusOne`), which changes about 3% of pages. zram's
//! `compr_data_size` (and so every memory figure the project derives) depends on the exact
//! compressed lengths, so [`compress()`] reproduces v1.7.3: the same hash tables (a 13-bit table
//! of 16-bit positions for inputs under `LZ4_64Klimit` = 64 KiB + 11 bytes, else a 12-bit table of
//! 32-bit positions hashed on 5 bytes), the same skip heuristic (`acceleration`), the same
//! end-of-input bound (`forwardIp > iend - 12`) and the same dictionary handling.
//!
//! # Dictionaries
//! zram loads a dictionary once into a template stream (`LZ4_loadDict`: the last 64 KiB,
//! every third position hashed) and compresses each page from a copy of that template with
//! `LZ4_compress_fast_continue`, which treats the dictionary as an external block preceding the
//! page. [`dict::DictTemplate`] is that template; decoding takes the dictionary as the bytes
//! preceding the output, as `LZ4_setStreamDecode` + `LZ4_decompress_safe_continue` do.

mod compress;
mod decompress;
mod dict;
#[cfg(test)]
mod tests;

pub use compress::Tables;
pub use decompress::{decompress_block, decompress_block_checked};
pub use dict::DictTemplate;

use crate::{CompError, Compressor, Params};
use std::sync::Arc;

pub(crate) const NAME: &str = "lz4";
/// `LZ4_ACCELERATION_DEFAULT`.
pub(crate) const DEFAULT_ACCELERATION: i32 = 1;
/// Highest accepted acceleration. The kernel takes any positive value; liblz4 >= 1.9 clamps to
/// `LZ4_ACCELERATION_MAX` = 65537, past which searching is already a single probe per 1 KiB,
/// so the registry stops there too.
pub(crate) const MAX_ACCELERATION: i32 = 65537;
/// `LZ4_MAX_INPUT_SIZE`.
pub const MAX_INPUT_SIZE: usize = 0x7E00_0000;

/// `LZ4_COMPRESSBOUND(n)`: the largest block `n` input bytes can produce.
pub const fn compress_bound(n: usize) -> usize {
    n + n / 255 + 16
}

/// Compresses `src` as the kernel's `LZ4_compress_fast(src, dst, n, dst.len(), acceleration)`.
///
/// `tables` is the scratch hash table (the kernel's `wrkmem`). A destination shorter than
/// [`compress_bound`] uses the kernel's limited-output checks and fails where it fails.
pub fn compress(
    tables: &mut Tables,
    src: &[u8],
    dst: &mut [u8],
    acceleration: u32,
) -> Result<usize, CompError> {
    compress::compress_fast(tables, src, dst, acceleration.max(1))
}

/// A zram `lz4` stream: the acceleration, the scratch tables and the optional dictionary.
pub struct Lz4 {
    acceleration: u32,
    tables: Box<Tables>,
    dict: Option<DictTemplate>,
}

impl std::fmt::Debug for Lz4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lz4")
            .field("acceleration", &self.acceleration)
            .field("dict_len", &self.dict.as_ref().map(DictTemplate::len))
            .finish_non_exhaustive()
    }
}

impl Lz4 {
    /// Builds a stream from zram parameters: `level` is the acceleration (>= 1), `dict` the
    /// dictionary content.
    pub fn new(params: &Params) -> Result<Self, CompError> {
        let level = params.level.unwrap_or(DEFAULT_ACCELERATION);
        if !(1..=MAX_ACCELERATION).contains(&level) {
            return Err(CompError::InvalidParam {
                algo: NAME,
                msg: format!("acceleration {level} out of range 1..={MAX_ACCELERATION}"),
            });
        }
        Ok(Lz4 {
            acceleration: level as u32,
            tables: Tables::new_boxed(),
            dict: params.dict.as_ref().map(|d| DictTemplate::load(Arc::clone(d))),
        })
    }
}

impl Compressor for Lz4 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        match &self.dict {
            None => compress::compress_fast(&mut self.tables, src, dst, self.acceleration),
            Some(d) => d.compress_continue(&mut self.tables, src, dst, self.acceleration),
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let prefix = self.dict.as_ref().map_or(&[][..], DictTemplate::content);
        decompress_block(src, dst, prefix)
    }
}
