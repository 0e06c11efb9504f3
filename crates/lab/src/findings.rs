//! The measuring phase's findings: everything the one judge reads ([`crate::judge`]), as data.
//!
//! A lab run measures, then judges its [`Findings`]. `zmem evidence` writes them to a file
//! instead, and `zmem lab FILE` (or `zmem-fleet`) judges that file elsewhere: the same judge on
//! the same findings gives the same decision. Nothing in them is a page's bytes: the pages are
//! there as facts ([`PageFacts`]: flags and compressed lengths), the measured rows are figures,
//! and a dictionary a policy trained stays out of the file (its policy row keeps its size).
//! What could identify a process is written only when asked ([`Identify`]): process ids become
//! their order of first appearance, and process names, cgroup paths and the source's words are
//! replaced by neutral ones, consistently, so the judgement is the same.
//!
//! Reading is bounded and checked ([`read`]): a file larger than the read ceiling is refused
//! before it is read, and findings that do not add up (pages without facts, a length no stream
//! writes, rows of another page count) are refused with the field that is wrong.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use zmem_experiments::comp_bench::Row;
use zmem_kernel::caps::KernelCaps;
use zmem_sim::swap_device::SwapDevice;

use crate::cost::Budgets;
use crate::evidence::{Source, TraceSource};
use crate::facts::PageFacts;
use crate::measure::{PoolRow, SwapRow};
use crate::now::{Now, Rates};
use crate::operating::OperatingInput;
use crate::policy::PolicyRow;
use crate::report::{PressureReading, SkippedPolicy};
use crate::sample::Estimates;
use crate::zswap::{ZswapInput, ZswapMeasured};
use crate::{LabError, proactive};

/// The first field of every evidence file, so a reader tells one from a page set.
pub const FORMAT: &str = "zmem-evidence";
/// Bumped whenever a field changes meaning or disappears.
pub const VERSION: u32 = 1;

/// What one measuring phase found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Findings {
    /// Always [`FORMAT`].
    pub format: String,
    pub version: u32,
    pub zmem_version: String,
    /// What the findings hold that could identify a process or a service.
    pub identifies: Identify,
    /// The host and labels a fleet groups by (a page set's `host` and `label.*` metadata).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub host: BTreeMap<String, String>,
    pub source: Source,
    pub facts: PageFacts,
    /// What the kernel the advice is for can run; none: not read, and every candidate counts
    /// as available.
    pub kernel: Option<KernelCaps>,
    pub compressors: Vec<Row>,
    pub allocators: Vec<PoolRow>,
    pub policies: Vec<PolicyRow>,
    pub swap: Vec<SwapRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap_measured: Option<ZswapMeasured>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_policies: Vec<SkippedPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimates: Option<Estimates>,
    pub swap_device: SwapDevice,
    pub trace: TraceSource,
    pub now: Option<Now>,
    pub rates: Rates,
    pub budgets: Budgets,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<PressureReading>,
    pub operating: OperatingInput,
    pub proactive: proactive::Input,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap: Option<ZswapInput>,
    /// The measuring machine's kernel speed, which prices the kernel's own swap work
    /// ([`crate::speed`]); findings from before it was measured carry the reference machine's.
    #[serde(default = "crate::speed::reference")]
    pub kernel_speed: crate::speed::KernelSpeed,
}

/// What identifying data findings keep: in memory, everything; in a file, what was asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identify {
    /// Process ids as the machine gave them (else their order of first appearance, from 1).
    pub pids: bool,
    /// Process names, cgroup paths and the source's own words (else neutral ones).
    pub names: bool,
}

impl Identify {
    pub const ALL: Self = Self { pids: true, names: true };
}

/// `findings` as a file should hold them: with only what `keep` asks for identifying.
pub fn for_file(mut f: Findings, keep: Identify) -> Findings {
    if !keep.pids {
        ids::renumber_pids(&mut f);
    }
    if !keep.names {
        ids::rename(&mut f);
    }
    f.identifies = keep;
    f
}

/// Writes `findings` to `path` as JSON through zmem's safe writer: 0600 (they describe the
/// machine, if not its memory's contents), never through a link, never into another user's
/// file.
pub fn write(f: &Findings, path: &Path) -> Result<(), LabError> {
    let json = serde_json::to_vec(f).map_err(|e| LabError::Setup(format!("evidence: {e}")))?;
    zmem_files::write(path, zmem_files::Kind::Private, &json)
        .map_err(|e| LabError::Setup(format!("writing {}: {e}", path.display())))
}

/// Whether the file at `path` is an evidence file (its first bytes are `{"format":"zmem-evidence"`).
pub fn is_evidence(path: &Path) -> bool {
    let mut head = [0u8; 32];
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let n = file.read(&mut head).unwrap_or(0);
    head[..n].starts_with(format!("{{\"format\":\"{FORMAT}\"").as_bytes())
}

/// Reads and checks the evidence file at `path`, refusing one larger than the read ceiling
/// (zmem-pages' `limits::read_ceiling`) before reading it.
pub fn read(path: &Path) -> Result<Findings, LabError> {
    read_within(path, zmem_pages::limits::read_ceiling())
}

/// [`read`] with the ceiling given.
fn read_within(path: &Path, ceiling: u64) -> Result<Findings, LabError> {
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| LabError::Setup(format!("{name}: {e}")))?;
    let len = file.metadata().map_err(|e| LabError::Setup(format!("{name}: {e}")))?.len();
    if len > ceiling {
        return Err(LabError::Setup(format!(
            "{name}: {len} bytes, more than the read ceiling of {ceiling} ({}=BYTES sets it)",
            zmem_pages::limits::READ_CEILING_ENV
        )));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(ceiling)
        .read_to_end(&mut bytes)
        .map_err(|e| LabError::Setup(format!("{name}: {e}")))?;
    parse(&bytes).map_err(|e| LabError::Setup(format!("{name}: {e}")))
}

/// The largest magnitude of any number in evidence: 2^48 (256 TiB of bytes, or of pages, or
/// of events) is past anything a machine measures, and keeps the judge's sums and products
/// of them inside 64 bits.
pub const MAX_FIGURE: f64 = (1u64 << 48) as f64;

/// Parses and checks evidence from its bytes.
pub fn parse(bytes: &[u8]) -> Result<Findings, String> {
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not zmem evidence: {e}"))?;
    if let Some(at) = out_of_range(&v, &mut String::new()) {
        return Err(format!("{at}: a figure past {MAX_FIGURE:e} in magnitude"));
    }
    let f: Findings = serde_json::from_value(v).map_err(|e| format!("not zmem evidence: {e}"))?;
    check(&f)?;
    Ok(f)
}

/// The path of the first number in `v` past [`MAX_FIGURE`] in magnitude, if any.
fn out_of_range(v: &serde_json::Value, at: &mut String) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::Number(n) => n.as_f64().is_none_or(|x| x.abs() > MAX_FIGURE).then(|| at.clone()),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| {
            let len = at.len();
            at.push_str(&format!("[{i}]"));
            let found = out_of_range(x, at);
            at.truncate(len);
            found
        }),
        Value::Object(m) => m.iter().find_map(|(k, x)| {
            let len = at.len();
            at.push_str(&format!(".{k}"));
            let found = out_of_range(x, at);
            at.truncate(len);
            found
        }),
        _ => None,
    }
}

/// What must hold of findings read from a file before the judge reads them.
fn check(f: &Findings) -> Result<(), String> {
    if f.format != FORMAT {
        return Err(format!("format {:?}, not {FORMAT:?}", f.format));
    }
    if f.version != VERSION {
        return Err(format!("evidence version {}, this zmem reads {VERSION}", f.version));
    }
    f.facts.check().map_err(|e| format!("facts: {e}"))?;
    let n = f.facts.pages() as u64;
    if n == 0 {
        return Err("facts: no pages".into());
    }
    if f.source.pages != n || f.source.page_size != f.facts.page_size {
        return Err(format!(
            "source: {} pages of {} bytes, but facts for {n} of {}",
            f.source.pages, f.source.page_size, f.facts.page_size
        ));
    }
    if let Some(p) = &f.operating.page_pids
        && p.len() as u64 != n
    {
        return Err(format!("operating.page_pids: {} for {n} pages", p.len()));
    }
    if let Some(w) = f.zswap.as_ref().and_then(|z| z.weights.as_ref()) {
        if w.len() as u64 != n {
            return Err(format!("zswap.weights: {} for {n} pages", w.len()));
        }
        if w.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err("zswap.weights: a weight that is not a finite number >= 0".into());
        }
    }
    if f.policies.is_empty() {
        return Err("policies: none measured".into());
    }
    // A dictionary's policy is measured on the half it was not trained on.
    if let Some(p) = f.policies.iter().find(|p| p.pages == 0 || p.pages > n) {
        return Err(format!("policies: {} measured on {} of {n} pages", p.policy.name, p.pages));
    }
    Ok(())
}

mod ids;
#[cfg(test)]
mod tests;
