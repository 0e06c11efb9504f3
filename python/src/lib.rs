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
use zmem_experiments::comp_bench::AlgoSpec;
use zmem_kernel::KernelError;
use zmem_lab::{self as lab_mod, Input, LabRequest};
use zmem_lab::{CaptureRequest, CompBenchRequest, GenerateRequest, ReplayRequest};
use zmem_lab::{LabError, NoProgress};
use zmem_lab::{StudyRequest, ZramRequest};
use zmem_pages::trace::Trace;
use zmem_pages::{Compression, PageSet as Pages, PagesError, ReadOptions, builtin};
use zmem_sim::SimError;
use zmem_sim::replay as replay_mod;

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

/// A request's refusal of an argument, in Python's words (`pool='slab': ...`).
fn arg_err(e: zmem_lab::ArgError) -> PyErr {
    value_err(e.keyword())
}

/// The most threads a `threads=` may ask for (the CLI's `--threads` bound).
const MAX_THREADS: u64 = zmem_lab::request::MAX_THREADS;
/// The longest a duration argument may be, in seconds (a week, as the CLI's).
const MAX_SECS: u64 = 7 * 24 * 3600;
/// The page size of a raw page file when none is given (the CLI's `--page-size` default).
const DEFAULT_PAGE: usize = zmem_pages::DEFAULT_PAGE_SIZE;
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
        let page_size = count("page_size", page_size, DEFAULT_PAGE as u64, 1, MAX_PAGE)?;
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
        let page_size = count("page_size", page_size, DEFAULT_PAGE as u64, 1, MAX_PAGE)?;
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
    #[pyo3(signature = (kind = None, pages = None, page_size = None, seed = None))]
    fn generate(
        py: Python<'_>,
        kind: Option<String>,
        pages: Option<&Bound<'_, PyAny>>,
        page_size: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // None: the request's own default (one place for them: the request's `Default`).
        let d = GenerateRequest::default();
        let req = GenerateRequest {
            kind: kind.unwrap_or(d.kind),
            pages: count("pages", pages, d.pages as u64, 0, u64::MAX)?,
            page_size: count("page_size", page_size, d.page_size as u64, 1, MAX_PAGE)?,
            seed: count("seed", seed, d.seed, 0, u64::MAX)?,
        };
        req.validate().map_err(arg_err)?;
        let set = py.detach(|| req.run()).map_err(lab_err)?;
        Ok(Self { set, label: format!("generated {} set (seed {})", req.kind, req.seed) })
    }

    /// The built-in page set the CLI runs on when given no file.
    #[staticmethod]
    #[pyo3(signature = (page_size = None))]
    fn builtin(page_size: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let page_size = count("page_size", page_size, DEFAULT_PAGE as u64, 1, MAX_PAGE)?;
        let set = builtin::default_set_with(page_size).map_err(workload_err)?;
        Ok(Self { set, label: "built-in set".into() })
    }

    /// Captures live memory, as `zmem capture` (root needed for other users' processes): the
    /// resident anonymous pages of `pids`, of every process (`all`), of a cgroup's processes,
    /// or the pages a zram device stores (`zram="/dev/zramN"`, read with O_DIRECT; at most
    /// `max_pages` of them, a random sample). A capture that got no page is a ValueError saying
    /// why each process was skipped.
    #[staticmethod]
    #[pyo3(signature = (pids = None, all = false, cgroup = None, zram = None, max_pages = None))]
    fn capture(
        py: Python<'_>,
        pids: Option<Vec<Bound<'_, PyAny>>>,
        all: bool,
        cgroup: Option<PathBuf>,
        zram: Option<PathBuf>,
        max_pages: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let req = CaptureRequest {
            pids: pids
                .unwrap_or_default()
                .iter()
                .map(|p| count("pids", Some(p), 0, 1, u32::MAX.into()))
                .collect::<PyResult<_>>()?,
            all,
            cgroup,
            zram,
            max_pages: max_pages
                .map(|n| count("max_pages", Some(n), 0, 1, u64::MAX))
                .transpose()?,
        };
        req.validate().map_err(arg_err)?;
        let captured = py.detach(|| req.run(&mut |_| {}, &mut |_, _| {})).map_err(lab_err)?;
        let label = match (&req.zram, &captured.summary) {
            (Some(dev), _) => dev.display().to_string(),
            (None, summary) => summary.to_string(),
        };
        Ok(Self { set: captured.set, label })
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
    // None: the request's own default (one place for them: the request's `Default`).
    let d = CompBenchRequest::default();
    let min_time_ms: u64 =
        count("min_time_ms", min_time_ms, d.min_time.as_millis() as u64, 0, MAX_SECS * 1000)?;
    let req = CompBenchRequest {
        algos: algos.unwrap_or_default().iter().map(|s| algo_spec(s)).collect::<Result<_, _>>()?,
        page_size: pages.set.page_size(),
        min_time: Duration::from_millis(min_time_ms),
    };
    let p: &PageSet = &pages;
    let rows = py.detach(|| req.run(&[&p.set], &NoProgress)).map_err(lab_err)?;
    json(&rows)
}

/// `zmem zram --json`: the pages through one zram device.
#[pyfunction]
#[pyo3(signature = (pages, algo = None, params = None, pool = None, threads = None, recomp = None, recompress = None))]
#[allow(clippy::too_many_arguments)]
fn zram_run(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    algo: Option<String>,
    params: Option<String>,
    pool: Option<String>,
    threads: Option<&Bound<'_, PyAny>>,
    recomp: Option<Vec<String>>,
    recompress: Option<String>,
) -> PyResult<String> {
    let d = ZramRequest::default();
    let req = ZramRequest {
        algo: algo.as_deref().map(algo_spec).transpose()?.unwrap_or(d.algo),
        params,
        pool: pool.unwrap_or(d.pool),
        page_size: pages.set.page_size(),
        threads: count("threads", threads, d.threads as u64, 1, MAX_THREADS)?,
        recomp: recomp.unwrap_or_default(),
        recompress,
    };
    req.validate().map_err(arg_err)?;
    let p: &PageSet = &pages;
    let r = py.detach(|| req.run(&p.set, &NoProgress)).map_err(lab_err)?;
    ZramRequest::check(&r).map_err(|e| Error::new_err(e.to_string()))?;
    json(&r)
}

/// A `ram` value: a byte count, or text in the kernel's memparse syntax.
fn ram_bytes(ram: &Bound<'_, PyAny>) -> PyResult<u64> {
    if ram.is_instance_of::<pyo3::types::PyInt>() {
        return count("ram", Some(ram), 0, 0, u64::MAX);
    }
    let text: String =
        ram.extract().map_err(|_| value_err("ram: expected bytes as an int or a size string"))?;
    zmem_lab::parse_ram(&text).map_err(arg_err)
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
#[pyo3(signature = (pages, trace, ram, swap = None, algo = None, pool = None, max_pool_percent = None, accept_threshold_percent = None, shrinker = false, reject_incompressible = false, no_writeback = false, swap_dir = None, swap_device = None, swap_in_memory = false, readahead = None, page_cluster = None))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    trace: PathBuf,
    ram: &Bound<'_, PyAny>,
    swap: Option<&str>,
    algo: Option<String>,
    pool: Option<String>,
    max_pool_percent: Option<&Bound<'_, PyAny>>,
    accept_threshold_percent: Option<&Bound<'_, PyAny>>,
    shrinker: bool,
    reject_incompressible: bool,
    no_writeback: bool,
    swap_dir: Option<PathBuf>,
    swap_device: Option<&str>,
    swap_in_memory: bool,
    readahead: Option<&str>,
    page_cluster: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    // None: the request's own default (one place for them: `ReplayRequest::default()`).
    let d = ReplayRequest::default();
    let req = ReplayRequest {
        ram: ram_bytes(ram)?,
        swap: match swap {
            Some(s) => s.parse().map_err(|e| value_err(format!("swap: {e}")))?,
            None => d.swap,
        },
        algo: algo.as_deref().map(algo_spec).transpose()?.unwrap_or(d.algo),
        pool: pool.unwrap_or(d.pool),
        page_size: pages.set.page_size(),
        max_pool_percent: count(
            "max_pool_percent",
            max_pool_percent,
            d.max_pool_percent.into(),
            0,
            u32::MAX.into(),
        )?,
        accept_threshold_percent: count(
            "accept_threshold_percent",
            accept_threshold_percent,
            d.accept_threshold_percent.into(),
            0,
            u32::MAX.into(),
        )?,
        shrinker,
        reject_incompressible,
        no_writeback,
        swap_dir,
        swap_in_memory,
        swap_device: match swap_device {
            Some(s) => s.parse().map_err(|e| value_err(format!("swap_device: {e}")))?,
            None => d.swap_device,
        },
        readahead: readahead
            .map(|r| r.parse().map_err(|e| value_err(format!("readahead: {e}"))))
            .transpose()?,
        page_cluster: page_cluster.map(|v| count("page_cluster", Some(v), 0, 0, 31)).transpose()?,
    };
    req.validate().map_err(arg_err)?;
    let device = py.detach(|| req.device()).map_err(lab_err)?;
    let cfg = req.config(device).map_err(arg_err)?;
    let accesses = load_trace(py, &trace)?;
    let p: &PageSet = &pages;
    let r =
        py.detach(|| ReplayRequest::run(&cfg, &p.set, &accesses, &NoProgress)).map_err(lab_err)?;
    ReplayRequest::check(&r).map_err(|e| Error::new_err(e.to_string()))?;
    json(&r)
}

/// `zmem study allocators --json`: zsmalloc, zbud and z3fold under zswap.
#[pyfunction]
#[pyo3(signature = (pages, trace = None, algo = None, rounds = None, as_is = false, ram = None, max_pool_percent = None))]
#[allow(clippy::too_many_arguments)]
fn study_allocators(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    trace: Option<PathBuf>,
    algo: Option<String>,
    rounds: Option<&Bound<'_, PyAny>>,
    as_is: bool,
    ram: Option<&Bound<'_, PyAny>>,
    max_pool_percent: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let d = StudyRequest::default();
    let req = StudyRequest {
        algo: algo.as_deref().map(algo_spec).transpose()?.unwrap_or(d.algo),
        page_size: pages.set.page_size(),
        rounds: count("rounds", rounds, d.rounds as u64, 1, zmem_lab::request::MAX_ROUNDS as u64)?,
        as_is,
        ram: ram.map(ram_bytes).transpose()?,
        max_pool_percent: count(
            "max_pool_percent",
            max_pool_percent,
            d.max_pool_percent.into(),
            0,
            u32::MAX.into(),
        )?,
    };
    req.config().map_err(arg_err)?;
    let accesses = trace.as_ref().map(|t| load_trace(py, t)).transpose()?;
    let p: &PageSet = &pages;
    let rows = py.detach(|| req.run(&p.set, accesses.as_deref(), &NoProgress)).map_err(lab_err)?;
    StudyRequest::check(&rows).map_err(|e| Error::new_err(e.to_string()))?;
    json(&rows)
}

/// Each argument of `job` (`zmem JOB`: `lab`, `zram`, `replay`, `study allocators`,
/// `comp-bench`, `capture`, `gen`) that has a default, with that default as `zmem JOB --help` states
/// it: the request's own, which a keyword argument left at None takes.
#[pyfunction]
fn defaults(job: &str) -> PyResult<std::collections::BTreeMap<String, String>> {
    zmem_lab::request::defaults(job)
        .map(|d| d.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        .ok_or_else(|| {
            value_err(format!("job {job:?}: one of {}", zmem_lab::request::JOBS.join(", ")))
        })
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
    let swap_device = match swap_device {
        Some(text) => {
            lab_mod::parse_swap_device(text).map_err(|e| value_err(format!("swap_device: {e}")))?
        }
        None => d.swap_device.clone(),
    };
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
    let outputs = zmem_render::LabOutputs { apply_script, undo_script, dir: output };
    zmem_render::write_lab_outputs(&report, &outputs).map_err(|e| PyOSError::new_err(e.to_string()))
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
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    Ok(())
}
