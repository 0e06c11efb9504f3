//! The jobs that read or drive the running kernel, or write a file of their own: `zmem.status`,
//! `zmem.dict_train`, `zmem.validate_replay` and `zmem.validate_lab`, each mapping its keyword
//! arguments onto the job's request (zmem-lab's `StatusRequest` and `DictTrainRequest`,
//! zmem-validate's `ValidateReplayRequest` and `ValidateLabRequest`; `None`: the request's
//! default) and returning the CLI's `--json` as text, with what the CLI prints on stderr
//! (debugfs notes) as a list beside it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;
use zmem_lab::NoProgress;
use zmem_lab::request::{DictTrainRequest, MAX_SAMPLES, StatusRequest};
use zmem_validate::request::{
    MAX_KERNEL_RUNS, MAX_TIMEOUT_SECS, PAGE_SIZE, Player, ValidateLabRequest, ValidateReplayRequest,
};

use crate::args::{Error, algo_spec, arg_err, count, json, lab_err, number, value_err};
use crate::pageset::PageSet;

/// Runs `f` on a thread of its own with the GIL released, while this thread checks for
/// Python's signals: Ctrl-C sets `f`'s stop flag, so a kernel run ends through its error path
/// (which removes the cgroup, swap area and device it made), and then raises
/// KeyboardInterrupt. The CLI's SIGINT/SIGTERM handler does the same.
fn interruptible<R: Send>(py: Python<'_>, f: impl FnOnce(&AtomicBool) -> R + Send) -> PyResult<R> {
    let stop = AtomicBool::new(false);
    let mut interrupted: Option<PyErr> = None;
    let joined = std::thread::scope(|s| {
        let worker = s.spawn(|| f(&stop));
        while !worker.is_finished() {
            py.detach(|| std::thread::sleep(Duration::from_millis(20)));
            if interrupted.is_none()
                && let Err(e) = py.check_signals()
            {
                stop.store(true, Ordering::Relaxed);
                interrupted = Some(e);
            }
        }
        worker.join()
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    joined.map_err(|_| Error::new_err("a worker thread panicked"))
}

/// The `zmem` binary the kernel's player runs as (`zmem validate play`): `player`, else
/// `$ZMEM_BIN`, else `zmem` on PATH. Python's own program is the interpreter, whose charge
/// in the player's cgroup would be many times the `zmem` binary's the budgets are made for.
fn player(player: Option<PathBuf>) -> PyResult<Player> {
    let found = player.or_else(|| std::env::var_os("ZMEM_BIN").map(PathBuf::from)).or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|d| d.join("zmem")).find(|p| executable(p))
    });
    match found {
        Some(p) if executable(&p) => Ok(Player::Zmem(p)),
        Some(p) => Err(PyFileNotFoundError::new_err(format!(
            "player {}: not an executable file (the zmem binary)",
            p.display()
        ))),
        None => Err(PyFileNotFoundError::new_err(
            "player: the kernel's side runs the zmem binary as its player (`zmem validate \
             play`): none on PATH; give player= or set ZMEM_BIN",
        )),
    }
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A RAM budget: None (the request's default), a byte count, or a memparse size string.
fn ram(ram: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    ram.map(crate::ram_bytes).transpose()
}

/// Validate runs on the kernel's page size: a PageSet of another is refused by name.
fn validate_pages(pages: &PageSet) -> PyResult<&[u8]> {
    if pages.set.page_size() != PAGE_SIZE {
        return Err(value_err(format!(
            "pages: validation runs on {PAGE_SIZE}-byte pages; these are {} bytes",
            pages.set.page_size()
        )));
    }
    Ok(pages.bytes())
}

fn timeout(v: Option<&Bound<'_, PyAny>>, default: Duration) -> PyResult<Duration> {
    let secs: u64 = count("timeout", v, default.as_secs(), 0, MAX_TIMEOUT_SECS)?;
    Ok(Duration::from_secs(secs))
}

/// `zmem validate replay --json`: the trace over the pages on the live kernel beside zmem's
/// replay.
#[pyfunction]
#[pyo3(signature = (pages, trace, ram = None, algo = None, timeout = None, kernel_runs = None, stale_stats = false, player = None, stale_stats_from_reclaim = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn validate_replay(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    trace: PathBuf,
    ram: Option<&Bound<'_, PyAny>>,
    algo: Option<String>,
    timeout: Option<&Bound<'_, PyAny>>,
    kernel_runs: Option<&Bound<'_, PyAny>>,
    stale_stats: bool,
    player: Option<PathBuf>,
    stale_stats_from_reclaim: bool,
) -> PyResult<String> {
    let d = ValidateReplayRequest::default();
    let req = ValidateReplayRequest {
        ram: self::ram(ram)?,
        algo: algo.as_deref().map(algo_spec).transpose()?.unwrap_or(d.algo),
        timeout: self::timeout(timeout, d.timeout)?,
        kernel_runs: count("kernel_runs", kernel_runs, d.kernel_runs, 1, MAX_KERNEL_RUNS)?,
        stale_stats,
        stale_stats_from_reclaim,
        player: self::player(player)?,
    };
    req.check().map_err(arg_err)?;
    let bytes = validate_pages(&pages)?;
    let accesses = crate::load_trace(py, &trace)?;
    let v =
        interruptible(py, |stop| req.run(bytes, &accesses, stop, &NoProgress))?.map_err(lab_err)?;
    ValidateReplayRequest::verified(&v).map_err(|e| Error::new_err(e.to_string()))?;
    json(&v)
}

/// `zmem validate lab --json`: each candidate the kernel can run, on the live kernel beside the
/// lab's prediction; with the debugfs notes.
#[pyfunction]
#[pyo3(signature = (pages, trace = None, ram = None, kernel_runs = None, primary = None, timeout = None, zswap = None, swap_dir = None, mount_debugfs = false, player = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn validate_lab(
    py: Python<'_>,
    pages: PyRef<'_, PageSet>,
    trace: Option<PathBuf>,
    ram: Option<&Bound<'_, PyAny>>,
    kernel_runs: Option<&Bound<'_, PyAny>>,
    primary: Option<String>,
    timeout: Option<&Bound<'_, PyAny>>,
    zswap: Option<Vec<String>>,
    swap_dir: Option<PathBuf>,
    mount_debugfs: bool,
    player: Option<PathBuf>,
) -> PyResult<(String, Vec<String>)> {
    let d = ValidateLabRequest::default();
    let zswap = zswap
        .unwrap_or_default()
        .iter()
        .map(|s| {
            zmem_validate::zswap_params::parse(s).map_err(|e| value_err(format!("zswap={s}: {e}")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let req = ValidateLabRequest {
        ram: self::ram(ram)?,
        kernel_runs: count("kernel_runs", kernel_runs, d.kernel_runs, 1, MAX_KERNEL_RUNS)?,
        primary: primary.unwrap_or(d.primary),
        timeout: self::timeout(timeout, d.timeout)?,
        zswap,
        swap_dir: swap_dir.unwrap_or(d.swap_dir),
        mount_debugfs,
        player: self::player(player)?,
    };
    req.check().map_err(arg_err)?;
    py.detach(|| req.refuse_foreign_swaps()).map_err(lab_err)?;
    let bytes = validate_pages(&pages)?;
    let accesses = trace.as_ref().map(|t| crate::load_trace(py, t)).transpose()?;
    let (v, notes) =
        interruptible(py, |stop| req.run(bytes, accesses.as_deref(), stop, &NoProgress))?
            .map_err(lab_err)?;
    ValidateLabRequest::verified(&v).map_err(|e| Error::new_err(e.to_string()))?;
    Ok((json(&v)?, notes))
}

/// `zmem dict train --json`: a dictionary trained on the pages (none and `live`: this machine's
/// processes' memory, `--live`), written to `output`, measured.
#[pyfunction]
#[pyo3(signature = (pages, algo, output, size = None, samples = None, level = None, holdout = false, live = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn dict_train(
    py: Python<'_>,
    pages: Option<PyRef<'_, PageSet>>,
    algo: String,
    output: PathBuf,
    size: Option<&Bound<'_, PyAny>>,
    samples: Option<&Bound<'_, PyAny>>,
    level: Option<&Bound<'_, PyAny>>,
    holdout: bool,
    live: bool,
) -> PyResult<String> {
    if pages.is_some() == live {
        return Err(value_err("give pages, or live=True, not both and not neither"));
    }
    let d = DictTrainRequest::default();
    let size = match size {
        None => d.size,
        Some(v) if v.is_instance_of::<pyo3::types::PyInt>() => {
            count("size", Some(v), 0, 0, u64::MAX)?
        }
        Some(v) => {
            let text: String = v
                .extract()
                .map_err(|_| value_err("size: expected bytes as an int or a size string"))?;
            zmem_lab::parse_size(&text).map_err(|e| value_err(format!("size: {}", e.msg)))?
        }
    };
    let level: Option<i32> = match level {
        None => None,
        Some(v) => {
            let n = number("level", Some(v), 0.0)?;
            if n.fract() != 0.0 || n < f64::from(i32::MIN) || n > f64::from(i32::MAX) {
                return Err(value_err(format!("level={n}: a whole number")));
            }
            Some(n as i32)
        }
    };
    let req = DictTrainRequest {
        algo,
        size,
        samples: count("samples", samples, d.samples as u64, 1, MAX_SAMPLES as u64)?,
        level,
        holdout,
        page_size: pages.as_ref().map_or(d.page_size, |p| p.set.page_size()),
        output,
    };
    req.check().map_err(arg_err)?;
    let r = match &pages {
        Some(p) => {
            let p: &PageSet = p;
            py.detach(|| req.run(p.bytes(), &NoProgress))
        }
        None => py.detach(|| req.run_live(&NoProgress)),
    }
    .map_err(lab_err)?;
    DictTrainRequest::verified(&r).map_err(|e| Error::new_err(e.to_string()))?;
    json(&r)
}

/// `zmem status --json`: zram, zswap, the swap areas and the rates; with the debugfs notes.
#[pyfunction]
#[pyo3(signature = (interval = None, mount_debugfs = false))]
pub(crate) fn status(
    py: Python<'_>,
    interval: Option<&Bound<'_, PyAny>>,
    mount_debugfs: bool,
) -> PyResult<(String, Vec<String>)> {
    let d = StatusRequest::default();
    let req = StatusRequest { interval: number("interval", interval, d.interval)?, mount_debugfs };
    req.check().map_err(arg_err)?;
    let (s, notes) = py.detach(|| req.run()).map_err(lab_err)?;
    Ok((json(&s)?, notes))
}
