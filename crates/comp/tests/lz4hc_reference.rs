//! Byte equality of our `lz4hc` with the kernel's LZ4 HC (lib/lz4/lz4hc_compress.c, LZ4 v1.7.3).
//!
//! The fixture holds, for every input of `common::lz4hc_inputs()` (synthetic buffers, the fuzz
//! seeds' pages, real 4 KiB pages, 16 KiB and 64 KiB pages of real memory) and the dictionaries
//! of `common::lz4hc_dicts()`, the length and FNV-1a digest of liblz4 1.7.5's output
//! (bench/lz4hc-ref, lz4-sys `1.0.1+1.7.5`): its hash-chain compressor is the kernel's v1.7.3
//! one, at levels 1..=9 and, as its level 10, with the 1 << 15 attempts of the kernel's level 16
//! (docs/REFERENCES.md [lz4hc-kernel]). Levels 10..=15 run the same search with attempt counts
//! in between, which no liblz4 release offers; they are checked by round trip only.

mod common;

use std::sync::Arc;
use zmem_comp::{CompError, Params, compress_bound, create};

struct Fixture {
    inputs: Vec<(u32, u64)>,
    dicts: Vec<u64>,
    /// (input, dictionary or 255, kernel level, output length, output digest)
    records: Vec<(usize, u8, u8, usize, u64)>,
}

fn load() -> Fixture {
    let packed = include_bytes!("fixtures/lz4hc-ref.bin.zst");
    let raw = zstd::stream::decode_all(&packed[..]).expect("fixture decompresses");
    let mut at = 0usize;
    let mut take = |n: usize| {
        let s = raw[at..at + n].to_vec();
        at += n;
        s
    };
    assert_eq!(take(8), b"ZMHCFX01");
    let u32_ = |b: Vec<u8>| u32::from_le_bytes(b.try_into().unwrap());
    let u64_ = |b: Vec<u8>| u64::from_le_bytes(b.try_into().unwrap());
    let n = u32_(take(4));
    let inputs = (0..n).map(|_| (u32_(take(4)), u64_(take(8)))).collect();
    let n = u32_(take(4));
    let dicts = (0..n).map(|_| u64_(take(8))).collect();
    let n = u32_(take(4));
    let records = (0..n)
        .map(|_| {
            let i = u32_(take(4)) as usize;
            let d = take(1)[0];
            let l = take(1)[0];
            (i, d, l, u32_(take(4)) as usize, u64_(take(8)))
        })
        .collect();
    Fixture { inputs, dicts, records }
}

#[test]
fn fixture_inputs_are_the_ones_regenerated_here() {
    let f = load();
    let inputs = common::lz4hc_inputs();
    assert_eq!(inputs.len(), f.inputs.len());
    for ((label, input), (len, digest)) in inputs.iter().zip(&f.inputs) {
        assert_eq!((input.len() as u32, common::fnv1a64(input)), (*len, *digest), "{label}");
    }
    let dicts = common::lz4hc_dicts();
    assert_eq!(dicts.iter().map(|d| common::fnv1a64(d)).collect::<Vec<_>>(), f.dicts);
    // What the fixture claims to cover.
    assert!(f.records.len() > 2000);
    for level in [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 16] {
        assert!(f.records.iter().any(|r| r.2 == level && r.1 == 255), "level {level}");
    }
    for d in 0..dicts.len() as u8 {
        assert!(f.records.iter().any(|r| r.1 == d), "dictionary {d}");
    }
    for prefix in ["real-", "real16k-", "real64k-", "seed-", "long-131072"] {
        assert!(f.records.iter().any(|r| inputs[r.0].0.starts_with(prefix)), "{prefix}");
    }
}

#[test]
fn compress_equals_the_kernels_lz4hc_on_every_fixture_record() {
    let f = load();
    let inputs = common::lz4hc_inputs();
    let dicts: Vec<Arc<[u8]>> = common::lz4hc_dicts().into_iter().map(Arc::from).collect();
    let mut bad = Vec::new();
    for &(i, d, level, len, digest) in &f.records {
        let (label, input) = &inputs[i];
        let params = Params {
            level: Some(level as i32),
            dict: (d != 255).then(|| Arc::clone(&dicts[d as usize])),
            ..Params::default()
        };
        let mut s = create("lz4hc", &params, 4096).unwrap();
        let mut out = vec![0u8; compress_bound(input.len())];
        let n = s.compress(input, &mut out).unwrap();
        if (n, common::fnv1a64(&out[..n])) != (len, digest) {
            bad.push(format!("{label} dict {d} level {level}: {n} vs {len} bytes"));
        }
        let mut back = vec![0u8; input.len()];
        assert_eq!(s.decompress(&out[..n], &mut back).unwrap(), input.len(), "{label}");
        assert!(&back == input, "{label} level {level} dict {d}: round trip");
    }
    assert!(
        bad.is_empty(),
        "{} of {} differ: {:?}",
        bad.len(),
        f.records.len(),
        &bad[..bad.len().min(10)]
    );
}

#[test]
fn levels_without_a_reference_round_trip() {
    let inputs = common::lz4hc_inputs();
    for level in 10..=15 {
        let mut s = create("lz4hc", &Params::with_level(level), 4096).unwrap();
        for (label, input) in inputs.iter().step_by(7) {
            let mut out = vec![0u8; compress_bound(input.len())];
            let n = s.compress(input, &mut out).unwrap();
            let mut back = vec![0u8; input.len()];
            assert_eq!(s.decompress(&out[..n], &mut back).unwrap(), input.len(), "{label}");
            assert!(&back == input, "{label} level {level}");
        }
    }
}

/// backend_lz4hc.c: `LZ4_loadDictHC` keeps the last 64 KiB and returns that size, and the
/// backend fails the page (-EINVAL) when it is not the whole dictionary.
#[test]
fn a_dictionary_over_64_kib_fails_every_page_as_in_the_kernel() {
    let dict: Arc<[u8]> = vec![7u8; 64 * 1024 + 1].into();
    let params = Params { level: Some(9), dict: Some(dict), ..Params::default() };
    let mut s = create("lz4hc", &params, 4096).unwrap();
    let mut out = vec![0u8; 9000];
    assert!(matches!(s.compress(&[1u8; 4096], &mut out), Err(CompError::Backend { .. })));
}

/// A destination one byte short of the output is refused cleanly, and an exact one gives the
/// same bytes as a roomy one.
#[test]
fn tight_destinations() {
    let mut s = create("lz4hc", &Params::default(), 4096).unwrap();
    for page in common::real_pages().iter().take(20) {
        let mut roomy = vec![0u8; compress_bound(page.len())];
        let n = s.compress(page, &mut roomy).unwrap();
        let mut exact = vec![0u8; n];
        assert_eq!(s.compress(page, &mut exact).unwrap(), n);
        assert_eq!(exact, roomy[..n]);
        let mut short = vec![0u8; n - 1];
        assert!(matches!(s.compress(page, &mut short), Err(CompError::OutputTooSmall { .. })));
    }
}

/// The fast path (liblz4 1.10) writes valid LZ4 but not the kernel's bytes: it is what the
/// registry must not build.
#[cfg(feature = "liblz4")]
#[test]
fn the_fast_path_is_not_the_kernels_bytes() {
    use zmem_comp::{Compressor, Lz4HcFast};
    let pages = common::real_pages();
    let mut fast = Lz4HcFast::new(&Params::default()).unwrap();
    let mut exact = create("lz4hc", &Params::default(), 4096).unwrap();
    let mut differ = 0;
    for page in pages.iter().take(50) {
        let (mut a, mut b) = (vec![0u8; 8256], vec![0u8; 8256]);
        let na = fast.compress(page, &mut a).unwrap();
        let nb = exact.compress(page, &mut b).unwrap();
        differ += usize::from(a[..na] != b[..nb]);
        let mut back = vec![0u8; 4096];
        assert_eq!(exact.decompress(&a[..na], &mut back).unwrap(), 4096);
        assert!(&back == page);
    }
    assert!(differ > 0, "liblz4 1.10 at level 9 should differ from v1.7.3 somewhere");
}
