//! Object access: the two ways zsmalloc has read an object that straddles two frames.
//!
//! An object inside one frame is handed out in place (the kernel's `kmap_local` of the page
//! plus the offset). An object that straddles frame `k` and `k + 1` of its zspage is not
//! contiguous anywhere, so:
//!
//! - **Copy** (`zs_map_object()` until 6.15, per-CPU `vm_buf`): copy the whole slot (class size,
//!   header included) into a per-thread buffer on map, unless the mode is write-only; on unmap
//!   copy the slot minus its header back, unless the mode is read-only. 6.18 has no
//!   `zs_map_object()`: mm/zsmalloc.c `zs_obj_read_begin()` copies a straddling object's two
//!   halves into a buffer the caller passes (zswap's and zram's per-CPU buffers), and
//!   `zs_obj_write()` copies the data into the two frames directly.
//! - **Window** (`CONFIG_PGTABLE_MAPPING`, dropped in 5.10): map the two frames side by side
//!   into the pool's reserved 2-page virtual window and hand out the object in place; unmap the
//!   window afterwards. Needs the memfd arena.
//!
//! Which one is cheaper depends on the machine (copying ~1.7 KB vs two page-table updates and a
//! TLB flush); `zmem mapbench` measures it, as the seed's zsmapbench did. The mapping is a
//! closure rather than a guard: the object is only reachable while its class's lock is held, as the
//! kernel's mapping is only valid with preemption disabled.

use std::cell::RefCell;

use super::ZsPool;
use super::chain::Chain;
use crate::PoolError;
use crate::arena::{ArenaKind, Window};
use crate::handle::Handle;

/// How a straddling object is made contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapMethod {
    /// Copy through a per-thread buffer.
    Copy,
    /// Map the two frames side by side in a virtual window (memfd arena only).
    Window,
}

impl MapMethod {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            MapMethod::Copy => "copy",
            MapMethod::Window => "map",
        }
    }
}

/// `ZS_MM_RW`, `ZS_MM_RO`, `ZS_MM_WO`: what the caller will do, so copies can be skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapMode {
    /// Read and write: copy in and copy back.
    ReadWrite,
    /// Read only: no copy back.
    ReadOnly,
    /// Write only: no copy in.
    WriteOnly,
}

thread_local! {
    /// The per-thread copy buffer (the kernel's per-CPU `vm_buf`).
    static VM_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A straddling object as the copy method sees it.
struct Span {
    off: usize,
    slot: usize,
    hdr: usize,
    size: usize,
    mode: MapMode,
}

impl Span {
    fn copy_map<R>(
        &self,
        chain: &mut Chain,
        buf: &mut Vec<u8>,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        if buf.len() < self.slot {
            buf.resize(self.slot, 0);
        }
        if self.mode != MapMode::WriteOnly {
            chain.read(self.off, &mut buf[..self.slot]);
        }
        let r = f(&mut buf[self.hdr..self.hdr + self.size]);
        if self.mode != MapMode::ReadOnly {
            chain.write(self.off + self.hdr, &buf[self.hdr..self.slot]);
        }
        r
    }
}

impl ZsPool {
    /// Whether the object straddles two frames (so mapping it costs a copy or a window).
    pub fn is_straddling(&self, handle: Handle) -> Result<bool, PoolError> {
        let c = self.class_read(self.slot_of(handle)?);
        let (loc, _) = c.handles.get(handle)?;
        let in_page = loc.idx as usize * c.class.size % self.page_size;
        Ok(in_page + c.class.size > self.page_size)
    }

    /// Maps the object, runs `f` on its bytes (exactly the requested size), and unmaps it,
    /// with the object's class locked.
    pub fn map_object<R>(
        &self,
        handle: Handle,
        method: MapMethod,
        mode: MapMode,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, PoolError> {
        let ps = self.page_size;
        let mut c = self.class(self.slot_of(handle)?);
        let (loc, size) = c.handles.get(handle)?;
        let (slot, hdr) = (c.class.size, c.header());
        let off = loc.idx as usize * slot;
        let (page, in_page) = (off / ps, off % ps);
        let chain = &mut c.zspage_mut(loc.zspage).chain;
        if in_page + slot <= ps {
            let bytes = chain.span_mut(off + hdr, size).expect("inside one frame");
            return Ok(f(bytes));
        }
        match method {
            MapMethod::Copy => {
                let span = Span { off, slot, hdr, size, mode };
                let mut f = Some(f);
                // A nested mapping on the same thread (another pool, inside `f`) finds the
                // buffer borrowed and falls back to a temporary one.
                let shared = VM_BUF.try_with(|b| {
                    let mut buf = b.try_borrow_mut().ok()?;
                    Some(span.copy_map(chain, &mut buf, f.take()?))
                });
                match (shared, f.take()) {
                    (Ok(Some(r)), _) => Ok(r),
                    (_, Some(f)) => Ok(span.copy_map(chain, &mut Vec::new(), f)),
                    (_, None) => Err(PoolError::Unsupported("copy buffer unavailable")),
                }
            }
            MapMethod::Window => {
                // Lock order: class, window, arena. The chain stays borrowed mutably while
                // the window shows its frames, so nothing else reaches their bytes.
                let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
                let mut arena = self.arena();
                if arena.kind() != ArenaKind::Memfd {
                    return Err(PoolError::Unsupported("the mapped window needs a memfd arena"));
                }
                if window.is_none() {
                    *window = Some(Window::new(ps)?);
                }
                let window = window.as_mut().expect("just created");
                let (first, second) = (chain.ids()[page], chain.ids()[page + 1]);
                let mut pair = arena.map_pair(window, first, second)?;
                let view = pair.bytes();
                Ok(f(&mut view[in_page + hdr..in_page + hdr + size]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PoolConfig, ZPool};

    /// The zsmapbench setup: three 1632-B objects, the third straddles.
    fn bench_pool(arena: ArenaKind) -> (ZsPool, Vec<Handle>) {
        let pool = ZsPool::new(&PoolConfig { arena, ..PoolConfig::default() }).unwrap();
        let hs: Vec<_> = (0..3).map(|_| pool.malloc(1632).unwrap()).collect();
        (pool, hs)
    }

    fn check_methods(pool: &ZsPool, hs: &[Handle], methods: &[MapMethod]) {
        assert!(!pool.is_straddling(hs[0]).unwrap());
        assert!(pool.is_straddling(hs[2]).unwrap());
        let data: Vec<u8> = (0..1632u32).map(|i| (i * 7 % 251) as u8).collect();
        pool.write(hs[2], &data).unwrap();
        for &m in methods {
            let seen = pool.map_object(hs[2], m, MapMode::ReadOnly, |b| b.to_vec()).unwrap();
            assert_eq!(seen, data, "{m:?}");
            // Writes through the mapping reach the object; read-only ones do not.
            pool.map_object(hs[2], m, MapMode::ReadWrite, |b| b[1000] ^= 0xff).unwrap();
            let mut back = vec![0; 1632];
            pool.read(hs[2], &mut back).unwrap();
            let mut want = data.clone();
            want[1000] ^= 0xff;
            assert_eq!(back, want, "{m:?}");
            pool.map_object(hs[2], m, MapMode::ReadWrite, |b| b[1000] ^= 0xff).unwrap();
            if m == MapMethod::Copy {
                pool.map_object(hs[2], m, MapMode::ReadOnly, |b| b[0] ^= 1).unwrap();
                pool.read(hs[2], &mut back).unwrap();
                assert_eq!(back, data, "read-only copy must not write back");
            }
        }
        pool.audit().unwrap();
    }

    #[test]
    fn copy_method_on_the_heap_arena() {
        let (pool, hs) = bench_pool(ArenaKind::Heap);
        check_methods(&pool, &hs, &[MapMethod::Copy]);
        let err = pool.map_object(hs[2], MapMethod::Window, MapMode::ReadOnly, |_| ());
        assert!(matches!(err, Err(PoolError::Unsupported(_))));
    }

    #[cfg(not(miri))]
    #[test]
    fn both_methods_on_the_memfd_arena() {
        let (pool, hs) = bench_pool(ArenaKind::Memfd);
        check_methods(&pool, &hs, &[MapMethod::Copy, MapMethod::Window]);
    }

    #[test]
    fn nested_copy_mappings_do_not_share_the_buffer() {
        let (a, ha) = bench_pool(ArenaKind::Heap);
        let (b, hb) = bench_pool(ArenaKind::Heap);
        a.write(ha[2], &[1; 1632]).unwrap();
        b.write(hb[2], &[2; 1632]).unwrap();
        let (x, y) = a
            .map_object(ha[2], MapMethod::Copy, MapMode::ReadOnly, |outer| {
                let inner = b
                    .map_object(hb[2], MapMethod::Copy, MapMode::ReadOnly, |i| i.to_vec())
                    .unwrap();
                (outer.to_vec(), inner)
            })
            .unwrap();
        assert!(x.iter().all(|&v| v == 1) && y.iter().all(|&v| v == 2));
    }
}
