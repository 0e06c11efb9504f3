//! Which slots the advisor reads: a **panel**, the first `P` slots of a seeded pseudo-random
//! permutation of the device's slots, read over and over (each at most once per refresh
//! period) rather than new random slots each time.
//!
//! Why a panel: reading a slot clears its `ZRAM_IDLE` flag (drivers/block/zram/zram_drv.c
//! `zram_bio_read()` -> `zram_accessed()`), so every distinct slot read is one slot a later
//! `writeback idle` or `recompress type=idle` pass skips. A panel bounds the distinct slots
//! ever read to `P` however long the exporter runs; fresh random slots would, in a day, touch
//! a day's worth. And the panel is still a simple random sample at every moment: its slots were
//! chosen independently of what the device stores, so the stored pages among them are a uniform
//! sample of the stored pages, whatever the kernel put where.
//!
//! The permutation is a 4-round Feistel network on the smallest power of four at least the
//! slot count, walked until it lands inside (cycle walking): O(1) memory for any device, and
//! growing the panel (a device that filled up) adds slots without moving the ones it has.

/// A pseudo-random permutation of `0..n`.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

fn mix(mut x: u64) -> u64 {
    // SplitMix64's finaliser: every input bit moves about half the output bits.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let keys = [1u64, 2, 3, 4].map(|i| mix(seed.wrapping_add(i.wrapping_mul(0x9e37_79b9))));
        Self { n, half_bits, keys }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn round_trip(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The `i`-th element (`i < n`).
    pub fn at(&self, i: u64) -> u64 {
        let mut x = i;
        // Each step is a bijection of the 4^k domain, so the walk returns inside `0..n` (at the
        // latest after the cycle through `i` comes back to the range).
        loop {
            x = self.round_trip(x);
            if x < self.n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_of_every_size() {
        for n in [1u64, 2, 3, 5, 16, 17, 1000, 4097] {
            let p = Permutation::new(n, 7);
            let mut seen: Vec<u64> = (0..n).map(|i| p.at(i)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n {n}");
        }
        let (a, b) = (Permutation::new(1000, 1), Permutation::new(1000, 2));
        assert_ne!(
            (0..20).map(|i| a.at(i)).collect::<Vec<_>>(),
            (0..20).map(|i| b.at(i)).collect::<Vec<_>>()
        );
    }

    /// The panel's first slots spread over the device: of the first 1000 of 100,000, each
    /// tenth of the device holds about a tenth (binomial(1000, 0.1): sd 9.5; 50..=150 is more
    /// than five deviations, and the seed is fixed).
    #[test]
    fn the_first_slots_spread_over_the_device() {
        let p = Permutation::new(100_000, 1);
        let mut tenths = [0u32; 10];
        for i in 0..1000 {
            tenths[(p.at(i) / 10_000) as usize] += 1;
        }
        assert!(tenths.iter().all(|&t| (50..=150).contains(&t)), "{tenths:?}");
    }
}
