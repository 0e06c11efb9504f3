//! Pages with known properties for the zram tests: same-filled, incompressible (huge) and
//! ordinary compressible pages, deterministic for a seed.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use zmem_zram::{Clock, Zram, ZramConfig};

pub const PS: usize = 4096;

/// xorshift64*: small, deterministic, good enough to make incompressible bytes.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e3779b97f4a7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545f4914f6cdd1d)
    }
}

pub fn same_page(word: u64) -> Vec<u8> {
    word.to_ne_bytes().repeat(PS / 8)
}

pub fn random_page(rng: &mut Rng) -> Vec<u8> {
    (0..PS / 8).flat_map(|_| rng.next().to_le_bytes()).collect()
}

/// Text-like data with a tunable share of random bytes: compresses to roughly `noise` of the
/// page with any LZ codec.
pub fn ordinary_page(rng: &mut Rng, noise: f64) -> Vec<u8> {
    let words: [&[u8]; 8] =
        [b"page ", b"zram ", b"slot ", b"handle ", b"class ", b"zspage ", b"stream ", b"idle "];
    let mut p = Vec::with_capacity(PS);
    while p.len() < PS {
        if (rng.next() % 1000) as f64 / 1000.0 < noise {
            p.push(rng.next() as u8);
        } else {
            p.extend_from_slice(words[(rng.next() % 8) as usize]);
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
            0 => same_page(if i % 20 == 0 { 0 } else { rng.next() }),
            5 => random_page(&mut rng),
            k => ordinary_page(&mut rng, k as f64 * 0.07),
        })
        .collect()
}

/// A clock tests move by hand.
#[derive(Debug, Default)]
pub struct ManualClock(pub AtomicU32);

impl ManualClock {
    pub fn advance(&self, secs: u32) {
        self.0.fetch_add(secs, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_secs(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// An initialised device of `pages` pages with `algo`.
pub fn device(algo: &str, pages: usize) -> Zram {
    let z = Zram::new(ZramConfig::default()).unwrap();
    z.store("comp_algorithm", algo).unwrap();
    z.store("disksize", &format!("{}", pages * PS)).unwrap();
    z
}

pub fn device_with_clock(algo: &str, pages: usize) -> (Zram, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock(AtomicU32::new(100)));
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
