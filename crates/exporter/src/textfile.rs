//! node_exporter's textfile collector: the exposition written to FILE atomically (a temporary
//! file in the same directory, synced, then renamed over FILE), so the collector never reads a
//! half-written file. node_exporter reads only `*.prom` files there.

use std::path::Path;

use crate::ExporterError;

/// Writes `text` to `path` atomically, 0644 (metrics are for node_exporter, another user), never
/// through a link or into another user's file (zmem-files: a temporary beside it, synced and
/// renamed; its name starts with a dot, which the collector skips).
pub fn write_atomically(path: &Path, text: &str) -> Result<(), ExporterError> {
    // Errors name the file the user gave (and its directory, where that is what failed).
    zmem_files::write(path, zmem_files::Kind::Shared, text.as_bytes())
        .map_err(|e| ExporterError::Io(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("zmem.prom");
        std::fs::write(&p, "old").unwrap();
        write_atomically(&p, "zmem_x 1\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "zmem_x 1\n");
        let names: Vec<_> =
            std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["zmem.prom"]);
        let missing = d.path().join("no/such/dir.prom");
        let e = write_atomically(&missing, "x").unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", missing.display())), "{e}");
        assert!(!e.contains(".dir.prom."), "the temporary file is named: {e}");
    }
}
