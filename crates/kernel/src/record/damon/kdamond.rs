//! A kdamond of our own: made, configured and started through the sysfs files usage.rst
//! documents ("sysfs Interface"; its short example is the sequence followed here), read with the
//! `update_schemes_tried_regions` command, stopped and removed when dropped.
//!
//! Layout written by [`Kdamond::start`] (paths under `admin`; every directory below appears when
//! the `nr_*` file above it is written, as usage.rst's "kdamonds/", "contexts/", "targets/" and
//! "schemes/" sections say):
//!
//! ```text
//! kdamonds/nr_kdamonds                          1   (only where it was 0)
//! kdamonds/0/contexts/nr_contexts               1
//!   contexts/0/operations                       vaddr (checked in avail_operations first)
//!   contexts/0/monitoring_attrs/intervals/      sample_us, aggr_us, update_us  (Attrs)
//!   contexts/0/monitoring_attrs/nr_regions/     min, max                       (Attrs)
//!   contexts/0/targets/nr_targets               N, then targets/<i>/pid_target = pids[i]
//!   contexts/0/schemes/nr_schemes               1
//!   schemes/0/action                            stat ("Do nothing but count the statistics")
//!   schemes/0/access_pattern/{sz,nr_accesses,age}/{min,max}
//!                                               0 and the largest value: every region matches,
//!                                               so every region is a tried region
//! kdamonds/0/state                              on
//! ```
//!
//! Quotas (0: none) and watermarks (`none`) keep the values a new scheme has, under which the
//! scheme is applied to every region at every aggregation interval (usage.rst,
//! `schemes/<N>/quotas/` and `schemes/<N>/watermarks/`). Files only newer kernels have are not
//! written, so their defaults hold: `apply_interval_us` 0 (the scheme's apply interval is the
//! aggregation interval), `addr_unit` 1, no `intervals_goal` tuning (`aggrs` 0). usage.rst itself
//! names this use of `tried_regions`: action `stat` with the pattern one wants to query.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{regions, sysfs};
use crate::KernelError;
use zmem_pages::trace::convert::DamonRegion;

/// DAMON's monitoring attributes (usage.rst, `contexts/<N>/monitoring_attrs/`; their meaning is
/// in the kernel's Documentation/mm/damon/design.rst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attrs {
    /// Sampling interval: how often each region's sampled page is checked for an access.
    pub sample_us: u64,
    /// Aggregation interval: a region's `nr_accesses` counts the checks of one such interval
    /// that found it accessed, so it is at most `aggr_us / sample_us`.
    pub aggr_us: u64,
    /// How often `vaddr` updates the regions to the processes' current mappings.
    pub update_us: u64,
    /// Fewest regions per context (DAMON refuses fewer than 3).
    pub min_nr_regions: u64,
    /// Most regions per context: the spatial resolution, and the monitoring's cost.
    pub max_nr_regions: u64,
}

impl Attrs {
    /// Attributes for a recorder observing once per `interval`: aggregation = the interval (one
    /// snapshot per aggregation), sampling = 5 ms (DAMON's default) or the interval if shorter,
    /// update = 10 intervals (DAMON's default ratio, 1 s for 100 ms; the recorder maps regions
    /// to the pages captured at the start, so later mappings do not matter to it), and DAMON's
    /// default 10 to 1000 regions.
    pub fn for_interval(interval: Duration) -> Self {
        let aggr_us = u64::try_from(interval.as_micros()).unwrap_or(u64::MAX).max(1);
        Self {
            sample_us: aggr_us.min(5_000),
            aggr_us,
            update_us: aggr_us.saturating_mul(10),
            min_nr_regions: 10,
            max_nr_regions: 1000,
        }
    }

    /// Writes them to a context's `monitoring_attrs` (`ctx` is `contexts/<N>`).
    pub(crate) fn write(&self, ctx: &Path) -> Result<(), KernelError> {
        let iv = ctx.join("monitoring_attrs/intervals");
        sysfs::write(&iv.join("sample_us"), self.sample_us)?;
        sysfs::write(&iv.join("aggr_us"), self.aggr_us)?;
        sysfs::write(&iv.join("update_us"), self.update_us)?;
        let nr = ctx.join("monitoring_attrs/nr_regions");
        sysfs::write(&nr.join("min"), self.min_nr_regions)?;
        sysfs::write(&nr.join("max"), self.max_nr_regions)
    }

    /// What DAMON itself would refuse when the kdamond starts (`damon_set_attrs` in
    /// mm/damon/core.c): a sampling interval longer than the aggregation interval, fewer than 3
    /// regions, a minimum above the maximum; and a zero sampling interval (DAMON would take it as
    /// 1 us), which leaves [`Kdamond::max_nr_accesses`] undefined.
    pub fn check(&self) -> Result<(), KernelError> {
        let bad = |m: String| Err(KernelError::Invalid(format!("DAMON attributes: {m}")));
        if self.sample_us == 0 || self.sample_us > self.aggr_us {
            return bad(format!(
                "the sampling interval ({} us) must be above 0 and at most the aggregation \
                 interval ({} us)",
                self.sample_us, self.aggr_us
            ));
        }
        if self.min_nr_regions < 3 || self.min_nr_regions > self.max_nr_regions {
            return bad(format!(
                "the number of regions must be at least 3 and min ({}) at most max ({})",
                self.min_nr_regions, self.max_nr_regions
            ));
        }
        Ok(())
    }
}

/// A kdamond we made (`kdamonds/0`, where there was none) monitoring processes with `vaddr`
/// and one `stat` scheme whose tried regions are the snapshot. Dropping it stops it and removes
/// it (`nr_kdamonds` back to 0), leaving the interface as [`Kdamond::start`] found it.
///
/// Between [`super::unavailable_reason`]'s look and the write of `nr_kdamonds`, another program
/// could add a kdamond: sysfs offers no lock across programs, so that race is not closed.
#[derive(Debug)]
pub struct Kdamond {
    /// `admin/kdamonds`.
    kdamonds: PathBuf,
    /// `admin/kdamonds/0`: ours.
    dir: PathBuf,
    pids: Vec<u32>,
    attrs: Attrs,
}

impl Kdamond {
    /// Makes, configures and starts a kdamond monitoring `pids` under `admin` (the sysfs
    /// directory, [`super::ADMIN`]). Refused with [`super::unavailable_reason`]'s text where that
    /// gives one (a kdamond already exists), and where the kernel has no `vaddr` operations (seen
    /// in our context's `avail_operations`, after which our kdamond is removed again). Any
    /// failure after `nr_kdamonds` was written removes ours as drop does.
    pub fn start(admin: &Path, pids: &[u32], attrs: &Attrs) -> Result<Self, KernelError> {
        if pids.is_empty() {
            return Err(KernelError::Invalid("DAMON: no process to monitor".into()));
        }
        attrs.check()?;
        if let Some(why) = super::unavailable_reason(admin) {
            return Err(KernelError::Invalid(why));
        }
        let kdamonds = admin.join("kdamonds");
        sysfs::write(&kdamonds.join("nr_kdamonds"), 1)?;
        // From here on, dropping `k` (on any error) removes what we made.
        let k = Self { dir: kdamonds.join("0"), kdamonds, pids: pids.to_vec(), attrs: *attrs };
        sysfs::write(&k.dir.join("contexts/nr_contexts"), 1)?;
        let ctx = k.dir.join("contexts/0");
        let ops = sysfs::read(&ctx.join("avail_operations"))?;
        if let Some(why) = super::no_vaddr(&ops) {
            return Err(KernelError::Invalid(why));
        }
        sysfs::write(&ctx.join("operations"), "vaddr")?;
        attrs.write(&ctx)?;
        let targets = ctx.join("targets");
        sysfs::write(&targets.join("nr_targets"), pids.len())?;
        for (i, pid) in pids.iter().enumerate() {
            sysfs::write(&targets.join(format!("{i}/pid_target")), pid)?;
        }
        sysfs::write(&ctx.join("schemes/nr_schemes"), 1)?;
        let scheme = k.scheme();
        sysfs::write(&scheme.join("action"), "stat")?;
        // Ranges are closed. Region sizes are unsigned longs (64-bit here); nr_accesses and age
        // are unsigned ints in the scheme, so their largest value is u32::MAX.
        let pattern = scheme.join("access_pattern");
        for (what, max) in
            [("sz", u64::MAX), ("nr_accesses", u32::MAX.into()), ("age", u32::MAX.into())]
        {
            sysfs::write(&pattern.join(format!("{what}/min")), 0)?;
            sysfs::write(&pattern.join(format!("{what}/max")), max)?;
        }
        sysfs::write(&k.dir.join("state"), "on")?;
        Ok(k)
    }

    /// The regions of the next aggregation interval, each with its process (the
    /// [module doc](super) says how a region's target is told).
    ///
    /// Writes `update_schemes_tried_regions` to `state`: the kernel answers once the scheme has
    /// been tried on every region during its next apply interval, here the aggregation interval
    /// (usage.rst, `schemes/<N>/tried_regions/`), so this blocks for up to about two
    /// aggregation intervals and paces a caller by itself. Then reads
    /// `tried_regions/<n>/{start,end,nr_accesses}` and writes `clear_schemes_tried_regions` to
    /// free them (a kernel without that command refuses it; the error is ignored, as the next
    /// update replaces the regions anyway).
    ///
    /// An error where the kdamond has stopped (`state` reads `off`: DAMON stops when every
    /// target process has exited), where the kernel refuses the command, or where a region file
    /// is malformed (the error names the file).
    pub fn snapshot(&self) -> Result<Vec<DamonRegion>, KernelError> {
        let state = self.dir.join("state");
        if sysfs::read(&state)? == "off" {
            return Err(KernelError::Invalid(format!(
                "{}: our kdamond has stopped (DAMON stops when every target process has exited)",
                state.display()
            )));
        }
        sysfs::write(&state, "update_schemes_tried_regions")?;
        let tried = regions::read(&self.scheme().join("tried_regions"));
        let _ = sysfs::write(&state, "clear_schemes_tried_regions");
        regions::assign(&self.pids, &tried?)
    }

    /// The most `nr_accesses` a region can show: checks per aggregation interval.
    pub fn max_nr_accesses(&self) -> u32 {
        u32::try_from(self.attrs.aggr_us / self.attrs.sample_us).unwrap_or(u32::MAX)
    }

    /// The monitored processes, in the order of the targets.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// The attributes it runs with.
    pub fn attrs(&self) -> &Attrs {
        &self.attrs
    }

    /// `kdamonds/0/contexts/0/schemes/0`.
    fn scheme(&self) -> PathBuf {
        self.dir.join("contexts/0/schemes/0")
    }
}

impl Drop for Kdamond {
    fn drop(&mut self) {
        if let Err(e) = remove_ours(&self.kdamonds) {
            eprintln!("zmem: {e}");
        }
    }
}

/// Stops and removes kdamond 0, ours: `state` = `off` (unless it reads `off` already: writing
/// `off` to a stopped kdamond is an error), then `nr_kdamonds` = 0, only while it still reads 1
/// (ours alone: anything else means someone else changed the list, and theirs is left alone,
/// an error saying so). The kernel refuses `nr_kdamonds` with EBUSY while a kdamond runs, so
/// that write is retried for up to a second while ours stops. `kdamonds` is `admin/kdamonds`.
pub(crate) fn remove_ours(kdamonds: &Path) -> Result<(), KernelError> {
    let state = kdamonds.join("0/state");
    if sysfs::read(&state).ok().as_deref() != Some("off") {
        sysfs::write(&state, "off")
            .map_err(|e| KernelError::Invalid(format!("stopping our kdamond: {e}")))?;
    }
    let nr = kdamonds.join("nr_kdamonds");
    let n = sysfs::read_num::<u64>(&nr)
        .map_err(|e| KernelError::Invalid(format!("removing our kdamond: {e}")))?;
    if n != 1 {
        return Err(KernelError::Invalid(format!(
            "{} reads {n}, not the 1 kdamond we made: left as it is",
            nr.display()
        )));
    }
    for attempt in 0.. {
        match sysfs::write(&nr, 0) {
            Err(KernelError::Io { error, .. })
                if error.raw_os_error() == Some(libc::EBUSY) && attempt < 20 =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            r => return r.map_err(|e| KernelError::Invalid(format!("removing our kdamond: {e}"))),
        }
    }
    Ok(())
}
