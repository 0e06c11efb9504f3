//! Writes the lzo fixture: varied inputs with liblzo2's `lzo1x_1_15_compress` output for each
//! (the kernel's `lzo` bytes on x86-64), zstd-compressed.
//!
//! Usage: fixture PAGES_FILE OUT_FILE   (PAGES_FILE: /work/pages/real-sample.bin)
//!
//! Record format (all integers little-endian), after the magic `ZMLZOFX1` and a u32 count:
//! u16 label length, label, u32 input length, input, u32 output length, output.

use lzo_ref::{LibLzo, odd_length_inputs, read_pages, same_filled, synthetic_pages};

const REAL_PAGES: usize = 200;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, pages_path, out_path] = &args[..] else {
        eprintln!("usage: fixture PAGES_FILE OUT_FILE");
        std::process::exit(2);
    };
    let mut lib = LibLzo::new();
    let pages = read_pages(pages_path);

    let mut inputs = synthetic_pages();
    // Real pages: evenly spaced over the file, skipping same-filled ones (zram never compresses
    // those, and the synthetic set already has them).
    let candidates: Vec<usize> = (0..pages.len()).filter(|&i| !same_filled(&pages[i])).collect();
    let step = (candidates.len() / REAL_PAGES).max(1);
    for &i in candidates.iter().step_by(step).take(REAL_PAGES) {
        inputs.push((format!("real-{i}"), pages[i].clone()));
    }
    let source: Vec<u8> = candidates.iter().skip(1000).take(40).flat_map(|&i| pages[i].clone()).collect();
    inputs.extend(odd_length_inputs(&source));

    let mut raw = b"ZMLZOFX1".to_vec();
    raw.extend((inputs.len() as u32).to_le_bytes());
    let mut out_total = 0;
    for (label, input) in &inputs {
        let mut dst = vec![0u8; input.len() + input.len() / 16 + 64 + 3];
        let n = lib.compress(input, &mut dst);
        out_total += n;
        raw.extend((label.len() as u16).to_le_bytes());
        raw.extend(label.as_bytes());
        raw.extend((input.len() as u32).to_le_bytes());
        raw.extend(input);
        raw.extend((n as u32).to_le_bytes());
        raw.extend(&dst[..n]);
    }
    let mut packed = vec![0u8; zstd_safe::compress_bound(raw.len())];
    let n = zstd_safe::compress(&mut packed[..], &raw, 19).expect("zstd");
    packed.truncate(n);
    std::fs::write(out_path, &packed).unwrap_or_else(|e| panic!("{out_path}: {e}"));
    println!(
        "{} inputs, {} liblzo2 ({}) output bytes; fixture {} bytes ({} raw) -> {out_path}",
        inputs.len(),
        out_total,
        lib.version(),
        packed.len(),
        raw.len()
    );
}
