//! [`PageSet`]: pages in memory (owned or mapped), with optional per-page metadata.

use std::io::Write;
use std::path::Path;

use zeroize::Zeroize;

use crate::PagesError;
use crate::format::{self, FileKind, Parser};
use crate::meta::{PageMeta, SetMeta};
use crate::stream::{PageReader, ReadOptions};

/// How [`PageSet::save`] writes a page set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// The plain format: mappable, seekable.
    None,
    /// The plain format inside one zstd frame at this level.
    Zstd(i32),
}

#[derive(Debug)]
enum Data {
    Owned(Vec<u8>),
    Mapped { map: memmap2::Mmap, offset: usize, len: usize },
}

/// Pages are other processes' memory: an owned copy is cleared before its memory is freed (a
/// mapping is the file's own pages, nothing to clear).
impl Drop for Data {
    fn drop(&mut self) {
        if let Data::Owned(v) = self {
            v.zeroize();
        }
    }
}

/// A set of pages: `len()` pages of `page_size()` bytes, contiguous, each with optional
/// metadata (all pages have it or none does).
#[derive(Debug)]
pub struct PageSet {
    page_size: usize,
    data: Data,
    meta: Option<Vec<PageMeta>>,
    set_meta: Option<SetMeta>,
}

impl PageSet {
    /// Reads a page-set file, a zstd-compressed page set (or zstd-compressed raw pages), or a raw
    /// page file of 4 KiB pages, whichever `path` holds (see [`format::detect`]). Every page of a
    /// page set is checked against its checksum.
    ///
    /// A raw file whose length is not a multiple of the page size is rejected with
    /// [`PagesError::Truncated`] naming the partial page: padding it would add bytes the
    /// source never had and skew every ratio measured on it.
    pub fn open(path: &Path) -> Result<Self, PagesError> {
        Self::open_with(path, &ReadOptions::default())
    }

    /// [`open`](Self::open) with options (raw page size, size limit).
    pub fn open_with(path: &Path, opts: &ReadOptions) -> Result<Self, PagesError> {
        let len = page_file_len(path)?;
        let reader = PageReader::open_with(path, opts)?;
        // Reserve what the file can hold, never what an untrusted header claims.
        let hint = match reader.kind() {
            FileKind::Zstd => 0,
            _ => len,
        };
        Self::collect(reader, hint).map_err(|e| e.in_file(path))
    }

    /// Parses a whole file image held in memory (any of the formats [`open`](Self::open) takes).
    pub fn from_bytes(bytes: &[u8], opts: &ReadOptions) -> Result<Self, PagesError> {
        let reader = PageReader::new(bytes, opts)?;
        let hint = if reader.kind() == FileKind::Zstd { 0 } else { bytes.len() as u64 };
        Self::collect(reader, hint)
    }

    fn collect(mut reader: PageReader<'_>, hint: u64) -> Result<Self, PagesError> {
        let page_size = reader.page_size();
        let declared = reader.page_count().map(|n| n.saturating_mul(page_size as u64));
        let reserve = declared.unwrap_or(hint).min(hint).min(isize::MAX as u64) as usize;
        let meta = reader.metas().map(<[PageMeta]>::to_vec);
        let set_meta = reader.set_meta().cloned();
        let mut data = Vec::with_capacity(reserve);
        while let Some(page) = reader.next_page()? {
            data.extend_from_slice(page.data);
        }
        Ok(Self { page_size, data: Data::Owned(data), meta, set_meta })
    }

    /// Maps an uncompressed page-set file or raw page file instead of reading it, after checking
    /// its structure and every page checksum. A zstd-compressed file cannot be mapped and is read
    /// as by [`open_with`](Self::open_with).
    ///
    /// Why `unsafe` mmap exists next to the safe [`open`](Self::open): on the 44 MB real-memory
    /// sample as a page set, `open` took 58-61 ms and `map` 9-12 ms (checksums included; release
    /// build, 3 rounds interleaved), and a mapped set costs no heap: a page file larger than the
    /// memory left can still be walked, the kernel paging it in and out. Tests check that both
    /// give the same pages.
    ///
    /// # Safety
    ///
    /// As [`memmap2::Mmap::map`]: the file must not be modified or truncated, by this process or
    /// any other, while the returned set (which owns the mapping) is alive. The pages are checked
    /// once, here, and then read in place: a file rewritten meanwhile gives pages that change
    /// under the caller's `&[u8]` (undefined behaviour, in practice other bytes than were
    /// checked), and a file truncated meanwhile makes the next read of a page past the new end
    /// raise `SIGBUS`, which kills the process. Callers that cannot rule this out, for instance
    /// because the file is the user's, either accept that outcome and say so, or use
    /// [`open_with`](Self::open_with), which copies the pages into memory.
    pub unsafe fn map(path: &Path, opts: &ReadOptions) -> Result<Self, PagesError> {
        page_file_len(path)?;
        let file = std::fs::File::open(path).map_err(|e| PagesError::io(path, e))?;
        // SAFETY: the mapping is read-only, but shared with the file (`MAP_SHARED`): that the
        // file stays as it is while mapped is this function's contract, passed on to the caller.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| PagesError::io(path, e))?;
        Self::from_map(map, opts, path)
    }

    fn from_map(map: memmap2::Mmap, opts: &ReadOptions, path: &Path) -> Result<Self, PagesError> {
        crate::private::hold()?;
        let bytes: &[u8] = &map;
        match format::detect(bytes) {
            FileKind::Zstd => {
                drop(map);
                Self::open_with(path, opts)
            }
            FileKind::Raw => {
                format::check_page_size(opts.page_size)?;
                let len = bytes.len();
                if !len.is_multiple_of(opts.page_size) {
                    return Self::open_with(path, opts);
                }
                if len as u64 > opts.max_bytes {
                    return Err(PagesError::TooLarge {
                        declared: len as u64,
                        limit: opts.max_bytes,
                    });
                }
                Ok(Self {
                    page_size: opts.page_size,
                    data: Data::Mapped { map, offset: 0, len },
                    meta: None,
                    set_meta: None,
                })
            }
            FileKind::PageSet => {
                let mut parser = Parser::new(bytes, None);
                let mut magic = [0u8; 8];
                parser.read_exact(&mut magic, || "magic".into()).map_err(|e| e.in_file(path))?;
                let header = parser.header_after_magic(magic).map_err(|e| e.in_file(path))?;
                if header.data_len() > opts.max_bytes {
                    return Err(PagesError::TooLarge {
                        declared: header.data_len(),
                        limit: opts.max_bytes,
                    });
                }
                let tables = parser.tables(&header).map_err(|e| e.in_file(path))?;
                let offset = header.data_offset as usize;
                let end = header.data_offset + header.data_len();
                let file_len = bytes.len() as u64;
                if file_len < end {
                    let page = (file_len - header.data_offset) / header.page_size as u64;
                    let e = PagesError::Truncated {
                        offset: file_len,
                        what: format!("page {page}"),
                        needed: end - file_len,
                        compressed: false,
                    };
                    return Err(e.in_file(path));
                }
                if file_len > end {
                    let e = PagesError::Corrupt {
                        offset: end,
                        msg: "unexpected bytes after the last page".into(),
                        compressed: false,
                    };
                    return Err(e.in_file(path));
                }
                let len = header.data_len() as usize;
                for (i, page) in
                    bytes[offset..offset + len].chunks_exact(header.page_size).enumerate()
                {
                    let at = (offset + i * header.page_size) as u64;
                    format::check_page(i as u64, at, tables.crcs[i], page, false)
                        .map_err(|e| e.in_file(path))?;
                }
                Ok(Self {
                    page_size: header.page_size,
                    data: Data::Mapped { map, offset, len },
                    meta: tables.meta,
                    set_meta: tables.set_meta,
                })
            }
        }
    }

    /// Pages from bare bytes: `bytes.len()` must be a multiple of `page_size`.
    pub fn from_raw(bytes: Vec<u8>, page_size: usize) -> Result<Self, PagesError> {
        format::check_page_size(page_size)?;
        if !bytes.len().is_multiple_of(page_size) {
            return Err(PagesError::Invalid(format!(
                "{} bytes is not a whole number of {page_size}-byte pages",
                bytes.len()
            )));
        }
        Ok(Self { page_size, data: Data::Owned(bytes), meta: None, set_meta: None })
    }

    /// Attaches metadata, one record per page.
    pub fn with_meta(mut self, meta: Vec<PageMeta>) -> Result<Self, PagesError> {
        if meta.len() != self.len() {
            return Err(PagesError::Invalid(format!(
                "{} metadata records for {} pages",
                meta.len(),
                self.len()
            )));
        }
        self.meta = Some(meta);
        Ok(self)
    }

    /// Attaches set-level metadata (replacing any). Fails for a key the format cannot hold or a
    /// section over [`format::MAX_SET_META_LEN`] bytes.
    pub fn with_set_meta(mut self, set_meta: SetMeta) -> Result<Self, PagesError> {
        format::encode_set_meta(&set_meta)?;
        self.set_meta = Some(set_meta);
        Ok(self)
    }

    /// Set-level metadata, if the set has it (format version 2).
    pub fn set_meta(&self) -> Option<&SetMeta> {
        self.set_meta.as_ref()
    }

    /// Bytes per page.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.bytes().len() / self.page_size
    }

    /// Whether there are no pages.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the pages are a file mapping rather than owned memory.
    pub fn is_mapped(&self) -> bool {
        matches!(self.data, Data::Mapped { .. })
    }

    /// All pages, contiguous.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Owned(v) => v,
            Data::Mapped { map, offset, len } => &map[*offset..*offset + *len],
        }
    }

    /// Page `i`.
    ///
    /// # Panics
    /// If `i >= len()`, like slice indexing; [`get`](Self::get) is the checked form.
    pub fn page(&self, i: usize) -> &[u8] {
        &self.bytes()[i * self.page_size..(i + 1) * self.page_size]
    }

    /// Page `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        (i < self.len()).then(|| self.page(i))
    }

    /// The pages in order.
    pub fn pages(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes().chunks_exact(self.page_size)
    }

    /// Metadata of page `i`, if the set has metadata and `i` is in range.
    pub fn meta(&self, i: usize) -> Option<&PageMeta> {
        self.meta.as_ref()?.get(i)
    }

    /// All metadata, if the set has it.
    pub fn metas(&self) -> Option<&[PageMeta]> {
        self.meta.as_deref()
    }

    /// Writes the page-set format (uncompressed) to `w`.
    pub fn write_to<W: Write>(&self, w: &mut W) -> Result<(), PagesError> {
        format::write(w, self.page_size, self.bytes(), self.metas(), self.set_meta())
            .map_err(PagesError::Stream)
    }

    /// Writes the page set to `path`: 0600 (it holds memory contents), never through a link
    /// or into another user's file (zmem-files).
    pub fn save(&self, path: &Path, compression: Compression) -> Result<(), PagesError> {
        let io = |e| PagesError::io(path, e);
        let file = zmem_files::create(path, zmem_files::Kind::Private)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        match compression {
            Compression::None => {
                let (meta, set) = (self.metas(), self.set_meta());
                format::write(&mut out, self.page_size, self.bytes(), meta, set).map_err(io)?;
            }
            Compression::Zstd(level) => {
                let mut enc = zstd::stream::write::Encoder::new(&mut out, level).map_err(io)?;
                let (meta, set) = (self.metas(), self.set_meta());
                format::write(&mut enc, self.page_size, self.bytes(), meta, set).map_err(io)?;
                enc.finish().map_err(io)?;
            }
        }
        out.flush().map_err(io)?;
        Ok(out.into_inner().map_err(|e| io(e.into_error()))?.commit()?)
    }

    /// Writes the bare pages to `path` (what `zmem export --raw` does), as [`Self::save`].
    pub fn save_raw(&self, path: &Path) -> Result<(), PagesError> {
        Ok(zmem_files::write(path, zmem_files::Kind::Private, self.bytes())?)
    }
}

/// Builds a [`PageSet`] page by page (generators, capture).
#[derive(Debug)]
pub struct PageSetBuilder {
    page_size: usize,
    data: Vec<u8>,
    meta: Option<Vec<PageMeta>>,
}

/// The length of the page file at `path`, or what it is instead of one: a directory, a device,
/// a FIFO or socket, or an empty file are each named as such (a map or read of them would
/// otherwise fail with the system's words for something else, such as "No such device").
fn page_file_len(path: &Path) -> Result<u64, PagesError> {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::metadata(path).map_err(|e| PagesError::io(path, e))?;
    let t = m.file_type();
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device (capture a zram device with `zmem capture --zram`)"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if m.len() == 0 {
        "an empty file: no pages in it"
    } else {
        return Ok(m.len());
    };
    let error = Box::new(PagesError::Invalid(format!("not a page file: {what}")));
    Err(PagesError::File { path: path.to_path_buf(), error })
}

impl PageSetBuilder {
    /// An empty set of `page_size` pages; `with_meta`: whether pages will carry metadata.
    pub fn new(page_size: usize, with_meta: bool) -> Result<Self, PagesError> {
        crate::private::hold()?;
        format::check_page_size(page_size)?;
        Ok(Self { page_size, data: Vec::new(), meta: with_meta.then(Vec::new) })
    }

    /// Reserves room for `pages` more pages, as a hint: room that cannot be had is left to the
    /// pushes (a caller sizing a set by a user's count checks it with [`crate::limits`] first).
    pub fn reserve(&mut self, pages: usize) {
        let _ = self.data.try_reserve(pages.saturating_mul(self.page_size));
    }

    /// Appends one page; `meta` must be given exactly when the builder was made `with_meta`.
    pub fn push(&mut self, page: &[u8], meta: Option<PageMeta>) -> Result<(), PagesError> {
        if page.len() != self.page_size {
            return Err(PagesError::Invalid(format!(
                "page of {} bytes in a set of {}-byte pages",
                page.len(),
                self.page_size
            )));
        }
        match (&mut self.meta, meta) {
            (Some(all), Some(m)) => all.push(m),
            (None, None) => {}
            _ => return Err(PagesError::Invalid("metadata given for some pages only".into())),
        }
        self.data.extend_from_slice(page);
        Ok(())
    }

    /// Appends a page filled in place by `fill` (generators: no temporary page).
    pub fn push_with(&mut self, fill: impl FnOnce(&mut [u8])) {
        debug_assert!(self.meta.is_none(), "push_with is for sets without metadata");
        let start = self.data.len();
        self.data.resize(start + self.page_size, 0);
        fill(&mut self.data[start..]);
    }

    /// Drops pages past the first `pages` (capture: undo a process that vanished mid-way).
    pub fn truncate(&mut self, pages: usize) {
        self.data.truncate(pages * self.page_size);
        if let Some(m) = &mut self.meta {
            m.truncate(pages);
        }
    }

    /// Pages so far.
    pub fn len(&self) -> usize {
        self.data.len() / self.page_size
    }

    /// Whether no page was pushed.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The finished set.
    pub fn finish(mut self) -> PageSet {
        PageSet {
            page_size: self.page_size,
            data: Data::Owned(std::mem::take(&mut self.data)),
            meta: self.meta.take(),
            set_meta: None,
        }
    }
}

/// A builder dropped unfinished (a capture that failed) clears what it held, as [`PageSet`]
/// does.
impl Drop for PageSetBuilder {
    fn drop(&mut self) {
        self.data.zeroize();
    }
}
