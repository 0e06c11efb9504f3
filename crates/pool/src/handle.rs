//! Handles: the opaque words users keep, and the table that says where each object lives.
//!
//! The kernel's zsmalloc allocates each handle as a separate word (kmem_cache `"zs_handle"`) that
//! holds the object's current location, so compaction can move the object and rewrite the word
//! while the user's handle stays valid; z3fold does the same with its per-page `slots`. Here all
//! three allocators share one table: a handle is `(generation << 32) | index`, the entry at
//! `index` holds the location and the requested size, and the generation is bumped on free so a
//! stale or forged handle is detected instead of aliasing a new object (until a generation wraps
//! after 2^31 reuses of one entry). Handle 0 is never issued (the kernel's "allocation failed"
//! value), and every handle is below 2^63.

use crate::PoolError;

/// An allocated object, as returned by `malloc`. Opaque; only the pool that issued it can use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(pub u64);

#[derive(Debug, Clone, Copy)]
enum Slot<L> {
    Live { loc: L, size: u32 },
    Free { next: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Entry<L> {
    generation: u32,
    slot: Slot<L>,
}

const NIL: u32 = u32::MAX;

/// Handle → (location, size) for every live object of one pool.
#[derive(Debug)]
pub struct HandleTable<L> {
    entries: Vec<Entry<L>>,
    free_head: u32,
    live: usize,
}

impl<L: Copy> Default for HandleTable<L> {
    fn default() -> Self {
        Self { entries: Vec::new(), free_head: NIL, live: 0 }
    }
}

impl<L: Copy> HandleTable<L> {
    /// Issues a handle for an object of `size` bytes at `loc`.
    pub fn insert(&mut self, loc: L, size: usize) -> Handle {
        let size = size as u32;
        self.live += 1;
        if self.free_head != NIL {
            let index = self.free_head;
            let e = &mut self.entries[index as usize];
            if let Slot::Free { next } = e.slot {
                self.free_head = next;
            }
            e.slot = Slot::Live { loc, size };
            return Handle((u64::from(e.generation) << 32) | u64::from(index));
        }
        let index = self.entries.len() as u32;
        self.entries.push(Entry { generation: 1, slot: Slot::Live { loc, size } });
        Handle((1u64 << 32) | u64::from(index))
    }

    fn entry(&self, h: Handle) -> Option<(usize, &Entry<L>)> {
        let index = (h.0 & 0xffff_ffff) as usize;
        let e = self.entries.get(index)?;
        (u64::from(e.generation) == h.0 >> 32 && matches!(e.slot, Slot::Live { .. }))
            .then_some((index, e))
    }

    /// The location and size of a live object.
    pub fn get(&self, h: Handle) -> Result<(L, usize), PoolError> {
        match self.entry(h) {
            Some((_, Entry { slot: Slot::Live { loc, size }, .. })) => Ok((*loc, *size as usize)),
            _ => Err(PoolError::BadHandle(h.0)),
        }
    }

    /// Records that the object moved (compaction).
    pub fn relocate(&mut self, h: Handle, new_loc: L) -> Result<(), PoolError> {
        let (index, _) = self.entry(h).ok_or(PoolError::BadHandle(h.0))?;
        if let Slot::Live { loc, .. } = &mut self.entries[index].slot {
            *loc = new_loc;
        }
        Ok(())
    }

    /// Retires a handle; returns where its object was.
    pub fn remove(&mut self, h: Handle) -> Result<(L, usize), PoolError> {
        let got = self.get(h)?;
        let index = (h.0 & 0xffff_ffff) as usize;
        let e = &mut self.entries[index];
        // Generations stay in 31 bits (a handle must fit zsmalloc's 63-bit slot header) and
        // skip 0, so that no issued handle is ever 0.
        e.generation = ((e.generation + 1) & 0x7fff_ffff).max(1);
        e.slot = Slot::Free { next: self.free_head };
        self.free_head = index as u32;
        self.live -= 1;
        Ok(got)
    }

    /// Every live object: its handle, location and size.
    pub fn iter(&self) -> impl Iterator<Item = (Handle, L, usize)> + '_ {
        self.entries.iter().enumerate().filter_map(|(i, e)| match e.slot {
            Slot::Live { loc, size } => {
                Some((Handle((u64::from(e.generation) << 32) | i as u64), loc, size as usize))
            }
            Slot::Free { .. } => None,
        })
    }

    /// Location and size of every live object.
    pub fn iter_live(&self) -> impl Iterator<Item = (L, usize)> + '_ {
        self.iter().map(|(_, l, s)| (l, s))
    }

    /// Live handles.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes of the table (its capacity), for metadata accounting.
    pub fn metadata_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry<L>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_and_forged_handles_are_refused() {
        let mut t = HandleTable::<u32>::default();
        let a = t.insert(7, 100);
        assert_ne!(a.0, 0);
        assert_eq!(t.get(a), Ok((7, 100)));
        assert_eq!(t.remove(a), Ok((7, 100)));
        assert_eq!(t.get(a), Err(PoolError::BadHandle(a.0)));
        assert_eq!(t.remove(a), Err(PoolError::BadHandle(a.0)));
        let b = t.insert(9, 5);
        assert_eq!(b.0 & 0xffff_ffff, a.0 & 0xffff_ffff, "index reused");
        assert_ne!(a, b, "generation differs");
        assert!(t.get(a).is_err());
        assert!(t.get(Handle(0)).is_err());
        assert!(t.get(Handle(u64::MAX)).is_err());
        t.relocate(b, 11).unwrap();
        assert_eq!(t.get(b), Ok((11, 5)));
        assert_eq!(t.len(), 1);
    }
}
