//! Which swap slot each page of the replay holds, which page each slot holds, and whether a
//! resident page's slot still holds what the page does: the books the [`super::Simulator`]
//! keeps over 6.18's slot allocator ([`super::slots`]).
//!
//! A page holds a slot while it is swapped out, while it is read ahead into the swap cache, and
//! after a swap-in that kept it (mm/memory.c `should_try_to_free_swap()` said no); the slot is
//! then `SWAP_HAS_CACHE` only, and the allocator may take it back where swap is full
//! (`__try_to_reclaim_swap()`): the page leaves the swap cache dirty, and its slot's data in
//! the swap layer is freed.

use zmem_zswap::SwapLayer;

use super::slots::{SwapSlots, cluster_slots};

/// No slot / no page.
const NO_SLOT: u32 = 0;
const NO_PAGE: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub(super) struct PageSlots {
    slots: SwapSlots,
    slot_of: Vec<u32>,
    page_at: Vec<u32>,
    /// The slot holds what the page holds (read from the device or the zeromap, not written
    /// since): reclaim can drop the page without a write.
    clean: Vec<bool>,
}

impl PageSlots {
    /// `pages` pages over a fresh swap area of `area` slots (the header's included).
    pub fn new(pages: usize, area: u64, page_size: usize) -> Self {
        Self {
            slots: SwapSlots::new(area, cluster_slots(page_size)),
            slot_of: vec![NO_SLOT; pages],
            page_at: vec![NO_PAGE; area as usize],
            clean: vec![false; pages],
        }
    }

    /// Page `p`'s slot, if it holds one.
    pub fn slot(&self, p: u32) -> Option<u64> {
        let s = self.slot_of[p as usize];
        (s != NO_SLOT).then_some(u64::from(s))
    }

    /// The page holding `slot`, if any.
    pub fn page_at(&self, slot: u64) -> Option<u32> {
        let q = *self.page_at.get(slot as usize)?;
        (q != NO_PAGE).then_some(q)
    }

    pub fn is_clean(&self, p: u32) -> bool {
        self.clean[p as usize]
    }

    pub fn set_clean(&mut self, p: u32, clean: bool) {
        self.clean[p as usize] = clean;
    }

    /// `vm_swap_full()` of the area.
    pub fn vm_swap_full(&self) -> bool {
        self.slots.vm_swap_full()
    }

    /// `p` was mapped and the swap cache alone holds its slot now.
    pub fn keep_in_cache(&mut self, p: u32) {
        if let Some(s) = self.slot(p) {
            self.slots.keep_in_cache(s);
        }
    }

    /// `p` left RAM holding its slot: the page table holds the swap entry again.
    pub fn reuse(&mut self, p: u32) {
        if let Some(s) = self.slot(p) {
            self.slots.reuse(s);
        }
    }

    /// `p` no longer holds its slot; the slot is free (the caller frees its data in the swap
    /// layer where there is any).
    pub fn release(&mut self, p: u32) {
        let slot = std::mem::replace(&mut self.slot_of[p as usize], NO_SLOT);
        if slot != NO_SLOT {
            self.page_at[slot as usize] = NO_PAGE;
            self.slots.free(u64::from(slot));
        }
        self.clean[p as usize] = false;
    }

    /// A slot for `p`'s swap-out (mm/swapfile.c `folio_alloc_swap()`), `None` where the area is
    /// full. A slot only the swap cache holds may be taken back from its page: the page leaves
    /// the swap cache dirty and the slot's data in `swap` is freed.
    pub fn alloc(&mut self, p: u32, swap: &SwapLayer) -> Option<u64> {
        let (page_at, slot_of, clean) = (&mut self.page_at, &mut self.slot_of, &mut self.clean);
        let mut reclaim = |slot: u64| {
            let q = page_at[slot as usize];
            if q == NO_PAGE {
                return false;
            }
            swap.free(slot);
            page_at[slot as usize] = NO_PAGE;
            slot_of[q as usize] = NO_SLOT;
            clean[q as usize] = false;
            true
        };
        let slot = self.slots.alloc(&mut reclaim)?;
        self.slot_of[p as usize] = slot as u32;
        self.page_at[slot as usize] = p;
        Some(slot)
    }
}
