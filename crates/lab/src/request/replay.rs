//! `zmem replay` / `zmem.replay`: an access trace over a page set under a RAM budget, with zram
//! or zswap as swap.

use std::path::PathBuf;
use std::time::Duration;

use zmem_comp::AlgoSpec;
use zmem_pages::PageSet;
use zmem_sim::replay::scan::MAX_SWAPPINESS;
use zmem_sim::replay::{
    self, Access, CgroupVersion, Readahead, ReplayConfig, ReplayResult, StatsFlush, SwapKind,
};
use zmem_sim::swap_device::{DeviceSpec, SwapDevice};

use super::{ArgError, check_page_size, check_pool, plain_algo};
use crate::{Incompressible, LabError, Progress, ZswapParams};

/// What a user can ask of one replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRequest {
    /// RAM for resident pages, in bytes (required: 0 is refused).
    pub ram: u64,
    /// The swap behind RAM.
    pub swap: SwapKind,
    /// The compressor (parameters with zram only).
    pub algo: AlgoSpec,
    /// The allocator of the zram device or the zswap pool.
    pub pool: String,
    /// Page size of the pages and the swap.
    pub page_size: usize,
    /// zswap's max_pool_percent (of `ram`). With `algo` and the next two, zswap's module
    /// parameters ([`ReplayRequest::zswap`]).
    pub max_pool_percent: u32,
    /// zswap's accept_threshold_percent.
    pub accept_threshold_percent: u32,
    /// zswap's shrinker_enabled.
    pub shrinker: bool,
    /// Reject incompressible pages as kernels before 6.18 did (else store them as-is).
    pub reject_incompressible: bool,
    /// The memcg's memory.zswap.writeback=0.
    pub no_writeback: bool,
    /// When the memcg's statistics, which reclaim's deactivation reads, catch up with its
    /// lists ([`zmem_sim::replay::StatsFlush`]): before every reclaim as under `zmem validate`
    /// (the default), or as 6.18 flushes them for a memcg made for the trace or a running
    /// workload.
    pub stats_flush: StatsFlush,
    /// The memcg's cgroup version: on v2 zswap's pool is charged to the memcg's limit (`ram`).
    pub cgroup: CgroupVersion,
    /// The memcg's memory.zswap.max in bytes (cgroup v2 only); none: `max`.
    pub zswap_max: Option<u64>,
    /// The machine's RAM in bytes, of which zswap's max_pool_percent is a share; none: this
    /// machine's ([`zmem_experiments::machine::total_ram_bytes`]).
    pub total_ram: Option<u64>,
    /// Directory for zswap's swap file; none: the system's temporary directory.
    pub swap_dir: Option<PathBuf>,
    /// Keep zswap's swap file in memory instead.
    pub swap_in_memory: bool,
    /// The block device behind the swap file: a profile or a path to measure.
    pub swap_device: DeviceSpec,
    /// Swap readahead; none: this machine's ([`zmem_experiments::readahead::settings`]).
    pub readahead: Option<Readahead>,
    /// vm.page-cluster; none: this machine's.
    pub page_cluster: Option<u32>,
    /// The memcg's swappiness (0 to 200); none: this machine's vm.swappiness
    /// ([`zmem_experiments::machine::swappiness`]).
    pub swappiness: Option<u32>,
    /// Machine-wide reclaim between watermarks instead of a memcg's limit; none: the memcg.
    pub watermarks: Option<WatermarkSpec>,
}

/// Where the replay's watermarks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkSpec {
    /// min, low and high in bytes of the replay's RAM.
    Bytes([u64; 3]),
    /// This machine's marks (its zones', /proc/zoneinfo) scaled to the replay's RAM: the share
    /// of the zones' managed memory the RAM is.
    Machine,
}

impl std::str::FromStr for WatermarkSpec {
    type Err = String;

    /// `machine`, or `MIN,LOW,HIGH` in bytes, each with an optional K, M or G suffix.
    fn from_str(text: &str) -> Result<Self, String> {
        if text.trim() == "machine" {
            return Ok(Self::Machine);
        }
        let sizes: Vec<u64> = text
            .split(',')
            .map(|s| crate::parse_size(s.trim()).map_err(|e| format!("{text}: {}", e.msg)))
            .collect::<Result<_, _>>()?;
        match sizes[..] {
            [min, low, high] => Ok(Self::Bytes([min, low, high])),
            _ => Err(format!("{text}: MIN,LOW,HIGH or machine")),
        }
    }
}

impl WatermarkSpec {
    /// The marks in pages of a RAM of `ram_pages`.
    pub fn pages(&self, ram_pages: u64, page_size: u64) -> Result<replay::Watermarks, ArgError> {
        let [min, low, high] = match *self {
            Self::Bytes(b) => b.map(|x| x / page_size.max(1)),
            Self::Machine => {
                let text = std::fs::read_to_string("/proc/zoneinfo").map_err(|e| {
                    ArgError::new("watermarks", format!("machine: /proc/zoneinfo: {e}"))
                })?;
                let zones = zmem_kernel::pressure::parse_zoneinfo(&text);
                let managed: u64 = zones.iter().map(|z| z.managed).sum();
                let w = zmem_kernel::pressure::Watermarks::of(&zones, 1);
                let scale = |m: u64| {
                    (u128::from(m) * u128::from(ram_pages) / u128::from(managed.max(1))) as u64
                };
                [scale(w.min_bytes), scale(w.low_bytes), scale(w.high_bytes)]
            }
        };
        let w = replay::Watermarks { min, low, high };
        w.check(ram_pages).map_err(|e| ArgError::new("watermarks", e))?;
        Ok(w)
    }
}

impl Default for ReplayRequest {
    fn default() -> Self {
        let d = ReplayConfig::default();
        Self {
            ram: 0,
            swap: d.swap,
            algo: super::default_algo(),
            pool: d.pool,
            page_size: d.page_size,
            max_pool_percent: d.zswap.max_pool_percent,
            accept_threshold_percent: d.zswap.accept_threshold_percent,
            shrinker: d.zswap.shrinker_enabled,
            reject_incompressible: false,
            no_writeback: false,
            stats_flush: d.stats_flush,
            cgroup: d.cgroup,
            zswap_max: d.zswap_max,
            swap_dir: None,
            swap_in_memory: false,
            swap_device: DeviceSpec::default(),
            readahead: None,
            page_cluster: None,
            swappiness: None,
            total_ram: None,
            watermarks: None,
        }
    }
}

impl ReplayRequest {
    /// The arguments with a default, as `zmem replay --help` states them.
    pub fn shown_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("swap", self.swap.to_string()),
            ("algo", self.algo.to_string()),
            ("pool", self.pool.clone()),
            ("page_size", self.page_size.to_string()),
            ("max_pool_percent", self.max_pool_percent.to_string()),
            ("accept_threshold_percent", self.accept_threshold_percent.to_string()),
            ("swap_device", self.swap_device.to_string()),
            ("cgroup", self.cgroup.to_string()),
            ("stats_flush", self.stats_flush.to_string()),
        ]
    }

    /// Refuses what no replay could take, before any page is read or the device measured.
    pub fn validate(&self) -> Result<(), ArgError> {
        check_pool(&self.pool)?;
        check_page_size(self.page_size)?;
        if self.ram / self.page_size as u64 == 0 {
            return Err(ArgError::with_value("ram", self.ram, "less than one page"));
        }
        if self.swap == SwapKind::Zswap {
            plain_algo(&self.algo)?;
        }
        if self.swap_in_memory && self.swap_dir.is_some() {
            return Err(ArgError::new(
                "swap_in_memory",
                "give swap_dir or swap_in_memory, not both",
            ));
        }
        if self.zswap_max.is_some() && self.cgroup != CgroupVersion::V2 {
            return Err(ArgError::new("zswap_max", "memory.zswap.max is a cgroup v2 file"));
        }
        if self.page_cluster.is_some_and(|c| c > 31) {
            return Err(ArgError::with_value(
                "page_cluster",
                self.page_cluster.unwrap_or(0),
                "at most 31",
            ));
        }
        if self.total_ram.is_some_and(|t| t < self.page_size as u64) {
            return Err(ArgError::with_value(
                "total_ram",
                self.total_ram.unwrap_or(0),
                "less than a page",
            ));
        }
        if self.swappiness.is_some_and(|s| s > MAX_SWAPPINESS) {
            return Err(ArgError::with_value(
                "swappiness",
                self.swappiness.unwrap_or(0),
                format!("at most {MAX_SWAPPINESS}"),
            ));
        }
        Ok(())
    }

    /// zswap's module parameters: `algo`'s compressor and the three zswap knobs.
    pub fn zswap(&self) -> ZswapParams {
        ZswapParams {
            compressor: self.algo.name.clone(),
            max_pool_percent: self.max_pool_percent,
            accept_threshold_percent: self.accept_threshold_percent,
            shrinker_enabled: self.shrinker,
        }
    }

    /// The swap device, measured for about a second where it is a path.
    pub fn device(&self) -> Result<SwapDevice, LabError> {
        Ok(SwapDevice::resolve(&self.swap_device, Duration::from_secs(1))?)
    }

    /// The engine's configuration on `device` ([`ReplayRequest::device`]).
    pub fn config(&self, device: SwapDevice) -> Result<ReplayConfig, ArgError> {
        self.validate()?;
        let (readahead, page_cluster) =
            zmem_experiments::readahead::settings(self.readahead, self.page_cluster, &device);
        Ok(ReplayConfig {
            ram_pages: self.ram / self.page_size as u64,
            swap: self.swap,
            algo: self.algo.name.clone(),
            algo_params: self.algo.algorithm_params(),
            pool: self.pool.clone(),
            page_size: self.page_size,
            zswap: self.zswap(),
            incompressible: if self.reject_incompressible {
                Incompressible::Reject
            } else {
                Incompressible::StoreAsIs
            },
            writeback: !self.no_writeback,
            cgroup: self.cgroup,
            zswap_max: self.zswap_max,
            total_ram_pages: Some(
                zmem_experiments::machine::total_ram_bytes(self.total_ram, self.ram)
                    / self.page_size as u64,
            ),
            swap_dir: if self.swap_in_memory {
                None
            } else {
                Some(self.swap_dir.clone().unwrap_or_else(std::env::temp_dir))
            },
            device,
            zram_backing: false,
            swappiness: zmem_experiments::machine::swappiness(self.swappiness),
            readahead,
            page_cluster,
            // The page count plus zmem validate's slack, as `zmem validate` sizes its swap.
            swap_pages: None,
            watermarks: self
                .watermarks
                .map(|w| w.pages(self.ram / self.page_size as u64, self.page_size as u64))
                .transpose()?,
            // The replay takes the trace's file pages from its file reads, mapped plainly.
            file_pages: 0,
            file_recency: true,
            stats_flush: self.stats_flush,
        })
    }

    /// Replays `trace` over `pages` as configured by [`ReplayRequest::config`]. Pages that came
    /// back different are the result (`verified: false`) for the caller to show, then refuse
    /// with [`ReplayRequest::check`].
    pub fn run(
        cfg: &ReplayConfig,
        pages: &PageSet,
        trace: &[Access],
        progress: &dyn Progress,
    ) -> Result<ReplayResult, LabError> {
        super::zram::same_page_size(pages, cfg.page_size)?;
        Ok(replay::run(pages.bytes(), trace, cfg, progress)?)
    }

    /// The replay's own failure: pages swapped in different.
    pub fn check(r: &ReplayResult) -> Result<(), LabError> {
        if r.verified {
            Ok(())
        } else {
            Err(LabError::Setup("pages swapped in differ from the pages swapped out".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> ReplayRequest {
        ReplayRequest { ram: 1 << 20, ..ReplayRequest::default() }
    }

    #[test]
    fn the_defaults_are_the_engines() {
        let cfg = req().config(SwapDevice::default()).unwrap();
        let d = ReplayConfig::default();
        assert_eq!(cfg.ram_pages, 256);
        assert_eq!((cfg.swap, &cfg.zswap), (d.swap, &d.zswap));
        assert_eq!(cfg.algo, d.algo);
        assert_eq!(cfg.incompressible, Incompressible::StoreAsIs);
        assert!(cfg.writeback);
        assert_eq!((cfg.cgroup, cfg.zswap_max), (CgroupVersion::V1, None));
        assert_eq!(cfg.swap_dir, Some(std::env::temp_dir()));
        let mem = ReplayRequest { swap_in_memory: true, ..req() }.config(SwapDevice::default());
        assert_eq!(mem.unwrap().swap_dir, None);
    }

    #[test]
    fn bad_arguments_are_named() {
        let bad = |r: ReplayRequest| r.validate().unwrap_err().arg;
        assert_eq!(bad(ReplayRequest::default()), "ram");
        assert_eq!(bad(ReplayRequest { ram: 4095, ..req() }), "ram");
        assert_eq!(bad(ReplayRequest { algo: "zstd:3".parse().unwrap(), ..req() }), "algo");
        assert!(
            ReplayRequest { algo: "zstd:3".parse().unwrap(), swap: SwapKind::Zram, ..req() }
                .validate()
                .is_ok()
        );
        let both = ReplayRequest { swap_in_memory: true, swap_dir: Some("/tmp".into()), ..req() };
        assert_eq!(bad(both), "swap_in_memory");
        assert_eq!(bad(ReplayRequest { pool: "slab".into(), ..req() }), "pool");
        assert_eq!(bad(ReplayRequest { zswap_max: Some(1 << 20), ..req() }), "zswap_max");
    }

    /// The memcg's settings reach the replay: cgroup v2 with its `memory.zswap.max`.
    #[test]
    fn the_memcgs_cgroup_version_and_zswap_limit_reach_the_replay() {
        let v2 = ReplayRequest { cgroup: CgroupVersion::V2, zswap_max: Some(1 << 20), ..req() };
        let cfg = v2.config(SwapDevice::default()).unwrap();
        assert_eq!((cfg.cgroup, cfg.zswap_max), (CgroupVersion::V2, Some(1 << 20)));
    }
}
