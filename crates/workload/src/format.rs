//! The page-set file format, version 1: encoding, and a parser over any `Read` that reports the
//! byte offset of every failure.
//!
//! Why this layout: a page set is read three ways. The lab maps it and wants the pages
//! contiguous and page-aligned in the file, so that `bytes()` is one slice of the mapping. Replay
//! streams it (possibly through zstd, which cannot seek) and wants every page's metadata before
//! the page itself. Both are served by putting all the small tables first, then padding to a page
//! boundary, then the pages. The tables cost 4 bytes per page (checksums) plus 24 with metadata,
//! under 1 % of a 4 KiB page. Checksums are CRC32 (IEEE, as zlib/gzip): one over the header, one
//! over all tables, one per page, so a flipped bit is pinned to the page it is in.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "ZMEMPAGE"
//!      8     2  version (1)
//!     10     2  flags: bit 0 = per-page metadata present; other bits must be 0
//!     12     4  page size in bytes: a power of two, 512 ..= 1 MiB
//!     16     8  page count
//!     24     8  name table length in bytes
//!     32     8  data offset: where page 0 starts (see below)
//!     40     4  CRC32 of the tables, bytes 64 .. tables end
//!     44    16  reserved, must be 0
//!     60     4  CRC32 of bytes 0 .. 60
//!     64        name table: entries of { u16 length, UTF-8 bytes }, exactly `name table length`
//!               metadata (if flag 0): page count x 24-byte records
//!                   { u64 vaddr, u32 pid, u32 name index (0xffffffff: none), u8 kind, 7 x 0 }
//!                   kind: 0 other, 1 heap, 2 stack, 3 anon
//!               page checksums: page count x u32 CRC32 of each page
//!               zero padding up to the data offset
//!    data offset = round_up(tables end, page size)
//!               pages: page count x page size bytes; the file ends exactly here
//! ```
//! All integers are little-endian. A zstd-compressed page set is this byte stream inside a zstd
//! frame (what `zstd FILE` makes of it); offsets in errors then count decompressed bytes.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::WorkloadError;
use crate::meta::{MappingKind, PageMeta};

/// The first eight bytes of a page-set file.
pub const MAGIC: [u8; 8] = *b"ZMEMPAGE";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 64;
/// Length of one metadata record.
pub const META_RECORD_LEN: usize = 24;
/// Header flag: per-page metadata is present.
pub const FLAG_META: u16 = 1;
/// The zstd frame magic (little-endian 0xFD2FB528).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// Name index meaning "no name".
const NO_NAME: u32 = u32::MAX;
/// Smallest and largest page size the format accepts.
pub const MIN_PAGE_SIZE: usize = 512;
pub const MAX_PAGE_SIZE: usize = 1 << 20;

/// What a file holds, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A page-set file (starts with [`MAGIC`]).
    PageSet,
    /// A zstd frame (holding a page set or raw pages).
    Zstd,
    /// Anything else: bare pages, back to back.
    Raw,
}

/// Classifies a file by its first bytes (give at least 8 when the file has them).
pub fn detect(prefix: &[u8]) -> FileKind {
    if prefix.starts_with(&MAGIC) {
        FileKind::PageSet
    } else if prefix.starts_with(&ZSTD_MAGIC) {
        FileKind::Zstd
    } else {
        FileKind::Raw
    }
}

/// Checks a page size: a power of two in the range the format allows.
pub fn check_page_size(page_size: usize) -> Result<(), WorkloadError> {
    if page_size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        Ok(())
    } else {
        Err(WorkloadError::Invalid(format!(
            "page size {page_size} is not a power of two in {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE}"
        )))
    }
}

/// The decoded fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub page_size: usize,
    pub page_count: u64,
    pub names_len: u64,
    pub data_offset: u64,
    pub tables_crc: u32,
    pub has_meta: bool,
}

impl Header {
    /// Where the tables end, or `None` on overflow.
    fn tables_end(page_count: u64, names_len: u64, has_meta: bool) -> Option<u64> {
        let per_page = 4 + if has_meta { META_RECORD_LEN as u64 } else { 0 };
        (HEADER_LEN as u64).checked_add(names_len)?.checked_add(page_count.checked_mul(per_page)?)
    }

    /// The data offset the layout prescribes.
    pub fn layout_data_offset(
        page_size: usize,
        page_count: u64,
        names_len: u64,
        has_meta: bool,
    ) -> Option<u64> {
        let end = Self::tables_end(page_count, names_len, has_meta)?;
        let ps = page_size as u64;
        end.checked_add(ps - 1).map(|x| x / ps * ps)
    }

    /// Total bytes of page data.
    pub fn data_len(&self) -> u64 {
        // Checked at decode time not to overflow.
        self.page_count * self.page_size as u64
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..10].copy_from_slice(&VERSION.to_le_bytes());
        let flags = if self.has_meta { FLAG_META } else { 0 };
        h[10..12].copy_from_slice(&flags.to_le_bytes());
        h[12..16].copy_from_slice(&(self.page_size as u32).to_le_bytes());
        h[16..24].copy_from_slice(&self.page_count.to_le_bytes());
        h[24..32].copy_from_slice(&self.names_len.to_le_bytes());
        h[32..40].copy_from_slice(&self.data_offset.to_le_bytes());
        h[40..44].copy_from_slice(&self.tables_crc.to_le_bytes());
        let crc = crc32fast::hash(&h[0..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Decodes and validates a header. `compressed` only shapes error messages.
    pub fn decode(h: &[u8; HEADER_LEN], compressed: bool) -> Result<Self, WorkloadError> {
        let bad = |offset: u64, msg: String| WorkloadError::Corrupt { offset, msg, compressed };
        let u16_at = |o: usize| u16::from_le_bytes([h[o], h[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[o..o + 8]);
            u64::from_le_bytes(b)
        };
        if h[0..8] != MAGIC {
            return Err(bad(0, "not a page set (bad magic)".into()));
        }
        let stored = u32_at(60);
        let computed = crc32fast::hash(&h[0..60]);
        if stored != computed {
            return Err(bad(
                60,
                format!(
                    "header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        let version = u16_at(8);
        if version != VERSION {
            return Err(bad(
                8,
                format!("unsupported page-set version {version} (this reads {VERSION})"),
            ));
        }
        let flags = u16_at(10);
        if flags & !FLAG_META != 0 {
            return Err(bad(10, format!("unknown flags {flags:#06x}")));
        }
        let page_size = u32_at(12) as usize;
        if check_page_size(page_size).is_err() {
            return Err(bad(12, format!("invalid page size {page_size}")));
        }
        if let Some(i) = (44..60).find(|&i| h[i] != 0) {
            return Err(bad(i as u64, "reserved header bytes are not zero".into()));
        }
        let page_count = u64_at(16);
        if page_count.checked_mul(page_size as u64).is_none() {
            return Err(bad(16, format!("page count {page_count} overflows")));
        }
        let names_len = u64_at(24);
        let has_meta = flags & FLAG_META != 0;
        let data_offset = u64_at(32);
        let expected = Self::layout_data_offset(page_size, page_count, names_len, has_meta)
            .filter(|d| d.checked_add(page_count * page_size as u64).is_some());
        match expected {
            None => return Err(bad(24, "table sizes overflow".into())),
            Some(e) if e != data_offset => {
                return Err(bad(32, format!("data offset {data_offset}, the layout says {e}")));
            }
            Some(_) => {}
        }
        Ok(Self { page_size, page_count, names_len, data_offset, tables_crc: u32_at(40), has_meta })
    }
}

/// Everything between the header and the pages.
#[derive(Debug)]
pub(crate) struct Tables {
    pub meta: Option<Vec<PageMeta>>,
    pub crcs: Vec<u32>,
}

/// Counts the bytes a reader hands out, so that a zstd decoder's errors can name how far into the
/// compressed file it got.
#[derive(Debug)]
pub(crate) struct Counting<R> {
    pub inner: R,
    pub count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads a page-set (or raw) byte stream, tracking the offset for error messages.
pub(crate) struct Parser<R> {
    pub r: R,
    /// Bytes consumed so far (of the decompressed stream when `zstd_pos` is set).
    pub offset: u64,
    /// Compressed bytes consumed, for zstd streams.
    pub zstd_pos: Option<Arc<AtomicU64>>,
}

impl<R> std::fmt::Debug for Parser<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parser").field("offset", &self.offset).finish_non_exhaustive()
    }
}

impl<R: Read> Parser<R> {
    pub fn new(r: R, zstd_pos: Option<Arc<AtomicU64>>) -> Self {
        Self { r, offset: 0, zstd_pos }
    }

    fn compressed(&self) -> bool {
        self.zstd_pos.is_some()
    }

    fn stream_error(&self, e: std::io::Error) -> WorkloadError {
        match &self.zstd_pos {
            Some(pos) => WorkloadError::Zstd { offset: pos.load(Ordering::Relaxed), error: e },
            None => WorkloadError::Stream(e),
        }
    }

    /// Reads as many bytes as are available up to `buf.len()`; returns how many.
    pub fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, WorkloadError> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.stream_error(e)),
            }
        }
        self.offset += got as u64;
        Ok(got)
    }

    /// Fills `buf` or fails with [`WorkloadError::Truncated`] naming where the data ran out.
    pub fn read_exact(
        &mut self,
        buf: &mut [u8],
        what: impl FnOnce() -> String,
    ) -> Result<(), WorkloadError> {
        let got = self.read_some(buf)?;
        if got < buf.len() {
            return Err(WorkloadError::Truncated {
                offset: self.offset,
                what: what(),
                needed: (buf.len() - got) as u64,
                compressed: self.compressed(),
            });
        }
        Ok(())
    }

    fn corrupt(&self, offset: u64, msg: String) -> WorkloadError {
        WorkloadError::Corrupt { offset, msg, compressed: self.compressed() }
    }

    /// Reads the rest of the header after its 8-byte magic, already consumed into `magic`.
    pub fn header_after_magic(&mut self, magic: [u8; 8]) -> Result<Header, WorkloadError> {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&magic);
        self.read_exact(&mut h[8..], || "the page-set header".into())?;
        Header::decode(&h, self.compressed())
    }

    /// Reads the name table, metadata and checksums, and the padding up to the pages.
    pub fn tables(&mut self, h: &Header) -> Result<Tables, WorkloadError> {
        let mut crc = crc32fast::Hasher::new();
        let names_start = self.offset;
        let names_end = names_start + h.names_len;
        let mut names: Vec<Arc<str>> = Vec::new();
        while self.offset < names_end {
            let entry = self.offset;
            let mut len = [0u8; 2];
            self.read_exact(&mut len, || format!("name table entry {}", names.len()))?;
            let len = u16::from_le_bytes(len) as u64;
            if self.offset + len > names_end {
                return Err(self.corrupt(
                    entry,
                    format!("name table entry {} overruns the table", names.len()),
                ));
            }
            let mut bytes = vec![0u8; len as usize];
            self.read_exact(&mut bytes, || format!("name table entry {}", names.len()))?;
            crc.update(&(len as u16).to_le_bytes());
            crc.update(&bytes);
            let name = String::from_utf8(bytes).map_err(|_| {
                self.corrupt(entry + 2, format!("name table entry {} is not UTF-8", names.len()))
            })?;
            names.push(name.into());
        }
        // Never trust a count from the file for an up-front allocation.
        let cap = h.page_count.min(1 << 16) as usize;
        let meta = if h.has_meta {
            let none: Arc<str> = Arc::from("");
            let mut meta = Vec::with_capacity(cap);
            let mut rec = [0u8; META_RECORD_LEN];
            for i in 0..h.page_count {
                let at = self.offset;
                self.read_exact(&mut rec, || format!("metadata record of page {i}"))?;
                crc.update(&rec);
                let mut b8 = [0u8; 8];
                b8.copy_from_slice(&rec[0..8]);
                let vaddr = u64::from_le_bytes(b8);
                let pid = u32::from_le_bytes([rec[8], rec[9], rec[10], rec[11]]);
                let name = u32::from_le_bytes([rec[12], rec[13], rec[14], rec[15]]);
                let kind = MappingKind::from_code(rec[16]).ok_or_else(|| {
                    self.corrupt(at + 16, format!("page {i}: unknown mapping kind {}", rec[16]))
                })?;
                if let Some(j) = (17..META_RECORD_LEN).find(|&j| rec[j] != 0) {
                    return Err(self.corrupt(
                        at + j as u64,
                        format!("page {i}: reserved metadata bytes are not zero"),
                    ));
                }
                let comm = if name == NO_NAME {
                    none.clone()
                } else {
                    names.get(name as usize).cloned().ok_or_else(|| {
                        self.corrupt(
                            at + 12,
                            format!(
                                "page {i}: name index {name} out of range ({} names)",
                                names.len()
                            ),
                        )
                    })?
                };
                meta.push(PageMeta { pid, comm, vaddr, kind });
            }
            Some(meta)
        } else {
            None
        };
        let mut crcs = Vec::with_capacity(cap);
        let mut b4 = [0u8; 4];
        for i in 0..h.page_count {
            self.read_exact(&mut b4, || format!("checksum of page {i}"))?;
            crc.update(&b4);
            crcs.push(u32::from_le_bytes(b4));
        }
        let computed = crc.finalize();
        if computed != h.tables_crc {
            return Err(self.corrupt(
                HEADER_LEN as u64,
                format!(
                    "tables (bytes {HEADER_LEN}..{}) do not match their checksum at offset 40 (stored {:#010x}, computed {computed:#010x})",
                    self.offset, h.tables_crc
                ),
            ));
        }
        let mut pad = vec![0u8; (h.data_offset - self.offset) as usize];
        let pad_at = self.offset;
        self.read_exact(&mut pad, || "padding before the pages".into())?;
        if let Some(j) = pad.iter().position(|&b| b != 0) {
            return Err(
                self.corrupt(pad_at + j as u64, "padding before the pages is not zero".into())
            );
        }
        Ok(Tables { meta, crcs })
    }

    /// Reads page `index` into `buf` (one page long) and checks it against `crc`.
    pub fn page(&mut self, index: u64, crc: u32, buf: &mut [u8]) -> Result<(), WorkloadError> {
        let at = self.offset;
        self.read_exact(buf, || format!("page {index}"))?;
        check_page(index, at, crc, buf, self.compressed())
    }

    /// Fails if any byte follows.
    pub fn expect_end(&mut self) -> Result<(), WorkloadError> {
        let at = self.offset;
        let mut b = [0u8; 1];
        if self.read_some(&mut b)? != 0 {
            return Err(self.corrupt(at, "unexpected bytes after the last page".into()));
        }
        Ok(())
    }
}

/// Checks one page against its stored checksum.
pub(crate) fn check_page(
    index: u64,
    at: u64,
    crc: u32,
    page: &[u8],
    compressed: bool,
) -> Result<(), WorkloadError> {
    let computed = crc32fast::hash(page);
    if computed != crc {
        return Err(WorkloadError::Corrupt {
            offset: at,
            msg: format!(
                "page {index}: checksum mismatch (stored {crc:#010x}, computed {computed:#010x})"
            ),
            compressed,
        });
    }
    Ok(())
}

/// Writes a page set: `data` is `page_size`-sized pages back to back, `meta` (if any) one record
/// per page.
pub(crate) fn write<W: Write>(
    w: &mut W,
    page_size: usize,
    data: &[u8],
    meta: Option<&[PageMeta]>,
) -> std::io::Result<()> {
    let page_count = (data.len() / page_size) as u64;
    let mut tables = Vec::new();
    let mut names_len = 0u64;
    let mut records = Vec::new();
    if let Some(meta) = meta {
        let mut index: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        for m in meta {
            let name = if m.comm.is_empty() {
                NO_NAME
            } else if let Some(&i) = index.get(&*m.comm) {
                i
            } else {
                let i = index.len() as u32;
                index.insert(&m.comm, i);
                let s = truncate_utf8(&m.comm, u16::MAX as usize);
                tables.extend_from_slice(&(s.len() as u16).to_le_bytes());
                tables.extend_from_slice(s.as_bytes());
                i
            };
            records.extend_from_slice(&m.vaddr.to_le_bytes());
            records.extend_from_slice(&m.pid.to_le_bytes());
            records.extend_from_slice(&name.to_le_bytes());
            records.push(m.kind.code());
            records.extend_from_slice(&[0u8; 7]);
        }
        names_len = tables.len() as u64;
        tables.extend_from_slice(&records);
    }
    for page in data.chunks_exact(page_size) {
        tables.extend_from_slice(&crc32fast::hash(page).to_le_bytes());
    }
    let has_meta = meta.is_some();
    let data_offset = Header::layout_data_offset(page_size, page_count, names_len, has_meta)
        .ok_or_else(|| std::io::Error::other("page set too large"))?;
    let h = Header {
        page_size,
        page_count,
        names_len,
        data_offset,
        tables_crc: crc32fast::hash(&tables),
        has_meta,
    };
    w.write_all(&h.encode())?;
    w.write_all(&tables)?;
    let pad = data_offset - HEADER_LEN as u64 - tables.len() as u64;
    w.write_all(&vec![0u8; pad as usize])?;
    w.write_all(data)
}

fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
