//! Reading chosen entries of /proc/PID/pagemap (the kernel's Documentation/admin-guide/mm/
//! pagemap.rst): one little-endian u64 per virtual page, bit 63 present, bit 62 swapped, bit 55
//! soft-dirty. The recorder's observers ([`super::soft_dirty`], [`super::page_out`]) read the
//! same captured pages every interval, so consecutive pages are read in one call.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::KernelError;

/// pagemap entry bit: the page is in RAM.
pub const PM_PRESENT: u64 = 1 << 63;

/// Most entries read in one call (4 KiB of entries).
const MAX_RUN: usize = 512;

/// The pagemap entries of `vaddrs` (page-aligned, ascending) of `pid` under `proc_root`, in the
/// same order.
pub fn entries(
    proc_root: &Path,
    pid: u32,
    vaddrs: &[u64],
    page_size: u64,
) -> Result<Vec<u64>, KernelError> {
    let path = proc_root.join(pid.to_string()).join("pagemap");
    let f = File::open(&path).map_err(|e| KernelError::io(&path, e))?;
    let mut out = Vec::with_capacity(vaddrs.len());
    let mut buf = Vec::new();
    let mut i = 0;
    while i < vaddrs.len() {
        // The run of consecutive pages starting at vaddrs[i].
        let mut n = 1;
        while i + n < vaddrs.len()
            && n < MAX_RUN
            && vaddrs[i + n] == vaddrs[i] + n as u64 * page_size
        {
            n += 1;
        }
        buf.resize(8 * n, 0);
        f.read_exact_at(&mut buf, vaddrs[i] / page_size * 8)
            .map_err(|e| KernelError::io(&path, e))?;
        out.extend(
            buf.chunks_exact(8)
                .map(|e| u64::from_le_bytes(e.try_into().expect("chunks_exact(8) gives 8 bytes"))),
        );
        i += n;
    }
    Ok(out)
}

/// `vaddrs` (ascending, page-aligned) as runs of consecutive pages: (start, pages).
pub fn runs(vaddrs: &[u64], page_size: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &a in vaddrs {
        match out.last_mut() {
            Some((start, n)) if *start + *n * page_size == a => *n += 1,
            _ => out.push((a, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_in_the_order_asked_across_runs_and_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let pid_dir = dir.path().join("42");
        std::fs::create_dir(&pid_dir).unwrap();
        // Entry of virtual page v: v * 3 + 1 (distinct, so any misplaced read shows).
        let map: Vec<u8> = (0..1100u64).flat_map(|v| (v * 3 + 1).to_le_bytes()).collect();
        std::fs::write(pid_dir.join("pagemap"), map).unwrap();
        let ps = 4096;
        // A run longer than one read (0..600), a gap, single pages.
        let vpns: Vec<u64> = (0..600).chain([700, 702, 703, 1099]).collect();
        let vaddrs: Vec<u64> = vpns.iter().map(|v| v * ps).collect();
        let got = entries(dir.path(), 42, &vaddrs, ps).unwrap();
        assert_eq!(got, vpns.iter().map(|v| v * 3 + 1).collect::<Vec<_>>());
        // Past the end of the file: an error naming it, not a panic.
        let err = entries(dir.path(), 42, &[5000 * ps], ps).unwrap_err();
        assert!(err.to_string().contains("pagemap"), "{err}");
    }

    #[test]
    fn runs_join_consecutive_pages_only() {
        let v = [0x1000, 0x2000, 0x3000, 0x5000, 0x6000, 0x9000];
        assert_eq!(runs(&v, 0x1000), [(0x1000, 3), (0x5000, 2), (0x9000, 1)]);
        assert!(runs(&[], 0x1000).is_empty());
    }
}
