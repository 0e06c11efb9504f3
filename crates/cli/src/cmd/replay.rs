//! `zmem replay`: a trace over a page set under a RAM budget, with zram or zswap as swap.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use zmem_lab::replay::{self, Access, ReplayConfig, SwapKind};
use zmem_zswap::Incompressible;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// RAM for resident pages: bytes with an optional K, M or G suffix (1024-based).
    #[arg(long)]
    ram: String,
    /// Swap behind RAM: `zram` (a zram device) or `zswap` (zswap in front of a swap file).
    #[arg(long, default_value = "zswap")]
    swap: SwapKind,
    /// Compression algorithm.
    #[arg(long, default_value = "lzo")]
    algo: String,
    /// Allocator: zsmalloc, zbud or z3fold.
    #[arg(long, default_value = "zsmalloc")]
    pool: String,
    #[arg(long, default_value_t = 4096)]
    page_size: usize,
    /// zswap's max_pool_percent (of --ram).
    #[arg(long, default_value_t = 20)]
    max_pool_percent: u32,
    /// zswap's accept_threshold_percent.
    #[arg(long, default_value_t = 90)]
    accept_threshold_percent: u32,
    /// Turn on zswap's memory-pressure shrinker (shrinker_enabled=Y).
    #[arg(long)]
    shrinker: bool,
    /// Reject incompressible pages as kernels before 6.18 did (default: store them as-is).
    #[arg(long)]
    reject_incompressible: bool,
    /// Directory for zswap's swap file (default: the system's temporary directory).
    #[arg(long)]
    swap_dir: Option<PathBuf>,
    /// Keep zswap's swap file in memory instead of on disk.
    #[arg(long, conflicts_with = "swap_dir")]
    swap_in_memory: bool,
    /// Print a JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Page set.
    pages: PathBuf,
    /// Access trace (`zmem trace gen`).
    trace: PathBuf,
}

/// Parses `4096`, `64K`, `256M`, `2G` (1024-based) into bytes.
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => bail!("bad size {s:?}: unknown suffix {c:?} (use K, M, G or T)"),
            };
            (&s[..i], m)
        }
        _ => (s, 1u64),
    };
    let n: u64 = num.trim().parse().with_context(|| format!("bad size {s:?}"))?;
    n.checked_mul(mult).with_context(|| format!("size {s:?} overflows"))
}

/// Reads a trace file into the replay's accesses.
pub fn load_trace(path: &Path) -> anyhow::Result<Vec<Access>> {
    let t = zmem_workload::trace::Trace::open(path)
        .with_context(|| format!("reading trace {}", path.display()))?;
    Ok(t.accesses
        .iter()
        .map(|a| Access {
            page: u64::from(a.page),
            write: a.op == zmem_workload::trace::Op::Write,
            time_ns: a.time_ns,
        })
        .collect())
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let ram = parse_size(&args.ram)?;
    let ram_pages = ram / args.page_size as u64;
    anyhow::ensure!(ram_pages > 0, "--ram {} is less than one page", args.ram);
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), args.page_size)?;
    let trace = load_trace(&args.trace)?;
    let cfg = ReplayConfig {
        ram_pages,
        swap: args.swap,
        algo: args.algo.clone(),
        pool: args.pool.clone(),
        page_size: args.page_size,
        max_pool_percent: args.max_pool_percent,
        accept_threshold_percent: args.accept_threshold_percent,
        shrinker: args.shrinker,
        incompressible: if args.reject_incompressible {
            Incompressible::Reject
        } else {
            Incompressible::StoreAsIs
        },
        swap_dir: if args.swap_in_memory {
            None
        } else {
            Some(args.swap_dir.clone().unwrap_or_else(std::env::temp_dir))
        },
    };
    let r = replay::run(inputs[0].bytes(), &trace, &cfg, &super::progress::Bar::new())?;
    super::emit(args.json, &r, replay::render)?;
    anyhow::ensure!(r.verified, "pages swapped in differ from the pages swapped out");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_1024_based_suffixes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("256m").unwrap(), 256 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert!(parse_size("12Q").is_err() && parse_size("M").is_err() && parse_size("").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
