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

/// Synthetic inputs for the match finders' corners, deterministic: empty and tiny buffers,
/// zeros, text, pointer-like words, random bytes, low-entropy and periodic pages, a match that
/// runs to the end, and long buffers past the 64 KiB window (70000 and 131072 bytes) where the
/// chain's 16-bit slots wrap.
pub fn synthetic_inputs() -> Vec<(String, Vec<u8>)> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let text: Vec<u8> = b"The quick brown fox jumps over the lazy dog; zram compresses pages. "
        .iter()
        .copied()
        .cycle()
        .take(4096)
        .collect();
    let mut v: Vec<(String, Vec<u8>)> = Vec::new();
    for n in [0usize, 1, 4, 5, 12, 13, 16, 17, 31, 100] {
        v.push((format!("text-{n}"), text[..n].to_vec()));
    }
    v.push(("zeros".into(), vec![0u8; 4096]));
    v.push(("text".into(), text.clone()));
    let random: Vec<u8> = (0..4096).map(|_| next() as u8).collect();
    v.push(("random".into(), random.clone()));
    let words: Vec<u8> = (0..512u64)
        .flat_map(|i| (0xffff_8880_0000_0000u64 + (next() % 64) * 64 + i % 3).to_le_bytes())
        .collect();
    v.push(("pointers".into(), words));
    let low: Vec<u8> = (0..4096).map(|_| b"aab"[(next() % 3) as usize]).collect();
    v.push(("low-entropy".into(), low.clone()));
    let periodic: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    v.push(("periodic".into(), periodic));
    let mut tail = random[..2048].to_vec();
    tail.extend_from_slice(&random[..2048]);
    v.push(("match-to-end".into(), tail));
    let mut long = Vec::new();
    while long.len() < 131072 {
        long.extend_from_slice(&low[..1000]);
        long.extend((0..300).map(|_| next() as u8));
        long.extend_from_slice(&text[..700]);
    }
    v.push(("long-70000".into(), long[..70000].to_vec()));
    v.push(("long-131072".into(), long[..131072].to_vec()));
    v
}

/// FNV-1a, 64 bits: the fixtures' digest of an output (no dependency, stable).
pub fn fnv1a64(data: &[u8]) -> u64 {
    data.iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Every input of the lz4hc fixture, in the fixture's order: synthetic, the fuzz seeds' pages,
/// real 4 KiB pages, 16 KiB and 64 KiB pages of consecutive real pages.
pub fn lz4hc_inputs() -> Vec<(String, Vec<u8>)> {
    let mut v = synthetic_inputs();
    v.extend(seed_pages().into_iter().enumerate().map(|(i, p)| (format!("seed-{i}"), p)));
    v.extend(real_pages().into_iter().enumerate().map(|(i, p)| (format!("real-{i}"), p)));
    v.extend(
        real_pages_of(16384, 25).into_iter().enumerate().map(|(i, p)| (format!("real16k-{i}"), p)),
    );
    v.extend(
        real_pages_of(65536, 6).into_iter().enumerate().map(|(i, p)| (format!("real64k-{i}"), p)),
    );
    v
}

/// The dictionaries of the lz4hc fixture: 2 KiB of text, 3 bytes (too short to chain), 20000
/// bytes and exactly 64 KiB of real pages (the most LZ4_loadDictHC keeps whole).
pub fn lz4hc_dicts() -> Vec<Vec<u8>> {
    let text: Vec<u8> = b"kernel zram dictionary text: swap pages, slab, page cache. "
        .iter()
        .copied()
        .cycle()
        .take(2048)
        .collect();
    let real: Vec<u8> = real_pages().iter().rev().take(16).flatten().copied().collect();
    vec![text, b"abc".to_vec(), real[..20000].to_vec(), real[..65536].to_vec()]
}
