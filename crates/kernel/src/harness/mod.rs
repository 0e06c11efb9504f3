//! The live kernel's swap set-up, written once for every experiment that runs real programs
//! against the kernel's zram (the live-kernel tests, `zmem validate replay`): a fresh zram
//! device as swap ([`ZramSwapDevice`]), a memory cgroup with a limit ([`MemCgroup`]), and a
//! program started inside it ([`CgroupChild`]), each an RAII guard that undoes what it did when
//! dropped, on panic too. [`Harness`] holds the three in the order they must go (program, then
//! cgroup, then swap device).
//!
//! Each guard touches only what it made: the device it hot-added (never `/dev/zram0` or another
//! existing one), the cgroup directory it created under a unique name, the process it spawned.
//! [`unavailable_reason`] says, in one line, why this machine cannot run it (not root, no kernel
//! zram, no memory cgroup); [`other_swaps`] lists the swap areas that are not ours, which share
//! the swap traffic with ours by priority.
//!
//! Kernel facts this relies on (docs/live-system.md): `hot_add` / `hot_remove` in
//! `/sys/class/zram-control`; a swap header is one page (`SWAPSPACE2` at `PAGE_SIZE - 10`,
//! `union swap_header` in include/linux/swap.h); writing `0` to `cgroup.procs` moves the writer
//! itself (cgroup v1 and v2 alike), which is how a program enters its cgroup before it allocates.

mod cgroup;
mod child;
mod swap;

use std::path::Path;

use crate::record::SwapForPageOut;
pub use crate::stat::SwapArea;
pub use cgroup::{CgroupVersion, MemCgroup};
pub use child::CgroupChild;
pub use swap::{ZramSwapConfig, ZramSwapDevice, swap_header};

use crate::KernelError;

/// Why the live set-up cannot run here, in one line, or `None` when it can.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the live zram set-up needs swapon, hot_add and cgroups)".into());
    }
    if let Some(why) = crate::zram_device::unavailable_reason() {
        return Some(why);
    }
    if let Err(why) = cgroup::find_memory_controller() {
        return Some(why.to_string());
    }
    None
}

/// Fails with [`KernelError::Setup`] and the reason where [`unavailable_reason`] gives one.
pub fn check_available() -> Result<(), KernelError> {
    match unavailable_reason() {
        Some(why) => Err(KernelError::Setup(format!("live kernel set-up unavailable: {why}"))),
        None => Ok(()),
    }
}

/// The active swap areas other than `mine` (paths as /proc/swaps shows them), from /proc/swaps.
pub fn other_swaps(mine: &[&Path]) -> Result<Vec<SwapArea>, KernelError> {
    let areas = crate::stat::swaps()?;
    Ok(areas.into_iter().filter(|a| !mine.iter().any(|m| Path::new(&a.filename) == *m)).collect())
}

/// The swap area for `zmem trace record`'s page-out sampling
/// ([`crate::record::page_out`]), for a recording of `captured_bytes` of pages. Pages
/// paged out should go to compressed RAM, not to a disk, so a touched page comes back in
/// microseconds:
/// - where the active swap area of highest priority is a zram device, page-outs go there as the
///   system's own swap-outs do, and nothing is made (removing a device of ours at the end would
///   read back every page the system swapped into it meanwhile, which a machine short of memory
///   may not have room for);
/// - else a zram swap device of our own is made at a priority above every active swap area
///   (32767 at most), sized for twice the captured pages (256 MiB at least), because every other
///   swap-out on the system goes there too while it exists. Dropping the guard swaps it off (its
///   pages are read back) and removes it.
pub fn page_out_swap(captured_bytes: u64) -> Result<SwapForPageOut, KernelError> {
    let others = other_swaps(&[])?;
    let top = others.iter().max_by_key(|a| a.priority);
    if let Some(z) = top.filter(|a| a.zram_id().is_some()) {
        return Ok(SwapForPageOut {
            note: format!(
                "{} (active, priority {}; not ours, left as it is)",
                z.filename, z.priority
            ),
            guard: Box::new(()),
        });
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(KernelError::Setup("not root: making a zram swap device needs it".into()));
    }
    if let Some(why) = crate::zram_device::unavailable_reason() {
        return Err(KernelError::Setup(why));
    }
    let priority = top.map_or(0, |a| a.priority.saturating_add(1)).clamp(0, 32767);
    let disksize = captured_bytes.saturating_mul(2).max(256 << 20);
    let cfg = ZramSwapConfig { disksize, priority, ..ZramSwapConfig::default() };
    let dev = ZramSwapDevice::create(&cfg)?;
    let mut note = format!(
        "{} made for the recording ({}, {} MiB, priority {priority}; removed at the end)",
        dev.path().display(),
        cfg.algorithm,
        disksize >> 20
    );
    if let Some(tie) = others.iter().find(|a| a.priority >= priority) {
        note.push_str(&format!(
            "; {} has the same priority and takes half the page-outs",
            tie.filename
        ));
    }
    Ok(SwapForPageOut { note, guard: Box::new(dev) })
}

/// What a [`Harness`] makes.
#[derive(Debug, Clone)]
pub struct HarnessConfig {
    /// The swap device.
    pub swap: ZramSwapConfig,
    /// The cgroup's memory limit in bytes.
    pub memory_limit: u64,
}

/// A zram swap device, a memory cgroup and (once [`spawn`](Self::spawn)ed) a program in it.
/// Dropped in field order: the program is killed, then the cgroup removed, then the device
/// swapped off, reset and removed.
#[derive(Debug)]
pub struct Harness {
    /// The program, once spawned.
    pub child: Option<CgroupChild>,
    /// The memory cgroup the program runs in.
    pub cgroup: MemCgroup,
    /// The zram swap device.
    pub swap: ZramSwapDevice,
}

impl Harness {
    /// Checks [`unavailable_reason`], then makes the swap device and the cgroup.
    pub fn new(cfg: &HarnessConfig) -> Result<Self, KernelError> {
        check_available()?;
        let swap = ZramSwapDevice::create(&cfg.swap)?;
        let cgroup = MemCgroup::create(cfg.memory_limit)?;
        Ok(Self { child: None, cgroup, swap })
    }

    /// Starts `cmd` inside the cgroup (replacing and killing any program started before).
    pub fn spawn(&mut self, cmd: std::process::Command) -> Result<&mut CgroupChild, KernelError> {
        self.child = None;
        Ok(self.child.insert(CgroupChild::spawn(cmd, &self.cgroup)?))
    }
}

fn setup(what: impl std::fmt::Display, e: impl std::fmt::Display) -> KernelError {
    KernelError::Setup(format!("{what}: {e}"))
}

/// A name no other live set-up on this machine uses at the same time: pid and a counter.
fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}
