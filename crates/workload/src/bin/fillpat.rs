//! Test helper for the capture test: fills N pages of its heap with a known pattern, prints
//! `ADDRESS PAGES` (hex, decimal) on one line, then waits until stdin closes.
//!
//! Page `i` of the buffer holds `fill_pattern(i)`: the 8 bytes "ZMEMFILL", `i` as a u64, then
//! SplitMix64 bytes seeded with `i`, so every page is distinct and incompressible and can be
//! recognised exactly in a dump.

use std::io::{Read, Write};

fn main() {
    let pages: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let page_size = zmem_workload::capture::system_page_size();
    let mut buf = vec![0u8; (pages + 1) * page_size];
    let skip = buf.as_ptr().align_offset(page_size);
    let region = &mut buf[skip..skip + pages * page_size];
    for (i, page) in region.chunks_exact_mut(page_size).enumerate() {
        zmem_workload::capture::fill_pattern(i as u64, page);
    }
    let addr = region.as_ptr() as usize;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{addr:x} {pages}").and_then(|()| out.flush()).expect("stdout");
    drop(out);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    // Keep the buffer alive (and observable) until here.
    std::hint::black_box(&buf);
}
