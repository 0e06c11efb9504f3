use std::sync::Arc;

/// Per-algorithm parameters, as zram's `algorithm_params` attribute carries them
/// (`level=N dict=/path deflate.winbits=W`).
///
/// `None` is the kernel's `ZCOMP_PARAM_NOT_SET`: the algorithm's default applies. The dictionary is
/// the file's content, shared between all streams of a device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// Compression level; for `lz4` the acceleration factor.
    pub level: Option<i32>,
    /// Raw dictionary content (`zstd`, `lz4`, `lz4hc`).
    pub dict: Option<Arc<[u8]>>,
    /// `deflate.winbits`: zlib window bits, negative for raw deflate (kernel default -11).
    pub deflate_winbits: Option<i32>,
}

impl Params {
    /// Parameters with only a level set.
    pub fn with_level(level: i32) -> Self {
        Params { level: Some(level), ..Params::default() }
    }
}
