//! Per-page metadata: where a captured page came from.

use std::sync::Arc;

/// What kind of mapping a page was found in, from the pathname column of /proc/PID/maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MappingKind {
    /// Anything else (file-backed, shared memory, unknown; generated pages).
    Other,
    /// `[heap]`: the brk heap.
    Heap,
    /// `[stack]` (and `[stack:TID]` on older kernels).
    Stack,
    /// A private anonymous mapping: no pathname, or `[anon:NAME]` (named with prctl).
    Anon,
}

impl MappingKind {
    /// The byte stored in the page-set format.
    pub fn code(self) -> u8 {
        match self {
            Self::Other => 0,
            Self::Heap => 1,
            Self::Stack => 2,
            Self::Anon => 3,
        }
    }

    /// The inverse of [`code`](Self::code); `None` for unknown codes.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Other),
            1 => Some(Self::Heap),
            2 => Some(Self::Stack),
            3 => Some(Self::Anon),
            _ => None,
        }
    }

    /// A short lowercase name (`heap`, `stack`, `anon`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Other => "other",
            Self::Heap => "heap",
            Self::Stack => "stack",
            Self::Anon => "anon",
        }
    }
}

/// Where one page came from. Generated pages carry no metadata at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageMeta {
    /// Process id.
    pub pid: u32,
    /// Process name (`/proc/PID/comm`); shared by all pages of a process.
    pub comm: Arc<str>,
    /// Virtual address of the page in that process.
    pub vaddr: u64,
    /// The mapping the page was in.
    pub kind: MappingKind,
}
