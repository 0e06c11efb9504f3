//! Reading and writing single sysfs files, with errors that name the file.
//!
//! Writes never create a file: a path the kernel did not make is an error (ENOENT), in sysfs as in
//! the fake trees of the tests, so a wrong path cannot pass unnoticed.

use std::io::Write;
use std::path::Path;
use std::str::FromStr;

use crate::KernelError;

/// The file's content, trimmed.
pub(crate) fn read(path: &Path) -> Result<String, KernelError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| KernelError::io(path, e))
}

/// The file's content as a number.
pub(crate) fn read_num<T: FromStr>(path: &Path) -> Result<T, KernelError> {
    let s = read(path)?;
    s.parse().map_err(|_| KernelError::Invalid(format!("{}: not a number: {s:?}", path.display())))
}

/// Writes `value` to an existing file in one `write` (what sysfs stores act on).
pub(crate) fn write(path: &Path, value: impl std::fmt::Display) -> Result<(), KernelError> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| KernelError::io(path, e))?;
    f.write_all(value.to_string().as_bytes()).map_err(|e| KernelError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_writes_create_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("n");
        let e = write(&p, 1).unwrap_err().to_string();
        assert!(e.contains(&*p.to_string_lossy()), "{e}");
        assert!(!p.exists());
        std::fs::write(&p, "12x\n").unwrap();
        let e = read_num::<u64>(&p).unwrap_err().to_string();
        assert!(e.contains(&*p.to_string_lossy()) && e.contains("12x"), "{e}");
        write(&p, 7).unwrap();
        assert_eq!(read_num::<u64>(&p).unwrap(), 7);
    }
}
