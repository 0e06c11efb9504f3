//! zram configurations compared end to end: a primary algorithm, optional secondaries and the
//! `recompress` calls a policy makes (seed 004's multi-compression, docs/REFERENCES.md
//! [seed-004]), measured on the same pages.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cputime::{Elapsed, Stopwatch};
use crate::latency::{LatencyHist, LatencyRecorder};
use crate::zram_run::{OnRefusal, ZramRunConfig, build_device, write_pages};
use crate::{LabError, Progress};

/// A zram configuration and what it does after the pages are written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Policy {
    /// Short name for tables.
    pub name: String,
    pub algo: String,
    /// Secondary algorithms, priority 1.. in order.
    pub recomp: Vec<String>,
    /// Mark every slot idle (`idle=all`) before recompressing, as a policy that recompresses
    /// what has not been touched for a while would after that while.
    pub mark_idle: bool,
    /// Text written to `recompress` (`type=huge`, `type=idle`, ...), if any.
    pub recompress: Option<String>,
}

impl Policy {
    fn single(algo: &str) -> Self {
        Self {
            name: algo.into(),
            algo: algo.into(),
            recomp: Vec::new(),
            mark_idle: false,
            recompress: None,
        }
    }

    fn recompressing(name: &str, algo: &str, secondary: &str, mark_idle: bool, args: &str) -> Self {
        Self {
            name: name.into(),
            algo: algo.into(),
            recomp: vec![secondary.into()],
            mark_idle,
            recompress: Some(args.into()),
        }
    }

    /// The configuration as zram attribute writes, for the report.
    pub fn as_attributes(&self) -> Vec<String> {
        let mut v = vec![format!("echo {} > comp_algorithm", self.algo)];
        for (i, a) in self.recomp.iter().enumerate() {
            v.push(format!("echo 'algo={a} priority={}' > recomp_algorithm", i + 1));
        }
        if self.mark_idle {
            v.push("echo all > idle   # (after the pages have aged)".into());
        }
        if let Some(r) = &self.recompress {
            v.push(format!("echo '{r}' > recompress"));
        }
        v
    }
}

/// The policies `zmem lab` compares by default.
pub fn default_policies() -> Vec<Policy> {
    vec![
        Policy::single("lzo-rle"),
        Policy::single("lz4"),
        Policy::single("zstd"),
        Policy::recompressing("lzo-rle + zstd(huge)", "lzo-rle", "zstd", false, "type=huge"),
        Policy::recompressing("lzo-rle + zstd(idle)", "lzo-rle", "zstd", true, "type=idle"),
        Policy::recompressing("lz4m + lz4(idle)", "lz4m", "lz4", true, "type=idle"),
    ]
}

/// What a policy cost and saved on the page set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PolicyRow {
    pub policy: Policy,
    pub pages: u64,
    pub orig_bytes: u64,
    /// mm_stat compr_data_size after the policy ran.
    pub compressed_bytes: u64,
    /// mm_stat mem_used_total after the policy ran (what the pages cost in RAM).
    pub pool_bytes: u64,
    /// orig_bytes / pool_bytes.
    pub effective_ratio: f64,
    /// orig_bytes - pool_bytes.
    pub memory_saved_bytes: i64,
    /// Pool bytes before recompression (equal to pool_bytes without it).
    pub pool_bytes_before_recompress: u64,
    /// Wall seconds of one thread writing every page.
    pub write_seconds: f64,
    /// Wall seconds of the recompress (and compact) calls.
    pub recompress_seconds: f64,
    /// CPU seconds (thread user + system time, not the wall clock) per GB of pages stored:
    /// (write + recompress) / GB.
    pub cpu_seconds_per_gb: f64,
    /// One read of every page, timed.
    pub load_latency: LatencyHist,
    pub verified: bool,
}

/// Runs one policy on a fresh device.
pub fn measure(
    p: &Policy,
    pages: &[u8],
    ps: usize,
    progress: &dyn Progress,
) -> Result<PolicyRow, LabError> {
    let n = pages.len() / ps;
    let cfg = ZramRunConfig {
        algo: p.algo.clone(),
        page_size: ps,
        recomp: p.recomp.clone(),
        ..ZramRunConfig::default()
    };
    let z = build_device(&cfg, n as u64)?;
    progress.start(&p.name, 2 * n as u64);
    let write = Stopwatch::start();
    write_pages(&z, pages, ps, 0, OnRefusal::Fail, &p.name, progress)?;
    let write = write.elapsed();
    let before = z.mm_stat().mem_used_total;
    let post = Stopwatch::start();
    if p.mark_idle {
        z.store("idle", "all")?;
    }
    if let Some(args) = &p.recompress {
        z.store("recompress", args)?;
        // Recompression frees objects all over the zspages; a policy that recompresses also
        // compacts (as the kernel's zsmalloc shrinker would), or it pays in fragmentation.
        z.store("compact", "1")?;
    }
    let post = if p.recompress.is_some() { post.elapsed() } else { Elapsed::default() };
    let stat = z.mm_stat();
    let mut rec = LatencyRecorder::new();
    let mut buf = vec![0u8; ps];
    let mut verified = true;
    for (i, page) in pages.chunks_exact(ps).enumerate() {
        let t = Instant::now();
        let ok = z.read_page(i as u64, &mut buf).is_ok();
        rec.record(t.elapsed().as_nanos() as u64);
        verified &= ok && buf == page;
        if i % 256 == 255 {
            progress.advance(256);
        }
    }
    progress.finish();
    let orig = pages.len() as u64;
    let gb = orig as f64 / 1e9;
    Ok(PolicyRow {
        policy: p.clone(),
        pages: n as u64,
        orig_bytes: orig,
        compressed_bytes: stat.compr_data_size,
        pool_bytes: stat.mem_used_total,
        effective_ratio: orig as f64 / stat.mem_used_total.max(1) as f64,
        memory_saved_bytes: orig as i64 - stat.mem_used_total as i64,
        pool_bytes_before_recompress: before,
        write_seconds: write.wall_secs,
        recompress_seconds: post.wall_secs,
        cpu_seconds_per_gb: (write.cpu_secs + post.cpu_secs) / gb,
        load_latency: rec.finish(),
        verified,
    })
}
