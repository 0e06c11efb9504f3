//! Compressed objects of a page set, made once and reused where only the bytes are needed.
//!
//! The lab compresses every page with every algorithm for the compressor table
//! ([`crate::comp_bench`]); its policies and allocator rows then write the same pages to zram
//! devices with the same algorithms, and its recompression policies recompress them with the
//! secondaries. A stream's output depends on the page and the stream's parameters alone, so the
//! table's pass keeps what it made ([`Objects`]) and the devices take it through zram's
//! [`ObjectSource`] seam ([`Charged`]) instead of compressing each page again: the slots,
//! `mm_stat` and the pages read back are the same (zmem-zram's `tests/objects.rs`). The lab's
//! replays (zswap's candidates and their zram references) take them the same way through
//! zswap's store and zram's write (zmem-sim's `Simulator::with_objects`; zmem-zswap's
//! `tests/objects.rs`, zmem-sim's `tests/objects.rs`).
//!
//! **Costs stay measured.** A device that takes an object does not pay for the compression it
//! skipped, so [`Charged`] charges each object it hands out with what compressing that page
//! cost in the table's pass: the pass's thread CPU time, shared among its pages in proportion to
//! each page's own wall-clock time (timed around each page's compression), and that wall time.
//! A device asks only where it would compress (never for a same-filled page), so the charge is
//! that of exactly the compressions the device would have run. A row that reports a write or
//! recompression cost adds the charge to what it measured of the rest (the store, the reads,
//! the compaction).

use std::cell::Cell;

use zmem_comp::ObjectSource;
use zmem_comp::Params;
use zmem_sim::cputime::{Charge, ChargedObjects};

/// Every page's object from one algorithm at one set of parameters, in page order, with what
/// each cost to make.
#[derive(Debug, Clone)]
pub struct Objects {
    algo: String,
    params: Params,
    /// One allocation per pass of [`Objects::push_pass`], of exactly its objects: a growing
    /// single buffer would copy everything made so far at each growth.
    passes: Vec<Vec<u8>>,
    /// The first page of each pass.
    firsts: Vec<usize>,
    /// Where page `i`'s object ends in its pass's buffer (it starts where page `i - 1`'s ends,
    /// or at 0 for a pass's first page).
    ends: Vec<usize>,
    /// Thread CPU nanoseconds of compressing page `i`.
    cpu_ns: Vec<f32>,
    /// Wall-clock nanoseconds of compressing page `i`.
    wall_ns: Vec<f32>,
}

impl Objects {
    /// An empty set for `algo` at `params` (what its stream was built with).
    pub fn new(algo: &str, params: &Params) -> Self {
        Self {
            algo: algo.into(),
            params: params.clone(),
            passes: Vec::new(),
            firsts: Vec::new(),
            ends: Vec::new(),
            cpu_ns: Vec::new(),
            wall_ns: Vec::new(),
        }
    }

    /// The same objects under another algorithm's name: for tests that check a device stores
    /// what it is given.
    #[doc(hidden)]
    pub fn labelled(mut self, algo: &str) -> Self {
        self.algo = algo.into();
        self
    }

    pub fn algo(&self) -> &str {
        &self.algo
    }

    /// Pages held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Page `i`'s object.
    pub fn object(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let pass = self.firsts.partition_point(|&f| f <= i).checked_sub(1)?;
        let start = if i == self.firsts[pass] { 0 } else { self.ends[i - 1] };
        self.passes[pass].get(start..end)
    }

    /// Every page's object length, in page order.
    pub fn lengths(&self) -> Vec<u32> {
        (0..self.len()).map(|i| self.object(i).map_or(0, |o| o.len() as u32)).collect()
    }

    /// Appends one pass over consecutive pages: each page's object, its wall-clock nanoseconds,
    /// and the thread CPU seconds of the whole pass (`None` where the system gives none: each
    /// page is then charged its wall time as CPU time).
    pub(crate) fn push_pass<'a>(
        &mut self,
        objects: impl Iterator<Item = &'a [u8]> + Clone,
        wall_ns: &[u64],
        pass_cpu_secs: Option<f64>,
    ) {
        let mut bytes = Vec::with_capacity(objects.clone().map(<[u8]>::len).sum());
        let wall_sum: u64 = wall_ns.iter().sum();
        // The pass's CPU time shared by each page's share of its wall time: a page the thread
        // was preempted in is not charged the time it waited.
        let cpu_per_wall = match pass_cpu_secs {
            Some(cpu) if wall_sum > 0 => cpu * 1e9 / wall_sum as f64,
            _ => 1.0,
        };
        self.firsts.push(self.ends.len());
        for (o, &w) in objects.zip(wall_ns) {
            bytes.extend_from_slice(o);
            self.ends.push(bytes.len());
            self.wall_ns.push(w as f32);
            self.cpu_ns.push((w as f64 * cpu_per_wall) as f32);
        }
        self.passes.push(bytes);
    }
}

/// An [`ObjectSource`] over some [`Objects`] (a device's primary and secondaries) that adds up
/// the measured cost of every object it hands out. A device's page index is the page's index
/// in the set (the lab writes page `i` to slot `i`). It answers only for the algorithm and
/// parameters the objects were made with, so a device with other parameters (a dictionary, a
/// level) compresses for itself.
#[derive(Debug)]
pub struct Charged<'a> {
    sets: Vec<&'a Objects>,
    charge: Cell<Charge>,
}

impl<'a> Charged<'a> {
    pub fn new(sets: Vec<&'a Objects>) -> Self {
        Self { sets, charge: Cell::new(Charge::default()) }
    }

    /// What was charged since the last `take`.
    pub fn take(&self) -> Charge {
        self.charge.take()
    }
}

impl ObjectSource for Charged<'_> {
    fn object(&self, index: u64, algo: &str, params: &Params) -> Option<&[u8]> {
        let set = self.sets.iter().find(|s| s.algo == algo && s.params == *params)?;
        let i = usize::try_from(index).ok()?;
        let object = set.object(i)?;
        let mut c = self.charge.get();
        c.objects += 1;
        c.cpu_secs += f64::from(set.cpu_ns[i]) / 1e9;
        c.wall_secs += f64::from(set.wall_ns[i]) / 1e9;
        self.charge.set(c);
        Some(object)
    }
}

/// What a replay that takes objects ([`zmem_sim::replay::run_with`]) charges its stores: a
/// zswap store or a zram write is asked for its page by the swap offset, which is the page's
/// index in the set, as a device's slot is.
impl ChargedObjects for Charged<'_> {
    fn take(&self) -> Charge {
        Charged::take(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_by_page_algorithm_and_parameters_and_charged() {
        let mut o = Objects::new("lz4", &Params::default());
        let (a, b, c) = (vec![1u8; 10], vec![2u8; 3], vec![3u8; 7]);
        o.push_pass([&a[..], &b[..]].into_iter(), &[100, 300], Some(800e-9));
        o.push_pass([&c[..]].into_iter(), &[50], None);
        assert_eq!(o.len(), 3);
        assert_eq!(o.object(1), Some(&b[..]));
        assert_eq!(o.object(2), Some(&c[..]));
        assert_eq!(o.object(3), None);
        assert_eq!(o.lengths(), [10, 3, 7]);
        let src = Charged::new(vec![&o]);
        assert_eq!(src.object(0, "lz4", &Params::default()), Some(&a[..]));
        assert_eq!(src.object(1, "lz4", &Params::default()), Some(&b[..]));
        // Another algorithm, other parameters, or a page beyond the set: none, and no charge.
        assert_eq!(src.object(0, "zstd", &Params::default()), None);
        assert_eq!(src.object(0, "lz4", &Params::with_level(3)), None);
        assert_eq!(src.object(9, "lz4", &Params::default()), None);
        let ch = src.take();
        assert_eq!(ch.objects, 2);
        // 800 ns of CPU over 400 ns of wall: each page charged twice its wall time.
        assert!((ch.cpu_secs - 800e-9).abs() < 1e-12, "{ch:?}");
        assert!((ch.wall_secs - 400e-9).abs() < 1e-12, "{ch:?}");
        assert_eq!(src.take(), Charge::default());
        // Without a CPU time, the wall time stands in.
        src.object(2, "lz4", &Params::default());
        assert!((src.take().cpu_secs - 50e-9).abs() < 1e-12);
    }
}
