//! Intrusive doubly linked lists over slab indices: the kernel's `list_head` lists (fullness
//! lists, unbuddied lists) without pointers.
//!
//! Every node (a zspage or a zbud/z3fold page, named by its slab index) is on at most one list.
//! Insertion is at the head (`list_add`), removal is O(1) from anywhere (`list_del`), and the
//! head is what the allocators take first, so the LIFO order the kernel's placement depends on
//! is kept exactly.

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Links {
    prev: u32,
    next: u32,
    list: u32,
}

const UNLINKED: Links = Links { prev: NIL, next: NIL, list: NIL };

/// A fixed number of lists sharing one set of nodes.
#[derive(Debug)]
pub struct Lists {
    heads: Vec<u32>,
    lens: Vec<u32>,
    links: Vec<Links>,
}

impl Lists {
    /// `n` empty lists.
    pub fn new(n: usize) -> Self {
        Self { heads: vec![NIL; n], lens: vec![0; n], links: Vec::new() }
    }

    /// Adds `node` at the head of `list`. The node must be on no list.
    pub fn push_front(&mut self, list: usize, node: u32) {
        let n = node as usize;
        if self.links.len() <= n {
            self.links.resize(n + 1, UNLINKED);
        }
        debug_assert_eq!(self.links[n].list, NIL, "node already listed");
        let old = self.heads[list];
        self.links[n] = Links { prev: NIL, next: old, list: list as u32 };
        if old != NIL {
            self.links[old as usize].prev = node;
        }
        self.heads[list] = node;
        self.lens[list] += 1;
    }

    /// Takes `node` off whatever list it is on (no-op if none).
    pub fn remove(&mut self, node: u32) {
        let Some(&Links { prev, next, list }) = self.links.get(node as usize) else { return };
        if list == NIL {
            return;
        }
        if prev != NIL {
            self.links[prev as usize].next = next;
        } else {
            self.heads[list as usize] = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        }
        self.links[node as usize] = UNLINKED;
        self.lens[list as usize] -= 1;
    }

    /// The first node of `list`.
    pub fn head(&self, list: usize) -> Option<u32> {
        let h = self.heads[list];
        (h != NIL).then_some(h)
    }

    /// Which list `node` is on.
    pub fn list_of(&self, node: u32) -> Option<usize> {
        self.links.get(node as usize).filter(|l| l.list != NIL).map(|l| l.list as usize)
    }

    /// Number of nodes on `list`.
    pub fn len(&self, list: usize) -> usize {
        self.lens[list] as usize
    }

    /// The nodes of `list`, head first.
    pub fn iter(&self, list: usize) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.heads[list];
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let n = cur;
                cur = self.links[n as usize].next;
                n
            })
        })
    }

    /// Bytes of bookkeeping.
    pub fn metadata_bytes(&self) -> usize {
        self.heads.capacity() * 8 + self.links.capacity() * std::mem::size_of::<Links>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_insertion_and_removal_from_anywhere() {
        let mut l = Lists::new(2);
        for n in [1, 2, 3] {
            l.push_front(0, n);
        }
        assert_eq!(l.iter(0).collect::<Vec<_>>(), [3, 2, 1]);
        l.remove(2);
        assert_eq!(l.iter(0).collect::<Vec<_>>(), [3, 1]);
        l.remove(3);
        assert_eq!(l.head(0), Some(1));
        l.push_front(1, 3);
        assert_eq!(l.list_of(3), Some(1));
        assert_eq!(l.list_of(2), None);
        l.remove(2); // not listed: nothing happens
        assert_eq!((l.len(0), l.len(1)), (1, 1));
        l.remove(1);
        assert_eq!(l.head(0), None);
    }
}
