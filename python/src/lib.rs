//! `zmem._native`: the Python bindings of zmem's page sets and lab engines.
//!
//! Thin by design, like the `zmem` binary: every function maps its keyword arguments onto the
//! job's request in zmem-lab (`zmem_lab::request`), the one the CLI's flags make (`None`: the
//! request's default; this module states none of its own), makes the request's call, and
//! returns the result as the JSON text the CLI's `--json` prints (the same serde structs,
//! serialised by the same serde_json). The Python layer (`python/zmem/__init__.py`) turns that
//! JSON into pyarrow Tables and dicts, so a column is named exactly as the CLI's JSON field is,
//! and no engine is re-implemented here. Long work runs with the GIL released
//! ([`Python::detach`]). `args` checks the arguments and maps errors onto exceptions carrying
//! the CLI's one-line message; `pageset` is `zmem.PageSet`.

mod args;
mod kernel_jobs;
mod pageset;

use std::path::{Path, PathBuf};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use zmem_experiments::comp_bench::AlgoSpec;
use zmem_lab::{self as lab_mod, Input, LabRequest, NoProgress};
use zmem_lab::{CompBenchRequest, ReplayRequest, StudyRequest, ZramRequest};
use zmem_pages::PageSet as Pages;
use zmem_sim::replay as replay_mod;

use args::{
    Error, Failure, MAX_SECS, MAX_THREADS, algo_spec, arg_err, count, json, lab_err, number, to_py,
    value_err, workload_err,
};
use pageset::PageSet;
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

/// The trace at `path`, by the CLI's loader: its words (`reading the trace: ...`), the class
/// of the reader's error.
pub(crate) fn load_trace(py: Python<'_>, path: &Path) -> PyResult<Vec<replay_mod::Access>> {
    py.detach(|| zmem_pages::access::load_trace(path)).map_err(|e| {
        let line = args::one_line(&e);
        let f: Failure = e.0.into();
        to_py(f.with_message(line))
    })
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

/// Each argument of `job` (`zmem JOB`: every job of zmem-lab's `request::JOBS` and
/// zmem-validate's `request::JOBS`) that has a default, with that default as `zmem JOB --help`
/// states it: the request's own, which a keyword argument left at None takes.
#[pyfunction]
fn defaults(job: &str) -> PyResult<std::collections::BTreeMap<String, String>> {
    zmem_lab::request::defaults(job)
        .or_else(|| zmem_validate::request::defaults(job))
        .map(|d| d.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        .ok_or_else(|| {
            let jobs: Vec<&str> = zmem_lab::request::JOBS
                .iter()
                .chain(zmem_validate::request::JOBS)
                .copied()
                .collect();
            value_err(format!("job {job:?}: one of {}", jobs.join(", ")))
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
    // A script zmem refuses to write (a value from the page set that breaks its grammar) is a
    // ValueError; a file that could not be written an OSError.
    zmem_render::write_lab_outputs(&report, &outputs).map_err(|e| match e {
        zmem_render::OutputError::Script(e) => PyValueError::new_err(e.to_string()),
        e => PyOSError::new_err(e.to_string()),
    })
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
    m.add_function(wrap_pyfunction!(kernel_jobs::status, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::dict_train, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::validate_replay, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::validate_lab, m)?)?;
    Ok(())
}
