//! The kernel's side of a validation: the player (`player.rs`) performs the trace in a memory
//! cgroup limited to the RAM budget, with a fresh kernel zram device of the highest swap priority
//! as its swap, while this side streams the work to it and samples the device.
//!
//! What is counted, and where from (per device and per cgroup, never system-wide, because other
//! programs swap on the same machine at the same time):
//! - swap-outs: the device's completed write I/Os (`/sys/block/zramN/stat`), less the swap
//!   header's; each is one page (`swap_writepage` -> `zram_submit_bio`, one 4 KiB bio). Zero
//!   pages never reach the device (the swap layer's zeromap, Linux 6.12+), so this is
//!   `pswpout`'s meaning: pages written to swap.
//! - swap-ins: the device's completed read I/Os (`pswpin`'s meaning: pages read from swap).
//! - pool: `mm_stat`'s `mem_used_total`, sampled every few milliseconds while the player runs
//!   (the peak is the larger of the samples' and the device's own `mem_used_max`) and read once
//!   the player has done its last access (final), each less the pool the swap header alone
//!   occupied before the run.
//! - the cgroup's `pgmajfault` (every swap-in fault, zero pages included) and `swap` (pages in
//!   swap at the end), a cross-check that the device's traffic is the player's.
//! - the player's CPU time when it says `done`: `/proc/PID/schedstat`'s first field (nanoseconds
//!   on a CPU, user and system; `utime + stime` of `/proc/PID/stat` where schedstat is missing).
//!   A memory cgroup at its limit reclaims in the faulting task (direct reclaim: the LRU scans,
//!   the unmapping, zram's compression in `zram_write_page`), and a swap-in's read and
//!   decompression run in the fault too, so the kernel's swap work is in it; so is the player's
//!   own (reading the pipe, copying pages), which a run without memory pressure measures alone.
//! - the player's CPU time in its faulting accesses (`player.rs`): what reclaim and swap-ins
//!   cost it, beside its first touches' own faults.
//! - `/proc/vmstat`'s `swap_ra` and `swap_ra_hit` before and after the accesses: system-wide
//!   (6.18's `memory.stat` has no readahead counters), so others' swap-ins are in them.
//! - the swap-in latency the player timed (`player.rs`: accesses to pages `mincore` said were
//!   out of RAM), its count, p50 and p99.
//!
//! Reclaim's view of the cgroup is flushed statistics. The sizes of the LRU lists
//! (`inactive_is_low()`) and the refault activations (`WORKINGSET_ACTIVATE_ANON`, which set
//! `may_deactivate` in `prepare_scan_control()`) are read with `lruvec_page_state()`, which
//! returns the values of the last rstat flush. Reclaim itself flushes at most every few seconds
//! (`mem_cgroup_flush_stats_ratelimited()`); the periodic flusher runs every 2 s. A player that
//! runs for less than that reclaims with stale sizes: the active list is never deactivated until
//! the next flush, and the same run swaps up to twice as much, depending on when that flush
//! comes (measured: 6,900 or 12,400 swap-outs for one run, docs/BENCHMARKS.md). Reading
//! `memory.stat` flushes the cgroup's statistics, so by default each sample reads it, and
//! reclaim sees the current sizes (the replay's model); `flush_stats: false` leaves the kernel
//! to its own flushes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::page_cache::TraceFile;
use crate::player::{self, DONE, FILES, READY, SWAPINS};
use zmem_kernel::KernelError;
use zmem_kernel::harness::{self as live, Harness, HarnessConfig, ZramSwapConfig};
use zmem_pages::access::Access;

/// Where set, the path the kernel's run saves its zram device's contents to once the player has
/// done its last access (a raw page set, `zmem capture --zram`'s reading): a diagnostic.
pub const CAPTURE_ENV: &str = "ZMEM_VALIDATE_CAPTURE";

/// How the kernel's run is set up.
#[derive(Debug, Clone)]
pub struct KernelRunConfig {
    /// The cgroup's memory limit in bytes.
    pub memory_limit: u64,
    /// The zram device's `comp_algorithm`.
    pub algorithm: String,
    pub page_size: usize,
    /// The longest the player may take.
    pub timeout: Duration,
    /// Read the cgroup's `memory.stat` at every sample, so reclaim works with current list sizes
    /// (see the module doc).
    pub flush_stats: bool,
    /// Without `flush_stats`: read it at every sample until half a flush period (1 s) after the
    /// device stored its first page (the memcg's first reclaim), then leave the kernel to its
    /// own flushes: the replay's model of a workload that ran before its trace
    /// (`StatsFlush::KERNEL`: current statistics through the warm-up, a snapshot half a period
    /// after the first reclaim, the flusher after that).
    pub flush_through_warm_up: bool,
    /// The file the trace's file reads read ([`crate::page_cache`]), put out of the page cache
    /// before the run; `None` for a trace without page cache.
    pub file: Option<std::sync::Arc<TraceFile>>,
}

/// How long after the first swap-out a warm-up flush goes on
/// ([`KernelRunConfig::flush_through_warm_up`]): half the kernel's `FLUSH_TIME`, as the replay's
/// [`zmem_sim::replay::StatsFlush::KERNEL`] hands over.
const WARM_UP_AFTER_RECLAIM: Duration = Duration::from_nanos(zmem_sim::replay::FLUSH_TIME_NS / 2);

/// What the kernel did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelRun {
    /// The zram device it made (`/dev/zramN`; removed since).
    pub device: String,
    /// The memory cgroup it made (removed since).
    pub cgroup: String,
    /// Pages written to the zram device.
    pub swap_outs: u64,
    /// Pages read from the zram device.
    pub swap_ins: u64,
    /// Largest pool during the run, less the header's pool.
    pub peak_pool_bytes: u64,
    /// Pool after the last access, less the header's pool.
    pub final_pool_bytes: u64,
    /// Pool the swap header alone took before the run (subtracted above), and its pages.
    pub header_pool_bytes: u64,
    pub header_pages: u64,
    /// `mm_stat` samples taken during the run.
    pub pool_samples: u64,
    /// Whether each sample also flushed the cgroup's statistics (read `memory.stat`).
    pub stats_flushed: bool,
    /// The cgroup's charge once the player had mapped its region, before its first access: the
    /// player's own memory (binary, stack, heap, page tables so far).
    pub player_overhead_bytes: u64,
    /// Pages of the player's region in RAM after the last access (`mincore`).
    pub resident_pages: u64,
    /// The cgroup's `pgmajfault` during the accesses (swap-in faults, zero pages included).
    pub cgroup_major_faults: u64,
    /// The cgroup's pages in swap after the last access (zeromap slots included).
    pub cgroup_swap_pages: u64,
    /// `mm_stat` after the last access.
    pub mm_stat: String,
    /// Other active swap areas seen during the run (they share the system's swap traffic).
    pub other_swaps: Vec<String>,
    /// Seconds the player took for the accesses.
    pub play_secs: f64,
    /// The player's CPU seconds (user and system) from its start to its `done`.
    pub player_cpu_secs: f64,
    /// The player's thread CPU seconds in the accesses that faulted (first touches and
    /// swap-ins, with the reclaim their charges did: `player.rs`).
    pub fault_cpu_secs: f64,
    /// Swap-ins the player timed (accesses to pages out of RAM), and their p50 and p99.
    pub timed_swap_ins: u64,
    pub swap_in_p50_ns: u64,
    pub swap_in_p99_ns: u64,
    /// `/proc/vmstat`'s `swap_ra` and `swap_ra_hit` over the player's accesses (its `ready` to
    /// its `done`); `None` where /proc/vmstat has no such counters. System-wide: 6.18's
    /// `memory.stat` has no readahead counters, so these include every other process's swap-ins
    /// meanwhile (the boot's DAMON pages other processes out to any swap there is). On our zram
    /// device the player's own faults read nothing ahead (`SWP_SYNCHRONOUS_IO`).
    pub readahead: Option<zmem_kernel::stat::ReadaheadCounters>,
    /// The player's file reads, and those that found their page out of the page cache (major
    /// faults, by `mincore`).
    pub file_reads: u64,
    pub file_faults: u64,
    /// The cgroup's `workingset_refault_file` over the accesses: file faults of pages evicted
    /// with a shadow left.
    pub file_refaults: u64,
}

/// CPU seconds process `pid` has run so far: `/proc/PID/schedstat`'s run time (nanoseconds),
/// else `utime + stime` of `/proc/PID/stat` (clock ticks).
pub fn process_cpu_secs(pid: u32) -> Result<f64, KernelError> {
    if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        && let Some(Ok(ns)) = s.split_whitespace().next().map(str::parse::<u64>)
    {
        return Ok(ns as f64 / 1e9);
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| KernelError::Setup(format!("/proc/{pid}/stat: {e}")))?;
    parse_stat_cpu_ticks(&stat)
        .map(|ticks| {
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
            ticks as f64 / hz as f64
        })
        .ok_or_else(|| KernelError::Setup(format!("/proc/{pid}/stat: unreadable {stat:?}")))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line, counted after the command's
/// closing parenthesis (the command may hold spaces).
fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// `memory.stat`'s file refaults (cgroup v1 and v2 alike: 6.18 mm/memcontrol-v1.c
/// `memcg1_stat_names`, mm/memcontrol.c `memory_stats`).
pub(crate) const FILE_REFAULTS: &str = "workingset_refault_file";

/// The player's stream header for `trace` over `pages` region pages, with the file where the
/// trace reads one.
pub(crate) fn player_header(
    page_size: usize,
    pages: u64,
    trace: &[Access],
    file: Option<&TraceFile>,
) -> player::Header {
    player::Header {
        page_size,
        pages,
        records: trace.len() as u64,
        file_pages: file.map_or(0, TraceFile::pages),
        file: file.map(|f| f.path().to_path_buf()),
    }
}

/// The reads and faults of the player's `files R M` line (0 where unreadable).
pub(crate) fn files_said(line: &str) -> (u64, u64) {
    let mut f = line[line.find(FILES).unwrap_or(0)..].split_whitespace().skip(1);
    let mut next = || f.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (next(), next())
}

/// One memory.stat counter of the cgroup (v1 names; v2 has the same for these two).
fn cgroup_stat(h: &Harness, key: &str) -> Result<u64, KernelError> {
    let text = h.cgroup.read("memory.stat")?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
        .ok_or_else(|| KernelError::Setup(format!("memory.stat has no {key}")))
}

/// The cgroup's OOM kills so far (v1 `memory.oom_control`, v2 `memory.events`), where the
/// kernel says.
fn oom_kills(h: &Harness) -> Option<u64> {
    let text =
        h.cgroup.read("memory.oom_control").or_else(|_| h.cgroup.read("memory.events")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}

/// Why the player stopped answering: the kernel's OOM killer where the cgroup counted a kill,
/// else its exit status.
fn player_failure(h: &mut Harness, before: &str) -> KernelError {
    // Its stdout can close a moment before its exit can be reaped.
    let until = Instant::now() + Duration::from_secs(1);
    let status = loop {
        let st = h.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
        if st.is_some() || Instant::now() > until {
            break st;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = status.map_or("still running".into(), |s| s.to_string());
    match oom_kills(h) {
        Some(k) if k > 0 => KernelError::PlayerFailed(format!(
            "the kernel's OOM killer killed the player before {before:?} ({status}): the RAM \
             budget is too tight for this trace under the kernel's reclaim"
        )),
        _ => KernelError::PlayerFailed(format!("the player ended before {before:?} ({status})")),
    }
}

/// Whether zswap is enabled now (`/sys/module/zswap/parameters/enabled`; no zswap: no).
fn zswap_enabled() -> bool {
    use zmem_kernel::zswap_state::{params_at, parse_bool_param};
    params_at(std::path::Path::new("/sys"))
        .is_ok_and(|p| p.values.get("enabled").and_then(|v| parse_bool_param(v)) == Some(true))
}

/// Fails the run where zswap was enabled at some point of it: zswap takes every swap-out before
/// any swap device (`swap_writepage()` -> `zswap_store()`), ours included, so the device saw
/// none of the pages it did (measured: 0 swap-outs on our device while another program's test
/// had zswap on).
fn check_zswap(seen: bool) -> Result<(), KernelError> {
    if seen {
        return Err(KernelError::PlayerFailed(
            "zswap was enabled during the run (not by us): it takes swap-outs before any swap \
             device, so our zram device's counts are not the player's; run again with zswap off"
                .into(),
        ));
    }
    Ok(())
}

/// Pages another program's reclaim may have put on our device before this check calls it
/// theirs: one reclaim batch (`SWAP_CLUSTER_MAX`).
const FOREIGN_SLACK: u64 = 32;

/// Fails the run where other programs used our device: our device has the highest priority, so
/// when the machine itself is short of memory, global reclaim swaps other processes' pages to
/// it (measured: 9,606 pages stored for the cgroup's 1,164 in swap, while another program's
/// test filled memory). The device then stores more pages than the cgroup has in swap (which
/// counts the zeromap's too), or serves more reads than the cgroup had major faults.
fn check_only_ours(
    stored: u64,
    cgroup_swap_pages: u64,
    reads: u64,
    cgroup_major_faults: u64,
) -> Result<(), KernelError> {
    if stored > cgroup_swap_pages + FOREIGN_SLACK || reads > cgroup_major_faults + FOREIGN_SLACK {
        return Err(KernelError::PlayerFailed(format!(
            "other programs swapped to our device during the run (it stores {stored} pages for \
             the cgroup's {cgroup_swap_pages} in swap, and served {reads} reads for its \
             {cgroup_major_faults} major faults): the machine was short of memory; run again"
        )));
    }
    Ok(())
}

fn note_other_swaps(h: &Harness, seen: &mut Vec<String>) -> Result<(), KernelError> {
    for a in live::other_swaps(&[h.swap.path()])? {
        let s = format!("{} (priority {})", a.filename, a.priority);
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    Ok(())
}

/// Runs `trace` over `pages` in the player that `player_cmd` starts (its stdin, stdout and
/// stderr are set here), and measures the kernel. The caller checked every page id is in range.
/// When `stop` is set (a signal handler's flag) the run ends with [`KernelError::Interrupted`],
/// having removed what it made, like any other failure.
pub fn run(
    pages: &[u8],
    trace: &[Access],
    cfg: &KernelRunConfig,
    mut player_cmd: Command,
    stop: &AtomicBool,
) -> Result<KernelRun, KernelError> {
    let n = (pages.len() / cfg.page_size) as u64;
    if let Some(f) = &cfg.file {
        f.drop_cached()?;
    }
    let hcfg = HarnessConfig {
        swap: ZramSwapConfig {
            algorithm: cfg.algorithm.clone(),
            // Every page can be in swap at once, with room for the header and slack for the
            // swap allocator's clusters.
            disksize: (n + 1024) * cfg.page_size as u64,
            // The highest priority: the player's pages go to this device, whatever else is on.
            priority: 32767,
            mem_limit: None,
        },
        memory_limit: cfg.memory_limit,
    };
    let mut h = Harness::new(&hcfg)?;
    let mut out = KernelRun {
        device: h.swap.path().display().to_string(),
        cgroup: h.cgroup.path().display().to_string(),
        ..KernelRun::default()
    };
    note_other_swaps(&h, &mut out.other_swaps)?;
    let mm0 = h.swap.mm_stat()?;
    out.header_pool_bytes = mm0.mem_used_total;
    out.header_pages = mm0.orig_data_size / cfg.page_size as u64;

    player_cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let child = h.spawn(player_cmd)?;
    let stdin = child.child_mut().stdin.take().expect("piped");
    let stdout = child.child_mut().stdout.take().expect("piped");
    let (rx, reader) = line_reader(stdout);

    let result = std::thread::scope(|s| {
        let r = measure(s, &mut h, stdin, &rx, Work { pages, trace, cfg, stop }, &mut out);
        if r.is_err() {
            // Killing the player breaks the pipe, so the writer thread ends before the scope.
            h.child = None;
        }
        r
    });
    // The player exits once stdin is closed; the guards kill it otherwise.
    if let Some(c) = h.child.as_mut() {
        let until = Instant::now() + Duration::from_secs(2);
        while c.try_wait()?.is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    drop(h);
    let _ = reader.join();
    result.map(|()| out)
}

/// The pages and trace the player performs, and how.
#[derive(Clone, Copy)]
struct Work<'a> {
    pages: &'a [u8],
    trace: &'a [Access],
    cfg: &'a KernelRunConfig,
    stop: &'a AtomicBool,
}

/// Streams the work to the player (from a thread of `s`) while sampling the device, and reads the
/// counters once the player has done its last access.
fn measure<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    h: &mut Harness,
    mut stdin: std::process::ChildStdin,
    rx: &mpsc::Receiver<String>,
    work: Work<'env>,
    out: &mut KernelRun,
) -> Result<(), KernelError> {
    let Work { pages, trace, cfg, stop } = work;
    let ps = cfg.page_size;
    let n = (pages.len() / ps) as u64;
    let id = h.swap.id();
    let stat0 = zmem_kernel::stat::zram_block_stat(id)?;
    let header = player_header(ps, n, trace, cfg.file.as_deref());
    std::io::Write::write_all(&mut stdin, &header.encode())
        .map_err(|e| KernelError::Setup(format!("player: {e}")))?;
    let deadline = Instant::now() + cfg.timeout;
    let wait_line = |h: &mut Harness, want: &str| -> Result<String, KernelError> {
        loop {
            match rx.recv_timeout(Duration::from_millis(5)) {
                // From the word on: a test harness may print its own text before it.
                Ok(l) if l.contains(want) => return Ok(l[l.find(want).unwrap_or(0)..].to_string()),
                Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(player_failure(h, want)),
            }
            if stop.load(Ordering::Relaxed) {
                return Err(KernelError::Interrupted);
            }
            if Instant::now() > deadline {
                return Err(KernelError::PlayerFailed(format!(
                    "the player took more than {} s",
                    cfg.timeout.as_secs()
                )));
            }
        }
    };
    wait_line(h, READY)?;
    out.player_overhead_bytes = h.cgroup.usage()?;
    let faults0 = cgroup_stat(h, "pgmajfault")?;
    let refaults0 = cgroup_stat(h, FILE_REFAULTS)?;
    let ra0 = zmem_kernel::stat::readahead_counters().ok();
    let started = Instant::now();
    // The player's stdin is written from a thread while this one samples the device.
    let writer = s.spawn(move || {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, stdin);
        player::write_stream_records(&mut w, pages, ps, trace)
            .and_then(|()| w.into_inner().map_err(|e| e.into_error()))
    });
    let mut peak = 0;
    out.stats_flushed = cfg.flush_stats;
    // The device's stored bytes before the first swap-out (its swap header), and when it came.
    let stored0 = h.swap.mm_stat()?.orig_data_size;
    let first_swap_out = std::cell::Cell::new(None::<Instant>);
    let warm = |now: Instant| {
        first_swap_out.get().is_none_or(|t| now.duration_since(t) < WARM_UP_AFTER_RECLAIM)
    };
    let sample = |h: &Harness, peak: &mut u64, n: &mut u64| -> Result<(), KernelError> {
        if cfg.flush_stats || (cfg.flush_through_warm_up && warm(Instant::now())) {
            h.cgroup.read("memory.stat")?;
        }
        let mm = h.swap.mm_stat()?;
        if first_swap_out.get().is_none() && mm.orig_data_size > stored0 {
            first_swap_out.set(Some(Instant::now()));
        }
        *peak = (*peak).max(mm.mem_used_total);
        *n += 1;
        Ok(())
    };
    let mut samples = 0;
    let mut last_swaps = Instant::now();
    let mut zswap_seen = zswap_enabled();
    let pid = h.child.as_ref().map(|c| c.pid());
    let done = loop {
        sample(h, &mut peak, &mut samples)?;
        if last_swaps.elapsed() > Duration::from_millis(200) {
            note_other_swaps(h, &mut out.other_swaps)?;
            zswap_seen |= zswap_enabled();
            last_swaps = Instant::now();
        }
        match rx.recv_timeout(Duration::from_millis(2)) {
            Ok(l) if l.contains(SWAPINS) => {
                let mut f = l[l.find(SWAPINS).unwrap_or(0)..].split_whitespace().skip(1);
                let mut next = || f.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                (out.timed_swap_ins, out.swap_in_p50_ns, out.swap_in_p99_ns) =
                    (next(), next(), next());
                out.fault_cpu_secs = next() as f64 / 1e9;
            }
            Ok(l) if l.contains(FILES) => (out.file_reads, out.file_faults) = files_said(&l),
            Ok(l) if l.contains(DONE) => {
                // The player waits for stdin's end now: its CPU time is that of the run.
                if let Some(pid) = pid {
                    out.player_cpu_secs = process_cpu_secs(pid)?;
                }
                break l[l.find(DONE).unwrap_or(0)..].to_string();
            }
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Surface the writer's error (a broken pipe says little) or the exit.
                drop(wait_line(h, DONE)?);
            }
        }
        if stop.load(Ordering::Relaxed) {
            return Err(KernelError::Interrupted);
        }
        if Instant::now() > deadline {
            return Err(KernelError::PlayerFailed(format!(
                "the player took more than {} s",
                cfg.timeout.as_secs()
            )));
        }
    };
    out.play_secs = started.elapsed().as_secs_f64();
    out.readahead = ra0.zip(zmem_kernel::stat::readahead_counters().ok()).map(|(b, a)| a.since(&b));
    let stdin = writer
        .join()
        .map_err(|_| KernelError::Panicked)?
        .map_err(|e| KernelError::Setup(format!("writing to the player: {e}")))?;
    let mut said = done.split_whitespace().skip(1).map(str::parse::<u64>);
    match (said.next(), said.next()) {
        (Some(Ok(accesses)), Some(Ok(resident))) if accesses == trace.len() as u64 => {
            out.resident_pages = resident;
        }
        _ => return Err(KernelError::Setup(format!("the player said {done:?}"))),
    }
    // The player now holds every page and waits for stdin's end: read the counters.
    let mm = h.swap.mm_stat()?;
    let stat = zmem_kernel::stat::zram_block_stat(id)?;
    sample(h, &mut peak, &mut samples)?;
    peak = peak.max(mm.mem_used_max);
    out.cgroup_major_faults = cgroup_stat(h, "pgmajfault")?.saturating_sub(faults0);
    out.file_refaults = cgroup_stat(h, FILE_REFAULTS)?.saturating_sub(refaults0);
    out.cgroup_swap_pages = cgroup_stat(h, "swap")? / ps as u64;
    note_other_swaps(h, &mut out.other_swaps)?;
    check_zswap(zswap_seen || zswap_enabled())?;
    let stored = (mm.orig_data_size / ps as u64).saturating_sub(out.header_pages);
    check_only_ours(
        stored,
        out.cgroup_swap_pages,
        stat.read_ios - stat0.read_ios,
        out.cgroup_major_faults.saturating_sub(out.file_faults),
    )?;
    out.swap_outs = stat.write_ios - stat0.write_ios;
    out.swap_ins = stat.read_ios - stat0.read_ios;
    out.peak_pool_bytes = peak.saturating_sub(out.header_pool_bytes);
    out.final_pool_bytes = mm.mem_used_total.saturating_sub(out.header_pool_bytes);
    out.pool_samples = samples;
    out.mm_stat = mm.to_string().trim().to_string();
    // A diagnostic (docs/BENCHMARKS.md, the pool's dynamics): the device's contents while the
    // player still holds its pages, read as `zmem capture --zram` does, after every counter above.
    if let Some(to) = std::env::var_os(CAPTURE_ENV) {
        let (set, _) = zmem_kernel::capture::zram::capture_device(h.swap.path(), &mut |_, _| {})
            .map_err(|e| {
                KernelError::Setup(format!("capturing {}: {e}", h.swap.path().display()))
            })?;
        set.save_raw(std::path::Path::new(&to))
            .map_err(|e| KernelError::Setup(format!("saving the capture: {e}")))?;
    }
    drop(stdin);
    Ok(())
}

/// A thread that sends each line the player writes to `stdout` down a channel, until the pipe
/// closes or nobody listens: the measuring loop reads the player's answers with a timeout.
pub(crate) fn line_reader(
    stdout: std::process::ChildStdout,
) -> (mpsc::Receiver<String>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(l) = line else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    (rx, reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_shared_its_device_fails() {
        assert!(check_only_ours(1150, 1152, 156, 159).is_ok());
        assert!(check_only_ours(1160, 1130, 160, 150).is_ok(), "within one batch");
        let e = check_only_ours(9606, 1164, 163, 159).unwrap_err().to_string();
        assert!(e.contains("other programs"), "{e}");
        assert!(check_only_ours(1000, 1100, 400, 150).is_err(), "reads not the cgroup's");
    }

    #[test]
    fn a_run_that_met_zswap_fails() {
        assert!(check_zswap(false).is_ok());
        let e = check_zswap(true).unwrap_err().to_string();
        assert!(e.contains("zswap was enabled"), "{e}");
    }

    #[test]
    fn cpu_ticks_are_read_after_the_command() {
        let line = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 17 5 0 0 20 0 1 0 99 0 0";
        assert_eq!(parse_stat_cpu_ticks(line), Some(22));
        assert_eq!(parse_stat_cpu_ticks("42 (x) S 1"), None);
        // This very process has run.
        assert!(process_cpu_secs(std::process::id()).unwrap() > 0.0);
    }
}
