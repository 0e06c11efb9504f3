//! Byte equality of our `lz4` with the kernel's LZ4, through a fixture of liblz4 1.8.0 outputs
//! (the kernel's v1.7.3 match finder and end bound; see tests/fixtures/README.md), and our decoder
//! on every reference output.

use std::sync::Arc;
use zmem_comp::lz4::{Tables, compress, compress_bound, decompress_block};
use zmem_comp::{Compressor, Lz4, Params};

struct Record {
    dict: Option<usize>,
    accel: u32,
    input: Vec<u8>,
    output: Vec<u8>,
}

struct Reader<'a>(&'a [u8]);
impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn blob(&mut self) -> Vec<u8> {
        let n = self.u32() as usize;
        self.take(n).to_vec()
    }
}

fn load() -> (Vec<Arc<[u8]>>, Vec<Record>) {
    let packed = include_bytes!("fixtures/lz4-ref.bin.zst");
    let raw = zstd::stream::decode_all(&packed[..]).expect("fixture decompresses");
    let mut r = Reader(&raw);
    assert_eq!(r.take(8), b"ZMLZ4FX1");
    let dicts: Vec<Arc<[u8]>> = (0..r.u32()).map(|_| Arc::from(r.blob())).collect();
    let records = (0..r.u32())
        .map(|_| {
            let d = r.take(1)[0];
            let accel = r.u32();
            let input = r.blob();
            let output = r.blob();
            Record { dict: (d != 255).then_some(d as usize), accel, input, output }
        })
        .collect();
    assert!(r.0.is_empty(), "trailing bytes in fixture");
    (dicts, records)
}

#[test]
fn fixture_covers_what_it_claims() {
    let (dicts, records) = load();
    assert_eq!(dicts.len(), 3);
    assert!(records.len() > 300);
    // Both table layouts, several accelerations, every dictionary.
    assert!(records.iter().any(|r| r.input.len() < 65547 && r.dict.is_none()));
    assert!(records.iter().any(|r| r.input.len() >= 65547 && r.dict.is_none()));
    assert!(records.iter().any(|r| r.accel > 1 && r.dict.is_none()));
    for d in 0..dicts.len() {
        assert!(records.iter().any(|r| r.dict == Some(d)));
    }
}

#[test]
fn compress_equals_kernel_lz4_on_every_fixture_page() {
    let (dicts, records) = load();
    let mut tables = Tables::new_boxed();
    let mut streams: Vec<Box<dyn Compressor>> = Vec::new();
    let mut bad = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let mut out = vec![0u8; compress_bound(rec.input.len())];
        let n = match rec.dict {
            None => compress(&mut tables, &rec.input, &mut out, rec.accel).unwrap(),
            Some(d) => {
                let params = Params {
                    level: Some(rec.accel as i32),
                    dict: Some(Arc::clone(&dicts[d])),
                    ..Params::default()
                };
                streams.clear();
                streams.push(Box::new(Lz4::new(&params).unwrap()));
                streams[0].compress(&rec.input, &mut out).unwrap()
            }
        };
        if out[..n] != rec.output[..] {
            bad.push((i, rec.input.len(), rec.accel, rec.dict, n, rec.output.len()));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} differ (index, len, accel, dict, ours, ref): {:?}",
        bad.len(),
        records.len(),
        &bad[..bad.len().min(20)]
    );
}

#[test]
fn registry_stream_matches_the_fixture_at_default_level() {
    let (_, records) = load();
    let mut s = zmem_comp::create("lz4", &Params::default(), 4096).unwrap();
    let mut checked = 0;
    for rec in records.iter().filter(|r| r.dict.is_none() && r.accel == 1) {
        let mut out = vec![0u8; zmem_comp::compress_bound(rec.input.len())];
        let n = s.compress(&rec.input, &mut out).unwrap();
        assert!(out[..n] == rec.output[..], "input of {} bytes differs", rec.input.len());
        checked += 1;
    }
    assert!(checked > 250);
}

#[test]
fn decoder_restores_every_fixture_output() {
    let (dicts, records) = load();
    for (i, rec) in records.iter().enumerate() {
        let prefix: &[u8] = rec.dict.map_or(&[], |d| &dicts[d]);
        let mut out = vec![0u8; rec.input.len()];
        let n = decompress_block(&rec.output, &mut out, prefix)
            .unwrap_or_else(|e| panic!("record {i}: {e}"));
        assert_eq!(n, rec.input.len(), "record {i}");
        assert!(out == rec.input, "record {i} decodes to different bytes");
        // One byte less of room must fail, not truncate silently.
        if !rec.input.is_empty() {
            let mut short = vec![0u8; rec.input.len() - 1];
            assert!(decompress_block(&rec.output, &mut short, prefix).is_err(), "record {i}");
        }
    }
}
