//! `zmem._native`: the Python bindings of zmem's page sets and lab engines.
//!
//! Thin by design, like the `zmem` binary: every function parses its Python arguments into the
//! same configuration structs the CLI builds, calls the same zmem-lab entry point, and returns
//! the result as the JSON text the CLI's `--json` prints (the same serde structs, serialised by
//! the same serde_json). The Python layer (`python/zmem/__init__.py`) turns that JSON into
//! pyarrow Tables and dicts, so a column is named exactly as the CLI's JSON field is, and no
//! engine is re-implemented here. Long work runs with the GIL released ([`Python::detach`]).
//! Errors become Python exceptions carrying the CLI's one-line message ([`to_py`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};
use zmem_experiments::comp_bench::{self as bench, AlgoSpec};
use zmem_experiments::study::{self, StudyConfig};
use zmem_experiments::zram_run as zram_mod;
use zmem_kernel::KernelError;
use zmem_kernel::capture;
use zmem_lab::{self as lab_mod, Input, LabRequest};
use zmem_lab::{Incompressible, LabError, NoProgress};
use zmem_pages::generate::{self, Kind};
use zmem_pages::trace::Trace;
use zmem_pages::{Compression, PageSet as Pages, PagesError, ReadOptions, builtin};
use zmem_sim::SimError;
use zmem_sim::device::ZramRunConfig;
use zmem_sim::replay::{self as replay_mod, ReplayConfig, SwapKind};
use zmem_sim::swap_device::{DeviceSpec, SwapDevice};

create_exception!(
    zmem,
    Error,
    PyException,
    "A zmem operation failed on valid arguments: corrupt input, an engine that refused, a \
     configuration that read pages back wrong. The message is the CLI's one line."
);

/// Why a call failed, before it becomes a Python exception: the class to raise and the line.
enum Failure {
    /// The caller's argument is wrong (ValueError).
    Value(String),
    /// The operating system refused (OSError).
    Os(String),
    /// Anything else (`zmem.Error`).
    Other(String),
}

/// The error and its causes on one line, as the CLI prints them (anyhow's `{:#}`: each
/// `source()` after a `: `).
fn one_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        // A wrapper that prints its source (`zram: {0}`) would repeat it: each text once.
        let text = c.to_string();
        if !line.contains(&text) {
            line += &format!(": {text}");
        }
        cause = c.source();
    }
    line.replace('\n', " ")
}

impl From<PagesError> for Failure {
    fn from(e: PagesError) -> Self {
        let line = one_line(&e);
        match innermost(&e) {
            PagesError::Io { .. } | PagesError::Stream(_) => Failure::Os(line),
            PagesError::Invalid(_) | PagesError::TooLarge { .. } => Failure::Value(line),
            _ => Failure::Other(line),
        }
    }
}

/// The error a [`PagesError::File`] wraps (it only adds the file name).
fn innermost(e: &PagesError) -> &PagesError {
    match e {
        PagesError::File { error, .. } => innermost(error),
        e => e,
    }
}

impl From<LabError> for Failure {
    fn from(e: LabError) -> Self {
        let line = one_line(&e);
        match e {
            LabError::Pages(w) | LabError::Sim(SimError::Pages(w)) => w.into(),
            LabError::Kernel(KernelError::Pages(w)) => w.into(),
            LabError::Sim(SimError::Setup(_) | SimError::NoPages) => Failure::Value(line),
            LabError::BadSpec { .. }
            | LabError::NoPages
            | LabError::TooFewPages { .. }
            | LabError::Setup(_)
            | LabError::Comp(zmem_comp::CompError::UnknownAlgorithm { .. }) => Failure::Value(line),
            _ => Failure::Other(line),
        }
    }
}

/// The exception for `f`: its message is what the CLI prints after `zmem: `.
fn to_py(f: Failure) -> PyErr {
    match f {
        Failure::Value(m) => PyValueError::new_err(m),
        Failure::Os(m) => PyOSError::new_err(m),
        Failure::Other(m) => Error::new_err(m),
    }
}

fn lab_err(e: impl Into<LabError>) -> PyErr {
    to_py(e.into().into())
}

fn workload_err(e: PagesError) -> PyErr {
    to_py(e.into())
}

/// An algorithm argument (`"zstd"`, `"zstd:3"`, `"zstd:level=3,dict=F"`), checked at once: an
/// unknown name or parameter is a ValueError naming the argument.
fn algo_spec(text: &str) -> PyResult<AlgoSpec> {
    text.parse::<AlgoSpec>().map_err(|e| value_err(format!("algo {text:?}: {e}")))
}

fn value_err(m: impl Into<String>) -> PyErr {
    PyValueError::new_err(m.into())
}

/// The most threads a `threads=` may ask for (the CLI's `--threads` bound).
const MAX_THREADS: u64 = 1024;
/// The longest a duration argument may be, in seconds (a week, as the CLI's).
const MAX_SECS: u64 = 7 * 24 * 3600;
/// The largest page size (`zmem_pages::format::MAX_PAGE_SIZE`).
const MAX_PAGE: u64 = zmem_pages::format::MAX_PAGE_SIZE as u64;

/// A count argument `name`: an int in `min..=max`, else a ValueError naming it (never Python's
/// OverflowError, whatever the size of the int), or a TypeError for what is not an int.
fn count<T: TryFrom<u64>>(
    name: &str,
    v: Option<&Bound<'_, PyAny>>,
    default: u64,
    min: u64,
    max: u64,
) -> PyResult<T> {
    use pyo3::types::PyInt;
    let Some(v) = v else {
        return T::try_from(default).map_err(|_| value_err(format!("{name}={default}: too large")));
    };
    if !v.is_instance_of::<PyInt>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name}: expected an int, got {}",
            v.get_type().name()?
        )));
    }
    let text = v.str()?.to_string();
    let range = || format!("give a number from {min} to {max}");
    if v.lt(0)? {
        return Err(value_err(format!("{name}={text}: negative; {}", range())));
    }
    match v.extract::<u64>() {
        Ok(n) if (min..=max).contains(&n) => {
            T::try_from(n).map_err(|_| value_err(format!("{name}={text}: too large")))
        }
        _ => Err(value_err(format!("{name}={text}: out of range; {}", range()))),
    }
}

/// A number argument `name` (int or float) as an f64; an int too large for one is a ValueError
/// naming it (the range is the library's check, in the CLI's words).
fn number(name: &str, v: Option<&Bound<'_, PyAny>>, default: f64) -> PyResult<f64> {
    use pyo3::types::{PyFloat, PyInt};
    let Some(v) = v else { return Ok(default) };
    if !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("{name}: expected a number")));
    }
    let text = v.str()?.to_string();
    v.extract::<f64>().map_err(|_| value_err(format!("{name}={text}: too large a number")))
}

/// A pool argument, checked at once: an unknown allocator is a ValueError.
fn pool_name(pool: &str) -> PyResult<()> {
    zmem_pool::registry::find(pool)
        .map(|_| ())
        .map_err(|e| value_err(format!("pool={pool:?}: {e}")))
}

fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| Error::new_err(format!("encoding JSON: {e}")))
}

/// A set of equal-sized pages, with optional per-page and per-set metadata: a page-set file (any
/// format `zmem` reads), a capture, a generated set, or bytes from NumPy.
#[pyclass(module = "zmem", name = "PageSet", frozen)]
#[derive(Debug)]
pub struct PageSet {
    set: Pages,
    /// What the set is, for the lab's `source.detail` (the path, as the CLI says it).
    label: String,
}

impl PageSet {
    fn bytes(&self) -> &[u8] {
        self.set.bytes()
    }
}

#[pymethods]
impl PageSet {
    /// Reads a page-set file (plain or zstd-compressed) or a raw page file of `page_size`-byte
    /// pages, checking every page's checksum; the pages are copied into memory.
    #[staticmethod]
    #[pyo3(signature = (path, page_size = None))]
    fn open(py: Python<'_>, path: PathBuf, page_size: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let page_size = count("page_size", page_size, 4096, 1, MAX_PAGE)?;
        let opts = ReadOptions { page_size, ..ReadOptions::default() };
        let set = py.detach(|| Pages::open_with(&path, &opts)).map_err(workload_err)?;
        Ok(Self { set, label: path.display().to_string() })
    }

    /// Parses a whole page file held in memory (`bytes`), in any format `open` reads.
    #[staticmethod]
    #[pyo3(signature = (data, page_size = None, label = "bytes".to_string()))]
    fn from_bytes(
        py: Python<'_>,
        data: &[u8],
        page_size: Option<&Bound<'_, PyAny>>,
        label: String,
    ) -> PyResult<Self> {
        let page_size = count("page_size", page_size, 4096, 1, MAX_PAGE)?;
        let opts = ReadOptions { page_size, ..ReadOptions::default() };
        let set = py.detach(|| Pages::from_bytes(data, &opts)).map_err(workload_err)?;
        Ok(Self { set, label })
    }

    /// Pages from a 2-D `(n, page_size)` uint8 NumPy array (anything `numpy.asarray` takes).
    #[staticmethod]
    #[pyo3(signature = (array, label = "numpy array".to_string()))]
    fn from_numpy(py: Python<'_>, array: &Bound<'_, PyAny>, label: String) -> PyResult<Self> {
        let np = py.import("numpy")?;
        let a = np.getattr("asarray")?.call1((array,))?;
        let dtype: String = a.getattr("dtype")?.str()?.extract()?;
        let shape: Vec<usize> = a.getattr("shape")?.extract()?;
        if dtype != "uint8" || shape.len() != 2 {
            return Err(value_err(format!(
                "expected a 2-D (n, page_size) uint8 array, got dtype {dtype} with shape {shape:?}"
            )));
        }
        let raw = np.getattr("ascontiguousarray")?.call1((a,))?.call_method0("tobytes")?;
        let data: &[u8] = raw.cast::<PyBytes>()?.as_bytes();
        let set = Pages::from_raw(data.to_vec(), shape[1]).map_err(workload_err)?;
        Ok(Self { set, label })
    }

    /// The pages as a writable `(n, page_size)` uint8 NumPy array (a copy).
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let np = py.import("numpy")?;
        // A bytearray, so the array is writable (and owns its one copy of the pages).
        let buf = PyByteArray::new(py, self.set.bytes());
        let flat = np.getattr("frombuffer")?.call1((buf, "uint8"))?;
        flat.call_method1("reshape", (self.set.len(), self.set.page_size()))
    }

    /// All pages, concatenated.
    fn tobytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.set.bytes())
    }

    /// A generated page set, as `zmem gen`: `kind` is `mixed` (typical anonymous memory) or
    /// `perf` (the vivo study's zram-perf pattern); the same seed gives the same bytes.
    #[staticmethod]
    #[pyo3(signature = (kind = "mixed", pages = None, page_size = None, seed = None))]
    fn generate(
        py: Python<'_>,
        kind: &str,
        pages: Option<&Bound<'_, PyAny>>,
        page_size: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let pages: usize = count("pages", pages, 4096, 0, u64::MAX)?;
        let page_size: usize = count("page_size", page_size, 4096, 1, MAX_PAGE)?;
        let seed: u64 = count("seed", seed, 0, 0, u64::MAX)?;
        zmem_pages::format::check_page_size(page_size)
            .map_err(|e| value_err(format!("page_size={page_size}: {e}")))?;
        zmem_pages::limits::fits_in_memory(pages as u64, page_size as u64)
            .map_err(|e| value_err(format!("pages={pages}: {e}")))?;
        let k = Kind::parse(kind).map_err(workload_err)?;
        let set =
            py.detach(|| generate::generate(k, pages, page_size, seed)).map_err(workload_err)?;
        Ok(Self { set, label: format!("generated {kind} set (seed {seed})") })
    }

    /// The built-in page set the CLI runs on when given no file.
    #[staticmethod]
    #[pyo3(signature = (page_size = None))]
    fn builtin(page_size: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let page_size = count("page_size", page_size, 4096, 1, MAX_PAGE)?;
        let set = builtin::default_set_with(page_size).map_err(workload_err)?;
        Ok(Self { set, label: "built-in set".into() })
    }

    /// Captures live memory, as `zmem capture` (root needed for other users' processes): the
    /// resident anonymous pages of `pids`, of every process (`all`), of a cgroup's processes,
    /// or the pages a zram device stores (`zram="/dev/zramN"`, read with O_DIRECT).
    #[staticmethod]
    #[pyo3(signature = (pids = Vec::new(), all = false, cgroup = None, zram = None))]
    fn capture(
        py: Python<'_>,
        pids: Vec<Bound<'_, PyAny>>,
        all: bool,
        cgroup: Option<PathBuf>,
        zram: Option<PathBuf>,
    ) -> PyResult<Self> {
        let pids: Vec<u32> = pids
            .iter()
            .map(|p| count("pids", Some(p), 0, 1, u32::MAX.into()))
            .collect::<PyResult<_>>()?;
        if let Some(dev) = zram {
            if !pids.is_empty() || all || cgroup.is_some() {
                return Err(value_err("zram= cannot be combined with pids, all or cgroup"));
            }
            let (set, _) = py
                .detach(|| capture::zram::capture_device(&dev, &mut |_, _| {}))
                .map_err(workload_err)?;
            return Ok(Self { set, label: dev.display().to_string() });
        }
        let mut pids = pids;
        if all {
            pids.extend(capture::all_pids().map_err(workload_err)?);
        }
        if let Some(cg) = &cgroup {
            pids.extend(capture::cgroup_pids(cg).map_err(workload_err)?);
        }
        if pids.is_empty() {
            return Err(value_err(
                "nothing to capture: give --pid P, --all, --cgroup PATH or --zram DEV",
            ));
        }
        pids.sort_unstable();
        pids.dedup();
        let (set, summary) =
            py.detach(|| capture::capture(&pids, &mut |_| {})).map_err(workload_err)?;
        Ok(Self { set, label: summary.to_string() })
    }

    /// Writes the set: a page-set file (zstd-compressed at level `zstd`, or at level 3 for a
    /// name ending `.zst`), or bare pages with `raw=True`, as `zmem gen`/`zmem export` do.
    #[pyo3(signature = (path, zstd = None, raw = false))]
    fn save(
        &self,
        py: Python<'_>,
        path: PathBuf,
        zstd: Option<&Bound<'_, PyAny>>,
        raw: bool,
    ) -> PyResult<()> {
        let zstd = zstd
            .map(|z| {
                z.extract::<i32>()
                    .ok()
                    .filter(|l| (-131072..=22).contains(l))
                    .ok_or_else(|| value_err(format!("zstd={z}: a zstd level, -131072 to 22")))
            })
            .transpose()?;
        if raw && zstd.is_some() {
            return Err(value_err("raw=True cannot be combined with zstd"));
        }
        let compression = match zstd {
            Some(l) => Compression::Zstd(l),
            None if path.extension().is_some_and(|e| e == "zst") => Compression::Zstd(3),
            None => Compression::None,
        };
        py.detach(|| if raw { self.set.save_raw(&path) } else { self.set.save(&path, compression) })
            .map_err(workload_err)
    }

    /// A copy of the set with its set metadata replaced (keys: printable ASCII without `=`;
    /// the fleet reads `host` and `label.*`).
    fn with_metadata(
        &self,
        metadata: std::collections::BTreeMap<String, String>,
    ) -> PyResult<Self> {
        let mut set = Pages::from_raw(self.set.bytes().to_vec(), self.set.page_size())
            .map_err(workload_err)?;
        if let Some(m) = self.set.metas() {
            set = set.with_meta(m.to_vec()).map_err(workload_err)?;
        }
        let set = set.with_set_meta(metadata).map_err(workload_err)?;
        Ok(Self { set, label: self.label.clone() })
    }

    /// The set's metadata (`key -> value`; a zram capture's device state, for instance).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.set.set_meta().into_iter().flatten() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    #[getter]
    fn page_size(&self) -> usize {
        self.set.page_size()
    }

    /// What the set is (its path, for an opened file): the lab's `source.detail` names it.
    #[getter]
    fn label(&self) -> String {
        self.label.clone()
    }

    fn __len__(&self) -> usize {
        self.set.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "PageSet({} pages of {} bytes, {})",
            self.set.len(),
            self.set.page_size(),
            self.label
        )
    }
}

/// `zmem comp-bench --json`: one record per algorithm, as JSON.
#[pyfunction]
#[pyo3(signature = (pages, algos = None, min_time_ms = None))]
fn comp_bench(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    algos: Option<Vec<String>>,
    min_time_ms: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let min_time_ms: u64 = count("min_time_ms", min_time_ms, 200, 0, MAX_SECS * 1000)?;
    let specs = match algos {
        None => AlgoSpec::all(),
        Some(a) => a.iter().map(|s| algo_spec(s)).collect::<Result<_, _>>()?,
    };
    let opts = bench::Options {
        page_size: pages.set.page_size(),
        min_time: Duration::from_millis(min_time_ms),
        ..bench::Options::default()
    };
    let p: &PageSet = &pages;
    let rows =
        py.detach(|| bench::run(&[p.bytes()], &specs, &opts, &NoProgress)).map_err(lab_err)?;
    json(&rows)
}

/// `zmem zram --json`: the pages through one zram device.
#[pyfunction]
#[pyo3(signature = (pages, algo = None, params = None, pool = "zsmalloc".to_string(), threads = None, recomp = Vec::new(), recompress = None))]
#[allow(clippy::too_many_arguments)]
fn zram_run(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    algo: Option<String>,
    params: Option<String>,
    pool: String,
    threads: Option<&Bound<'_, PyAny>>,
    recomp: Vec<String>,
    recompress: Option<String>,
) -> PyResult<String> {
    let threads: usize = count("threads", threads, 1, 1, MAX_THREADS)?;
    pool_name(&pool)?;
    let spec = algo_spec(algo.as_deref().unwrap_or(zmem_lab::DEFAULT_ALGORITHM))?;
    for r in &recomp {
        algo_spec(r)?;
    }
    let params = match (spec.algorithm_params(), params) {
        (Some(a), Some(b)) => Some(format!("{a} {b}")),
        (a, b) => a.or(b),
    };
    let cfg = ZramRunConfig {
        algo: spec.name.clone(),
        params,
        pool,
        page_size: pages.set.page_size(),
        threads,
        recomp,
        recompress,
    };
    let p: &PageSet = &pages;
    let r = py.detach(|| zram_mod::run(p.bytes(), &cfg, &NoProgress)).map_err(lab_err)?;
    if !r.verified {
        return Err(Error::new_err("pages read back differ from the pages written"));
    }
    json(&r)
}

/// A `ram` value: a byte count, or text in the kernel's memparse syntax; `flag` names it in
/// the error, as the CLI does.
fn ram_bytes(flag: &str, ram: &Bound<'_, PyAny>) -> PyResult<u64> {
    if ram.is_instance_of::<pyo3::types::PyInt>() {
        return count(flag, Some(ram), 0, 0, u64::MAX);
    }
    let text: String = ram
        .extract()
        .map_err(|_| value_err(format!("{flag}: expected bytes as an int or a size string")))?;
    zmem_lab::parse_size(&text).map_err(|e| value_err(format!("{flag}: {}", e.msg)))
}

fn load_trace(py: Python<'_>, path: &Path) -> PyResult<Vec<replay_mod::Access>> {
    let t = py.detach(|| Trace::open(path)).map_err(|e| {
        let mut f: Failure = e.into();
        match &mut f {
            Failure::Value(m) | Failure::Os(m) | Failure::Other(m) => {
                *m = format!("reading the trace: {m}")
            }
        }
        to_py(f)
    })?;
    Ok(replay_mod::accesses(&t))
}

/// `zmem replay --json`: an access trace over the pages under a RAM budget.
#[pyfunction]
#[pyo3(signature = (pages, trace, ram, swap = "zswap", algo = "lzo-rle".to_string(), pool = "zsmalloc".to_string(), max_pool_percent = None, accept_threshold_percent = None, shrinker = false, reject_incompressible = false, no_writeback = false, swap_dir = None, swap_device = "nvme", swap_in_memory = false, readahead = None, page_cluster = None))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    trace: PathBuf,
    ram: &Bound<'_, PyAny>,
    swap: &str,
    algo: String,
    pool: String,
    max_pool_percent: Option<&Bound<'_, PyAny>>,
    accept_threshold_percent: Option<&Bound<'_, PyAny>>,
    shrinker: bool,
    reject_incompressible: bool,
    no_writeback: bool,
    swap_dir: Option<PathBuf>,
    swap_device: &str,
    swap_in_memory: bool,
    readahead: Option<&str>,
    page_cluster: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let readahead: Option<zmem_sim::replay::Readahead> = readahead
        .map(|r| r.parse().map_err(|e| value_err(format!("readahead: {e}"))))
        .transpose()?;
    let page_cluster: Option<u32> = match page_cluster {
        Some(v) => Some(count("page_cluster", Some(v), 3, 0, 31)?),
        None => None,
    };
    let max_pool_percent: u32 =
        count("max_pool_percent", max_pool_percent, 20, 0, u32::MAX.into())?;
    let accept_threshold_percent: u32 =
        count("accept_threshold_percent", accept_threshold_percent, 90, 0, u32::MAX.into())?;
    pool_name(&pool)?;
    if swap_in_memory && swap_dir.is_some() {
        return Err(value_err("give swap_dir or swap_in_memory, not both"));
    }
    let ps = pages.set.page_size();
    let spec: DeviceSpec =
        swap_device.parse().map_err(|e| value_err(format!("swap_device: {e}")))?;
    let device = SwapDevice::resolve(&spec, Duration::from_secs(1)).map_err(lab_err)?;
    let ram_text = ram.str()?.to_string();
    let ram_pages = ram_bytes("ram", ram)? / ps as u64;
    if ram_pages == 0 {
        return Err(value_err(format!("ram={ram_text} is less than one page")));
    }
    let swap: SwapKind = swap.parse().map_err(value_err)?;
    let spec = algo_spec(&algo)?;
    if swap == SwapKind::Zswap && spec.algorithm_params().is_some() {
        return Err(value_err(format!(
            "algo={spec}: zswap's compressors (the kernel's crypto API) take no parameters"
        )));
    }
    let accesses = load_trace(py, &trace)?;
    let (readahead, page_cluster) =
        zmem_experiments::readahead::settings(readahead, page_cluster, &device);
    let cfg = ReplayConfig {
        ram_pages,
        swap,
        algo: spec.name.clone(),
        algo_params: spec.algorithm_params(),
        pool,
        page_size: ps,
        max_pool_percent,
        accept_threshold_percent,
        shrinker,
        incompressible: if reject_incompressible {
            Incompressible::Reject
        } else {
            Incompressible::StoreAsIs
        },
        writeback: !no_writeback,
        swap_dir: if swap_in_memory {
            None
        } else {
            Some(swap_dir.unwrap_or_else(std::env::temp_dir))
        },
        device,
        readahead,
        page_cluster,
        ..ReplayConfig::default()
    };
    let p: &PageSet = &pages;
    let r =
        py.detach(|| replay_mod::run(p.bytes(), &accesses, &cfg, &NoProgress)).map_err(lab_err)?;
    if !r.verified {
        return Err(Error::new_err("pages swapped in differ from the pages swapped out"));
    }
    json(&r)
}

/// `zmem study allocators --json`: zsmalloc, zbud and z3fold under zswap.
#[pyfunction]
#[pyo3(signature = (pages, trace = None, algo = "lzo-rle".to_string(), rounds = None, as_is = false, ram = None, max_pool_percent = None))]
#[allow(clippy::too_many_arguments)]
fn study_allocators(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    trace: Option<PathBuf>,
    algo: String,
    rounds: Option<&Bound<'_, PyAny>>,
    as_is: bool,
    ram: Option<&Bound<'_, PyAny>>,
    max_pool_percent: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let rounds: usize = count("rounds", rounds, 3, 1, 1000)?;
    let max_pool_percent: u32 =
        count("max_pool_percent", max_pool_percent, 20, 0, u32::MAX.into())?;
    let ps = pages.set.page_size();
    let accesses = trace.as_ref().map(|t| load_trace(py, t)).transpose()?;
    let ram_pages = ram.map(|r| ram_bytes("ram", r)).transpose()?.map(|b| b / ps as u64);
    let spec = algo_spec(&algo)?;
    if spec.algorithm_params().is_some() {
        return Err(value_err(format!(
            "algo={spec}: zswap's compressors (the kernel's crypto API) take no parameters"
        )));
    }
    let cfg = StudyConfig {
        algo: spec.name,
        page_size: ps,
        rounds,
        incompressible: if as_is { Incompressible::StoreAsIs } else { Incompressible::Reject },
        ram_pages,
        max_pool_percent,
        swap_dir: Some(std::env::temp_dir()),
    };
    let p: &PageSet = &pages;
    let rows = py
        .detach(|| study::allocators(p.bytes(), accesses.as_deref(), &cfg, &NoProgress))
        .map_err(lab_err)?;
    if !rows.iter().all(|r| r.verified) {
        return Err(Error::new_err("pages came back different"));
    }
    json(&rows)
}

/// `zmem lab --json`: the report (docs/lab-report.schema.json) as JSON. Every option of
/// `zmem lab` but `--json` is a keyword argument of the same name (python/tests/test_parity.py
/// checks it): `pages` None: `source` (`zram`, `processes`, `builtin`, or None for the automatic
/// choice); `apply_script`, `undo_script` and `output` write the decision's two scripts and the
/// HTML + JSON report as the CLI does.
#[pyfunction]
#[pyo3(signature = (pages = None, source = None, no_capture = false, observe = None, max_pages = None, sample = None, cpu_budget = None, latency_budget = None, swap_device = None, apply_script = None, trace = None, threads = None, min_time_ms = None, output = None, mount_debugfs = false, undo_script = None))]
#[allow(clippy::too_many_arguments)]
fn lab(
    py: Python<'_>,
    pages: Option<PyRef<'_, PageSet>>,
    source: Option<&str>,
    no_capture: bool,
    observe: Option<&Bound<'_, PyAny>>,
    max_pages: Option<&Bound<'_, PyAny>>,
    sample: Option<&Bound<'_, PyAny>>,
    cpu_budget: Option<&Bound<'_, PyAny>>,
    latency_budget: Option<&Bound<'_, PyAny>>,
    swap_device: Option<&str>,
    apply_script: Option<PathBuf>,
    trace: Option<PathBuf>,
    threads: Option<&Bound<'_, PyAny>>,
    min_time_ms: Option<&Bound<'_, PyAny>>,
    output: Option<PathBuf>,
    mount_debugfs: bool,
    undo_script: Option<PathBuf>,
) -> PyResult<String> {
    // None: the request's own default (one place for them: `LabRequest::default()`).
    let d = LabRequest::default();
    let observe: u64 = count("observe", observe, d.observe_secs, 0, MAX_SECS)?;
    let sample: Option<usize> =
        sample.map(|s| count("sample", Some(s), 0, 2, 1 << 32)).transpose()?;
    let cpu_budget = number("cpu_budget", cpu_budget, d.budgets.cpu_percent_of_core)?;
    let latency_budget = number("latency_budget", latency_budget, d.budgets.added_load_p99_us)?;
    let threads: usize = count("threads", threads, d.threads as u64, 0, MAX_THREADS)?;
    let min_time_ms: u64 =
        count("min_time_ms", min_time_ms, d.min_time.as_millis() as u64, 0, MAX_SECS * 1000)?;
    let swap_device = swap_device.unwrap_or("auto");
    let max_pages = match max_pages {
        None => None,
        Some(v) => {
            let text = match (v.extract::<String>(), v.extract::<i64>()) {
                (Ok(s), _) => s,
                (_, Ok(n)) => n.to_string(),
                _ => return Err(value_err("max_pages: a positive number of pages, or 'all'")),
            };
            Some(
                lab_mod::parse_max_pages(&text)
                    .map_err(|e| value_err(format!("max_pages: {e}")))?,
            )
        }
    };
    let coverage = lab_mod::coverage(max_pages, sample).map_err(lab_err)?;
    let budgets = lab_mod::Budgets::checked(cpu_budget, latency_budget).map_err(lab_err)?;
    let swap_device = lab_mod::parse_swap_device(swap_device)
        .map_err(|e| value_err(format!("swap_device: {e}")))?;
    let input = match (&pages, source, no_capture) {
        (Some(_), Some(_), _) | (Some(_), _, true) => {
            return Err(value_err("give pages, or source / no_capture, not both"));
        }
        (None, Some(_), true) => return Err(value_err("give source or no_capture, not both")),
        (Some(p), None, false) => {
            // The lab owns the set it is given: a copy, as the CLI's loader gives it one.
            let set = Pages::from_raw(p.bytes().to_vec(), p.set.page_size())
                .and_then(|s| match p.set.metas() {
                    Some(m) => s.with_meta(m.to_vec()),
                    None => Ok(s),
                })
                .and_then(|s| match p.set.set_meta() {
                    Some(m) => s.with_set_meta(m.clone()),
                    None => Ok(s),
                })
                .map_err(workload_err)?;
            Input::Pages { set, label: p.label.clone() }
        }
        (None, None, true) => Input::Builtin,
        (None, Some(s), false) => lab_mod::parse_source(s).map_err(lab_err)?,
        (None, None, false) => Input::Auto,
    };
    if let Some(t) = trace.as_ref().filter(|t| !t.is_file()) {
        return Err(PyOSError::new_err(format!("trace {}: no such file", t.display())));
    }
    let req = LabRequest {
        input,
        coverage,
        observe_secs: observe,
        budgets,
        swap_device,
        trace,
        threads,
        min_time: Duration::from_millis(min_time_ms),
        mount_debugfs,
    };
    let report = py.detach(|| lab_mod::run_lab(req, &NoProgress)).map_err(lab_err)?;
    if let Some(path) = &apply_script {
        std::fs::write(path, zmem_render::render_apply_script(&report))
            .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
    }
    if let Some(path) = &undo_script {
        std::fs::write(path, zmem_render::decision::undo_script())
            .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
    }
    let json = zmem_render::json::lab_report_text(&report);
    if let Some(dir) = &output {
        let os = |e: std::io::Error| PyOSError::new_err(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(os)?;
        std::fs::write(dir.join("report.html"), zmem_render::render_html(&report)).map_err(os)?;
        std::fs::write(dir.join("report.json"), &json).map_err(os)?;
    }
    Ok(json)
}

/// Algorithm names `comp_bench` takes (`zmem comp-bench --list`).
#[pyfunction]
fn algorithms() -> Vec<String> {
    AlgoSpec::all().into_iter().map(|a| a.name).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PageSet>()?;
    m.add_function(wrap_pyfunction!(comp_bench, m)?)?;
    m.add_function(wrap_pyfunction!(zram_run, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(study_allocators, m)?)?;
    m.add_function(wrap_pyfunction!(lab, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    Ok(())
}
