//! Prepares a kernel-oracle check: writes the pages zram would compress and store as they are
//! (neither same-filled nor huge under our compressor) and prints the sum of our compressed
//! lengths, to compare with `kernel-zram-mmstat ALGO OUT`'s compr_data_size.
//!
//! Usage: oracle ALGO PAGES_FILE OUT_FILE   (ALGO: lzo or lzo-rle; PAGES_FILE `synthetic`: the
//! fixture's synthetic 4 KiB pages, zero-run edge cases included)

use lzo_ref::{read_pages, same_filled, synthetic_pages};
use zmem_comp::{Params, create};

/// zram's huge_class_size with zsmalloc chain size 8 (docs/REFERENCES.md [zsmalloc-accounting]).
const HUGE: usize = 3625;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, algo, pages_path, out_path] = &args[..] else {
        eprintln!("usage: oracle ALGO PAGES_FILE OUT_FILE");
        std::process::exit(2);
    };
    let mut c = create(algo, &Params::default(), 4096).expect("algorithm");
    let mut dst = vec![0u8; 2 * 4096 + 64];
    let (mut kept, mut sum, mut same, mut huge) = (Vec::new(), 0usize, 0, 0);
    let pages = if pages_path == "synthetic" {
        synthetic_pages().into_iter().map(|(_, p)| p).filter(|p| p.len() == 4096).collect()
    } else {
        read_pages(pages_path)
    };
    for page in pages {
        if same_filled(&page) {
            same += 1;
            continue;
        }
        let n = c.compress(&page, &mut dst).unwrap();
        if n >= HUGE {
            huge += 1;
            continue;
        }
        sum += n;
        kept.extend(page);
    }
    std::fs::write(out_path, &kept).unwrap();
    println!(
        "{algo}: {} pages kept ({same} same-filled, {huge} huge dropped); sum of compressed lengths {sum}",
        kept.len() / 4096
    );
}
