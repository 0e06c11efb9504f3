//! Per-page cost of zram I/O against the bare codec, best of several passes each, measured in
//! one run. Pages are written to a fresh device (as `zmem zram-speed` does) and read back in
//! order; the codec alone compresses the same pages and decodes them from one flat buffer.

use std::time::Instant;
use zmem_zram::{Zram, ZramConfig};

const PS: usize = 4096;
const PASSES: usize = 5;

/// Best-of-`PASSES` nanoseconds per item of `f`, which handles `n` items.
fn best_ns(n: usize, mut f: impl FnMut()) -> f64 {
    (0..PASSES)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::MAX, f64::min)
}

fn device(algo: &str, pages: usize) -> Zram {
    let z = Zram::new(ZramConfig::default()).expect("device");
    z.store("comp_algorithm", algo).expect("algorithm");
    z.store("disksize", &(pages * PS).to_string()).expect("disksize");
    z
}

fn measure(algo: &str, pages: &[&[u8]]) {
    let n = pages.len();
    let mut codec = zmem_comp::create(algo, &Default::default(), PS).expect("codec");
    let mut buf = vec![0u8; 2 * PS];
    let write = best_ns(n, || {
        let z = device(algo, n);
        for (i, p) in pages.iter().enumerate() {
            z.write_page(i as u64, p).expect("write");
        }
    });
    let compress = best_ns(n, || {
        for p in pages {
            codec.compress(p, &mut buf).expect("compress");
        }
    });
    let (mut flat, mut spans) = (Vec::new(), Vec::new());
    for p in pages {
        let len = codec.compress(p, &mut buf).expect("compress");
        spans.push((flat.len(), len));
        flat.extend_from_slice(&buf[..len]);
    }
    let z = device(algo, n);
    for (i, p) in pages.iter().enumerate() {
        z.write_page(i as u64, p).expect("write");
    }
    let mut out = vec![0u8; PS];
    let read = best_ns(n, || {
        for i in 0..n {
            z.read_page(i as u64, &mut out).expect("read");
        }
    });
    let decompress = best_ns(n, || {
        for &(at, len) in &spans {
            codec.decompress(&flat[at..at + len], &mut out).expect("decompress");
        }
    });
    println!(
        "  {n:>6} pages  write {write:>7.0} ns  compress {compress:>7.0} ns  ({:.3})   \
         read {read:>6.0} ns  decompress {decompress:>6.0} ns  ({:.3})",
        compress / write,
        decompress / read
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, file, algos @ ..] = args.as_slice() else {
        eprintln!("usage: zram-io PAGE_FILE ALGO...");
        std::process::exit(2);
    };
    let data = match std::fs::read(file) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("zram-io: {file}: {e}");
            std::process::exit(1);
        }
    };
    let pages: Vec<&[u8]> = data.chunks_exact(PS).collect();
    // One small page, many times: 600 bytes of varied data, then zeros.
    let mut small = vec![0u8; PS];
    for (i, b) in small.iter_mut().take(600).enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    let smalls = vec![&small[..]; 10_000];
    println!("ns per page, best of {PASSES}; (x) = codec alone / zram");
    for algo in algos {
        println!("{algo}:");
        measure(algo, &pages);
        measure(algo, &smalls);
    }
}
