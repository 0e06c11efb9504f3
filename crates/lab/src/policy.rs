//! zram configurations compared end to end: a primary algorithm, optional secondaries and the
//! `recompress` calls a policy makes (seed 004's multi-compression, docs/REFERENCES.md
//! [seed-004]), or a trained dictionary, measured on pages it was not trained on.
//!
//! The candidates ([`candidates`]): every primary algorithm of the kernel's list alone; the
//! current primary with each denser, slower secondary ([`SECONDARIES`]: zstd, deflate)
//! recompressing huge pages and idle pages; and zstd with a dictionary ([`crate::dict`]) trained
//! on one half of the pages and measured on the other ([`held_out`]: the pages at odd positions
//! train it, the pages at even positions are written to its device), so its gain is what a
//! dictionary trained on yesterday's pages gives on today's, not the upper bound a dictionary
//! measured on its own training pages would be. Its row is of the held-out half; the cost model
//! scales every row per page, so it compares with the others.
//!
//! Each measurement gives the thread CPU time per page (not wall time) of the writes (compress
//! and store), of the reads (load and decompress) and of the recompression, which the cost model
//! ([`super::cost`]) projects onto the user's device.
//!
//! Given the objects the compressor table already made ([`crate::objects`]), the device takes
//! them instead of compressing the same pages again (its primary's on the writes, its
//! secondaries' on the recompression; a dictionary's are never among them), and each
//! compression it skipped is charged what it cost in the table's pass: the write and
//! recompression costs are then the device's measured store, read-back and compaction plus those
//! charges, so they stand for the same work as when the device compressed. The reads always
//! decompress on the device: their latencies and CPU time are measured as they are.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::{LabError, Progress};
use zmem_experiments::dict;
use zmem_experiments::objects::{Charged, Objects};
use zmem_sim::cputime::{Elapsed, Stopwatch};
use zmem_sim::device::{OnRefusal, ZramRunConfig, build_device, write_pages_with};
use zmem_sim::latency::{LatencyHist, LatencyRecorder};

/// The kernel's primary algorithms, in its backend order.
pub const KERNEL_ALGORITHMS: [&str; 7] =
    ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"];

/// Secondary algorithms tried for recompression: denser and slower than the fast primaries.
pub const SECONDARIES: [&str; 2] = ["zstd", "deflate"];

/// Most pages the dictionary is trained on (sampled evenly).
const DICT_TRAIN_PAGES: usize = 2048;

/// Passes over the pages a policy's read latency takes each page's least time of ([`measure`]).
/// Reading costs a few microseconds a page, so three passes add little to a policy's time.
pub const READ_PASSES: usize = 3;

/// Every index below `n` once, far apart one after the other: `i × stride + pass` mod n with
/// the stride near n / φ (the golden ratio's spread) and coprime to `n`, so two reads in a row
/// land on zspages and output pages a good part of the set apart.
fn scattered(n: usize, pass: usize) -> impl Iterator<Item = usize> {
    let n64 = n.max(1) as u64;
    let mut stride = ((n64 as f64 * 0.618_034) as u64).max(1);
    while n64 > 1 && gcd(stride, n64) != 1 {
        stride += 1;
    }
    (0..n as u64).map(move |i| ((i * stride + pass as u64) % n64) as usize)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The pages a dictionary is trained on (those at odd positions) and the held-out pages its
/// device is measured on (those at even positions), whole pages of `ps`. Alternate pages, not
/// two halves, so both halves span the whole input (every process of a capture, every region
/// of a device).
pub fn held_out(pages: &[u8], ps: usize) -> (Vec<u8>, Vec<u8>) {
    let (mut train, mut measure) = (Vec::new(), Vec::new());
    for (i, page) in pages.chunks_exact(ps).enumerate() {
        if i % 2 == 1 { &mut train } else { &mut measure }.extend_from_slice(page);
    }
    (train, measure)
}

/// Whether a dictionary can be trained and measured on `pages`: its training half has
/// [`dict::MIN_TRAIN_PAGES`] pages that are not same-filled. `Err((have, need))` otherwise.
pub fn dict_trainable(pages: &[u8], ps: usize) -> Result<(), (u64, u64)> {
    let have = pages
        .chunks_exact(ps)
        .skip(1)
        .step_by(2)
        .filter(|p| zmem_zram::same_filled(p).is_none())
        .count();
    if have >= dict::MIN_TRAIN_PAGES {
        Ok(())
    } else {
        Err((have as u64, dict::MIN_TRAIN_PAGES as u64))
    }
}

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
    /// The primary uses a dictionary trained on the page set (`algorithm_params dict=`).
    #[serde(default)]
    pub dict: bool,
}

impl Policy {
    pub fn single(algo: &str) -> Self {
        Self {
            name: algo.into(),
            algo: algo.into(),
            recomp: Vec::new(),
            mark_idle: false,
            recompress: None,
            dict: false,
        }
    }

    fn with_dict(algo: &str) -> Self {
        Self { name: format!("{algo} + dict"), dict: true, ..Self::single(algo) }
    }

    fn recompressing(name: &str, algo: &str, secondary: &str, mark_idle: bool, args: &str) -> Self {
        Self {
            name: name.into(),
            algo: algo.into(),
            recomp: vec![secondary.into()],
            mark_idle,
            recompress: Some(args.into()),
            dict: false,
        }
    }

    /// One algorithm alone: no secondary, no recompression, no dictionary.
    pub fn is_plain(&self) -> bool {
        self.recomp.is_empty() && self.recompress.is_none() && !self.dict
    }

    /// Whether it recompresses in the background (needs a periodic `recompress`).
    pub fn recompresses(&self) -> bool {
        self.recompress.is_some()
    }
}

/// The candidates for a device whose primary is `primary` (see the module documentation):
/// `primary` first (the current configuration), then every other kernel algorithm, then
/// `primary` with each secondary on huge and on idle pages, then zstd with a dictionary.
pub fn candidates(primary: &str) -> Vec<Policy> {
    let mut v = vec![Policy::single(primary)];
    v.extend(KERNEL_ALGORITHMS.iter().filter(|a| **a != primary).map(|a| Policy::single(a)));
    for s in SECONDARIES.iter().filter(|s| **s != primary) {
        for (kind, idle) in [("huge", false), ("idle", true)] {
            let name = format!("{primary} + {s}({kind})");
            v.push(Policy::recompressing(&name, primary, s, idle, &format!("type={kind}")));
        }
    }
    v.push(Policy::with_dict("zstd"));
    v
}

/// The policies `zmem lab` compares by default: the candidates for the kernel's default
/// primary.
pub fn default_policies() -> Vec<Policy> {
    candidates(zmem_zram::DEFAULT_ALGORITHM)
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
    /// Wall seconds of one thread writing every page (a compression taken from the compressor
    /// table counts with its wall time there).
    pub write_seconds: f64,
    /// Wall seconds of the recompress (and compact) calls (likewise).
    pub recompress_seconds: f64,
    /// CPU seconds (thread user + system time, not the wall clock) per GB of pages stored:
    /// (write + recompress) / GB.
    pub cpu_seconds_per_gb: f64,
    /// One read of every page, timed.
    pub load_latency: LatencyHist,
    pub verified: bool,
    /// Thread CPU nanoseconds per page of the writes (compress and store). A compression the
    /// device took from the compressor table ([`crate::objects`]) counts with the CPU time it
    /// took there.
    #[serde(default)]
    pub compress_cpu_ns_per_page: f64,
    /// Thread CPU nanoseconds per page of the reads (load and decompress).
    #[serde(default)]
    pub decompress_cpu_ns_per_page: f64,
    /// Thread CPU nanoseconds per page stored of the idle marking, recompression and
    /// compaction (0 for a policy that does not recompress); a recompression taken from the
    /// compressor table counts as the write's do.
    #[serde(default)]
    pub recompress_cpu_ns_per_page: f64,
    /// Bytes of the trained dictionary (0 without one).
    #[serde(default)]
    pub dict_bytes: u64,
    /// The trained dictionary itself (for the apply script; not in the JSON).
    #[serde(skip)]
    pub dict: Option<Vec<u8>>,
}

/// Runs one policy on a fresh device, taking the compressed objects it needs from `objects`
/// where they are there (see the module documentation; none: every page is compressed). The
/// pages are read back into `back` (a caller measuring several policies on one thread keeps it
/// from one to the next, so its memory is faulted in once).
pub fn measure(
    p: &Policy,
    pages: &[u8],
    ps: usize,
    objects: &[&Objects],
    back: &mut Vec<u8>,
    progress: &dyn Progress,
) -> Result<PolicyRow, LabError> {
    // A dictionary is measured on the pages it was not trained on.
    let (train, held) = if p.dict { held_out(pages, ps) } else { (Vec::new(), Vec::new()) };
    let pages = if p.dict { held.as_slice() } else { pages };
    let n = pages.len() / ps;
    let mut cfg = ZramRunConfig {
        algo: p.algo.clone(),
        page_size: ps,
        recomp: p.recomp.clone(),
        ..ZramRunConfig::default()
    };
    // The device reads the dictionary from the file when the parameters are stored; the file
    // goes when `_file` does.
    let (trained, _file) = if p.dict {
        let d = dict::train(&train, ps, &p.algo, dict::DEFAULT_DICT_SIZE, DICT_TRAIN_PAGES)?;
        let file = dict::DictFile::write(&d)?;
        cfg.params = Some(format!("algo={} {}", p.algo, file.params_line(None)?));
        (Some(d), Some(file))
    } else {
        (None, None)
    };
    let z = build_device(&cfg, n as u64)?;
    let source = Charged::new(objects.to_vec());
    progress.start(&p.name, 2 * n as u64);
    let write = Stopwatch::start();
    write_pages_with(&z, pages, ps, 0, OnRefusal::Fail, &p.name, Some(&source), progress)?;
    let write = write.elapsed().plus(source.take());
    let before = z.mm_stat().mem_used_total;
    let post = Stopwatch::start();
    if p.mark_idle {
        z.store("idle", "all")?;
    }
    if let Some(args) = &p.recompress {
        z.recompress_with(args, &source)?;
        // Recompression frees objects all over the zspages; a policy that recompresses also
        // compacts (as the kernel's zsmalloc shrinker would), or it pays in fragmentation.
        z.store("compact", "1")?;
    }
    let post = if p.recompress.is_some() {
        post.elapsed().plus(source.take())
    } else {
        Elapsed::default()
    };
    let stat = z.mm_stat();
    // Every page is read into its place first and compared afterwards, so the CPU time of the
    // reads is that of loading and decompressing alone.
    // Touched before the clock starts: a fresh allocation's first write to each page faults,
    // and that is no cost of zram's.
    // Filled anew: a read that wrote nothing must not find the previous policy's pages there.
    back.clear();
    back.resize(pages.len(), 0xa5);
    let mut read_ok = true;
    let mut verified = true;
    // Each page's latency is the least of READ_PASSES reads, one per pass over every page (so
    // no read finds the one before it in the cache): a page's read time is its own, while a
    // preemption or an interrupt lands on one read of one pass; one read a page put the
    // scheduler's noise of a loaded machine into the p99, and the latency budget flipped
    // between two runs on the same pages. Each pass reads in a scattered order
    // ([`scattered`]): a swap-in reads an object written long before into a page of its own,
    // neither in the cache, where reads in page order found each zspage and output page the
    // one before had brought in, and the read p50 came out far under the kernel's.
    let mut least = vec![u64::MAX; n];
    let read = Stopwatch::start();
    for pass in 0..READ_PASSES {
        for (k, i) in scattered(n, pass).enumerate() {
            let out = &mut back[i * ps..(i + 1) * ps];
            let t = Instant::now();
            read_ok &= z.read_page(i as u64, out).is_ok();
            least[i] = least[i].min(t.elapsed().as_nanos() as u64);
            if pass == 0 && k % 256 == 255 {
                progress.advance(256);
            }
        }
        verified &= read_ok && back[..] == *pages;
        if pass + 1 < READ_PASSES {
            back.fill(0xa5);
        }
    }
    let read = read.elapsed();
    progress.finish();
    let mut rec = LatencyRecorder::new();
    for &ns in &least {
        rec.record(ns);
    }
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
        compress_cpu_ns_per_page: 1e9 * write.cpu_secs / n.max(1) as f64,
        decompress_cpu_ns_per_page: 1e9 * read.cpu_secs / (READ_PASSES * n).max(1) as f64,
        recompress_cpu_ns_per_page: 1e9 * post.cpu_secs / n.max(1) as f64,
        dict_bytes: trained.as_ref().map_or(0, |d| d.len() as u64),
        dict: trained,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    /// Each pass reads every page once, and no two reads in a row are near each other.
    #[test]
    fn a_pass_reads_every_page_once_far_from_the_last() {
        for n in [1usize, 2, 3, 100, 4096, 16384, 59169, 1_000_000] {
            for pass in 0..READ_PASSES {
                let order: Vec<usize> = scattered(n, pass).collect();
                let mut seen = order.clone();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n {n} pass {pass}");
                if n >= 100 {
                    let near = order.windows(2).filter(|w| w[0].abs_diff(w[1]) < n / 8).count();
                    assert_eq!(near, 0, "n {n}: {near} reads next to the one before");
                }
            }
        }
    }

    #[test]
    fn the_candidates_cover_the_kernel_list_recompression_and_a_dictionary() {
        let c = candidates("lzo-rle");
        let names: Vec<&str> = c.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names[..7], KERNEL_ALGORITHMS);
        for n in [
            "lzo-rle + zstd(huge)",
            "lzo-rle + zstd(idle)",
            "lzo-rle + deflate(huge)",
            "lzo-rle + deflate(idle)",
            "zstd + dict",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        // The current primary comes first, and is not its own secondary.
        let z = candidates("zstd");
        assert_eq!(z[0].name, "zstd");
        assert!(z.iter().all(|p| !p.recomp.contains(&"zstd".to_string())));
        assert_eq!(z.iter().filter(|p| p.name == "zstd").count(), 1);
    }

    /// A policy whose device takes the compressor table's objects ends as one that compressed
    /// every page: the same pools, compressed bytes and pages read back, with and without
    /// recompression; a dictionary's device never takes them.
    #[test]
    fn a_policy_on_kept_objects_is_the_policy_that_compressed() {
        use zmem_experiments::comp_bench::{self, AlgoSpec, Options, Scratch};
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..256 * 4096];
        let opts = Options { min_time: std::time::Duration::ZERO, ..Options::default() };
        let kept: Vec<zmem_experiments::objects::Objects> = ["lzo-rle", "lz4hc", "deflate", "zstd"]
            .iter()
            .map(|a| {
                let spec = AlgoSpec::parse(a).unwrap();
                comp_bench::algo_row_keeping(
                    &[pages],
                    &spec,
                    &opts,
                    &mut Scratch::default(),
                    &NoProgress,
                )
                .unwrap()
                .1
            })
            .collect();
        let objects: Vec<&zmem_experiments::objects::Objects> = kept.iter().collect();
        let untimed = |r: &PolicyRow| {
            (
                r.compressed_bytes,
                r.pool_bytes,
                r.pool_bytes_before_recompress,
                r.verified,
                r.dict_bytes,
            )
        };
        let c = candidates("lzo-rle");
        let mut back = Vec::new();
        assert_eq!(c[11], Policy::with_dict("zstd"));
        for p in [&c[0], &c[3], &c[8], &c[9], &c[10], &c[11]] {
            let with = measure(p, pages, 4096, &objects, &mut back, &NoProgress).unwrap();
            let without = measure(p, pages, 4096, &[], &mut Vec::new(), &NoProgress).unwrap();
            assert!(with.verified, "{}", p.name);
            assert_eq!(untimed(&with), untimed(&without), "{}", p.name);
        }
        // The objects are what the device stores: lz4hc's (the lz4 format, denser) given as
        // lz4's make a smaller pool than lz4's own, and still read back.
        let lz4 = Policy::single("lz4");
        let as_lz4 = kept[1].clone().labelled("lz4");
        let with = measure(&lz4, pages, 4096, &[&as_lz4], &mut back, &NoProgress).unwrap();
        let without = measure(&lz4, pages, 4096, &[], &mut back, &NoProgress).unwrap();
        assert!(with.verified && with.compressed_bytes < without.compressed_bytes);
    }

    #[test]
    fn a_measurement_gives_cpu_per_page_and_the_dictionary() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..256 * 4096];
        let idle = &candidates("lzo-rle")[8];
        assert_eq!(idle.name, "lzo-rle + zstd(idle)");
        let r = measure(idle, pages, 4096, &[], &mut Vec::new(), &NoProgress).unwrap();
        assert!(r.verified);
        assert!(r.compress_cpu_ns_per_page >= 0.0 && r.decompress_cpu_ns_per_page >= 0.0);
        assert!(r.pool_bytes <= r.pool_bytes_before_recompress);
        let d = measure(&Policy::with_dict("zstd"), pages, 4096, &[], &mut Vec::new(), &NoProgress)
            .unwrap();
        assert!(d.verified);
        assert!(d.dict_bytes > 0 && d.dict.as_ref().map(Vec::len) == Some(d.dict_bytes as usize));
        assert_eq!(d.recompress_cpu_ns_per_page, 0.0);
        // Measured on the held-out half only: the 128 pages at even positions.
        assert_eq!((d.pages, d.orig_bytes), (128, 128 * 4096));
    }

    /// The dictionary's training pages and its measured pages are disjoint and together the
    /// input: odd positions train, even positions are measured.
    #[test]
    fn a_dictionary_is_trained_on_one_half_and_measured_on_the_other() {
        let pages: Vec<u8> = (0..9u8).flat_map(|i| [i; 4096]).collect();
        let (train, measured) = held_out(&pages, 4096);
        let firsts = |b: &[u8]| b.chunks(4096).map(|p| p[0]).collect::<Vec<u8>>();
        assert_eq!(firsts(&train), [1, 3, 5, 7]);
        assert_eq!(firsts(&measured), [0, 2, 4, 6, 8]);
        // 9 same-filled pages: nothing to train on.
        assert_eq!(dict_trainable(&pages, 4096), Err((0, 16)));
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        assert_eq!(dict_trainable(&set.bytes()[..10 * 4096], 4096), Err((5, 16)));
        assert!(dict_trainable(&set.bytes()[..64 * 4096], 4096).is_ok());
    }
}
