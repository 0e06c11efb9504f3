//! The replay's side of `bench/readahead-live.sh`: two sequential passes over N pages of
//! bench/readahead-seq.c's content, under a RAM budget, with zswap (in front of an in-memory swap
//! file) or without it (a pool too small to store anything: every page goes to the device), and
//! the readahead given. Prints the counters /proc/vmstat would show.
//!
//! `cargo run -p zmem-sim --example readahead_two_passes -- N RAM_PAGES vma|cluster|none zswap|device`

use zmem_sim::NoProgress;
use zmem_sim::replay::{self, Access, ReplayConfig};
use zmem_zswap::ZswapParams;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).map_or(4096, |s| s.parse().unwrap());
    let ram: u64 = a.get(2).map_or(2000, |s| s.parse().unwrap());
    let mode = a.get(3).map_or("vma", String::as_str).parse().unwrap();
    let zswap = a.get(4).is_none_or(|s| s == "zswap");
    let ps = 4096;
    let pages: Vec<u8> = (0..n * ps)
        .map(|j| b"sequential readahead "[(j + j / ps) % 21] ^ (j / ps) as u8 | 1)
        .collect();
    let trace: Vec<Access> = (0..2 * n as u64)
        .map(|k| Access { page: k % n as u64, write: k < n as u64, file: false, time_ns: k })
        .collect();
    let d = ReplayConfig::default();
    let cfg = ReplayConfig {
        ram_pages: ram,
        readahead: mode,
        zswap: ZswapParams { max_pool_percent: if zswap { 1600 } else { 0 }, ..d.zswap.clone() },
        ..d
    };
    let r = replay::run(&pages, &trace, &cfg, &NoProgress).unwrap();
    println!(
        "n {n} ram {ram} {mode} {}: major faults {} swap_ra {} swap_ra_hit {} zswpin {} \
         disk_reads {} swap_outs {} ra_reclaimed {} verified {}",
        if zswap { "zswap" } else { "device" },
        r.swap_ins,
        r.swap_ra,
        r.swap_ra_hit,
        r.counter("zswpin"),
        r.disk_reads,
        r.swap_outs,
        r.ra_reclaimed,
        r.verified
    );
}
