//! Byte equality of our `zstd` with Linux 6.18 zram's zstd backend.
//!
//! The reference: libzstd 1.5.7, the upstream release 6.18's `lib/zstd` was imported from
//! (linked through zstd-sys `2.1.3+zstd.1.5.7`), driven by the kernel's call sequence written
//! out here independently of `src/zstd.rs` (through zstd-safe's safe API where it has one):
//! `zstd_get_params(level, PAGE_SIZE)` + `zstd_cctx_init` + `ZSTD_compress2` without a
//! dictionary, `ZSTD_createCDict_advanced(.., ZSTD_getCParams(level, PAGE_SIZE, dict_size))` +
//! `ZSTD_compress_usingCDict` with one. The kernel's copy differs from the release in one place
//! that reaches the bytes, the row-match-finder cutoff (window log > 17 instead of > 14,
//! `ZSTD_resolveRowMatchFinderMode`); the reference applies it as an explicit parameter.
//! docs/REFERENCES.md [zstd-kernel] has the sources.
//!
//! Inputs: 4 KiB real pages, 16 KiB and 64 KiB pages made of consecutive real pages, and the
//! fuzz seeds' pages; levels from negative to 22; no dictionary, a trained zstd dictionary, and
//! raw-content dictionaries of 60 and 200 KiB.

mod common;

use std::ffi::c_void;
use std::sync::Arc;
use zmem_comp::{Compressor, Params, compress_bound};
use zstd::zstd_safe::{self, CCtx, CParameter, ParamSwitch, ResetDirective, zstd_sys as sys};

const LEVELS: [i32; 12] = [-7, -1, 1, 2, 3, 4, 5, 6, 9, 12, 16, 19];

/// The kernel's resolution of the row match finder (lib/zstd 1.5.7 import): greedy, lazy,
/// lazy2 above window log 17.
fn kernel_row(c: &sys::ZSTD_compressionParameters) -> ParamSwitch {
    let s = c.strategy as u32;
    if (3..=5).contains(&s) && c.windowLog > 17 {
        ParamSwitch::Enable
    } else {
        ParamSwitch::Disable
    }
}

/// zram's compression of one page without a dictionary, as `backend_zstd.c: zstd_compress` +
/// `zstd_compress_module.c: zstd_compress_cctx` do it. `kernel_patch` = false runs the release
/// unchanged (its own row-match-finder rule).
fn reference_plain(level: i32, page_size: usize, src: &[u8], kernel_patch: bool) -> Vec<u8> {
    // SAFETY: a pure function of its arguments.
    let p = unsafe { sys::ZSTD_getParams(level, page_size as u64, 0) };
    let c = p.cParams;
    let mut cctx = CCtx::create();
    cctx.reset(ResetDirective::SessionAndParameters).unwrap();
    cctx.set_pledged_src_size(Some(src.len() as u64)).unwrap();
    for param in [
        CParameter::WindowLog(c.windowLog),
        CParameter::HashLog(c.hashLog),
        CParameter::ChainLog(c.chainLog),
        CParameter::SearchLog(c.searchLog),
        CParameter::MinMatch(c.minMatch),
        CParameter::TargetLength(c.targetLength),
        CParameter::Strategy(c.strategy),
        CParameter::ContentSizeFlag(p.fParams.contentSizeFlag != 0),
        CParameter::ChecksumFlag(p.fParams.checksumFlag != 0),
        CParameter::DictIdFlag(p.fParams.noDictIDFlag == 0),
    ] {
        cctx.set_parameter(param).unwrap();
    }
    if kernel_patch {
        cctx.set_parameter(CParameter::UseRowMatchFinder(kernel_row(&c))).unwrap();
    }
    let mut out = vec![0u8; compress_bound(src.len())];
    let n = cctx.compress2(&mut out[..], src).unwrap();
    out.truncate(n);
    out
}

/// The kernel's CDict (`zstd_setup_params`), compressed through with `ZSTD_compress_usingCDict`.
struct RefDict {
    cdict: *mut sys::ZSTD_CDict,
    _dict: Arc<[u8]>,
}

impl RefDict {
    fn new(dict: &Arc<[u8]>, level: i32, page_size: usize, kernel_patch: bool) -> Self {
        // SAFETY: FFI on live buffers; the dictionary is kept alive by `_dict` (by reference,
        // as `zstd_create_cdict_byreference`).
        unsafe {
            let cp = sys::ZSTD_getCParams(level, page_size as u64, dict.len());
            let cdict = if kernel_patch {
                // ZSTD_createCDict_advanced's own body, plus the kernel's rule applied to the
                // window the CDict ends up with (ZSTD_cpm_createCDict assumes a 513-byte source).
                let fin = sys::ZSTD_adjustCParams(cp, 513, dict.len());
                let params = sys::ZSTD_createCCtxParams();
                sys::ZSTD_CCtxParams_init(params, 0);
                use sys::ZSTD_cParameter::*;
                for (k, v) in [
                    (ZSTD_c_windowLog, cp.windowLog as i32),
                    (ZSTD_c_hashLog, cp.hashLog as i32),
                    (ZSTD_c_chainLog, cp.chainLog as i32),
                    (ZSTD_c_searchLog, cp.searchLog as i32),
                    (ZSTD_c_minMatch, cp.minMatch as i32),
                    (ZSTD_c_targetLength, cp.targetLength as i32),
                    (ZSTD_c_strategy, cp.strategy as i32),
                    (ZSTD_c_experimentalParam14, kernel_row(&fin) as i32),
                ] {
                    assert_eq!(
                        sys::ZSTD_isError(sys::ZSTD_CCtxParams_setParameter(params, k, v)),
                        0
                    );
                }
                let c = sys::ZSTD_createCDict_advanced2(
                    dict.as_ptr().cast(),
                    dict.len(),
                    sys::ZSTD_dictLoadMethod_e::ZSTD_dlm_byRef,
                    sys::ZSTD_dictContentType_e::ZSTD_dct_auto,
                    params,
                    sys::ZSTD_customMem {
                        customAlloc: None,
                        customFree: None,
                        opaque: std::ptr::null_mut(),
                    },
                );
                sys::ZSTD_freeCCtxParams(params);
                c
            } else {
                sys::ZSTD_createCDict_advanced(
                    dict.as_ptr().cast(),
                    dict.len(),
                    sys::ZSTD_dictLoadMethod_e::ZSTD_dlm_byRef,
                    sys::ZSTD_dictContentType_e::ZSTD_dct_auto,
                    cp,
                    sys::ZSTD_customMem {
                        customAlloc: None,
                        customFree: None,
                        opaque: std::ptr::null_mut(),
                    },
                )
            };
            assert!(!cdict.is_null());
            RefDict { cdict, _dict: Arc::clone(dict) }
        }
    }

    fn compress(&self, src: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; compress_bound(src.len())];
        // SAFETY: FFI on live buffers of the given lengths.
        let n = unsafe {
            let cctx = sys::ZSTD_createCCtx();
            let n = sys::ZSTD_compress_usingCDict(
                cctx,
                out.as_mut_ptr().cast::<c_void>(),
                out.len(),
                src.as_ptr().cast::<c_void>(),
                src.len(),
                self.cdict,
            );
            sys::ZSTD_freeCCtx(cctx);
            n
        };
        // SAFETY: a pure function of its argument.
        assert_eq!(unsafe { sys::ZSTD_isError(n) }, 0, "{}", zstd_safe::get_error_name(n));
        out.truncate(n);
        out
    }
}

impl Drop for RefDict {
    fn drop(&mut self) {
        // SAFETY: created above, freed once.
        unsafe { sys::ZSTD_freeCDict(self.cdict) };
    }
}

fn ours(stream: &mut Box<dyn Compressor>, src: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; compress_bound(src.len())];
    let n = stream.compress(src, &mut out).unwrap();
    out.truncate(n);
    let mut back = vec![0u8; src.len()];
    assert_eq!(stream.decompress(&out, &mut back).unwrap(), src.len());
    assert!(back == src, "round trip");
    out
}

fn inputs(page_size: usize) -> Vec<Vec<u8>> {
    match page_size {
        4096 => {
            let mut v = common::real_pages();
            v.extend(common::seed_pages());
            v
        }
        16384 => common::real_pages_of(16384, 50),
        _ => common::real_pages_of(65536, 12),
    }
}

fn dictionaries() -> Vec<(&'static str, Arc<[u8]>)> {
    let pages = common::real_pages();
    let trained = zstd::dict::from_samples(&pages[..120], 16 * 1024).expect("dictionary trains");
    assert_eq!(&trained[..4], &[0x37, 0xa4, 0x30, 0xec], "a zstd-format dictionary");
    let raw = |kib: usize| -> Arc<[u8]> {
        // Real pages without the zstd dictionary magic: ZSTD_dct_auto loads them as raw content.
        pages.iter().rev().flatten().copied().take(kib * 1024).collect::<Vec<u8>>().into()
    };
    vec![("trained-16k", trained.into()), ("raw-60k", raw(60)), ("raw-200k", raw(200))]
}

#[test]
fn libzstd_is_the_release_the_kernel_imported() {
    // 6.18's lib/zstd is upstream v1.5.7 (docs/REFERENCES.md [zstd-kernel]).
    assert_eq!(zstd_safe::version_number(), 10507);
}

#[test]
fn without_dictionary_equals_the_kernel_call_sequence() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for page_size in [4096, 16384, 65536] {
        let pages = inputs(page_size);
        for level in LEVELS {
            let mut s = zmem_comp::create("zstd", &Params::with_level(level), page_size).unwrap();
            for (i, page) in pages.iter().enumerate() {
                let want = reference_plain(level, page_size, page, true);
                let got = ours(&mut s, page);
                checked += 1;
                if got != want {
                    bad.push(format!("{page_size}/{level}/#{i}: {} vs {}", got.len(), want.len()));
                }
            }
        }
    }
    assert!(checked > 3000, "{checked}");
    assert!(bad.is_empty(), "{} of {checked} differ: {:?}", bad.len(), &bad[..bad.len().min(10)]);
}

#[test]
fn with_dictionary_equals_the_kernel_call_sequence() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for (name, dict) in dictionaries() {
        for page_size in [4096, 16384, 65536] {
            let pages = inputs(page_size);
            for level in [1, 3, 5, 6, 9, 12, 19] {
                let params = Params {
                    level: Some(level),
                    dict: Some(Arc::clone(&dict)),
                    ..Params::default()
                };
                let mut s = zmem_comp::create("zstd", &params, page_size).unwrap();
                let reference = RefDict::new(&dict, level, page_size, true);
                for (i, page) in pages.iter().enumerate().step_by(4) {
                    let want = reference.compress(page);
                    let got = ours(&mut s, page);
                    checked += 1;
                    if got != want {
                        bad.push(format!("{name}/{page_size}/{level}/#{i}"));
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
    assert!(bad.is_empty(), "{} of {checked} differ: {:?}", bad.len(), &bad[..bad.len().min(10)]);
}

/// Where the kernel's row-match-finder cutoff decides the bytes: never for 4 KiB and 16 KiB pages
/// without a dictionary (window log <= 14), but for 64 KiB pages at the greedy/lazy levels and
/// with a 60 KiB raw dictionary (window log 16 and 17): there the unpatched release gives other
/// bytes than ours. With 200 KiB of dictionary (window log 18) both rules agree again.
#[test]
fn the_kernels_row_match_finder_cutoff_is_what_changes_the_bytes() {
    let differing = |page_size: usize, level: i32| {
        let mut s = zmem_comp::create("zstd", &Params::with_level(level), page_size).unwrap();
        inputs(page_size)
            .iter()
            .filter(|p| ours(&mut s, p) != reference_plain(level, page_size, p, false))
            .count()
    };
    for level in LEVELS {
        assert_eq!(differing(4096, level), 0, "4 KiB, level {level}");
        assert_eq!(differing(16384, level), 0, "16 KiB, level {level}");
    }
    assert!(differing(65536, 6) > 0, "64 KiB pages at level 6 use the kernel's match finder");
    let dicts = dictionaries();
    let page = &inputs(4096)[7];
    let with_dict = |d: &Arc<[u8]>, patch: bool| RefDict::new(d, 6, 4096, patch).compress(page);
    let pages = inputs(4096);
    let raw60 = &dicts[1].1;
    let n60 = pages.iter().filter(|p| {
        RefDict::new(raw60, 6, 4096, true).compress(p)
            != RefDict::new(raw60, 6, 4096, false).compress(p)
    });
    assert!(n60.take(1).count() == 1, "a 60 KiB dictionary at level 6 is affected");
    let raw200 = &dicts[2].1;
    assert_eq!(with_dict(raw200, true), with_dict(raw200, false), "200 KiB dictionary: window 18");
}
