//! The lab's files, written in one place for both front doors (`zmem lab --apply-script
//! --undo-script --output`, `zmem.lab(apply_script=, undo_script=, output=)`): the script that
//! applies the decision (with the dictionary it needs beside it, never inside it), the one that
//! undoes it, and report.html with report.json.

use std::io::Write;
use std::path::PathBuf;

use zmem_files::Kind;
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

/// zmem-files' refusal or failure, as the lab's files report it.
impl From<zmem_files::FileError> for WriteError {
    fn from(e: zmem_files::FileError) -> Self {
        Self { path: e.path().to_path_buf(), source: e.into_io() }
    }
}

/// Writes the files `out` names for report `r` and returns the JSON document (what `--json`
/// prints and `zmem.lab` returns), rendered once for the file and the caller. All or nothing:
/// every file is rendered and its place checked (a temporary made beside it) before any is
/// put in place, so an apply script never lands without its undo script or dictionary.
pub fn write_lab_outputs(r: &LabReport, out: &LabOutputs) -> Result<String, OutputError> {
    let json = crate::json::lab_report_text(r);
    let mut files: Vec<(PathBuf, Kind, Vec<u8>)> = Vec::new();
    if let Some(path) = &out.apply_script {
        let script = crate::render_apply_script(r).map_err(OutputError::Script)?;
        if let Some(dict) = crate::decision::dictionary(r) {
            // Memory contents: 0600, beside the script (which checks and installs it).
            files.push((
                path.with_file_name(crate::apply::DICT_FILE),
                Kind::Private,
                dict.to_vec(),
            ));
        }
        files.push((path.clone(), Kind::Script, script.into_bytes()));
    }
    if let Some(path) = &out.undo_script {
        files.push((path.clone(), Kind::Script, crate::decision::undo_script().into_bytes()));
    }
    // Every place checked and written first; a refusal drops the temporaries made so far. The
    // report directory is made only once the scripts' places passed.
    let mut pending = create_all(&files)?;
    if let Some(dir) = &out.dir {
        zmem_files::ensure_dir(dir, Kind::Shared).map_err(WriteError::from)?;
        let reports = [
            (dir.join("report.html"), Kind::Shared, crate::render_html(r).into_bytes()),
            (dir.join("report.json"), Kind::Shared, json.clone().into_bytes()),
        ];
        pending.extend(create_all(&reports)?);
    }
    for f in pending {
        f.commit().map_err(WriteError::from)?;
    }
    Ok(json)
}

/// Each file written to its temporary beside its place, none put in place yet.
fn create_all(files: &[(PathBuf, Kind, Vec<u8>)]) -> Result<Vec<zmem_files::SafeFile>, WriteError> {
    let mut pending = Vec::with_capacity(files.len());
    for (path, kind, bytes) in files {
        let mut f = zmem_files::create(path, *kind).map_err(WriteError::from)?;
        f.write_all(bytes).map_err(|source| WriteError { path: path.clone(), source })?;
        pending.push(f);
    }
    Ok(pending)
}
