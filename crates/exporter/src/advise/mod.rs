//! `zmem exporter --advise`: the advisor that keeps watching. A background thread samples the
//! pages each live zram device stores (a panel of random slots read a few at a time, as
//! `zmem capture --zram` reads them: [`device`], [`panel`]), keeps each sampled page's stored
//! length for every candidate the running kernel's zram offers (the rolling sample), and
//! re-judges the sample every few seconds with the lab's estimator ([`estimate`]) at the
//! kernel's own swap rates ([`judge`]). Where the kernel has zswap, the same thread, within the
//! same CPU budget (its rounds alternate with zram's), keeps a rolling sample of the processes'
//! resident anonymous pages ([`anon`], [`zswap`]) and judges every compressor zswap can use
//! here the same way, as `device="zswap"`. The scrape adds the last judgement ([`metrics`]).
//! Everything read is read under [`Options::root`] (a fake tree in the tests, [`fake_root`]):
//! a kernel without zram still gets the zswap part, and a metric says zram is absent.
//!
//! **Bounds.** The thread reads the whole process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`: its
//! own work, the HTTP server's scrapes and start-up alike) after every piece of work and sleeps
//! so that the process stays within [`Options::cpu_percent`] of one core (default 1 %), at nice 19 (every other program on the host goes first; not
//! SCHED_IDLE, which starves it on a busy host: [`run`]). The sample holds lengths, not pages
//! (a few bytes per page per candidate). The scrape takes the last judgement by pointer and
//! never blocks on the thread's lock ([`Handle`]), so a scrape never waits on a read, a
//! compression or a judgement.
//!
//! **Idle tracking.** Reading a slot clears its `ZRAM_IDLE` flag (drivers/block/zram/
//! zram_drv.c `zram_bio_read()` -> `zram_accessed()`), which `mark_idle()` (`echo all > idle`)
//! set and which only two passes read: `scan_slots_for_writeback()` (`writeback idle`, needs a
//! `backing_dev`) and `scan_slots_for_recompress()` (`recompress type=idle`, needs a
//! `recomp_algorithm`). A slot read after the mark is neither written back nor recompressed by
//! that pass. The panel bounds the distinct slots ever read (each once per
//! [`Options::refresh`], ten minutes). On a device that has a backing device or a secondary
//! algorithm, its size is chosen so that the stored pages among them are at most
//! [`Options::idle_share_percent`] of the device's (1 % by default, never fewer than
//! [`MIN_SAMPLE`] pages): the most one idle pass can lose. A device with neither has no pass
//! to change, and gets the whole sample asked for. docs/BENCHMARKS.md has the figures.
//!
//! **Processes' pages (zswap).** Reading a page through /proc/PID/mem does not change its swap
//! state: the page was present and not swapped (its pagemap entry) just before, and the read
//! copies it under a reference; nothing unmaps, writes or swaps it. The one exception is a race:
//! reclaim swapping the page out between the pagemap read and the mem read, when the read
//! faults it back in (rare: one page in a window of microseconds). So there is no zswap
//! counterpart of zram's idle marks to protect. The read is not access-neutral, though:
//! fs/proc/base.c `mem_rw()` -> mm/memory.c `access_remote_vm()` -> include/linux/mm.h
//! `get_user_page_vma_remote()` -> mm/gup.c `get_user_pages_remote()`, which adds `FOLL_TOUCH`
//! (`is_valid_gup_args(..., FOLL_TOUCH | FOLL_REMOTE)`), so `follow_page_pte()` calls
//! `folio_mark_accessed()` (mm/swap.c): `PG_referenced` set (a second touch activates the
//! folio), `PG_idle` cleared. DAMON's access check (mm/damon/ops-common.c
//! `damon_folio_young_one()`: `pte_young() || !folio_test_idle()`) then sees that page
//! accessed, so the boot kdamond's cold-page detection counts a read page as used once: its
//! region's access count rises only when the page read is the one DAMON's sampling interval
//! checks in that region (one random page per region), and reclaim may keep a just-read cold
//! page one LRU round longer. The bound: once the sample is full, `--advise-sample` pages per
//! `--advise-refresh` (10,000 per 600 s: about 17 pages a second, 60,000 an hour, each a random
//! resident anonymous page), and while it fills, what 1 % of a core reads.

pub mod anon;
pub mod device;
pub mod estimate;
pub mod judge;
pub mod metrics;
pub mod panel;
pub mod zswap;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zmem_kernel::caps::{self, KernelCaps};
use zmem_kernel::stat as live;
use zmem_lab::cost::Traffic;
use zmem_lab::now::{SwapSample, rates_between};

use device::Device;
use estimate::Population;
use judge::{Basis, Measured, Row};

/// The fewest stored pages the panel aims at, whatever the idle share allows: the lab's
/// minimum sample ([`zmem_lab::sample::MIN_PAGES`]), below which it calls its own advice
/// uncertain.
pub const MIN_SAMPLE: u64 = zmem_lab::sample::MIN_PAGES;

/// What `--advise` is asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most CPU the exporter's process uses with the advisor, in percent of one core
    /// (`--advise-cpu`): the advisor's thread sleeps to keep the whole process within it.
    pub cpu_percent: f64,
    /// Stored pages the sample aims at per device (`--advise-sample`).
    pub sample_pages: u64,
    /// Most of a device's stored pages the panel may hold, in percent (`--advise-idle-share`):
    /// the most one idle pass can lose to the advisor's reads. `None` (auto): 1 % on a device
    /// that can act on idle marks ([`acts_on_idle`]), no cap on one that cannot.
    pub idle_share_percent: Option<f64>,
    /// Each panel slot is read at most once per this (`--advise-refresh`).
    pub refresh: Duration,
    /// Slots read per round (one open of the device).
    pub slots_per_round: usize,
    /// How often the sample is re-judged and the devices looked for.
    pub judge_every: Duration,
    /// The window the swap rates are taken over.
    pub rate_window: Duration,
    /// The CPU budget the recommendation is judged within, in percent of one core (the lab's
    /// default budget).
    pub budget_percent: f64,
    pub seed: u64,
    /// Where the advisor reads the kernel: `sys/`, `proc/` and `dev/` under it (`/` live; a
    /// fake tree in tests). The zram swap rates come from the lab's reader
    /// (`zmem_lab::now::sample`), which reads the live /proc/vmstat and /proc/swaps.
    pub root: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            cpu_percent: 1.0,
            sample_pages: 10_000,
            idle_share_percent: None,
            refresh: Duration::from_secs(600),
            slots_per_round: 4,
            judge_every: Duration::from_secs(5),
            rate_window: Duration::from_secs(60),
            budget_percent: zmem_lab::Budgets::default().cpu_percent_of_core,
            seed: 1,
            root: PathBuf::from("/"),
        }
    }
}

/// One device's last judgement.
#[derive(Debug, Clone)]
pub struct DeviceAdvice {
    pub name: String,
    pub algorithm: String,
    /// Stored pages, and same-filled ones (mm_stat).
    pub population: Population,
    /// Stored pages in the sample (not same-filled).
    pub sample_pages: u64,
    pub panel_slots: u64,
    pub oldest_read: Option<Instant>,
    /// One whole pass over the panel done.
    pub filled: bool,
    pub slots_read: u64,
    pub read_failures: u64,
    /// The last round could be read.
    pub readable: bool,
    /// The idle share caps the panel (the device can act on idle marks, or a share was given).
    pub idle_capped: bool,
    pub traffic: Traffic,
    pub rows: Vec<Row>,
    pub recommended: Option<(String, Basis)>,
}

pub use zswap::ZswapAdvice;

/// What the scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub devices: Vec<DeviceAdvice>,
    /// zswap's judgement, where the kernel has zswap.
    pub zswap: Option<ZswapAdvice>,
    /// zswap is in the kernel (`/sys/module/zswap/parameters`).
    pub zswap_present: bool,
    /// Devices removed or reset while sampled.
    pub devices_lost: u64,
    /// The advisor thread's CPU time.
    pub cpu_seconds: f64,
    /// zram is in the kernel (`/sys/class/zram-control`).
    pub zram_present: bool,
    /// Judgements made.
    pub judgements: u64,
}

/// The advisor, as the scrape sees it: the last judgement, shared (`latest`, which the
/// advisor's thread replaces), and the one the scrapes saw last (`seen`, theirs alone).
///
/// A scrape never waits on the advisor: the thread holds `latest` only to swap one pointer
/// (the judgement is built before, the one it replaces dropped after), and a scrape only
/// tries it (`try_lock`); in the rare instant the thread holds it, the scrape answers the
/// judgement it saw last (at most one judgement, [`Options::judge_every`], older). Waiting
/// there would be waiting on a nice-19 thread (see [`run`]), which a busy host may not run
/// for many milliseconds after preempting it.
#[derive(Debug, Clone, Default)]
pub struct Handle {
    latest: Arc<Mutex<Arc<Snapshot>>>,
    seen: Arc<Mutex<Arc<Snapshot>>>,
}

impl Handle {
    /// The last judgement (or, while the advisor is replacing it, the one before).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        // Both locks guard one pointer, replaced whole: a poisoned one still holds a whole one.
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let latest = match self.latest.try_lock() {
            Ok(l) => Some(Arc::clone(&l)),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(Arc::clone(&p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(l) = latest {
            *seen = l;
        }
        Arc::clone(&seen)
    }

    fn publish(&self, s: Snapshot) {
        let new = Arc::new(s);
        let old =
            std::mem::replace(&mut *self.latest.lock().unwrap_or_else(|p| p.into_inner()), new);
        // The judgement replaced is freed here, outside the lock (a scrape may still hold it).
        drop(old);
    }
}

/// Starts the advisor thread.
pub fn spawn(opts: Options) -> std::io::Result<Handle> {
    let handle = Handle::default();
    let h = handle.clone();
    std::thread::Builder::new().name("zmem-advise".into()).spawn(move || run(opts, h))?;
    Ok(handle)
}

/// The sampler's loop: never returns (the process ends it), never panics on what it reads.
fn run(opts: Options, handle: Handle) {
    // nice 19 for this thread alone (setpriority, given a thread id, applies to that thread on
    // Linux): the scrapes, and every program on the host, go first; the CPU budget below is the
    // ceiling, not a share it claims. Not SCHED_IDLE, tried: its weight (3, kernel/sched/sched.h
    // `WEIGHT_IDLEPRIO`, against nice 19's 15 and nice 0's 1024, kernel/sched/core.c
    // `sched_prio_to_weight[]`) starved the advisor beside a full build (the live test's
    // sample, at --advise-cpu 50, did not fill in 120 s), and it measured no faster scrapes
    // than nice 19 (docs/BENCHMARKS.md, "zswap's part").
    // SAFETY: gettid and setpriority take no pointers; a failure leaves the thread's nice as
    // it is.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
    let mut a = Advisor::new(opts);
    // The thread's CPU already paid for: starting at 0, the first pause pays for setting up
    // (the kernel's capabilities, the process list); each later one for everything since the
    // last, waking from the sleep included.
    let mut paid = 0u64;
    loop {
        let t0 = Instant::now();
        if a.next_judge <= Instant::now() {
            a.rescan();
            handle.publish(a.judge());
            a.next_judge = Instant::now() + a.opts.judge_every;
        }
        let read = a.read_some();
        // Keep the whole process within the CPU budget (the scrapes, the server and start-up
        // included): after the process took `c` CPU seconds, the wall time spent (work and
        // sleep) is at least c / budget.
        let now_cpu = device::process_cpu_ns();
        let cpu = now_cpu.saturating_sub(paid) as f64 / 1e9;
        paid = now_cpu;
        let budget = (a.opts.cpu_percent / 100.0).max(1e-6);
        let owed = Duration::from_secs_f64((cpu / budget).min(60.0));
        let mut pause = owed.saturating_sub(t0.elapsed());
        if read == 0 {
            // Nothing to read now: wait for the next judgement or the next pass.
            pause = pause.max(a.idle_wait());
        }
        std::thread::sleep(pause);
    }
}

struct Advisor {
    opts: Options,
    caps: KernelCaps,
    page_size: usize,
    classes: Option<zmem_pool::zsmalloc::class::ClassTable>,
    devices: BTreeMap<u32, Device>,
    /// The devices' mm_stat at the last rescan.
    mm: BTreeMap<u32, zmem_zram::MmStat>,
    lost: u64,
    rates: VecDeque<(Instant, SwapSample, BTreeMap<u32, u64>)>,
    next_judge: Instant,
    judgements: u64,
    cpu_start: u64,
    zswap: Option<zswap::Zswap>,
    /// The last round read zswap's pages (the next goes to zram, if it has work).
    zswap_last: bool,
}

impl Advisor {
    fn new(opts: Options) -> Self {
        let page_size = zmem_kernel::capture::system_page_size();
        // Never hot-adds a device to learn the compressors: the devices there are say it.
        let caps = caps::read_at(&opts.root);
        let zswap = zswap::Zswap::new(&opts.root, &caps, page_size, opts.sample_pages, opts.seed);
        Self {
            opts,
            caps,
            page_size,
            classes: estimate::classes(page_size),
            devices: BTreeMap::new(),
            mm: BTreeMap::new(),
            lost: 0,
            rates: VecDeque::new(),
            next_judge: Instant::now(),
            judgements: 0,
            cpu_start: device::thread_cpu_ns(),
            zswap,
            zswap_last: false,
        }
    }

    /// Looks for devices: new ones get a state, ones gone or reset (another disksize) lose it;
    /// every panel is sized to the device's stored pages.
    fn rescan(&mut self) {
        let root = self.opts.root.clone();
        let ids = zmem_kernel::status::zram_ids(&root.join("sys"));
        let mut seen = Vec::new();
        let previous = std::mem::take(&mut self.mm);
        for id in ids {
            let attr = |n: &str| zram_attr(&root, id, n);
            let disksize = attr("disksize").and_then(|d| d.trim().parse::<u64>().ok()).unwrap_or(0);
            let mm = zmem_kernel::stat::zram_mm_stat_at(&root.join("sys"), id).ok();
            let line = attr("comp_algorithm").unwrap_or_default();
            let offered = caps::parse_comp_algorithm(&line);
            let (Some(mm), Some(current), true) = (mm, offered.current.clone(), disksize > 0)
            else {
                continue;
            };
            seen.push(id);
            if self.devices.get(&id).is_some_and(|d| {
                // Reset and set up again: another size or algorithm, or mm_stat's counters
                // since initialisation went back (zram_reset_device() zeroes them).
                let went_back = previous.get(&id).is_some_and(|old| {
                    mm.huge_pages_since < old.huge_pages_since
                        || mm.pages_compacted < old.pages_compacted
                });
                d.disksize != disksize || d.algorithm != current || went_back
            }) {
                self.devices.remove(&id);
                self.lost += 1;
            }
            let ps = self.page_size;
            let caps = &self.caps;
            let seed = self.opts.seed;
            let dev = self.devices.entry(id).or_insert_with(|| {
                // The candidates: what this device's zram offers (the kernel's list, as
                // KernelCaps reads it) that our codecs can play; the current one first.
                let mut cands: Vec<String> = vec![current.clone()];
                for a in &offered.available {
                    let runs = caps.zram_algorithms.is_empty() || caps.zram_can_run(a).is_ok();
                    if runs && !cands.contains(a) {
                        cands.push(a.clone());
                    }
                }
                let mut d = Device::new(id, disksize, current.clone(), &cands, ps, seed);
                d.dev_path = root.join(format!("dev/zram{id}"));
                d
            });
            let share = match self.opts.idle_share_percent {
                Some(s) => Some(s),
                None => acts_on_idle(&root, id).then_some(DEFAULT_IDLE_SHARE),
            };
            dev.idle_capped = share.is_some();
            let p = panel_size(
                self.opts.sample_pages,
                share,
                mm.orig_data_size / ps as u64,
                mm.same_pages,
                disksize / ps as u64,
            );
            let have = dev.panel.len() as u64;
            // Resized only when it moves by a quarter: a device that breathes does not make the
            // panel (and the slots it reads) churn.
            if have == 0 || p * 4 > have * 5 || p * 4 < have * 3 {
                dev.resize_panel(p);
            }
            self.mm.insert(id, mm);
        }
        let gone: Vec<u32> = self.devices.keys().copied().filter(|id| !seen.contains(id)).collect();
        for id in gone {
            self.devices.remove(&id);
            self.lost += 1;
        }
    }

    /// Reads one round: zram's and zswap's turns alternate where both have work, so neither
    /// waits on the other and both share the one CPU budget.
    fn read_some(&mut self) -> usize {
        let now = Instant::now();
        let zswap_due = self.zswap.as_ref().is_some_and(|z| z.due(now));
        if zswap_due && !self.zswap_last {
            self.zswap_last = true;
            return self.read_zswap(now);
        }
        self.zswap_last = false;
        match self.read_zram(now) {
            0 if zswap_due => {
                self.zswap_last = true;
                self.read_zswap(now)
            }
            n => n,
        }
    }

    /// One round of zswap's page reads; a round of misses counts as work done (it took CPU),
    /// so the loop does not sleep as if idle.
    fn read_zswap(&mut self, now: Instant) -> usize {
        let (k, refresh) = (self.opts.slots_per_round, self.opts.refresh);
        self.zswap.as_mut().map_or(0, |z| {
            let n = z.read_round(k, refresh, now);
            n.max(usize::from(z.procs.listed() > 0))
        })
    }

    /// Reads one round from the first device whose pass is not done (or due again).
    fn read_zram(&mut self, now: Instant) -> usize {
        let (Some(classes), k) = (self.classes.as_ref(), self.opts.slots_per_round) else {
            return 0;
        };
        for dev in self.devices.values_mut() {
            if dev.retry_at.is_some_and(|t| now < t) {
                continue;
            }
            if dev.cursor >= dev.panel.len() {
                if !dev.panel.is_empty() {
                    dev.filled = true;
                }
                if now.duration_since(dev.pass_started) < self.opts.refresh {
                    continue;
                }
                dev.cursor = 0;
                dev.pass_started = now;
            }
            let failures = dev.read_failures;
            let n = dev.read_round(k, classes);
            if dev.read_failures > failures {
                // Unreadable now (reset or removed: the next rescan says which; or busy being
                // reset): left alone until the next judgement rather than retried at once.
                dev.retry_at = Some(self.next_judge);
            }
            if n > 0 {
                return n;
            }
        }
        0
    }

    /// How long there is nothing to read: until the next judgement, at most a second.
    fn idle_wait(&self) -> Duration {
        let mut until = self.next_judge;
        if let Some(t) = self.zswap.as_ref().and_then(|z| z.next_due()) {
            until = until.min(t);
        }
        until.saturating_duration_since(Instant::now()).min(Duration::from_secs(1))
    }

    /// Judges every device's sample now.
    fn judge(&mut self) -> Snapshot {
        let now = Instant::now();
        let ids: Vec<u32> = self.devices.keys().copied().collect();
        let areas = live::swaps().unwrap_or_default();
        let ours: BTreeMap<u32, u64> =
            self.devices.iter().map(|(id, d)| (*id, d.slots_read)).collect();
        if let Ok(s) = zmem_lab::now::sample(&ids, self.page_size) {
            self.rates.push_back((now, s, ours.clone()));
        }
        while self.rates.len() > 2
            && self
                .rates
                .get(1)
                .is_some_and(|(t, _, _)| now.duration_since(*t) >= self.opts.rate_window)
        {
            self.rates.pop_front();
        }
        let budget = self.opts.budget_percent / 100.0;
        let mut devices = Vec::new();
        for (id, dev) in &self.devices {
            let Some(mm) = self.mm.get(id) else { continue };
            let ps = self.page_size as u64;
            let population =
                Population { pages: mm.orig_data_size / ps, same_filled: mm.same_pages };
            let traffic = self.traffic(*id, &areas);
            let lens: Vec<&[u32]> = dev.pages().collect();
            let mut measured = Vec::new();
            if let Some(classes) = &self.classes {
                for (i, c) in dev.codecs.iter().enumerate() {
                    let l: Vec<u32> = lens.iter().filter_map(|x| x.get(i).copied()).collect();
                    if let Some(e) = estimate::estimate(classes, self.page_size, population, &l) {
                        let (c_ns, d_ns) = c.per_page_ns();
                        measured.push(Measured {
                            config: c.name.clone(),
                            estimate: e,
                            compress_ns: c_ns,
                            decompress_ns: d_ns,
                        });
                    }
                }
            }
            let rows = judge::judge(&measured, &dev.algorithm, mm.mem_used_total, traffic, budget);
            // Advice only once a whole pass has been read: a part of the panel is a sample of
            // the slots read first, not of the device.
            let recommended = if dev.filled {
                judge::recommend(&rows).map(|(i, b)| (rows[i].config.clone(), b))
            } else {
                None
            };
            devices.push(DeviceAdvice {
                name: dev.name.clone(),
                algorithm: dev.algorithm.clone(),
                population,
                sample_pages: lens.len() as u64,
                panel_slots: dev.panel.len() as u64,
                oldest_read: dev.oldest_read(),
                filled: dev.filled,
                slots_read: dev.slots_read,
                read_failures: dev.read_failures,
                readable: dev.readable,
                idle_capped: dev.idle_capped,
                traffic,
                rows,
                recommended,
            });
        }
        self.judgements += 1;
        let (root, window) = (&self.opts.root, self.opts.rate_window);
        let zswap = self.zswap.as_mut().map(|z| z.judge(root, now, window, budget));
        Snapshot {
            devices,
            zswap_present: self.zswap.is_some(),
            zswap,
            devices_lost: self.lost,
            cpu_seconds: device::thread_cpu_ns().saturating_sub(self.cpu_start) as f64 / 1e9,
            zram_present: self.opts.root.join("sys/class/zram-control").exists(),
            judgements: self.judgements,
        }
    }

    /// Device `id`'s swap traffic over the window: the kernel's pswpin/pswpout, apportioned by
    /// the device's own reads and writes where other swap areas share them
    /// ([`rates_between`]), our own reads of it taken out first.
    fn traffic(&self, id: u32, areas: &[live::SwapArea]) -> Traffic {
        let (Some((t0, a, ours0)), Some((t1, b, ours1))) = (self.rates.front(), self.rates.back())
        else {
            return Traffic { swap_ins_per_sec: 0.0, swap_outs_per_sec: 0.0 };
        };
        let secs = t1.duration_since(*t0).as_secs_f64();
        if secs <= 0.0 {
            return Traffic { swap_ins_per_sec: 0.0, swap_outs_per_sec: 0.0 };
        }
        let only = |s: &SwapSample, ours: &BTreeMap<u32, u64>| SwapSample {
            system: s.system,
            zram: s
                .zram
                .iter()
                .filter(|d| d.0 == id)
                .map(|&(i, r, w)| (i, r.saturating_sub(ours.get(&i).copied().unwrap_or(0)), w))
                .collect(),
        };
        let others = areas.iter().filter(|a| a.zram_id() != Some(id)).count();
        let is_swap = areas.iter().any(|a| a.zram_id() == Some(id));
        if !is_swap {
            // Not a swap area: nothing swaps to it.
            return Traffic { swap_ins_per_sec: 0.0, swap_outs_per_sec: 0.0 };
        }
        let r = rates_between(&only(a, ours0), &only(b, ours1), secs, true, others);
        Traffic { swap_ins_per_sec: r.swap_ins_per_sec, swap_outs_per_sec: r.swap_outs_per_sec }
    }
}

/// One sysfs attribute of zram device `id` under `root` (`sys/block/zramN/NAME`), its text
/// without the trailing newline; `None` when it cannot be read.
/// Attribute `name` of zram device `id` under `root` (zmem-kernel's one reader of them).
fn zram_attr(root: &Path, id: u32, name: &str) -> Option<String> {
    zmem_kernel::stat::zram_attr_at(&root.join("sys"), id, name).ok()
}

/// The idle share where a device can act on idle marks and none was given: 1 %.
pub const DEFAULT_IDLE_SHARE: f64 = 1.0;

/// Whether zram device `id` can act on its idle marks: it has a backing device (`backing_dev`
/// other than `none`: `writeback idle`) or a secondary algorithm (`recomp_algorithm` not empty:
/// `recompress type=idle`). Where neither attribute exists (CONFIG_ZRAM_WRITEBACK and
/// CONFIG_ZRAM_MULTI_COMP off, as on this project's test kernel) nothing reads `ZRAM_IDLE`.
pub fn acts_on_idle(root: &Path, id: u32) -> bool {
    let attr = |n: &str| zram_attr(root, id, n).map(|v| v.trim().to_string());
    attr("backing_dev").is_some_and(|b| !b.is_empty() && b != "none")
        || attr("recomp_algorithm").is_some_and(|r| !r.is_empty())
}

/// The panel's size for a device storing `stored` pages (`same` of them same-filled) in
/// `slots` slots: enough slots that the stored, not same-filled pages among them are the
/// `sample` asked for, at most `idle_share` percent of the stored pages (never fewer than
/// [`MIN_SAMPLE`]) when one applies, and at most the device and [`MAX_PANEL`].
pub fn panel_size(sample: u64, idle_share: Option<f64>, stored: u64, same: u64, slots: u64) -> u64 {
    let others = stored.saturating_sub(same);
    let want = match idle_share {
        Some(share) => {
            let cap = (share / 100.0 * stored as f64).floor() as u64;
            sample.min(cap.max(MIN_SAMPLE))
        }
        None => sample,
    };
    if others == 0 {
        // Nothing to sample yet: a small panel watches for pages arriving.
        return want.min(slots).min(MIN_SAMPLE);
    }
    let p = (want as f64 * slots as f64 / others as f64).ceil() as u64;
    p.min(slots).min(MAX_PANEL)
}

/// Most slots a panel holds (about 48 bytes each: under 10 MB): on a device whose stored pages
/// fill less than `sample / MAX_PANEL` of its slots (5 % for 10,000 pages) the sample is
/// smaller than asked, rather than the exporter larger and its reads of empty slots many.
pub const MAX_PANEL: u64 = 200_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_never_waits_on_the_advisor_publishing() {
        let h = Handle::default();
        let judged = |n| Snapshot { judgements: n, ..Snapshot::default() };
        assert_eq!(h.snapshot().judgements, 0, "nothing judged yet: the empty judgement");
        h.publish(judged(1));
        assert_eq!(h.snapshot().judgements, 1);
        h.publish(judged(2));
        {
            // The advisor's thread in the middle of replacing it: the scrape answers the one
            // it saw last rather than wait (were it to wait, this would never return).
            let _held = h.latest.lock().unwrap();
            assert_eq!(h.snapshot().judgements, 1);
        }
        assert_eq!(h.snapshot().judgements, 2, "the new one once the lock is free");
        let kept = h.snapshot();
        h.publish(judged(3));
        assert_eq!(kept.judgements, 2, "a scrape's copy outlives its replacement");
        assert_eq!(h.snapshot().judgements, 3);
    }

    #[test]
    fn the_panel_holds_the_sample_within_the_idle_share() {
        let one = Some(1.0);
        // 1,000,000 stored pages in 4,000,000 slots, none same-filled: 1 % is 10,000 pages,
        // the sample asked for; a quarter of the slots hold pages, so 40,000 slots.
        assert_eq!(panel_size(10_000, one, 1_000_000, 0, 4_000_000), 40_000);
        // 200,000 stored: 1 % is 2,000 pages, so 2,000 of the 200,000 pages: 8,000 slots.
        assert_eq!(panel_size(10_000, one, 200_000, 0, 800_000), 8_000);
        // No idle pass to change: the whole sample asked for.
        assert_eq!(panel_size(10_000, None, 200_000, 0, 800_000), 40_000);
        // A small device: never under the lab's minimum sample (1024 of 20,000 pages).
        assert_eq!(panel_size(10_000, one, 20_000, 0, 40_000), 2_048);
        // A full device: every slot, at most.
        assert_eq!(panel_size(10_000, one, 1_000, 0, 1_000), 1_000);
        // Half the pages same-filled: twice the slots for the same sample.
        assert_eq!(panel_size(10_000, one, 200_000, 100_000, 800_000), 16_000);
        // A sparse device: 10,000 of 100,000 stored pages would need 400,000 of its 4,000,000
        // slots; the panel stops at MAX_PANEL (about 5,000 pages sampled).
        assert_eq!(panel_size(10_000, None, 100_000, 0, 4_000_000), MAX_PANEL);
        // Empty: a small watching panel.
        assert_eq!(panel_size(10_000, one, 0, 0, 800_000), MIN_SAMPLE);
    }
}

#[cfg(test)]
mod fake_root;
