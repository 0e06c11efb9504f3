//! What the agent knows of each page of a mapping: 2 bits a page, in chunks of 512 pages kept
//! only where some page has a state (a mapping of terabytes, mostly unpopulated, costs
//! nothing; no heap object per page).

use std::collections::BTreeMap;

/// Pages a chunk covers: also the most pages one page-out call takes (4 KiB of pagemap).
pub(super) const CHUNK_PAGES: u64 = 512;

/// u64 words in a chunk: 2 bits a page.
const WORDS: usize = CHUNK_PAGES as usize * 2 / 64;

/// The low bit of every page's pair.
const LOW_BITS: u64 = 0x5555_5555_5555_5555;

/// One page's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Nothing known: the agent may page it out when its mapping is idle.
    Free = 0,
    /// The agent paged it out and it has not come back.
    Out = 1,
    /// It came back: hot, not paged out again before two rotations (see [`Pages::rotate`]).
    Hot = 2,
    /// Hot, one rotation old.
    HotOld = 3,
}

impl State {
    fn from_bits(b: u64) -> Self {
        match b & 3 {
            0 => Self::Free,
            1 => Self::Out,
            2 => Self::Hot,
            _ => Self::HotOld,
        }
    }
}

/// The states of one mapping's pages, by page index from the mapping's start.
#[derive(Debug, Default)]
pub(super) struct Pages {
    chunks: BTreeMap<u64, [u64; WORDS]>,
}

impl Pages {
    pub(super) fn get(&self, page: u64) -> State {
        let (c, w, shift) = place(page);
        self.chunks.get(&c).map_or(State::Free, |words| State::from_bits(words[w] >> shift))
    }

    pub(super) fn set(&mut self, page: u64, state: State) {
        let (c, w, shift) = place(page);
        if state == State::Free && !self.chunks.contains_key(&c) {
            return;
        }
        let words = self.chunks.entry(c).or_insert([0; WORDS]);
        words[w] = (words[w] & !(3 << shift)) | ((state as u64) << shift);
        if words.iter().all(|&x| x == 0) {
            self.chunks.remove(&c);
        }
    }

    /// The chunks holding a page that is out, ascending.
    pub(super) fn chunks_out(&self) -> Vec<u64> {
        self.chunks.iter().filter(|(_, w)| out_in(w) > 0).map(|(&c, _)| c).collect()
    }

    /// Pages out.
    pub(super) fn out(&self) -> u64 {
        self.chunks.values().map(out_in).sum()
    }

    /// Ages the hot marks: `Hot` becomes `HotOld`, `HotOld` becomes `Free`. Called every 4·T,
    /// so a page stays hot for 4·T to 8·T after it came back.
    pub(super) fn rotate(&mut self) {
        for words in self.chunks.values_mut() {
            for w in words.iter_mut() {
                let hot = (*w >> 1) & LOW_BITS;
                // A hot pair becomes 11 from 10 and 00 from 11: both bits the low bit's inverse.
                let flipped = !*w & LOW_BITS & hot;
                *w = (*w & !(hot | hot << 1)) | flipped | flipped << 1;
            }
        }
        self.chunks.retain(|_, w| w.iter().any(|&x| x != 0));
    }

    /// Forgets every page at index `pages` and past it (the mapping shrank). Returns how many
    /// of them were out.
    pub(super) fn truncate(&mut self, pages: u64) -> u64 {
        let mut dropped = 0;
        let first = pages / CHUNK_PAGES;
        let tail: Vec<u64> = self.chunks.range(first..).map(|(&c, _)| c).collect();
        for c in tail {
            for p in (c * CHUNK_PAGES).max(pages)..(c + 1) * CHUNK_PAGES {
                dropped += u64::from(self.get(p) == State::Out);
                self.set(p, State::Free);
            }
        }
        dropped
    }

    pub(super) fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

/// Pages out in one chunk: pairs `01`.
fn out_in(words: &[u64; WORDS]) -> u64 {
    words.iter().map(|&w| u64::from((w & LOW_BITS & !(w >> 1)).count_ones())).sum()
}

/// A page's chunk, word and bit shift.
fn place(page: u64) -> (u64, usize, u32) {
    let i = page % CHUNK_PAGES;
    (page / CHUNK_PAGES, (i / 32) as usize, (i % 32) as u32 * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_kept_per_page_and_empty_chunks_go() {
        let mut p = Pages::default();
        p.set(3, State::Out);
        p.set(511, State::Hot);
        p.set(512 * 1_000_000 + 7, State::Out);
        assert_eq!((p.get(3), p.get(4), p.get(511)), (State::Out, State::Free, State::Hot));
        assert_eq!(p.out(), 2);
        assert_eq!(p.chunks_out(), [0, 1_000_000]);
        p.set(512 * 1_000_000 + 7, State::Free);
        assert_eq!(p.chunks_out(), [0]);
        assert_eq!(p.chunks.len(), 1);
    }

    #[test]
    fn rotation_ages_hot_pages_and_keeps_out_ones() {
        let mut p = Pages::default();
        p.set(0, State::Out);
        p.set(1, State::Hot);
        p.set(2, State::HotOld);
        p.set(40, State::Hot);
        p.rotate();
        assert_eq!(
            [p.get(0), p.get(1), p.get(2), p.get(40)],
            [State::Out, State::HotOld, State::Free, State::HotOld]
        );
        p.rotate();
        assert_eq!([p.get(0), p.get(1), p.get(40)], [State::Out, State::Free, State::Free]);
        p.set(0, State::Free);
        p.rotate();
        assert!(p.is_empty());
    }

    #[test]
    fn truncation_counts_the_out_pages_it_drops() {
        let mut p = Pages::default();
        for page in [1, 600, 601, 1500] {
            p.set(page, State::Out);
        }
        p.set(602, State::Hot);
        assert_eq!(p.truncate(601), 2);
        assert_eq!((p.get(600), p.get(601), p.get(602)), (State::Out, State::Free, State::Free));
        assert_eq!(p.out(), 2);
    }
}
