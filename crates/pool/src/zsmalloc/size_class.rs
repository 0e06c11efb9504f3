//! One size class's live state, behind its own lock: the kernel's `struct size_class` (its
//! `lock`, its twelve `fullness_list`s and its stats), plus the zspages of the class and its
//! view of the pool's handle table.
//!
//! Everything an allocation, a free, an object access or a compaction of one class touches is
//! here, so those run under this class's lock alone; the arena, shared by all classes, is locked
//! only to take or give back a zspage's frames (lock order: class, then arena). Handles carry
//! the class's slot (`handles`), so a free or a read finds its class's lock at once.

use super::ObjLoc;
use super::chain::Chain;
use super::class::{SizeClass, ZS_HANDLE_SIZE};
use super::handles::{ClassHandles, HandleSlab};
use super::zspage::{self, NO_FREE, NR_FULLNESS_GROUPS, SlotWord, ZsPage, fullness_group};
use crate::PoolError;
use crate::arena::PageArena;
use crate::handle::Handle;
use crate::list::Lists;

/// Per-class counters (`ZS_OBJS_ALLOCATED`, `ZS_OBJS_INUSE`, zspages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClassCounters {
    pub objs_allocated: u64,
    pub objs_inuse: u64,
    pub zspages: u64,
}

/// A size class's zspages, fullness lists, counters and handles.
#[derive(Debug)]
pub(crate) struct ClassState {
    pub class: SizeClass,
    /// Zspage slab: a zspage's id is its index here.
    pub zspages: Vec<Option<ZsPage>>,
    free_ids: Vec<u32>,
    /// The twelve fullness lists (`ZS_INUSE_RATIO_0` ... `_100`).
    pub lists: Lists,
    pub counters: ClassCounters,
    pub handles: ClassHandles,
    /// Compaction's copy buffer, kept between runs.
    pub scratch: Vec<u8>,
}

impl ClassState {
    /// An empty class; its handles carry `slot` (its position in the class table) and live in
    /// the pool's `slab`.
    pub(crate) fn new(class: SizeClass, slot: u8, slab: std::sync::Arc<HandleSlab>) -> Self {
        Self {
            class,
            zspages: Vec::new(),
            free_ids: Vec::new(),
            lists: Lists::new(NR_FULLNESS_GROUPS),
            counters: ClassCounters::default(),
            handles: ClassHandles::new(slab, slot),
            scratch: Vec::new(),
        }
    }

    pub(crate) fn zspage(&self, z: u32) -> &ZsPage {
        self.zspages[z as usize].as_ref().expect("live zspage")
    }

    pub(crate) fn zspage_mut(&mut self, z: u32) -> &mut ZsPage {
        self.zspages[z as usize].as_mut().expect("live zspage")
    }

    /// Bytes before the user's data in a slot: the handle header, none in a huge class.
    pub(crate) fn header(&self) -> usize {
        if self.class.is_huge() { 0 } else { ZS_HANDLE_SIZE }
    }

    /// The first word of slot `idx` of zspage `z`.
    pub(crate) fn read_word(&self, z: u32, idx: u32) -> u64 {
        self.zspage(z).chain.word(idx as usize * self.class.size)
    }

    pub(crate) fn write_word(&mut self, z: u32, idx: u32, word: u64) {
        let size = self.class.size;
        self.zspage_mut(z).chain.set_word(idx as usize * size, word);
    }

    /// `init_zspage` of a zspage `alloc_zspage` gave frames: chains the free list 0 -> 1 ->
    /// ... (the first touch of fresh frames, so it runs with the arena unlocked).
    fn init_zspage(&mut self, chain: Chain) -> u32 {
        let c = self.class;
        let zs = ZsPage { fullness: 0, inuse: 0, freeobj: 0, chain };
        let z = match self.free_ids.pop() {
            Some(z) => {
                self.zspages[z as usize] = Some(zs);
                z
            }
            None => {
                self.zspages.push(Some(zs));
                (self.zspages.len() - 1) as u32
            }
        };
        let opz = c.objs_per_zspage as u32;
        for i in 0..opz {
            let next = if i + 1 < opz { i + 1 } else { NO_FREE };
            self.write_word(z, i, zspage::encode_free(next));
        }
        self.counters.objs_allocated += c.objs_per_zspage as u64;
        self.counters.zspages += 1;
        z
    }

    /// `free_zspage`: off its list, frames back to the arena.
    pub(crate) fn free_zspage(&mut self, z: u32, arena: &mut PageArena) {
        self.lists.remove(z);
        let zs = self.zspages[z as usize].take().expect("live zspage");
        debug_assert_eq!(zs.inuse, 0);
        zs.chain.free(arena);
        self.counters.objs_allocated -= self.class.objs_per_zspage as u64;
        self.counters.zspages -= 1;
        self.free_ids.push(z);
    }

    /// `obj_malloc`: pops the head of the zspage's free list.
    pub(crate) fn obj_malloc(&mut self, z: u32) -> u32 {
        let idx = self.zspage(z).freeobj;
        debug_assert_ne!(idx, NO_FREE);
        let next = match zspage::decode(self.read_word(z, idx)) {
            SlotWord::Free(next) => next,
            SlotWord::Allocated(_) => NO_FREE, // unreachable unless memory was corrupted
        };
        let zs = self.zspage_mut(z);
        zs.freeobj = next;
        zs.inuse += 1;
        idx
    }

    /// `obj_free`: pushes the slot on the head of the zspage's free list.
    pub(crate) fn obj_free(&mut self, z: u32, idx: u32) {
        let head = self.zspage(z).freeobj;
        self.write_word(z, idx, zspage::encode_free(head));
        let zs = self.zspage_mut(z);
        zs.freeobj = idx;
        zs.inuse -= 1;
    }

    pub(crate) fn group_of(&self, z: u32) -> usize {
        fullness_group(self.zspage(z).inuse as usize, self.class.objs_per_zspage)
    }

    /// `insert_zspage`: at the head of the list of `group`.
    pub(crate) fn insert_zspage(&mut self, z: u32, group: usize) {
        self.lists.push_front(group, z);
        self.zspage_mut(z).fullness = group as u8;
    }

    /// `fix_fullness_group`: moves the zspage only if its group changed.
    fn fix_fullness_group(&mut self, z: u32) -> usize {
        let new = self.group_of(z);
        if new != usize::from(self.zspage(z).fullness) {
            self.lists.remove(z);
            self.insert_zspage(z, new);
        }
        new
    }

    /// `find_get_zspage`: head of the fullest non-full group.
    fn find_get_zspage(&self) -> Option<u32> {
        (zspage::RATIO_0..=zspage::RATIO_99).rev().find_map(|g| self.lists.head(g))
    }

    /// `zs_malloc` for this class: `arena` is called (and its lock taken) only when a new
    /// zspage is needed.
    pub(crate) fn malloc<'a>(
        &mut self,
        size: usize,
        arena: impl Fn() -> super::ArenaGuard<'a>,
    ) -> Result<Handle, PoolError> {
        let (z, new) = match self.find_get_zspage() {
            Some(z) => (z, false),
            None => {
                // `alloc_zspage`: the arena is locked for this statement only.
                let chain = Chain::alloc(&mut arena(), self.class.pages_per_zspage)?;
                (self.init_zspage(chain), true)
            }
        };
        let idx = self.obj_malloc(z);
        let h = match self.handles.insert(ObjLoc { zspage: z, idx }, size) {
            Ok(h) => h,
            Err(e) => {
                // Out of handle indices: give the slot back as it was.
                self.obj_free(z, idx);
                if new {
                    self.free_zspage(z, &mut arena());
                }
                return Err(e);
            }
        };
        if !self.class.is_huge() {
            self.write_word(z, idx, zspage::encode_allocated(h.0));
        }
        self.counters.objs_inuse += 1;
        if new {
            let g = self.group_of(z);
            self.insert_zspage(z, g);
        } else {
            self.fix_fullness_group(z);
        }
        Ok(h)
    }

    /// `zs_free` for this class: `arena` is called only when the zspage empties.
    pub(crate) fn free<'a>(
        &mut self,
        h: Handle,
        arena: impl Fn() -> super::ArenaGuard<'a>,
    ) -> Result<(), PoolError> {
        let (loc, _) = self.handles.remove(h)?;
        self.obj_free(loc.zspage, loc.idx);
        self.counters.objs_inuse -= 1;
        if self.fix_fullness_group(loc.zspage) == zspage::RATIO_0 {
            self.free_zspage(loc.zspage, &mut arena());
        }
        Ok(())
    }

    /// `zs_obj_write`: `data` at the start of the object.
    pub(crate) fn write(&mut self, handle: Handle, data: &[u8]) -> Result<(), PoolError> {
        let (loc, size) = self.handles.get(handle)?;
        if data.len() > size {
            return Err(PoolError::BadLength { len: data.len(), size });
        }
        let off = loc.idx as usize * self.class.size + self.header();
        self.zspage_mut(loc.zspage).chain.write(off, data);
        Ok(())
    }

    /// Byte offset of the object's data within its zspage, its size, and the zspage's chain.
    pub(crate) fn data_span(&self, handle: Handle) -> Result<(usize, usize, &Chain), PoolError> {
        let (loc, size) = self.handles.get(handle)?;
        let off = loc.idx as usize * self.class.size + self.header();
        Ok((off, size, &self.zspage(loc.zspage).chain))
    }

    /// `zs_can_compact`: pages the class could give back.
    pub(crate) fn can_compact(&self) -> u64 {
        let k = self.counters;
        if k.objs_allocated <= k.objs_inuse {
            return 0;
        }
        let c = self.class;
        (k.objs_allocated - k.objs_inuse) / c.objs_per_zspage as u64 * c.pages_per_zspage as u64
    }

    /// Bytes of bookkeeping (descriptors, frame lists, lists, handles).
    pub(crate) fn metadata_bytes(&self) -> usize {
        let per_frame = std::mem::size_of::<crate::arena::FrameId>() + std::mem::size_of::<usize>();
        self.zspages.capacity() * std::mem::size_of::<Option<ZsPage>>()
            + self.zspages.iter().flatten().map(|z| z.chain.len() * per_frame).sum::<usize>()
            + self.free_ids.capacity() * 4
            + self.lists.metadata_bytes()
            + self.handles.metadata_bytes()
    }

    /// Checks the class's invariants; returns its frames.
    pub(crate) fn audit(&self, slot: usize) -> Result<u64, String> {
        let c = self.class;
        let mut pages = 0u64;
        let mut actual = ClassCounters::default();
        for (z, zs) in self.zspages.iter().enumerate() {
            let Some(zs) = zs else { continue };
            let z = z as u32;
            pages += c.pages_per_zspage as u64;
            if zs.chain.len() != c.pages_per_zspage {
                return Err(format!("class slot {slot} zspage {z}: {} frames", zs.chain.len()));
            }
            let mut free = 0usize;
            let mut cur = zs.freeobj;
            while cur != NO_FREE {
                free += 1;
                if free > c.objs_per_zspage || cur as usize >= c.objs_per_zspage {
                    return Err(format!("class slot {slot} zspage {z}: free list broken at {cur}"));
                }
                match zspage::decode(self.read_word(z, cur)) {
                    SlotWord::Free(next) => cur = next,
                    SlotWord::Allocated(_) => {
                        return Err(format!(
                            "class slot {slot} zspage {z}: allocated on free list"
                        ));
                    }
                }
            }
            if free + zs.inuse as usize != c.objs_per_zspage || zs.inuse == 0 {
                return Err(format!(
                    "class slot {slot} zspage {z}: inuse {} free {free}",
                    zs.inuse
                ));
            }
            let g = fullness_group(zs.inuse as usize, c.objs_per_zspage);
            if usize::from(zs.fullness) != g || self.lists.list_of(z) != Some(g) {
                return Err(format!("class slot {slot} zspage {z}: filed under the wrong group"));
            }
            actual.objs_allocated += c.objs_per_zspage as u64;
            actual.objs_inuse += u64::from(zs.inuse);
            actual.zspages += 1;
        }
        if actual != self.counters {
            return Err(format!(
                "class slot {slot}: counters {:?}, actual {actual:?}",
                self.counters
            ));
        }
        let listed: usize = (0..NR_FULLNESS_GROUPS).map(|l| self.lists.iter(l).count()).sum();
        let counted: usize = (0..NR_FULLNESS_GROUPS).map(|l| self.lists.len(l)).sum();
        let live = self.zspages.iter().flatten().count();
        if listed != live || counted != live {
            return Err(format!(
                "class slot {slot}: {live} zspages, {listed} listed, list lengths say {counted}"
            ));
        }
        if actual.objs_inuse != self.handles.len() as u64 {
            return Err(format!(
                "class slot {slot}: {} objects, {} handles",
                actual.objs_inuse,
                self.handles.len()
            ));
        }
        Ok(pages)
    }
}
