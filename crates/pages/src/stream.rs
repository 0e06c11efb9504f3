//! Streaming reads: one page at a time, for page sets (plain or zstd) and raw page files alike,
//! holding only the tables and one page in memory.

use std::io::{Cursor, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::PagesError;
use crate::format::{self, Counting, FileKind, Header, Parser, Tables};
use crate::meta::{PageMeta, SetMeta};

/// How to read files: the page size of raw files (page sets carry their own), and a ceiling on
/// the page bytes a file may declare (for untrusted input; a zstd frame of a few bytes can expand
/// to gigabytes). The default ceiling is [`crate::limits::read_ceiling`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Page size used for raw page files.
    pub page_size: usize,
    /// Most page bytes accepted; more is [`PagesError::TooLarge`].
    pub max_bytes: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { page_size: crate::DEFAULT_PAGE_SIZE, max_bytes: crate::limits::read_ceiling() }
    }
}

/// One page handed out by [`PageReader::next_page`].
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// Its position in the set.
    pub index: u64,
    /// Its bytes, one page long.
    pub data: &'a [u8],
    /// Where it came from, if the file records it.
    pub meta: Option<&'a PageMeta>,
}

enum Mode {
    Set { header: Header, tables: Tables },
    Raw,
}

/// Reads the pages of a file one by one; see [`PageReader::next_page`].
pub struct PageReader<'a> {
    parser: Parser<Box<dyn Read + Send + 'a>>,
    mode: Mode,
    kind: FileKind,
    page_size: usize,
    max_bytes: u64,
    next: u64,
    /// The page handed out last: cleared when the reader is dropped.
    buf: zeroize::Zeroizing<Vec<u8>>,
    done: bool,
}

impl std::fmt::Debug for PageReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageReader")
            .field("kind", &self.kind)
            .field("page_size", &self.page_size)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl PageReader<'static> {
    /// Opens a page-set file, a zstd-compressed one, or a raw page file of 4 KiB pages.
    pub fn open(path: &Path) -> Result<Self, PagesError> {
        Self::open_with(path, &ReadOptions::default())
    }

    /// [`open`](Self::open) with options.
    pub fn open_with(path: &Path, opts: &ReadOptions) -> Result<Self, PagesError> {
        let file = std::fs::File::open(path).map_err(|e| PagesError::io(path, e))?;
        let len = file.metadata().map_err(|e| PagesError::io(path, e))?.len();
        let reader = Self::new(std::io::BufReader::with_capacity(1 << 16, file), opts)
            .map_err(|e| e.in_file(path))?;
        if reader.kind == FileKind::Raw && len % reader.page_size as u64 != 0 {
            return Err(raw_partial(len, reader.page_size).in_file(path));
        }
        Ok(reader)
    }
}

fn raw_partial(len: u64, page_size: usize) -> PagesError {
    let ps = page_size as u64;
    PagesError::Truncated {
        offset: len,
        what: format!(
            "the partial last page of a {len}-byte raw page file (page {}, at offset {})",
            len / ps,
            len / ps * ps
        ),
        needed: ps - len % ps,
        compressed: false,
    }
}

impl<'a> PageReader<'a> {
    /// Reads from any byte stream, detecting the format from its first bytes.
    pub fn new<R: Read + Send + 'a>(r: R, opts: &ReadOptions) -> Result<Self, PagesError> {
        format::check_page_size(opts.page_size)?;
        crate::private::hold()?;
        let mut parser = Parser::new(Box::new(r) as Box<dyn Read + Send + 'a>, None);
        let mut magic = [0u8; 8];
        let got = parser.read_some(&mut magic)?;
        let kind = format::detect(&magic[..got]);
        if kind == FileKind::Zstd {
            let count = Arc::new(AtomicU64::new(0));
            let rest = std::mem::replace(&mut parser.r, Box::new(std::io::empty()));
            let counting = Counting { inner: Cursor::new(magic).chain(rest), count: count.clone() };
            let decoder = zstd::stream::read::Decoder::new(counting).map_err(PagesError::Stream)?;
            let mut inner =
                Parser::new(Box::new(decoder) as Box<dyn Read + Send + 'a>, Some(count));
            let got = inner.read_some(&mut magic)?;
            let mut reader = Self::start(inner, &magic[..got], opts)?;
            reader.kind = FileKind::Zstd;
            return Ok(reader);
        }
        Self::start(parser, &magic[..got], opts)
    }

    /// Continues after the first `prefix` bytes (at most 8) of a page set or raw stream.
    fn start(
        mut parser: Parser<Box<dyn Read + Send + 'a>>,
        prefix: &[u8],
        opts: &ReadOptions,
    ) -> Result<Self, PagesError> {
        let (mode, page_size, kind) = if prefix.starts_with(&format::MAGIC) {
            let mut magic = [0u8; 8];
            magic.copy_from_slice(prefix);
            let header = parser.header_after_magic(magic)?;
            if header.data_len() > opts.max_bytes {
                return Err(PagesError::TooLarge {
                    declared: header.data_len(),
                    limit: opts.max_bytes,
                });
            }
            let tables = parser.tables(&header)?;
            (Mode::Set { header, tables }, header.page_size, FileKind::PageSet)
        } else {
            // The bytes already read are the start of page 0: put them back in front.
            let rest = std::mem::replace(&mut parser.r, Box::new(std::io::empty()));
            parser.r = Box::new(Cursor::new(prefix.to_vec()).chain(rest));
            parser.offset = 0;
            (Mode::Raw, opts.page_size, FileKind::Raw)
        };
        Ok(Self {
            parser,
            mode,
            kind,
            page_size,
            max_bytes: opts.max_bytes,
            next: 0,
            buf: zeroize::Zeroizing::new(vec![0u8; page_size]),
            done: false,
        })
    }

    /// What the file is.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// Page size of the pages handed out.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Number of pages, when the file declares it (page sets; not raw streams).
    pub fn page_count(&self) -> Option<u64> {
        match &self.mode {
            Mode::Set { header, .. } => Some(header.page_count),
            Mode::Raw => None,
        }
    }

    /// All per-page metadata, if the file has it (read up front with the tables).
    pub fn metas(&self) -> Option<&[PageMeta]> {
        match &self.mode {
            Mode::Set { tables, .. } => tables.meta.as_deref(),
            Mode::Raw => None,
        }
    }

    /// Set-level metadata, if the file has it (format version 2).
    pub fn set_meta(&self) -> Option<&SetMeta> {
        match &self.mode {
            Mode::Set { tables, .. } => tables.set_meta.as_ref(),
            Mode::Raw => None,
        }
    }

    /// The next page, `Ok(None)` at the end. Each page set page is checked against its checksum
    /// before it is handed out. After an error the reader is finished.
    pub fn next_page(&mut self) -> Result<Option<Page<'_>>, PagesError> {
        if self.done {
            return Ok(None);
        }
        let r = self.advance();
        if !matches!(r, Ok(true)) {
            self.done = true;
        }
        match r {
            Ok(true) => {
                let index = self.next - 1;
                let meta = match &self.mode {
                    Mode::Set { tables, .. } => tables.meta.as_ref().map(|m| &m[index as usize]),
                    Mode::Raw => None,
                };
                Ok(Some(Page { index, data: &self.buf, meta }))
            }
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads the next page into `buf`; false at the end.
    fn advance(&mut self) -> Result<bool, PagesError> {
        let index = self.next;
        match &self.mode {
            Mode::Set { header, tables } => {
                if index == header.page_count {
                    self.parser.expect_end()?;
                    return Ok(false);
                }
                let crc = tables.crcs[index as usize];
                self.parser.page(index, crc, &mut self.buf)?;
            }
            Mode::Raw => {
                let at = self.parser.offset;
                let got = self.parser.read_some(&mut self.buf)?;
                if got == 0 {
                    return Ok(false);
                }
                if got < self.page_size {
                    let mut e = raw_partial(at + got as u64, self.page_size);
                    if let PagesError::Truncated { compressed, .. } = &mut e {
                        *compressed = self.parser.zstd_pos.is_some();
                    }
                    return Err(e);
                }
                let total = (index + 1).saturating_mul(self.page_size as u64);
                if total > self.max_bytes {
                    return Err(PagesError::TooLarge { declared: total, limit: self.max_bytes });
                }
            }
        }
        self.next += 1;
        Ok(true)
    }
}
