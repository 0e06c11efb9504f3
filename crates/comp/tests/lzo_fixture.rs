//! Byte equality with liblzo2 without needing it: `fixtures/lzo1x_1_15.bin.zst` holds varied
//! inputs with the output of liblzo2 2.10's `lzo1x_1_15_compress` (the kernel's `lzo` bytes on
//! x86-64, docs/REFERENCES.md [lzo-liblzo2]), made by `bench/lzo-ref` (see fixtures/README.md).
//!
//! What it proves: our `lzo` output equals liblzo2's for every input (synthetic pages, 200 real
//! memory pages, odd lengths up to 100,000 bytes, i.e. several chunks), and our decoder reads
//! liblzo2's streams back, under both names. lzo-rle is not covered here (no user-space library
//! writes it); its vectors are unit tests and its sizes are checked against the live kernel.

use zmem_comp::{Params, create};

struct Record {
    label: String,
    input: Vec<u8>,
    output: Vec<u8>,
}

fn load() -> Vec<Record> {
    let packed = include_bytes!("fixtures/lzo1x_1_15.bin.zst");
    let size = zstd_safe::get_frame_content_size(packed).unwrap().unwrap() as usize;
    let mut raw = vec![0u8; size];
    let n = zstd_safe::decompress(&mut raw[..], packed).unwrap();
    assert_eq!(n, size);
    assert_eq!(&raw[..8], b"ZMLZOFX1");
    let mut at = 8;
    let mut take = |n: usize| {
        let s = &raw[at..at + n];
        at += n;
        s.to_vec()
    };
    let count = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
    let mut records = Vec::with_capacity(count);
    for _ in 0..count {
        let l = u16::from_le_bytes(take(2).try_into().unwrap()) as usize;
        let label = String::from_utf8(take(l)).unwrap();
        let l = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
        let input = take(l);
        let l = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
        let output = take(l);
        records.push(Record { label, input, output });
    }
    records
}

#[test]
fn fixture_is_varied() {
    let records = load();
    assert!(records.len() >= 300, "{}", records.len());
    let real = records.iter().filter(|r| r.label.starts_with("real-")).count();
    assert!(real >= 200, "{real} real pages");
    assert!(records.iter().any(|r| r.input.len() > 0xc000 * 2), "no multi-chunk input");
}

#[test]
fn lzo_output_equals_liblzo2_lzo1x_1_15() {
    let mut lzo = create("lzo", &Params::default(), 4096).unwrap();
    let mut mismatches = Vec::new();
    for r in load() {
        let mut dst = vec![0u8; zmem_comp::compress_bound(r.input.len())];
        let n = lzo.compress(&r.input, &mut dst).unwrap();
        if dst[..n] != r.output[..] {
            mismatches.push(format!("{} ({} vs {} bytes)", r.label, n, r.output.len()));
        }
    }
    assert!(mismatches.is_empty(), "differs from liblzo2 on: {mismatches:?}");
}

#[test]
fn liblzo2_output_decodes_under_both_names() {
    for name in ["lzo", "lzo-rle"] {
        let mut s = create(name, &Params::default(), 4096).unwrap();
        for r in load() {
            let mut out = vec![0u8; r.input.len()];
            let n =
                s.decompress(&r.output, &mut out).unwrap_or_else(|e| panic!("{}: {e}", r.label));
            assert_eq!(n, r.input.len(), "{}", r.label);
            assert!(out == r.input, "{name}: {} decodes differently", r.label);
        }
    }
}
