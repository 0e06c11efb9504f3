//! `lzo` and `lzo-rle`: the kernel's LZO1X-1 compressor, byte for byte, and one decoder for both.
//!
//! # Format (LZO1X, as `Documentation/staging/lzo.rst` describes it)
//!
//! A stream is a sequence of instructions, each a copy from the output already produced (a
//! *match*: length and distance) followed by 0-3 literal bytes, or a run of literals. Which
//! instruction an opcode byte means depends on `state`, the number of literals the previous
//! instruction copied (0, 1-3, or 4 for "four or more"):
//!
//! | opcode       | state | meaning                                                          |
//! |--------------|-------|------------------------------------------------------------------|
//! | `0000LLLL`   | 0     | literal run of 3 + L bytes (L = 0: 18 + zero-byte extension)      |
//! | `0000DDSS` H | 1-3   | 2-byte match, distance (H << 2) + D + 1                           |
//! | `0000DDSS` H | 4     | 3-byte match, distance (H << 2) + D + 2049                        |
//! | `0001HLLL` W | any   | M4: length 2 + L (L = 0: 9 + ext), distance 16384 + (H << 14) + (W >> 2) |
//! | `001LLLLL` W | any   | M3: length 2 + L (L = 0: 33 + ext), distance (W >> 2) + 1         |
//! | `01LDDDSS` H | any   | M2: length 3 + L, distance (H << 3) + D + 1                       |
//! | `1LLDDDSS` H | any   | M2: length 5 + L, distance (H << 3) + D + 1                       |
//!
//! W is a little-endian u16; `SS` (in the opcode for M2, in W for M3/M4) is the number of
//! literals that follow the match. The first byte of a stream is special: b > 17 means "copy
//! b - 17 literals". The stream ends with `11 00 00` (M4 at distance 16384).
//!
//! # Why lzo-rle is a separate name with the same decoder
//!
//! Memory pages are full of zero runs, which LZO1X spends a hash probe and a match on.
//! `lzo-rle` (Linux 5.1) starts with the header `11 01` (a byte 17 and bitstream version 1; a v0
//! stream only starts with 17 when it is empty) and reuses an M4 encoding that could not
//! otherwise occur, `0001 1RRR` + `0xfffc | SS` + X, as "X << 3 | R + 4 zero bytes". The decoder
//! enables that instruction only when the version byte is non-zero, so one decoder reads both.
//!
//! # Why the compressor is the kernel's and not liblzo2's `lzo1x_1`
//!
//! zram's stored sizes depend on the exact bytes. The kernel hashes the next 4 bytes into a
//! 13-bit dictionary of 16-bit offsets from the chunk start (liblzo2's `lzo1x_1` uses 14 bits;
//! its `lzo1x_1_15` on x86 is the kernel's configuration), skips ahead faster the longer a literal
//! run gets, and never looks for matches in the last 20 bytes. [`compress()`] reproduces those
//! choices exactly.
//!
//! # The compressor
//!
//! Input is cut into chunks of at most 0xc000 bytes (v0) or 0xbfff (v1) so every distance fits
//! an M4 offset; a 4 KiB page is one chunk. Within a chunk the compressor walks a probe position
//! `ip`, hashes the 4 bytes there into a 13-bit dictionary of u16 offsets (cleared per chunk, so
//! an empty slot points at the chunk start) and stores `ip` there *before* checking the candidate.
//! A candidate whose 4 bytes equal the probe's is a match; there is no distance check. Without a
//! match, `ip` advances by 1 + (literals pending / 32), so incompressible data is skimmed.
//! Matches are extended 8 bytes at a time (the kernel's `ctz` path); the end test is made only
//! after each 8 equal bytes, so a match may run up to 7 bytes into the 20-byte tail that is
//! otherwise always emitted as literals. lzo-rle first checks whether the 4 probe bytes are zero
//! and, if so, measures the zero run (at most 2051 bytes, never past the 20-byte tail) and emits
//! the RLE instruction without touching the dictionary.
//!
//! Two paths give the same bytes, and [`compress()`] picks one by the destination's size, as
//! `lz4/` does. Both take their vocabulary from `encode` (the markers, the chunk, the hash, the
//! short-match encodings, and `finish`, which writes the stream's end).
//! - A destination of at least `compress_fast::fast_bound` bytes (the worst case; zram's and
//!   zswap's two-page buffers always are) takes `compress_fast`: no room checks, no bounds
//!   checks (a proof on `compress_chunk_fast`, asserted in debug builds), positions as offsets
//!   from the chunk start so the dictionary stores the probe position itself, literals in
//!   16-byte blocks, and a probe loop whose step-to-step chain is a single add over the first 32
//!   bytes of a literal run (the skip is 1 there).
//! - A smaller destination takes `compress_checked`, safe code in which every load and write is
//!   bounds-checked and too little room gives [`CompError::OutputTooSmall`], as the kernel's
//!   `lzo1x_1_compress_safe` returns `LZO_E_OUTPUT_OVERRUN`. It is the checked twin the fast path
//!   is tested (`tests`, Miri) and fuzzed (`fuzz/`'s tight destinations) against.

mod compress_checked;
mod compress_fast;
mod decode_raw;
mod decompress;
mod encode;

use crate::{CompError, Compressor};

/// The dictionary: `D_BITS` = 13 entries of u16 offsets (16 KiB), owned by the stream.
pub(crate) const D_BITS: u32 = 13;
pub(crate) const D_SIZE: usize = 1 << D_BITS;
pub(crate) type Dict = [u16; D_SIZE];

/// The byte that opens a versioned (lzo-rle) stream, and the version the kernel writes.
pub(crate) const VERSION_MARKER: u8 = 17;
pub(crate) const RLE_VERSION: u8 = 1;

pub use decompress::{decompress, decompress_checked};

use compress_checked::compress_checked;
use compress_fast::{compress_fast, fast_bound};

/// Compresses `src` into `dst` as the kernel does and returns the compressed length.
///
/// `dict` is the stream's work memory; its content on entry does not matter. A destination
/// shorter than the worst case is written by the checked path and fails with
/// [`CompError::OutputTooSmall`] where the stream does not fit; the bytes are the same either way.
pub fn compress(
    src: &[u8],
    dst: &mut [u8],
    dict: &mut Dict,
    variant: Variant,
) -> Result<usize, CompError> {
    if dst.len() < fast_bound(variant, src.len()) {
        return compress_checked(src, dst, dict, variant);
    }
    // SAFETY: `dst.len() >= fast_bound(variant, src.len())`, just checked, for the variant that
    // selects the monomorphization.
    unsafe {
        match variant {
            Variant::Lzo => compress_fast::<false>(src, dst, dict),
            Variant::LzoRle => compress_fast::<true>(src, dst, dict),
        }
    }
}

/// Which of the two bitstreams a stream writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Plain LZO1X (`lzo`, bitstream version 0).
    Lzo,
    /// LZO-RLE (`lzo-rle`, bitstream version 1: header and zero-run instruction).
    LzoRle,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Lzo => "lzo",
            Variant::LzoRle => "lzo-rle",
        }
    }
}

/// An `lzo` or `lzo-rle` stream: the variant and its 16 KiB dictionary (`wrkmem` in the kernel).
pub struct Lzo {
    variant: Variant,
    dict: Box<Dict>,
}

impl std::fmt::Debug for Lzo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lzo").field("variant", &self.variant).finish_non_exhaustive()
    }
}

impl Lzo {
    /// A stream of the given variant.
    pub fn new(variant: Variant) -> Self {
        Lzo { variant, dict: Box::new([0; D_SIZE]) }
    }
}

impl Compressor for Lzo {
    fn name(&self) -> &'static str {
        self.variant.name()
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        compress(src, dst, &mut self.dict, self.variant)
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        decompress(src, dst).map_err(|e| match e {
            CompError::Corrupt { at, what, .. } => {
                CompError::Corrupt { algo: self.variant.name(), at, what }
            }
            other => other,
        })
    }
}

#[cfg(test)]
mod tests;
