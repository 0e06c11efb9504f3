//! comp-bench: every page through every compressor, one stream, one thread, as lzbench does for
//! files but page by page as zram does.
//!
//! Each input is cut into pages (a short last page is kept short). For each algorithm the pages
//! are compressed into per-page slots and then decompressed, batch by batch so memory stays
//! bounded; each pass over a batch is repeated until it has run for `min_time`, and the fastest
//! pass counts (the machine's noise only ever slows a pass down). Speeds are input bytes per
//! second in both directions, MB = 10^6 bytes, as lzbench reports them. Verification compares
//! the decompressed batch with the input after the timed pass, so it costs nothing in the timing.
//!
//! The memory-freeing speed is seed 004's metric (docs/REFERENCES.md [seed-004]): how fast
//! compression gives memory back, `comp_mbps * (1 - compressed/input)`.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zmem_comp::compress_bound;

use crate::objects::Objects;
use crate::{LabError, Progress};
use zmem_sim::cputime::thread_cpu_secs;

pub use zmem_comp::AlgoSpec;

/// How to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// Page size the inputs are cut into and the streams are built for.
    pub page_size: usize,
    /// Each pass over a batch repeats until this much time has been spent on it.
    pub min_time: Duration,
    /// At most this many passes per batch.
    pub max_passes: u32,
    /// Input bytes per batch (rounded down to whole pages).
    pub batch_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            page_size: 4096,
            min_time: Duration::from_millis(200),
            max_passes: 50,
            batch_bytes: 32 << 20,
        }
    }
}

/// One line of the table. The field names are the `--json` interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub algo: String,
    pub pages: u64,
    pub input_bytes: u64,
    /// The plain sum of the compressed lengths of all pages.
    pub compressed_bytes: u64,
    /// input_bytes / compressed_bytes.
    pub ratio: f64,
    pub comp_mbps: f64,
    pub decomp_mbps: f64,
    /// comp_mbps * (1 - compressed_bytes / input_bytes).
    pub freeing_mbps: f64,
    /// Every page decompressed back to exactly its original bytes.
    pub verified: bool,
}

impl Row {
    fn new(algo: String, acc: &Accumulated) -> Self {
        let mbps = |t: Duration| {
            if t.is_zero() { f64::INFINITY } else { acc.input_bytes as f64 / t.as_secs_f64() / 1e6 }
        };
        let comp_mbps = mbps(acc.comp_time);
        let kept = acc.compressed_bytes as f64 / acc.input_bytes as f64;
        Self {
            algo,
            pages: acc.pages,
            input_bytes: acc.input_bytes,
            compressed_bytes: acc.compressed_bytes,
            ratio: acc.input_bytes as f64 / acc.compressed_bytes as f64,
            comp_mbps,
            decomp_mbps: mbps(acc.decomp_time),
            freeing_mbps: comp_mbps * (1.0 - kept),
            verified: acc.verified,
        }
    }
}

#[derive(Debug)]
struct Accumulated {
    pages: u64,
    input_bytes: u64,
    compressed_bytes: u64,
    comp_time: Duration,
    decomp_time: Duration,
    verified: bool,
}

impl Default for Accumulated {
    fn default() -> Self {
        Self {
            pages: 0,
            input_bytes: 0,
            compressed_bytes: 0,
            comp_time: Duration::ZERO,
            decomp_time: Duration::ZERO,
            verified: true,
        }
    }
}

/// The buffers of one row's measurement: a batch's compressed objects, their lengths, and the
/// batch decompressed. A caller measuring several rows on one thread keeps them from row to row,
/// so only its first row faults fresh memory in; a fresh one (`default`) gives each row new
/// buffers, as `zmem comp-bench` does.
#[derive(Debug, Default)]
pub struct Scratch {
    out: Vec<u8>,
    slots: Vec<u8>,
    lens: Vec<usize>,
}

impl Scratch {
    /// The buffers for batches of `batch` bytes: new ones (zeroed, as `vec!` gives) where these
    /// are too small, else these with the decompression buffer zeroed, so a row finds there
    /// what a new buffer holds, not the previous row's pages.
    fn take(&mut self, batch: usize, ps: usize) -> (&mut [u8], &mut [u8], &mut [usize]) {
        let slots = batch / ps * compress_bound(ps);
        if self.out.len() < batch || self.slots.len() < slots || self.lens.len() < batch / ps {
            *self = Self {
                out: vec![0u8; batch],
                slots: vec![0u8; slots],
                lens: vec![0usize; batch / ps],
            };
        } else {
            self.out.fill(0);
        }
        (&mut self.out[..batch], &mut self.slots[..slots], &mut self.lens[..batch / ps])
    }
}

/// Runs the benchmark: a `memcpy` row first (the ceiling), then one row per spec.
pub fn run(
    inputs: &[&[u8]],
    specs: &[AlgoSpec],
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Vec<Row>, LabError> {
    total_pages(inputs, opts.page_size)?;
    // Build every stream first so a bad name or parameter fails before any measuring.
    let mut streams = specs
        .iter()
        .map(|s| Ok((s.label(), zmem_comp::create(&s.name, &s.params, opts.page_size)?)))
        .collect::<Result<Vec<_>, LabError>>()?;
    let mut rows = Vec::with_capacity(specs.len() + 1);
    rows.push(memcpy_row(inputs, opts, progress)?);
    for (label, stream) in &mut streams {
        let scratch = &mut Scratch::default();
        rows.push(measure(
            inputs,
            label,
            stream.as_mut(),
            opts,
            Keep::default(),
            scratch,
            progress,
        )?);
    }
    Ok(rows)
}

/// The `memcpy` row alone (the ceiling every algorithm is compared with).
pub fn memcpy_row(
    inputs: &[&[u8]],
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Row, LabError> {
    let total_pages = total_pages(inputs, opts.page_size)?;
    let batch = batch_len(opts);
    let mut out = vec![0u8; batch];
    progress.start("memcpy", total_pages);
    let acc = memcpy(inputs, batch, &mut out, opts, progress);
    progress.finish();
    Ok(Row::new("memcpy".into(), &acc))
}

/// One algorithm's row alone, on a stream of its own: rows of different algorithms may be
/// measured on different threads at once (each with its own `scratch`).
pub fn algo_row(
    inputs: &[&[u8]],
    spec: &AlgoSpec,
    opts: &Options,
    scratch: &mut Scratch,
    progress: &dyn Progress,
) -> Result<Row, LabError> {
    let mut stream = zmem_comp::create(&spec.name, &spec.params, opts.page_size)?;
    measure(inputs, &spec.label(), stream.as_mut(), opts, Keep::default(), scratch, progress)
}

/// [`algo_row`], also giving every page's compressed length in input order: what a stream
/// made of each page, the same in every pass (the lab's page facts, which carry no bytes).
pub fn algo_row_lengths(
    inputs: &[&[u8]],
    spec: &AlgoSpec,
    opts: &Options,
    scratch: &mut Scratch,
    progress: &dyn Progress,
) -> Result<(Row, Vec<u32>), LabError> {
    let mut stream = zmem_comp::create(&spec.name, &spec.params, opts.page_size)?;
    let mut lengths = Vec::new();
    let keep = Keep { objects: None, lengths: Some(&mut lengths) };
    let row = measure(inputs, &spec.label(), stream.as_mut(), opts, keep, scratch, progress)?;
    Ok((row, lengths))
}

/// [`algo_row`], also keeping every page's object and what compressing it cost
/// ([`Objects`]), for experiments that then need the same pages compressed the same way.
///
/// The compression pass then reads the clock around each page (two reads of the vDSO clock per
/// page, well under 1 % of the fastest codec's time per page), so the row's compression speed
/// includes that; everything else is [`algo_row`]'s. Where a batch takes several passes (a
/// small input), the objects are the same in each, and each page's cost is the fastest pass's.
pub fn algo_row_keeping(
    inputs: &[&[u8]],
    spec: &AlgoSpec,
    opts: &Options,
    scratch: &mut Scratch,
    progress: &dyn Progress,
) -> Result<(Row, Objects), LabError> {
    let mut stream = zmem_comp::create(&spec.name, &spec.params, opts.page_size)?;
    let mut objects = Objects::new(&spec.name, &spec.params);
    let keep = Keep { objects: Some(&mut objects), lengths: None };
    let row = measure(inputs, &spec.label(), stream.as_mut(), opts, keep, scratch, progress)?;
    Ok((row, objects))
}

fn total_pages(inputs: &[&[u8]], ps: usize) -> Result<u64, LabError> {
    let total: u64 = inputs.iter().map(|i| i.len().div_ceil(ps) as u64).sum();
    if total == 0 { Err(LabError::NoPages) } else { Ok(total) }
}

fn batch_len(opts: &Options) -> usize {
    (opts.batch_bytes / opts.page_size).max(1) * opts.page_size
}

/// What a row keeps of its compression pass besides its figures.
#[derive(Default)]
struct Keep<'a> {
    /// Every page's object and its cost.
    objects: Option<&'a mut Objects>,
    /// Every page's compressed length.
    lengths: Option<&'a mut Vec<u32>>,
}

/// Every page through `stream`, compressed and then decompressed batch by batch.
fn measure(
    inputs: &[&[u8]],
    label: &str,
    stream: &mut dyn zmem_comp::Compressor,
    opts: &Options,
    keep_also: Keep<'_>,
    scratch: &mut Scratch,
    progress: &dyn Progress,
) -> Result<Row, LabError> {
    let ps = opts.page_size;
    let Keep { objects: mut keep, lengths: mut keep_lengths } = keep_also;
    let total_pages = total_pages(inputs, ps)?;
    let batch = batch_len(opts);
    let bound = compress_bound(ps);
    let (out, slots, lens) = scratch.take(batch, ps);
    // Kept objects only: each page's compression time in this pass, and in the fastest pass.
    let per_page = if keep.is_some() { batch / ps } else { 0 };
    let (mut pass_ns, mut kept_ns) = (vec![0u64; per_page], vec![0u64; per_page]);
    progress.start(label, total_pages);
    let mut acc = Accumulated::default();
    for chunk in inputs.iter().flat_map(|input| input.chunks(batch)) {
        let pages = || chunk.chunks(ps).enumerate();
        let first_page = acc.pages;
        let failed = |i: usize, err| LabError::Page {
            algo: label.to_string(),
            page: first_page + i as u64,
            err,
        };
        let (mut kept_sum, mut kept_cpu) = (u64::MAX, None);
        acc.comp_time += best_pass(opts, || {
            if keep.is_none() {
                for (i, page) in pages() {
                    let slot = &mut slots[i * bound..(i + 1) * bound];
                    lens[i] = stream.compress(page, slot).map_err(|e| failed(i, e))?;
                }
                return Ok(());
            }
            let cpu0 = thread_cpu_secs();
            for (i, page) in pages() {
                let slot = &mut slots[i * bound..(i + 1) * bound];
                let t = Instant::now();
                lens[i] = stream.compress(page, slot).map_err(|e| failed(i, e))?;
                pass_ns[i] = t.elapsed().as_nanos() as u64;
            }
            let cpu = cpu0.zip(thread_cpu_secs()).map(|(a, b)| (b - a).max(0.0));
            let n = chunk.len().div_ceil(ps);
            let sum = pass_ns[..n].iter().sum();
            if sum < kept_sum {
                kept_sum = sum;
                kept_cpu = cpu;
                kept_ns[..n].copy_from_slice(&pass_ns[..n]);
            }
            Ok(())
        })?;
        if let Some(objects) = keep.as_deref_mut() {
            let n = chunk.len().div_ceil(ps);
            let made = (0..n).map(|i| &slots[i * bound..i * bound + lens[i]]);
            objects.push_pass(made, &kept_ns[..n], kept_cpu);
        }
        let mut all_ok = true;
        acc.decomp_time += best_pass(opts, || {
            all_ok = true;
            for (i, page) in pages() {
                let src = &slots[i * bound..i * bound + lens[i]];
                let dst = &mut out[i * ps..i * ps + page.len()];
                all_ok &= matches!(stream.decompress(src, dst), Ok(n) if n == page.len());
            }
            Ok(())
        })?;
        acc.verified &= all_ok && out[..chunk.len()] == *chunk;
        let n = chunk.len().div_ceil(ps);
        if let Some(out) = keep_lengths.as_deref_mut() {
            out.extend(lens[..n].iter().map(|&l| l as u32));
        }
        acc.pages += n as u64;
        acc.input_bytes += chunk.len() as u64;
        acc.compressed_bytes += lens[..n].iter().map(|&l| l as u64).sum::<u64>();
        progress.advance(n as u64);
    }
    progress.finish();
    Ok(Row::new(label.to_string(), &acc))
}

/// The ceiling: copying the pages costs what compressing them never can beat.
fn memcpy(
    inputs: &[&[u8]],
    batch: usize,
    out: &mut [u8],
    opts: &Options,
    progress: &dyn Progress,
) -> Accumulated {
    let mut acc = Accumulated::default();
    for chunk in inputs.iter().flat_map(|input| input.chunks(batch)) {
        let dst = &mut out[..chunk.len()];
        let time = best_pass(opts, || {
            dst.copy_from_slice(std::hint::black_box(chunk));
            std::hint::black_box(&mut *dst);
            Ok(())
        });
        // A copy cannot fail; `best_pass` only returns errors its closure gives it.
        acc.comp_time += time.unwrap_or(Duration::ZERO);
        acc.verified &= dst == chunk;
        let n = chunk.len().div_ceil(opts.page_size) as u64;
        acc.pages += n;
        acc.input_bytes += chunk.len() as u64;
        progress.advance(n);
    }
    acc.compressed_bytes = acc.input_bytes;
    acc.decomp_time = acc.comp_time;
    acc
}

/// Repeats `pass` until `opts.min_time` has been spent (at least once, at most `max_passes`
/// times) and returns the fastest pass.
fn best_pass(
    opts: &Options,
    mut pass: impl FnMut() -> Result<(), LabError>,
) -> Result<Duration, LabError> {
    let mut best = Duration::MAX;
    let mut spent = Duration::ZERO;
    for _ in 0..opts.max_passes.max(1) {
        let start = Instant::now();
        pass()?;
        let took = start.elapsed();
        best = best.min(took);
        spent += took;
        if spent >= opts.min_time {
            break;
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    fn quick() -> Options {
        Options {
            min_time: Duration::ZERO,
            max_passes: 1,
            batch_bytes: 3 * 4096,
            ..Options::default()
        }
    }

    /// Pages with a known compressibility: half zeros, half a repeating text.
    fn pages(n: usize) -> Vec<u8> {
        let text = b"the quick brown fox jumps over the lazy dog ";
        (0..n * 4096).map(|i| if (i / 4096) % 2 == 0 { 0 } else { text[i % text.len()] }).collect()
    }

    #[test]
    fn rows_add_up_across_batches_and_inputs() {
        let a = pages(7);
        let b = pages(2);
        let specs = vec![AlgoSpec::parse("zstd").unwrap(), AlgoSpec::parse("deflate:1").unwrap()];
        let rows = run(&[&a, &b[..4096 + 100]], &specs, &quick(), &NoProgress).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.algo.as_str()).collect::<Vec<_>>(),
            ["memcpy", "zstd", "deflate:1"]
        );
        for r in &rows {
            assert_eq!(r.pages, 9, "{}", r.algo);
            assert_eq!(r.input_bytes, 7 * 4096 + 4096 + 100, "{}", r.algo);
            assert!(r.verified, "{}", r.algo);
        }
        // The compressed total is the plain sum of each page compressed alone.
        let mut z = zmem_comp::create("zstd", &zmem_comp::Params::default(), 4096).unwrap();
        let mut dst = vec![0u8; compress_bound(4096)];
        let expect: usize = a
            .chunks(4096)
            .chain(b[..4196].chunks(4096))
            .map(|p| z.compress(p, &mut dst).unwrap())
            .sum();
        assert_eq!(rows[1].compressed_bytes, expect as u64);
        assert_eq!(rows[0].compressed_bytes, rows[0].input_bytes);
        let r = &rows[1];
        assert!((r.ratio - r.input_bytes as f64 / r.compressed_bytes as f64).abs() < 1e-9);
        let freeing = r.comp_mbps * (1.0 - 1.0 / r.ratio);
        assert!((r.freeing_mbps - freeing).abs() <= 1e-6 * freeing.max(1.0));
    }

    #[test]
    fn specs_parse_and_reject() {
        assert_eq!(AlgoSpec::parse("zstd:-5").unwrap().params.level, Some(-5));
        assert_eq!(AlgoSpec::parse("zstd:7").unwrap().label(), "zstd:7");
        assert!(matches!(
            AlgoSpec::parse("zstd:x"),
            Err(zmem_comp::CompError::InvalidParam { .. })
        ));
        assert!(matches!(
            AlgoSpec::parse("nope"),
            Err(zmem_comp::CompError::UnknownAlgorithm { .. })
        ));
        assert_eq!(AlgoSpec::all().len(), zmem_comp::algorithms().len());
    }

    #[test]
    fn out_of_range_level_fails_before_measuring() {
        // Refused when the spec is parsed, before any run can start.
        let e = AlgoSpec::parse("zstd:99").unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(matches!(
            run(&[&[]], &AlgoSpec::all(), &quick(), &NoProgress),
            Err(LabError::NoPages)
        ));
    }

    /// A row that keeps its objects keeps exactly what a fresh stream makes of each page, across
    /// batches, and is the row [`algo_row`] gives (but for the timings); a second row measured
    /// with the first one's buffers is whole and verified too.
    #[test]
    fn a_kept_row_keeps_each_pages_object_and_is_the_same_row() {
        let a = pages(7);
        let opts = quick();
        let mut scratch = Scratch::default();
        for name in ["lz4", "deflate"] {
            let spec = AlgoSpec::parse(name).unwrap();
            let (row, objects) =
                algo_row_keeping(&[&a], &spec, &opts, &mut scratch, &NoProgress).unwrap();
            let plain =
                algo_row(&[&a], &spec, &opts, &mut Scratch::default(), &NoProgress).unwrap();
            let untimed = |r: &Row| (r.pages, r.input_bytes, r.compressed_bytes, r.verified);
            assert_eq!(untimed(&row), untimed(&plain));
            assert!(row.verified);
            assert_eq!(objects.len(), 7);
            let mut c = zmem_comp::create(name, &zmem_comp::Params::default(), 4096).unwrap();
            let mut dst = vec![0u8; compress_bound(4096)];
            for (i, page) in a.chunks(4096).enumerate() {
                let n = c.compress(page, &mut dst).unwrap();
                assert_eq!(objects.object(i), Some(&dst[..n]), "{name} page {i}");
            }
            let sum: usize = (0..7).map(|i| objects.object(i).unwrap().len()).sum();
            assert_eq!(sum as u64, row.compressed_bytes);
        }
    }

    /// A row that gives its lengths gives each page's, across batches (three pages a batch
    /// here), in input order: what a fresh stream makes of that page.
    #[test]
    fn a_row_with_lengths_gives_each_pages_compressed_length() {
        let a = pages(7);
        let opts = quick();
        for name in ["lz4", "zstd"] {
            let spec = AlgoSpec::parse(name).unwrap();
            let (row, lengths) =
                algo_row_lengths(&[&a], &spec, &opts, &mut Scratch::default(), &NoProgress)
                    .unwrap();
            let mut c = zmem_comp::create(name, &zmem_comp::Params::default(), 4096).unwrap();
            let mut dst = vec![0u8; compress_bound(4096)];
            let want: Vec<u32> =
                a.chunks(4096).map(|p| c.compress(p, &mut dst).unwrap() as u32).collect();
            assert_eq!(lengths, want, "{name}");
            assert_eq!(lengths.iter().map(|&l| u64::from(l)).sum::<u64>(), row.compressed_bytes);
        }
    }
}
