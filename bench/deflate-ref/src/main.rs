//! zmem-comp's deflate against zlib's `deflateInit2(level, Z_DEFLATED, -11, 8,
//! Z_DEFAULT_STRATEGY)` + `deflate(Z_FINISH)`, the kernel's backend_deflate.c call, on real
//! pages (4, 16 and 64 KiB) and the fuzz seeds' pages: how many outputs are identical, and the
//! compressed sizes.

#[path = "../../../crates/comp/tests/common/mod.rs"]
mod common;

use libz_sys as z;
use std::ffi::c_int;
use zmem_comp::{Compressor, Params};

fn zlib(src: &[u8], level: c_int) -> Vec<u8> {
    let mut out = vec![0u8; src.len() * 2 + 64];
    // SAFETY: FFI on a zeroed z_stream and live buffers of the lengths given.
    unsafe {
        // zalloc/zfree must be null for zlib's defaults, which the Rust type cannot hold: the
        // stream stays behind a pointer.
        let mut mem = std::mem::MaybeUninit::<z::z_stream>::zeroed();
        let s = mem.as_mut_ptr();
        let rc = z::deflateInit2_(
            s,
            level,
            z::Z_DEFLATED,
            -11,
            8,
            z::Z_DEFAULT_STRATEGY,
            z::zlibVersion(),
            std::mem::size_of::<z::z_stream>() as c_int,
        );
        assert_eq!(rc, z::Z_OK);
        (*s).next_in = src.as_ptr() as *mut u8;
        (*s).avail_in = src.len() as u32;
        (*s).next_out = out.as_mut_ptr();
        (*s).avail_out = out.len() as u32;
        assert_eq!(z::deflate(s, z::Z_FINISH), z::Z_STREAM_END);
        out.truncate((*s).total_out as usize);
        z::deflateEnd(s);
    }
    out
}

fn ours(src: &[u8], level: i32) -> Vec<u8> {
    let mut s = zmem_comp::create("deflate", &Params::with_level(level), 4096).unwrap();
    let mut out = vec![0u8; zmem_comp::compress_bound(src.len())];
    let n = s.compress(src, &mut out).unwrap();
    out.truncate(n);
    out
}

fn main() {
    // SAFETY: returns a static C string.
    let version =
        unsafe { std::ffi::CStr::from_ptr(z::zlibVersion()) }.to_string_lossy().into_owned();
    let sets = [
        ("seeds 4K", common::seed_pages()),
        ("real 4K", common::real_pages()),
        ("real 16K", common::real_pages_of(16384, 50)),
        ("real 64K", common::real_pages_of(65536, 12)),
    ];
    match std::env::args().nth(1).as_deref() {
        Some("compare") => {
            for level in [1, 6, 9] {
                for (name, pages) in &sets {
                    let (mut same, mut zs, mut os) = (0, 0, 0);
                    for p in pages {
                        let (a, b) = (ours(p, level), zlib(p, level));
                        same += usize::from(a == b);
                        zs += b.len();
                        os += a.len();
                    }
                    println!(
                        "zlib {version} level {level} {name:9}: {same:3} of {:3} identical; bytes zmem-comp {os} zlib {zs} ({:+.2} %)",
                        pages.len(),
                        (os as f64 / zs as f64 - 1.0) * 100.0
                    );
                }
            }
        }
        Some("speed") => {
            // zmem-comp's deflate (zlib, the kernel's bytes) against its fast path (zlib-rs), both
            // with a stream reset per page as zram does: fastest of 15 rounds over the real 4 KiB
            // pages, the two alternating which runs first.
            let pages = common::real_pages();
            let total = (pages.len() * 4096) as f64;
            for level in [1, 6, 9] {
                let p = Params::with_level(level);
                let mut exact = zmem_comp::create("deflate", &p, 4096).unwrap();
                let mut fast: Box<dyn Compressor> =
                    Box::new(zmem_comp::Deflate::new_fast(&p).unwrap());
                let mut out = vec![0u8; 8256];
                let mut run = |s: &mut Box<dyn Compressor>| {
                    let t = std::time::Instant::now();
                    for p in &pages {
                        std::hint::black_box(s.compress(p, &mut out).unwrap());
                    }
                    t.elapsed().as_secs_f64()
                };
                let (mut a, mut b) = (f64::MAX, f64::MAX);
                for round in 0..15 {
                    if round % 2 == 0 {
                        a = a.min(run(&mut exact));
                        b = b.min(run(&mut fast));
                    } else {
                        b = b.min(run(&mut fast));
                        a = a.min(run(&mut exact));
                    }
                }
                println!(
                    "level {level}: exact (zlib {version}) {:6.1} MB/s, fast path (zlib-rs) {:6.1} MB/s, exact/fast {:.2}",
                    total / a / 1e6,
                    total / b / 1e6,
                    b / a
                );
            }
        }
        Some("dump") => {
            // PAGES.bin and ZLIB.bin for a check against another zlib (e.g. Python's):
            // u32 length + bytes per record, level 6.
            let mut pages_out = Vec::new();
            let mut zlib_out = Vec::new();
            for (_, pages) in &sets {
                for p in pages {
                    pages_out.extend((p.len() as u32).to_le_bytes());
                    pages_out.extend_from_slice(p);
                    let c = zlib(p, 6);
                    zlib_out.extend((c.len() as u32).to_le_bytes());
                    zlib_out.extend_from_slice(&c);
                }
            }
            std::fs::write("/tmp/deflate-pages.bin", pages_out).unwrap();
            std::fs::write("/tmp/deflate-zlib.bin", zlib_out).unwrap();
        }
        _ => eprintln!("usage: deflate-ref compare | speed | dump"),
    }
}
