//! zram's lz4 dictionary mode: `LZ4_loadDict` once into a template stream, then every page is
//! compressed from a fresh copy of it with `LZ4_compress_fast_continue` (external dictionary).
//!
//! What the template holds, in the kernel's index space: the dictionary's last 64 KiB (`D`
//! bytes) occupy indices `64 KiB .. 64 KiB + D`, every third position hashed with `LZ4_hash5`
//! into the 32-bit table, and the page starts at `currentOffset = 64 KiB + D`. The 64 KiB gap
//! below keeps the table's zero entries (index 0) out of reach: candidates under the
//! dictionary are refused (`dictSmall`) or too far away (`MAX_DISTANCE`). A dictionary shorter
//! than 8 bytes (`HASH_UNIT`) is ignored by `LZ4_loadDict`, but the page is still compressed
//! with the 32-bit table, from offset 0.

use super::compress::{self, Tables, U32_ENTRIES, Window, hash5};
use crate::CompError;
use std::sync::Arc;

/// `HASH_UNIT`: positions need 8 readable bytes to be hashed.
const HASH_UNIT: usize = 8;
const WINDOW: usize = 64 * 1024;

/// A dictionary loaded as `LZ4_loadDict` does, ready to be copied for each page.
pub struct DictTemplate {
    content: Arc<[u8]>,
    /// Start of the part `LZ4_loadDict` keeps (the last 64 KiB), or `content.len()` when it
    /// keeps nothing.
    start: usize,
    /// `currentOffset` after loading.
    cur: usize,
    table: Box<[u32; U32_ENTRIES]>,
}

impl std::fmt::Debug for DictTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DictTemplate")
            .field("len", &self.content.len())
            .field("used", &(self.content.len() - self.start))
            .finish_non_exhaustive()
    }
}

impl DictTemplate {
    /// `LZ4_loadDict` into a zeroed stream.
    pub fn load(content: Arc<[u8]>) -> Self {
        let mut table = Box::new([0u32; U32_ENTRIES]);
        let len = content.len();
        if len < HASH_UNIT {
            return DictTemplate { content, start: len, cur: 0, table };
        }
        let start = len.saturating_sub(WINDOW);
        let used = &content[start..];
        let cur = WINDOW + used.len();
        let mut p = 0;
        while p + HASH_UNIT <= used.len() {
            table[hash5(used, p)] = (WINDOW + p) as u32;
            p += 3;
        }
        DictTemplate { content, start, cur, table }
    }

    /// The whole dictionary as given (the decoder's prefix).
    pub fn content(&self) -> &[u8] {
        &self.content
    }

    /// Length of the whole dictionary.
    pub fn len(&self) -> usize {
        self.content.len()
    }

    /// Whether the dictionary is empty.
    pub fn is_empty(&self) -> bool {
        self.content.is_empty()
    }

    /// Copies the template into `tables` and compresses `src` after the dictionary
    /// (`LZ4_compress_fast_continue`).
    pub fn compress_continue(
        &self,
        tables: &mut Tables,
        src: &[u8],
        dst: &mut [u8],
        acceleration: u32,
    ) -> Result<usize, CompError> {
        tables.by_u32.copy_from_slice(&self.table[..]);
        let dict = &self.content[self.start..];
        // `dictSmall` when `dictSize < 64 KiB && dictSize < currentOffset`.
        let dict_small = dict.len() < WINDOW && dict.len() < self.cur;
        let window = Window { dict, cur: self.cur, dict_small };
        compress::compress_ext_dict(tables, src, dst, acceleration, window)
    }
}
