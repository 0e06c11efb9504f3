//! The lab's report and its options: every type a lab run returns or takes, as data.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use zmem_experiments::comp_bench;
use zmem_kernel::caps::KernelCaps;
use zmem_kernel::pressure::{Pressure, Window};
use zmem_sim::replay;
use zmem_sim::swap_device::SwapDevice;

use crate::candidate::Candidate;
use crate::cost::Budgets;
use crate::decision::Decision;
use crate::evidence::{Source, TraceSource};
use crate::measure::{PoolRow, SwapRow};
use crate::now::{Now, Rates};
use crate::operating::OperatingInput;
use crate::policy::{Policy, PolicyRow};
use crate::sample;
use crate::zswap::{self, ZswapAdvice};
use zmem_kernel::cold::ColdCurve;

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 9;

/// Everything one lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabReport {
    pub schema_version: u32,
    pub zmem_version: String,
    pub source: Source,
    /// What the kernel the advice is for can run (zram's compressors, recompression, writeback,
    /// zswap's compressors), and how each fact was learned: read once, when the evidence was
    /// gathered (this machine's, or the one a capture's metadata records). Every candidate is
    /// judged against it ([`crate::fit::kernel_fit`]).
    #[serde(default)]
    pub kernel: KernelCaps,
    pub compressors: Vec<comp_bench::Row>,
    pub allocators: Vec<PoolRow>,
    pub policies: Vec<PolicyRow>,
    /// zram against zswap under memory pressure, at a few RAM budgets.
    pub swap: Vec<SwapRow>,
    /// The block device behind the swap file whose latency the replays charge
    /// (`--swap-device`).
    pub swap_device: SwapDevice,
    /// The access trace those replays ran (absent from reports before `--trace`: generated).
    #[serde(default)]
    pub trace: TraceSource,
    /// The live zram swap device the pages came from (source kind `zram`), else none.
    pub now: Option<Now>,
    /// The swap rates CPU costs are projected with.
    pub rates: Rates,
    /// Every configuration the lab can advise, zram's, zswap's and (where nothing runs)
    /// "none", projected onto the machine on the decision's basis ([`crate::candidate`]).
    pub candidates: Vec<Candidate>,
    /// The budgets and the recompression period the candidates were judged with.
    pub budgets: Budgets,
    /// The one answer for this machine, judged over every candidate ([`crate::decision`]).
    pub decision: Decision,
    /// Estimates for every page of the input, with 95 % confidence intervals, when the pages
    /// measured are a random sample of it ([`sample`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimates: Option<sample::Estimates>,
    /// Candidates left out, and why (a dictionary with too few pages to train on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_policies: Vec<SkippedPolicy>,
    /// Memory pressure at the end of the observation window, and over it (read only; absent
    /// when the run was given no reading: a page set measured away from its machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<PressureReading>,
    /// Cold memory by age of the processes the pages came from, read over the observation
    /// window (zmem-kernel's `cold`; absent where none was read: `decision.operating_point`
    /// says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<ColdCurve>,
    /// zswap's Now and the swap stack for the decision ([`crate::zswap`]); absent when the run
    /// was given no live zswap reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap: Option<ZswapAdvice>,
}

/// How short memory is on the machine the lab ran on: the kernel's own measures at the end of
/// the observation window (`zmem_kernel::pressure`: PSI, free memory against the watermarks,
/// refaults, swap traffic, every memory cgroup with a limit), and what changed over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PressureReading {
    pub now: Pressure,
    /// Over the observation window (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// A candidate the lab did not measure: a dictionary whose training half
/// ([`crate::policy::held_out`]) has fewer pages that are not same-filled than it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedPolicy {
    pub name: String,
    /// Pages that are not same-filled in the training half.
    pub train_pages: u64,
    /// Pages it needs.
    pub need: u64,
}

/// Knobs of a lab run.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Minimum time per compressor pass (the comp-bench `min_time`).
    pub min_time: Duration,
    /// Policies to compare; empty (the default): [`crate::policy::candidates`] for the current primary.
    pub policies: Vec<Policy>,
    /// The CPU and latency budgets, and the background recompression period.
    pub budgets: Budgets,
    /// The live device the pages were captured from ([`crate::now`]), if they were.
    pub now: Option<Now>,
    /// Rates observed on the live system, or why there are none (then the trace replay's are
    /// used, saying why).
    pub rates: Result<Rates, String>,
    /// The device behind the swap file (a profile or a measurement).
    pub device: SwapDevice,
    /// Threads the measurements run on (each row on one of them); 0: one per core.
    pub threads: usize,
    /// How the pages were sampled from the input, when at random ([`crate::Evidence::sample`]): the
    /// report then estimates every page's pool with confidence intervals.
    pub sample: Option<sample::Design>,
    /// The trace the replays run, fitted to the pages ([`crate::evidence::fit_trace`]); none: the
    /// generated one ([`crate::evidence::trace_for`]).
    pub trace: Option<(Vec<replay::Access>, TraceSource)>,
    /// What the kernel can run ([`crate::run_lab`] reads it with the evidence; tests give their own).
    /// None: not checked, every candidate available, and the report's `kernel.source` says so.
    pub kernel: Option<KernelCaps>,
    /// The live zswap read around the observation window: with it the report gains zswap's
    /// advice ([`crate::zswap::candidates`]).
    pub zswap: Option<zswap::ZswapInput>,
    /// Memory pressure read around the observation window ([`crate::run_lab`] reads it).
    pub pressure: Option<PressureReading>,
    /// The cold curve, T and the cgroup limits asked about: with the pressure, where the
    /// savings are figured ([`crate::operating`]).
    pub operating: OperatingInput,
    /// `--no-proactive`, `--exclude` and this machine's tools ([`crate::proactive`]).
    pub proactive: crate::proactive::Input,
    /// The host and labels of a page set's metadata, for the findings
    /// ([`crate::evidence::host_labels`]).
    pub host: std::collections::BTreeMap<String, String>,
}

impl Default for LabOptions {
    fn default() -> Self {
        Self {
            min_time: Duration::from_millis(50),
            policies: Vec::new(),
            budgets: Budgets::default(),
            now: None,
            rates: Err("not observed".into()),
            device: SwapDevice::default(),
            threads: 0,
            sample: None,
            trace: None,
            kernel: None,
            zswap: None,
            pressure: None,
            operating: OperatingInput::default(),
            proactive: crate::proactive::Input::default(),
            host: Default::default(),
        }
    }
}
