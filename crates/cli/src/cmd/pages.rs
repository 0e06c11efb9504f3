//! Loading the pages a command works on: page-set files (plain or zstd) and raw page files
//! alike, or the built-in page set when no file is given.

use std::path::PathBuf;

use anyhow::bail;
use zmem_workload::{PageSet, ReadOptions, builtin};

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
            let set = PageSet::map(f, &opts)?;
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
