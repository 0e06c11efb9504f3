//! The live kernel's zram as an oracle: a fresh device hot-added through
//! `/sys/class/zram-control`, fed through its block device, read through its sysfs files, and
//! removed when dropped. Never touches devices it did not create.
//!
//! Writes go through `dd ... oflag=direct` in 1 MiB blocks, exactly as the project's reference
//! scripts (`kernel-zram-mmstat`, docs/REFERENCES.md [live-zram-oracle]) do, so results compare
//! with theirs.

use std::path::{Path, PathBuf};
use std::process::Command;

use zmem_zram::MmStat;

use crate::KernelError;

const CONTROL: &str = "/sys/class/zram-control";

/// Why the kernel oracle cannot be used here, or `None` when it can.
pub fn unavailable_reason() -> Option<String> {
    if !Path::new(CONTROL).exists() {
        return Some(format!("{CONTROL} is missing (no zram in this kernel)"));
    }
    // hot_add is mode 0400: only root may create devices.
    if std::fs::File::open(Path::new(CONTROL).join("hot_add")).is_err() {
        return Some(format!("cannot read {CONTROL}/hot_add (not root?)"));
    }
    if Command::new("dd").arg("--version").output().is_err() {
        return Some("dd is not installed".into());
    }
    None
}

/// A zram device this process created.
#[derive(Debug)]
pub struct KernelZram {
    id: u32,
    sysfs: PathBuf,
}

impl KernelZram {
    /// Creates a new device (reading `hot_add`).
    pub fn hot_add() -> Result<Self, KernelError> {
        let path = Path::new(CONTROL).join("hot_add");
        let id = crate::caps::parse_hot_add(&crate::error::read_text(&path)?)?;
        Ok(Self { id, sysfs: crate::stat::zram_sysfs(id) })
    }

    /// N of `/dev/zramN`.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The block device node.
    pub fn dev(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.id))
    }

    /// Writes an attribute, as `echo value > attr`. A refusal is [`KernelError::Io`] with the
    /// OS error number ([`KernelError::io_error`]), so callers can compare errnos.
    pub fn store(&self, attr: &str, value: &str) -> Result<(), KernelError> {
        let path = self.sysfs.join(attr);
        std::fs::write(&path, format!("{value}\n")).map_err(|e| KernelError::io(path, e))
    }

    /// Reads an attribute, as the kernel prints it (with its trailing newline).
    pub fn show(&self, attr: &str) -> Result<String, KernelError> {
        crate::error::read_text(&self.sysfs.join(attr))
    }

    /// `mm_stat`, parsed (by the crate's one reader, [`crate::stat::zram_mm_stat`]).
    pub fn mm_stat(&self) -> Result<MmStat, KernelError> {
        crate::stat::zram_mm_stat(self.id)
    }

    /// Sets the algorithm and a disk size that holds `bytes` (rounded up to MiB, plus one).
    pub fn init(&self, algo: &str, bytes: u64) -> Result<(), KernelError> {
        self.store("comp_algorithm", algo)?;
        self.store("disksize", &format!("{}M", bytes.div_ceil(1 << 20) + 1))
    }

    /// Writes a file to the device from offset 0 with direct I/O in 1 MiB blocks.
    pub fn write_file(&self, file: &Path) -> Result<(), KernelError> {
        self.dd(&[
            format!("if={}", file.display()),
            format!("of={}", self.dev().display()),
            "bs=1M".into(),
            "oflag=direct".into(),
        ])
    }

    /// Reads the first `mib` MiB of the device to /dev/null with direct I/O.
    pub fn read_to_null(&self, mib: usize) -> Result<(), KernelError> {
        self.dd(&[
            format!("if={}", self.dev().display()),
            "of=/dev/null".into(),
            "bs=1M".into(),
            "iflag=direct".into(),
            format!("count={mib}"),
        ])
    }

    /// Discards `len` bytes at `offset` (both page-aligned), as `blkdiscard` does.
    pub fn discard(&self, offset: u64, len: u64) -> Result<(), KernelError> {
        run(Command::new("blkdiscard")
            .args(["-o", &offset.to_string(), "-l", &len.to_string()])
            .arg(self.dev()))
    }

    fn dd(&self, args: &[String]) -> Result<(), KernelError> {
        run(Command::new("dd").args(args).arg("status=none"))
    }
}

/// Runs a tool on the device (`dd`, `blkdiscard`); its failure is a [`KernelError::Setup`]
/// with what it printed.
fn run(cmd: &mut Command) -> Result<(), KernelError> {
    let out = cmd.output().map_err(|e| KernelError::Setup(format!("{cmd:?}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(KernelError::Setup(format!(
            "{:?} failed: {}",
            cmd,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Drop for KernelZram {
    fn drop(&mut self) {
        // `reset` and `hot_remove` give EBUSY while anything still holds the disk open: right
        // after a `swapoff`, udev's probe of a new swap signature or a `dd` still closing can.
        // Retry for up to 2 s, so the device is gone when the guard is (a test that leaves a
        // device behind fails the next one's clean-up check).
        let remove = Path::new(CONTROL).join("hot_remove");
        for _ in 0..40 {
            let reset = self.store("reset", "1");
            let removed = std::fs::write(&remove, format!("{}\n", self.id));
            if removed.is_ok() || !self.sysfs.exists() {
                return;
            }
            if reset.is_err() || removed.is_err() {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        eprintln!("zmem: could not remove zram{} (still busy after 2 s)", self.id);
    }
}

/// Writes `pages` to a fresh device with `algo` and returns its `mm_stat`. `dd` reads them from
/// a 0600 file in a private temporary directory (zmem-files), removed on every way out.
pub fn mm_stat_of(algo: &str, pages: &[u8]) -> Result<MmStat, KernelError> {
    let dir = zmem_files::PrivateTempDir::new("zmem-oracle")?;
    let file = dir.write_file("pages", pages)?;
    let dev = KernelZram::hot_add()?;
    dev.init(algo, pages.len() as u64)?;
    dev.write_file(&file)?;
    dev.mm_stat()
}
