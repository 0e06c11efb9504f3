//! One reading of the machine during the watch ([`Reader::read`]): the store (zram's `mm_stat`
//! and its swap-ins: the reads of `/sys/block/zramN/stat`, at most `/proc/vmstat`'s `pswpin`
//! since the start; zswap's debugfs counters, or `/proc/meminfo`'s
//! `Zswapped`/`Zswap` without debugfs, `/proc/vmstat`'s `zswpin` and our swap file's reads),
//! memory PSI, `MemAvailable`, our swap area's use, the agent's counters, and the processes
//! `--pid` named.

use std::path::Path;
use std::time::Instant;

use zmem_kernel::stat;

use super::agent::Shared;
use super::report::{Sample, ZramFigures, ZswapFigures};
use super::setup::Target;

/// Where zswap's debugfs counters are, when debugfs is mounted.
const DEBUGFS: &str = "/sys/kernel/debug";

/// Reads samples for one watch.
#[derive(Debug)]
pub struct Reader {
    pub target: Target,
    pub page_size: u64,
    /// The processes `--pid` named.
    pub pids: Vec<u32>,
    pub agent: Option<Shared>,
    t0: Instant,
    /// The counters at the start: pages read from the device (or zswpin and our swap file's
    /// pages read), zswpout.
    base: Counters,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    device_reads: u64,
    /// Swap-ins from every swap area (`pswpin`; zswap's loads are `zswpin`).
    pswpin: u64,
    zswpin: u64,
    zswpout: u64,
}

impl Reader {
    pub fn new(target: Target, page_size: u64, pids: Vec<u32>, agent: Option<Shared>) -> Self {
        let mut r =
            Self { target, page_size, pids, agent, t0: Instant::now(), base: Counters::default() };
        r.base = r.counters();
        r
    }

    fn pages(&self, sectors: u64) -> u64 {
        crate::zswap_swap::sectors_to_pages(sectors, self.page_size as usize)
    }

    fn counters(&self) -> Counters {
        let vm = stat::vmstat().unwrap_or_default();
        let reads = |name: &str| {
            stat::block_stat_at(Path::new("/sys"), name).map_or(0, |b| self.pages(b.read_sectors))
        };
        Counters {
            device_reads: match &self.target {
                Target::Zram { id, .. } => reads(&format!("zram{id}")),
                Target::Zswap { device } => reads(device.trim_start_matches("/dev/")),
                Target::Nothing => 0,
            },
            pswpin: vm.get("pswpin").copied().unwrap_or(0),
            zswpin: vm.get("zswpin").copied().unwrap_or(0),
            zswpout: vm.get("zswpout").copied().unwrap_or(0),
        }
    }

    /// The zram device's figures now.
    pub fn zram(&self) -> Option<ZramFigures> {
        let Target::Zram { id, .. } = &self.target else { return None };
        let mm = stat::zram_mm_stat(*id).ok()?;
        let c = self.counters();
        Some(ZramFigures {
            orig_data_size: mm.orig_data_size,
            compr_data_size: mm.compr_data_size,
            mem_used_total: mm.mem_used_total,
            mem_limit: mm.mem_limit,
            same_pages: mm.same_pages,
            huge_pages: mm.huge_pages,
            // A read of the device that is no swap-in (a capture, a blkid probe) counts in
            // its stat but not in pswpin, and a swap-in of another area in pswpin only: the
            // fewer of the two.
            pages_read: c
                .device_reads
                .saturating_sub(self.base.device_reads)
                .min(c.pswpin.saturating_sub(self.base.pswpin)),
        })
    }

    /// zswap's pool now.
    pub fn zswap(&self) -> Option<ZswapFigures> {
        let Target::Zswap { .. } = &self.target else { return None };
        let c = self.counters();
        let deltas = |f: &mut ZswapFigures| {
            f.zswpin = c.zswpin.saturating_sub(self.base.zswpin);
            f.zswpout = c.zswpout.saturating_sub(self.base.zswpout);
            f.disk_reads = c.device_reads.saturating_sub(self.base.device_reads);
        };
        let debug = zmem_kernel::zswap_state::debugfs_counters_at(Path::new(DEBUGFS)).ok();
        let get = |k: &str| debug.as_ref().and_then(|d| d.values.get(k).copied());
        let mut f = match (get("stored_pages"), get("pool_total_size")) {
            (Some(stored_pages), Some(pool_total_size)) => ZswapFigures {
                stored_pages,
                pool_total_size,
                source: "debugfs".into(),
                ..Default::default()
            },
            _ => {
                let m = stat::meminfo().ok()?;
                ZswapFigures {
                    stored_pages: m.get("Zswapped").copied().unwrap_or(0) / self.page_size.max(1),
                    pool_total_size: m.get("Zswap").copied().unwrap_or(0),
                    source: "meminfo".into(),
                    ..Default::default()
                }
            }
        };
        deltas(&mut f);
        Some(f)
    }

    /// One sample, now.
    pub fn read(&self) -> Sample {
        let mut s = Sample { t_secs: self.t0.elapsed().as_secs_f64(), ..Sample::default() };
        if let Some(z) = self.zram() {
            (s.moved_out_bytes, s.pool_bytes) = (z.orig_data_size, z.mem_used_total);
            (s.swap_ins, s.mem_limit_bytes) = (z.pages_read, z.mem_limit);
        }
        if let Some(z) = self.zswap() {
            s.moved_out_bytes = z.stored_pages * self.page_size;
            s.pool_bytes = z.pool_total_size;
            s.swap_ins = z.zswpin + z.disk_reads;
        }
        if let Some(psi) = std::fs::read_to_string("/proc/pressure/memory")
            .ok()
            .and_then(|t| zmem_kernel::pressure::parse_psi(&t).ok())
        {
            (s.psi_some_avg10, s.psi_some_avg60) = (psi.some.avg10, psi.some.avg60);
            let full = psi.full.unwrap_or_default();
            (s.psi_full_avg10, s.psi_full_avg60) = (full.avg10, full.avg60);
        }
        s.mem_available_bytes =
            stat::meminfo().ok().and_then(|m| m.get("MemAvailable").copied()).unwrap_or(0);
        if let Some(area) = self
            .target
            .swap_area()
            .and_then(|n| stat::swaps().ok()?.into_iter().find(|a| a.filename == n))
        {
            (s.swap_used_bytes, s.swap_size_bytes) = (area.used_bytes, area.size_bytes);
            // Out of RAM is every slot of our area in use: zero-filled pages take a slot but
            // never reach zram or zswap (6.18 mm/page_io.c `swap_writeout()` ->
            // `is_folio_zero_filled()` -> `swap_zeromap_folio_set()`, no write), nor does a
            // page zswap wrote back to the file; each frees its page for no pool.
            s.moved_out_bytes = s.moved_out_bytes.max(area.used_bytes);
        }
        if let Some(a) = &self.agent {
            let st = a.get();
            (s.agent_out_bytes, s.agent_cpu_seconds) = (st.out_bytes, st.cpu_seconds);
        }
        for &pid in &self.pids {
            if let Some(swapped) = process(Path::new("/proc"), pid) {
                s.watched_alive.push(pid);
                s.watched_swapped_bytes += swapped;
            }
        }
        s
    }
}

/// A running process's `VmSwap` in bytes under `proc`; none where it has exited (a zombie
/// included: its memory is gone).
pub fn process(proc: &Path, pid: u32) -> Option<u64> {
    let dir = proc.join(pid.to_string());
    let st = std::fs::read_to_string(dir.join("stat")).ok()?;
    // The state follows the command's closing parenthesis (a name may hold one).
    let state = st.rsplit_once(')')?.1.split_whitespace().next()?;
    if matches!(state, "Z" | "X" | "x") {
        return None;
    }
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSwap:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_running_until_it_is_a_zombie() {
        let d = std::env::temp_dir().join(format!("zmem-apply-proc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (pid, state, swap) in
            [(10, "S", Some("VmSwap:\t    2048 kB\n")), (11, "Z", None), (12, "R", None)]
        {
            let p = d.join(pid.to_string());
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("stat"), format!("{pid} (a (b) c) {state} 1 2 3\n")).unwrap();
            std::fs::write(p.join("status"), format!("Name:\tx\n{}", swap.unwrap_or(""))).unwrap();
        }
        assert_eq!(process(&d, 10), Some(2 << 20));
        assert_eq!(process(&d, 11), None);
        assert_eq!(process(&d, 12), Some(0), "a kernel without VmSwap: running, nothing out");
        assert_eq!(process(&d, 13), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
