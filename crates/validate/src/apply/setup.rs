//! The set-up of `zmem validate apply`, each part pushed on the [`UndoStack`] as it is made: a
//! zram swap device of our own ([`ZramSwapDevice`], above every active swap area), or zswap's
//! parameters ([`ParamsGuard`]) with a swap file of our own behind them ([`LoopSwap`]). The
//! machine's own swap areas are never touched.
//!
//! Undoing a swap area reads its pages back into memory. Where `MemAvailable` does not cover
//! what that brings back net of the pool it frees, the swapoff could only succeed by pushing
//! other memory out or waking the OOM killer: the area is left swapped on and the undo says how
//! to remove it; where `MemAvailable` covers that but not every byte the area holds, the undo
//! says so and swaps off.

use std::path::{Path, PathBuf};

use zmem_kernel::harness::{ZramSwapConfig, ZramSwapDevice};
use zmem_lab::ZswapParams;

use super::one_line;
use super::plan::Store;
use super::undo::{Undo, UndoStack};
use crate::zswap_params::{self, ParamsGuard};
use crate::zswap_swap::LoopSwap;

/// What the watch reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/dev/zramN`.
    Zram {
        id: u32,
        path: String,
    },
    /// zswap in front of our swap area (`/dev/loopN`).
    Zswap {
        device: String,
    },
    Nothing,
}

impl Target {
    /// The swap area as /proc/swaps names it.
    pub fn swap_area(&self) -> Option<&str> {
        match self {
            Target::Zram { path, .. } => Some(path),
            Target::Zswap { device } => Some(device),
            Target::Nothing => None,
        }
    }
}

fn mib(b: u64) -> String {
    format!("{} MiB", b.div_ceil(1 << 20))
}

/// Above every active swap area (32767 at most), and a note where one has that already.
fn priority() -> Result<(i32, Option<String>), String> {
    let areas = zmem_kernel::stat::swaps().map_err(|e| e.to_string())?;
    let top = areas.iter().map(|a| a.priority).max();
    let p = top.map_or(0, |t| t.saturating_add(1)).clamp(0, 32767);
    let tie = areas.iter().find(|a| a.priority >= p).map(|a| {
        format!("{} has priority {} too and takes half the page-outs", a.filename, a.priority)
    });
    Ok((p, tie))
}

/// Makes what `store` asks for, pushing each part on `undo`; the lines say what was made.
pub fn set_up(
    store: &Store,
    swap_dir: &Path,
    undo: &mut UndoStack,
    changes: &mut Vec<String>,
) -> Result<Target, String> {
    match store {
        Store::Zram { algorithm, disksize, mem_limit, note } => {
            let (priority, tie) = priority()?;
            let cfg = ZramSwapConfig {
                algorithm: algorithm.clone(),
                disksize: *disksize,
                priority,
                mem_limit: *mem_limit,
            };
            let dev = ZramSwapDevice::create(&cfg).map_err(|e| e.to_string())?;
            let (id, path) = (dev.id(), dev.path().display().to_string());
            undo.push(Box::new(ZramUndo { dev }));
            changes.push(format!(
                "made {path}: {algorithm}, disksize {}, mem_limit {}, swap priority {priority} \
                 (above every active swap area{})",
                mib(*disksize),
                mem_limit.map_or("none".into(), mib),
                tie.map_or(String::new(), |t| format!("; {t}"))
            ));
            changes.extend(note.iter().cloned());
            Ok(Target::Zram { id, path })
        }
        Store::Zswap { params, swap_bytes } => zswap(params, *swap_bytes, swap_dir, undo, changes),
        Store::Nothing(why) => {
            changes.push(format!("nothing set up: {why}"));
            Ok(Target::Nothing)
        }
    }
}

fn zswap(
    params: &ZswapParams,
    swap_bytes: u64,
    swap_dir: &Path,
    undo: &mut UndoStack,
    changes: &mut Vec<String>,
) -> Result<Target, String> {
    let dir = Path::new(zswap_params::PARAMS_DIR);
    if !dir.is_dir() {
        return Err("this kernel has no zswap (CONFIG_ZSWAP off)".into());
    }
    let guard = ParamsGuard::apply(dir, params)?;
    let was: Vec<String> = guard.saved().iter().map(|(k, v)| format!("{k}={v}")).collect();
    undo.push(Box::new(ParamsUndo { guard }));
    changes.push(format!(
        "set zswap's parameters: compressor={} max_pool_percent={} accept_threshold_percent={} \
         shrinker_enabled={} enabled=Y (were {})",
        params.compressor,
        params.max_pool_percent,
        params.accept_threshold_percent,
        if params.shrinker_enabled { "Y" } else { "N" },
        was.join(" ")
    ));
    let (priority, tie) = priority()?;
    let swap = LoopSwap::create(swap_dir, swap_bytes, priority).map_err(|e| e.to_string())?;
    let device = swap.device().display().to_string();
    changes.push(format!(
        "made a swap file {} ({}) on {device}, swap priority {priority}, behind zswap{}",
        swap.file().display(),
        mib(swap_bytes),
        tie.map_or(String::new(), |t| format!("; {t}"))
    ));
    let file = swap.file().to_path_buf();
    undo.push(Box::new(LoopUndo { swap, device: device.clone(), file }));
    let others = crate::zswap_swap::foreign_swaps(&[Path::new(&device)]).unwrap_or_default();
    if !others.is_empty() {
        let names: Vec<String> = others.into_iter().map(|a| a.filename).collect();
        changes.push(format!(
            "zswap stores in front of every swap area: its pool's figures include pages bound \
             for {} (not this run's)",
            names.join(", ")
        ));
    }
    Ok(Target::Zswap { device })
}

/// The active swap area named `name`, if it is.
fn active(name: &str) -> Option<zmem_kernel::stat::SwapArea> {
    zmem_kernel::stat::swaps().ok()?.into_iter().find(|a| a.filename == name)
}

fn mem_available() -> Option<u64> {
    zmem_kernel::stat::meminfo().ok()?.get("MemAvailable").copied()
}

/// Whether memory covers a swapoff that brings `held` back and frees `pool`: `Err` (leave the
/// area) where it does not cover the net, a warning where it does not cover `held`.
pub fn room_for_swapoff(
    name: &str,
    held: u64,
    pool: u64,
    available: Option<u64>,
) -> Result<Option<String>, String> {
    let Some(avail) = available else { return Ok(None) };
    let net = held.saturating_sub(pool);
    if avail < net {
        return Err(format!(
            "MemAvailable {} does not cover the {} {name} would bring back: left swapped on \
             (a swapoff now would push other memory out or wake the OOM killer)",
            mib(avail),
            mib(net)
        ));
    }
    Ok((avail < held).then(|| {
        format!(
            "MemAvailable {} covers the {} {name} brings back net of its pool, not all {} it \
             holds",
            mib(avail),
            mib(net),
            mib(held)
        )
    }))
}

struct ZramUndo {
    dev: ZramSwapDevice,
}

impl Undo for ZramUndo {
    fn what(&self) -> String {
        self.dev.path().display().to_string()
    }

    fn undo(self: Box<Self>) -> Result<String, String> {
        let (path, id) = (self.what(), self.dev.id());
        let mm = self.dev.mm_stat().unwrap_or_default();
        let room = room_for_swapoff(&path, mm.orig_data_size, mm.mem_used_total, mem_available());
        let by_hand = format!(
            "remove it yourself when memory allows: swapoff {path}; echo {id} > \
             /sys/class/zram-control/hot_remove"
        );
        let warning = match room {
            Ok(w) => w,
            Err(e) => {
                // Left as it is: its guard must not swap it off on the way out.
                std::mem::forget(self.dev);
                return Err(format!("{e}; {by_hand}"));
            }
        };
        drop(self.dev);
        if active(&path).is_some() {
            return Err(format!("swapoff {path} failed: it is left swapped on; {by_hand}"));
        }
        if zmem_kernel::stat::zram_sysfs(id).exists() {
            return Err(format!("{path} is swapped off but still exists; {by_hand}"));
        }
        let mut line =
            format!("swapped off and removed {path} ({} read back)", mib(mm.orig_data_size));
        if let Some(w) = warning {
            line += &format!("; {w}");
        }
        Ok(line)
    }
}

struct LoopUndo {
    swap: LoopSwap,
    device: String,
    file: PathBuf,
}

impl Undo for LoopUndo {
    fn what(&self) -> String {
        format!("{} on {}", self.file.display(), self.device)
    }

    fn undo(self: Box<Self>) -> Result<String, String> {
        let what = self.what();
        let used = active(&self.device).map_or(0, |a| a.used_bytes);
        let pool = zmem_kernel::stat::meminfo().ok().and_then(|m| m.get("Zswap").copied());
        let by_hand = format!(
            "remove it yourself when memory allows: swapoff {}; losetup -d {}; rm {}",
            self.device,
            self.device,
            self.file.display()
        );
        let warning = match room_for_swapoff(&self.device, used, pool.unwrap_or(0), mem_available())
        {
            Ok(w) => w,
            Err(e) => {
                std::mem::forget(self.swap);
                return Err(format!("{e}; {by_hand}"));
            }
        };
        drop(self.swap);
        if active(&self.device).is_some() {
            return Err(format!("swapoff {} failed: left swapped on; {by_hand}", self.device));
        }
        if self.file.exists() {
            return Err(format!("{} is swapped off but the file is left; {by_hand}", what));
        }
        let mut line =
            format!("swapped off {}, detached it and removed {}", self.device, self.file.display());
        if let Some(w) = warning {
            line += &format!("; {w}");
        }
        Ok(line)
    }
}

struct ParamsUndo {
    guard: ParamsGuard,
}

impl Undo for ParamsUndo {
    fn what(&self) -> String {
        "zswap's parameters".into()
    }

    fn undo(self: Box<Self>) -> Result<String, String> {
        let saved = self.guard.saved().to_vec();
        drop(self.guard);
        let now = zswap_params::snapshot(Path::new(zswap_params::PARAMS_DIR))?;
        let wrong: Vec<String> = saved
            .iter()
            .filter(|s| !now.contains(s))
            .map(|(k, v)| format!("{k} (was {v})"))
            .collect();
        if wrong.is_empty() {
            let all: Vec<String> = saved.iter().map(|(k, v)| format!("{k}={v}")).collect();
            Ok(format!("wrote zswap's parameters back: {}", all.join(" ")))
        } else {
            Err(one_line(&format!("zswap's parameters not written back: {}", wrong.join(", "))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swapoff_needs_room_for_what_comes_back_net_of_the_pool() {
        let mib = 1u64 << 20;
        // Enough for everything: no word.
        assert_eq!(room_for_swapoff("/dev/zram1", 100 * mib, 30 * mib, Some(500 * mib)), Ok(None));
        // Enough for the net (70 MiB), not the 100 held: a warning, and it goes on.
        let w = room_for_swapoff("/dev/zram1", 100 * mib, 30 * mib, Some(80 * mib)).unwrap();
        assert!(w.unwrap().contains("not all 100 MiB"));
        // Not even the net: left swapped on.
        let e = room_for_swapoff("/dev/zram1", 100 * mib, 30 * mib, Some(50 * mib)).unwrap_err();
        assert!(e.contains("left swapped on") && e.contains("70 MiB"), "{e}");
        // MemAvailable unreadable: it goes on.
        assert_eq!(room_for_swapoff("/dev/zram1", 100 * mib, 0, None), Ok(None));
    }
}
