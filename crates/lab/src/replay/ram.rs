//! RAM as a CLOCK (second-chance) list of frames: the classic approximation of the kernel's
//! active/inactive LRU. An access sets the frame's referenced bit; reclaim sweeps the hand,
//! clearing bits until it finds an unreferenced victim.

/// Frames of resident pages, by page id.
#[derive(Debug)]
pub(crate) struct Ram {
    frames: Vec<u32>,
    referenced: Vec<bool>,
    frame_of: Vec<u32>,
    hand: usize,
    capacity: usize,
}

const NONE: u32 = u32::MAX;

impl Ram {
    /// `capacity` frames for a page set of `pages` pages.
    pub(crate) fn new(capacity: usize, pages: usize) -> Self {
        Self {
            frames: Vec::with_capacity(capacity),
            referenced: Vec::with_capacity(capacity),
            frame_of: vec![NONE; pages],
            hand: 0,
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn is_resident(&self, page: u32) -> bool {
        self.frame_of[page as usize] != NONE
    }

    /// An access to a resident page.
    pub(crate) fn touch(&mut self, page: u32) {
        self.referenced[self.frame_of[page as usize] as usize] = true;
    }

    /// A free frame, while RAM is not full.
    pub(crate) fn free_frame(&mut self) -> Option<usize> {
        if self.frames.len() == self.capacity {
            return None;
        }
        self.frames.push(NONE);
        self.referenced.push(false);
        Some(self.frames.len() - 1)
    }

    /// The CLOCK's next victim (RAM full): its frame and page. The page stays resident until
    /// [`Ram::evict`] (reclaim may fail to write it out and keep it).
    pub(crate) fn victim(&mut self) -> (usize, u32) {
        loop {
            let f = self.hand;
            self.hand = (self.hand + 1) % self.frames.len();
            if self.referenced[f] {
                self.referenced[f] = false;
            } else {
                return (f, self.frames[f]);
            }
        }
    }

    /// The victim of `frame` has left RAM; the frame is free for [`Ram::install`].
    pub(crate) fn evict(&mut self, frame: usize) {
        let page = self.frames[frame];
        self.frame_of[page as usize] = NONE;
        self.frames[frame] = NONE;
    }

    /// Reclaim could not write the victim of `frame` out: it is activated (referenced), as
    /// the kernel activates a folio that `swap_writeout()` hands back.
    pub(crate) fn activate(&mut self, frame: usize) {
        self.referenced[frame] = true;
    }

    pub(crate) fn install(&mut self, frame: usize, page: u32) {
        self.frames[frame] = page;
        self.referenced[frame] = true;
        self.frame_of[page as usize] = frame as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(ram: &mut Ram, pages: &[u32]) {
        for &p in pages {
            let f = ram.free_frame().expect("room");
            ram.install(f, p);
        }
    }

    #[test]
    fn the_clock_gives_every_frame_a_second_chance() {
        let mut ram = Ram::new(3, 10);
        fill(&mut ram, &[0, 1, 2]);
        assert!(ram.free_frame().is_none());
        // All referenced: one sweep clears them, then frame 0 goes.
        assert_eq!(ram.victim(), (0, 0));
        ram.evict(0);
        ram.install(0, 5);
        // 1 and 2 were cleared by the sweep; 1 is touched again and survives.
        ram.touch(1);
        assert_eq!(ram.victim(), (2, 2));
        assert!(ram.is_resident(2), "a victim stays resident until evicted");
        ram.evict(2);
        assert!(!ram.is_resident(2));
    }

    #[test]
    fn an_activated_victim_is_passed_over_once() {
        let mut ram = Ram::new(2, 4);
        fill(&mut ram, &[0, 1]);
        let (f, p) = ram.victim();
        assert_eq!((f, p), (0, 0));
        ram.activate(f);
        assert_eq!(ram.victim(), (1, 1));
    }
}
