//! zmem's deflate at the kernel's parameters equals zlib's deflate called the way
//! `backend_deflate.c` calls the kernel's copy (`zlib_deflateInit2(level, Z_DEFLATED, -11,
//! MAX_MEM_LEVEL = 8, Z_DEFAULT_STRATEGY)`, one `deflate(Z_FINISH)` per page), written here with
//! a fresh stream per page rather than zmem's `deflateReset`. The zlib is the one libz-sys
//! vendors (1.3.2); the kernel's `lib/zlib_deflate` is zlib 1.1.3's deflate, which cannot be
//! linked here (docs/REFERENCES.md [deflate-kernel] says what that leaves unchecked).

mod common;

use libz_sys as z;
use std::ffi::c_int;
use zmem_comp::{Compressor, Deflate, Params, compress_bound, create};

fn zlib_reference(src: &[u8], level: c_int, winbits: c_int) -> Vec<u8> {
    let mut out = vec![0u8; compress_bound(src.len())];
    let mut mem = std::mem::MaybeUninit::<z::z_stream>::zeroed();
    let s = mem.as_mut_ptr();
    // SAFETY: FFI on a zeroed stream (zlib's default allocators) and live buffers.
    unsafe {
        assert_eq!(
            z::deflateInit2_(
                s,
                level,
                z::Z_DEFLATED,
                winbits,
                8,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            ),
            z::Z_OK
        );
        (*s).next_in = src.as_ptr().cast_mut();
        (*s).avail_in = src.len() as u32;
        (*s).next_out = out.as_mut_ptr();
        (*s).avail_out = out.len() as u32;
        assert_eq!(z::deflate(s, z::Z_FINISH), z::Z_STREAM_END);
        out.truncate((*s).total_out as usize);
        z::deflateEnd(s);
    }
    out
}

fn inputs() -> Vec<Vec<u8>> {
    let mut v = common::seed_pages();
    v.extend(common::real_pages().into_iter().step_by(2));
    v.extend(common::real_pages_of(16384, 20));
    v.extend(common::real_pages_of(65536, 6));
    v
}

#[test]
fn deflate_equals_zlib_called_as_the_kernel_calls_it() {
    let pages = inputs();
    let mut bad = Vec::new();
    let mut checked = 0;
    for (level, winbits) in [(6, -11), (1, -11), (9, -11), (6, -15), (6, 11)] {
        let params =
            Params { level: Some(level), deflate_winbits: Some(winbits), ..Params::default() };
        let mut s = create("deflate", &params, 4096).unwrap();
        for (i, page) in pages.iter().enumerate() {
            let want = zlib_reference(page, level, winbits);
            let mut out = vec![0u8; compress_bound(page.len())];
            let n = s.compress(page, &mut out).unwrap();
            checked += 1;
            if out[..n] != want[..] {
                bad.push(format!("level {level} winbits {winbits} #{i}: {n} vs {}", want.len()));
            }
            let mut back = vec![0u8; page.len()];
            assert_eq!(s.decompress(&out[..n], &mut back).unwrap(), page.len());
            assert!(&back == page);
        }
    }
    assert!(checked > 600, "{checked}");
    assert!(bad.is_empty(), "{} of {checked} differ: {:?}", bad.len(), &bad[..bad.len().min(10)]);
}

/// The fast path (zlib-rs) writes valid deflate but not zlib's bytes: it is what the registry
/// must not build.
#[test]
fn the_fast_path_is_not_the_kernels_bytes() {
    let pages = common::real_pages();
    let params = Params::default();
    let mut fast = Deflate::new_fast(&params).unwrap();
    let mut exact = create("deflate", &params, 4096).unwrap();
    let mut differ = 0;
    for page in pages.iter().take(50) {
        let (mut a, mut b) = (vec![0u8; 8256], vec![0u8; 8256]);
        let na = fast.compress(page, &mut a).unwrap();
        let nb = exact.compress(page, &mut b).unwrap();
        differ += usize::from(a[..na] != b[..nb]);
        let mut back = vec![0u8; 4096];
        assert_eq!(exact.decompress(&a[..na], &mut back).unwrap(), 4096);
        assert!(&back == page);
    }
    assert!(differ > 40, "{differ} of 50 differ");
}

/// zlib's `deflate(Z_FINISH)` returns `Z_STREAM_END` only with room left over: a destination of
/// exactly the stream's size gets `Z_OK`, which backend_deflate.c turns into -EINVAL, and so does
/// zmem (`OutputTooSmall`); one byte more gives the same bytes as a roomy destination.
#[test]
fn destinations_too_small_for_zlib_are_output_too_small() {
    let page = &common::real_pages()[3];
    let mut s = create("deflate", &Params::default(), 4096).unwrap();
    let mut out = vec![0u8; 8256];
    let n = s.compress(page, &mut out).unwrap();
    for cap in [n - 1, n] {
        let mut short = vec![0u8; cap];
        assert!(matches!(
            s.compress(page, &mut short),
            Err(zmem_comp::CompError::OutputTooSmall { .. })
        ));
    }
    let mut room = vec![0u8; n + 1];
    assert_eq!(s.compress(page, &mut room).unwrap(), n);
    assert_eq!(room[..n], out[..n]);
}
