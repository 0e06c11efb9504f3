//! zswap as the advisor samples it: where the kernel has zswap (`/sys/module/zswap/parameters`),
//! a rolling sample of the processes' resident anonymous pages ([`super::anon`]), each page
//! compressed once by every compressor zswap can use here (the crypto API's, as the lab's zswap
//! part reads them: `KernelCaps::zswap_compressors` from /proc/crypto, `zswap_can_use`) and only
//! the lengths zswap would store kept ([`super::estimate::zswap_stored_len`]; 0 for a zero page,
//! which zswap never sees).
//!
//! The sample is a ring of at most `--advise-sample` pages: while it fills, pages are read as
//! fast as the CPU budget allows; once full, one page replaces the oldest every
//! `refresh / size` (ten minutes for the whole ring by default), so the sample follows the
//! memory as it changes and reads a bounded number of pages an hour.
//!
//! **Basis.** zswap's pages are in RAM, uncompressed, until reclaim offers them, so what a
//! compressor saves is judged as the lab's decision judges zswap with no compressed swap
//! running (crates/lab/src/decision.rs, `now_bytes`): the pages uncompressed (`AnonPages` of
//! /proc/meminfo) less the candidate's estimated zsmalloc pool for them, with the pool's 95 %
//! interval. It is what compressing every resident anonymous page would save: an upper bound
//! of what zswap saves, which compresses only what reclaim swaps out.
//!
//! **Rates.** The candidates' CPU is priced at the kernel's own swap traffic (/proc/vmstat
//! `pswpout + zswpout` out, `pswpin + zswpin` in: every swap-out zswap would be offered,
//! whether it goes to zswap or a swap device now), over the rate window.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use zmem_kernel::caps::KernelCaps;
use zmem_lab::cost::Traffic;

use super::anon::{Procs, Skips};
use super::device::Codec;
use super::estimate;
use super::judge::{self, Basis, Measured, Row};

/// zswap's last judgement ([`zswap`]).
#[derive(Debug, Clone)]
pub struct ZswapAdvice {
    /// zswap's `enabled` and `compressor` now.
    pub params: Params,
    /// Resident anonymous pages (`AnonPages`), which the sample stands for.
    pub population_pages: u64,
    pub sample_pages: u64,
    /// Zero pages among them (zswap never stores them).
    pub zero_pages: u64,
    pub oldest_read: Option<Instant>,
    /// The ring holds the sample asked for.
    pub filled: bool,
    pub pages_read: u64,
    pub skips: Skips,
    /// Processes listed with resident anonymous pages.
    pub processes: u64,
    pub traffic: Traffic,
    pub rows: Vec<Row>,
    pub recommended: Option<(String, Basis)>,
}

impl ZswapAdvice {
    /// The `current` label: the compressor zswap runs, or `none` while it is disabled.
    pub fn current(&self) -> &str {
        if self.params.enabled { &self.params.compressor } else { "none" }
    }
}

/// One sampled page: its stored length per codec (0: a zero page), and when it was read.
#[derive(Debug, Clone)]
struct Sampled {
    lens: Box<[u32]>,
    read_at: Instant,
}

/// zswap's module parameters that matter here, read again at every judgement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pub enabled: bool,
    pub compressor: String,
}

/// Reads `enabled` and `compressor` under `sys/module/zswap/parameters` of `root` (by
/// zmem-kernel's one reader, `zswap_state::params_at`).
pub fn params(root: &Path) -> Option<Params> {
    let mut p = zmem_kernel::zswap_state::params_at(&root.join("sys")).ok()?.values;
    let enabled = p.remove("enabled")?;
    Some(Params {
        enabled: zmem_kernel::zswap_state::parse_bool_param(&enabled).unwrap_or(false),
        compressor: p.remove("compressor").unwrap_or_default(),
    })
}

/// Every swap-in and swap-out so far (/proc/vmstat `pswpin + zswpin`, `pswpout + zswpout`).
pub fn swap_totals(v: &std::collections::BTreeMap<String, u64>) -> Option<(u64, u64)> {
    let g = |k: &str| v.get(k).copied().unwrap_or(0);
    v.contains_key("pswpin").then(|| (g("pswpin") + g("zswpin"), g("pswpout") + g("zswpout")))
}

/// The zswap sampler's state.
#[derive(Debug)]
pub struct Zswap {
    root: PathBuf,
    pub procs: Procs,
    pub codecs: Vec<Codec>,
    ring: VecDeque<Sampled>,
    cap: usize,
    /// Pages read (their contents came back).
    pub pages_read: u64,
    /// Not read again before this once the ring is full.
    next_read: Option<Instant>,
    rates: VecDeque<(Instant, u64, u64)>,
    page_size: usize,
    buf: Vec<u8>,
    out: Vec<u8>,
    back: Vec<u8>,
}

impl Zswap {
    /// The sampler where `root`'s kernel has zswap (`caps.zswap_present`); its candidates are
    /// the live compressor first, then every compressor zswap can use that our codecs play.
    pub fn new(
        root: &Path,
        caps: &KernelCaps,
        page_size: usize,
        cap: u64,
        seed: u64,
    ) -> Option<Self> {
        if !caps.zswap_present {
            return None;
        }
        let live = params(root).map(|p| p.compressor).unwrap_or_default();
        let mut names: Vec<&str> = Vec::new();
        for c in
            std::iter::once(live.as_str()).chain(caps.zswap_compressors.iter().map(|s| s.as_str()))
        {
            if !c.is_empty() && caps.zswap_can_use(c).is_ok() && !names.contains(&c) {
                names.push(c);
            }
        }
        Some(Self {
            root: root.to_path_buf(),
            procs: Procs::new(&root.join("proc"), page_size, seed),
            codecs: names.iter().filter_map(|c| Codec::new(c, page_size)).collect(),
            ring: VecDeque::new(),
            cap: cap.max(2) as usize,
            pages_read: 0,
            next_read: None,
            rates: VecDeque::new(),
            page_size,
            buf: vec![0u8; page_size],
            out: vec![0u8; zmem_comp::compress_bound(page_size).max(page_size)],
            back: vec![0u8; page_size],
        })
    }

    /// The ring holds the sample asked for.
    pub fn filled(&self) -> bool {
        self.ring.len() >= self.cap
    }

    pub fn sample_pages(&self) -> u64 {
        self.ring.len() as u64
    }

    /// Zero pages in the sample.
    pub fn zero_pages(&self) -> u64 {
        self.ring.iter().filter(|s| s.lens.iter().all(|&l| l == 0)).count() as u64
    }

    pub fn oldest_read(&self) -> Option<Instant> {
        self.ring.iter().map(|s| s.read_at).min()
    }

    pub fn skips(&self) -> Skips {
        self.procs.skips
    }

    /// Codec `i`'s stored lengths over the sample.
    pub fn lens(&self, i: usize) -> Vec<u32> {
        self.ring.iter().filter_map(|s| s.lens.get(i).copied()).collect()
    }

    /// When the next page is due once the ring is full (`None`: now, as fast as the budget
    /// allows).
    pub fn next_due(&self) -> Option<Instant> {
        self.next_read
    }

    /// Whether the page buffers hold nothing (between rounds they must not: module doc).
    #[cfg(test)]
    pub(crate) fn buffers_clear(&self) -> bool {
        [&self.buf, &self.out, &self.back].iter().all(|b| b.iter().all(|&x| x == 0))
            && self.buf.len() == self.page_size
    }

    /// Whether a round is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        !self.codecs.is_empty() && self.next_read.is_none_or(|t| now >= t)
    }

    /// Reads up to `k` pages (draws that miss or fail count as tries). Returns the pages read.
    /// Once the ring is full, one page per `refresh / size`.
    pub fn read_round(&mut self, k: usize, refresh: Duration, now: Instant) -> usize {
        if !self.due(now) {
            return 0;
        }
        let read = self.sample_round(k, refresh, now);
        // The last page read and its compressed forms stay in no buffer between rounds.
        for b in [&mut self.buf, &mut self.out, &mut self.back] {
            b.as_mut_slice().zeroize();
        }
        read
    }

    /// [`Self::read_round`]'s reads.
    fn sample_round(&mut self, k: usize, refresh: Duration, now: Instant) -> usize {
        self.procs.refresh_if_due(now);
        let ps = self.page_size;
        let mut read = 0;
        for _ in 0..k {
            if self.procs.read_one(&mut self.buf).is_none() {
                continue;
            }
            self.pages_read += 1;
            read += 1;
            let lens: Box<[u32]> = if self.buf.iter().all(|&b| b == 0) {
                vec![0u32; self.codecs.len()].into()
            } else {
                self.codecs
                    .iter_mut()
                    .map(|c| {
                        let len = c.measure(&self.buf, &mut self.out, &mut self.back);
                        estimate::zswap_stored_len(ps, len) as u32
                    })
                    .collect()
            };
            if self.ring.len() >= self.cap {
                self.ring.pop_front();
            }
            self.ring.push_back(Sampled { lens, read_at: Instant::now() });
            if self.filled() {
                self.next_read = Some(now + refresh / self.cap as u32);
                break;
            }
        }
        read
    }

    /// Judges the sample now: every codec's pool for the population, saved against the pages
    /// uncompressed, CPU at the window's swap rates (module doc), within `budget` CPU seconds
    /// per second; the recommendation once the sample is full.
    pub fn judge(
        &mut self,
        root: &Path,
        now: Instant,
        window: Duration,
        budget: f64,
    ) -> ZswapAdvice {
        let ps = self.page_size;
        let params = params(root).unwrap_or_default();
        let traffic = self.traffic(now, window);
        let population = self.population().unwrap_or(0);
        let mut measured = Vec::new();
        if let Some(classes) = estimate::zswap_classes(ps) {
            for (i, c) in self.codecs.iter().enumerate() {
                let lens = self.lens(i);
                if let Some(e) = estimate::estimate_zswap(&classes, ps, population, &lens) {
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
        // What the pages take now: themselves, uncompressed (the module doc).
        let current = if params.enabled { params.compressor.as_str() } else { "" };
        let rows = judge::judge(&measured, current, population * ps as u64, traffic, budget);
        let filled = self.filled();
        let recommended = if filled {
            judge::recommend(&rows).map(|(i, b)| (rows[i].config.clone(), b))
        } else {
            None
        };
        ZswapAdvice {
            params,
            population_pages: population,
            sample_pages: self.sample_pages(),
            zero_pages: self.zero_pages(),
            oldest_read: self.oldest_read(),
            filled,
            pages_read: self.pages_read,
            skips: self.skips(),
            processes: self.procs.listed() as u64,
            traffic,
            rows,
            recommended,
        }
    }

    /// The window's swap traffic from /proc/vmstat under the root, sampled now.
    pub fn traffic(&mut self, now: Instant, window: Duration) -> Traffic {
        let zero = Traffic { swap_ins_per_sec: 0.0, swap_outs_per_sec: 0.0 };
        let vmstat = zmem_kernel::stat::vmstat_at(&self.root.join("proc")).unwrap_or_default();
        if let Some((i, o)) = swap_totals(&vmstat) {
            self.rates.push_back((now, i, o));
        }
        while self.rates.len() > 2
            && self.rates.get(1).is_some_and(|(t, _, _)| now.duration_since(*t) >= window)
        {
            self.rates.pop_front();
        }
        let (Some(a), Some(b)) = (self.rates.front(), self.rates.back()) else { return zero };
        let secs = b.0.duration_since(a.0).as_secs_f64();
        if secs <= 0.0 {
            return zero;
        }
        Traffic {
            swap_ins_per_sec: b.1.saturating_sub(a.1) as f64 / secs,
            swap_outs_per_sec: b.2.saturating_sub(a.2) as f64 / secs,
        }
    }

    /// The population: resident anonymous pages (`AnonPages`).
    pub fn population(&self) -> Option<u64> {
        let m = zmem_kernel::stat::meminfo_at(&self.root.join("proc")).ok()?;
        Some(m.get("AnonPages")? / (self.page_size as u64).max(1))
    }
}
