//! Access traces: which page is read or written when. The file format, a reader, a writer and a
//! summary ([`Summary`]).
//!
//! Why this format: a replay needs the accesses in time order and nothing else; a fixed 16-byte
//! record keeps reading trivial and seekable, and times as absolute nanoseconds from the start of
//! the trace (never decreasing) make idle periods explicit gaps instead of something a replay has
//! to infer. Page ids are indices into a page set (or slots of a zram device), so a trace is
//! replayed against any page set with at least `page_count` pages.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "ZMEMTRCE"
//!      8     2  version (1, or 2 for a trace with file pages)
//!     10     2  flags: bits 0-1 = how the trace was made ([`Origin`]: 0 generated or not
//!                 said, 1 recorded with DAMON, 2 recorded with soft-dirty bits: writes only,
//!                 3 recorded by page-out sampling); other bits must be 0
//!     12     4  reserved, 0
//!     16     8  record count
//!     24     8  page count: every page id is below it
//!     32     4  CRC32 (IEEE) of all records
//!     36     8  file page count (version 2; 0 in version 1): every file read's id is below it
//!     44     4  CRC32 of bytes 0 .. 44
//!     48        records, each 16 bytes:
//!               { u64 time in ns since the trace start (non-decreasing), u32 page id,
//!                 u8 op (0 read, 1 write, 2 file read: version 2 only), 3 x 0 }
//! ```
//! All integers little-endian; the file ends after the last record.
//!
//! A file read (version 2) reads a page of one file, the trace's page cache: its id indexes the
//! file's pages, a space of its own beside the anonymous pages' ids. A trace without file reads
//! is written as version 1, byte for byte what it was before version 2.

pub mod convert;

pub mod generate;

mod summary;

use std::io::{Read, Write};
use std::path::Path;

use crate::PagesError;
use crate::format::Parser;

pub use summary::{PageAccesses, Summary};

/// The first eight bytes of a trace file.
pub const MAGIC: [u8; 8] = *b"ZMEMTRCE";
/// The version of a trace without file pages.
pub const VERSION: u16 = 1;
/// The version of a trace with file pages (a file page count and file reads).
pub const VERSION_FILE_PAGES: u16 = 2;
/// Header length.
pub const HEADER_LEN: usize = 48;
/// Record length.
pub const RECORD_LEN: usize = 16;

/// How a trace was made, kept in the header's flags so that whoever replays it can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Origin {
    /// Generated (`zmem trace gen`), or written by a tool that did not say.
    #[default]
    Generated,
    /// Recorded from live processes with DAMON's region access frequencies
    /// ([`record`]): reads and writes alike, as accesses of the region's pages.
    Damon,
    /// Recorded from live processes with soft-dirty bits ([`record`], where DAMON was not
    /// usable): writes only, at most one per page per interval.
    SoftDirty,
    /// Recorded from live processes by page-out sampling ([`page_out`]): reads and writes
    /// alike, at most one per page per interval.
    PageOut,
}

impl Origin {
    /// The value of the header's flags bits 0-1.
    pub fn code(self) -> u16 {
        match self {
            Self::Generated => 0,
            Self::Damon => 1,
            Self::SoftDirty => 2,
            Self::PageOut => 3,
        }
    }

    /// The inverse of [`code`](Self::code); `None` for an unknown value.
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            0 => Some(Self::Generated),
            1 => Some(Self::Damon),
            2 => Some(Self::SoftDirty),
            3 => Some(Self::PageOut),
            _ => None,
        }
    }

    /// A short name: `generated`, `damon`, `soft-dirty`, `page-out`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Generated => "generated",
            Self::Damon => "damon",
            Self::SoftDirty => "soft-dirty",
            Self::PageOut => "page-out",
        }
    }
}

/// Read or write of an anonymous page, or a read of a file page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Write,
    /// A read of a page of the trace's file (its page cache): the id is a file page's.
    FileRead,
}

impl Op {
    fn code(self) -> u8 {
        match self {
            Self::Read => 0,
            Self::Write => 1,
            Self::FileRead => 2,
        }
    }
}

/// One access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Nanoseconds since the start of the trace.
    pub time_ns: u64,
    /// The page accessed.
    pub page: u32,
    /// Read or write.
    pub op: Op,
}

/// A whole trace in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// Anonymous page ids are below this.
    pub page_count: u64,
    /// File page ids (of [`Op::FileRead`]) are below this; 0 for a trace without page cache.
    pub file_pages: u64,
    /// Accesses in time order.
    pub accesses: Vec<Access>,
}

impl Trace {
    /// Checks the invariants the format requires: ids below `page_count` (a file read's below
    /// `file_pages`), times non-decreasing.
    pub fn validate(&self) -> Result<(), PagesError> {
        let mut last = 0;
        for (i, a) in self.accesses.iter().enumerate() {
            let (limit, what) = match a.op {
                Op::FileRead => (self.file_pages, "file page count"),
                _ => (self.page_count, "page count"),
            };
            if u64::from(a.page) >= limit {
                return Err(PagesError::Invalid(format!(
                    "access {i}: page {} not below {what} {limit}",
                    a.page
                )));
            }
            if a.time_ns < last {
                return Err(PagesError::Invalid(format!("access {i}: time goes backwards")));
            }
            last = a.time_ns;
        }
        Ok(())
    }

    /// Writes the trace format (its origin: [`Origin::Generated`]).
    pub fn write_to<W: Write>(&self, w: &mut W) -> Result<(), PagesError> {
        self.write_as(w, Origin::Generated)
    }

    /// Writes the trace format, saying in the header how the trace was made.
    pub fn write_as<W: Write>(&self, w: &mut W, origin: Origin) -> Result<(), PagesError> {
        self.validate()?;
        let mut records = Vec::with_capacity(self.accesses.len() * RECORD_LEN);
        for a in &self.accesses {
            records.extend_from_slice(&a.time_ns.to_le_bytes());
            records.extend_from_slice(&a.page.to_le_bytes());
            records.push(a.op.code());
            records.extend_from_slice(&[0; 3]);
        }
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        let version = if self.file_pages > 0 { VERSION_FILE_PAGES } else { VERSION };
        h[8..10].copy_from_slice(&version.to_le_bytes());
        h[10..12].copy_from_slice(&origin.code().to_le_bytes());
        h[16..24].copy_from_slice(&(self.accesses.len() as u64).to_le_bytes());
        h[24..32].copy_from_slice(&self.page_count.to_le_bytes());
        h[32..36].copy_from_slice(&crc32fast::hash(&records).to_le_bytes());
        h[36..44].copy_from_slice(&self.file_pages.to_le_bytes());
        let crc = crc32fast::hash(&h[..44]);
        h[44..48].copy_from_slice(&crc.to_le_bytes());
        w.write_all(&h).and_then(|()| w.write_all(&records)).map_err(PagesError::Stream)
    }

    /// Writes the trace to `path`.
    pub fn save(&self, path: &Path) -> Result<(), PagesError> {
        self.save_as(path, Origin::Generated)
    }

    /// Writes the trace to `path`, saying in the header how it was made: 0600 (a trace holds a
    /// process's access pattern), never through a link or into another user's file.
    pub fn save_as(&self, path: &Path, origin: Origin) -> Result<(), PagesError> {
        let mut buf = Vec::new();
        self.write_as(&mut buf, origin).map_err(|e| e.in_file(path))?;
        Ok(zmem_files::write(path, zmem_files::Kind::Private, &buf)?)
    }

    /// Reads a whole trace.
    pub fn read<R: Read>(r: R) -> Result<Self, PagesError> {
        Self::read_with_origin(r).map(|(t, _)| t)
    }

    /// Reads a whole trace and how it was made.
    pub fn read_with_origin<R: Read>(r: R) -> Result<(Self, Origin), PagesError> {
        let mut reader = TraceReader::new(r)?;
        let cap = reader.len().min(1 << 20) as usize;
        let mut accesses = Vec::with_capacity(cap);
        while let Some(a) = reader.next_access()? {
            accesses.push(a);
        }
        let (page_count, file_pages) = (reader.page_count(), reader.file_pages());
        Ok((Self { page_count, file_pages, accesses }, reader.origin()))
    }

    /// Reads a trace file.
    pub fn open(path: &Path) -> Result<Self, PagesError> {
        Self::open_with_origin(path).map(|(t, _)| t)
    }

    /// Reads a trace file and how it was made.
    pub fn open_with_origin(path: &Path) -> Result<(Self, Origin), PagesError> {
        let f = std::fs::File::open(path).map_err(|e| PagesError::io(path, e))?;
        Self::read_with_origin(std::io::BufReader::new(f)).map_err(|e| e.in_file(path))
    }
}

/// Streams the accesses of a trace file; the records checksum is checked after the last one.
pub struct TraceReader<R> {
    parser: Parser<R>,
    count: u64,
    page_count: u64,
    file_pages: u64,
    records_crc: u32,
    origin: Origin,
    crc: crc32fast::Hasher,
    next: u64,
    last_time: u64,
}

impl<R> std::fmt::Debug for TraceReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader").field("count", &self.count).field("next", &self.next).finish()
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the header.
    pub fn new(r: R) -> Result<Self, PagesError> {
        let mut parser = Parser::new(r, None);
        let mut h = [0u8; HEADER_LEN];
        parser.read_exact(&mut h, || "the trace header".into())?;
        let bad = |offset: u64, msg: String| PagesError::Corrupt { offset, msg, compressed: false };
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        if h[..8] != MAGIC {
            return Err(bad(0, "not a trace (bad magic)".into()));
        }
        let (stored, computed) = (u32_at(44), crc32fast::hash(&h[..44]));
        if stored != computed {
            return Err(bad(
                44,
                format!(
                    "header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if version != VERSION && version != VERSION_FILE_PAGES {
            return Err(bad(8, format!("unsupported trace version {version}")));
        }
        let flags = u16::from_le_bytes([h[10], h[11]]);
        let origin = Origin::from_code(flags & 3)
            .filter(|_| flags & !3 == 0)
            .ok_or_else(|| bad(10, format!("unknown flags {flags:#06x}")))?;
        let reserved = if version == VERSION { 36..44 } else { 0..0 };
        if let Some(i) = (12..16).chain(reserved).find(|&i| h[i] != 0) {
            return Err(bad(i as u64, "reserved bytes are not zero".into()));
        }
        if version == VERSION_FILE_PAGES && u64_at(36) == 0 {
            // One encoding per trace: one without file pages is version 1.
            return Err(bad(36, "a version 2 trace with no file pages".into()));
        }
        Ok(Self {
            parser,
            count: u64_at(16),
            page_count: u64_at(24),
            file_pages: u64_at(36),
            records_crc: u32_at(32),
            origin,
            crc: crc32fast::Hasher::new(),
            next: 0,
            last_time: 0,
        })
    }

    /// Number of records the header declares.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether the trace has no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Page ids are below this.
    pub fn page_count(&self) -> u64 {
        self.page_count
    }

    /// File page ids are below this (0: no file reads).
    pub fn file_pages(&self) -> u64 {
        self.file_pages
    }

    /// How the trace was made (the header's flags).
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The next access, `Ok(None)` after the last (once its checksum and the end are checked).
    pub fn next_access(&mut self) -> Result<Option<Access>, PagesError> {
        let bad = |offset: u64, msg: String| PagesError::Corrupt { offset, msg, compressed: false };
        if self.next == self.count {
            let computed = self.crc.clone().finalize();
            if computed != self.records_crc {
                return Err(bad(
                    HEADER_LEN as u64,
                    format!(
                        "records do not match their checksum at offset 32 (stored {:#010x}, computed {computed:#010x})",
                        self.records_crc
                    ),
                ));
            }
            self.next += 1;
            return self.parser.expect_end().map(|()| None);
        }
        if self.next > self.count {
            return Ok(None);
        }
        let at = self.parser.offset;
        let i = self.next;
        let mut rec = [0u8; RECORD_LEN];
        self.parser.read_exact(&mut rec, || format!("trace record {i}"))?;
        self.crc.update(&rec);
        let mut t = [0u8; 8];
        t.copy_from_slice(&rec[..8]);
        let time_ns = u64::from_le_bytes(t);
        let page = u32::from_le_bytes([rec[8], rec[9], rec[10], rec[11]]);
        let op = match rec[12] {
            0 => Op::Read,
            1 => Op::Write,
            2 if self.file_pages > 0 => Op::FileRead,
            x => return Err(bad(at + 12, format!("record {i}: unknown op {x}"))),
        };
        if rec[13..].iter().any(|&b| b != 0) {
            return Err(bad(at + 13, format!("record {i}: reserved bytes are not zero")));
        }
        let (limit, what) = match op {
            Op::FileRead => (self.file_pages, "file page count"),
            _ => (self.page_count, "page count"),
        };
        if u64::from(page) >= limit {
            return Err(bad(at + 8, format!("record {i}: page {page} not below {what} {limit}")));
        }
        if time_ns < self.last_time {
            return Err(bad(
                at,
                format!("record {i}: time {time_ns} is before the previous record's"),
            ));
        }
        self.last_time = time_ns;
        self.next += 1;
        Ok(Some(Access { time_ns, page, op }))
    }
}
