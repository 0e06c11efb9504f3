//! zsmalloc's size classes, derived from the page size and the chain size as mm/zsmalloc.c
//! `zs_create_pool()` derives them (kernel >= 6.3, 6.18 included).
//!
//! Raw class index `i` has slot size `min(ZS_MIN_ALLOC_SIZE + i * ZS_SIZE_CLASS_DELTA,
//! PAGE_SIZE)`, with the delta `PAGE_SIZE >> CLASS_BITS` (16 B at 4 KiB). Each size gets the
//! zspage chain length (1..=chain pages) that wastes the fewest bytes at its tail (first
//! minimum; 1 for powers of two: `calculate_zspage_chain_size()`). Walking from the largest
//! index down, an index whose (pages per zspage, objects per zspage) equals the class created
//! just before it is *merged* (`can_merge()`)
//! into that larger class: it costs the same pages per object, and sharing one class lets
//! objects of neighbouring sizes fill the same zspages. `huge_class_size` is the raw size of the
//! first index from the top that holds more than one object in more than one page, minus
//! `ZS_HANDLE_SIZE - 1`: a request that large or larger ends up, after the 8-byte handle is
//! added, in a class that stores one object per page.

use crate::PoolError;

/// The header in front of every non-huge object: the object's handle.
pub const ZS_HANDLE_SIZE: usize = 8;
/// `CLASS_BITS`: the class spacing is `PAGE_SIZE >> CLASS_BITS`.
pub const CLASS_BITS: u32 = 8;
/// `CONFIG_ZSMALLOC_CHAIN_SIZE` default and range.
pub const DEFAULT_CHAIN_SIZE: usize = 8;
/// Smallest accepted chain size.
pub const MIN_CHAIN_SIZE: usize = 4;
/// Largest accepted chain size.
pub const MAX_CHAIN_SIZE: usize = 16;
/// `MAX_POSSIBLE_PHYSMEM_BITS` of x86_64 with 5-level paging.
const MAX_PHYSMEM_BITS: u32 = 52;

/// One (distinct, unmerged) size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeClass {
    /// The raw index the class was created at (`class->index`).
    pub index: usize,
    /// Slot size in bytes, handle header included.
    pub size: usize,
    /// Pages of one zspage.
    pub pages_per_zspage: usize,
    /// Objects of one zspage.
    pub objs_per_zspage: usize,
}

impl SizeClass {
    /// One object per one-page zspage: no inline handle header (`ZsHugePage`).
    pub fn is_huge(&self) -> bool {
        self.pages_per_zspage == 1 && self.objs_per_zspage == 1
    }
}

/// The class table of one pool.
#[derive(Debug, Clone)]
pub struct ClassTable {
    page_size: usize,
    chain_size: usize,
    min_alloc: usize,
    delta: usize,
    /// Distinct classes, ascending by index.
    classes: Vec<SizeClass>,
    /// Raw index -> position in `classes` (merged indices point at their larger class).
    slot_of_index: Vec<u16>,
    huge_class_size: usize,
}

/// `calculate_zspage_chain_size`: the chain length with the least tail waste.
pub fn chain_length(size: usize, page_size: usize, chain_size: usize) -> usize {
    if size.is_power_of_two() {
        return 1;
    }
    let mut best = (usize::MAX, 1);
    for k in 1..=chain_size {
        let waste = (k * page_size) % size;
        if waste < best.0 {
            best = (waste, k);
        }
    }
    best.1
}

impl ClassTable {
    /// Builds the table for `page_size` (4096, 16384 or 65536) and `chain_size` (4..=16).
    pub fn new(page_size: usize, chain_size: usize) -> Result<Self, PoolError> {
        if !matches!(page_size, 4096 | 16384 | 65536) {
            return Err(PoolError::InvalidConfig(format!(
                "page size {page_size} (use 4096, 16384 or 65536)"
            )));
        }
        if !(MIN_CHAIN_SIZE..=MAX_CHAIN_SIZE).contains(&chain_size) {
            return Err(PoolError::InvalidConfig(format!(
                "zsmalloc chain size {chain_size} (use {MIN_CHAIN_SIZE}..={MAX_CHAIN_SIZE})"
            )));
        }
        let page_shift = page_size.trailing_zeros();
        let obj_index_bits = 64 - (MAX_PHYSMEM_BITS - page_shift);
        let min_alloc = 32usize.max((chain_size * page_size) >> obj_index_bits);
        let delta = page_size >> CLASS_BITS;
        let nr = (page_size - min_alloc).div_ceil(delta) + 1;

        let mut created: Vec<SizeClass> = Vec::new();
        let mut slot_desc = vec![0usize; nr]; // position in `created` (descending order)
        let mut huge_class_size = 0;
        for i in (0..nr).rev() {
            let size = (min_alloc + i * delta).min(page_size);
            let ppz = chain_length(size, page_size, chain_size);
            let opz = ppz * page_size / size;
            if huge_class_size == 0 && ppz != 1 && opz != 1 {
                huge_class_size = size - (ZS_HANDLE_SIZE - 1);
            }
            if let Some(prev) = created.last()
                && prev.pages_per_zspage == ppz
                && prev.objs_per_zspage == opz
            {
                slot_desc[i] = created.len() - 1;
                continue;
            }
            created.push(SizeClass { index: i, size, pages_per_zspage: ppz, objs_per_zspage: opz });
            slot_desc[i] = created.len() - 1;
        }
        let last = created.len() - 1;
        created.reverse();
        let slot_of_index = slot_desc.iter().map(|&s| (last - s) as u16).collect();
        Ok(Self {
            page_size,
            chain_size,
            min_alloc,
            delta,
            classes: created,
            slot_of_index,
            huge_class_size,
        })
    }

    /// `ZS_MIN_ALLOC_SIZE`.
    pub fn min_alloc_size(&self) -> usize {
        self.min_alloc
    }

    /// `ZS_SIZE_CLASS_DELTA`.
    pub fn class_delta(&self) -> usize {
        self.delta
    }

    /// `ZS_SIZE_CLASSES`: the number of raw indices.
    pub fn nr_indices(&self) -> usize {
        self.slot_of_index.len()
    }

    /// Page size the table was built for.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Chain size the table was built for.
    pub fn chain_size(&self) -> usize {
        self.chain_size
    }

    /// `zs_huge_class_size()`: compressed sizes at or above it are stored in one-page classes.
    pub fn huge_class_size(&self) -> usize {
        self.huge_class_size
    }

    /// The distinct classes, ascending.
    pub fn classes(&self) -> &[SizeClass] {
        &self.classes
    }

    /// `get_size_class_index` for a slot size (request + handle), clamped to the last index.
    pub fn raw_index(&self, size_with_handle: usize) -> usize {
        let i = if size_with_handle <= self.min_alloc {
            0
        } else {
            (size_with_handle - self.min_alloc).div_ceil(self.delta)
        };
        i.min(self.nr_indices() - 1)
    }

    /// Position in [`Self::classes`] of the class that serves a request of `size` bytes (the
    /// handle header is added here, as `zs_malloc` does).
    pub fn slot_for_request(&self, size: usize) -> usize {
        usize::from(self.slot_of_index[self.raw_index(size + ZS_HANDLE_SIZE)])
    }

    /// `zs_lookup_class_index` as in Linux 6.18: the index of the (merged) class that
    /// `get_size_class_index` picks for `size` itself, *without* the handle header that
    /// `zs_malloc` adds. zram's recompression compares these indices, so a candidate is judged
    /// by its bare length even though it is then allocated with the header. (A later mm patch
    /// adds `ZS_HANDLE_SIZE` here too; 6.18 does not.)
    pub fn lookup_class_index(&self, size: usize) -> usize {
        self.classes[usize::from(self.slot_of_index[self.raw_index(size)])].index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_table_matches_the_documented_one() {
        let t = ClassTable::new(4096, 8).unwrap();
        assert_eq!(t.nr_indices(), 255);
        assert_eq!(t.classes().len(), 119);
        assert_eq!(t.huge_class_size(), 3625);
        let c = |i: usize| *t.classes().iter().find(|c| c.index == i).unwrap();
        // A few rows of the class table (docs/REFERENCES.md [zsmalloc-accounting]).
        assert_eq!((c(1).size, c(1).pages_per_zspage, c(1).objs_per_zspage), (48, 3, 256));
        assert_eq!((c(11).pages_per_zspage, c(11).objs_per_zspage), (3, 59));
        assert_eq!((c(103).size, c(103).pages_per_zspage, c(103).objs_per_zspage), (1680, 7, 17));
        assert_eq!((c(225).size, c(225).pages_per_zspage, c(225).objs_per_zspage), (3632, 8, 9));
        assert!(c(254).is_huge());
        // Merges: a 1000-B request (+8 -> raw 61) lives in the 1024-B class; 1632 B in 1680.
        assert_eq!(t.classes()[t.slot_for_request(1000)].index, 62);
        assert_eq!(t.classes()[t.slot_for_request(1632)].index, 103);
        assert_eq!(t.classes()[t.slot_for_request(3624)].index, 225);
        assert_eq!(t.classes()[t.slot_for_request(3625)].index, 254);
        assert_eq!(t.classes()[t.slot_for_request(24)].index, 0);
        assert_eq!(t.classes()[t.slot_for_request(25)].index, 1);
    }

    /// `zs_lookup_class_index` (mm/zsmalloc.c, 6.18) takes `get_size_class_index(size)` of the
    /// bare length: no `ZS_HANDLE_SIZE`, unlike `zs_malloc`. zram's `recompress_slot` compares
    /// these, so the cases below are the ones where 6.18 keeps or drops a different candidate
    /// than a lookup with the handle added would.
    #[test]
    fn zs_lookup_class_index_uses_the_bare_size_as_6_18() {
        let t = ClassTable::new(4096, 8).unwrap();
        let idx = |s: usize| t.lookup_class_index(s);
        assert_eq!(idx(32), 0);
        assert_eq!(idx(33), 1);
        assert_eq!(idx(1000), 62);
        // 3625..=3632 bytes land in the 3632-B class (225), below the huge class (254), so a
        // huge page recompressed to that size is kept; 3633 is past it.
        assert_eq!(idx(3625), 225);
        assert_eq!(idx(3632), 225);
        assert_eq!(idx(3633), 254);
        assert_eq!(idx(4096), 254);
        // 114 -> 107 is a smaller class by bare size (kept by 6.18) ...
        assert!(idx(107) < idx(114));
        // ... and 112 -> 100 is not (dropped by 6.18), the other way round from lookups that
        // add the handle.
        assert_eq!(idx(100), idx(112));
        let with_handle = |s: usize| t.classes()[t.slot_for_request(s)].index;
        assert_eq!(with_handle(107), with_handle(114));
        assert!(with_handle(100) < with_handle(112));
    }

    #[test]
    fn other_chain_sizes_match_the_documented_thresholds() {
        let t4 = ClassTable::new(4096, 4).unwrap();
        assert_eq!((t4.classes().len(), t4.huge_class_size()), (69, 3257));
        let t16 = ClassTable::new(4096, 16).unwrap();
        assert_eq!((t16.classes().len(), t16.huge_class_size()), (192, 3833));
        // Class 208 is the rework commit's example: chain 3 under min-waste.
        assert_eq!(chain_length(208, 4096, 8), 3);
    }

    #[test]
    fn larger_pages_scale_the_spacing() {
        for ps in [16384, 65536] {
            let t = ClassTable::new(ps, 8).unwrap();
            assert_eq!(t.class_delta(), ps / 256);
            assert_eq!(t.min_alloc_size(), 32);
            assert_eq!(t.nr_indices(), (ps - 32).div_ceil(ps / 256) + 1);
            let top = t.classes().last().unwrap();
            assert_eq!((top.size, top.is_huge()), (ps, true));
            assert!(t.huge_class_size() < ps && t.huge_class_size() > ps / 2);
            // Every request up to a page has a class big enough for it plus its header.
            for req in (1..=ps).step_by(97).chain([ps]) {
                let c = t.classes()[t.slot_for_request(req)];
                assert!(c.size >= (req + ZS_HANDLE_SIZE).min(ps), "{ps} {req}");
            }
        }
    }

    #[test]
    fn bad_configurations_are_refused() {
        assert!(ClassTable::new(8192, 8).is_err());
        assert!(ClassTable::new(4096, 3).is_err());
        assert!(ClassTable::new(4096, 17).is_err());
    }
}
