//! The zram-or-zswap verdict and the rest of the swap stack (vm.swappiness, vm.page-cluster
//! from the measured read-ahead, the swap device behind zswap).

use super::*;

/// The machine's verdict (module doc): `zram_choice` is zram's recommended candidate, replayed
/// as `zram_row` on the same trace.
pub fn verdict(
    present: bool,
    candidates: &[ZswapCandidate],
    zram_choice: Option<&Candidate>,
    zram_row: &SwapRow,
    rates: &Rates,
    device: &SwapDevice,
) -> Verdict {
    let zram = zram_choice.map(|c| ZramSide {
        name: c.name.clone(),
        memory_saved_bytes_vs_now: c.memory_saved_bytes_vs_now,
        cpu_secs_per_sec: c.cpu_secs_per_sec,
        load_p99_ns: zram_row.load_p99_ns,
        swap_in_us_per_sec: swap_in_us_per_sec(zram_row, rates),
    });
    let zram_name =
        zram.as_ref().map_or_else(|| "zram".to_string(), |z| format!("zram {}", z.name));
    let best = candidates.iter().filter(|c| c.available && c.within_budgets).max_by(|a, b| {
        a.memory_saved_bytes_vs_now.cmp(&b.memory_saved_bytes_vs_now).then_with(|| tie(a, b))
    });
    let zram_saved = zram.as_ref().map_or(0, |z| z.memory_saved_bytes_vs_now);
    let (choice, config, reason): (VerdictKind, String, String) = match best {
        _ if !present => (
            VerdictKind::Zram,
            zram_name.clone(),
            "this kernel has no zswap (CONFIG_ZSWAP off): zram is the compressed swap it has"
                .into(),
        ),
        None => {
            let why = candidates
                .iter()
                .find(|c| c.available)
                .map_or("no compressor zmem implements is offered to zswap".to_string(), |c| {
                    format!("e.g. {}: {}", c.name, c.over_budget.join("; "))
                });
            (
                VerdictKind::Zram,
                zram_name.clone(),
                format!("no zswap configuration fits the budgets ({why})"),
            )
        }
        Some(b) => {
            let zus = zram.as_ref().map_or(0.0, |z| z.swap_in_us_per_sec);
            let times = if zus > 0.0 { b.swap_in_us_per_sec / zus } else { 0.0 };
            let faults = if zus > 0.0 {
                format!(
                    "{times:.1}x the swap-in microseconds per second ({:.0} vs {:.0} us/s)",
                    b.swap_in_us_per_sec, zus
                )
            } else {
                format!("{:.0} swap-in microseconds per second", b.swap_in_us_per_sec)
            };
            let diff = b.memory_saved_bytes_vs_now - zram_saved;
            let more = if diff >= 0 { "more" } else { "less" };
            let line = format!(
                "{} in front of your {}: {} {more} saved than {zram_name}, {faults}, {:.1} MB/s of device writes",
                b.name,
                device.name,
                human_bytes(diff.abs() as f64),
                b.device_write_bytes_per_sec / 1e6
            );
            if diff > 0 {
                (VerdictKind::Zswap, b.name.clone(), line)
            } else {
                (
                    VerdictKind::Zram,
                    zram_name.clone(),
                    format!(
                        "{zram_name} saves at least as much with no device writes; the best zswap: {line}"
                    ),
                )
            }
        }
    };
    Verdict { choice, config, reason, zram, zswap: best.map(|b| b.name.clone()) }
}

impl Verdict {
    /// This verdict made to say what `d`, the one decision, says: zram or zswap as the
    /// decision runs (for keep, what runs now), its configuration, and why where the two
    /// judgements part (the decision calls equal what this one split by less than the
    /// uncertainty).
    pub fn following(self, d: &crate::decision::Decision) -> Self {
        use crate::decision::Kind;
        let choice = match d.kind {
            Kind::Zram => VerdictKind::Zram,
            Kind::Zswap => VerdictKind::Zswap,
            Kind::Keep if d.now_config.starts_with("zswap") => VerdictKind::Zswap,
            Kind::Keep => VerdictKind::Zram,
            Kind::None => return Verdict::none(self.reason),
        };
        let config = d.config.clone();
        if choice == self.choice {
            return Verdict { choice, config, ..self };
        }
        let reason = format!(
            "{config}: the decision's (the two are equal within the uncertainty, or {} was not \
             within the budgets); by saving alone: {}",
            self.config, self.reason
        );
        Verdict { choice, config, reason, ..self }
    }

    /// No verdict (`choice` and `config` "none"), and why: e.g. the input is too small to
    /// advise on.
    pub fn none(reason: String) -> Self {
        Verdict {
            choice: VerdictKind::None,
            config: "none".into(),
            reason,
            zram: None,
            zswap: None,
        }
    }

    /// Whether this is a zram-or-zswap answer at all.
    pub fn is_none(&self) -> bool {
        self.choice == VerdictKind::None
    }
}

/// The kernel's swap read-ahead since boot (`/proc/vmstat`): pages read ahead (`swap_ra`,
/// counted by mm/swap_state.c `swap_cluster_readahead()` / `swap_vma_readahead()`) and, of
/// those, pages then asked for (`swap_ra_hit`, `swap_update_readahead()`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadAhead {
    pub pages: u64,
    pub hits: u64,
}

impl ReadAhead {
    /// Fewer pages read ahead than this say nothing about the workload.
    pub const MIN_PAGES: u64 = 1000;

    pub fn of(vmstat: &BTreeMap<String, u64>) -> Option<Self> {
        Some(Self { pages: *vmstat.get("swap_ra")?, hits: *vmstat.get("swap_ra_hit")? })
    }

    /// The fraction of pages read ahead that were used, where enough were read ahead.
    pub fn used(&self) -> Option<f64> {
        (self.pages >= Self::MIN_PAGES)
            .then(|| self.hits.min(self.pages) as f64 / self.pages as f64)
    }
}

/// vm.page-cluster, from where swap-ins are served (`from_memory`: zram, or zswap hits; `hit`
/// their fraction in the replay) and how much of the kernel's read-ahead was used
/// (`swap_ra_hit / swap_ra` since boot): from memory, a page read ahead costs a decompression,
/// worth it only when the pages are mostly used (3 in 4: 1, two pages a fault; else 0); from a
/// device it saves a device read, and is cut only when it is mostly wasted (1 in 4 used: 1;
/// else the kernel's 3, mm/swap.c `swap_setup()` above 16 MiB of RAM). The 3-in-4 and 1-in-4
/// cut-offs are zmem's judgement, not a kernel rule. Without enough read-ahead to judge, 0 from memory and 3 from a device.
pub(super) fn page_cluster(
    from_memory: bool,
    hit: f64,
    ra: Option<ReadAhead>,
    rates: &Rates,
    device: &str,
) -> (u32, String) {
    let used = ra.and_then(|r| r.used());
    let measured = match (ra, used) {
        (Some(r), Some(u)) => format!(
            "; the kernel read {} pages ahead since boot and {:.0}% of them were used \
             (/proc/vmstat swap_ra_hit / swap_ra)",
            r.pages,
            u * 100.0
        ),
        (Some(r), None) => format!(
            "; the kernel read only {} pages ahead since boot, too few to judge its read-ahead",
            r.pages
        ),
        (None, _) => "; /proc/vmstat has no swap_ra counters".to_string(),
    };
    let rate = if rates.swap_ins_per_sec > 0.0 {
        format!(", {:.0} swap-ins/s at the rates used", rates.swap_ins_per_sec)
    } else {
        String::new()
    };
    if from_memory {
        match used {
            Some(u) if u >= 0.75 => (
                1,
                format!(
                    "most swap-ins are served from compressed memory ({:.0}% in the replay{rate}), \
                     and read-ahead pages are mostly used: one neighbour per fault keeps most of \
                     that and decompresses fewer unused pages{measured}",
                    hit * 100.0
                ),
            ),
            _ => (
                0,
                format!(
                    "most swap-ins are served from compressed memory ({:.0}% in the replay{rate}), \
                     where reading 2^page-cluster neighbours ahead only decompresses pages not \
                     asked for{measured}",
                    hit * 100.0
                ),
            ),
        }
    } else {
        match used {
            Some(u) if u < 0.25 => (
                1,
                format!(
                    "most swap-ins miss zswap and read the {device} ({:.0}% hits), but the \
                     kernel's read-ahead is mostly wasted: two pages a fault instead of \
                     eight{measured}",
                    hit * 100.0
                ),
            ),
            _ => (
                3,
                format!(
                    "most swap-ins miss zswap and read the {device} ({:.0}% hits): the kernel's \
                     read-ahead of 8 pages amortises the device reads{measured}",
                    hit * 100.0
                ),
            ),
        }
    }
}

/// vm.swappiness, vm.page-cluster and the swap device size for the verdict.
pub fn stack(
    live: &ZswapLive,
    verdict: &Verdict,
    candidates: &[ZswapCandidate],
    rates: &Rates,
    projected_pages: u64,
    ps: usize,
    device: &SwapDevice,
) -> StackAdvice {
    let chosen = candidates.iter().find(|c| c.name == verdict.config);
    let hit = chosen.map_or(1.0, |c| c.hit_fraction);
    let from_memory = verdict.choice == VerdictKind::Zram || hit >= 0.5;
    let (page_cluster, page_cluster_reason) =
        page_cluster(from_memory, hit, ReadAhead::of(&live.state.vmstat), rates, &device.name);
    let (swappiness, swappiness_reason) = if verdict.choice == VerdictKind::Zram {
        (
            150,
            "a swap-in from zram costs microseconds of CPU, less than re-reading a file page from \
             the device: favour swapping anonymous memory over dropping page cache"
                .to_string(),
        )
    } else {
        (
            100,
            format!(
                "zswap's misses read the same {} file pages come from: weigh anonymous and file \
                 memory equally",
                device.name
            ),
        )
    };
    let disk: u64 = live.swaps.iter().filter(|s| s.kind != "zram").map(|s| s.size_bytes).sum();
    let need = projected_pages * ps as u64;
    let swap_device_reason = format!(
        "every page zswap stores keeps its slot on the swap device: {} pages of {} B need {} \
         (active disk swap now: {})",
        projected_pages,
        ps,
        human_bytes(need as f64),
        human_bytes(disk as f64)
    );
    let stored = live
        .state
        .debugfs
        .as_ref()
        .and_then(|d| d.get("stored_pages").copied())
        .or(live.state.meminfo_zswapped_bytes.map(|b| b / live.state.page_size.max(1)));
    let holds = live
        .swaps
        .iter()
        .map(|s| {
            let base = format!(
                "{} ({}, priority {}): {} used of {}",
                s.filename,
                s.kind,
                s.priority,
                human_bytes(s.used_bytes as f64),
                human_bytes(s.size_bytes as f64)
            );
            match (s.kind.as_str(), stored) {
                ("zram", _) => format!("{base}, compressed in RAM"),
                (_, Some(n)) if live.state.enabled => format!(
                    "{base}, of which slots of zswap's {n} stored pages ({}; the rest written to the device)",
                    human_bytes((n * live.state.page_size) as f64)
                ),
                _ => format!("{base}, on the device"),
            }
        })
        .collect();
    StackAdvice {
        swappiness_now: live.swappiness,
        swappiness,
        swappiness_reason,
        page_cluster_now: live.page_cluster,
        page_cluster,
        page_cluster_reason,
        swap_device_bytes: need,
        swap_device_reason,
        holds,
    }
}

/// Between two zswap configurations that save the same memory, the greater is the one to run:
/// the one using clearly less CPU (by more than [`crate::cost::CPU_NOISE`]); else the one running now;
/// else the simpler set-up (the smaller pool limit, no shrinker) and then the compressor first
/// in the kernel's order: the same answer on every run, whatever the machine's noise.
fn tie(a: &ZswapCandidate, b: &ZswapCandidate) -> std::cmp::Ordering {
    let (ca, cb) = (a.cpu_secs_per_sec, b.cpu_secs_per_sec);
    if (ca - cb).abs() > crate::cost::CPU_NOISE * ca.max(cb) {
        return cb.total_cmp(&ca);
    }
    let rank =
        |c: &str| zmem_comp::algorithms().iter().position(|x| x.name == c).unwrap_or(usize::MAX);
    a.is_current
        .cmp(&b.is_current)
        .then(b.max_pool_percent.cmp(&a.max_pool_percent))
        .then(b.shrinker_enabled.cmp(&a.shrinker_enabled))
        .then_with(|| rank(&b.compressor).cmp(&rank(&a.compressor)))
        .then_with(|| b.name.cmp(&a.name))
}
