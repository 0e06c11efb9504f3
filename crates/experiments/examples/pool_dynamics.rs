//! Where the replay's zram pool and the kernel's part (docs/BENCHMARKS.md, "The pool's
//! dynamics"): the kernel's swapped set, read from its device at the end of a `validate replay`
//! run (`ZMEM_VALIDATE_CAPTURE=file`), against the replay's swapped set at the same point.
//!
//! ```text
//! cargo run --release -p zmem-experiments --example pool_dynamics -- \
//!     PAGES TRACE KERNEL_CAPTURE REPLAY_RAM_PAGES [ALGO]
//! ```
//! Each of the two sets is written, in page-id order, to a fresh zmem zram device: the pool a
//! set takes packed afresh. The kernel's capture is also written to a fresh kernel zram device
//! (as root), which gives the kernel's packing of the same set. Then:
//! - the same pages packed by both (fresh) shows whether the two pack alike;
//! - the two sets packed alike shows whether they select pages that compress differently;
//! - each live pool against its set packed afresh shows each side's fragmentation.

use std::collections::HashMap;
use std::path::Path;

use zmem_pages::PageSet;
use zmem_pages::trace::Trace;
use zmem_sim::NoProgress;
use zmem_sim::cputime::Elapsed;
use zmem_sim::device::{OnRefusal, ZramRunConfig, build_device, write_pages};
use zmem_sim::replay::{self, ReplayConfig, Simulator, SwapKind};

const PS: usize = 4096;

fn hash(p: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.hash(&mut h);
    h.finish()
}

/// The pool of `pages` (concatenated) on a fresh zmem device: (pages, compr_data_size,
/// mem_used_total, huge_pages).
fn packed(pages: &[u8], algo: &str) -> (u64, u64, u64, u64) {
    let n = (pages.len() / PS) as u64;
    let cfg = ZramRunConfig { algo: algo.into(), page_size: PS, ..ZramRunConfig::default() };
    let z = build_device(&cfg, n.max(1)).expect("device");
    write_pages(&z, pages, PS, 0, OnRefusal::Fail, algo, &NoProgress).expect("write");
    let m = z.mm_stat();
    (n, m.compr_data_size, m.mem_used_total, m.huge_pages)
}

fn row(name: &str, (n, compr, used, huge): (u64, u64, u64, u64)) {
    println!(
        "{name:<44} {n:>7} pages  compr {compr:>10} ({:>6.1} B/page)  pool {used:>10}  huge {huge}",
        compr as f64 / n.max(1) as f64
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        eprintln!("usage: pool_dynamics PAGES TRACE KERNEL_CAPTURE REPLAY_RAM_PAGES [ALGO]");
        std::process::exit(2);
    }
    let algo = a.get(5).map_or("lzo-rle", String::as_str);
    let set = PageSet::open(Path::new(&a[1])).expect("pages");
    let pages = set.bytes();
    let n = pages.len() / PS;
    let trace = replay::accesses(&Trace::open(Path::new(&a[2])).expect("trace"));
    let capture = std::fs::read(&a[3]).expect("capture");
    let ram_pages: u64 = a[4].parse().expect("ram pages");

    // The replay, stopped where the kernel's capture was taken: after the last access.
    let cfg = ReplayConfig {
        ram_pages,
        swap: SwapKind::Zram,
        algo: algo.into(),
        pool: "zsmalloc".into(),
        page_size: PS,
        ..ReplayConfig::default()
    };
    let mut sim = Simulator::new(pages, &cfg).expect("simulator");
    for &x in &trace {
        sim.access(x).expect("access");
    }
    let zero = |p: &[u8]| p.iter().all(|&b| b == 0);
    let page = |i: usize| &pages[i * PS..(i + 1) * PS];
    let replay_set: Vec<usize> =
        (0..n).filter(|&i| sim.in_swap(i as u64) && !zero(page(i))).collect();
    let r = sim.finish(Elapsed::default());

    // The kernel's set: the capture's pages (slot 0 is the swap header) matched to page ids by
    // content; equal pages are interchangeable, so a content's ids are taken in turn.
    let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
    for i in (0..n).rev() {
        by_hash.entry(hash(page(i))).or_default().push(i);
    }
    let (mut kernel_set, mut unmatched) = (Vec::new(), 0u64);
    for p in capture.chunks_exact(PS).skip(1) {
        if zero(p) {
            continue;
        }
        match by_hash.get_mut(&hash(p)).and_then(Vec::pop) {
            Some(i) => kernel_set.push(i),
            None => unmatched += 1,
        }
    }
    kernel_set.sort_unstable();
    let cat = |ids: &[usize]| -> Vec<u8> { ids.iter().flat_map(|&i| page(i).to_vec()).collect() };
    let ks: std::collections::HashSet<usize> = kernel_set.iter().copied().collect();
    let zs: std::collections::HashSet<usize> = replay_set.iter().copied().collect();
    let mut only_k: Vec<usize> = ks.difference(&zs).copied().collect();
    let mut only_z: Vec<usize> = zs.difference(&ks).copied().collect();
    let mut both: Vec<usize> = ks.intersection(&zs).copied().collect();
    only_k.sort_unstable();
    only_z.sort_unstable();
    both.sort_unstable();

    println!(
        "pages {n}, accesses {}, replay RAM {ram_pages} pages, {algo}; capture: {} slots, \
         {unmatched} non-zero pages not in the page set",
        trace.len(),
        capture.len() / PS
    );
    println!(
        "replay's live pool at the end: compr {} pool {} (peak {}), {} pages stored",
        r.counter("compr_data_size"),
        r.counter("mem_used_total"),
        r.max_pool_bytes,
        r.counter("orig_data_size") / PS as u64
    );
    row("kernel's swapped set, zmem fresh", packed(&cat(&kernel_set), algo));
    row("replay's swapped set, zmem fresh", packed(&cat(&replay_set), algo));
    row("in both", packed(&cat(&both), algo));
    row("kernel's only", packed(&cat(&only_k), algo));
    row("replay's only", packed(&cat(&only_z), algo));
    if zmem_kernel::zram_device::unavailable_reason().is_none() {
        let body: Vec<u8> =
            capture.chunks_exact(PS).skip(1).filter(|p| !zero(p)).flatten().copied().collect();
        match zmem_kernel::zram_device::mm_stat_of(algo, &body) {
            Ok(m) => row(
                "kernel's swapped set, kernel fresh",
                ((body.len() / PS) as u64, m.compr_data_size, m.mem_used_total, m.huge_pages),
            ),
            Err(e) => eprintln!("kernel fresh device: {e}"),
        }
    }
}
