//! The advisor's judgement as metric families (`zmem_advice_` names), per device and per
//! candidate configuration (`device="zram1"`, `config="zstd"`).

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
    let cand = |f: &dyn Fn(&super::judge::Row) -> Value| -> Vec<(Labels, Value)> {
        s.devices
            .iter()
            .flat_map(|d| {
                d.rows
                    .iter()
                    .map(|r| (vec![("device", d.name.clone()), ("config", r.config.clone())], f(r)))
            })
            .collect()
    };
    let mut out = vec![
        fam(
            "zmem_advice_memory_saved",
            "What each configuration the kernel's zram offers would save against the device's live pool (mm_stat mem_used_total less the estimated pool for every stored page).",
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
            "The pool zsmalloc would hold for every stored page under the configuration (the lab's estimator on the sample).",
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
    let rec = s
        .devices
        .iter()
        .filter_map(|d| {
            let (config, basis) = d.recommended.as_ref()?;
            Some((
                vec![
                    ("device", d.name.clone()),
                    ("config", config.clone()),
                    ("current", d.algorithm.clone()),
                    ("basis", basis.as_str().to_string()),
                ],
                U(1),
            ))
        })
        .collect();
    out.push(fam("zmem_advice_recommended_info", "The configuration to run: the most memory saved within the CPU budget, the current one when the sample cannot tell them apart; value 1. Absent until the sample's first pass is read.", None, false, rec));
    out.extend([
        fam("zmem_advice_sample_pages", "Stored pages (not same-filled) in the device's rolling sample.", None, false, dev(&|d| Some(U(d.sample_pages)))),
        fam("zmem_advice_population_pages", "Pages the device stores (mm_stat orig_data_size / page size), which the sample stands for.", None, false, dev(&|d| Some(U(d.population.pages)))),
        fam("zmem_advice_panel_slots", "Slots the advisor reads on the device (its panel): every slot it will ever read while the device keeps its size.", None, false, dev(&|d| Some(U(d.panel_slots)))),
        fam("zmem_advice_sample_age", "Time since the oldest read of the sample.", Some(Unit::Seconds), false, dev(&|d| Some(F(now.saturating_duration_since(d.oldest_read?).as_secs_f64())))),
        fam("zmem_advice_idle_capped", "1 when the sample is capped at the idle share of the device's stored pages (the device can write back or recompress idle slots, or --advise-idle-share was given).", None, false, dev(&|d| Some(U(u64::from(d.idle_capped))))),
        fam("zmem_advice_sample_filled", "1 once every slot of the panel has been read.", None, false, dev(&|d| Some(U(u64::from(d.filled))))),
        fam("zmem_advice_slots_read", "Slots the advisor read on the device (each clears the slot's ZRAM_IDLE flag).", None, true, dev(&|d| Some(U(d.slots_read)))),
        fam("zmem_advice_read_failures", "Rounds of reads that failed on the device (reset, removed, unreadable).", None, true, dev(&|d| Some(U(d.read_failures)))),
        fam("zmem_advice_device_readable", "1 when the device's last round of reads succeeded.", None, false, dev(&|d| Some(U(u64::from(d.readable))))),
        fam("zmem_advice_swap_in_pages_per_second", "The device's swap-ins per second over the rate window (pswpin, apportioned), the advisor's own reads taken out.", None, false, dev(&|d| Some(F(d.traffic.swap_ins_per_sec)))),
        fam("zmem_advice_swap_out_pages_per_second", "The device's swap-outs per second over the rate window (pswpout, apportioned).", None, false, dev(&|d| Some(F(d.traffic.swap_outs_per_sec)))),
        fam("zmem_advice_devices_lost", "zram devices removed or reset while sampled (their sample dropped).", None, true, vec![(vec![], U(s.devices_lost))]),
        fam("zmem_advice_sampler_cpu", "CPU time the advisor's thread has used.", Some(Unit::Seconds), true, vec![(vec![], F(s.cpu_seconds))]),
        fam("zmem_advice_zram_present", "1 when the kernel has zram (/sys/class/zram-control).", None, false, vec![(vec![], U(u64::from(s.zram_present)))]),
    ]);
    out.into_iter().flatten().collect()
}
