//! node_exporter's textfile collector: the exposition written to FILE atomically (a temporary
//! file in the same directory, synced, then renamed over FILE), so the collector never reads a
//! half-written file. node_exporter reads only `*.prom` files there.

use std::io::Write;
use std::path::Path;

use crate::ExporterError;

/// Writes `text` to `path` atomically.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), ExporterError> {
    // Errors name the file the user gave, never the temporary one beside it.
    let io = |e: std::io::Error| ExporterError::Io(format!("{}: {e}", path.display()));
    let name = path
        .file_name()
        .ok_or_else(|| ExporterError::Input(format!("{}: not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // A dot name: node_exporter's textfile collector ignores it (it reads *.prom only).
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
