//! The files a command works on: page sets to load (page-set files, plain or zstd, and raw page
//! files alike, or the built-in page set when no file is given) and to write, and access traces.

use std::path::{Path, PathBuf};

use anyhow::bail;
use zmem_pages::access::Access;
use zmem_pages::{Compression, PageSet, ReadOptions, builtin};

/// Reads each file as a page set (raw files are cut into `page_size` pages); no files: the
/// built-in set. A page-set file whose page size is not `page_size` is an error, not a silent
/// change of the experiment.
pub fn load(files: &[PathBuf], page_size: usize) -> anyhow::Result<Vec<PageSet>> {
    if files.is_empty() {
        return Ok(vec![builtin::default_set_with(page_size)?]);
    }
    let opts = ReadOptions { page_size, ..ReadOptions::default() };
    files
        .iter()
        .map(|f| {
            // Library errors name the file already.
            let set = map(f, &opts)?;
            if set.page_size() != page_size {
                bail!(
                    "{} holds {}-byte pages; run with --page-size {}",
                    f.display(),
                    set.page_size(),
                    set.page_size()
                );
            }
            Ok(set)
        })
        .collect()
}

/// Maps a page file the user named ([`PageSet::map`]): pages are read in place, so a file larger
/// than the memory left can still be walked, and loading costs no copy.
#[allow(unsafe_code)]
pub fn map(path: &Path, opts: &ReadOptions) -> anyhow::Result<PageSet> {
    // SAFETY: not guaranteed, accepted. The file is the user's: zmem never writes a file while
    // it reads it, but nothing stops another process (or a second `zmem capture`/`export` onto
    // the same name, which truncates it first) from changing it while it is mapped. zmem
    // accepts that, as ripgrep and other tools that map their inputs do: a truncation surfaces
    // as `SIGBUS` on the next read of a page past the new end, which kills the process with no
    // result printed; a rewrite in place changes bytes under a `&[u8]` (undefined behaviour by
    // Rust's rules; in practice the run measures the new bytes rather than the checked ones).
    // Both need a concurrent writer on the input, which is an error of use.
    Ok(unsafe { PageSet::map(path, opts) }?)
}

/// The compression for an output page set: `--zstd LEVEL`, else zstd level 3 for a name ending
/// `.zst`.
pub fn compression(output: &Path, level: Option<i32>) -> Compression {
    match level {
        Some(l) => Compression::Zstd(l),
        None if output.extension().is_some_and(|e| e == "zst") => Compression::Zstd(3),
        None => Compression::None,
    }
}

/// Reads a trace file as the accesses a replay takes (the loader Python's door calls too).
pub fn load_trace(path: &Path) -> anyhow::Result<Vec<Access>> {
    // Library errors name the file already.
    Ok(zmem_pages::access::load_trace(path)?)
}
