//! `zmem zram-speed`: zmem's zram against the kernel's on the same pages and algorithm, one
//! thread each, in one run; and zmem's zram against its bare compressor. Ratios only: absolute
//! speeds on a shared machine mean little, ratios measured minutes apart mean more.

use std::time::Instant;

use serde::Serialize;

use crate::comp_bench::{self, AlgoSpec, Options};
use crate::zram_run::{self, ZramRunConfig};
use crate::{LabError, NoProgress};

#[derive(Debug, Clone, Serialize)]
pub struct ZramSpeed {
    pub algo: String,
    pub pages: u64,
    pub zmem_write_mbps: f64,
    pub zmem_read_mbps: f64,
    /// None where the kernel oracle is unavailable.
    pub kernel_write_mbps: Option<f64>,
    pub kernel_read_mbps: Option<f64>,
    pub compressor_mbps: f64,
    pub verified: bool,
}

impl ZramSpeed {
    pub fn write_ratio(&self) -> Option<f64> {
        self.kernel_write_mbps.map(|k| self.zmem_write_mbps / k)
    }
    pub fn read_ratio(&self) -> Option<f64> {
        self.kernel_read_mbps.map(|k| self.zmem_read_mbps / k)
    }
    /// zram write speed over the bare compressor's: the engine's overhead.
    pub fn engine_ratio(&self) -> f64 {
        self.zmem_write_mbps / self.compressor_mbps
    }
}

/// The kernel's write and read MB/s for `pages` (dd, 1 MiB blocks, direct I/O, as
/// shared/tools/kernel-zram-speed does).
fn kernel_speed(algo: &str, pages: &[u8]) -> Result<(f64, f64), LabError> {
    use zmem_zram::kernel::KernelZram;
    let oracle = |e: std::io::Error| LabError::Oracle(e.to_string());
    let dir = std::env::temp_dir().join(format!("zmem-speed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(oracle)?;
    let file = dir.join("pages");
    std::fs::write(&file, pages).map_err(oracle)?;
    let result = (|| {
        let dev = KernelZram::hot_add().map_err(oracle)?;
        dev.init(algo, pages.len() as u64).map_err(oracle)?;
        let t = Instant::now();
        dev.write_file(&file).map_err(oracle)?;
        let write = pages.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
        let mib = pages.len() / (1 << 20);
        let t = Instant::now();
        dev.read_to_null(mib).map_err(oracle)?;
        let read = (mib << 20) as f64 / t.elapsed().as_secs_f64() / 1e6;
        Ok((write, read))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

pub fn run(algo: &str, pages: &[u8]) -> Result<ZramSpeed, LabError> {
    let whole = &pages[..pages.len() / 4096 * 4096];
    if whole.len() < 1 << 20 {
        return Err(LabError::Zram("zram-speed needs at least 1 MiB of pages".into()));
    }
    let kernel = match zmem_zram::kernel::unavailable_reason() {
        None => Some(kernel_speed(algo, whole)?),
        Some(_) => None,
    };
    let cfg = ZramRunConfig { algo: algo.into(), ..ZramRunConfig::default() };
    let ours = zram_run::run(whole, &cfg, &NoProgress)?;
    let opts = Options { min_time: std::time::Duration::ZERO, max_passes: 1, ..Options::default() };
    let rows = comp_bench::run(&[whole], &[AlgoSpec::parse(algo)?], &opts, &NoProgress)?;
    Ok(ZramSpeed {
        algo: algo.into(),
        pages: ours.pages,
        zmem_write_mbps: ours.write_mbps,
        zmem_read_mbps: ours.read_mbps,
        kernel_write_mbps: kernel.map(|k| k.0),
        kernel_read_mbps: kernel.map(|k| k.1),
        compressor_mbps: rows[1].comp_mbps,
        verified: ours.verified && rows[1].verified,
    })
}

pub fn render(r: &ZramSpeed) -> String {
    let ratio =
        |x: Option<f64>| x.map_or("n/a (no kernel oracle)".to_string(), |v| format!("{v:.2}x"));
    format!(
        "{} pages, algo {}\n\
         zmem zram   write {:>7.0} MB/s  read {:>7.0} MB/s\n\
         kernel zram write {:>7} MB/s  read {:>7} MB/s\n\
         zmem/kernel write {}  read {}\n\
         compressor alone {:.0} MB/s; zram write / compressor = {:.2}\n\
         verified: {}\n",
        r.pages,
        r.algo,
        r.zmem_write_mbps,
        r.zmem_read_mbps,
        r.kernel_write_mbps.map_or("-".into(), |v| format!("{v:.0}")),
        r.kernel_read_mbps.map_or("-".into(), |v| format!("{v:.0}")),
        ratio(r.write_ratio()),
        ratio(r.read_ratio()),
        r.compressor_mbps,
        r.engine_ratio(),
        if r.verified { "yes" } else { "NO" }
    )
}
