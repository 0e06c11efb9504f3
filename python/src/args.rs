//! Python arguments in, Python exceptions out: the checks every function's keyword arguments
//! go through (a count, a number, an algorithm, a RAM size; the lab's options through the lab's
//! own table, [`lab_args`]) and the one mapping of zmem's errors onto exception classes, each
//! carrying the CLI's one-line message ([`to_py`]).

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use zmem_experiments::comp_bench::AlgoSpec;
use zmem_kernel::KernelError;
use zmem_lab::LabError;
use zmem_lab::request::{LAB_OPTIONS, LabArgs, LabOption, ValueKind, lab_option};
use zmem_pages::PagesError;
use zmem_sim::SimError;

create_exception!(
    zmem,
    Error,
    PyException,
    "A zmem operation failed on valid arguments: corrupt input, an engine that refused, a \
     configuration that read pages back wrong. The message is the CLI's one line."
);

/// Why a call failed, before it becomes a Python exception: the class to raise and the line.
pub(crate) enum Failure {
    /// The caller's argument is wrong (ValueError).
    Value(String),
    /// The operating system refused (OSError).
    Os(String),
    /// Anything else (`zmem.Error`).
    Other(String),
}

impl Failure {
    /// The same class with `line` as its message.
    pub(crate) fn with_message(self, line: String) -> Self {
        match self {
            Failure::Value(_) => Failure::Value(line),
            Failure::Os(_) => Failure::Os(line),
            Failure::Other(_) => Failure::Other(line),
        }
    }
}

/// The error and its causes on one line, as the CLI prints them (anyhow's `{:#}`: each
/// `source()` after a `: `).
pub(crate) fn one_line(e: &dyn std::error::Error) -> String {
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
pub(crate) fn innermost(e: &PagesError) -> &PagesError {
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
pub(crate) fn to_py(f: Failure) -> PyErr {
    match f {
        Failure::Value(m) => PyValueError::new_err(m),
        Failure::Os(m) => PyOSError::new_err(m),
        Failure::Other(m) => Error::new_err(m),
    }
}

pub(crate) fn lab_err(e: impl Into<LabError>) -> PyErr {
    to_py(e.into().into())
}

pub(crate) fn workload_err(e: PagesError) -> PyErr {
    to_py(e.into())
}

/// An algorithm argument (`"zstd"`, `"zstd:3"`, `"zstd:level=3,dict=F"`), checked at once: an
/// unknown name or parameter is a ValueError naming the argument.
pub(crate) fn algo_spec(text: &str) -> PyResult<AlgoSpec> {
    text.parse::<AlgoSpec>().map_err(|e| value_err(format!("algo {text:?}: {e}")))
}

pub(crate) fn value_err(m: impl Into<String>) -> PyErr {
    PyValueError::new_err(m.into())
}

/// A request's refusal of an argument, in Python's words (`pool='slab': ...`).
pub(crate) fn arg_err(e: zmem_lab::ArgError) -> PyErr {
    value_err(e.keyword())
}

/// The most threads a `threads=` may ask for (the CLI's `--threads` bound).
pub(crate) const MAX_THREADS: u64 = zmem_lab::request::MAX_THREADS;
/// The longest a duration argument may be, in seconds (a week, as the CLI's).
pub(crate) const MAX_SECS: u64 = zmem_lab::request::MAX_SECS;
/// The page size of a raw page file when none is given (the CLI's `--page-size` default).
pub(crate) const DEFAULT_PAGE: usize = zmem_pages::DEFAULT_PAGE_SIZE;
/// The largest page size (`zmem_pages::format::MAX_PAGE_SIZE`).
pub(crate) const MAX_PAGE: u64 = zmem_pages::format::MAX_PAGE_SIZE as u64;

/// A count argument `name`: an int in `min..=max`, else a ValueError naming it (never Python's
/// OverflowError, whatever the size of the int), or a TypeError for what is not an int.
pub(crate) fn count<T: TryFrom<u64>>(
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
pub(crate) fn number(name: &str, v: Option<&Bound<'_, PyAny>>, default: f64) -> PyResult<f64> {
    use pyo3::types::{PyFloat, PyInt};
    let Some(v) = v else { return Ok(default) };
    if !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("{name}: expected a number")));
    }
    let text = v.str()?.to_string();
    v.extract::<f64>().map_err(|_| value_err(format!("{name}={text}: too large a number")))
}

/// The lab's options given as keyword arguments, each set through the lab's table
/// (`zmem_lab::request::LAB_OPTIONS`) from its text, as the CLI sets its flags: the same
/// parser, the same reason for a bad value. A keyword the lab has no option for is a TypeError
/// naming it; None is the option's default (not given).
pub(crate) fn lab_args(options: Option<&Bound<'_, PyDict>>) -> PyResult<LabArgs> {
    lab_args_of("lab", options)
}

/// [`lab_args`] for the function `func` (its name in a TypeError).
pub(crate) fn lab_args_of(func: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<LabArgs> {
    let mut given = LabArgs::default();
    let Some(options) = options else { return Ok(given) };
    for key in options.keys() {
        let name: String = key.extract()?;
        if lab_option(&name).is_none() {
            return Err(PyTypeError::new_err(format!(
                "{func}() got an unexpected keyword argument '{name}'"
            )));
        }
    }
    // The table's order, as the CLI's: the first bad value is the same in both doors.
    for o in LAB_OPTIONS {
        let Some(v) = options.get_item(o.name)? else { continue };
        if let Some(text) = option_text(o, &v)? {
            given.set(o, &text).map_err(arg_err)?;
        }
    }
    Ok(given)
}

/// A lab option's value as the text its parser reads (an int or float as `str()` writes it);
/// None for None or a flag given False. A value of another type is a TypeError naming it.
fn option_text(o: &LabOption, v: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
    if v.is_none() {
        return Ok(None);
    }
    let int = v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>();
    let fits = match o.kind {
        ValueKind::Flag => v.is_instance_of::<PyBool>(),
        ValueKind::Count => int,
        ValueKind::Number => int || v.is_instance_of::<PyFloat>(),
        ValueKind::CountOrWord => int || v.is_instance_of::<PyString>(),
        ValueKind::Text => v.is_instance_of::<PyString>(),
        ValueKind::Path => v.extract::<std::path::PathBuf>().is_ok(),
    };
    if !fits {
        return Err(PyTypeError::new_err(format!(
            "{}: expected {}, got {}",
            o.name,
            o.kind.python(),
            v.get_type().name()?
        )));
    }
    match o.kind {
        ValueKind::Flag => Ok(v.is_truthy()?.then(|| "true".to_string())),
        ValueKind::Path => {
            let p: std::path::PathBuf = v.extract()?;
            let text = p.to_str().ok_or_else(|| value_err(format!("{}: not UTF-8", o.name)))?;
            Ok(Some(text.to_string()))
        }
        _ => Ok(Some(v.str()?.to_string())),
    }
}

pub(crate) fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| Error::new_err(format!("encoding JSON: {e}")))
}
