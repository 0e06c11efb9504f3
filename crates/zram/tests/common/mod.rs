//! Pages with known properties for the zram tests: same-filled, incompressible (huge) and
//! ordinary compressible pages, deterministic for a seed.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The tests' random numbers: zmem-pages's generator, the one every zmem test draws from.
pub use zmem_pages::prng::SplitMix64 as Rng;
use zmem_zram::{Clock, MmStat, Zram, ZramConfig};

pub const PS: usize = 4096;

/// The device's `mm_stat`, parsed.
pub fn mm(z: &Zram) -> MmStat {
    z.show("mm_stat").unwrap().parse().unwrap()
}

pub fn same_page(word: u64) -> Vec<u8> {
    word.to_ne_bytes().repeat(PS / 8)
}

pub fn random_page(rng: &mut Rng) -> Vec<u8> {
    (0..PS / 8).flat_map(|_| rng.next_u64().to_le_bytes()).collect()
}

/// Text-like data with a tunable share of random bytes: compresses to roughly `noise` of the
/// page with any LZ codec.
pub fn ordinary_page(rng: &mut Rng, noise: f64) -> Vec<u8> {
    let words: [&[u8]; 8] =
        [b"page ", b"zram ", b"slot ", b"handle ", b"class ", b"zspage ", b"stream ", b"idle "];
    let mut p = Vec::with_capacity(PS);
    while p.len() < PS {
        if (rng.next_u64() % 1000) as f64 / 1000.0 < noise {
            p.push(rng.next_u64() as u8);
        } else {
            p.extend_from_slice(words[(rng.next_u64() % 8) as usize]);
        }
    }
    p.truncate(PS);
    p
}

/// A mix: 10% same-filled, 10% random (huge), the rest ordinary at varied compressibility.
pub fn mixed_pages(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| match i % 10 {
            0 => same_page(if i % 20 == 0 { 0 } else { rng.next_u64() }),
            5 => random_page(&mut rng),
            k => ordinary_page(&mut rng, k as f64 * 0.07),
        })
        .collect()
}

/// A clock tests move by hand, in nanoseconds as the kernel's `ktime_t`.
#[derive(Debug, Default)]
pub struct ManualClock(pub AtomicU64);

impl ManualClock {
    /// A clock standing at `secs` seconds.
    pub fn at_secs(secs: u64) -> Self {
        Self(AtomicU64::new(secs * 1_000_000_000))
    }

    pub fn advance(&self, secs: u32) {
        self.advance_ns(u64::from(secs) * 1_000_000_000);
    }

    pub fn advance_ns(&self, ns: u64) {
        self.0.fetch_add(ns, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// An initialised device of `pages` pages with `algo` (a research codec gets a device that
/// offers them).
pub fn device(algo: &str, pages: usize) -> Zram {
    let research_codecs = !zmem_comp::find(algo).is_ok_and(|a| a.in_kernel);
    let z = Zram::new(ZramConfig { research_codecs, ..ZramConfig::default() }).unwrap();
    z.store("comp_algorithm", algo).unwrap();
    z.store("disksize", &format!("{}", pages * PS)).unwrap();
    z
}

pub fn device_with_clock(algo: &str, pages: usize) -> (Zram, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_secs(100));
    let z = Zram::with_clock(ZramConfig::default(), clock.clone()).unwrap();
    z.store("comp_algorithm", algo).unwrap();
    z.store("disksize", &format!("{}", pages * PS)).unwrap();
    (z, clock)
}

pub fn read(z: &Zram, index: u64) -> Vec<u8> {
    let mut out = vec![0xa5; PS];
    z.read_page(index, &mut out).unwrap();
    out
}
