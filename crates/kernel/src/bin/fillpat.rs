//! Test helper for the capture and trace-record tests: fills N pages of its heap with a known
//! pattern, prints `ADDRESS PAGES` (hex, decimal) on one line, then waits until stdin closes
//! or has data. With a second argument STRIDE it meanwhile writes every STRIDE-th page of the
//! buffer (pages 0, STRIDE, 2 STRIDE...; its last byte) every 5 ms: the pages a recording must
//! find hot.
//!
//! Page `i` of the buffer holds `fill_pattern(i)`: the 8 bytes "ZMEMFILL", `i` as a u64, then
//! SplitMix64 bytes seeded with `i`, so every page is distinct and incompressible and can be
//! recognised exactly in a dump.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

fn main() {
    let pages: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let stride: Option<usize> =
        std::env::args().nth(2).and_then(|a| a.parse().ok()).filter(|&s| s > 0);
    let page_size = zmem_kernel::capture::system_page_size();
    let mut buf = vec![0u8; (pages + 1) * page_size];
    let skip = buf.as_ptr().align_offset(page_size);
    let region = &mut buf[skip..skip + pages * page_size];
    for (i, page) in region.chunks_exact_mut(page_size).enumerate() {
        zmem_kernel::capture::fill_pattern(i as u64, page);
    }
    let addr = region.as_ptr() as usize;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{addr:x} {pages}").and_then(|()| out.flush()).expect("stdout");
    drop(out);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // The first byte, or the end, of stdin ends the program.
            let _ = std::io::stdin().read(&mut [0u8; 1]);
            done.store(true, Ordering::Relaxed);
        });
        while !done.load(Ordering::Relaxed) {
            if let Some(stride) = stride {
                for page in region.chunks_exact_mut(page_size).step_by(stride) {
                    let last = page.len() - 1;
                    // Volatile: the store must reach memory each time.
                    let p = &mut page[last];
                    // SAFETY: `p` is a valid, exclusive reference to a byte of the buffer.
                    unsafe { std::ptr::write_volatile(p, p.wrapping_add(1)) };
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    // Keep the buffer alive (and observable) until here.
    std::hint::black_box(&buf);
}
