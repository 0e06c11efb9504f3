//! zswap's "Now": its live state read, and zmem's prediction for the same compressor on the
//! pages the lab measured, packed as zswap's one zsmalloc pool packs them at the live scale.

use super::*;

/// zmem's prediction of zswap's pool for the measured pages with one compressor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapPrediction {
    pub compressor: String,
    /// Pages measured, and those among them zswap would be offered (not zero-filled).
    pub pages: u64,
    pub offered_pages: u64,
    /// Of those, stored (compressed, or as-is) and rejected.
    pub stored_pages: u64,
    pub rejected_pages: u64,
    /// Sum of the stored objects' lengths (what memory.stat `zswap` charges).
    pub compressed_bytes: u64,
    /// zsmalloc's pages for them (debugfs `pool_total_size`), in zswap's one zsmalloc pool.
    pub pool_total_size: u64,
    /// Where the pages came from, and that the live pool's pages were not read.
    pub note: String,
    /// The stored objects per zsmalloc size class (what the pool is computed from at any
    /// scale, [`zswap_pool_bytes`]), each page counted by its weight (1 without weights).
    #[serde(skip)]
    pub class_counts: Vec<f64>,
    /// The stored pages' weights summed, and their objects' lengths each times its weight:
    /// what the class counts and the compressed bytes are scaled by to the live pages.
    #[serde(skip)]
    pub stored_weight: f64,
    #[serde(skip)]
    pub weighted_bytes: f64,
    /// How the pages were weighed: `None` each page alike; otherwise what the weights are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighting: Option<String>,
}

/// Kibibytes of `VmSwap` in /proc/PID/status as pages (0 for a process gone or without swap).
pub fn vm_swap_pages(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("VmSwap:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024 / zmem_kernel::capture::system_page_size() as u64)
}

/// Per-page weights for a sample of processes' resident pages standing for the pages they have
/// in swap: the pages zswap holds are the swapped-out pages of processes (`VmSwap`, which
/// counts the zeromap's and the device's too), not their resident ones, and which processes
/// swapped is not which processes are large. A page of process P weighs `swapped(P) / n(P)`,
/// `n(P)` its pages in the sample, so each process counts as much as it has in swap. `None`
/// where no process of the sample has anything in swap (then every page weighs the same).
pub fn swap_weights(pids: &[u32], swapped: impl Fn(u32) -> u64) -> Option<Vec<f64>> {
    let mut per: std::collections::HashMap<u32, (u64, u64)> = std::collections::HashMap::new();
    for &pid in pids {
        per.entry(pid).or_insert((0, 0)).1 += 1;
    }
    let mut total = 0;
    for (&pid, v) in per.iter_mut() {
        v.0 = if pid == 0 { 0 } else { swapped(pid) };
        total += v.0;
    }
    (total > 0).then(|| {
        pids.iter()
            .map(|p| {
                let (s, n) = per[p];
                s as f64 / n as f64
            })
            .collect()
    })
}

/// zsmalloc's size classes as zswap's pools use them (zswap's chain size).
pub(super) fn zswap_classes(ps: usize) -> Result<ClassTable, LabError> {
    ClassTable::new(ps, zmem_zswap::ZswapConfig::default().chain_size)
        .map_err(|e| LabError::Setup(format!("size classes: {e}")))
}

/// The pool zswap needs for `counts[k]` objects of each size class `k`, written one after
/// another into its one zsmalloc pool (6.18: one `zs_pool` per compressor, mm/zswap.c
/// `zswap_pool_create()`): per class `ceil(objects / objs_per_zspage)` zspages of
/// `pages_per_zspage` pages (mm/zsmalloc.c: a class fills its partly used zspages before
/// `alloc_zspage()`), so one partly filled zspage per class at most.
pub fn zswap_pool_bytes(classes: &ClassTable, counts: &[u64], ps: usize) -> u64 {
    let pages: u64 = counts
        .iter()
        .zip(classes.classes())
        .map(|(&k, c)| k.div_ceil(c.objs_per_zspage as u64) * c.pages_per_zspage as u64)
        .sum();
    pages * ps as u64
}

/// zswap's live state with its debugfs counters: debugfs mounted for the read and unmounted
/// again where it was not mounted (what was mounted stays as it was; `notes` say so). Called
/// only when the user asked for it (`--mount-debugfs`).
pub fn read_state() -> ZswapState {
    let (mut state, mut notes) =
        zmem_kernel::zswap_state::with_debugfs_mounted(zmem_kernel::zswap_state::read);
    state.notes.append(&mut notes);
    state
}

/// Reads zswap's live configuration and the swap areas (never fails: what cannot be read is a
/// note in the state); with `mount_debugfs`, the state through [`read_state`].
pub fn read_live(mount_debugfs: bool) -> ZswapLive {
    let caps = zmem_kernel::caps::read();
    let state = if mount_debugfs { read_state() } else { zmem_kernel::zswap_state::read() };
    let swaps: Vec<SwapAreaNow> = zmem_kernel::stat::swaps()
        .map(|v| {
            v.into_iter()
                .map(|a| SwapAreaNow {
                    kind: if a.zram_id().is_some() { "zram".into() } else { a.kind.clone() },
                    filename: a.filename,
                    size_bytes: a.size_bytes,
                    used_bytes: a.used_bytes,
                    priority: a.priority,
                })
                .collect()
        })
        .unwrap_or_default();
    let sysctl =
        |name: &str| zmem_kernel::stat::vm_sysctl(name).ok().and_then(|v| u32::try_from(v).ok());
    let mem_total_bytes =
        zmem_kernel::stat::meminfo().ok().and_then(|m| m.get("MemTotal").copied());
    let swap_file_room = swaps.iter().all(|s| s.kind == "zram").then(|| {
        let dir = crate::request::swap_file_dir();
        let free_bytes = zmem_kernel::stat::free_bytes(dir).ok()?;
        Some(SwapFileRoom { dir: dir.display().to_string(), free_bytes })
    });
    ZswapLive {
        swap_file_room: swap_file_room.flatten(),
        mem_total_bytes,
        memory_cgroup_version: zmem_kernel::cgroups::memory_controller_version(
            std::path::Path::new("/"),
        ),
        present: caps.zswap_present,
        offered: caps.zswap_compressors,
        state,
        swaps,
        swappiness: sysctl("swappiness"),
        page_cluster: sysctl("page-cluster"),
    }
}

/// zmem's zswap pool for `pages` (whole pages of `ps`) with `compressor`: every non-zero page
/// stored once into a pool with no limit.
pub fn predict(pages: &[u8], ps: usize, compressor: &str) -> Result<ZswapPrediction, LabError> {
    let facts = PageFacts::of_pages(pages, ps, &[compressor])?;
    predict_weighted(&facts, compressor, None)
}

/// Objects of the lengths the page facts give, for a store that needs only their sizes (no
/// page is loaded back): zeros, which no store reads.
struct OfLength<'a> {
    lengths: &'a [u32],
    zeros: Vec<u8>,
}

impl zmem_comp::ObjectSource for OfLength<'_> {
    fn object(&self, index: u64, _: &str, _: &zmem_comp::Params) -> Option<&[u8]> {
        let len = *self.lengths.get(usize::try_from(index).ok()?)? as usize;
        self.zeros.get(..len)
    }
}

/// [`predict`] with each page weighed ([`swap_weights`]): the class counts and compressed bytes
/// are the weighted sums, so scaled to the live pages they stand for what is in swap.
pub fn predict_weighted(
    facts: &PageFacts,
    compressor: &str,
    weights: Option<&[f64]>,
) -> Result<ZswapPrediction, LabError> {
    let (ps, n) = (facts.page_size, facts.pages() as u64);
    let objects = OfLength {
        lengths: facts.raw(compressor)?,
        zeros: vec![0u8; zmem_comp::compress_bound(ps)],
    };
    let page = vec![0u8; ps];
    let cfg = ReplayConfig {
        ram_pages: n.max(1) * 4,
        zswap: ZswapParams {
            compressor: compressor.into(),
            max_pool_percent: 100,
            accept_threshold_percent: 100,
            shrinker_enabled: false,
        },
        swap: SwapKind::Zswap,
        page_size: ps,
        ..ReplayConfig::default()
    };
    let z = zmem_sim::replay::build_zswap(&cfg, n.max(1))
        .map_err(|e| LabError::Setup(format!("zswap with {compressor}: {e}")))?;
    let classes = zswap_classes(ps)?;
    let mut class_counts = vec![0f64; classes.classes().len()];
    let mut unit = vec![0u64; classes.classes().len()];
    let (mut offered, mut rejected, mut compressed) = (0u64, 0u64, 0u64);
    let (mut stored_weight, mut weighted_bytes) = (0f64, 0f64);
    for i in 0..facts.pages() {
        // A zero page of an order-0 folio never reaches zswap (mm/page_io.c `swap_writeout()`:
        // `is_folio_zero_filled()` sends it to the zeromap). The pages here carry no folio:
        // a zero subpage of a large folio with data elsewhere, which 6.18 stores, is left out.
        if facts.is_zero(i) {
            continue;
        }
        offered += 1;
        let w = weights.map_or(1.0, |w| w.get(i).copied().unwrap_or(0.0));
        match z
            .store_folio_with(i as u64, &page, Some(&objects))
            .map_err(|e| LabError::Setup(format!("zswap store with {compressor}: {e}")))?
        {
            zmem_zswap::StoreOutcome::Stored { length } => {
                compressed += length as u64;
                let k = classes.slot_for_request(length);
                unit[k] += 1;
                class_counts[k] += w;
                stored_weight += w;
                weighted_bytes += w * length as f64;
            }
            zmem_zswap::StoreOutcome::Rejected(_) => rejected += 1,
        }
    }
    let s = z.stats();
    Ok(ZswapPrediction {
        compressor: compressor.into(),
        pages: n,
        offered_pages: offered,
        stored_pages: s.stored_pages,
        rejected_pages: rejected,
        compressed_bytes: compressed,
        pool_total_size: zswap_pool_bytes(&classes, &unit, ps),
        class_counts,
        stored_weight,
        weighted_bytes,
        weighting: None,
        note: "predicted from the pages the lab measured: the pages zswap stores cannot be read \
               without faulting them in"
            .into(),
    })
}

/// `now.zswap` from the live state, the prediction for its compressor on the measured pages,
/// and the rates between two snapshots (`after` taken `secs` after `live.state`).
pub fn now(
    live: &ZswapLive,
    after: Option<&ZswapState>,
    secs: f64,
    facts: &PageFacts,
    weights: Option<&[f64]>,
) -> ZswapNow {
    let ps = facts.page_size;
    let st = after.unwrap_or(&live.state);
    let mut notes = st.notes.clone();
    let prediction = if st.module.compressor.is_empty() {
        None
    } else {
        match predict_weighted(facts, &st.module.compressor, weights) {
            Ok(mut p) => {
                if weights.is_some() {
                    p.weighting = Some(
                        "each process's pages weighed by its pages in swap (VmSwap): the pages \
                         zswap holds are the swapped ones"
                            .into(),
                    );
                }
                Some(p)
            }
            Err(e) => {
                notes.push(format!("no prediction with {}: {e}", st.module.compressor));
                None
            }
        }
    };
    let page = st.page_size.max(1);
    let dbg = |k: &str| st.debugfs.as_ref().and_then(|d| d.get(k).copied());
    let stored_pages = dbg("stored_pages").or(st.meminfo_zswapped_bytes.map(|b| b / page));
    // The prediction scaled to the pages zswap holds now: the weighted sums over the
    // weighted stored pages.
    let scale = |v: f64| -> Option<u64> {
        let p = prediction.as_ref()?;
        let live = stored_pages?;
        (p.stored_weight > 0.0).then(|| (v * live as f64 / p.stored_weight).round() as u64)
    };
    let fields = vec![
        ZswapField { field: "stored_pages".into(), live: stored_pages, predicted: stored_pages },
        ZswapField {
            field: "pool_total_size".into(),
            live: dbg("pool_total_size").or(st.meminfo_zswap_bytes),
            // Each class's objects scaled to the live stored pages, then packed: the partly
            // filled zspage of each class does not scale with the pages.
            predicted: prediction.as_ref().and_then(|p| {
                let classes = zswap_classes(ps).ok()?;
                let counts: Vec<u64> =
                    p.class_counts.iter().map(|&k| scale(k)).collect::<Option<_>>()?;
                Some(zswap_pool_bytes(&classes, &counts, ps))
            }),
        },
        ZswapField {
            field: "compressed_bytes".into(),
            live: top_level_zswap_bytes(&st.cgroups),
            predicted: prediction.as_ref().and_then(|p| scale(p.weighted_bytes)),
        },
    ];
    // The predicted pool's ratio: at the live scale where zswap holds pages, else the measured
    // pages' own.
    let predicted_ratio = match (stored_pages, fields[1].predicted) {
        (Some(n), Some(pool)) if n > 0 && pool > 0 => Some((n * ps as u64) as f64 / pool as f64),
        _ => prediction.as_ref().and_then(|p| {
            (p.pool_total_size > 0)
                .then(|| (p.stored_pages * ps as u64) as f64 / p.pool_total_size as f64)
        }),
    };
    let pool_difference_bytes = match (fields[1].live, fields[1].predicted) {
        (Some(l), Some(p)) => Some(l as i64 - p as i64),
        _ => None,
    };
    let rates = after.map(|a| zmem_kernel::zswap_state::rates(&live.state, a, secs));
    ZswapNow {
        enabled: st.enabled,
        module: st.module.clone(),
        params: st.params.clone(),
        debugfs: st.debugfs.clone(),
        debugfs_note: st.debugfs_note.clone(),
        meminfo_zswap_bytes: st.meminfo_zswap_bytes,
        meminfo_zswapped_bytes: st.meminfo_zswapped_bytes,
        vmstat: st.vmstat.clone(),
        cgroups: st.cgroups.clone(),
        stored_pages,
        live_ratio: st.ratio(),
        prediction,
        predicted_ratio,
        fields,
        pool_difference_bytes,
        rates,
        observed_secs: if after.is_some() { secs } else { 0.0 },
        notes,
    }
}

/// memory.stat `zswap` summed over the cgroups no other listed cgroup contains (a parent's
/// figure already counts its children's); `None` without cgroup v2 accounting.
fn top_level_zswap_bytes(cgroups: &[zmem_kernel::zswap_state::ZswapCgroup]) -> Option<u64> {
    let top = cgroups.iter().filter(|c| {
        !cgroups.iter().any(|d| d.path != c.path && c.path.starts_with(&format!("{}/", d.path)))
    });
    top.filter_map(|c| c.zswap_bytes).fold(None, |acc, b| Some(acc.unwrap_or(0) + b))
}

/// The swap rates with zswap's own traffic: with zswap enabled a page it stores or loads is in
/// zswpout/zswpin and not in pswpout/pswpin (mm/page_io.c `swap_writeout()` returns after a
/// successful `zswap_store()`, and `swap_read_folio()` after a `zswap_load()` hit, before the
/// bdev reads that count `PSWPIN`), so the swap traffic is their sum.
pub fn with_zswap_traffic(rates: Rates, z: &ZswapRates) -> Rates {
    if rates.source != "observed" {
        return rates;
    }
    let (zin, zout) = (z.zswpin_per_sec.unwrap_or(0.0), z.zswpout_per_sec.unwrap_or(0.0));
    if zin == 0.0 && zout == 0.0 {
        return rates;
    }
    Rates {
        swap_ins_per_sec: rates.swap_ins_per_sec + zin,
        swap_outs_per_sec: rates.swap_outs_per_sec + zout,
        note: format!("{}; zswap zswpin {zin:.1}/s, zswpout {zout:.1}/s added", rates.note),
        ..rates
    }
}
