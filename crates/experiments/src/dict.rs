//! Dictionaries for zram's `algorithm_params dict=` (Linux 6.12+): training one on a page set,
//! the parameters that carry it, and its effect on a zram device.
//!
//! **Training.** zstd's dictionary builder (`ZDICT_trainFromBuffer`, through the `zstd` crate's
//! `dict::from_continuous`) over whole pages, sampled evenly. Same-filled pages are left out of
//! the samples: zram stores them as a fill word and never compresses them, so they would only
//! teach the dictionary zeros. The result is a zstd-format dictionary (magic, entropy tables,
//! then the content, the most useful segments last, nearest the data).
//!
//! **lz4.** The kernel's lz4 backend takes any bytes as a prefix dictionary (`LZ4_loadDict`: only
//! the last 64 KiB count, [`LZ4_DICT_WINDOW`]). lz4 has no training tool of its own; the series
//! that added `dict=` to zram says "even zstd --train can be used to train a dictionary for lz4"
//! (lz4/lz4#557; docs/REFERENCES.md [zram-dict]). So an lz4 dictionary here is the same
//! zstd-trained dictionary, bytes as they are: the entropy header (a few hundred bytes) sits at
//! the far end of the window, where it costs little, and the content lz4 matches against is what
//! zstd ranked most useful. Its size is capped at the 64 KiB lz4 can use, so the builder picks
//! the best 64 KiB rather than the tail of a larger dictionary. The live kernel's lz4 with such a
//! dictionary gives zmem's `mm_stat` byte for byte (docs/BENCHMARKS.md, "Dictionaries").
//!
//! **Size.** [`DEFAULT_DICT_SIZE`] is 64 KiB. The published zram experiment does not state its
//! dictionaries' size; `zstd --train`'s default is 110 KiB (112,640 bytes). 64 KiB is the most
//! lz4 uses, so one dictionary serves both algorithms whole; on this project's pages zstd did not
//! do better with 110 KiB than with 16 or 64 KiB, nor lz4 with 64 KiB than 16 KiB by much
//! (docs/BENCHMARKS.md, "Dictionaries"), while each zram priority holds the dictionary, and
//! zstd's digested copy of it, for the device's life.
//!
//! **Passing it to zram.** zram reads `dict=` as a *path* (`kernel_read_file_from_path`), and so
//! does zmem's engine (`algorithm_params` in zmem-zram's `attrs`). [`DictFile`] writes a
//! dictionary to a temporary file and gives the `algorithm_params` line naming it; the device
//! reads the file when the line is stored, so the file may go once the device is configured.
//! [`params_with_dict`] is the same thing for code that builds streams directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use zmem_comp::Params;

use crate::{LabError, Progress};
use zmem_sim::device::{OnRefusal, ZramRunConfig};

/// Default dictionary size: 64 KiB, the most lz4 uses (see the module documentation).
pub const DEFAULT_DICT_SIZE: usize = 64 << 10;

/// Default number of pages sampled for training: 16 MiB of 4 KiB pages, 256 times the default
/// dictionary (zstd's guidance is a training set of about 100 times the dictionary), trained in
/// a few seconds.
pub const DEFAULT_SAMPLES: usize = 4096;

/// Bytes of a dictionary lz4 can reach: `LZ4_loadDict` keeps the last 64 KiB.
pub const LZ4_DICT_WINDOW: usize = 64 << 10;

/// Fewest pages (not same-filled) the builder is given: zstd's trainers split the samples into
/// training and test sets and refuse fewer than 5 training samples.
pub const MIN_TRAIN_PAGES: usize = 16;

/// zstd's smallest dictionary (`ZDICT_DICTSIZE_MIN`).
pub const MIN_DICT_SIZE: usize = 256;

/// The algorithms a dictionary can be trained for.
pub const ALGORITHMS: [&str; 2] = ["zstd", "lz4"];

/// Trains a dictionary of at most `dict_size` bytes for `algo` ("zstd" or "lz4") on `pages`
/// (whole pages of `page_size`), sampling at most `max_samples` pages evenly.
pub fn train(
    pages: &[u8],
    page_size: usize,
    algo: &str,
    dict_size: usize,
    max_samples: usize,
) -> Result<Vec<u8>, LabError> {
    let setup = |msg: String| Err(LabError::Setup(format!("dictionary training: {msg}")));
    if !ALGORITHMS.contains(&algo) {
        return setup(format!("unknown algorithm {algo:?} (use zstd or lz4)"));
    }
    if page_size == 0 {
        return setup("page size 0".into());
    }
    if dict_size < MIN_DICT_SIZE {
        return setup(format!(
            "dictionary size {dict_size} is below zstd's minimum of {MIN_DICT_SIZE} bytes"
        ));
    }
    if max_samples < MIN_TRAIN_PAGES {
        return setup(format!("{max_samples} samples is too few (at least {MIN_TRAIN_PAGES})"));
    }
    let all = pages.len() / page_size;
    let candidates: Vec<&[u8]> =
        pages.chunks_exact(page_size).filter(|p| zmem_zram::same_filled(p).is_none()).collect();
    if candidates.len() < MIN_TRAIN_PAGES {
        if candidates.len() == all {
            return Err(LabError::TooFewPages {
                what: "dictionary training",
                need: MIN_TRAIN_PAGES as u64,
                have: all as u64,
            });
        }
        return setup(format!(
            "needs at least {MIN_TRAIN_PAGES} pages that are not same-filled (zram does not \
             compress those), got {} of {all}",
            candidates.len()
        ));
    }
    let k = max_samples.min(candidates.len());
    let mut samples = Vec::with_capacity(k * page_size);
    for j in 0..k {
        samples.extend_from_slice(candidates[j * candidates.len() / k]);
    }
    let sizes = vec![page_size; k];
    let size = if algo == "lz4" { dict_size.min(LZ4_DICT_WINDOW) } else { dict_size };
    let dict = zstd::dict::from_continuous(&samples, &sizes, size)
        .map_err(|e| LabError::Setup(format!("dictionary training: zstd's builder: {e}")))?;
    if dict.is_empty() {
        return setup("zstd's builder returned an empty dictionary".into());
    }
    Ok(dict)
}

/// zram's `algorithm_params` with a dictionary: Params with `dict` set (and the level if given).
pub fn params_with_dict(dict: &[u8], level: Option<i32>) -> Params {
    Params { level, dict: Some(Arc::from(dict)), ..Params::default() }
}

/// The `algorithm_params` line (without `algo=`/`priority=`) that gives zram the dictionary at
/// `dict_path` and the level, if any: `level=3 dict=/path`. A path with white space is quoted,
/// as the kernel's `next_arg` reads it; one with a double quote or not in UTF-8 cannot be written
/// in the line and is an error.
pub fn params_line(dict_path: &Path, level: Option<i32>) -> Result<String, LabError> {
    let path = dict_path.to_str().filter(|p| !p.contains('"')).ok_or_else(|| {
        LabError::Setup(format!(
            "dictionary path {} cannot be written in algorithm_params",
            dict_path.display()
        ))
    })?;
    let dict = if path.contains(|c: char| c.is_ascii_whitespace()) {
        format!("dict=\"{path}\"")
    } else {
        format!("dict={path}")
    };
    Ok(match level {
        Some(level) => format!("level={level} {dict}"),
        None => dict,
    })
}

/// A dictionary in a temporary file, for zram's `dict=/path`: `zram.dict` (0600) in a private
/// directory of its own (zmem-files' `PrivateTempDir`, 0700, under `$TMPDIR` or `/tmp`), since
/// the dictionary is made of memory contents. Both are removed on drop.
#[derive(Debug)]
pub struct DictFile {
    path: PathBuf,
    _dir: zmem_files::PrivateTempDir,
}

impl DictFile {
    /// Writes `dict` to a new file in a new private temporary directory.
    pub fn write(dict: &[u8]) -> Result<Self, LabError> {
        let failed = |e: zmem_files::FileError| LabError::Setup(format!("writing dictionary {e}"));
        let dir = zmem_files::PrivateTempDir::new("zmem-dict").map_err(failed)?;
        let path = dir.write_file("zram.dict", dict).map_err(failed)?;
        Ok(Self { path, _dir: dir })
    }

    /// Where the dictionary is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `algorithm_params` line for it ([`params_line`]).
    pub fn params_line(&self, level: Option<i32>) -> Result<String, LabError> {
        params_line(&self.path, level)
    }
}

/// What a dictionary does to a zram device: the same pages through two fresh zmem zram devices
/// (zsmalloc), one without and one with the dictionary. Sizes are `mm_stat`'s, and the ratio is
/// `orig_data_size / compr_data_size`, as the published experiment computed it.
#[derive(Debug, Clone, Serialize)]
pub struct DictEffect {
    pub algo: String,
    /// The level given (`None`: the algorithm's default).
    pub level: Option<i32>,
    pub pages: u64,
    pub dict_bytes: usize,
    /// `orig_data_size`: bytes of the pages written.
    pub orig_data_size: u64,
    /// `compr_data_size` without and with the dictionary.
    pub compr_without: u64,
    pub compr_with: u64,
    /// `mem_used_total` (the pool's pages) without and with the dictionary.
    pub mem_used_without: u64,
    pub mem_used_with: u64,
    pub ratio_without: f64,
    pub ratio_with: f64,
    /// Every page read back from both devices equals the page written.
    pub verified: bool,
}

impl DictEffect {
    /// How much the dictionary raises the ratio, in percent.
    pub fn gain_percent(&self) -> f64 {
        (self.ratio_with / self.ratio_without - 1.0) * 100.0
    }
}

/// Writes `pages` (whole pages of `page_size`) to a zram device with `algo` at `level`, without
/// and then with `dict`, and compares `mm_stat`. `progress` sees two phases of `pages` each.
pub fn evaluate(
    pages: &[u8],
    page_size: usize,
    algo: &str,
    dict: &[u8],
    level: Option<i32>,
    progress: &dyn Progress,
) -> Result<DictEffect, LabError> {
    if !ALGORITHMS.contains(&algo) {
        return Err(LabError::Setup(format!(
            "dictionary evaluation: unknown algorithm {algo:?} (use zstd or lz4)"
        )));
    }
    if page_size == 0 || pages.len() < page_size {
        return Err(LabError::NoPages);
    }
    let pages = &pages[..pages.len() / page_size * page_size];
    let plain = level.map(|l| format!("level={l}"));
    let without = through_zram(pages, page_size, algo, plain, "without dict", progress)?;
    let file = DictFile::write(dict)?;
    let with = through_zram(
        pages,
        page_size,
        algo,
        Some(file.params_line(level)?),
        "with dict",
        progress,
    )?;
    let ratio = |compr: u64| without.0.orig_data_size as f64 / compr as f64;
    Ok(DictEffect {
        algo: algo.to_string(),
        level,
        pages: (pages.len() / page_size) as u64,
        dict_bytes: dict.len(),
        orig_data_size: without.0.orig_data_size,
        compr_without: without.0.compr_data_size,
        compr_with: with.0.compr_data_size,
        mem_used_without: without.0.mem_used_total,
        mem_used_with: with.0.mem_used_total,
        ratio_without: ratio(without.0.compr_data_size),
        ratio_with: ratio(with.0.compr_data_size),
        verified: without.1 && with.1,
    })
}

/// One device: writes every page, reads every page back; `mm_stat` and whether all matched.
fn through_zram(
    pages: &[u8],
    ps: usize,
    algo: &str,
    params: Option<String>,
    label: &str,
    progress: &dyn Progress,
) -> Result<(zmem_zram::MmStat, bool), LabError> {
    let n = (pages.len() / ps) as u64;
    let cfg =
        ZramRunConfig { algo: algo.into(), params, page_size: ps, ..ZramRunConfig::default() };
    let z = zmem_sim::device::build_device(&cfg, n)?;
    progress.start(label, n);
    let written = zmem_sim::device::write_pages(&z, pages, ps, 0, OnRefusal::Fail, label, progress);
    progress.finish();
    written?;
    let mut buf = vec![0u8; ps];
    let verified = pages
        .chunks_exact(ps)
        .enumerate()
        .all(|(i, page)| z.read_page(i as u64, &mut buf).is_ok() && buf == page);
    Ok((z.mm_stat(), verified))
}

/// The first and the second half of `pages` (whole pages; the first half gets the odd page):
/// train on one, measure on the other.
pub fn halves(pages: &[u8], page_size: usize) -> (&[u8], &[u8]) {
    let n = pages.len().checked_div(page_size).unwrap_or(0);
    let (a, b) = pages[..n * page_size].split_at(n.div_ceil(2) * page_size);
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;
    use zmem_pages::generate::mixed;
    use zmem_pages::prng::SplitMix64;

    const PS: usize = 4096;

    fn mixed_pages(n: usize) -> Vec<u8> {
        mixed::generate(n, PS, 7).unwrap().bytes().to_vec()
    }

    /// Sum of compressed sizes of `pages` through one stream of `algo` with `params`, checking
    /// each page's round trip.
    fn stream_bytes(algo: &str, params: &Params, pages: &[u8]) -> usize {
        let mut c = zmem_comp::create(algo, params, PS).unwrap();
        let mut dst = vec![0u8; 2 * PS];
        let mut back = vec![0u8; PS];
        let mut total = 0;
        for page in pages.chunks_exact(PS) {
            let n = c.compress(page, &mut dst).unwrap();
            assert_eq!(c.decompress(&dst[..n], &mut back).unwrap(), PS);
            assert_eq!(back, page);
            total += n;
        }
        total
    }

    /// `n` pages of one kind of the `mixed` generator.
    fn pages_of(kind: mixed::PageKind, n: usize, seed: u64) -> Vec<u8> {
        let mut rng = SplitMix64::new(seed);
        let mut pages = vec![0u8; n * PS];
        for page in pages.chunks_exact_mut(PS) {
            mixed::fill(kind, &mut rng, page);
        }
        pages
    }

    /// Trains on the first half, measures on the second, stream by stream and through zram.
    #[track_caller]
    fn helps(algo: &str, pages: &[u8]) {
        let (train_on, measure_on) = halves(pages, PS);
        let dict = train(train_on, PS, algo, DEFAULT_DICT_SIZE, 1000).unwrap();
        assert!(!dict.is_empty() && dict.len() <= DEFAULT_DICT_SIZE, "{algo}: {}", dict.len());
        let without = stream_bytes(algo, &Params::default(), measure_on);
        let with = stream_bytes(algo, &params_with_dict(&dict, None), measure_on);
        assert!(with < without, "{algo}: {with} bytes with the dictionary, {without} without");

        let e = evaluate(measure_on, PS, algo, &dict, None, &NoProgress).unwrap();
        let n = (measure_on.len() / PS) as u64;
        assert!(e.verified, "{algo}");
        assert_eq!((e.pages, e.orig_data_size), (n, n * PS as u64));
        assert!(e.compr_with < e.compr_without, "{algo}: {e:?}");
        assert!(e.ratio_with > e.ratio_without && e.gain_percent() > 0.0, "{algo}: {e:?}");
    }

    /// Text pages (the `mixed` generator's text kind: words of one vocabulary, as strings in a
    /// heap are) are the case a dictionary is for: both algorithms gain.
    #[test]
    fn a_trained_dictionary_helps_zstd_and_lz4_on_similar_pages() {
        let text = pages_of(mixed::PageKind::Text, 600, 5);
        for algo in ALGORITHMS {
            helps(algo, &text);
        }
    }

    /// On the whole `mixed` set lz4 gains too; zstd does not (docs/BENCHMARKS.md,
    /// "Dictionaries"), so this is asserted for lz4 only.
    #[test]
    fn lz4_gains_on_typical_memory() {
        helps("lz4", &mixed_pages(1200));
    }

    #[test]
    fn lz4_dictionaries_fit_lz4s_window_and_levels_pass_through() {
        let pages = mixed_pages(300);
        let dict = train(&pages, PS, "lz4", 128 << 10, 300).unwrap();
        assert!(dict.len() <= LZ4_DICT_WINDOW, "{}", dict.len());
        let small = train(&pages, PS, "zstd", 4096, 100).unwrap();
        assert!(small.len() <= 4096, "{}", small.len());
        let p = params_with_dict(&small, Some(5));
        assert_eq!(p.level, Some(5));
        assert_eq!(p.dict.as_deref(), Some(&small[..]));
        let e = evaluate(&pages[..64 * PS], PS, "zstd", &small, Some(5), &NoProgress).unwrap();
        assert!(e.verified && e.level == Some(5) && e.dict_bytes == small.len());
    }

    #[test]
    fn params_lines_name_the_file_as_zram_reads_it() {
        let f = DictFile::write(b"some dictionary bytes").unwrap();
        assert_eq!(std::fs::read(f.path()).unwrap(), b"some dictionary bytes");
        let line = f.params_line(Some(3)).unwrap();
        assert_eq!(line, format!("level=3 dict={}", f.path().display()));
        assert_eq!(params_line(Path::new("/a b/d"), None).unwrap(), "dict=\"/a b/d\"");
        assert!(params_line(Path::new("/a\"b"), None).is_err());
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = f.path().parent().unwrap().to_path_buf();
        assert_eq!((mode(f.path()), mode(&dir)), (0o600, 0o700));
        let path = f.path().to_path_buf();
        drop(f);
        assert!(!path.exists() && !dir.exists());
    }

    #[test]
    fn bad_input_is_an_error_with_clear_text() {
        let pages = mixed_pages(40);
        let err = |r: Result<Vec<u8>, LabError>| r.unwrap_err().to_string();
        let e = err(train(&pages, PS, "lzo", DEFAULT_DICT_SIZE, 100));
        assert!(e.contains("unknown algorithm \"lzo\"") && e.contains("zstd or lz4"), "{e}");
        let e = err(train(&pages[..3 * PS], PS, "zstd", DEFAULT_DICT_SIZE, 100));
        assert!(e.contains("at least 16 pages, got 3"), "{e}");
        let e = err(train(&[], PS, "zstd", DEFAULT_DICT_SIZE, 100));
        assert!(e.contains("got 0"), "{e}");
        let zeros = vec![0u8; 40 * PS];
        let e = err(train(&zeros, PS, "lz4", DEFAULT_DICT_SIZE, 100));
        assert!(e.contains("not same-filled") && e.contains("got 0 of 40"), "{e}");
        let e = err(train(&pages, PS, "zstd", 100, 100));
        assert!(e.contains("minimum of 256"), "{e}");
        let e = err(train(&pages, PS, "zstd", DEFAULT_DICT_SIZE, 4));
        assert!(e.contains("too few"), "{e}");
        let e = err(train(&pages, 0, "zstd", DEFAULT_DICT_SIZE, 100));
        assert!(e.contains("page size 0"), "{e}");
        let e = evaluate(&pages, PS, "deflate", b"d", None, &NoProgress).unwrap_err().to_string();
        assert!(e.contains("unknown algorithm"), "{e}");
        assert!(matches!(
            evaluate(&[], PS, "zstd", b"d", None, &NoProgress),
            Err(LabError::NoPages)
        ));
    }

    #[test]
    fn halves_split_whole_pages() {
        let pages = vec![1u8; 5 * PS + 10];
        let (a, b) = halves(&pages, PS);
        assert_eq!((a.len(), b.len()), (3 * PS, 2 * PS));
        assert_eq!(halves(&pages, 0), (&[][..], &[][..]));
    }
}
