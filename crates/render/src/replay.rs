//! A replay's result and latency histograms as terminal text (histograms in bpftrace's log2
//! bucket format, as the allocator RFC printed them).

use zmem_sim::latency::LatencyHist;
use zmem_sim::replay::{ReplayResult, SwapKind};

/// Human-readable report.
pub fn replay(r: &ReplayResult) -> String {
    let mut s = format!(
        "replay: {} accesses ({} reads, {} writes) over {} pages, RAM {} pages, swap {} ({}, {})\n",
        r.accesses,
        r.reads,
        r.writes,
        r.pages,
        r.ram_pages,
        match r.swap {
            SwapKind::Zram => "zram",
            SwapKind::Zswap => "zswap",
        },
        r.algo,
        r.pool
    );
    s += &format!(
        "first touches {}, swap-outs {} ({} zero pages to the zeromap), swap-ins {}\n\
         stored {}, rejected {} ({} kept in RAM), max pool {} bytes, swap file reads {} writes {}\n",
        r.first_touches,
        r.swap_outs,
        r.zero_swap_outs,
        r.swap_ins,
        r.stored,
        r.rejected,
        r.kept_in_ram,
        r.max_pool_bytes,
        r.disk_reads,
        r.disk_writes
    );
    s += &format!(
        "swappiness {}; readahead {} (page-cluster {}): swap_ra {}, swap_ra_hit {}; read-ahead \
         pages reclaimed before a fault {} ({} dropped clean); swapped-in pages dropped clean \
         (their slot kept) {}, slots freed on activation (swap over half full) {}\n",
        r.swappiness,
        r.readahead,
        r.page_cluster,
        r.swap_ra,
        r.swap_ra_hit,
        r.ra_reclaimed,
        r.ra_dropped,
        r.clean_dropped,
        r.activation_freed
    );
    if r.file_pages > 0 {
        s += &format!(
            "page cache: a file of {} pages, {} reads, {} major faults ({} refaults: \
             workingset_refault_file), {} pages reclaimed\n",
            r.file_pages, r.file_reads, r.file_faults, r.file_refaults, r.file_evictions
        );
    }
    if r.writeback_cached > 0 {
        s += &format!(
            "zswap's writeback through the swap cache: {} pages back in RAM clean, {} faults \
             found one there (minor)\n",
            r.writeback_cached, r.writeback_cache_hits
        );
    }
    if r.kswapd_wakes > 0 || r.direct_reclaimed > 0 {
        s += &format!(
            "machine-wide reclaim: kswapd woken {} times, reclaimed {} pages (pgsteal_kswapd); \
             direct reclaim {} pages (pgsteal_direct)\n",
            r.kswapd_wakes, r.kswapd_reclaimed, r.direct_reclaimed
        );
    }
    s += &r
        .counters
        .iter()
        .map(|c| format!("{} {}", c.name, c.value))
        .collect::<Vec<_>>()
        .join(", ");
    s += "\n";
    s += &format!(
        "CPU {:.3} s, wall {:.3} s, verified: {}\n",
        r.cpu_secs,
        r.wall_secs,
        if r.verified { "yes" } else { "NO" }
    );
    s += &format!(
        "swap device {} ({}): read p50 {} us p99 {} us, write p50 {} us p99 {} us; charged {} \
         reads, {} writes, {:.3} s busy\n",
        r.device.name,
        r.device.kind,
        us(r.device.read.p50_ns),
        us(r.device.read.p99_ns),
        us(r.device.write.p50_ns),
        us(r.device.write.p99_ns),
        r.device_reads_charged,
        r.device_writes_charged,
        r.device_secs
    );
    let h = &r.swap_in_hists;
    s += "swap-in, end to end:      count     p50 ns     p99 ns\n";
    for (name, x) in [
        ("zswap hit", &h.zswap_hit),
        ("zswap miss + device", &h.zswap_miss),
        ("zram", &h.zram),
        ("zram written back + device", &h.zram_written_back),
        ("all", &r.load_hist),
    ] {
        if x.count > 0 || name == "all" {
            s += &format!("  {name:<26} {:>8} {:>10} {:>10}\n", x.count, x.p50_ns, x.p99_ns);
        }
    }
    if h.readahead.count > 0 {
        let x = &h.readahead;
        s += &format!(
            "  {:<26} {:>8} {:>10} {:>10}\n",
            "(read ahead, per page)", x.count, x.p50_ns, x.p99_ns
        );
    }
    s += &latency_hist("store_ns", &r.store_hist);
    s += &latency_hist("load_ns", &r.load_hist);
    if r.device_write_hist.count > 0 {
        s += &latency_hist("device_write_ns", &r.device_write_hist);
    }
    s
}

/// Nanoseconds as microseconds for text, one decimal below 10 us.
fn us(ns: u64) -> String {
    if ns < 10_000 { format!("{:.1}", ns as f64 / 1e3) } else { format!("{}", ns / 1000) }
}

/// Prints a histogram as bpftrace does: a `@name:` line, then one line per bucket.
pub fn latency_hist(name: &str, h: &LatencyHist) -> String {
    const WIDTH: usize = 52;
    let mut s = format!("@{name}:\n");
    let max = h.buckets.iter().map(|b| b.count).max().unwrap_or(0);
    for b in &h.buckets {
        let head = if b.hi == 2 {
            "[1]".to_string()
        } else {
            format!("[{}, {})", label(b.lo), label(b.hi))
        };
        let bar = if max == 0 { 0 } else { (b.count as f64 / max as f64 * WIDTH as f64) as usize };
        s += &format!("{head:<16}{:>8} |{:<WIDTH$}|\n", b.count, "@".repeat(bar));
    }
    s
}

/// bpftrace's bucket bound: 1024-based K, M, G suffixes where the number divides evenly.
fn label(mut n: u64) -> String {
    for suffix in ["", "K", "M", "G", "T"] {
        if n < 1024 || !n.is_multiple_of(1024) {
            return format!("{n}{suffix}");
        }
        n /= 1024;
    }
    format!("{n}P")
}
