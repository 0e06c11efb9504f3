//! memcodecs-speed: ratio, compress/decompress speed and memory-freeing speed of the memory codecs
//! (lz4m, wkdm, 842) against liblz4 on a file of 4 KiB pages, measured interleaved in one run.
//!
//! Usage: `memcodecs-speed [FILE] [ROUNDS] [CODECS]` (default /work/pages/real-sample.bin, 7 rounds,
//! `lz4m,wkdm,842`; liblz4 always runs first as the reference).
//! The pages are timed in batches of 128: each batch is compressed and decompressed ROUNDS times
//! by every codec in turn, the best time per codec and batch is kept and the bests are summed
//! (the machine is shared and noisy; short batches let quiet moments count). Every round trip is
//! checked. Two views: all pages, and only the pages zram would hand to a
//! compressor (same-filled pages, which zram stores as a single value, left out).
//!
//! freeing MB/s = compress MB/s x (1 - compressed/input): how fast reclaim turns CPU time into
//! free memory (seed 004, docs/REFERENCES.md [seed-004]).

use std::time::Instant;
use zmem_comp::{Compressor, Params, compress_bound, create};

const PAGE: usize = 4096;

trait Codec {
    fn name(&self) -> &str;
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize;
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> usize;
}

/// liblz4's `LZ4_compress_fast` at acceleration 1, as zram's lz4 backend calls it.
struct LibLz4;

impl Codec for LibLz4 {
    fn name(&self) -> &str {
        "liblz4"
    }
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        // SAFETY: both pointers come from live slices and the lengths passed are theirs; liblz4
        // reads at most `src.len()` and writes at most `dst.len()` bytes.
        let n = unsafe {
            lz4_sys::LZ4_compress_fast(
                src.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                src.len() as i32,
                dst.len() as i32,
                1,
            )
        };
        assert!(n > 0, "liblz4 compress failed");
        n as usize
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        // SAFETY: as above; LZ4_decompress_safe never writes past `dst.len()`.
        let n = unsafe {
            lz4_sys::LZ4_decompress_safe(
                src.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                src.len() as i32,
                dst.len() as i32,
            )
        };
        assert!(n >= 0, "liblz4 decompress failed");
        n as usize
    }
}

struct Ours(Box<dyn Compressor>, Option<usize>);

impl Codec for Ours {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        let cap = self.1.unwrap_or(dst.len());
        self.0.compress(src, &mut dst[..cap]).expect("compress")
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        self.0.decompress(src, dst).expect("decompress")
    }
}

#[derive(Clone, Copy)]
struct Best {
    comp_s: f64,
    decomp_s: f64,
    bytes: usize,
}

fn same_filled(p: &[u8]) -> bool {
    let w = &p[..8];
    p.chunks_exact(8).all(|c| c == w)
}

/// Pages per timed batch: small enough that a burst of load from other processes spoils only a
/// few batches, whose best-of-rounds time then comes from a quiet moment.
const BATCH: usize = 128;

fn run(codecs: &mut [Box<dyn Codec>], pages: &[&[u8]], rounds: usize) -> Vec<Best> {
    let mut best = vec![Best { comp_s: 0.0, decomp_s: 0.0, bytes: 0 }; codecs.len()];
    let bound = compress_bound(PAGE);
    let mut comp = vec![0u8; codecs.len() * BATCH * bound];
    let mut lens = vec![0usize; codecs.len() * BATCH];
    let mut out = vec![0u8; PAGE];
    for batch in pages.chunks(BATCH) {
        let mut cmin = vec![f64::INFINITY; codecs.len()];
        let mut dmin = vec![f64::INFINITY; codecs.len()];
        for round in 0..rounds {
            // Codecs interleaved inside each round, rounds interleaved inside each batch.
            for (k, c) in codecs.iter_mut().enumerate() {
                let comp = &mut comp[k * BATCH * bound..(k + 1) * BATCH * bound];
                let lens = &mut lens[k * BATCH..(k + 1) * BATCH];
                let t = Instant::now();
                for ((p, dst), len) in batch.iter().zip(comp.chunks_exact_mut(bound)).zip(&mut *lens) {
                    *len = c.compress(p, dst);
                }
                cmin[k] = cmin[k].min(t.elapsed().as_secs_f64());
                let t = Instant::now();
                for (src, len) in comp.chunks_exact(bound).zip(&*lens) {
                    std::hint::black_box(c.decompress(&src[..*len], &mut out));
                }
                dmin[k] = dmin[k].min(t.elapsed().as_secs_f64());
                if round == 0 {
                    best[k].bytes += lens[..batch.len()].iter().sum::<usize>();
                    for ((p, src), len) in batch.iter().zip(comp.chunks_exact(bound)).zip(&*lens) {
                        assert_eq!(c.decompress(&src[..*len], &mut out), PAGE);
                        assert!(out == *p, "{}: round trip differs", c.name());
                    }
                }
            }
        }
        for k in 0..codecs.len() {
            best[k].comp_s += cmin[k];
            best[k].decomp_s += dmin[k];
        }
    }
    best
}

fn report(title: &str, codecs: &[Box<dyn Codec>], pages: usize, best: &[Best]) {
    let input = (pages * PAGE) as f64;
    let mb = 1e6;
    println!("\n{title}: {pages} pages, {:.1} MB", input / mb);
    println!(
        "| codec | ratio | compress MB/s | decompress MB/s | freeing MB/s | ratio vs lz4 | compress vs lz4 | decompress vs lz4 | freeing vs lz4 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let row = |b: &Best| {
        let ratio = input / b.bytes as f64;
        let c = input / b.comp_s / mb;
        let d = input / b.decomp_s / mb;
        let f = c * (1.0 - b.bytes as f64 / input);
        (ratio, c, d, f)
    };
    let lz4 = row(&best[0]);
    for (codec, b) in codecs.iter().zip(best) {
        let (r, c, d, f) = row(b);
        println!(
            "| {} | {r:.3} | {c:.0} | {d:.0} | {f:.0} | {:.3} | {:.2}x | {:.2}x | {:.2}x |",
            codec.name(),
            r / lz4.0,
            c / lz4.1,
            d / lz4.2,
            f / lz4.3
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args.next().unwrap_or_else(|| "/work/pages/real-sample.bin".into());
    let rounds: usize = args.next().map_or(7, |s| s.parse().expect("ROUNDS is a number"));
    let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let all: Vec<&[u8]> = data.chunks_exact(PAGE).collect();
    let compressible: Vec<&[u8]> = all.iter().copied().filter(|p| !same_filled(p)).collect();
    let mut codecs: Vec<Box<dyn Codec>> = vec![Box::new(LibLz4)];
    let names = args.next().unwrap_or_else(|| "lz4m,wkdm,842".into());
    for name in names.split(',') {
        // NAME:CAP compresses into a destination of CAP bytes (a codec's checked path).
        let (name, cap) = match name.split_once(':') {
            Some((n, c)) => (n, Some(c.parse().expect("CAP is a number"))),
            None => (name, None),
        };
        codecs.push(Box::new(Ours(create(name, &Params::default(), PAGE).expect(name), cap)));
    }
    println!("file {file}, best of {rounds} rounds per batch of {BATCH} pages, codecs interleaved");
    let best = run(&mut codecs, &all, rounds);
    report("all pages", &codecs, all.len(), &best);
    let best = run(&mut codecs, &compressible, rounds);
    report("pages that are not same-filled", &codecs, compressible.len(), &best);
}
