//! The advisor's judgement as metric families (`zmem_advice_` names), per device and per
//! candidate configuration (`device="zram1"`, `config="zstd"`). zswap is one more device,
//! `device="zswap"`, in the same families where they mean the same (memory saved and its
//! bounds, pool, CPU, the recommendation, the sample's size, age and population, the swap
//! rates, failed reads); the families of what only one has carry only its devices (zram's
//! panel and slots, zswap's pages read and skips by reason).

use std::time::Instant;

use prometheus_client::registry::Unit;

use super::Snapshot;
use crate::expose::{Family, Value};

type Labels = Vec<(&'static str, String)>;

fn fam(
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    counter: bool,
    samples: Vec<(Labels, Value)>,
) -> Option<Family> {
    (!samples.is_empty()).then_some(Family { name, help, unit, counter, samples })
}

/// Every family of the snapshot, read at `now` (for the sample's age).
pub fn families(s: &Snapshot, now: Instant) -> Vec<Family> {
    use Value::{F, U};
    const B: Option<Unit> = Some(Unit::Bytes);
    let dev = |f: &dyn Fn(&super::DeviceAdvice) -> Option<Value>| -> Vec<(Labels, Value)> {
        s.devices.iter().filter_map(|d| Some((vec![("device", d.name.clone())], f(d)?))).collect()
    };
    let z = s.zswap.as_ref();
    // A family over every device, zswap last: `f` for zram's, `g` for zswap's.
    let both = |f: &dyn Fn(&super::DeviceAdvice) -> Option<Value>,
                g: &dyn Fn(&super::ZswapAdvice) -> Option<Value>|
     -> Vec<(Labels, Value)> {
        let mut v = dev(f);
        v.extend(z.and_then(|z| Some((vec![("device", "zswap".to_string())], g(z)?))));
        v
    };
    let cand = |f: &dyn Fn(&super::judge::Row) -> Value| -> Vec<(Labels, Value)> {
        let zram = s.devices.iter().map(|d| (d.name.as_str(), &d.rows));
        zram.chain(z.map(|z| ("zswap", &z.rows)))
            .flat_map(|(name, rows)| {
                rows.iter().map(|r| {
                    (vec![("device", name.to_string()), ("config", r.config.clone())], f(r))
                })
            })
            .collect()
    };
    let mut out = vec![
        fam(
            "zmem_advice_memory_saved",
            "What each configuration the kernel can run would save: for a zram device, against its live pool (mm_stat mem_used_total less the estimated pool for every stored page); for zswap, against the resident anonymous pages uncompressed (AnonPages less the estimated zsmalloc pool for them).",
            B,
            false,
            cand(&|r| F(r.memory_saved_bytes.estimate)),
        ),
        fam(
            "zmem_advice_memory_saved_low",
            "Lower end of the 95 % confidence interval of zmem_advice_memory_saved_bytes (the sample's).",
            B,
            false,
            cand(&|r| F(r.memory_saved_bytes.low)),
        ),
        fam(
            "zmem_advice_memory_saved_high",
            "Upper end of the 95 % confidence interval of zmem_advice_memory_saved_bytes (the sample's).",
            B,
            false,
            cand(&|r| F(r.memory_saved_bytes.high)),
        ),
        fam(
            "zmem_advice_pool",
            "The pool zsmalloc would hold for every stored page (zswap: every resident anonymous page) under the configuration (the lab's estimator on the sample).",
            B,
            false,
            cand(&|r| F(r.pool_bytes.estimate)),
        ),
        fam(
            "zmem_advice_pool_low",
            "Lower end of the 95 % confidence interval of zmem_advice_pool_bytes.",
            B,
            false,
            cand(&|r| F(r.pool_bytes.low)),
        ),
        fam(
            "zmem_advice_pool_high",
            "Upper end of the 95 % confidence interval of zmem_advice_pool_bytes.",
            B,
            false,
            cand(&|r| F(r.pool_bytes.high)),
        ),
        fam(
            "zmem_advice_cpu_seconds_per_second",
            "CPU the configuration would cost at the device's swap rates: compress and decompress per page (measured on the sample) and the kernel's own reclaim and fault work (1.0 = one core).",
            None,
            false,
            cand(&|r| F(r.cpu_secs_per_sec)),
        ),
        fam(
            "zmem_advice_within_budget",
            "1 when the configuration's CPU is within the budget (1 % of one core by default).",
            None,
            false,
            cand(&|r| U(u64::from(r.within_budget))),
        ),
    ];
    let zram_rec =
        s.devices.iter().map(|d| (d.name.as_str(), &d.recommended, d.algorithm.as_str()));
    let rec = zram_rec
        .chain(z.map(|z| ("zswap", &z.recommended, z.current())))
        .filter_map(|(name, r, current)| {
            let (config, basis) = r.as_ref()?;
            Some((
                vec![
                    ("device", name.to_string()),
                    ("config", config.clone()),
                    ("current", current.to_string()),
                    ("basis", basis.as_str().to_string()),
                ],
                U(1),
            ))
        })
        .collect();
    out.push(fam("zmem_advice_recommended_info", "The configuration to run: the most memory saved within the CPU budget, the current one when the sample cannot tell them apart (current is none where zswap is disabled); value 1. Absent until the sample's first pass is read (zswap: until the sample is full).", None, false, rec));
    out.extend([
        fam("zmem_advice_sample_pages", "Pages in the device's rolling sample: zram, stored pages that are not same-filled; zswap, resident anonymous pages of processes (zero pages included).", None, false, both(&|d| Some(U(d.sample_pages)), &|z| Some(U(z.sample_pages)))),
        fam("zmem_advice_population_pages", "Pages the sample stands for: zram, the pages the device stores (mm_stat orig_data_size / page size); zswap, the resident anonymous pages (/proc/meminfo AnonPages / page size).", None, false, both(&|d| Some(U(d.population.pages)), &|z| Some(U(z.population_pages)))),
        fam("zmem_advice_panel_slots", "Slots the advisor reads on the device (its panel): every slot it will ever read while the device keeps its size.", None, false, dev(&|d| Some(U(d.panel_slots)))),
        fam("zmem_advice_sample_age", "Time since the oldest read of the sample.", Some(Unit::Seconds), false, both(&|d| Some(F(now.saturating_duration_since(d.oldest_read?).as_secs_f64())), &|z| Some(F(now.saturating_duration_since(z.oldest_read?).as_secs_f64())))),
        fam("zmem_advice_idle_capped", "1 when the sample is capped at the idle share of the device's stored pages (the device can write back or recompress idle slots, or --advise-idle-share was given).", None, false, dev(&|d| Some(U(u64::from(d.idle_capped))))),
        fam("zmem_advice_sample_filled", "1 once the sample is whole: zram, every slot of the panel read; zswap, the sample holds the pages asked for.", None, false, both(&|d| Some(U(u64::from(d.filled))), &|z| Some(U(u64::from(z.filled))))),
        fam("zmem_advice_slots_read", "Slots the advisor read on the device (each clears the slot's ZRAM_IDLE flag).", None, true, dev(&|d| Some(U(d.slots_read)))),
        fam("zmem_advice_read_failures", "Reads that failed: zram, rounds on the device (reset, removed, unreadable); zswap, pages of processes (the process exited or refused, or the page could not be read; by reason in zmem_advice_read_skips_total).", None, true, both(&|d| Some(U(d.read_failures)), &|z| Some(U(z.skips.failures())))),
        fam("zmem_advice_read_skips", "zswap's draws of a process's page that read nothing, by reason: process_exited (before or during the read), refused (its /proc files could not be read), page_unreadable, sparse (no resident page found among its draws).", None, true, z.map(|z| z.skips.labelled().iter().map(|&(r, n)| (vec![("device", "zswap".to_string()), ("reason", r.to_string())], U(n))).collect()).unwrap_or_default()),
        fam("zmem_advice_pages_read", "Pages of processes the advisor read for zswap (/proc/PID/mem).", None, true, z.map(|z| vec![(vec![("device", "zswap".to_string())], U(z.pages_read))]).unwrap_or_default()),
        fam("zmem_advice_processes", "Processes with resident anonymous pages the zswap sample draws from.", None, false, z.map(|z| vec![(vec![("device", "zswap".to_string())], U(z.processes))]).unwrap_or_default()),
        fam("zmem_advice_device_readable", "1 when the device's last round of reads succeeded.", None, false, dev(&|d| Some(U(u64::from(d.readable))))),
        fam("zmem_advice_swap_in_pages_per_second", "Swap-ins per second over the rate window: zram, the device's (pswpin, apportioned), the advisor's own reads taken out; zswap, the system's (pswpin + zswpin).", None, false, both(&|d| Some(F(d.traffic.swap_ins_per_sec)), &|z| Some(F(z.traffic.swap_ins_per_sec)))),
        fam("zmem_advice_swap_out_pages_per_second", "Swap-outs per second over the rate window: zram, the device's (pswpout, apportioned); zswap, the system's (pswpout + zswpout).", None, false, both(&|d| Some(F(d.traffic.swap_outs_per_sec)), &|z| Some(F(z.traffic.swap_outs_per_sec)))),
        fam("zmem_advice_devices_lost", "zram devices removed or reset while sampled (their sample dropped).", None, true, vec![(vec![], U(s.devices_lost))]),
        fam("zmem_advice_sampler_cpu", "CPU time the advisor's thread has used.", Some(Unit::Seconds), true, vec![(vec![], F(s.cpu_seconds))]),
        fam("zmem_advice_zram_present", "1 when the kernel has zram (/sys/class/zram-control).", None, false, vec![(vec![], U(u64::from(s.zram_present)))]),
        fam("zmem_advice_zswap_present", "1 when the kernel has zswap (/sys/module/zswap/parameters).", None, false, vec![(vec![], U(u64::from(s.zswap_present)))]),
    ]);
    out.into_iter().flatten().collect()
}
