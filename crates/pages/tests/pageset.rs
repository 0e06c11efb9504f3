//! The page-set format: round trips (in memory, streaming, mmap, zstd), raw files, and that
//! truncated or corrupt input gives an error naming an offset, never a panic.

use std::sync::Arc;

use proptest::prelude::*;
use zmem_pages::{
    Compression, MappingKind, PageMeta, PageReader, PageSet, PagesError, ReadOptions, format,
};

/// [`PageSet::map`] on a file this test wrote into its own temporary directory.
fn map(path: &std::path::Path, opts: &ReadOptions) -> Result<PageSet, PagesError> {
    // SAFETY: the file is in a temporary directory of this test's own, written before the call
    // and never written or truncated again while the set lives (the directory outlives it).
    unsafe { PageSet::map(path, opts) }
}

fn sample(pages: usize, page_size: usize, with_meta: bool) -> PageSet {
    let mut rng = zmem_pages::prng::SplitMix64::new(pages as u64 * 31 + page_size as u64);
    let mut bytes = vec![0u8; pages * page_size];
    rng.fill(&mut bytes);
    // Some structure, so zstd has something to do.
    for b in bytes.iter_mut().step_by(3) {
        *b = 0;
    }
    let set = PageSet::from_raw(bytes, page_size).unwrap();
    if !with_meta {
        return set;
    }
    let names: [Arc<str>; 3] = [Arc::from("java"), Arc::from("node"), Arc::from("")];
    let kinds = [MappingKind::Heap, MappingKind::Stack, MappingKind::Anon, MappingKind::Other];
    let meta = (0..pages)
        .map(|i| PageMeta {
            pid: 1000 + (i % 3) as u32,
            comm: names[i % 3].clone(),
            vaddr: 0x7f00_0000_0000 + (i * page_size) as u64,
            kind: kinds[i % 4],
        })
        .collect();
    set.with_meta(meta).unwrap()
}

fn encode(set: &PageSet) -> Vec<u8> {
    let mut out = Vec::new();
    set.write_to(&mut out).unwrap();
    out
}

fn assert_same(a: &PageSet, b: &PageSet) {
    assert_eq!(a.page_size(), b.page_size());
    assert_eq!(a.len(), b.len());
    assert_eq!(a.bytes(), b.bytes());
    assert_eq!(a.metas(), b.metas());
}

#[test]
fn layout_matches_the_documented_offsets() {
    let set = sample(3, 4096, true);
    let bytes = encode(&set);
    assert_eq!(&bytes[0..8], b"ZMEMPAGE");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 1);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 1, "metadata flag");
    assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), 4096);
    assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), 3);
    // Names "java", "node" (the empty name is index 0xffffffff): 2 + 4 + 2 + 4 bytes.
    assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().unwrap()), 12);
    assert_eq!(u64::from_le_bytes(bytes[32..40].try_into().unwrap()), 4096, "data offset");
    assert_eq!(bytes.len(), 4096 * 4);
    assert_eq!(&bytes[4096..], set.bytes());
    assert_eq!(
        u32::from_le_bytes(bytes[60..64].try_into().unwrap()),
        crc32fast::hash(&bytes[..60])
    );
    // First metadata record: vaddr, pid, name index 0, kind heap.
    let rec = &bytes[64 + 12..64 + 12 + 24];
    assert_eq!(u64::from_le_bytes(rec[0..8].try_into().unwrap()), 0x7f00_0000_0000);
    assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), 1000);
    assert_eq!(u32::from_le_bytes(rec[12..16].try_into().unwrap()), 0);
    assert_eq!(rec[16], 1);
    // Page checksums follow the 3 records.
    let crcs = 64 + 12 + 3 * 24;
    assert_eq!(
        u32::from_le_bytes(bytes[crcs..crcs + 4].try_into().unwrap()),
        crc32fast::hash(set.page(0))
    );
}

#[test]
fn round_trips_in_memory_with_and_without_metadata() {
    for (pages, ps, meta) in
        [(0, 4096, false), (0, 4096, true), (1, 512, true), (7, 4096, true), (5, 16384, false)]
    {
        let set = sample(pages, ps, meta);
        let back = PageSet::from_bytes(&encode(&set), &ReadOptions::default()).unwrap();
        assert_same(&set, &back);
        assert_eq!(back.meta(0).is_some(), meta && pages > 0);
    }
}

#[test]
fn round_trips_through_files_plain_zstd_mapped_and_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let set = sample(40, 4096, true);
    let plain = dir.path().join("set.zmp");
    let packed = dir.path().join("set.zmp.zst");
    set.save(&plain, Compression::None).unwrap();
    set.save(&packed, Compression::Zstd(3)).unwrap();
    assert!(std::fs::metadata(&packed).unwrap().len() < std::fs::metadata(&plain).unwrap().len());
    assert_eq!(&std::fs::read(&packed).unwrap()[..4], &format::ZSTD_MAGIC);

    for path in [&plain, &packed] {
        assert_same(&set, &PageSet::open(path).unwrap());
        let mapped = map(path, &ReadOptions::default()).unwrap();
        assert_same(&set, &mapped);
        assert_eq!(mapped.is_mapped(), path == &plain);

        let mut r = PageReader::open(path).unwrap();
        assert_eq!(r.page_count(), Some(40));
        let mut n = 0;
        while let Some(p) = r.next_page().unwrap() {
            assert_eq!(p.index, n as u64);
            assert_eq!(p.data, set.page(n));
            assert_eq!(p.meta, set.meta(n));
            n += 1;
        }
        assert_eq!(n, 40);
        assert!(r.next_page().unwrap().is_none());
    }
}

#[test]
fn raw_files_plain_and_zstd_are_pages() {
    let dir = tempfile::tempdir().unwrap();
    let set = sample(9, 4096, false);
    let raw = dir.path().join("pages.bin");
    set.save_raw(&raw).unwrap();
    assert_eq!(std::fs::read(&raw).unwrap(), set.bytes());
    assert_same(&set, &PageSet::open(&raw).unwrap());
    let mapped = map(&raw, &ReadOptions::default()).unwrap();
    assert!(mapped.is_mapped());
    assert_same(&set, &mapped);
    // The same bytes as 16 KiB pages: 36 KiB is not a whole number of them.
    let opts = ReadOptions { page_size: 16384, ..ReadOptions::default() };
    let err = PageSet::open_with(&raw, &opts).unwrap_err();
    assert_eq!(err.offset(), Some(9 * 4096));
    assert!(err.to_string().contains("partial"), "{err}");
    let err = map(&raw, &opts).unwrap_err();
    assert_eq!(err.offset(), Some(9 * 4096));
    // zstd-compressed raw pages.
    let zraw = dir.path().join("pages.bin.zst");
    std::fs::write(&zraw, zstd::encode_all(set.bytes(), 3).unwrap()).unwrap();
    assert_same(&set, &PageSet::open(&zraw).unwrap());
}

#[test]
fn a_raw_file_with_a_partial_last_page_is_rejected_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.bin");
    std::fs::write(&path, vec![7u8; 4096 * 2 + 100]).unwrap();
    let err = PageSet::open(&path).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("8292") && msg.contains("page 2") && msg.contains("8192"), "{msg}");
    // Streaming a pipe of the same bytes fails at the same place, at the end.
    let bytes = std::fs::read(&path).unwrap();
    let mut r = PageReader::new(&bytes[..], &ReadOptions::default()).unwrap();
    assert!(r.next_page().unwrap().is_some());
    assert!(r.next_page().unwrap().is_some());
    assert_eq!(r.next_page().unwrap_err().offset(), Some(8292));
}

#[test]
fn truncation_at_every_length_names_the_end() {
    let set = sample(3, 512, true);
    let bytes = encode(&set);
    for len in 8..bytes.len() {
        let err = PageSet::from_bytes(&bytes[..len], &ReadOptions::default()).unwrap_err();
        match &err {
            PagesError::Truncated { offset, .. } => assert_eq!(*offset, len as u64, "{err}"),
            other => panic!("length {len}: expected truncation, got {other}"),
        }
    }
}

#[test]
fn a_flipped_bit_in_a_page_names_that_page() {
    let set = sample(4, 4096, true);
    let mut bytes = encode(&set);
    let data = bytes.len() - 4 * 4096;
    bytes[data + 2 * 4096 + 123] ^= 0x10;
    let err = PageSet::from_bytes(&bytes, &ReadOptions::default()).unwrap_err();
    assert_eq!(err.offset(), Some((data + 2 * 4096) as u64));
    assert!(err.to_string().contains("page 2"), "{err}");
    // The same through a file and through the mapping.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.zmp");
    std::fs::write(&path, &bytes).unwrap();
    for err in [PageSet::open(&path).unwrap_err(), map(&path, &ReadOptions::default()).unwrap_err()]
    {
        assert_eq!(err.offset(), Some((data + 2 * 4096) as u64));
        assert!(err.to_string().contains("bad.zmp"), "{err}");
    }
}

#[test]
fn header_and_table_damage_is_caught() {
    let set = sample(2, 4096, true);
    let good = encode(&set);
    // Header byte: header checksum.
    let mut b = good.clone();
    b[13] ^= 1;
    assert_eq!(PageSet::from_bytes(&b, &ReadOptions::default()).unwrap_err().offset(), Some(60));
    // Metadata byte: tables checksum.
    let mut b = good.clone();
    b[80] ^= 1;
    assert_eq!(PageSet::from_bytes(&b, &ReadOptions::default()).unwrap_err().offset(), Some(64));
    // Trailing garbage.
    let mut b = good.clone();
    b.push(0);
    assert_eq!(
        PageSet::from_bytes(&b, &ReadOptions::default()).unwrap_err().offset(),
        Some(good.len() as u64)
    );
}

#[test]
fn a_size_limit_stops_huge_declarations_before_reading() {
    let set = sample(4, 4096, false);
    let opts = ReadOptions { max_bytes: 3 * 4096, ..ReadOptions::default() };
    let err = PageSet::from_bytes(&encode(&set), &opts).unwrap_err();
    assert!(matches!(err, PagesError::TooLarge { declared: 16384, limit: 12288 }), "{err}");
    let err = PageSet::from_bytes(set.bytes(), &opts).unwrap_err();
    assert!(matches!(err, PagesError::TooLarge { .. }), "{err}");
}

/// Issue 53: a 98 KB file claiming 2^28 checksums aborted the process, and 135 KB of zstd
/// declaring 2^20 zero pages took 4.2 GB. With the default options a declaration past the read
/// ceiling (half of MemAvailable) is refused from the header, plain or compressed, before any
/// table is read.
#[test]
fn the_default_ceiling_refuses_a_bomb_from_its_header() {
    let mut bytes = encode(&sample(1, 4096, false));
    let claim: u64 = 1 << 28;
    bytes[16..24].copy_from_slice(&claim.to_le_bytes());
    // The layout's data offset for that count: the 64-byte header and a 4-byte checksum a page,
    // rounded up to a page (a header that disagrees is refused as corrupt before its size).
    let offset = (64 + claim * 4).div_ceil(4096) * 4096;
    bytes[32..40].copy_from_slice(&offset.to_le_bytes());
    let crc = crc32fast::hash(&bytes[0..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    let opts = ReadOptions::default();
    assert!(opts.max_bytes < claim * 4096, "the ceiling {} is past 1 TiB", opts.max_bytes);
    let err = PageSet::from_bytes(&bytes, &opts).unwrap_err();
    assert!(
        matches!(err, PagesError::TooLarge { declared, .. } if declared == claim * 4096),
        "{err}"
    );
    assert!(err.to_string().contains("ZMEM_READ_CEILING"), "{err}");
    let packed = zstd::encode_all(&bytes[..], 3).unwrap();
    let err = PageSet::from_bytes(&packed, &opts).unwrap_err();
    assert!(matches!(err, PagesError::TooLarge { .. }), "{err}");
}

/// Issue 53's audit: 132 KB of zstd holding 2^20 zero pages (a declaration under the default
/// ceiling on a large machine) took 4.2 GB. A zstd stream that expands more than 1024-fold past
/// 64 MiB is refused while it is read, whatever it declares (here raw zero pages, which declare
/// nothing), before it holds more than the bound.
#[test]
fn a_zstd_stream_of_zero_pages_is_refused_while_read() {
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        std::io::Write::write_all(&mut enc, &zeros).unwrap();
    }
    let packed = enc.finish().unwrap();
    assert!(packed.len() < 64 << 10, "{} compressed bytes", packed.len());
    let err = PageSet::from_bytes(&packed, &ReadOptions::default()).unwrap_err();
    match &err {
        PagesError::Bomb { decompressed, compressed } => {
            assert!(*decompressed <= (64 << 20) + compressed * 1024 + (1 << 20), "{err}");
        }
        other => panic!("not refused as a bomb: {other}"),
    }
    assert!(err.to_string().contains("decompression bomb"), "{err}");
    // Real pages compress a few times: a set of generated pages reads back whole.
    let set =
        zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 512, 4096, 1).unwrap();
    let packed = zstd::encode_all(&encode(&set)[..], 3).unwrap();
    assert_eq!(PageSet::from_bytes(&packed, &ReadOptions::default()).unwrap().bytes(), set.bytes());
}

/// The audit's name-table bomb: a 2 KB zstd file of one page and 2^25 empty process names
/// took 1.6 GB. A name table with more names than pages is refused as it is read.
#[test]
fn a_name_table_with_more_names_than_pages_is_refused() {
    // Version 1, per-page metadata, one page of 4096 bytes, a 4-byte name table (two empty
    // names), the data at the layout's offset: 64 + 4 + 1 x (4 + 24) rounded up to a page.
    let mut h = [0u8; 64];
    h[0..8].copy_from_slice(&format::MAGIC);
    h[8..10].copy_from_slice(&1u16.to_le_bytes());
    h[10..12].copy_from_slice(&format::FLAG_META.to_le_bytes());
    h[12..16].copy_from_slice(&4096u32.to_le_bytes());
    h[16..24].copy_from_slice(&1u64.to_le_bytes());
    h[24..32].copy_from_slice(&4u64.to_le_bytes());
    h[32..40].copy_from_slice(&4096u64.to_le_bytes());
    let crc = crc32fast::hash(&h[0..60]);
    h[60..64].copy_from_slice(&crc.to_le_bytes());
    let mut bytes = h.to_vec();
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    let err = PageSet::from_bytes(&bytes, &ReadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("more names than pages"), "{err}");
    assert_eq!(err.offset(), Some(66), "{err}");
}

#[test]
fn zstd_corruption_names_an_offset() {
    let set = sample(8, 4096, true);
    let packed = zstd::encode_all(&encode(&set)[..], 3).unwrap();
    let cut = &packed[..packed.len() / 2];
    let err = PageSet::from_bytes(cut, &ReadOptions::default()).unwrap_err();
    assert!(err.offset().is_some(), "{err}");
    let mut flipped = packed.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0xff;
    let err = PageSet::from_bytes(&flipped, &ReadOptions::default()).unwrap_err();
    assert!(err.offset().is_some(), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_corruption_is_an_error_with_an_offset_never_a_panic(
        pages in 0usize..4,
        meta in any::<bool>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let set = sample(pages, 512, meta);
        let mut bytes = encode(&set);
        for (at, x) in &flips {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        // Flipping the magic turns the file into "raw pages"; that is the documented fallback.
        match PageSet::from_bytes(&bytes, &ReadOptions::default()) {
            Ok(back) => prop_assert!(bytes[..8] != format::MAGIC && back.meta(0).is_none()),
            Err(e) => {
                let named = e.offset().is_some() || matches!(e, PagesError::TooLarge { .. });
                prop_assert!(named, "{}", e);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_after_the_magic_never_panic(tail in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut bytes = format::MAGIC.to_vec();
        bytes.extend_from_slice(&tail);
        let opts = ReadOptions { max_bytes: 1 << 20, ..ReadOptions::default() };
        let err = PageSet::from_bytes(&bytes, &opts).unwrap_err();
        let named = err.offset().is_some() || matches!(err, PagesError::TooLarge { .. });
        prop_assert!(named, "{}", err);
    }

    #[test]
    fn streaming_equals_whole_reading(pages in 0usize..6, meta in any::<bool>()) {
        let set = sample(pages, 1024, meta);
        let bytes = encode(&set);
        let mut r = PageReader::new(&bytes[..], &ReadOptions::default()).unwrap();
        let mut got = Vec::new();
        let mut metas = Vec::new();
        while let Some(p) = r.next_page().unwrap() {
            got.extend_from_slice(p.data);
            metas.extend(p.meta.cloned());
        }
        prop_assert_eq!(&got[..], set.bytes());
        prop_assert_eq!(set.metas().map(<[PageMeta]>::to_vec).unwrap_or_default(), metas);
    }
}
