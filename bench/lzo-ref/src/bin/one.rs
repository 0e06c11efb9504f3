//! One compressor over a page file, for `perf stat` / `perf record`: no timing of its own.
//!
//! Usage: one (ref|lzo|rle) PAGES_FILE [ROUNDS]
//!
//! Compresses every page ROUNDS times (default 10) with liblzo2's `lzo1x_1_15_compress` (`ref`)
//! or ours (`lzo`, `rle`) and prints the total compressed length, so instruction and cycle counts
//! of the three can be compared (the page loading is the same for all three).

use lzo_ref::{LibLzo, read_pages};
use std::hint::black_box;
use zmem_comp::{Compressor, Lzo, lzo::Variant};

const CAP: usize = 2 * 4096 + 64;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(which), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: one (ref|lzo|rle) PAGES_FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(3).map_or(10, |r| r.parse().expect("ROUNDS"));
    let pages = read_pages(path);
    let mut dst = vec![0u8; CAP];
    let mut total = 0usize;
    match which.as_str() {
        "ref" => {
            let mut lib = LibLzo::new();
            for _ in 0..rounds {
                for p in &pages {
                    total += lib.compress(black_box(p), &mut dst);
                }
            }
        }
        "lzo" | "rle" => {
            let v = if which == "lzo" { Variant::Lzo } else { Variant::LzoRle };
            let mut c = Lzo::new(v);
            for _ in 0..rounds {
                for p in &pages {
                    total += c.compress(black_box(p), &mut dst).unwrap();
                }
            }
        }
        _ => {
            eprintln!("unknown compressor {which}");
            std::process::exit(2);
        }
    }
    println!("{total}");
}
