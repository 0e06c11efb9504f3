//! The swap area behind zswap for `zmem validate lab`'s zswap runs: a file of ours (in a
//! directory the user may name: the filesystem it lives on), attached to a loop device of ours,
//! made a swap area and swapped on. The loop device is there so the run can count the disk I/O
//! that is zswap's (rejected stores, written-back pages, misses' reads): its
//! `/sys/block/loopN/stat` counts only the swap area's I/O, where a swap file directly on a
//! filesystem would share the disk's counters with every other program's I/O. Dropping
//! [`LoopSwap`] swaps it off (reading back whatever is still in it), detaches the loop device and
//! removes the file, on any path out.
//!
//! [`foreign_swaps`] is the refusal's check: zswap sits in front of every swap area
//! (`swap_writeout()` -> `zswap_store()` for any swap type, mm/page_io.c), so while another
//! area is active the zswap counters and the pool mix its pages with ours, and its device may
//! take the player's pages by priority.

use std::path::{Path, PathBuf};
use std::process::Command;

use zmem_kernel::KernelError;
use zmem_kernel::stat::{self, BlockStat, SwapArea};

/// Where the swap file goes unless the user names a directory: a disk filesystem (`/tmp` may
/// be tmpfs, whose pages are RAM).
pub const DEFAULT_SWAP_DIR: &str = "/var/tmp";

/// The active swap areas not in `mine` (paths as /proc/swaps shows them).
pub fn foreign_swaps(mine: &[&Path]) -> Result<Vec<SwapArea>, KernelError> {
    Ok(stat::swaps()?
        .into_iter()
        .filter(|a| !mine.iter().any(|m| Path::new(&a.filename) == *m))
        .collect())
}

/// The one line the tool refuses with where [`foreign_swaps`] found any.
pub fn refusal(foreign: &[SwapArea]) -> Option<String> {
    if foreign.is_empty() {
        return None;
    }
    let names: Vec<String> =
        foreign.iter().map(|a| format!("{} (priority {})", a.filename, a.priority)).collect();
    Some(format!(
        "refusing the zswap runs while swap areas this run did not make are \
         active ({}): zswap stores in front of every swap area, so their pages would be counted \
         as the player's; swapoff them first",
        names.join(", ")
    ))
}

/// Runs `cmd` to its end in a process group of its own: a terminal's Ctrl-C goes to the whole
/// foreground group, and a `swapoff` or `losetup -d` killed half-way would leave our swap area
/// on or our loop device attached (this process takes the signal as a flag and cleans up).
fn run(cmd: &mut Command) -> Result<String, KernelError> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    let o = cmd.output().map_err(|e| KernelError::Setup(format!("{cmd:?}: {e}")))?;
    if !o.status.success() {
        return Err(KernelError::Setup(format!(
            "{cmd:?}: {} {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// A swap file on a loop device, both ours, swapped on. The file (0600: it receives the
/// player's pages) is in a private directory of its own under the directory asked for
/// (zmem-files' `PrivateTempDir`, 0700), removed after the file.
#[derive(Debug)]
pub struct LoopSwap {
    file: PathBuf,
    _dir: zmem_files::PrivateTempDir,
    /// `/dev/loopN`, once attached.
    device: Option<PathBuf>,
    on: bool,
}

impl LoopSwap {
    /// Makes a `bytes` file in `dir` (allocated, so the loop device's writes never wait for the
    /// filesystem to find blocks), attaches it to a free loop device, writes a swap header
    /// (`mkswap`) and swaps it on at `priority`. What was made is undone where a later step
    /// fails.
    pub fn create(dir: &Path, bytes: u64, priority: i32) -> Result<Self, KernelError> {
        let setup = |e: zmem_files::FileError| KernelError::Setup(e.to_string());
        let private =
            zmem_files::PrivateTempDir::new_in(dir, "zmem-validate-swap").map_err(setup)?;
        let (f, file) = private.create_file("swap").map_err(setup)?;
        let mut s = Self { file: file.clone(), _dir: private, device: None, on: false };
        let len = libc::off_t::try_from(bytes)
            .map_err(|_| KernelError::Setup(format!("swap file of {bytes} bytes")))?;
        // SAFETY: a valid open descriptor; fallocate has no other preconditions.
        let rc = unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, len) };
        if rc != 0 {
            return Err(KernelError::Setup(format!(
                "allocating {bytes} bytes for {}: {}",
                file.display(),
                std::io::Error::last_os_error()
            )));
        }
        drop(f);
        let dev = run(Command::new("losetup").args(["--find", "--show"]).arg(&file))?;
        if !dev.starts_with("/dev/loop") {
            return Err(KernelError::Setup(format!("losetup answered {dev:?}")));
        }
        s.device = Some(PathBuf::from(&dev));
        run(Command::new("mkswap").arg(&dev))?;
        run(Command::new("swapon").args(["-p", &priority.to_string(), &dev]))?;
        s.on = true;
        Ok(s)
    }

    /// `/dev/loopN`.
    pub fn device(&self) -> &Path {
        self.device.as_deref().unwrap_or(Path::new(""))
    }

    /// The file behind it.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The loop device's I/O counters (`/sys/block/loopN/stat`).
    pub fn block_stat(&self) -> Result<BlockStat, KernelError> {
        let name = self.device().file_name().and_then(|n| n.to_str()).unwrap_or("");
        stat::block_stat_at(std::path::Path::new("/sys"), name)
    }
}

impl Drop for LoopSwap {
    fn drop(&mut self) {
        if let Some(dev) = &self.device {
            if self.on
                && let Err(e) = run(Command::new("swapoff").arg(dev))
            {
                eprintln!("zmem: swapoff of our swap area failed: {e}");
            }
            if let Err(e) = run(Command::new("losetup").arg("-d").arg(dev)) {
                eprintln!("zmem: detaching our loop device failed: {e}");
            }
        }
        if let Err(e) = std::fs::remove_file(&self.file) {
            eprintln!("zmem: removing our swap file {}: {e}", self.file.display());
        }
    }
}

/// Pages of `sectors` 512-byte sectors (a block device's stat counts sectors; a loop device may
/// merge a readahead's page reads into one I/O, so I/Os are not pages).
pub fn sectors_to_pages(sectors: u64, page_size: usize) -> u64 {
    sectors * 512 / page_size.max(512) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(f: &str, p: i32) -> SwapArea {
        SwapArea {
            filename: f.into(),
            kind: "partition".into(),
            size_bytes: 1024,
            used_bytes: 0,
            priority: p,
        }
    }

    #[test]
    fn the_refusal_names_every_foreign_area_in_one_line() {
        assert_eq!(refusal(&[]), None);
        let r = refusal(&[area("/dev/zram0", 100), area("/swapfile", -2)]).unwrap();
        assert!(r.contains("/dev/zram0 (priority 100)") && r.contains("/swapfile (priority -2)"));
        assert!(!r.contains('\n'));
        assert_eq!(sectors_to_pages(80, 4096), 10);
    }
}
