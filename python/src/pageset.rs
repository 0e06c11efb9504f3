//! `zmem.PageSet`: page sets from files, bytes, NumPy, the generator and live capture.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};
use zmem_lab::{CaptureRequest, GenerateRequest};
use zmem_pages::{Compression, PageSet as Pages, ReadOptions, builtin};

use crate::args::{DEFAULT_PAGE, MAX_PAGE, arg_err, count, lab_err, value_err, workload_err};

/// A set of equal-sized pages, with optional per-page and per-set metadata: a page-set file (any
/// format `zmem` reads), a capture, a generated set, or bytes from NumPy.
#[pyclass(module = "zmem", name = "PageSet", frozen)]
#[derive(Debug)]
pub struct PageSet {
    pub(crate) set: Pages,
    /// What the set is, for the lab's `source.detail` (the path, as the CLI says it).
    pub(crate) label: String,
}

impl PageSet {
    pub(crate) fn bytes(&self) -> &[u8] {
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
        req.validate().map_err(|e| match e.arg {
            // The request as a whole names nothing: said with the arguments that name something.
            "" => value_err("nothing to capture: give pids, all, cgroup or zram"),
            _ => arg_err(e),
        })?;
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
