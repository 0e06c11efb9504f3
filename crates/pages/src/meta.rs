//! Per-page metadata (where a captured page came from) and set-level metadata (what the whole
//! set was taken from).

use std::collections::BTreeMap;
use std::sync::Arc;

/// Set-level metadata: key/value pairs about the whole set (for a capture of a zram device: its
/// algorithm, `mm_stat`, disk size, the kernel version, the time; see
/// zmem-kernel's zram capture). Keys are printable ASCII without `=` or `\`
/// ([`crate::format::valid_set_meta_key`]); values any UTF-8.
pub type SetMeta = BTreeMap<String, String>;

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
    /// A slot of a zram device (`zmem capture --zram`): the page's `vaddr` is the slot index
    /// (the byte offset on the device divided by the page size), `pid` is 0 and `comm` the
    /// device's name (`zram1`). Written in format version 2.
    ZramSlot,
}

impl MappingKind {
    /// The byte stored in the page-set format.
    pub fn code(self) -> u8 {
        match self {
            Self::Other => 0,
            Self::Heap => 1,
            Self::Stack => 2,
            Self::Anon => 3,
            Self::ZramSlot => 4,
        }
    }

    /// The inverse of [`code`](Self::code); `None` for unknown codes.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Other),
            1 => Some(Self::Heap),
            2 => Some(Self::Stack),
            3 => Some(Self::Anon),
            4 => Some(Self::ZramSlot),
            _ => None,
        }
    }

    /// A short lowercase name (`heap`, `stack`, `anon`, `other`, `zram-slot`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Other => "other",
            Self::Heap => "heap",
            Self::Stack => "stack",
            Self::Anon => "anon",
            Self::ZramSlot => "zram-slot",
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
