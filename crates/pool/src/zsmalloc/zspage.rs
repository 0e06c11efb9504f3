//! A zspage: a chain of page frames holding equal-size slots of one class, and its fullness
//! group.
//!
//! Slots are laid end to end across the chain, so a slot may start in one frame and end in the
//! next ("straddle"). Slot `i` starts at byte `i * class_size` of the chain. A free slot holds,
//! in its first 8 bytes, the index of the next free slot shifted left by one (tag bit 0; all
//! ones for the end of the list); an allocated slot of a non-huge class holds its handle shifted
//! left by one with tag bit 1, followed by the user's bytes. The 8-byte words never straddle:
//! slot sizes are multiples of 16 and pages of 4096. The free list is LIFO: slots start chained
//! 0 -> 1 -> 2 ..., allocation pops the head and a free pushes the slot back on the head.
//!
//! Fullness groups follow mm/zsmalloc.c `ZS_INUSE_RATIO_*` (`get_fullness_group()`): group 0
//! is empty, group 11 is full,
//! otherwise `floor(floor(100 * inuse / objs) / 10) + 1` (1 = under 10 % used ... 10 = 90-99 %).

use super::chain::Chain;

/// Number of fullness groups (`NR_FULLNESS_GROUPS`).
pub const NR_FULLNESS_GROUPS: usize = 12;
/// `ZS_INUSE_RATIO_0`.
pub const RATIO_0: usize = 0;
/// `ZS_INUSE_RATIO_10`.
pub const RATIO_10: usize = 1;
/// `ZS_INUSE_RATIO_99`.
pub const RATIO_99: usize = 10;
/// `ZS_INUSE_RATIO_100`.
pub const RATIO_100: usize = 11;

/// `OBJ_ALLOCATED_TAG`.
pub const OBJ_ALLOCATED_TAG: u64 = 1;
/// The free-list end marker as stored in a slot.
pub const FREE_END: u64 = u64::MAX << 1;
/// `freeobj` of a zspage with no free slot.
pub const NO_FREE: u32 = u32::MAX;

/// `get_fullness_group`.
pub fn fullness_group(inuse: usize, objs_per_zspage: usize) -> usize {
    if inuse == 0 {
        RATIO_0
    } else if inuse == objs_per_zspage {
        RATIO_100
    } else {
        (100 * inuse / objs_per_zspage) / 10 + 1
    }
}

/// One zspage (its class is the one whose state holds it).
#[derive(Debug)]
pub(crate) struct ZsPage {
    /// Group it was last filed under.
    pub fullness: u8,
    /// Allocated objects.
    pub inuse: u32,
    /// Head of the free list (`NO_FREE` when full).
    pub freeobj: u32,
    /// The chain's frames, and the bytes in them.
    pub chain: Chain,
}

/// Decoded first word of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotWord {
    /// Allocated; carries the handle value.
    Allocated(u64),
    /// Free; carries the next free index (`NO_FREE` at the end).
    Free(u32),
}

/// Encodes a free-list link.
pub fn encode_free(next: u32) -> u64 {
    if next == NO_FREE { FREE_END } else { u64::from(next) << 1 }
}

/// Encodes an allocated slot's header.
pub fn encode_allocated(handle: u64) -> u64 {
    (handle << 1) | OBJ_ALLOCATED_TAG
}

/// Decodes a slot's first word.
pub fn decode(word: u64) -> SlotWord {
    if word & OBJ_ALLOCATED_TAG != 0 {
        SlotWord::Allocated(word >> 1)
    } else if word == FREE_END {
        SlotWord::Free(NO_FREE)
    } else {
        SlotWord::Free((word >> 1) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fullness_groups_follow_the_percentages() {
        assert_eq!(fullness_group(0, 9), RATIO_0);
        assert_eq!(fullness_group(9, 9), RATIO_100);
        assert_eq!(fullness_group(1, 128), RATIO_10); // 0 %
        assert_eq!(fullness_group(12, 128), RATIO_10); // 9 %
        assert_eq!(fullness_group(13, 128), 2); // 10 %
        assert_eq!(fullness_group(127, 128), RATIO_99); // 99 %
        assert_eq!(fullness_group(8, 9), 9); // 88 %
        assert_eq!(fullness_group(1, 2), 6); // 50 %
    }

    #[test]
    fn slot_words_round_trip() {
        for w in [0u32, 1, 255, NO_FREE] {
            assert_eq!(decode(encode_free(w)), SlotWord::Free(w));
        }
        for h in [1u64, (1 << 32) | 5, (1 << 62) + 3] {
            assert_eq!(decode(encode_allocated(h)), SlotWord::Allocated(h));
        }
    }
}
