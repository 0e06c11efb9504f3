//! liblz4 1.7.5's HC compressor (the kernel's v1.7.3 search) as the reference for zmem-comp's
//! lz4hc: `fixture OUT` writes the digests tests/lz4hc_reference.rs checks; `compare` checks
//! zmem-comp against the library directly and prints the first differences.

#[path = "../../../crates/comp/tests/common/mod.rs"]
mod common;

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;
use zmem_comp::Params;

// Linking: the declarations below resolve against the liblz4 1.7.5 that lz4-sys 1.0.1 builds.
use lz4_sys as _;

unsafe extern "C" {
    fn LZ4_versionNumber() -> c_int;
    fn LZ4_compressBound(n: c_int) -> c_int;
    fn LZ4_compress_HC(
        src: *const c_char,
        dst: *mut c_char,
        n: c_int,
        cap: c_int,
        level: c_int,
    ) -> c_int;
    fn LZ4_createStreamHC() -> *mut c_void;
    fn LZ4_freeStreamHC(s: *mut c_void) -> c_int;
    fn LZ4_resetStreamHC(s: *mut c_void, level: c_int);
    fn LZ4_loadDictHC(s: *mut c_void, dict: *const c_char, n: c_int) -> c_int;
    fn LZ4_compress_HC_continue(
        s: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        n: c_int,
        cap: c_int,
    ) -> c_int;
}

/// The kernel's levels the reference can produce, with the liblz4 1.7.5 level that runs the same
/// search (1 << (level - 1) attempts).
const LEVELS: [(u8, c_int); 10] =
    [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (16, 10)];

fn reference(src: &[u8], dict: Option<&[u8]>, lib_level: c_int) -> Vec<u8> {
    // SAFETY: FFI on live buffers; the destination is LZ4_compressBound bytes (no-limit path, as
    // zram's two-page destination).
    // An empty slice's pointer is dangling; liblz4 1.7.5 still forms pointers from it.
    let pad = [0u8; 16];
    let src_ptr: *const c_char =
        if src.is_empty() { pad.as_ptr().cast() } else { src.as_ptr().cast() };
    unsafe {
        let cap = LZ4_compressBound(src.len() as c_int);
        let mut out = vec![0u8; cap as usize];
        let n = match dict {
            None => LZ4_compress_HC(
                src_ptr,
                out.as_mut_ptr().cast(),
                src.len() as c_int,
                cap,
                lib_level,
            ),
            Some(d) => {
                let s = LZ4_createStreamHC();
                LZ4_resetStreamHC(s, lib_level);
                assert_eq!(
                    LZ4_loadDictHC(s, d.as_ptr().cast(), d.len() as c_int),
                    d.len() as c_int
                );
                let n = LZ4_compress_HC_continue(
                    s,
                    src_ptr,
                    out.as_mut_ptr().cast(),
                    src.len() as c_int,
                    cap,
                );
                LZ4_freeStreamHC(s);
                n
            }
        };
        assert!(n > 0 || src.is_empty());
        out.truncate(n as usize);
        out
    }
}

/// (input index, dictionary or 255, kernel level, reference output).
fn records() -> (Vec<(String, Vec<u8>)>, Vec<Vec<u8>>, Vec<(u32, u8, u8, Vec<u8>)>) {
    let inputs = common::lz4hc_inputs();
    let dicts = common::lz4hc_dicts();
    let mut recs = Vec::new();
    for (i, (label, input)) in inputs.iter().enumerate() {
        if std::env::var_os("LZ4HC_REF_TRACE").is_some() {
            eprintln!("{label} ({} bytes)", input.len());
        }
        let all_levels = !label.starts_with("real-") || i % 8 == 0;
        for &(kl, ll) in &LEVELS {
            if all_levels || [1, 4, 9, 16].contains(&kl) {
                recs.push((i as u32, 255, kl, reference(input, None, ll)));
            }
        }
        if label.starts_with("real-") && i % 4 == 0
            || label.starts_with("seed-")
            || label.starts_with("real16k-") && i % 2 == 0
        {
            for (d, dict) in dicts.iter().enumerate() {
                for &(kl, ll) in &[(2u8, 2), (9, 9), (16, 10)] {
                    recs.push((i as u32, d as u8, kl, reference(input, Some(dict), ll)));
                }
            }
        }
    }
    (inputs, dicts, recs)
}

/// Compression MB/s of zmem-comp's lz4hc against liblz4 1.7.5's (the same search in C, -O3) on
/// the real 4 KiB pages: per level, the fastest of 15 rounds for each side, sides alternating
/// which runs first.
fn speed() {
    let pages = common::real_pages();
    let total = (pages.len() * 4096) as f64;
    let mut out = vec![0u8; zmem_comp::compress_bound(4096)];
    for (kl, ll) in [(1u8, 1), (4, 4), (9, 9), (16, 10)] {
        let mut s = zmem_comp::create("lz4hc", &Params::with_level(kl as i32), 4096).unwrap();
        let (mut best_ours, mut best_ref) = (f64::MAX, f64::MAX);
        let mut ours_bytes = 0usize;
        for round in 0..15 {
            let mut run_ours = || {
                let t = std::time::Instant::now();
                let mut n = 0;
                for p in &pages {
                    n += s.compress(p, &mut out).unwrap();
                }
                (t.elapsed().as_secs_f64(), n)
            };
            let run_ref = || {
                let t = std::time::Instant::now();
                for p in &pages {
                    std::hint::black_box(reference(p, None, ll));
                }
                t.elapsed().as_secs_f64()
            };
            let (a, b) = if round % 2 == 0 {
                let a = run_ours();
                (a, run_ref())
            } else {
                let b = run_ref();
                (run_ours(), b)
            };
            best_ours = best_ours.min(a.0);
            ours_bytes = a.1;
            best_ref = best_ref.min(b);
        }
        println!(
            "level {kl:2}: ours {:7.1} MB/s, liblz4 1.7.5 {:7.1} MB/s, ours/ref {:.2}, ratio {:.3}",
            total / best_ours / 1e6,
            total / best_ref / 1e6,
            best_ref / best_ours,
            total / ours_bytes as f64
        );
    }
}

fn main() {
    // SAFETY: a pure query.
    let version = unsafe { LZ4_versionNumber() };
    assert_eq!(version, 10705, "lz4-sys 1.0.1 bundles liblz4 1.7.5");
    let args: Vec<String> = std::env::args().collect();
    let (inputs, dicts, recs) = records();
    match args.get(1).map(String::as_str) {
        Some("fixture") => {
            let path = args.get(2).expect("fixture OUT");
            let mut raw = b"ZMHCFX01".to_vec();
            raw.extend((inputs.len() as u32).to_le_bytes());
            for (_, input) in &inputs {
                raw.extend((input.len() as u32).to_le_bytes());
                raw.extend(common::fnv1a64(input).to_le_bytes());
            }
            raw.extend((dicts.len() as u32).to_le_bytes());
            for d in &dicts {
                raw.extend(common::fnv1a64(d).to_le_bytes());
            }
            raw.extend((recs.len() as u32).to_le_bytes());
            for (i, d, l, out) in &recs {
                raw.extend(i.to_le_bytes());
                raw.push(*d);
                raw.push(*l);
                raw.extend((out.len() as u32).to_le_bytes());
                raw.extend(common::fnv1a64(out).to_le_bytes());
            }
            let packed = zstd::encode_all(&raw[..], 19).unwrap();
            std::fs::write(path, packed).unwrap();
            eprintln!("{} inputs, {} records -> {path}", inputs.len(), recs.len());
        }
        Some("compare") => {
            let mut bad = 0;
            for (i, d, l, want) in &recs {
                let (label, input) = &inputs[*i as usize];
                let params = Params {
                    level: Some(*l as i32),
                    dict: (*d != 255).then(|| Arc::<[u8]>::from(&dicts[*d as usize][..])),
                    ..Params::default()
                };
                let mut s = zmem_comp::create("lz4hc", &params, 4096).unwrap();
                let mut out = vec![0u8; zmem_comp::compress_bound(input.len())];
                let n = s.compress(input, &mut out).unwrap();
                if out[..n] != want[..] {
                    bad += 1;
                    if bad <= 10 {
                        let at = out
                            .iter()
                            .zip(want)
                            .position(|(a, b)| a != b)
                            .unwrap_or(n.min(want.len()));
                        eprintln!(
                            "{label} dict {d} level {l}: {n} vs {} bytes, first difference at {at}",
                            want.len()
                        );
                    }
                }
            }
            println!("{} of {} records differ", bad, recs.len());
        }
        Some("speed") => speed(),
        _ => eprintln!("usage: lz4hc-ref fixture OUT | compare | speed"),
    }
}
