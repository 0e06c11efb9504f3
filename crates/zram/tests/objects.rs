//! Writes and recompressions that take their objects from an `ObjectSource` against the same
//! operations compressing on the device's streams: the slots, `mm_stat`, the failed writes and
//! the pages read back must be the same, for every kernel algorithm, with overwrites,
//! same-filled and huge pages, a memory limit, and recompression of idle or huge slots.

mod common;

use std::cell::Cell;
use std::collections::HashMap;

use common::{ManualClock, PS, Rng, mm, ordinary_page, random_page, same_page};
use proptest::prelude::*;
use zmem_comp::Params;
use zmem_zram::{ObjectSource, Zram, ZramConfig};

const PRIMARIES: [&str; 7] = ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"];
const SECONDARIES: [&str; 3] = ["zstd", "deflate", "lz4hc"];
const SLOTS: u64 = 24;

/// What a stream of `algo` at default parameters makes of `page`, made on a stream of its own.
fn compress(algo: &str, page: &[u8]) -> Vec<u8> {
    let mut c = zmem_comp::create_as_backend(algo, &Params::default(), PS).unwrap();
    let mut out = vec![0u8; 2 * PS];
    let n = c.compress(page, &mut out).unwrap();
    out.truncate(n);
    out
}

/// Objects made ahead for each slot's current page, for default parameters only; counts what
/// it was asked for and what it handed out.
#[derive(Default)]
struct Made {
    objects: HashMap<(u64, String), Vec<u8>>,
    asked: Cell<u64>,
    given: Cell<u64>,
    asked_for: std::cell::RefCell<Vec<(u64, String)>>,
}

impl Made {
    fn put(&mut self, index: u64, page: &[u8], algos: &[&str]) {
        for a in algos {
            self.objects.insert((index, a.to_string()), compress(a, page));
        }
    }
}

impl Made {
    fn clone_slot(&self, index: u64, algos: &[&str]) -> Vec<(String, Option<Vec<u8>>)> {
        algos
            .iter()
            .map(|a| (a.to_string(), self.objects.get(&(index, a.to_string())).cloned()))
            .collect()
    }

    fn restore(&mut self, index: u64, old: Vec<(String, Option<Vec<u8>>)>) {
        for (a, o) in old {
            match o {
                Some(o) => self.objects.insert((index, a), o),
                None => self.objects.remove(&(index, a)),
            };
        }
    }
}

impl ObjectSource for Made {
    fn object(&self, index: u64, algo: &str, params: &Params) -> Option<&[u8]> {
        self.asked.set(self.asked.get() + 1);
        self.asked_for.borrow_mut().push((index, algo.to_string()));
        if *params != Params::default() {
            return None;
        }
        let o = self.objects.get(&(index, algo.to_string()))?;
        self.given.set(self.given.get() + 1);
        Some(o)
    }
}

fn device(primary: &str, secondary: Option<&str>, limit: Option<u64>) -> Zram {
    // One clock standing still for both devices, so `block_state`'s access times agree too.
    let z = Zram::with_clock(ZramConfig::default(), std::sync::Arc::new(ManualClock::at_secs(7)))
        .unwrap();
    z.store("comp_algorithm", primary).unwrap();
    if let Some(s) = secondary {
        z.store("recomp_algorithm", &format!("algo={s} priority=1")).unwrap();
    }
    z.store("disksize", &(SLOTS * PS as u64).to_string()).unwrap();
    if let Some(l) = limit {
        z.store("mem_limit", &l.to_string()).unwrap();
    }
    z
}

fn page(kind: u8, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    match kind % 5 {
        0 => same_page(if seed.is_multiple_of(2) { 0 } else { rng.next_u64() }),
        1 => random_page(&mut rng),
        k => ordinary_page(&mut rng, f64::from(k) * 0.12 + (seed % 7) as f64 * 0.05),
    }
}

fn read_all(z: &Zram) -> Vec<Vec<u8>> {
    (0..SLOTS)
        .map(|i| {
            let mut out = vec![0xa5; PS];
            z.read_page(i, &mut out).unwrap();
            out
        })
        .collect()
}

/// Everything the two devices must agree on.
fn assert_same(a: &Zram, b: &Zram) {
    assert_eq!(mm(a), mm(b));
    assert_eq!(a.io_stat(), b.io_stat());
    assert_eq!(a.block_state().unwrap(), b.block_state().unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn objects_from_a_source_store_what_the_streams_store(
        primary in prop::sample::select(PRIMARIES.to_vec()),
        secondary in prop::sample::select(SECONDARIES.to_vec()),
        writes in prop::collection::vec((0..SLOTS, any::<u8>(), any::<u64>()), 1..60),
        limit_pages in prop::option::of(2u64..12),
        recompress in prop::sample::select(vec!["type=idle", "type=huge", "type=huge_idle", "threshold=600", ""]),
    ) {
        let secondary = (secondary != primary).then_some(secondary);
        let limit = limit_pages.map(|p| p * PS as u64);
        let streams = device(primary, secondary, limit);
        let objects = device(primary, secondary, limit);
        let mut made = Made::default();
        let algos: Vec<&str> = std::iter::once(primary).chain(secondary).collect();
        let mut compressing_writes = 0;
        for &(index, kind, seed) in &writes {
            let p = page(kind, seed);
            let old = made.clone_slot(index, &algos);
            made.put(index, &p, &algos);
            let before = made.asked.get();
            let r1 = streams.write_page(index, &p);
            let r2 = objects.write_page_with(index, &p, &made);
            prop_assert_eq!(r1.as_ref().map_err(|e| e.errno), r2.as_ref().map_err(|e| e.errno));
            // A refused write leaves the slot's old page, and the source must describe the
            // page a slot holds.
            if r2.is_err() {
                made.restore(index, old);
            }
            // Asked exactly where the device compresses: never for a same-filled page.
            let asked = made.asked.get() - before;
            prop_assert_eq!(asked, u64::from(zmem_zram::same_filled(&p).is_none()));
            compressing_writes += asked;
        }
        prop_assert_eq!(made.given.get(), compressing_writes);
        assert_same(&streams, &objects);
        prop_assert_eq!(read_all(&streams), read_all(&objects));

        if let Some(s) = secondary {
            if recompress.contains("idle") {
                streams.store("idle", "all").unwrap();
                objects.store("idle", "all").unwrap();
            }
            let args = format!("{recompress} algo={s}");
            let given = made.given.get();
            let r1 = streams.store("recompress", &args).map_err(|e| e.errno);
            let r2 = objects.recompress_with(&args, &made).map_err(|e| e.errno);
            prop_assert_eq!(r1, r2);
            // Only the secondary's objects are asked for while recompressing.
            prop_assert!(made.asked_for.borrow()[compressing_writes as usize..]
                .iter()
                .all(|(_, a)| a == s));
            prop_assert!(made.given.get() >= given);
            assert_same(&streams, &objects);
            streams.store("compact", "1").unwrap();
            objects.store("compact", "1").unwrap();
            assert_same(&streams, &objects);
            prop_assert_eq!(read_all(&streams), read_all(&objects));
        }
    }
}

/// A source that has no object (or one for other parameters) leaves the device to compress:
/// the write is the stream's.
#[test]
fn without_an_object_the_device_compresses() {
    let p = ordinary_page(&mut Rng::new(3), 0.2);
    let streams = device("zstd", None, None);
    let objects = device("zstd", None, None);
    objects.store("reset", "1").unwrap();
    objects.store("comp_algorithm", "zstd").unwrap();
    // Parameters the source was not made for: it must be asked with them, and refuse.
    objects.store("algorithm_params", "algo=zstd level=1").unwrap();
    objects.store("disksize", &(SLOTS * PS as u64).to_string()).unwrap();
    let mut made = Made::default();
    made.put(0, &p, &["zstd"]);
    objects.write_page_with(0, &p, &made).unwrap();
    assert_eq!((made.asked.get(), made.given.get()), (1, 0));
    let mut back = vec![0; PS];
    objects.read_page(0, &mut back).unwrap();
    assert_eq!(back, p);
    // The level-1 object is zstd's own at level 1, not the default-level one the source held.
    let level1 = {
        let mut c = zmem_comp::create_as_backend("zstd", &Params::with_level(1), PS).unwrap();
        let mut out = vec![0u8; 2 * PS];
        c.compress(&p, &mut out).unwrap()
    };
    assert_eq!(mm(&objects).compr_data_size, level1 as u64);
    streams.write_page(0, &p).unwrap();
    assert_eq!(mm(&streams).compr_data_size, compress("zstd", &p).len() as u64);
}

/// The source's object is what is stored: a different (valid) object for the same page changes
/// the compressed size, so the proptest's equality is no accident of the source being ignored.
#[test]
fn the_object_given_is_the_one_stored() {
    let p = ordinary_page(&mut Rng::new(5), 0.1);
    let z = device("lz4", None, None);
    let other = compress("lz4hc", &p); // lz4hc writes the lz4 block format too
    assert_ne!(other.len(), compress("lz4", &p).len());
    let mut made = Made::default();
    made.objects.insert((0, "lz4".into()), other.clone());
    z.write_page_with(0, &p, &made).unwrap();
    assert_eq!(mm(&z).compr_data_size, other.len() as u64);
    let mut back = vec![0; PS];
    z.read_page(0, &mut back).unwrap();
    assert_eq!(back, p);
}
