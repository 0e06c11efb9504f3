//! `zmem replay`: a trace over a page set under a RAM budget, with zram or zswap as swap.

use std::path::PathBuf;

use zmem_lab::ReplayRequest;
use zmem_lab::request::WatermarkSpec;
use zmem_sim::replay::{CgroupVersion, Readahead, StatsFlush, SwapKind};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// RAM for resident pages: bytes with an optional K, M or G suffix (1024-based).
    #[arg(long)]
    ram: String,
    /// Swap behind RAM: `zram` (a zram device) or `zswap` (zswap in front of a swap file).
    #[arg(long, default_value_t = ReplayRequest::default().swap)]
    swap: SwapKind,
    /// Compression algorithm (NAME, NAME:LEVEL or NAME:level=L,dict=FILE; parameters with --swap zram only).
    #[arg(long, default_value_t = ReplayRequest::default().algo, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// Allocator: zsmalloc, zbud or z3fold.
    #[arg(long, default_value_t = ReplayRequest::default().pool)]
    pool: String,
    /// Page size of the pages and the swap.
    #[arg(long, default_value_t = ReplayRequest::default().page_size, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// zswap's max_pool_percent (of --ram).
    #[arg(long, default_value_t = ReplayRequest::default().max_pool_percent, value_parser = super::args::count::<u32>(0, u32::MAX.into()))]
    max_pool_percent: u32,
    /// zswap's accept_threshold_percent.
    #[arg(long, default_value_t = ReplayRequest::default().accept_threshold_percent, value_parser = super::args::count::<u32>(0, u32::MAX.into()))]
    accept_threshold_percent: u32,
    /// Turn on zswap's memory-pressure shrinker (shrinker_enabled=Y). It counts the memcg's
    /// stored pages, which 6.18 charges on cgroup v2 only: with --cgroup v1 it writes nothing
    /// back.
    #[arg(long)]
    shrinker: bool,
    /// Reject incompressible pages as kernels before 6.18 did (default: store them as-is).
    #[arg(long)]
    reject_incompressible: bool,
    /// The memcg's memory.zswap.writeback=0: zswap never writes back, and a page it rejects
    /// stays in RAM (reclaim takes another).
    #[arg(long)]
    no_writeback: bool,
    /// When the memcg's statistics, from which reclaim decides whether to deactivate active
    /// pages, catch up with its LRU lists: `always`, before every reclaim, as under `zmem
    /// validate` (which reads memory.stat every 2 ms; the model checked against the kernel);
    /// `new-memcg`, as 6.18 flushes them for a memcg made for the trace (every 2 s of the
    /// trace's time and in zswap's shrinker, empty until the first flush, 1 s in); `kernel`,
    /// the same for a workload running before the trace (current through the warm-up)
    #[arg(long, default_value_t = ReplayRequest::default().stats_flush, value_name = "always|new-memcg|kernel")]
    stats_flush: StatsFlush,
    /// The memcg's cgroup version: on v2 zswap's compressed pool is charged to --ram as RAM is
    /// (zram's never is), on v1 it is not (so zswap's shrinker finds nothing to write back).
    #[arg(long, default_value_t = ReplayRequest::default().cgroup, value_name = "v1|v2")]
    cgroup: CgroupVersion,
    /// The memcg's memory.zswap.max (--cgroup v2): bytes with an optional K, M or G suffix, or
    /// `max`. At it, a zswap store first writes one of the memcg's entries back, or is rejected.
    #[arg(long, value_name = "SIZE|max")]
    zswap_max: Option<String>,
    /// The machine's RAM, of which zswap's --max-pool-percent is a share (totalram_pages, not
    /// the memcg's --ram): bytes with an optional K, M or G suffix. Default: this machine's
    /// (/proc/meminfo MemTotal).
    #[arg(long, value_name = "SIZE")]
    total_ram: Option<String>,
    /// Directory for zswap's swap file (default: the system's temporary directory).
    #[arg(long)]
    swap_dir: Option<PathBuf>,
    /// Keep zswap's swap file in memory instead of on disk.
    #[arg(long, conflicts_with = "swap_dir")]
    swap_in_memory: bool,
    /// The block device behind the swap file, whose 4 KiB latency every device read and
    /// write is charged: a profile (nvme, ssd, emmc, hdd) or a path on the device (a directory,
    /// or a file path whose directory is on it) to measure for about a second with O_DIRECT.
    #[arg(long, default_value_t = ReplayRequest::default().swap_device.to_string(), value_name = "PATH|nvme|ssd|emmc|hdd")]
    swap_device: String,
    /// Swap readahead on swap-in faults (zswap's swap file; zram never reads ahead): `vma`,
    /// `cluster` or `none`. Default: this machine's (/sys/kernel/mm/swap/vma_ra_enabled, else
    /// vma), and cluster where --swap-device is rotational (hdd, or a path on a rotational disk),
    /// as the kernel reads by cluster while a rotational swap area is on.
    #[arg(long, value_name = "vma|cluster|none")]
    readahead: Option<Readahead>,
    /// vm.page-cluster: readahead reads at most 2^N pages (VMA readahead at most 32); 0 reads
    /// none. Default: this machine's (/proc/sys/vm/page-cluster), else the kernel's 3.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=31))]
    page_cluster: Option<u32>,
    /// The memcg's swappiness, 0 to 200: how much of each reclaim priority's scan goes to the
    /// anonymous pages (at 0 none: the memcg runs out of memory rather than swap). Default:
    /// this machine's (/proc/sys/vm/swappiness), which a new memcg inherits.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=200))]
    swappiness: Option<u32>,
    /// Reclaim machine-wide between watermarks instead of at a memcg's limit: kswapd wakes at
    /// or under LOW and reclaims past HIGH, allocations under MIN reclaim directly; --ram is
    /// then the node, holding the swap's pool as well. MIN,LOW,HIGH in bytes (K, M or G
    /// suffix) of --ram, or `machine`: this machine's marks (its zones') scaled to --ram.
    #[arg(long, value_name = "MIN,LOW,HIGH|machine")]
    watermarks: Option<String>,
    /// Print a JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Page set.
    pages: PathBuf,
    /// Access trace (`zmem trace gen`).
    trace: PathBuf,
}

/// The request the flags make (each flag maps onto one field).
fn request(args: &Args) -> anyhow::Result<ReplayRequest> {
    Ok(ReplayRequest {
        ram: super::args::size("--ram", &args.ram)?,
        swap: args.swap,
        algo: args.algo.clone(),
        pool: args.pool.clone(),
        page_size: args.page_size,
        max_pool_percent: args.max_pool_percent,
        accept_threshold_percent: args.accept_threshold_percent,
        shrinker: args.shrinker,
        reject_incompressible: args.reject_incompressible,
        no_writeback: args.no_writeback,
        stats_flush: args.stats_flush,
        cgroup: args.cgroup,
        zswap_max: match args.zswap_max.as_deref() {
            None | Some("max") => None,
            Some(text) => Some(super::args::size("--zswap-max", text)?),
        },
        total_ram: args
            .total_ram
            .as_deref()
            .map(|t| super::args::size("--total-ram", t))
            .transpose()?,
        swap_dir: args.swap_dir.clone(),
        swap_in_memory: args.swap_in_memory,
        swap_device: args.swap_device.parse().map_err(|e| anyhow::anyhow!("--swap-device: {e}"))?,
        readahead: args.readahead,
        page_cluster: args.page_cluster,
        swappiness: args.swappiness,
        watermarks: args
            .watermarks
            .as_deref()
            .map(|w| w.parse::<WatermarkSpec>().map_err(|e| anyhow::anyhow!("--watermarks: {e}")))
            .transpose()?,
    })
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args)?;
    req.validate().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let device = req.device()?;
    super::args::report_measured(&device);
    let cfg = req.config(device).map_err(|e| anyhow::anyhow!(e.flag()))?;
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), args.page_size)?;
    let trace = super::pages::load_trace(&args.trace)?;
    let r = ReplayRequest::run(&cfg, &inputs[0], &trace, &super::progress::Bar::new())?;
    super::emit(args.json, &r, zmem_render::replay::replay)?;
    ReplayRequest::check(&r)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(argv: &[&str]) -> Args {
        super::super::args::parse_flags(argv)
    }

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli = flags(&["replay", "--ram", "1M", "pages", "trace"]);
        let want = ReplayRequest { ram: 1 << 20, ..ReplayRequest::default() };
        assert_eq!(request(&cli).unwrap(), want);
    }

    #[test]
    fn the_memcg_flags_make_the_requests_fields() {
        let argv = ["replay", "--ram", "1M", "--cgroup", "v2", "--zswap-max", "64K", "p", "t"];
        let r = request(&flags(&argv)).unwrap();
        assert_eq!((r.cgroup, r.zswap_max), (CgroupVersion::V2, Some(64 << 10)));
        let argv = ["replay", "--ram", "1M", "--cgroup", "v2", "--zswap-max", "max", "p", "t"];
        assert_eq!(request(&flags(&argv)).unwrap().zswap_max, None);
    }
}
