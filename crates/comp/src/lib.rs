//! zmem-comp: the page compressors of Linux compressed memory, with the kernel's names.
//!
//! One [`Compressor`] is one *stream* in the kernel's sense (zram keeps one per CPU): it owns its
//! scratch memory, so compressing or decompressing a page allocates nothing. Streams are built by
//! name through the [`registry`] from the same parameters zram's `algorithm_params` takes
//! ([`Params`]).
//!
//! What this crate is for: turning one buffer (normally one page) into compressed bytes and back,
//! exactly as the kernel's backends do where exactness is possible (`lzo`, `lzo-rle`, `lz4`, `zstd`
//! produce the kernel's bytes). What it is not for: deciding what to store (same-filled and huge pages are
//! zram's business) or where (the allocators live in `zmem-pool`).

mod deflate;
mod error;
pub mod lz4;
mod lz4hc;
#[cfg(feature = "liblz4")]
mod lz4hc_fast;
mod lz4m;
pub mod lzo;
mod objects;
mod params;
pub mod registry;
mod spec;
mod sw842;
mod wild;
mod wkdm;
mod zstd;

pub use deflate::Deflate;
pub use error::CompError;
pub use lz4::Lz4;
pub use lz4hc::Lz4Hc;
#[cfg(feature = "liblz4")]
pub use lz4hc_fast::Lz4HcFast;
pub use lz4m::Lz4m;
pub use lzo::Lzo;
pub use objects::ObjectSource;
pub use params::Params;
pub use registry::{Algorithm, algorithms, create, create_as_backend, find};
pub use spec::AlgoSpec;
pub use sw842::{Sw842, crc32_be};
pub use wkdm::Wkdm;
pub use zstd::Zstd;

/// A compression stream: one algorithm instance with its own scratch memory.
///
/// Both directions take caller-provided buffers and return the number of bytes written.
/// Neither allocates once the stream exists. Neither panics on any input: a destination that is
/// too small gives [`CompError::OutputTooSmall`], malformed compressed data gives
/// [`CompError::Corrupt`] (or [`CompError::Backend`] for wrapped libraries).
pub trait Compressor: Send {
    /// The kernel's name of the algorithm (`"lzo-rle"`, `"zstd"`, ...).
    fn name(&self) -> &'static str;

    /// Compresses `src` into `dst` and returns the compressed length.
    ///
    /// zram calls this with one page and a destination of two pages; a destination of
    /// [`compress_bound`]`(src.len())` bytes is always enough.
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError>;

    /// Decompresses `src` into `dst` and returns the decompressed length.
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError>;
}

impl std::fmt::Debug for dyn Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor").field("name", &self.name()).finish()
    }
}

/// A destination size that holds the compressed form of any `src_len` bytes under every
/// algorithm in the registry. zram's own choice, two pages for one page, satisfies it.
pub const fn compress_bound(src_len: usize) -> usize {
    2 * src_len + 64
}
