//! A fresh kernel zram device used as swap: hot-added, configured, given a swap header, swapped
//! on with a priority; swapped off, reset and hot-removed when dropped.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::zram_device::KernelZram;
use zmem_zram::MmStat;

use super::setup;
use crate::KernelError;

/// include/linux/swap.h: use the priority in the low 15 bits.
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;

/// How to set up a [`ZramSwapDevice`].
#[derive(Debug, Clone)]
pub struct ZramSwapConfig {
    /// `comp_algorithm` (`lzo-rle`, `lz4`, ...).
    pub algorithm: String,
    /// `disksize` in bytes (rounded down to whole pages by the kernel).
    pub disksize: u64,
    /// Swap priority, 0 ..= 32767 (higher is used first).
    pub priority: i32,
    /// `mem_limit` in bytes, if any.
    pub mem_limit: Option<u64>,
}

impl Default for ZramSwapConfig {
    fn default() -> Self {
        Self { algorithm: "lzo-rle".into(), disksize: 256 << 20, priority: 32000, mem_limit: None }
    }
}

/// A zram device this process hot-added and swapped on. Dropping it swaps it off (the kernel
/// reads every page back into memory first), resets it and hot-removes it.
#[derive(Debug)]
pub struct ZramSwapDevice {
    // Dropped after `Drop::drop` has swapped off: resets and hot-removes the device.
    dev: KernelZram,
    path: PathBuf,
    id: u32,
    priority: i32,
    swapped_on: bool,
}

impl ZramSwapDevice {
    /// Hot-adds a device, sets its algorithm, limit and size, writes a swap header to page 0
    /// and swaps it on.
    pub fn create(cfg: &ZramSwapConfig) -> Result<Self, KernelError> {
        if !(0..=SWAP_FLAG_PRIO_MASK).contains(&cfg.priority) {
            return Err(KernelError::Setup(format!(
                "swap priority {} is outside 0..=32767",
                cfg.priority
            )));
        }
        let dev = KernelZram::hot_add().map_err(|e| setup("zram hot_add", e))?;
        let path = dev.dev();
        let id = path
            .to_str()
            .and_then(|p| p.strip_prefix("/dev/zram"))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| KernelError::Setup(format!("unexpected device {}", path.display())))?;
        let mut me = Self { dev, path, id, priority: cfg.priority, swapped_on: false };
        let name = format!("zram{id}");
        me.dev
            .store("comp_algorithm", &cfg.algorithm)
            .map_err(|e| setup(format!("{name}: comp_algorithm {}", cfg.algorithm), e))?;
        if let Some(limit) = cfg.mem_limit {
            me.dev
                .store("mem_limit", &limit.to_string())
                .map_err(|e| setup(format!("{name}: mem_limit"), e))?;
        }
        me.dev
            .store("disksize", &cfg.disksize.to_string())
            .map_err(|e| setup(format!("{name}: disksize {}", cfg.disksize), e))?;
        let disksize: u64 = me
            .dev
            .show("disksize")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| KernelError::Setup(format!("{name}: unreadable disksize")))?;
        me.write_swap_header(disksize)?;
        me.swapon()?;
        Ok(me)
    }

    /// Writes the swap header to page 0 with O_DIRECT (nothing left in the page cache).
    fn write_swap_header(&self, disksize: u64) -> Result<(), KernelError> {
        let page_size = crate::capture::system_page_size();
        let pages = disksize / page_size as u64;
        if pages < 10 {
            return Err(KernelError::Setup(format!(
                "{}: {disksize} bytes is too small for swap",
                self.path.display()
            )));
        }
        let header = swap_header(page_size, pages, &uuid(), b"zmem");
        let mut backing = vec![0u8; 2 * page_size];
        let skip = backing.as_ptr().align_offset(page_size);
        let buf = &mut backing[skip..skip + page_size];
        buf.copy_from_slice(&header);
        let file = std::fs::File::options()
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_SYNC)
            .open(&self.path)
            .map_err(|e| setup(self.path.display(), e))?;
        file.write_all_at(buf, 0)
            .map_err(|e| setup(format!("{}: swap header", self.path.display()), e))
    }

    fn swapon(&mut self) -> Result<(), KernelError> {
        let c = CString::new(self.path.as_os_str().as_bytes()).expect("a device path has no NUL");
        let flags = SWAP_FLAG_PREFER | (self.priority & SWAP_FLAG_PRIO_MASK);
        // SAFETY: `c` is a NUL-terminated path that outlives the call; swapon reads it only.
        let rc = unsafe { libc::swapon(c.as_ptr(), flags) };
        if rc != 0 {
            return Err(setup(
                format!("swapon {}", self.path.display()),
                std::io::Error::last_os_error(),
            ));
        }
        self.swapped_on = true;
        Ok(())
    }

    /// N of `/dev/zramN`.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `/dev/zramN`, as /proc/swaps shows it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its swap priority.
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// The kernel device, to read its attributes.
    pub fn kernel(&self) -> &KernelZram {
        &self.dev
    }

    /// `mm_stat`, parsed.
    pub fn mm_stat(&self) -> Result<MmStat, KernelError> {
        self.dev.mm_stat()
    }
}

impl Drop for ZramSwapDevice {
    fn drop(&mut self) {
        if self.swapped_on {
            let c =
                CString::new(self.path.as_os_str().as_bytes()).expect("a device path has no NUL");
            // SAFETY: `c` is a NUL-terminated path that outlives the call.
            if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
                eprintln!(
                    "zmem: swapoff {} failed: {} (left swapped on)",
                    self.path.display(),
                    std::io::Error::last_os_error()
                );
            }
        }
        // Then `dev` drops: reset and hot_remove.
    }
}

/// A swap header page (include/linux/swap.h `union swap_header`): `bootbits` (1024 zero bytes),
/// `version` 1, `last_page` = `pages - 1`, `nr_badpages` 0, the UUID and label, and the magic
/// `SWAPSPACE2` in the last 10 bytes. Integers in the machine's byte order, as the kernel reads
/// them.
pub fn swap_header(page_size: usize, pages: u64, uuid: &[u8; 16], label: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; page_size];
    h[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    let last = u32::try_from(pages - 1).unwrap_or(u32::MAX);
    h[1028..1032].copy_from_slice(&last.to_ne_bytes());
    h[1036..1052].copy_from_slice(uuid);
    let n = label.len().min(16);
    h[1052..1052 + n].copy_from_slice(&label[..n]);
    h[page_size - 10..].copy_from_slice(b"SWAPSPACE2");
    h
}

/// A random (version 4) UUID from the kernel's.
fn uuid() -> [u8; 16] {
    let mut out = [0u8; 16];
    if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/random/uuid") {
        let hex: Vec<u8> = s.trim().bytes().filter(|b| b.is_ascii_hexdigit()).collect();
        for (i, pair) in hex.chunks_exact(2).take(16).enumerate() {
            let s = std::str::from_utf8(pair).unwrap_or("00");
            out[i] = u8::from_str_radix(s, 16).unwrap_or(0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_header_layout() {
        let h = swap_header(4096, 65536, &[7; 16], b"zmem");
        assert_eq!(h.len(), 4096);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert!(h[..1024].iter().all(|&b| b == 0));
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(h[1028..1032].try_into().unwrap()), 65535);
        assert_eq!(u32::from_ne_bytes(h[1032..1036].try_into().unwrap()), 0);
        assert_eq!(&h[1036..1052], &[7; 16]);
        assert_eq!(&h[1052..1056], b"zmem");
        assert!(h[1056..4086].iter().all(|&b| b == 0));
    }

    /// Our header is the one `mkswap` writes (where mkswap is installed; it works on a file).
    #[test]
    #[ignore = "live: needs mkswap (scripts/test runs it)"]
    fn swap_header_matches_mkswap() {
        let live = zmem_testkit::may_skip();
        if std::process::Command::new("mkswap").arg("--version").output().is_err() {
            return live.skip("mkswap is not installed");
        }
        let dir = std::env::temp_dir().join(super::super::unique_name("zmem-mkswap"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("swap");
        std::fs::write(&file, vec![0u8; 64 * 4096]).unwrap();
        let out = std::process::Command::new("mkswap")
            .args(["-U", "01020304-0506-0708-090a-0b0c0d0e0f10", "-L", "zmem"])
            .arg(&file)
            .output()
            .unwrap();
        let page0 = std::fs::read(&file).unwrap()[..4096].to_vec();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let uuid: [u8; 16] = std::array::from_fn(|i| i as u8 + 1);
        assert_eq!(page0, swap_header(4096, 64, &uuid, b"zmem"));
    }
}
