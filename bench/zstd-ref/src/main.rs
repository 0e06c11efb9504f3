//! MB/s of zmem-comp's zstd (the kernel's bytes) against `ZSTD_compress2` with only the level
//! set (zmem's previous zstd), on real 4 KiB pages and 64 KiB pages of real memory: fastest of
//! 15 rounds each, the two alternating which runs first.

#[path = "../../../crates/comp/tests/common/mod.rs"]
mod common;

use zmem_comp::Params;
use zstd::zstd_safe::{CCtx, CParameter};

fn main() {
    for (name, page_size, pages) in
        [("4K", 4096, common::real_pages()), ("64K", 65536, common::real_pages_of(65536, 12))]
    {
        let total = (pages.len() * page_size) as f64;
        for level in [1, 3, 6, 9] {
            let mut exact =
                zmem_comp::create("zstd", &Params::with_level(level), page_size).unwrap();
            let mut plain = CCtx::create();
            plain.set_parameter(CParameter::CompressionLevel(level)).unwrap();
            let mut out = vec![0u8; zmem_comp::compress_bound(page_size)];
            let (mut a, mut b) = (f64::MAX, f64::MAX);
            let (mut na, mut nb) = (0, 0);
            for round in 0..15 {
                let mut run_exact = |out: &mut Vec<u8>| {
                    let t = std::time::Instant::now();
                    let n: usize = pages.iter().map(|p| exact.compress(p, out).unwrap()).sum();
                    (t.elapsed().as_secs_f64(), n)
                };
                let mut run_plain = |out: &mut Vec<u8>| {
                    let t = std::time::Instant::now();
                    let n: usize =
                        pages.iter().map(|p| plain.compress2(&mut out[..], p).unwrap()).sum();
                    (t.elapsed().as_secs_f64(), n)
                };
                let (x, y) = if round % 2 == 0 {
                    let x = run_exact(&mut out);
                    (x, run_plain(&mut out))
                } else {
                    let y = run_plain(&mut out);
                    (run_exact(&mut out), y)
                };
                (a, na) = (a.min(x.0), x.1);
                (b, nb) = (b.min(y.0), y.1);
            }
            println!(
                "{name} level {level}: exact {:6.1} MB/s ({na} B), plain compress2 {:6.1} MB/s ({nb} B), exact/plain {:.2}",
                total / a / 1e6,
                total / b / 1e6,
                b / a
            );
        }
    }
}
