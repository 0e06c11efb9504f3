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
use pyo3::types::PyDict;
use zmem_experiments::comp_bench::AlgoSpec;
use zmem_lab::findings::{self, Identify};
use zmem_lab::request::{LAB_OPTIONS, LabArgs};
use zmem_lab::{self as lab_mod, Input, LabRequest, NoProgress};
use zmem_lab::{CompBenchRequest, ReplayRequest, StudyRequest, ZramRequest};
use zmem_pages::PageSet as Pages;
use zmem_sim::replay as replay_mod;

use args::{
    Error, Failure, MAX_SECS, MAX_THREADS, algo_spec, arg_err, count, json, lab_err, to_py,
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
/// Bytes named `name`: an int, or a size string (`"1G"`).
fn size_bytes(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return count(name, Some(v), 0, 0, u64::MAX);
    }
    let text: String = v
        .extract()
        .map_err(|_| value_err(format!("{name}: expected bytes as an int or a size string")))?;
    zmem_lab::parse_size(&text).map_err(|e| value_err(format!("{name}: {e}")))
}

fn ram_bytes(ram: &Bound<'_, PyAny>) -> PyResult<u64> {
    if ram.is_instance_of::<pyo3::types::PyInt>() {
        return count("ram", Some(ram), 0, 0, u64::MAX);
    }
    let text: String =
        ram.extract().map_err(|_| value_err("ram: expected bytes as an int or a size string"))?;
    zmem_lab::parse_ram(&text).map_err(arg_err)
}

/// `zswap_max`: bytes as an int or a size string, or `"max"` (none, as `--zswap-max max`).
fn zswap_max_bytes(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(v) = v else { return Ok(None) };
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return count("zswap_max", Some(v), 0, 0, u64::MAX).map(Some);
    }
    let text: String = v
        .extract()
        .map_err(|_| value_err("zswap_max: expected bytes as an int, a size string or \"max\""))?;
    if text == "max" {
        return Ok(None);
    }
    zmem_lab::parse_size(&text).map(Some).map_err(|e| value_err(format!("zswap_max: {e}")))
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
#[pyo3(signature = (pages, trace, ram, swap = None, algo = None, pool = None, max_pool_percent = None, accept_threshold_percent = None, shrinker = false, reject_incompressible = false, no_writeback = false, swap_dir = None, swap_device = None, swap_in_memory = false, readahead = None, page_cluster = None, cgroup = None, zswap_max = None, watermarks = None, swappiness = None, total_ram = None, stats_flush = None))]
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
    cgroup: Option<&str>,
    zswap_max: Option<&Bound<'_, PyAny>>,
    watermarks: Option<&str>,
    swappiness: Option<&Bound<'_, PyAny>>,
    total_ram: Option<&Bound<'_, PyAny>>,
    stats_flush: Option<&str>,
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
        stats_flush: match stats_flush {
            Some(s) => s.parse().map_err(|e| value_err(format!("stats_flush: {e}")))?,
            None => d.stats_flush,
        },
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
        swappiness: swappiness.map(|v| count("swappiness", Some(v), 0, 0, 200)).transpose()?,
        cgroup: match cgroup {
            Some(c) => c.parse().map_err(|e| value_err(format!("cgroup: {e}")))?,
            None => d.cgroup,
        },
        zswap_max: zswap_max_bytes(zswap_max)?.or(d.zswap_max),
        total_ram: total_ram.map(|t| size_bytes("total_ram", t)).transpose()?,
        watermarks: watermarks
            .map(|w| w.parse().map_err(|e| value_err(format!("watermarks: {e}"))))
            .transpose()?,
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

/// `zmem lab --json`: the report (docs/lab-report.schema.json) as JSON. `options` are the
/// lab's options by their Python names (`zmem lab`'s flags with underscores), each set through
/// the lab's table as the CLI sets its flags ([`args::lab_args`]; `lab_options()` lists them).
/// The rest are this door's own: `pages` (a PageSet; None: the `source` option), `evidence` (a
/// `zmem evidence` file, judged as `zmem lab EVIDENCE` judges it: only the options that judge,
/// a measuring one refused in the CLI's words), and `apply_script`, `undo_script` and `output`,
/// which write the decision's two scripts and the HTML + JSON report as the CLI does.
#[pyfunction]
#[pyo3(signature = (pages = None, *, evidence = None, output = None, apply_script = None, undo_script = None, **options))]
#[allow(clippy::too_many_arguments)]
fn lab(
    py: Python<'_>,
    pages: Option<PyRef<'_, PageSet>>,
    evidence: Option<PathBuf>,
    output: Option<PathBuf>,
    apply_script: Option<PathBuf>,
    undo_script: Option<PathBuf>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let given = args::lab_args(options)?;
    let req = match &evidence {
        Some(path) => {
            if pages.is_some() {
                return Err(value_err("give pages or evidence, not both"));
            }
            // As `zmem lab EVIDENCE`: the options that measure were applied where it was made.
            given.check_phase(true).map_err(arg_err)?;
            let findings = read_evidence(py, path)?;
            let mut req = given.finish().map_err(arg_err)?;
            req.input = Input::Findings(Box::new(findings));
            req
        }
        None => measuring_request(given, pages.as_deref())?,
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

/// The request of a lab that measures (`lab` without evidence, `evidence`): the options, then
/// the PageSet given as its input (else the `source` option's), and a trace that must exist.
fn measuring_request(given: LabArgs, pages: Option<&PageSet>) -> PyResult<LabRequest> {
    if pages.is_some() && (given.given("source") || given.given("no_capture")) {
        return Err(value_err("give pages, or source / no_capture, not both"));
    }
    let mut req = given.finish().map_err(arg_err)?;
    if let Some(p) = pages {
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
        req.input = Input::Pages { set, label: p.label.clone() };
    }
    if let Some(t) = req.trace.as_ref().filter(|t| !t.is_file()) {
        return Err(PyOSError::new_err(format!("trace {}: no such file", t.display())));
    }
    Ok(req)
}

/// The evidence file at `path`, read and checked by the lab's reader (bounded by the read
/// ceiling): a file the system refuses is an OSError, evidence that is not (too large, not
/// evidence, findings that do not add up) a ValueError, each in the CLI's words.
fn read_evidence(py: Python<'_>, path: &Path) -> PyResult<lab_mod::Findings> {
    std::fs::File::open(path)
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
    py.detach(|| findings::read(path)).map_err(lab_err)
}

/// `zmem evidence -o OUTPUT [PAGES]`: the lab's measurements of the pages (None: the `source`
/// option's) written to `output` without the pages (JSON, mode 0600, never through a link),
/// for `lab(evidence=...)`, `zmem lab FILE` or zmem-fleet to judge. `options` are the lab's
/// options that measure ([`args::lab_args`], then `check_phase(false)`: one that judges is a
/// ValueError naming it); `pids` and `names` keep the processes' ids and names (else renumbered
/// and neutral). Returns what was written: `path`, `pages`, `codecs` (the compressors whose
/// lengths it holds), `pids`, `names`.
#[pyfunction]
#[pyo3(signature = (output, pages = None, *, pids = false, names = false, **options))]
fn evidence<'py>(
    py: Python<'py>,
    output: PathBuf,
    pages: Option<PyRef<'_, PageSet>>,
    pids: bool,
    names: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let given = args::lab_args_of("evidence", options)?;
    given.check_phase(false).map_err(arg_err)?;
    let req = measuring_request(given, pages.as_deref())?;
    let f = py.detach(|| lab_mod::measure_lab(req, &NoProgress)).map_err(lab_err)?;
    let keep = Identify { pids, names };
    let f = findings::for_file(f, keep);
    // Every failure here is the file's (a link, another user's file, the disk): an OSError.
    py.detach(|| findings::write(&f, &output))
        .map_err(|e| PyOSError::new_err(args::one_line(&e)))?;
    let d = PyDict::new(py);
    d.set_item("path", &output)?;
    d.set_item("pages", f.facts.pages())?;
    d.set_item("codecs", f.facts.lengths.iter().map(|c| c.algo.as_str()).collect::<Vec<_>>())?;
    d.set_item("pids", pids)?;
    d.set_item("names", names)?;
    Ok(d)
}

/// Whether the file at `path` is an evidence file, by its first bytes (`zmem lab FILE`'s rule,
/// `findings::is_evidence`).
#[pyfunction]
fn is_evidence(path: PathBuf) -> bool {
    findings::is_evidence(&path)
}

/// The most bytes zmem reads of one file (zmem-pages' read ceiling; `ZMEM_READ_CEILING`): what
/// zmem-fleet copies of an evidence file from object storage before the lab's reader reads it.
#[pyfunction]
fn read_ceiling() -> u64 {
    zmem_pages::limits::read_ceiling()
}

/// The lab's options checked as `lab` checks them, without running it (zmem-fleet checks its
/// lab options before it starts a task): the same TypeError or ValueError.
#[pyfunction]
#[pyo3(signature = (**options))]
fn check_lab(options: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    args::lab_args(options)?.finish().map_err(arg_err)?;
    Ok(())
}

/// The lab's options, from its one declaration (`zmem_lab::request::LAB_OPTIONS`), in `zmem lab
/// --help`'s order: per option a dict of `name`, `flag` (`--min-time-ms`), `kind` (`flag`,
/// `count`, `number`, `count_or_word`, `text`, `path`), `value_name`, `default` (as `--help`
/// states it; None where it states none), `help`, `choices`, `conflicts_with`, `live` (about
/// the machine the lab runs on: not an option of zmem-fleet) and `judges` (judges the findings:
/// the options an evidence file takes; the others measure, and `evidence` takes those).
#[pyfunction]
fn lab_options(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    LAB_OPTIONS
        .iter()
        .map(|o| {
            let d = PyDict::new(py);
            d.set_item("name", o.name)?;
            d.set_item("flag", format!("--{}", o.flag()))?;
            d.set_item("kind", o.kind.word())?;
            d.set_item("value_name", o.value_name)?;
            d.set_item("default", o.default_text())?;
            d.set_item("help", o.help())?;
            d.set_item("choices", o.choices.to_vec())?;
            d.set_item("conflicts_with", o.conflicts_with.to_vec())?;
            d.set_item("live", o.live)?;
            d.set_item("judges", o.judges)?;
            Ok(d)
        })
        .collect()
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
    m.add_function(wrap_pyfunction!(evidence, m)?)?;
    m.add_function(wrap_pyfunction!(is_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(read_ceiling, m)?)?;
    m.add_function(wrap_pyfunction!(lab_options, m)?)?;
    m.add_function(wrap_pyfunction!(check_lab, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::status, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::dict_train, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::validate_replay, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_jobs::validate_lab, m)?)?;
    Ok(())
}
