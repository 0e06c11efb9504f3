//! Soft-dirty bits (the kernel's Documentation/admin-guide/mm/soft-dirty.rst): which pages of a
//! process were written since the bits were last cleared. Writing `4` to /proc/PID/clear_refs
//! clears them (and write-protects the pages, so the next write faults and sets the bit again);
//! bit 55 of each /proc/PID/pagemap entry is the page's bit. The recorder's fallback where DAMON
//! cannot be used: it sees writes only, one per page per interval.
//!
//! Kernels built without `CONFIG_MEM_SOFT_DIRTY` accept the `4` and never set bit 55;
//! [`unavailable_reason`] finds that out on a page of our own before anything is recorded.

use std::path::Path;

use crate::KernelError;

/// pagemap entry bit: the page was written since soft-dirty bits were last cleared.
pub const PM_SOFT_DIRTY: u64 = 1 << 55;

/// Clears the soft-dirty bits of every page of `pid` (`4` to `proc_root/PID/clear_refs`).
pub fn clear(proc_root: &Path, pid: u32) -> Result<(), KernelError> {
    let path = proc_root.join(pid.to_string()).join("clear_refs");
    std::fs::write(&path, "4").map_err(|e| KernelError::io(path, e))
}

/// The pages among `vaddrs` (page-aligned, ascending) whose soft-dirty bit `pid`'s pagemap
/// shows set.
pub fn dirty_pages(
    proc_root: &Path,
    pid: u32,
    vaddrs: &[u64],
    page_size: u64,
) -> Result<Vec<u64>, KernelError> {
    let entries = super::pagemap::entries(proc_root, pid, vaddrs, page_size)?;
    Ok(vaddrs
        .iter()
        .zip(entries)
        .filter(|(_, e)| e & PM_SOFT_DIRTY != 0)
        .map(|(&a, _)| a)
        .collect())
}

/// Why soft-dirty bits cannot be used here, or `None` where they work: clears our own bits,
/// writes a page of our own and checks that its bit is set.
pub fn unavailable_reason() -> Option<String> {
    let ps = crate::capture::system_page_size();
    let mut page = vec![0u8; 2 * ps];
    let at = page.as_ptr().align_offset(ps);
    let vaddr = page[at..].as_ptr() as u64;
    let proc_root = Path::new("/proc");
    let me = std::process::id();
    if let Err(e) = clear(proc_root, me) {
        return Some(format!("cannot clear soft-dirty bits: {e}"));
    }
    // SAFETY: `at` is inside `page` (align_offset of a 2-page buffer to one page is below one
    // page), and a volatile write keeps the compiler from dropping the store the probe is about.
    unsafe { std::ptr::write_volatile(page.as_mut_ptr().add(at), 1) };
    match dirty_pages(proc_root, me, &[vaddr], ps as u64) {
        Ok(d) if d == [vaddr] => None,
        Ok(_) => Some(
            "the kernel does not track soft-dirty bits (built without CONFIG_MEM_SOFT_DIRTY: \
             pagemap bit 55 stays 0 after a write)"
                .into(),
        ),
        Err(e) => Some(format!("cannot read pagemap: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_pages_reads_bit_55_of_each_entry_in_runs() {
        let dir = tempfile::tempdir().unwrap();
        let pid_dir = dir.path().join("42");
        std::fs::create_dir(&pid_dir).unwrap();
        // Entries for virtual pages 0..1100: every third page dirty, all present.
        let mut map = Vec::new();
        for vpn in 0..1100u64 {
            let mut e = 1u64 << 63;
            if vpn % 3 == 0 {
                e |= PM_SOFT_DIRTY;
            }
            map.extend_from_slice(&e.to_le_bytes());
        }
        std::fs::write(pid_dir.join("pagemap"), map).unwrap();
        let ps = 4096;
        // A run longer than one read (0..600), a gap, and single pages.
        let vaddrs: Vec<u64> = (0..600).chain([700, 702, 1099]).map(|v| v * ps).collect();
        let got = dirty_pages(dir.path(), 42, &vaddrs, ps).unwrap();
        let want: Vec<u64> = vaddrs.iter().copied().filter(|v| (v / ps) % 3 == 0).collect();
        assert_eq!(got, want);
        // Past the end of the file: an error naming it, not a panic.
        let err = dirty_pages(dir.path(), 42, &[5000 * ps], ps).unwrap_err();
        assert!(err.to_string().contains("pagemap"), "{err}");
        clear(dir.path(), 42).unwrap();
        assert_eq!(std::fs::read_to_string(pid_dir.join("clear_refs")).unwrap(), "4");
    }
}
