//! The operating point: what a configuration would really hold on this machine, not what
//! every sampled page would take compressed. A compressed swap holds only what reclaim moves
//! out of RAM, so each candidate's saving is figured at two points:
//!
//! - **today's pressure** ([`Today`]): what the kernel's reclaim would move to swap now. With a
//!   live compressed swap, what it holds now (the basis' pages). Without one: nothing while
//!   free memory is over the low watermark (6.18 mm/vmscan.c: `wakeup_kswapd()` is called from
//!   the allocator's slow path under the low watermark, and `balance_pgdat()` reclaims until
//!   `pgdat_balanced()` sees the high one); under it, the deficit to the high watermark less
//!   the inactive page cache kswapd trims first (`prepare_scan_control()` sets `cache_trim_mode`
//!   while inactive file pages are plentiful, and `get_scan_count()` then scans file only). For
//!   a memory cgroup whose usage is over its limit (or over the limit `--cgroup-limit` asks
//!   about): its usage less the limit less its inactive page cache, at most its anonymous
//!   memory (mm/memcontrol.c `try_charge_memcg()` reclaims the charge's excess from the cgroup
//!   with `try_to_free_mem_cgroup_pages()`). zram's pool is charged to no cgroup, so the
//!   cgroup must move out all of its excess; zswap's pool is charged to the cgroup on cgroup
//!   v2 only (mm/memcontrol.c `obj_cgroup_charge_zswap()` returns early on v1), so there it
//!   must move out the excess over its saving per byte.
//! - **a cold age T** ([`ColdAt`]): every anonymous byte of the processes watched that went
//!   untouched for T (zmem-kernel's `cold`), which reclaim takes first when memory runs short
//!   (the inactive list's tail) and proactive reclaim would move out now.
//!
//! A candidate saves at a point what it saves per byte over every page of the basis, times the
//! bytes moved there ([`at`]); its interval scales the same way. The compressibility of the
//! bytes moved is taken as the sample's: smaps counts idle bytes per mapping, not which pages,
//! so cold pages cannot be told apart from hot ones ([`COMPRESSIBILITY_NOTE`]).
//!
//! The judge ranks candidates on every page of the basis (what each saves per byte moved, the
//! same order at every point); the decision's headline figure is at the point it names
//! ([`Named`]): today's pressure, or the cold age where proactive reclaim moves cold memory
//! out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zmem_kernel::cold::ColdCurve;
use zmem_kernel::pressure::Pressure;

pub mod compressibility;

pub use crate::candidate::AtPoint;
use crate::candidate::{Basis, Candidate, Config, NowSource};
pub use compressibility::{CgroupPages, Own};

/// Said wherever a saving at a point is given: which pages the compressibility is from.
pub const COMPRESSIBILITY_NOTE: &str = "cold and hot pages cannot be told apart (smaps counts \
     idle bytes per mapping, not which pages), so the bytes moved are taken to compress as the \
     sample's pages do";

/// Said where the cold bytes' compressibility was weighted by process.
pub const COLD_BY_PROCESS_NOTE: &str = "the cold bytes compress as the sampled pages weighted by \
     their process's share idle at T (told apart by process; within a process, smaps counts \
     idle bytes per mapping, not which pages, so its cold and hot pages are taken alike)";

/// The default cold age T, in seconds: the longest of the default ages (10 s, 30 s, 1 min)
/// that the default observation window (one minute, the lab's whole-run goal) can read.
pub const DEFAULT_COLD_AGE_SECS: u64 = 60;

/// Which point the decision's headline figure is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Named {
    /// Today's pressure: what reclaim moves out now (no proactive reclaim).
    Today,
    /// Everything idle for at least the cold age (proactive reclaim moves it out).
    ColdAge,
    /// Every page of the basis swapped: the machine's pressure was not read (a page set
    /// measured away from its machine), so what it would move out is not known.
    AllPages,
}

/// Why today's point moves what it moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TodayReason {
    /// A compressed swap runs: what it holds now.
    LiveSwap,
    /// Free memory is over the low watermark and no cgroup is over its limit: kswapd sleeps.
    NotShort,
    /// Free memory is under the low watermark: kswapd reclaims to the high one.
    Short,
    /// Only cgroups over their limits move memory out.
    Cgroups,
    /// No pressure reading, or pages that are not this machine's (a page set measured away
    /// from its machine, generated pages): nothing is known.
    NoReading,
}

/// A memory cgroup's share of today's point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupMove {
    pub path: String,
    pub version: u8,
    /// The limit figured at: its own (`memory.high` where lower, else `memory.max` or v1's
    /// `limit_in_bytes`), or the one `--cgroup-limit` asked about.
    pub limit_bytes: u64,
    /// The limit is `--cgroup-limit`'s, not the cgroup's.
    pub asked: bool,
    pub usage_bytes: u64,
    pub anon_bytes: u64,
    pub inactive_file_bytes: u64,
    /// What its reclaim must move out of anonymous memory to stay under the limit, with a
    /// pool charged to no cgroup (zram; zswap on v1).
    pub excess_bytes: u64,
    /// Sampled pages of its processes, and per compressor their pool per page over every
    /// sampled page's ([`compressibility`]; empty: the sample's compressibility is used).
    #[serde(default)]
    pub sampled_pages: u64,
    #[serde(default)]
    pub of_sampled_pages: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pool_factor: BTreeMap<String, f64>,
}

/// Today's pressure: what reclaim moves out now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Today {
    pub reason: TodayReason,
    /// Bytes of anonymous memory moved out with a pool charged to no cgroup (zram's).
    pub moved_out_bytes: u64,
    /// `MemAvailable`, free memory and the low and high watermarks summed over the zones.
    pub available_bytes: Option<u64>,
    pub free_bytes: u64,
    pub low_watermark_bytes: u64,
    pub high_watermark_bytes: u64,
    /// Memory PSI some avg10 and avg60, percent (absent without PSI).
    pub psi_some_avg10: Option<f64>,
    pub psi_some_avg60: Option<f64>,
    /// Cgroups over their limits (or asked about), each with what it moves out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupMove>,
}

/// The cold-age point and the curve it is read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdAt {
    /// T, in seconds.
    pub age_secs: u64,
    /// Anonymous bytes of the processes watched, and those idle for at least T (without the
    /// processes [`ColdAt::left_out`] names).
    pub anon_bytes: u64,
    pub cold_bytes: u64,
    /// The curve: bytes idle at each age read.
    pub ages_secs: Vec<u64>,
    pub cold_bytes_at_age: Vec<u64>,
    /// Idle memory coming back (bytes per second): from T on where the curve reaches past
    /// T, else over the last interval before it (memory idle a shorter time comes back at
    /// least as often: an upper bound, `promotion_bound` says so).
    pub promoted_bytes_per_sec: f64,
    pub promotion_bound: bool,
    /// The promotion as a share of the working set (the bytes touched within T) per minute.
    pub promotion_percent_per_min: f64,
    /// Per compressor, the cold bytes' pool per page over every sampled page's, told apart by
    /// process ([`compressibility::cold_weighted`]; empty: the sample's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pool_factor: BTreeMap<String, f64>,
    /// The promotion budget it is checked against (`--promotion-budget`), and whether it is
    /// over it: memory idle for T comes back too often for T to be the age to move it at.
    #[serde(default)]
    pub promotion_budget_percent_per_min: f64,
    #[serde(default)]
    pub over_promotion_budget: bool,
    /// Under [`PROMOTION_FLOOR_PAGES_PER_SEC`]: within the budget whatever share of the working
    /// set it is.
    #[serde(default)]
    pub promotion_under_floor: bool,
    /// Processes whose own memory idle for T comes back over the budget (Google's budget is a
    /// job's own): left out of the bytes moved and of the promotion, and never paged out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<OverBudget>,
    /// The cold bytes at T by memory cgroup (as the curve names them: `/sys/fs/cgroup/...`),
    /// without the processes left out: what `memory.reclaim` would be asked for in each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cold_by_cgroup: BTreeMap<String, u64>,
}

/// A process left out of the cold age's bytes: its own idle memory comes back over the
/// promotion budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverBudget {
    pub pid: u32,
    pub comm: String,
    pub anon_bytes: u64,
    pub cold_bytes: u64,
    pub promoted_bytes_per_sec: f64,
    pub promotion_percent_per_min: f64,
}

/// Idle memory coming back at most this many pages a second is within the promotion budget
/// whatever the working set: the budget is a share of the memory touched within T, and where
/// nearly nothing is touched (an idle heap: 0.5 MiB of 640 MiB) a page every few seconds is
/// several percent of it. One swap-in a second costs the program one fault a second, a few
/// microseconds on zram (docs/BENCHMARKS.md, swap-in latency): under 0.01 % of its time.
pub const PROMOTION_FLOOR_PAGES_PER_SEC: f64 = 1.0;

/// Where the savings are figured (JSON `decision.operating_point`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatingPoint {
    pub named: Named,
    pub today: Today,
    /// Absent where no cold curve reached T (say why in `cold_unseen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<ColdAt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_unseen: Option<String>,
    /// Whose compressibility the bytes moved are taken at ([`COMPRESSIBILITY_NOTE`]).
    pub compressibility: String,
}

/// What the point is read from besides the pressure reading (the lab's options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatingInput {
    /// The cold curve of the processes the pages came from, where one was read.
    pub cold: Option<ColdCurve>,
    /// Why there is none, where there is none.
    pub cold_unseen: Option<String>,
    /// T, in seconds.
    pub cold_age_secs: u64,
    /// `--cgroup-limit`: cgroups (by path as the pressure reading shows it) and a limit each.
    pub cgroup_limits: Vec<(String, u64)>,
    /// Each sampled page's process (a capture of processes), and the processes of each cgroup
    /// asked about or limited: with both, a cgroup's own compressibility ([`compressibility`]).
    pub page_pids: Option<Vec<u32>>,
    pub cgroup_pids: Vec<(String, Vec<u32>)>,
    /// The pages are this machine's (its processes', or its zram's): only then does its
    /// pressure say what would be moved out of them.
    pub this_machine: bool,
}

impl Default for OperatingInput {
    fn default() -> Self {
        Self {
            cold: None,
            cold_unseen: None,
            cold_age_secs: DEFAULT_COLD_AGE_SECS,
            cgroup_limits: Vec::new(),
            page_pids: None,
            cgroup_pids: Vec::new(),
            this_machine: false,
        }
    }
}

/// The operating point for `basis` (module doc), the cold age's promotion checked against
/// `promotion_budget` (percent of the working set a minute).
pub fn point(
    basis: &Basis,
    ps: u64,
    pressure: Option<&Pressure>,
    x: &OperatingInput,
    promotion_budget: f64,
    own: &Own,
) -> OperatingPoint {
    let pressure = pressure.filter(|_| x.this_machine);
    let cold = x.cold.as_ref().and_then(|c| cold_at(c, x.cold_age_secs, promotion_budget, ps));
    let cold = cold.map(|k| ColdAt { pool_factor: own.cold.clone(), ..k });
    let cold_unseen = match (&cold, &x.cold, &x.cold_unseen) {
        (Some(_), _, _) => None,
        (None, _, Some(why)) => Some(why.to_string()),
        (None, Some(c), None) => Some(format!(
            "the cold curve was read to {} s, short of T = {} s",
            c.ages_secs.last().copied().unwrap_or(0),
            x.cold_age_secs
        )),
        (None, None, None) => Some("no cold curve was read".into()),
    };
    OperatingPoint {
        // Proactive reclaim names the cold age (crate::proactive).
        named: if pressure.is_some() { Named::Today } else { Named::AllPages },
        today: today(basis, ps, pressure, &x.cgroup_limits, &own.cgroups),
        cold,
        cold_unseen,
        compressibility: if own.cold.is_empty() {
            COMPRESSIBILITY_NOTE.into()
        } else {
            COLD_BY_PROCESS_NOTE.into()
        },
    }
}

fn today(
    basis: &Basis,
    ps: u64,
    pressure: Option<&Pressure>,
    limits: &[(String, u64)],
    own: &[CgroupPages],
) -> Today {
    let Some(p) = pressure else {
        return Today { reason: TodayReason::NoReading, ..empty_today() };
    };
    let w = &p.watermarks;
    let psi = p.psi.as_ref();
    let mut t = Today {
        reason: TodayReason::NotShort,
        moved_out_bytes: 0,
        available_bytes: p.mem_available_bytes,
        free_bytes: w.free_bytes,
        low_watermark_bytes: w.low_bytes,
        high_watermark_bytes: w.high_bytes,
        psi_some_avg10: psi.map(|p| p.some.avg10),
        psi_some_avg60: psi.map(|p| p.some.avg60),
        cgroups: cgroup_moves(p, limits, own),
    };
    if basis.now_source != NowSource::Uncompressed {
        t.reason = TodayReason::LiveSwap;
        t.moved_out_bytes = basis.pages * ps;
        return t;
    }
    let short = w.low_bytes > 0 && w.free_bytes < w.low_bytes;
    let global = if short {
        let deficit = w.high_bytes - w.free_bytes;
        let file = p.inactive_file_bytes.unwrap_or(0);
        deficit.saturating_sub(file).min(p.anon_bytes.unwrap_or(u64::MAX))
    } else {
        0
    };
    let by_cgroups: u64 = t.cgroups.iter().map(|c| c.excess_bytes).sum();
    t.moved_out_bytes = global.max(by_cgroups);
    t.reason = if short {
        TodayReason::Short
    } else if by_cgroups > 0 {
        TodayReason::Cgroups
    } else {
        TodayReason::NotShort
    };
    t
}

fn empty_today() -> Today {
    Today {
        reason: TodayReason::NoReading,
        moved_out_bytes: 0,
        available_bytes: None,
        free_bytes: 0,
        low_watermark_bytes: 0,
        high_watermark_bytes: 0,
        psi_some_avg10: None,
        psi_some_avg60: None,
        cgroups: Vec::new(),
    }
}

/// Every limited cgroup over its limit, and every cgroup `asked` names at the limit asked.
fn cgroup_moves(p: &Pressure, asked: &[(String, u64)], own: &[CgroupPages]) -> Vec<CgroupMove> {
    let mut out = Vec::new();
    for c in &p.cgroups {
        let what_if = asked.iter().find(|(path, _)| *path == c.path).map(|(_, l)| *l);
        let its = match (c.max_bytes, c.high_bytes) {
            (Some(m), Some(h)) => Some(m.min(h)),
            (m, h) => m.or(h),
        };
        let Some(limit) = what_if.or(its) else { continue };
        let pages = own.iter().find(|o| o.path == c.path);
        let usage = c.usage_bytes.unwrap_or(0);
        let anon = c.anon_bytes.unwrap_or(0);
        let file = c.inactive_file_bytes.unwrap_or(0);
        let excess = usage.saturating_sub(limit).saturating_sub(file).min(anon);
        if excess > 0 || what_if.is_some() {
            out.push(CgroupMove {
                path: c.path.clone(),
                version: c.version,
                limit_bytes: limit,
                asked: what_if.is_some(),
                usage_bytes: usage,
                anon_bytes: anon,
                inactive_file_bytes: file,
                excess_bytes: excess,
                sampled_pages: pages.map_or(0, |o| o.sampled_pages),
                of_sampled_pages: pages.map_or(0, |o| o.of_sampled_pages),
                pool_factor: pages.map(|o| o.pool_factor.clone()).unwrap_or_default(),
            });
        }
    }
    out
}

/// Memory idle for `t` seconds coming back, in bytes per second, and whether that is an
/// upper bound: from `t` on where the curve reaches past it, else over the last interval
/// before it (memory idle a shorter time comes back at least as often). None where the curve
/// did not reach `t`.
pub fn promotion(curve: &ColdCurve, t: u64) -> Option<(f64, bool)> {
    let i = curve.ages_secs.iter().position(|&a| a == t)?;
    let returned = &curve.returned_bytes_per_sec;
    Some(match (returned.get(i), i.checked_sub(1).and_then(|j| returned.get(j))) {
        (Some(&r), _) => (r, false),
        (None, Some(&r)) => (r, true),
        (None, None) => (0.0, true),
    })
}

/// The cold-age point from `curve`, where it reached `t` seconds, checked against `budget`
/// (percent of the working set a minute): the processes over it on their own left out.
fn cold_at(curve: &ColdCurve, t: u64, budget: f64, ps: u64) -> Option<ColdAt> {
    let i = curve.ages_secs.iter().position(|&a| a == t)?;
    let (promoted, bound) = promotion(curve, t)?;
    let left_out = over_budget(curve, t, budget, ps);
    let sum = |f: fn(&OverBudget) -> u64| left_out.iter().map(f).sum::<u64>();
    let anon = curve.anon_bytes.saturating_sub(sum(|p| p.anon_bytes));
    let cold = curve.cold_bytes_at_age[i].saturating_sub(sum(|p| p.cold_bytes));
    let back: f64 = left_out.iter().map(|p| p.promoted_bytes_per_sec).sum();
    let promoted = (promoted - back).max(0.0);
    let percent = percent_per_min(promoted, anon.saturating_sub(cold));
    let floor = PROMOTION_FLOOR_PAGES_PER_SEC * ps as f64;
    let mut cold_by_cgroup = BTreeMap::new();
    for p in curve.per_process.iter().filter(|p| p.exited_before_secs.is_none()) {
        if left_out.iter().any(|o| o.pid == p.pid) {
            continue;
        }
        if let (Some(cg), Some(&b)) = (&p.memory_cgroup, p.cold_bytes_at_age.get(i)) {
            *cold_by_cgroup.entry(cg.clone()).or_insert(0) += b;
        }
    }
    Some(ColdAt {
        age_secs: t,
        anon_bytes: curve.anon_bytes,
        cold_bytes: cold,
        ages_secs: curve.ages_secs.clone(),
        cold_bytes_at_age: curve.cold_bytes_at_age.clone(),
        promoted_bytes_per_sec: promoted,
        promotion_bound: bound,
        promotion_percent_per_min: percent,
        promotion_budget_percent_per_min: budget,
        over_promotion_budget: percent > budget && promoted > floor,
        promotion_under_floor: promoted <= floor,
        pool_factor: BTreeMap::new(),
        left_out,
        cold_by_cgroup,
    })
}

/// `promoted` bytes a second as a share of `working_set` bytes a minute (0 with none).
fn percent_per_min(promoted: f64, working_set: u64) -> f64 {
    if working_set == 0 { 0.0 } else { 100.0 * promoted * 60.0 / working_set as f64 }
}

/// The processes of `curve` still running at `t` whose own memory idle for `t` comes back over
/// `budget` and over [`PROMOTION_FLOOR_PAGES_PER_SEC`]: from `t` on where the curve reaches
/// past it, else over the interval before it (as [`promotion`]).
pub fn over_budget(curve: &ColdCurve, t: u64, budget: f64, ps: u64) -> Vec<OverBudget> {
    let Some(i) = curve.ages_secs.iter().position(|&a| a == t) else { return Vec::new() };
    let at = &curve.read_at_secs;
    let (from, to) = if i + 1 < curve.ages_secs.len() { (i, i + 1) } else { (i.max(1) - 1, i) };
    let floor = PROMOTION_FLOOR_PAGES_PER_SEC * ps as f64;
    curve
        .per_process
        .iter()
        .filter(|p| p.exited_before_secs.is_none() && from < to)
        .filter_map(|p| {
            let cold = |k: usize| p.cold_bytes_at_age.get(k).copied();
            let vanished = |k: usize| p.vanished_bytes_at_age.get(k).copied().unwrap_or(0);
            let fell = cold(from)?.saturating_sub(cold(to)?);
            let back = fell.saturating_sub(vanished(to).saturating_sub(vanished(from)));
            let dt = at.get(to)? - at.get(from)?;
            let rate = if dt > 0.0 { back as f64 / dt } else { 0.0 };
            let cold_t = cold(i)?;
            let percent = percent_per_min(rate, p.anon_bytes.saturating_sub(cold_t));
            (percent > budget && rate > floor).then(|| OverBudget {
                pid: p.pid,
                comm: p.comm.clone(),
                anon_bytes: p.anon_bytes,
                cold_bytes: cold_t,
                promoted_bytes_per_sec: rate,
                promotion_percent_per_min: percent,
            })
        })
        .collect()
}

/// What `c` saves per byte moved out: 1 less its pool over the basis' pages uncompressed.
fn per_byte(c: &Candidate, basis: &Basis, ps: u64) -> f64 {
    let orig = basis.pages * ps;
    if c.config == Config::None || orig == 0 {
        return 0.0;
    }
    1.0 - c.pool_bytes as f64 / orig as f64
}

/// `c` with `moved` bytes moved out, against them uncompressed in RAM now.
fn scaled(c: &Candidate, moved: u64, s: f64) -> AtPoint {
    scaled_wider(c, moved, s, 1.0)
}

/// [`scaled`], its interval `widen` times as wide (fewer pages measured).
fn scaled_wider(c: &Candidate, moved: u64, s: f64, widen: f64) -> AtPoint {
    if c.config == Config::None || moved == 0 {
        return AtPoint::default();
    }
    let saved = (moved as f64 * s).round() as i64;
    let pool = moved.saturating_sub(saved.max(0) as u64);
    let rel = if c.pool_bytes == 0 {
        0.0
    } else {
        (c.memory_saved_ci[1] - c.memory_saved_ci[0]) as f64 / 2.0 / c.pool_bytes as f64
    };
    let hw = (rel * widen * pool as f64).round() as i64;
    AtPoint {
        moved_out_bytes: moved,
        pool_bytes: pool,
        memory_saved_bytes: saved,
        memory_saved_ci: [saved - hw, saved + hw],
    }
}

/// `c` at today's point: the global deficit, or the cgroups' excesses, whichever moves more.
/// Each cgroup's bytes save at its own compressibility where it was measured. A zswap pool
/// charged to a v2 cgroup takes room under its limit: it moves out the excess over its saving
/// per byte, at most the cgroup's anonymous memory.
fn today_at(c: &Candidate, t: &Today, s: f64) -> AtPoint {
    let charged = |m: &CgroupMove| m.version == 2 && matches!(c.config, Config::Zswap { .. });
    let algo = c.config.compressor().unwrap_or("");
    let mut cgroups = AtPoint::default();
    for m in &t.cgroups {
        // Its own pages are fewer than the sample's: the interval widens as the square root.
        let (s, widen) = match (m.pool_factor.get(algo), m.sampled_pages) {
            (Some(f), n) if n > 0 => {
                (1.0 - (1.0 - s) * f, (m.of_sampled_pages as f64 / n as f64).sqrt().max(1.0))
            }
            _ => (s, 1.0),
        };
        let moved = if charged(m) && s > 0.0 {
            ((m.excess_bytes as f64 / s) as u64).min(m.anon_bytes)
        } else {
            m.excess_bytes
        };
        cgroups = plus(cgroups, scaled_wider(c, moved, s, widen));
    }
    let global = if t.reason == TodayReason::Short { t.moved_out_bytes } else { 0 };
    if global > cgroups.moved_out_bytes { scaled(c, global, s) } else { cgroups }
}

/// Each candidate at today's point and at the cold age (module doc).
pub fn at(cands: &mut [Candidate], basis: &Basis, op: &OperatingPoint, ps: u64) {
    for c in cands.iter_mut() {
        let s = per_byte(c, basis, ps);
        let all = AtPoint {
            moved_out_bytes: basis.pages * ps,
            pool_bytes: c.pool_bytes,
            memory_saved_bytes: c.memory_saved_bytes,
            memory_saved_ci: c.memory_saved_ci,
        };
        let live = op.today.reason == TodayReason::LiveSwap;
        c.at_today = if live { all } else { today_at(c, &op.today, s) };
        c.at_cold_age = op.cold.as_ref().map(|k| {
            let algo = c.config.compressor().unwrap_or("");
            let s = k.pool_factor.get(algo).map_or(s, |f| 1.0 - (1.0 - s) * f);
            let cold = scaled(c, k.cold_bytes, s);
            if live { plus(all, cold) } else { cold }
        });
    }
}

/// A live swap's pages plus the cold resident bytes moved beside them.
fn plus(a: AtPoint, b: AtPoint) -> AtPoint {
    AtPoint {
        moved_out_bytes: a.moved_out_bytes + b.moved_out_bytes,
        pool_bytes: a.pool_bytes + b.pool_bytes,
        memory_saved_bytes: a.memory_saved_bytes + b.memory_saved_bytes,
        memory_saved_ci: [
            a.memory_saved_ci[0] + b.memory_saved_ci[0],
            a.memory_saved_ci[1] + b.memory_saved_ci[1],
        ],
    }
}

/// What the decision sizes its configuration for: the most it would hold at a point known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// The point the size is for (the one moving out the most).
    pub at: Named,
    /// Bytes moved out there, and the pool that holds them.
    pub moved_out_bytes: u64,
    pub pool_bytes: u64,
    /// zram's `disksize` (and zswap's swap area): [`SIZE_HEADROOM`] times the bytes moved out,
    /// rounded up to [`SIZE_STEP`]: room for the cold memory to grow before the device fills.
    pub disksize_bytes: u64,
    /// zram's `mem_limit`: [`LIMIT_HEADROOM`] times the pool, rounded up to [`SIZE_STEP`]:
    /// the most RAM the device may take before it refuses writes.
    pub mem_limit_bytes: u64,
    /// zswap's `max_pool_percent`: the judged candidate's, raised where its pool at the point
    /// (with [`LIMIT_HEADROOM`]) would pass it, at most 100 (past the limit 6.18's
    /// `zswap_store()` refuses pages and `shrink_worker()` writes the oldest back, mm/zswap.c
    /// `zswap_check_limits()`). None for zram, or where RAM is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pool_percent: Option<u32>,
}

/// Headroom over the bytes moved out, and over their pool (zmem's judgement, not a kernel
/// rule: the device holds a quarter more than the point moves out, and its pool may double
/// before `mem_limit` stops it).
pub const SIZE_HEADROOM: f64 = 1.25;
pub const LIMIT_HEADROOM: f64 = 2.0;
/// Sizes are rounded up to this (a whole number of MiB for sysfs and zram-generator).
pub const SIZE_STEP: u64 = 64 << 20;

/// The size for `c` at the point moving out the most; none where neither point moves
/// anything (a machine whose pressure says nothing: the script's default rule then).
/// `mem_total` (MemTotal) is what zswap's max_pool_percent is a share of.
pub fn size(c: &Candidate, op: &OperatingPoint, mem_total: Option<u64>) -> Option<Sizing> {
    let mut points = vec![(Named::Today, c.at_today)];
    if let Some(at) = c.at_cold_age {
        points.push((Named::ColdAge, at));
    }
    let (at, p) = points.into_iter().max_by_key(|(_, p)| p.moved_out_bytes)?;
    if p.moved_out_bytes == 0 || op.named == Named::AllPages {
        return None;
    }
    let up = |b: f64| (b.ceil() as u64).div_ceil(SIZE_STEP).max(1) * SIZE_STEP;
    Some(Sizing {
        at,
        moved_out_bytes: p.moved_out_bytes,
        pool_bytes: p.pool_bytes,
        disksize_bytes: up(p.moved_out_bytes as f64 * SIZE_HEADROOM),
        mem_limit_bytes: up(p.pool_bytes as f64 * LIMIT_HEADROOM),
        max_pool_percent: pool_percent(c, p.pool_bytes, mem_total),
    })
}

/// zswap's max_pool_percent for a pool of `pool` bytes: the candidate's, or the share of RAM
/// the pool takes with [`LIMIT_HEADROOM`] where that is more (at most 100).
fn pool_percent(c: &Candidate, pool: u64, mem_total: Option<u64>) -> Option<u32> {
    let Config::Zswap { params, .. } = &c.config else { return None };
    let ram = mem_total.filter(|&r| r > 0)?;
    let needed = (100.0 * pool as f64 * LIMIT_HEADROOM / ram as f64).ceil().min(100.0) as u32;
    Some(params.max_pool_percent.max(needed))
}

impl Candidate {
    /// Its figures at the point `named` (today's where no cold age was read); none for
    /// every page (its own `memory_saved_bytes`).
    pub fn at_point(&self, named: Named) -> Option<AtPoint> {
        match named {
            Named::ColdAge => Some(self.at_cold_age.unwrap_or(self.at_today)),
            Named::Today => Some(self.at_today),
            Named::AllPages => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
