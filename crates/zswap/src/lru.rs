//! The LRU of stored entries, with the shrinker's second chance.
//!
//! 6.18 links each entry into the global `zswap_list_lru` (a `list_lru`, per memcg and NUMA
//! node; mm/zswap.c `zswap_lru_add()`): `zswap_store_page()` adds new entries at the tail, the
//! walks (`shrink_memcg_cb()`) start at the head (oldest), and an entry whose `referenced` bit
//! is set is rotated to the tail with the bit cleared instead of being written back. Entries
//! leave the list in `zswap_entry_free()`: when a load into the swap cache erases them (every
//! load here), when the slot is invalidated, and when they are written back.
//!
//! Here the list is a queue of `(offset, seq)` tickets with lazy deletion: an entry remembers the
//! `seq` of its live ticket, and a ticket whose offset is gone or holds a newer `seq` is stale and
//! skipped. That keeps removal O(1) without intrusive links; the queue is compacted when stale
//! tickets outnumber live ones, so its length stays within twice the entry count (plus slack).

use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(crate) struct Lru {
    queue: VecDeque<(u64, u64)>,
    next_seq: u64,
}

impl Lru {
    /// Appends a ticket for `offset` at the tail; returns its seq for the entry to keep.
    pub fn push_tail(&mut self, offset: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push_back((offset, seq));
        seq
    }

    /// Takes the head ticket that `is_live` accepts, dropping stale ones on the way.
    pub fn pop_head(&mut self, mut is_live: impl FnMut(u64, u64) -> bool) -> Option<u64> {
        while let Some((offset, seq)) = self.queue.pop_front() {
            if is_live(offset, seq) {
                return Some(offset);
            }
        }
        None
    }

    /// Drops stale tickets once they dominate the queue.
    pub fn maybe_compact(&mut self, live: usize, mut is_live: impl FnMut(u64, u64) -> bool) {
        if self.queue.len() > 2 * live + 1024 {
            self.queue.retain(|&(o, s)| is_live(o, s));
        }
    }

    /// Tickets in the queue, stale ones included.
    #[cfg(test)]
    pub fn tickets(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_tickets_are_skipped_and_compacted() {
        let mut lru = Lru::default();
        let a = lru.push_tail(1);
        let _old_b = lru.push_tail(2);
        let b = lru.push_tail(2); // offset 2 re-stored: the first ticket is stale
        let live = |o: u64, s: u64| (o == 1 && s == a) || (o == 2 && s == b);
        assert_eq!(lru.pop_head(live), Some(1));
        assert_eq!(lru.pop_head(live), Some(2));
        assert_eq!(lru.pop_head(live), None);
        for i in 0..3000 {
            lru.push_tail(i);
        }
        lru.maybe_compact(0, |_, _| false);
        assert_eq!(lru.tickets(), 0);
    }
}
