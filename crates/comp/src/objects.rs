//! The seam through which a store takes a compressed object made elsewhere instead of
//! compressing the page itself (zram's writes and recompressions, zswap's stores).

use crate::Params;

/// Compressed objects made outside a store's own streams: what a stream of `algo` built with
/// `params` makes of the page the caller knows as `index` (zram: the slot the page is written
/// to, or, for a recompression, the slot that holds it; zswap: the swap offset it is stored at).
///
/// The kernel's zram and zswap store the bytes their stream wrote; where the caller already has
/// them (an experiment that compressed the same pages with the same algorithm before), a store
/// given a source asks it for the object exactly where it would compress the page, and does
/// everything else (zram: same-filled check, huge rule, size class, allocation, memory limit,
/// slot flags, counters; zswap: the size checks of `zswap_compress()`, the allocation, the
/// entry, the counters) as without it. So what the store keeps and the pages read back are the
/// same as if it had compressed, provided the object is byte for byte what its stream would have
/// made, which the source vouches for. Because it is asked only where a compression would run, a
/// source can also count the compressions it saved (and charge their measured cost).
///
/// It lives here, below the engines, so zram and zswap (which know nothing of each other) take
/// the same sources.
pub trait ObjectSource {
    /// The object, or `None` to have the store compress the page on its own stream.
    fn object(&self, index: u64, algo: &str, params: &Params) -> Option<&[u8]>;
}
