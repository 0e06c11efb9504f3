//! The page-set file format, versions 1 and 2: encoding, and a parser over any `Read` that
//! reports the byte offset of every failure.
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
//!      8     2  version (1 or 2)
//!     10     2  flags: bit 0 = per-page metadata present; bit 1 = set metadata present
//!               (version 2 only); other bits must be 0
//!     12     4  page size in bytes: a power of two, 512 ..= 1 MiB
//!     16     8  page count
//!     24     8  name table length in bytes
//!     32     8  data offset: where page 0 starts (see below)
//!     40     4  CRC32 of the tables, bytes 64 .. tables end
//!     44     8  set metadata length in bytes (version 2 with flag 1; otherwise 0), at most 1 MiB
//!     52     8  reserved, must be 0
//!     60     4  CRC32 of bytes 0 .. 60
//!     64        name table: entries of { u16 length, UTF-8 bytes }, exactly `name table length`
//!               set metadata (if flag 1): UTF-8 lines "key=value\n", keys strictly ascending
//!                   (see [`encode_set_meta`])
//!               metadata (if flag 0): page count x 24-byte records
//!                   { u64 vaddr, u32 pid, u32 name index (0xffffffff: none), u8 kind, 7 x 0 }
//!                   kind: 0 other, 1 heap, 2 stack, 3 anon, 4 zram slot (vaddr = slot index)
//!               page checksums: page count x u32 CRC32 of each page
//!               zero padding up to the data offset
//!    data offset = round_up(tables end, page size)
//!               pages: page count x page size bytes; the file ends exactly here
//! ```
//! All integers are little-endian. A zstd-compressed page set is this byte stream inside a zstd
//! frame (what `zstd FILE` makes of it); offsets in errors then count decompressed bytes.
//!
//! Versions: the writer writes version 1, byte for byte as before version 2 existed, unless the
//! set has set metadata or a page of kind 4 (zram slot); then it writes version 2, which older
//! readers refuse by its version number. Readers read both.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::PagesError;
use crate::meta::{MappingKind, PageMeta, SetMeta};

/// The first eight bytes of a page-set file.
pub const MAGIC: [u8; 8] = *b"ZMEMPAGE";
/// The newest format version this crate writes and reads (it reads every version from 1).
pub const VERSION: u16 = 2;
/// The version written for sets without set metadata and without zram-slot pages.
pub const VERSION_1: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 64;
/// Length of one metadata record.
pub const META_RECORD_LEN: usize = 24;
/// Header flag: per-page metadata is present.
pub const FLAG_META: u16 = 1;
/// Header flag (version 2): set-level metadata is present.
pub const FLAG_SET_META: u16 = 2;
/// Longest set-metadata section accepted, in bytes.
pub const MAX_SET_META_LEN: u64 = 1 << 20;
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
pub fn check_page_size(page_size: usize) -> Result<(), PagesError> {
    if page_size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        Ok(())
    } else {
        Err(PagesError::Invalid(format!(
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
    /// 1 or 2.
    pub version: u16,
    /// Set metadata length in bytes, when present (version 2, flag 1).
    pub set_meta_len: Option<u64>,
}

impl Header {
    /// Where the tables end, or `None` on overflow.
    fn tables_end(
        page_count: u64,
        names_len: u64,
        set_meta_len: u64,
        has_meta: bool,
    ) -> Option<u64> {
        let per_page = 4 + if has_meta { META_RECORD_LEN as u64 } else { 0 };
        (HEADER_LEN as u64)
            .checked_add(names_len)?
            .checked_add(set_meta_len)?
            .checked_add(page_count.checked_mul(per_page)?)
    }

    /// The data offset the layout prescribes.
    pub fn layout_data_offset(
        page_size: usize,
        page_count: u64,
        names_len: u64,
        set_meta_len: u64,
        has_meta: bool,
    ) -> Option<u64> {
        let end = Self::tables_end(page_count, names_len, set_meta_len, has_meta)?;
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
        h[8..10].copy_from_slice(&self.version.to_le_bytes());
        let mut flags = if self.has_meta { FLAG_META } else { 0 };
        if let Some(len) = self.set_meta_len {
            flags |= FLAG_SET_META;
            h[44..52].copy_from_slice(&len.to_le_bytes());
        }
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
    pub fn decode(h: &[u8; HEADER_LEN], compressed: bool) -> Result<Self, PagesError> {
        let bad = |offset: u64, msg: String| PagesError::Corrupt { offset, msg, compressed };
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
        if !(VERSION_1..=VERSION).contains(&version) {
            return Err(bad(
                8,
                format!("unsupported page-set version {version} (this reads 1 to {VERSION})"),
            ));
        }
        let flags = u16_at(10);
        let known = if version >= 2 { FLAG_META | FLAG_SET_META } else { FLAG_META };
        if flags & !known != 0 {
            return Err(bad(10, format!("unknown flags {flags:#06x} for version {version}")));
        }
        let page_size = u32_at(12) as usize;
        if check_page_size(page_size).is_err() {
            return Err(bad(12, format!("invalid page size {page_size}")));
        }
        let set_meta_len = if flags & FLAG_SET_META != 0 {
            let len = u64_at(44);
            if len > MAX_SET_META_LEN {
                return Err(bad(
                    44,
                    format!("set metadata of {len} bytes, more than {MAX_SET_META_LEN}"),
                ));
            }
            Some(len)
        } else {
            None
        };
        let reserved = if set_meta_len.is_some() { 52 } else { 44 };
        if let Some(i) = (reserved..60).find(|&i| h[i] != 0) {
            return Err(bad(i as u64, "reserved header bytes are not zero".into()));
        }
        let page_count = u64_at(16);
        if page_count.checked_mul(page_size as u64).is_none() {
            return Err(bad(16, format!("page count {page_count} overflows")));
        }
        let names_len = u64_at(24);
        let has_meta = flags & FLAG_META != 0;
        let data_offset = u64_at(32);
        let expected = Self::layout_data_offset(
            page_size,
            page_count,
            names_len,
            set_meta_len.unwrap_or(0),
            has_meta,
        )
        .filter(|d| d.checked_add(page_count * page_size as u64).is_some());
        match expected {
            None => return Err(bad(24, "table sizes overflow".into())),
            Some(e) if e != data_offset => {
                return Err(bad(32, format!("data offset {data_offset}, the layout says {e}")));
            }
            Some(_) => {}
        }
        Ok(Self {
            page_size,
            page_count,
            names_len,
            data_offset,
            tables_crc: u32_at(40),
            has_meta,
            version,
            set_meta_len,
        })
    }
}

/// Everything between the header and the pages.
#[derive(Debug)]
pub(crate) struct Tables {
    pub set_meta: Option<SetMeta>,
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

    fn stream_error(&self, e: std::io::Error) -> PagesError {
        match &self.zstd_pos {
            Some(pos) => PagesError::Zstd { offset: pos.load(Ordering::Relaxed), error: e },
            None => PagesError::Stream(e),
        }
    }

    /// Reads as many bytes as are available up to `buf.len()`; returns how many.
    pub fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, PagesError> {
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
        if let Some(pos) = &self.zstd_pos {
            let compressed = pos.load(Ordering::Relaxed);
            if let Some(bound) = crate::limits::expansion_bound(compressed)
                && self.offset > bound
            {
                return Err(PagesError::Bomb { decompressed: self.offset, compressed });
            }
        }
        Ok(got)
    }

    /// Fills `buf` or fails with [`PagesError::Truncated`] naming where the data ran out.
    pub fn read_exact(
        &mut self,
        buf: &mut [u8],
        what: impl FnOnce() -> String,
    ) -> Result<(), PagesError> {
        let got = self.read_some(buf)?;
        if got < buf.len() {
            return Err(PagesError::Truncated {
                offset: self.offset,
                what: what(),
                needed: (buf.len() - got) as u64,
                compressed: self.compressed(),
            });
        }
        Ok(())
    }

    fn corrupt(&self, offset: u64, msg: String) -> PagesError {
        PagesError::Corrupt { offset, msg, compressed: self.compressed() }
    }

    /// Reads the rest of the header after its 8-byte magic, already consumed into `magic`.
    pub fn header_after_magic(&mut self, magic: [u8; 8]) -> Result<Header, PagesError> {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&magic);
        self.read_exact(&mut h[8..], || "the page-set header".into())?;
        Header::decode(&h, self.compressed())
    }

    /// Reads the name table, metadata and checksums, and the padding up to the pages.
    pub fn tables(&mut self, h: &Header) -> Result<Tables, PagesError> {
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
            // Each name is some page's process: more names than pages is no table zmem wrote,
            // and would let a small file make millions of allocations.
            if names.len() as u64 >= h.page_count {
                return Err(self.corrupt(entry, "the name table has more names than pages".into()));
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
        let set_meta = match h.set_meta_len {
            None => None,
            Some(len) => {
                let at = self.offset;
                // At most MAX_SET_META_LEN (checked with the header): a small allocation.
                let mut bytes = vec![0u8; len as usize];
                self.read_exact(&mut bytes, || "set metadata".into())?;
                crc.update(&bytes);
                Some(
                    decode_set_meta(&bytes)
                        .map_err(|(pos, msg)| self.corrupt(at + pos as u64, msg))?,
                )
            }
        };
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
        Ok(Tables { set_meta, meta, crcs })
    }

    /// Reads page `index` into `buf` (one page long) and checks it against `crc`.
    pub fn page(&mut self, index: u64, crc: u32, buf: &mut [u8]) -> Result<(), PagesError> {
        let at = self.offset;
        self.read_exact(buf, || format!("page {index}"))?;
        check_page(index, at, crc, buf, self.compressed())
    }

    /// Fails if any byte follows.
    pub fn expect_end(&mut self) -> Result<(), PagesError> {
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
) -> Result<(), PagesError> {
    let computed = crc32fast::hash(page);
    if computed != crc {
        return Err(PagesError::Corrupt {
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
    set_meta: Option<&SetMeta>,
) -> std::io::Result<()> {
    let page_count = (data.len() / page_size) as u64;
    let mut tables = Vec::new();
    let mut names_len = 0u64;
    let mut records = Vec::new();
    let set_meta = set_meta
        .map(encode_set_meta)
        .transpose()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
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
    }
    if let Some(s) = &set_meta {
        tables.extend_from_slice(s);
    }
    tables.extend_from_slice(&records);
    for page in data.chunks_exact(page_size) {
        tables.extend_from_slice(&crc32fast::hash(page).to_le_bytes());
    }
    let has_meta = meta.is_some();
    let set_meta_len = set_meta.as_ref().map(|s| s.len() as u64);
    let version = if set_meta.is_some()
        || meta.is_some_and(|m| m.iter().any(|m| m.kind.code() > MappingKind::Anon.code()))
    {
        VERSION
    } else {
        VERSION_1
    };
    let data_offset = Header::layout_data_offset(
        page_size,
        page_count,
        names_len,
        set_meta_len.unwrap_or(0),
        has_meta,
    )
    .ok_or_else(|| std::io::Error::other("page set too large"))?;
    let h = Header {
        page_size,
        page_count,
        names_len,
        data_offset,
        tables_crc: crc32fast::hash(&tables),
        has_meta,
        version,
        set_meta_len,
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

/// Whether `key` may name a set-metadata entry: 1 to 255 bytes of printable ASCII other than
/// `=` and `\`.
pub fn valid_set_meta_key(key: &str) -> bool {
    (1..=255).contains(&key.len())
        && key.bytes().all(|b| b.is_ascii_graphic() && b != b'=' && b != b'\\')
}

/// Encodes set metadata as the file stores it: one line `key=value\n` per entry in key order
/// (the map's order); in values a backslash is written `\\` and a newline `\n`.
/// Fails for an invalid key ([`valid_set_meta_key`]) or a section over [`MAX_SET_META_LEN`].
pub fn encode_set_meta(meta: &SetMeta) -> Result<Vec<u8>, PagesError> {
    let mut out = Vec::new();
    for (k, v) in meta {
        if !valid_set_meta_key(k) {
            return Err(PagesError::Invalid(format!("invalid set metadata key {k:?}")));
        }
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        for &b in v.as_bytes() {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b => out.push(b),
            }
        }
        out.push(b'\n');
    }
    if out.len() as u64 > MAX_SET_META_LEN {
        return Err(PagesError::Invalid(format!(
            "set metadata of {} bytes, more than {MAX_SET_META_LEN}",
            out.len()
        )));
    }
    Ok(out)
}

/// Decodes a set-metadata section; on failure, the byte position in the section and why.
pub fn decode_set_meta(bytes: &[u8]) -> Result<SetMeta, (usize, String)> {
    let mut meta = SetMeta::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let line_end = match bytes[pos..].iter().position(|&b| b == b'\n') {
            Some(n) => pos + n,
            None => return Err((pos, "set metadata line without a newline".into())),
        };
        let line = &bytes[pos..line_end];
        let eq = line
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| (pos, "set metadata line without '='".into()))?;
        let key = std::str::from_utf8(&line[..eq])
            .ok()
            .filter(|k| valid_set_meta_key(k))
            .ok_or_else(|| (pos, "invalid set metadata key".into()))?;
        if meta.last_key_value().is_some_and(|(last, _)| last.as_str() >= key) {
            return Err((pos, format!("set metadata key {key:?} out of order or repeated")));
        }
        let mut value = Vec::with_capacity(line.len() - eq - 1);
        let mut i = eq + 1;
        while i < line.len() {
            match line[i] {
                b'\\' => {
                    match line.get(i + 1) {
                        Some(b'\\') => value.push(b'\\'),
                        Some(b'n') => value.push(b'\n'),
                        _ => return Err((pos + i, "bad escape in set metadata value".into())),
                    }
                    i += 2;
                }
                b => {
                    value.push(b);
                    i += 1;
                }
            }
        }
        let value = String::from_utf8(value)
            .map_err(|_| (pos + eq + 1, "set metadata value is not UTF-8".into()))?;
        meta.insert(key.to_string(), value);
        pos = line_end + 1;
    }
    Ok(meta)
}
