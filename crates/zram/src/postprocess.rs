//! Post-processing: idle marking, writeback to the backing device, and recompression with the
//! secondary algorithms, with the kernel's selection rules and order.
//!
//! Writeback and recompression share the kernel's two-phase shape (drivers/block/zram/zram_drv.c
//! `struct zram_pp_ctl`): a scan marks candidate slots PP_SLOT and sorts them into 64-byte size
//! buckets (`place_pp_slot()`, `PP_BUCKET_SIZE_RANGE`); the work then takes slots largest
//! bucket first (`select_pp_slot()`; within a bucket, the last one scanned first, as its
//! `list_add`). Any access to a slot between the two phases clears PP_SLOT (`zram_accessed()`,
//! `zram_free_page()`) and the slot is skipped. As 6.18's `release_pp_ctl()`, every slot a scan
//! marked has PP_SLOT cleared when the operation ends, whether it finished, failed or stopped
//! parsing half-way; and, as 6.18's `scan_slots_for_writeback()` and
//! `scan_slots_for_recompress()`, a scan does not look at PP_SLOT (only one post-processing
//! runs at a time: `pp_in_progress`).

use std::sync::atomic::Ordering;

use zmem_pool::Handle;

use crate::device::{Live, ObjectSource, Zram, pool_error};
use crate::errno::{Errno, ZramError, err};
use crate::slot::Flag;
use crate::zcomp::{Stream, StreamGuard};

const PP_BUCKET_SIZE_RANGE: usize = 64;

/// Slots picked by a scan, in the kernel's processing order: `NUM_PP_BUCKETS` =
/// `PAGE_SIZE / 64 + 1` buckets by object size.
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

/// Writeback mode filters (combinable, as zram_drv.c's `IDLE_WRITEBACK`, `HUGE_WRITEBACK`,
/// `INCOMPRESSIBLE_WRITEBACK` bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WbMode {
    pub idle: bool,
    pub huge: bool,
    pub incompressible: bool,
}

impl WbMode {
    /// zram_drv.c `parse_mode()`: `idle`, `huge`, `huge_idle`, `incompressible`; else EINVAL.
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

/// Recompression mode filters (zram_drv.c `RECOMPRESS_IDLE`, `RECOMPRESS_HUGE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecompMode {
    pub idle: bool,
    pub huge: bool,
}

/// A parsed `recompress` request.
#[derive(Debug, Clone, Default)]
pub struct RecompressRequest {
    pub mode: RecompMode,
    /// Slots to attempt at most (`u64::MAX`: no limit; `num_recomp_pages`).
    pub max_pages: u64,
    /// Only slots of at least this size, and only results below it (0: no threshold).
    pub threshold: usize,
    pub algo: Option<String>,
    pub priority: Option<usize>,
}

impl Zram {
    /// `idle` (zram_drv.c `idle_store()` + `mark_idle()`): `None` marks every slot; `Some(age)`
    /// takes the cutoff `ktime_get_boottime() - age` in nanoseconds (`ktime_t` arithmetic) and
    /// marks the slots whose access time is strictly before it (`ktime_after(cutoff,
    /// ac_time)`), clearing IDLE on the others. A cutoff of exactly 0 is "all", as in the
    /// kernel. Free, WB and SAME slots are left alone.
    pub(crate) fn mark_idle(&self, age_secs: Option<u64>) -> Result<(), ZramError> {
        let cutoff = match age_secs {
            None => 0,
            Some(age) => {
                let now = self.clock.now_ns() as i64;
                now.wrapping_sub(age.wrapping_mul(1_000_000_000) as i64)
            }
        };
        let live = self.live_or(Errno::EINVAL)?;
        for index in 0..live.table.len() {
            let slot = live.table.lock(index);
            if !slot.allocated() || slot.test(Flag::Wb) || slot.test(Flag::Same) {
                continue;
            }
            if cutoff == 0 || cutoff > slot.ac_time() as i64 {
                slot.set(Flag::Idle);
            } else {
                slot.clear(Flag::Idle);
            }
        }
        Ok(())
    }

    /// Runs `f` as the one post-processing operation allowed at a time (zram_drv.c
    /// `writeback_store()` / `recompress_store()`: `atomic_xchg(&pp_in_progress, 1)`, EAGAIN).
    fn exclusive<T>(&self, f: impl FnOnce() -> Result<T, ZramError>) -> Result<T, ZramError> {
        if self.pp_in_progress.swap(true, Ordering::Acquire) {
            return err(Errno::EAGAIN, "another writeback or recompression is running");
        }
        let r = f();
        self.pp_in_progress.store(false, Ordering::Release);
        r
    }

    /// `writeback`, as zram_drv.c `writeback_store()`: EINVAL before `disksize`, EAGAIN while
    /// another post-processing runs, ENODEV without a backing device; then the parse: each
    /// `page_index=`/`page_indexes=` scans its range with the mode parsed so far; a valueless
    /// mode or `type=` scans the current range and ends the parse; a parse error writes
    /// nothing. Then `zram_writeback_slots()`: returns the last write error, if any; other
    /// slots are still written.
    pub(crate) fn writeback(&self, args: &str) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EINVAL)?;
        self.exclusive(|| {
            if live.backing.is_none() {
                return err(Errno::ENODEV, "no backing device");
            }
            let mut ctl = PpCtl::new(self.config.page_size);
            let r = self.writeback_ctl(&live, args, &mut ctl);
            release_all(&live, &mut ctl);
            r
        })
    }

    /// `writeback_store`'s parse and work on `ctl`; the caller releases what is left in it.
    fn writeback_ctl(&self, live: &Live, args: &str, ctl: &mut PpCtl) -> Result<(), ZramError> {
        {
            let nr_pages = live.table.len() as u64;
            let (mut lo, mut hi) = (0u64, nr_pages);
            let mut mode = WbMode::default();
            for arg in crate::parse::args(args) {
                match (arg.param, arg.val) {
                    // `writeback_store`: a parameter without a value *or with an empty one*
                    // (`!val || !*val`) is the old valueless mode syntax, its name the mode
                    // ("idle=" is idle writeback, "foo=" and "type=" are EINVAL).
                    (m, None | Some("")) | ("type", Some(m)) => {
                        mode = WbMode::parse(m)?;
                        self.scan_for_writeback(live, mode, lo, hi, ctl);
                        break;
                    }
                    // `parse_page_index()`: `kstrtoul()`, ERANGE past the disk.
                    ("page_index", Some(v)) => {
                        lo = crate::parse::kstrtoull(v, 10)?;
                        if lo >= nr_pages {
                            return err(
                                Errno::ERANGE,
                                format!("page_index {lo} is beyond the disk"),
                            );
                        }
                        hi = lo + 1;
                        self.scan_for_writeback(live, mode, lo, hi, ctl);
                    }
                    ("page_indexes", Some(v)) => {
                        // `parse_page_indexes`: no '-' is EINVAL; then LO is parsed and
                        // range-checked before HI is read.
                        let (a, b) = v.split_once('-').ok_or_else(|| {
                            ZramError::new(Errno::EINVAL, "page_indexes needs LO-HI")
                        })?;
                        let a = crate::parse::kstrtoull(a, 10)?;
                        if a >= nr_pages {
                            return err(Errno::ERANGE, format!("bad page_indexes range {v:?}"));
                        }
                        let b = crate::parse::kstrtoull(b, 10)?;
                        if b >= nr_pages || a > b {
                            return err(Errno::ERANGE, format!("bad page_indexes range {v:?}"));
                        }
                        (lo, hi) = (a, b + 1);
                        self.scan_for_writeback(live, mode, lo, hi, ctl);
                    }
                    _ => {}
                }
            }
            self.writeback_slots(live, ctl)
        }
    }

    /// zram_drv.c `scan_slots_for_writeback()`: allocated slots that are neither WB nor SAME
    /// and pass the mode's flags.
    fn scan_for_writeback(&self, live: &Live, mode: WbMode, lo: u64, hi: u64, ctl: &mut PpCtl) {
        for index in lo as usize..hi as usize {
            let slot = live.table.lock(index);
            if !slot.allocated()
                || slot.test(Flag::Wb)
                || slot.test(Flag::Same)
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

    /// zram_drv.c `zram_writeback_slots()`: per slot, the `writeback_limit` check (EIO), a
    /// block (`alloc_block_bdev()`, ENOSPC; a block left unused goes back at the end), the
    /// PP_SLOT recheck, the read, one synchronous page write (an error is remembered and the
    /// next slot tried), then the slot becomes WB (`zram_free_page()`, `pages_stored` counted
    /// again) and the budget drops by a page in 4 KiB units.
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
            // 6.18 subtracts `1 << (PAGE_SHIFT - 12)` from any non-zero budget, which wraps
            // the u64 on 16/64 KiB pages when fewer units are left; zmem saturates
            // (ARCHITECTURE.md, "Which kernel zmem follows"). Equal on 4 KiB pages.
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

    /// `recompress` in zram_drv.c `recompress_store()`'s order: (arguments parsed by the
    /// caller), the threshold (`>= huge_class_size`: EINVAL), then the device, then
    /// `pp_in_progress` (EAGAIN) before the algorithm and priority are resolved against the
    /// device: `priority=N` tries only N (0 reads as 1), `algo=` the first priority from there
    /// that has it, the default every secondary; `prio_max` is capped at `num_active_comps`. With `objects`, a secondary's object comes from there
    /// where it has one, instead of from compressing the page on the secondary's stream.
    pub(crate) fn recompress(
        &self,
        req: &RecompressRequest,
        objects: Option<&dyn ObjectSource>,
    ) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EINVAL)?;
        if req.threshold >= live.huge_class_size {
            return err(Errno::EINVAL, format!("threshold must be below {}", live.huge_class_size));
        }
        self.exclusive(|| {
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
                        return err(
                            Errno::EINVAL,
                            format!("{algo} is not a recompression algorithm"),
                        );
                    }
                }
            }
            prio_max = prio_max.min(live.num_active_comps);
            if prio >= prio_max {
                return err(Errno::EINVAL, "no recompression algorithm at that priority");
            }
            let mut ctl = PpCtl::new(self.config.page_size);
            let r = self.recompress_ctl(&live, req, prio, prio_max, objects, &mut ctl);
            release_all(&live, &mut ctl);
            r
        })
    }

    /// The scan (zram_drv.c `scan_slots_for_recompress()`: allocated, the mode's flags, not
    /// WB/SAME/INCOMPRESSIBLE, not already at `prio_max - 1` or above) and the work of
    /// `recompress` (`recompress_store()`'s loop: stops at `max_pages` or the first error); the
    /// caller releases what is left in `ctl`.
    fn recompress_ctl(
        &self,
        live: &Live,
        req: &RecompressRequest,
        prio: usize,
        prio_max: usize,
        objects: Option<&dyn ObjectSource>,
        ctl: &mut PpCtl,
    ) -> Result<(), ZramError> {
        {
            for index in 0..live.table.len() {
                let slot = live.table.lock(index);
                if !slot.allocated()
                    || (req.mode.idle && !slot.test(Flag::Idle))
                    || (req.mode.huge && !slot.test(Flag::Huge))
                    || slot.test(Flag::Wb)
                    || slot.test(Flag::Same)
                    || slot.test(Flag::Incompressible)
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
                let target = Target { index, threshold: req.threshold, prio, prio_max, objects };
                if let Err(e) =
                    self.recompress_slot(live, &slot, &mut page, &mut remaining, &target)
                {
                    result = Err(e);
                }
            }
            result
        }
    }

    /// zram_drv.c `recompress_slot()`: skips objects under the threshold, reads the page and
    /// clears IDLE, tries the secondaries from `max(prio, current + 1)` up and keeps the first
    /// result that lands in a smaller size class (`zs_lookup_class_index()`) and under the
    /// threshold. Every slot tried counts against `max_pages`; when none helps and the highest
    /// priority was tried, the slot becomes INCOMPRESSIBLE.
    fn recompress_slot(
        &self,
        live: &Live,
        slot: &crate::slot::SlotGuard<'_>,
        page: &mut [u8],
        remaining: &mut u64,
        target: &Target<'_>,
    ) -> Result<(), ZramError> {
        let Target { index, threshold, prio, prio_max, objects } = *target;
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
                // An object made elsewhere takes the place of this compression, and is judged
                // by the same rule.
                if let Some(object) =
                    objects.and_then(|o| o.object(index as u64, comp.name(), &comp.params()))
                {
                    let len = object.len();
                    if live.pool.class_index(len) < old_class && (threshold == 0 || len < threshold)
                    {
                        found = Some((Recompressed::Given(object), len, prio));
                        break;
                    }
                    prio += 1;
                    continue;
                }
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
                            found = Some((Recompressed::Stream(strm), len, prio));
                            break;
                        }
                        drop(strm);
                    }
                }
            }
            prio += 1;
        }
        *remaining = remaining.saturating_sub(1);
        let Some((object, len, new_prio)) = found else {
            // Only when the highest algorithm was tried is the page hopeless.
            if prio >= live.num_active_comps {
                slot.set(Flag::Incompressible);
            }
            return Ok(());
        };
        // Recompression allocates without the memory-limit check (`zs_malloc()`, no
        // `zram_can_store_page()`), as 6.18's `recompress_slot()`.
        let stored = match &object {
            Recompressed::Stream(strm) => live.pool.store(&strm.buffer[..len]),
            Recompressed::Given(bytes) => live.pool.store(bytes),
        }
        .map_err(pool_error);
        drop(object);
        let handle: Handle = stored?;
        // As in the kernel (`zram_free_page()` then the new handle, size and priority), the
        // slot comes out freshly set: not idle, access time 0.
        self.free_slot(live, slot);
        slot.set_handle(handle.0);
        slot.set_size(len);
        slot.set_priority(new_prio);
        self.stats.compr_data_size.fetch_add(len as u64, Ordering::Relaxed);
        self.stats.pages_stored.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// What one slot's recompression works with: the slot and the request's bounds.
#[derive(Clone, Copy)]
struct Target<'a> {
    index: usize,
    threshold: usize,
    prio: usize,
    prio_max: usize,
    objects: Option<&'a dyn ObjectSource>,
}

/// The object a recompression keeps: in its stream's buffer (held until it is stored), or one
/// an [`ObjectSource`] gave.
enum Recompressed<'a> {
    Stream(StreamGuard<'a>),
    Given(&'a [u8]),
}

/// Clears PP_SLOT on the slot that stopped the work and on every slot not reached.
fn release_remaining(live: &Live, index: usize, ctl: &mut PpCtl) {
    live.table.lock(index).clear(Flag::PpSlot);
    release_all(live, ctl);
}

/// zram_drv.c `release_pp_ctl()`: clears PP_SLOT on every slot still in `ctl`.
fn release_all(live: &Live, ctl: &mut PpCtl) {
    while let Some(i) = ctl.select() {
        live.table.lock(i).clear(Flag::PpSlot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ZramConfig;

    /// `recompress_store` (6.18) checks `pp_in_progress` right after the device, before the
    /// `algo=` / `priority=` it parsed are resolved against the device's algorithms: while
    /// another post-processing runs, even a request naming an unknown algorithm is EAGAIN.
    #[test]
    fn recompress_store_checks_pp_in_progress_before_resolving_the_algorithm() {
        let z = Zram::new(ZramConfig::default()).unwrap();
        z.store("recomp_algorithm", "algo=zstd").unwrap();
        z.store("disksize", "1M").unwrap();
        z.pp_in_progress.store(true, Ordering::Relaxed);
        for args in ["algo=nosuch", "priority=3", "algo=zstd"] {
            let e = z.store("recompress", args).unwrap_err();
            assert_eq!(e.errno, Errno::EAGAIN, "{args}");
        }
        // Arguments are parsed first, and the threshold is checked before the flag.
        assert_eq!(z.store("recompress", "algo").unwrap_err().errno, Errno::EINVAL);
        assert_eq!(z.store("recompress", "threshold=4096").unwrap_err().errno, Errno::EINVAL);
        z.pp_in_progress.store(false, Ordering::Relaxed);
        assert_eq!(z.store("recompress", "algo=nosuch").unwrap_err().errno, Errno::EINVAL);
        z.store("recompress", "algo=zstd").unwrap();
    }
}
