//! Inputs shared by the byte-equality tests: real memory pages and the fuzz seeds' pages.
#![allow(dead_code)] // each test binary uses its own subset

use zmem_comp::{Params, create};

/// The 4 KiB real memory pages of the lzo fixture (records labelled `real-N`: pages sampled
/// evenly from a capture of a running system, same-filled ones skipped; see
/// tests/fixtures/README.md).
pub fn real_pages() -> Vec<Vec<u8>> {
    let packed = include_bytes!("../fixtures/lzo1x_1_15.bin.zst");
    let raw = zstd::stream::decode_all(&packed[..]).expect("fixture decompresses");
    let mut at = 0usize;
    let mut take = |n: usize| {
        let s = &raw[at..at + n];
        at += n;
        s.to_vec()
    };
    assert_eq!(take(8), b"ZMLZOFX1");
    let count = u32::from_le_bytes(take(4).try_into().unwrap());
    let mut pages = Vec::new();
    for _ in 0..count {
        let l = u16::from_le_bytes(take(2).try_into().unwrap()) as usize;
        let label = String::from_utf8(take(l)).unwrap();
        let n = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
        let input = take(n);
        let m = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
        take(m);
        if label.starts_with("real-") && input.len() == 4096 {
            pages.push(input);
        }
    }
    assert!(pages.len() >= 200, "{} real pages", pages.len());
    pages
}

/// Pages of `page_size` bytes made of consecutive real 4 KiB pages (what a 16 KiB or 64 KiB
/// page of the same memory would hold), at most `max` of them.
pub fn real_pages_of(page_size: usize, max: usize) -> Vec<Vec<u8>> {
    let small = real_pages();
    small.chunks_exact(page_size / 4096).take(max).map(|c| c.concat()).collect()
}

/// The pages behind the fuzz seeds (fuzz/seeds/decode_*): the raw `page.*` files and every
/// compressed seed decoded with its algorithm, deduplicated.
pub fn seed_pages() -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let mut pages: Vec<Vec<u8>> = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("fuzz/seeds exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("decode_"))
        .collect();
    dirs.sort();
    for dir in dirs {
        let mut files: Vec<_> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let name = f.file_name().unwrap().to_str().unwrap().to_string();
            let page = if name.starts_with("page.") {
                Some(data)
            } else {
                let algo = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
                create(algo, &Params::default(), 4096).ok().and_then(|mut s| {
                    let mut out = vec![0u8; 4096];
                    s.decompress(&data, &mut out).ok().map(|n| out[..n].to_vec())
                })
            };
            if let Some(p) = page
                && !p.is_empty()
                && !pages.contains(&p)
            {
                pages.push(p);
            }
        }
    }
    assert!(pages.len() >= 6, "{} seed pages", pages.len());
    pages
}
