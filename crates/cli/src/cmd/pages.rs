//! Loading the pages a command works on. Replaced by zmem-workload's page sets when they land.

use std::path::PathBuf;

use anyhow::{Context, bail};

#[derive(Debug)]
pub struct Pages(Vec<u8>);

impl Pages {
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

pub fn load(files: &[PathBuf], _page_size: usize) -> anyhow::Result<Vec<Pages>> {
    if files.is_empty() {
        bail!("no input files given");
    }
    files
        .iter()
        .map(|f| std::fs::read(f).map(Pages).with_context(|| format!("reading {}", f.display())))
        .collect()
}
