//! `zmem conform`: the same pages through zmem's zram and a fresh kernel zram device, written in
//! order as `dd oflag=direct` writes them; the two `mm_stat` lines and the fields that differ.

use serde::Serialize;
use zmem_zram::MmStat;

use crate::LabError;
use zmem_sim::device::{OnRefusal, ZramRunConfig, build_device, write_pages};

#[derive(Debug, Clone, Serialize)]
pub struct ConformResult {
    pub algo: String,
    pub pages: u64,
    pub ours: String,
    pub kernel: String,
    /// (field, ours, kernel) for every field that differs.
    pub differing: Vec<(String, u64, u64)>,
}

impl ConformResult {
    pub fn identical(&self) -> bool {
        self.differing.is_empty()
    }
}

/// zmem's mm_stat for `pages` written in order to a fresh device.
pub fn ours(algo: &str, pages: &[u8]) -> Result<MmStat, LabError> {
    let cfg = ZramRunConfig { algo: algo.into(), ..ZramRunConfig::default() };
    let ps = cfg.page_size;
    let z = build_device(&cfg, pages.len().div_ceil(ps) as u64)?;
    write_pages(&z, pages, ps, 0, OnRefusal::Fail, algo, &crate::NoProgress)?;
    Ok(z.mm_stat())
}

/// Runs both and compares. Fails (with the reason) where the kernel oracle is unavailable.
pub fn run(algo: &str, pages: &[u8]) -> Result<ConformResult, LabError> {
    if let Some(why) = zmem_kernel::zram_device::unavailable_reason() {
        return Err(zmem_kernel::KernelError::Oracle(why).into());
    }
    let whole = &pages[..pages.len() / 4096 * 4096];
    if whole.is_empty() {
        return Err(LabError::NoPages);
    }
    let ours = ours(algo, whole)?;
    let kernel = zmem_kernel::zram_device::mm_stat_of(algo, whole).map_err(|e| {
        LabError::from(zmem_kernel::KernelError::Oracle(format!("kernel zram: {e}")))
    })?;
    Ok(ConformResult {
        algo: algo.into(),
        pages: (whole.len() / 4096) as u64,
        ours: ours.to_string().trim_end().into(),
        kernel: kernel.to_string().trim_end().into(),
        differing: ours.diff(&kernel).into_iter().map(|(f, a, b)| (f.to_string(), a, b)).collect(),
    })
}
