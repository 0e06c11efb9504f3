//! The state as OpenMetrics or Prometheus text, encoded by `prometheus-client` (the Prometheus
//! project's Rust client) through a [`Collector`] that turns one [`Status`] into metric families.
//!
//! Conventions (https://prometheus.io/docs/practices/naming/): every name starts `zmem_`, sizes
//! end `_bytes`, counters end `_total` (the encoder appends it), each family has HELP and TYPE
//! lines, and a zram family has one series per device, labelled `device="zramN"`.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use zmem_kernel::status::{Status, ZramDevice};

use crate::lab_report::LabSavings;

/// A sample's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U(u64),
    I(i64),
    F(f64),
}

/// One metric family: its name (without the unit and `_total` suffixes the encoder adds), help,
/// unit, type and samples.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub unit: Option<Unit>,
    pub counter: bool,
    pub samples: Vec<(Vec<(&'static str, String)>, Value)>,
}

impl Family {
    /// The name as exposed (`zmem_zram_orig_data_bytes`, `zmem_swap_in_pages_total`).
    pub fn full_name(&self) -> String {
        let mut n = self.name.to_string();
        if let Some(u) = &self.unit {
            n.push('_');
            n.push_str(u.as_str());
        }
        if self.counter {
            n.push_str("_total");
        }
        n
    }
}

/// Builds the families, one sample list each; families without samples are left out.
#[derive(Debug, Default)]
struct Builder {
    families: Vec<Family>,
}

impl Builder {
    fn add(
        &mut self,
        name: &'static str,
        help: &'static str,
        unit: Option<Unit>,
        counter: bool,
        samples: Vec<(Vec<(&'static str, String)>, Value)>,
    ) {
        if !samples.is_empty() {
            self.families.push(Family { name, help, unit, counter, samples });
        }
    }

    /// A per-device family from `f` (devices for which it gives None have no sample).
    fn zram(
        &mut self,
        devs: &[ZramDevice],
        name: &'static str,
        help: &'static str,
        unit: Option<Unit>,
        counter: bool,
        f: impl Fn(&ZramDevice) -> Option<Value>,
    ) {
        let samples =
            devs.iter().filter_map(|d| Some((vec![("device", d.name.clone())], f(d)?))).collect();
        self.add(name, help, unit, counter, samples);
    }

    fn one(
        &mut self,
        name: &'static str,
        help: &'static str,
        unit: Option<Unit>,
        counter: bool,
        v: Option<Value>,
    ) {
        if let Some(v) = v {
            self.add(name, help, unit, counter, vec![(vec![], v)]);
        }
    }
}

const B: Option<Unit> = Some(Unit::Bytes);

/// Every metric family of `status` (and of a lab report's what-if savings, when given).
pub fn families(
    status: &Status,
    lab: Option<&LabSavings>,
    read_seconds: Option<f64>,
) -> Vec<Family> {
    use Value::{F, I, U};
    let mut b = Builder::default();
    let z = &status.zram;
    let mm =
        |f: fn(&zmem_kernel::status::MmStat) -> u64| move |d: &ZramDevice| Some(U(f(&d.mm_stat?)));

    b.zram(
        z,
        "zmem_zram_disksize",
        "Size of the zram block device (disksize), 0 until initialised.",
        B,
        false,
        |d| Some(U(d.disksize_bytes)),
    );
    b.zram(
        z,
        "zmem_zram_initialized",
        "1 when the device has a disksize (initstate).",
        None,
        false,
        |d| Some(U(u64::from(d.initialized))),
    );
    b.zram(
        z,
        "zmem_zram_orig_data",
        "Uncompressed size of the data stored (mm_stat orig_data_size).",
        B,
        false,
        mm(|m| m.orig_data_size),
    );
    b.zram(
        z,
        "zmem_zram_compr_data",
        "Compressed size of the data stored (mm_stat compr_data_size).",
        B,
        false,
        mm(|m| m.compr_data_size),
    );
    b.zram(
        z,
        "zmem_zram_mem_used",
        "Memory the device's zsmalloc pool holds, fragmentation included (mm_stat mem_used_total).",
        B,
        false,
        mm(|m| m.mem_used_total),
    );
    b.zram(
        z,
        "zmem_zram_mem_limit",
        "The device's memory limit, 0 for none (mm_stat mem_limit).",
        B,
        false,
        mm(|m| m.mem_limit),
    );
    b.zram(
        z,
        "zmem_zram_mem_used_max",
        "The most memory the pool has held (mm_stat mem_used_max).",
        B,
        false,
        mm(|m| m.mem_used_max),
    );
    b.zram(
        z,
        "zmem_zram_same_pages",
        "Slots holding a same-filled page (mm_stat same_pages).",
        None,
        false,
        mm(|m| m.same_pages),
    );
    b.zram(
        z,
        "zmem_zram_huge_pages",
        "Slots stored uncompressed (mm_stat huge_pages).",
        None,
        false,
        mm(|m| m.huge_pages),
    );
    b.zram(
        z,
        "zmem_zram_huge_pages_stored",
        "Huge stores since the device was initialised (mm_stat huge_pages_since).",
        None,
        true,
        mm(|m| m.huge_pages_since),
    );
    b.zram(
        z,
        "zmem_zram_pages_compacted",
        "Pages freed by compaction (mm_stat pages_compacted).",
        None,
        true,
        mm(|m| m.pages_compacted),
    );
    b.zram(z, "zmem_zram_failed_reads", "Failed reads (io_stat).", None, true, |d| {
        Some(U(d.io_stat?.failed_reads))
    });
    b.zram(z, "zmem_zram_failed_writes", "Failed writes (io_stat).", None, true, |d| {
        Some(U(d.io_stat?.failed_writes))
    });
    b.zram(
        z,
        "zmem_zram_notify_free",
        "Slots freed by discard or swap-slot-free notifications (io_stat notify_free).",
        None,
        true,
        |d| Some(U(d.io_stat?.notify_free)),
    );
    b.zram(
        z,
        "zmem_zram_written_back_pages",
        "4 KiB blocks on the backing device now (bd_stat bd_count; CONFIG_ZRAM_WRITEBACK).",
        None,
        false,
        |d| Some(U(d.bd_stat?.bd_count)),
    );
    b.zram(
        z,
        "zmem_zram_backing_dev_writes_pages",
        "4 KiB blocks written back (bd_stat bd_writes).",
        None,
        true,
        |d| Some(U(d.bd_stat?.bd_writes)),
    );
    b.zram(
        z,
        "zmem_zram_backing_dev_reads_pages",
        "4 KiB blocks read from the backing device (bd_stat bd_reads).",
        None,
        true,
        |d| Some(U(d.bd_stat?.bd_reads)),
    );
    b.zram(
        z,
        "zmem_zram_idle_pages",
        "Slots marked idle (debugfs block_state; only when readable).",
        None,
        false,
        |d| Some(U(d.idle_pages?)),
    );
    b.zram(
        z,
        "zmem_zram_compression_ratio",
        "orig_data_size / compr_data_size (absent while nothing compressed is stored).",
        None,
        false,
        |d| Some(F(d.compression_ratio?)),
    );
    b.zram(
        z,
        "zmem_zram_memory_saved",
        "orig_data_size - mem_used_total: memory the device saves (negative when it costs).",
        B,
        false,
        |d| Some(I(d.memory_saved_bytes?)),
    );
    b.zram(
        z,
        "zmem_zram_fragmentation_ratio",
        "1 - compr_data_size / mem_used_total: the share of the pool not holding data.",
        None,
        false,
        |d| {
            let m = d.mm_stat?;
            (m.mem_used_total > 0)
                .then(|| F(1.0 - m.compr_data_size as f64 / m.mem_used_total as f64))
        },
    );
    b.zram(z, "zmem_zram_compactable", "What writing compact would give back: exact from zsmalloc's classes (debugfs freeable), else the upper bound mem_used_total - compr_data_size rounded up to pages; zmem_zram_compactable_exact says which.", B, false, |d| Some(U(d.compactable?.bytes)));
    b.zram(z, "zmem_zram_compactable_exact", "1 when zmem_zram_compactable comes from zsmalloc's class statistics, 0 when it is the mm_stat bound.", None, false, |d| Some(U(u64::from(d.compactable?.source == "zsmalloc_classes"))));
    b.zram(
        z,
        "zmem_zram_swap_size",
        "Size of the device's swap area (/proc/swaps).",
        B,
        false,
        |d| Some(U(d.swap.as_ref()?.size_bytes)),
    );
    b.zram(
        z,
        "zmem_zram_swap_used",
        "Used part of the device's swap area (/proc/swaps).",
        B,
        false,
        |d| Some(U(d.swap.as_ref()?.used_bytes)),
    );
    b.zram(
        z,
        "zmem_zram_swap_priority",
        "Swap priority of the device (/proc/swaps).",
        None,
        false,
        |d| Some(I(i64::from(d.swap.as_ref()?.priority))),
    );
    let algo = z
        .iter()
        .filter_map(|d| {
            let mut labels = vec![("device", d.name.clone()), ("algorithm", d.algorithm.clone()?)];
            let sec: Vec<String> =
                d.secondaries.iter().map(|s| format!("{}:{}", s.priority, s.algorithm)).collect();
            labels.push(("secondaries", sec.join(",")));
            Some((labels, U(1)))
        })
        .collect();
    b.add("zmem_zram_algorithm_info", "The device's primary compression algorithm and its secondaries (priority:name), as labels; value 1.", None, false, algo);

    let zs = &status.zswap;
    if zs.present {
        b.one(
            "zmem_zswap_enabled",
            "1 when zswap is enabled.",
            None,
            false,
            zs.enabled.map(|e| U(u64::from(e))),
        );
        if let Some(c) = &zs.compressor {
            b.add(
                "zmem_zswap_compressor_info",
                "zswap's compressor, as a label; value 1.",
                None,
                false,
                vec![(vec![("compressor", c.clone())], U(1))],
            );
        }
        b.one(
            "zmem_zswap_max_pool_percent",
            "zswap's pool limit in percent of RAM (max_pool_percent).",
            None,
            false,
            zs.max_pool_percent.map(U),
        );
        b.one(
            "zmem_zswap_pool_limit",
            "zswap's pool limit: MemTotal x max_pool_percent / 100.",
            B,
            false,
            zs.pool_limit_bytes.map(U),
        );
        b.one(
            "zmem_zswap_pool",
            "Memory zswap's pool holds (meminfo Zswap).",
            B,
            false,
            zs.pool_bytes.map(U),
        );
        b.one(
            "zmem_zswap_stored",
            "Uncompressed size of what zswap stores (meminfo Zswapped).",
            B,
            false,
            zs.stored_bytes.map(U),
        );
        b.one(
            "zmem_zswap_stored_pages",
            "Pages zswap stores (debugfs stored_pages, else Zswapped / page size).",
            None,
            false,
            zs.stored_pages.map(U),
        );
        b.one(
            "zmem_zswap_compression_ratio",
            "Zswapped / Zswap.",
            None,
            false,
            zs.compression_ratio.map(F),
        );
        b.one(
            "zmem_zswap_memory_saved",
            "Zswapped - Zswap: memory zswap saves.",
            B,
            false,
            zs.stored_bytes.zip(zs.pool_bytes).map(|(s, p)| I(s as i64 - p as i64)),
        );
        let dbg = |k: &str| zs.debugfs.get(k).copied().map(U);
        b.one(
            "zmem_zswap_written_back_pages",
            "Pages zswap wrote back to swap (debugfs written_back_pages).",
            None,
            true,
            dbg("written_back_pages"),
        );
        b.one(
            "zmem_zswap_pool_limit_hit",
            "Stores refused because the pool was at its limit (debugfs).",
            None,
            true,
            dbg("pool_limit_hit"),
        );
        b.one(
            "zmem_zswap_reject_reclaim_fail",
            "Writebacks that failed (debugfs reject_reclaim_fail).",
            None,
            true,
            dbg("reject_reclaim_fail"),
        );
        b.one(
            "zmem_zswap_reject_alloc_fail",
            "Stores refused: allocation failed (debugfs).",
            None,
            true,
            dbg("reject_alloc_fail"),
        );
        b.one(
            "zmem_zswap_reject_kmemcache_fail",
            "Stores refused: entry allocation failed (debugfs).",
            None,
            true,
            dbg("reject_kmemcache_fail"),
        );
        b.one(
            "zmem_zswap_reject_compress_fail",
            "Stores refused: the compressor failed (debugfs).",
            None,
            true,
            dbg("reject_compress_fail"),
        );
        b.one(
            "zmem_zswap_reject_compress_poor",
            "Stores refused: the page compressed too poorly (debugfs).",
            None,
            true,
            dbg("reject_compress_poor"),
        );
        b.one(
            "zmem_zswap_decompress_fail",
            "Loads whose decompression failed (debugfs).",
            None,
            true,
            dbg("decompress_fail"),
        );
        b.one(
            "zmem_zswap_stored_incompressible_pages",
            "Pages zswap stores as they are (debugfs, 6.18+).",
            None,
            false,
            dbg("stored_incompressible_pages"),
        );
    }

    let c = &status.counters;
    b.one(
        "zmem_swap_in_pages",
        "Pages swapped in, system-wide (vmstat pswpin).",
        None,
        true,
        Some(U(c.pswpin)),
    );
    b.one(
        "zmem_swap_out_pages",
        "Pages swapped out, system-wide (vmstat pswpout).",
        None,
        true,
        Some(U(c.pswpout)),
    );
    b.one(
        "zmem_zswap_in_pages",
        "Pages loaded from zswap (vmstat zswpin).",
        None,
        true,
        c.zswpin.map(U),
    );
    b.one(
        "zmem_zswap_out_pages",
        "Pages stored in zswap (vmstat zswpout).",
        None,
        true,
        c.zswpout.map(U),
    );
    b.one(
        "zmem_zswap_writeback_pages",
        "Pages written back from zswap to swap (vmstat zswpwb).",
        None,
        true,
        c.zswpwb.map(U),
    );

    let area = |f: fn(&zmem_kernel::status::SwapArea) -> Value| {
        status
            .swaps
            .iter()
            .map(|a| (vec![("area", a.filename.clone()), ("type", a.kind.clone())], f(a)))
            .collect::<Vec<_>>()
    };
    b.add(
        "zmem_swap_area_size",
        "Size of a swap area (/proc/swaps).",
        B,
        false,
        area(|a| U(a.size_bytes)),
    );
    b.add(
        "zmem_swap_area_used",
        "Used part of a swap area (/proc/swaps).",
        B,
        false,
        area(|a| U(a.used_bytes)),
    );
    b.add(
        "zmem_swap_area_priority",
        "Priority of a swap area (/proc/swaps).",
        None,
        false,
        area(|a| I(i64::from(a.priority))),
    );

    if let Some(l) = lab {
        b.add("zmem_lab_recommended_memory_saved", "What the configuration a zmem lab run decided on would save against now's with every sampled page swapped (its decision's chosen candidate's memory_saved_bytes); at the machine's operating points, see zmem_lab_recommended_memory_saved_at_today_bytes and _at_cold_age_bytes.", B, false, vec![(vec![("device", l.device.clone()), ("config", l.config.clone())], I(l.saved_vs_now_bytes))]);
        lab_point(&mut b, l);
        b.add(
            "zmem_lab_recommended_ratio",
            "Compression ratio the recommended configuration is expected to reach.",
            None,
            false,
            vec![(
                vec![("device", l.device.clone()), ("config", l.config.clone())],
                F(l.expected_ratio),
            )],
        );
        let cands = l
            .candidates
            .iter()
            .map(|(n, v)| (vec![("device", l.device.clone()), ("candidate", n.clone())], I(*v)))
            .collect();
        b.add("zmem_lab_candidate_memory_saved", "What each configuration the lab measured would save against now's with every sampled page swapped (candidates memory_saved_bytes).", B, false, cands);
    }

    b.one(
        "zmem_unreadable_files",
        "Files zmem could not read on this scrape (zmem status lists them, with the reason).",
        None,
        false,
        Some(U(status.unreadable.len() as u64)),
    );
    b.one(
        "zmem_read_duration",
        "Time spent reading the kernel's files for this scrape.",
        Some(Unit::Seconds),
        false,
        read_seconds.map(F),
    );
    b.families
}

/// The lab report's operating point (schema 8 on): the decided configuration's savings at
/// today's pressure and at the cold age T, and the cold memory there. A figure the lab did not
/// read has no sample, so a dashboard shows nothing rather than a saving of 0.
fn lab_point(b: &mut Builder, l: &LabSavings) {
    use Value::{I, U};
    let Some(p) = &l.point else { return };
    let labels = || vec![("device", l.device.clone()), ("config", l.config.clone())];
    let one = |v: Option<Value>| v.map(|v| vec![(labels(), v)]).unwrap_or_default();
    b.add("zmem_lab_recommended_memory_saved_at_today", "What the configuration a zmem lab run decided on would save at today's pressure: with only the anonymous memory the kernel's reclaim moves out now compressed (kswapd's deficit under the low watermark, or memory cgroups' excess over their limits; 0 while memory is not short); the chosen candidate's at_today. Absent where the lab read no pressure of this machine.", B, false, one(p.saved_today_bytes.map(I)));
    b.add("zmem_lab_recommended_memory_saved_at_cold_age", "What the configuration a zmem lab run decided on would save at the cold age T: with every anonymous byte idle for T moved out (what proactive reclaim would move out now, and reclaim takes first when memory runs short); the chosen candidate's at_cold_age. Absent where no cold curve reached T.", B, false, one(p.saved_cold_age_bytes.map(I)));
    b.one("zmem_lab_cold", "Anonymous memory of the processes a zmem lab run watched that stayed idle for at least the cold age T (decision.operating_point.cold.cold_bytes).", B, false, p.cold_bytes.map(U));
    b.one("zmem_lab_cold_age", "The cold age T the lab figured its cold-age savings at (decision.operating_point.cold.age_secs).", Some(Unit::Seconds), false, p.cold_age_secs.map(U));
    b.add("zmem_lab_operating_point_info", "1, labelled with the operating point the lab decision's own memory_saved_bytes is at: today (today's pressure), cold_age (proactive reclaim at T) or all_pages (every sampled page swapped: the pages are not this machine's).", None, false, vec![(vec![("point", p.named.to_string())], U(1))]);
}

#[derive(Debug)]
struct Families(Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            let kind = if f.counter { MetricType::Counter } else { MetricType::Gauge };
            let mut me = encoder.encode_descriptor(f.name, f.help, f.unit.as_ref(), kind)?;
            for (labels, v) in &f.samples {
                let e = me.encode_family(labels)?;
                match (f.counter, *v) {
                    (true, Value::U(x)) => ConstCounter::new(x).encode(e)?,
                    (true, Value::F(x)) => ConstCounter::new(x).encode(e)?,
                    (true, Value::I(x)) => ConstCounter::new(x.max(0) as u64).encode(e)?,
                    (false, Value::U(x)) => ConstGauge::new(x).encode(e)?,
                    (false, Value::I(x)) => ConstGauge::new(x).encode(e)?,
                    (false, Value::F(x)) => ConstGauge::new(x).encode(e)?,
                }
            }
        }
        Ok(())
    }
}

/// The exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (ends `# EOF`).
    OpenMetrics,
    /// Prometheus text 0.0.4: what node_exporter's textfile collector and `promtool check
    /// metrics` read.
    Prometheus,
}

impl Format {
    /// The Content-Type of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format a scraper asks for in its Accept header: OpenMetrics when it lists it
    /// (Prometheus does), else the classic text.
    pub fn negotiate(accept: Option<&str>) -> Self {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }
}

/// Encodes `families` in `format`.
pub fn encode(families: Vec<Family>, format: Format) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(families)));
    let mut out = String::with_capacity(16 * 1024);
    match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry)?,
        Format::Prometheus => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?
        }
    }
    Ok(out)
}
