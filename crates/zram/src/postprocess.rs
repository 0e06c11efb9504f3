//! Post-processing: idle marking, writeback to the backing device, and recompression with the
//! secondary algorithms, with the kernel's selection rules and order.
//!
//! Writeback and recompression share the kernel's two-phase shape: a scan marks candidate slots
//! PP_SLOT and sorts them into 64-byte size buckets; the work then takes slots largest bucket
//! first (within a bucket, the last one scanned first, as the kernel's `list_add`). Any access
//! to a slot between the two phases clears PP_SLOT and the slot is skipped.

use std::sync::atomic::Ordering;

use zmem_pool::Handle;

use crate::device::{Live, Zram, pool_error};
use crate::errno::{Errno, ZramError, err};
use crate::slot::Flag;
use crate::zcomp::Stream;

const PP_BUCKET_SIZE_RANGE: usize = 64;

/// Slots picked by a scan, in the kernel's processing order.
struct PpCtl {
    buckets: Vec<Vec<usize>>,
}

impl PpCtl {
    fn new(page_size: usize) -> Self {
        Self { buckets: vec![Vec::new(); page_size / PP_BUCKET_SIZE_RANGE + 1] }
    }

    fn place(&mut self, index: usize, size: usize) {
        self.buckets[size / PP_BUCKET_SIZE_RANGE].push(index);
    }

    /// Largest bucket first; within it, the most recently placed first.
    fn select(&mut self) -> Option<usize> {
        self.buckets.iter_mut().rev().find_map(|b| b.pop())
    }
}

/// Writeback mode filters (combinable, as the kernel's bit flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WbMode {
    pub idle: bool,
    pub huge: bool,
    pub incompressible: bool,
}

impl WbMode {
    /// `idle`, `huge`, `huge_idle`, `incompressible`.
    pub fn parse(s: &str) -> Result<Self, ZramError> {
        Ok(match s {
            "idle" => Self { idle: true, ..Self::default() },
            "huge" => Self { huge: true, ..Self::default() },
            "huge_idle" => Self { idle: true, huge: true, ..Self::default() },
            "incompressible" => Self { incompressible: true, ..Self::default() },
            _ => return err(Errno::EINVAL, format!("unknown writeback mode {s:?}")),
        })
    }
}

/// Recompression mode filters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecompMode {
    pub idle: bool,
    pub huge: bool,
}

/// A parsed `recompress` request.
#[derive(Debug, Clone, Default)]
pub struct RecompressRequest {
    pub mode: RecompMode,
    /// Slots to attempt at most (`u64::MAX`: no limit).
    pub max_pages: u64,
    /// Only slots of at least this size, and only results below it (0: no threshold).
    pub threshold: usize,
    pub algo: Option<String>,
    pub priority: Option<usize>,
}

impl Zram {
    /// `idle`: `None` marks every slot; `Some(age)` marks slots not accessed for `age` seconds
    /// and clears IDLE on the others.
    pub(crate) fn mark_idle(&self, age_secs: Option<u64>) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EINVAL)?;
        let cutoff =
            age_secs.map(|age| self.clock.now_secs() as i64 - age.min(i64::MAX as u64) as i64);
        for index in 0..live.table.len() {
            let slot = live.table.lock(index);
            if !slot.allocated() || slot.test(Flag::Wb) || slot.test(Flag::Same) {
                continue;
            }
            match cutoff {
                Some(c) if c <= slot.ac_time() as i64 => slot.clear(Flag::Idle),
                _ => slot.set(Flag::Idle),
            }
        }
        Ok(())
    }

    /// Runs `f` as the one post-processing operation allowed at a time.
    fn exclusive<T>(&self, f: impl FnOnce() -> Result<T, ZramError>) -> Result<T, ZramError> {
        if self.pp_in_progress.swap(true, Ordering::Acquire) {
            return err(Errno::EAGAIN, "another writeback or recompression is running");
        }
        let r = f();
        self.pp_in_progress.store(false, Ordering::Release);
        r
    }

    /// `writeback`, with the 6.18 parse: each `page_index=`/`page_indexes=` scans its range with
    /// the mode parsed so far; a valueless mode or `type=` scans the current range and ends the
    /// parse. Returns the last write error, if any; other slots are still written.
    pub(crate) fn writeback(&self, args: &str) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EINVAL)?;
        self.exclusive(|| {
            if live.backing.is_none() {
                return err(Errno::ENODEV, "no backing device");
            }
            let nr_pages = live.table.len() as u64;
            let mut ctl = PpCtl::new(self.config.page_size);
            let (mut lo, mut hi) = (0u64, nr_pages);
            let mut mode = WbMode::default();
            for arg in crate::parse::args(args) {
                match (arg.param, arg.val) {
                    (m, None) | ("type", Some(m)) => {
                        mode = WbMode::parse(m)?;
                        self.scan_for_writeback(&live, mode, lo, hi, &mut ctl);
                        break;
                    }
                    ("page_index", Some(v)) => {
                        lo = crate::parse::kstrtoull(v, 10)?;
                        if lo >= nr_pages {
                            return err(
                                Errno::ERANGE,
                                format!("page_index {lo} is beyond the disk"),
                            );
                        }
                        hi = lo + 1;
                        self.scan_for_writeback(&live, mode, lo, hi, &mut ctl);
                    }
                    ("page_indexes", Some(v)) => {
                        let (a, b) = v.split_once('-').ok_or_else(|| {
                            ZramError::new(Errno::ERANGE, "page_indexes needs LO-HI")
                        })?;
                        let (a, b) =
                            (crate::parse::kstrtoull(a, 10)?, crate::parse::kstrtoull(b, 10)?);
                        if a >= nr_pages || b >= nr_pages || a > b {
                            return err(Errno::ERANGE, format!("bad page_indexes range {v:?}"));
                        }
                        (lo, hi) = (a, b + 1);
                        self.scan_for_writeback(&live, mode, lo, hi, &mut ctl);
                    }
                    _ => {}
                }
            }
            self.writeback_slots(&live, &mut ctl)
        })
    }

    fn scan_for_writeback(&self, live: &Live, mode: WbMode, lo: u64, hi: u64, ctl: &mut PpCtl) {
        for index in lo as usize..hi as usize {
            let slot = live.table.lock(index);
            if !slot.allocated()
                || slot.test(Flag::Wb)
                || slot.test(Flag::Same)
                || slot.test(Flag::PpSlot)
                || (mode.idle && !slot.test(Flag::Idle))
                || (mode.huge && !slot.test(Flag::Huge))
                || (mode.incompressible && !slot.test(Flag::Incompressible))
            {
                continue;
            }
            slot.set(Flag::PpSlot);
            ctl.place(index, slot.size());
        }
    }

    fn writeback_slots(&self, live: &Live, ctl: &mut PpCtl) -> Result<(), ZramError> {
        let Some(backing) = &live.backing else { return err(Errno::ENODEV, "no backing device") };
        let mut page = vec![0u8; self.config.page_size];
        let mut block: Option<u64> = None;
        let mut result = Ok(());
        while let Some(index) = ctl.select() {
            if self.wb_limit_enable.load(Ordering::Relaxed) && *self.wb_limit() == 0 {
                result = err(Errno::EIO, "writeback_limit exhausted");
                release_remaining(live, index, ctl);
                break;
            }
            let blk = match block {
                Some(b) => b,
                None => match backing.alloc_block() {
                    Some(b) => {
                        self.stats.bd_count.fetch_add(1, Ordering::Relaxed);
                        block = Some(b);
                        b
                    }
                    None => {
                        result = err(Errno::ENOSPC, "backing device is full");
                        release_remaining(live, index, ctl);
                        break;
                    }
                },
            };
            let slot = live.table.lock(index);
            if !slot.test(Flag::PpSlot) {
                continue;
            }
            if self.read_slot(live, &slot, &mut page).is_err() {
                slot.clear(Flag::PpSlot);
                continue;
            }
            // The kernel drops the slot lock during the I/O; a write racing with it clears
            // PP_SLOT and wins. Holding the lock gives the same outcome without the window.
            if let Err(e) = backing.write_block(blk, &page) {
                slot.clear(Flag::PpSlot);
                result = err(Errno::EIO, format!("backing device write: {e}"));
                continue;
            }
            self.stats.bd_writes.fetch_add(1, Ordering::Relaxed);
            // A slot chosen for writeback is never WB, so this frees the in-memory object only.
            self.free_slot(live, &slot);
            slot.set(Flag::Wb);
            slot.set_handle(blk);
            block = None;
            self.stats.pages_stored.fetch_add(1, Ordering::Relaxed);
            if self.wb_limit_enable.load(Ordering::Relaxed) {
                let mut limit = self.wb_limit();
                *limit = limit.saturating_sub(self.config.page_size as u64 / 4096);
            }
        }
        if let Some(b) = block {
            backing.free_block(b);
            self.stats.bd_count.fetch_sub(1, Ordering::Relaxed);
        }
        result
    }

    pub(crate) fn wb_limit(&self) -> std::sync::MutexGuard<'_, u64> {
        self.wb_limit.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `recompress`.
    pub(crate) fn recompress(&self, req: &RecompressRequest) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EINVAL)?;
        if req.threshold >= live.huge_class_size {
            return err(Errno::EINVAL, format!("threshold must be below {}", live.huge_class_size));
        }
        let (mut prio, mut prio_max) = (1usize, crate::device::MAX_COMPS);
        if let Some(p) = req.priority {
            prio = p.max(1);
            prio_max = prio + 1;
        }
        if let Some(algo) = &req.algo {
            let found = (prio..crate::device::MAX_COMPS)
                .find(|&p| live.comps[p].as_ref().is_some_and(|c| c.name() == algo));
            match found {
                Some(p) => (prio, prio_max) = (p, p + 1),
                None => {
                    return err(Errno::EINVAL, format!("{algo} is not a recompression algorithm"));
                }
            }
        }
        prio_max = prio_max.min(live.num_active_comps);
        if prio >= prio_max {
            return err(Errno::EINVAL, "no recompression algorithm at that priority");
        }
        self.exclusive(|| {
            let mut ctl = PpCtl::new(self.config.page_size);
            for index in 0..live.table.len() {
                let slot = live.table.lock(index);
                if !slot.allocated()
                    || (req.mode.idle && !slot.test(Flag::Idle))
                    || (req.mode.huge && !slot.test(Flag::Huge))
                    || slot.test(Flag::Wb)
                    || slot.test(Flag::Same)
                    || slot.test(Flag::Incompressible)
                    || slot.test(Flag::PpSlot)
                    || slot.priority() + 1 >= prio_max
                {
                    continue;
                }
                slot.set(Flag::PpSlot);
                ctl.place(index, slot.size());
            }
            let mut remaining = req.max_pages;
            let mut page = vec![0u8; self.config.page_size];
            let mut result = Ok(());
            while let Some(index) = ctl.select() {
                let slot = live.table.lock(index);
                if remaining == 0 || result.is_err() {
                    slot.clear(Flag::PpSlot);
                    continue;
                }
                if !slot.test(Flag::PpSlot) {
                    continue;
                }
                slot.clear(Flag::PpSlot);
                if let Err(e) = self.recompress_slot(
                    &live,
                    &slot,
                    &mut page,
                    &mut remaining,
                    req.threshold,
                    prio,
                    prio_max,
                ) {
                    result = Err(e);
                }
            }
            result
        })
    }

    /// `recompress_slot`: tries the secondaries from `max(prio, current + 1)` up and keeps the
    /// first result that lands in a smaller size class (and under the threshold).
    #[allow(clippy::too_many_arguments)]
    fn recompress_slot(
        &self,
        live: &Live,
        slot: &crate::slot::SlotGuard<'_>,
        page: &mut [u8],
        remaining: &mut u64,
        threshold: usize,
        prio: usize,
        prio_max: usize,
    ) -> Result<(), ZramError> {
        let old_len = slot.size();
        if old_len == 0 || old_len < threshold {
            return Ok(());
        }
        self.read_slot(live, slot, page)?;
        slot.clear(Flag::Idle);
        let old_class = live.pool.class_index(old_len);
        let mut prio = prio.max(slot.priority() + 1);
        if prio >= prio_max {
            return Ok(());
        }
        let mut found = None;
        while prio < prio_max {
            if let Some(comp) = &live.comps[prio] {
                let mut strm = comp.get()?;
                let Stream { comp: codec, buffer, .. } = &mut *strm;
                let r = codec.compress(page, buffer);
                match r {
                    Err(e) => {
                        drop(strm);
                        *remaining = remaining.saturating_sub(1);
                        return err(Errno::EIO, format!("recompression failed: {e}"));
                    }
                    Ok(len) => {
                        let better = live.pool.class_index(len) < old_class
                            && (threshold == 0 || len < threshold);
                        if better {
                            found = Some((strm, len, prio));
                            break;
                        }
                        drop(strm);
                    }
                }
            }
            prio += 1;
        }
        *remaining = remaining.saturating_sub(1);
        let Some((strm, len, new_prio)) = found else {
            // Only when the highest algorithm was tried is the page hopeless.
            if prio >= live.num_active_comps {
                slot.set(Flag::Incompressible);
            }
            return Ok(());
        };
        // Recompression allocates without the memory-limit check, as in the kernel.
        let stored = live.pool.store(&strm.buffer[..len]).map_err(pool_error);
        drop(strm);
        let handle: Handle = stored?;
        // As in the kernel, the slot comes out freshly set: not idle, access time 0.
        self.free_slot(live, slot);
        slot.set_handle(handle.0);
        slot.set_size(len);
        slot.set_priority(new_prio);
        self.stats.compr_data_size.fetch_add(len as u64, Ordering::Relaxed);
        self.stats.pages_stored.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Clears PP_SLOT on the slot that stopped the work and on every slot not reached.
fn release_remaining(live: &Live, index: usize, ctl: &mut PpCtl) {
    live.table.lock(index).clear(Flag::PpSlot);
    while let Some(i) = ctl.select() {
        live.table.lock(i).clear(Flag::PpSlot);
    }
}
