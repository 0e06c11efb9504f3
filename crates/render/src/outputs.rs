//! The lab's files, written in one place for both front doors (`zmem lab --apply-script
//! --undo-script --output`, `zmem.lab(apply_script=, undo_script=, output=)`): the script that
//! applies the decision (with the dictionary it needs beside it, never inside it), the one that
//! undoes it, and report.html with report.json.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use zmem_lab::LabReport;

/// Where a lab run's files go; each `None` is not written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LabOutputs {
    /// The shell script that applies the decision (nothing is run).
    pub apply_script: Option<PathBuf>,
    /// The shell script that undoes what the apply script changed.
    pub undo_script: Option<PathBuf>,
    /// A directory for report.html and report.json (made if missing).
    pub dir: Option<PathBuf>,
}

/// A file that could not be written, and why.
#[derive(Debug)]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Why the lab's files were not all written: a file, or an apply script zmem refuses to write
/// (a value from the page set or the machine that breaks its grammar; nothing is written then).
#[derive(Debug)]
pub enum OutputError {
    Write(WriteError),
    Script(crate::script::ScriptError),
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Write(e) => e.fmt(f),
            Self::Script(e) => write!(f, "no apply script written: {e}"),
        }
    }
}

impl std::error::Error for OutputError {
    /// The write's own source (its I/O error); none for a script, whose words the message
    /// holds already (anyhow's `{:#}` would print them twice).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Write(e) => std::error::Error::source(e),
            Self::Script(_) => None,
        }
    }
}

impl From<WriteError> for OutputError {
    fn from(e: WriteError) -> Self {
        Self::Write(e)
    }
}

fn write(path: &Path, text: &str) -> Result<(), WriteError> {
    std::fs::write(path, text).map_err(|source| WriteError { path: path.to_path_buf(), source })
}

/// Writes `data` (memory contents: the dictionary) to `path`, mode 0600 whatever the umask:
/// into a fresh file of ours beside it (`O_CREAT|O_EXCL`, so never through a planted file or
/// link), then renamed over `path`. The one place such a file is written here.
fn write_private(path: &Path, data: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_path_buf(), source };
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(err)?;
    let done =
        f.write_all(data).and_then(|()| f.sync_all()).and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done.map_err(err)
}

/// Writes the files `out` names for report `r` and returns the JSON document (what `--json`
/// prints and `zmem.lab` returns), rendered once for the file and the caller. An apply script
/// that cannot be written safely is refused before any file is written.
pub fn write_lab_outputs(r: &LabReport, out: &LabOutputs) -> Result<String, OutputError> {
    if let Some(path) = &out.apply_script {
        let script = crate::render_apply_script(r).map_err(OutputError::Script)?;
        if let Some(dict) = crate::decision::dictionary(r) {
            write_private(&path.with_file_name(crate::apply::DICT_FILE), dict)?;
        }
        write(path, &script)?;
    }
    if let Some(path) = &out.undo_script {
        write(path, &crate::decision::undo_script())?;
    }
    let json = crate::json::lab_report_text(r);
    if let Some(dir) = &out.dir {
        std::fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.clone(), source })?;
        write(&dir.join("report.html"), &crate::render_html(r))?;
        write(&dir.join("report.json"), &json)?;
    }
    Ok(json)
}
