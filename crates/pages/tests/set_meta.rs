//! Page-set format version 2: set-level metadata and zram-slot pages. Round trips through every
//! reader, the exact layout (pinned by a committed fixture, which is also a fuzz seed), version 1
//! output unchanged, and corrupt sections reported at their offset.

use std::sync::Arc;

use zmem_pages::{
    Compression, MappingKind, PageMeta, PageReader, PageSet, PagesError, ReadOptions, SetMeta,
    format,
};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/setmeta-v2.zpages");

/// The fixture's set: 3 pages of 512 bytes from slots 0, 5 and 9 of `zram3`, with set metadata
/// whose values need escapes.
fn sample() -> PageSet {
    let ps = 512;
    let mut bytes = vec![0u8; 3 * ps];
    bytes[ps - 10..ps].copy_from_slice(b"SWAPSPACE2");
    for (i, b) in bytes[ps..].iter_mut().enumerate() {
        *b = (i % 7) as u8 + 1;
    }
    let comm: Arc<str> = Arc::from("zram3");
    let meta = [0u64, 5, 9]
        .iter()
        .map(|&slot| PageMeta {
            pid: 0,
            comm: comm.clone(),
            vaddr: slot,
            kind: MappingKind::ZramSlot,
        })
        .collect();
    let mut set_meta = SetMeta::new();
    set_meta.insert("source".into(), "zram".into());
    set_meta.insert("zram.comp_algorithm".into(), "lzo [lzo-rle] lz4".into());
    set_meta.insert("zram.mm_stat".into(), "  1 2 3".into());
    set_meta.insert("note".into(), "two\nlines and a \\ backslash = é".into());
    set_meta.insert("empty".into(), String::new());
    PageSet::from_raw(bytes, ps).unwrap().with_meta(meta).unwrap().with_set_meta(set_meta).unwrap()
}

fn encode(set: &PageSet) -> Vec<u8> {
    let mut out = Vec::new();
    set.write_to(&mut out).unwrap();
    out
}

fn opts() -> ReadOptions {
    ReadOptions { page_size: 512, max_bytes: u64::MAX }
}

fn assert_same(a: &PageSet, b: &PageSet) {
    assert_eq!(a.bytes(), b.bytes());
    assert_eq!(a.metas(), b.metas());
    assert_eq!(a.set_meta(), b.set_meta());
}

#[test]
fn layout_is_the_documented_one() {
    let set = sample();
    let bytes = encode(&set);
    assert_eq!(&bytes[0..8], b"ZMEMPAGE");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2, "version");
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 3, "flags: page and set metadata");
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let names_len = u64_at(24);
    assert_eq!(names_len, 2 + 5, "one name, zram3");
    let set_len = u64_at(44) as usize;
    assert!(bytes[52..60].iter().all(|&b| b == 0));
    let section = &bytes[64 + names_len as usize..64 + names_len as usize + set_len];
    let text = std::str::from_utf8(section).unwrap();
    assert_eq!(
        text,
        "empty=\nnote=two\\nlines and a \\\\ backslash = é\nsource=zram\n\
         zram.comp_algorithm=lzo [lzo-rle] lz4\nzram.mm_stat=  1 2 3\n"
    );
    // Then the 24-byte records: slot 5 is the second, kind 4.
    let rec = 64 + names_len as usize + set_len + 24;
    assert_eq!(u64_at(rec), 5);
    assert_eq!(bytes[rec + 16], 4);
    let tables_end = 64 + names_len as usize + set_len + 3 * 24 + 3 * 4;
    let crc = crc32fast::hash(&bytes[64..tables_end]);
    assert_eq!(u32::from_le_bytes(bytes[40..44].try_into().unwrap()), crc);
    assert_eq!(u64_at(32), tables_end.div_ceil(512) as u64 * 512);
    assert_eq!(bytes.len(), u64_at(32) as usize + 3 * 512);
}

#[test]
fn the_committed_fixture_is_what_the_writer_writes() {
    let bytes = encode(&sample());
    if std::env::var_os("ZMEM_BLESS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(FIXTURE).parent().unwrap()).unwrap();
        std::fs::write(FIXTURE, &bytes).unwrap();
    }
    let committed = std::fs::read(FIXTURE).expect("fixture (ZMEM_BLESS=1 writes it)");
    assert_eq!(committed, bytes, "format changed: the fixture pins version 2's bytes");
    assert_same(&PageSet::from_bytes(&committed, &opts()).unwrap(), &sample());
}

#[test]
fn every_reader_gives_the_set_metadata_back() {
    let set = sample();
    let bytes = encode(&set);
    assert_same(&PageSet::from_bytes(&bytes, &opts()).unwrap(), &set);
    let r = PageReader::new(&bytes[..], &opts()).unwrap();
    assert_eq!(r.set_meta(), set.set_meta());
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("s.zpages");
    set.save(&plain, Compression::None).unwrap();
    // SAFETY: the file is in this test's own temporary directory, never changed while mapped.
    let mapped = unsafe { PageSet::map(&plain, &opts()) }.unwrap();
    assert!(mapped.is_mapped());
    assert_same(&mapped, &set);
    let zst = dir.path().join("s.zpages.zst");
    set.save(&zst, Compression::Zstd(3)).unwrap();
    assert_same(&PageSet::open_with(&zst, &opts()).unwrap(), &set);
}

#[test]
fn sets_without_it_are_still_written_as_version_1() {
    let comm: Arc<str> = Arc::from("java");
    let meta = (0..2)
        .map(|i| PageMeta { pid: 7, comm: comm.clone(), vaddr: i * 4096, kind: MappingKind::Heap })
        .collect();
    let set = PageSet::from_raw(vec![1u8; 2 * 512], 512).unwrap().with_meta(meta).unwrap();
    let bytes = encode(&set);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 1);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 1);
    assert!(bytes[44..60].iter().all(|&b| b == 0));
    assert_eq!(PageSet::from_bytes(&bytes, &opts()).unwrap().set_meta(), None);
    // An empty map is still set metadata: version 2, a zero-length section.
    let set = set.with_set_meta(SetMeta::new()).unwrap();
    let bytes = encode(&set);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2);
    assert_eq!(PageSet::from_bytes(&bytes, &opts()).unwrap().set_meta(), Some(&SetMeta::new()));
}

#[test]
fn invalid_keys_are_refused_when_attached() {
    for key in ["", "a=b", "sp ace", "back\\slash", "new\nline"] {
        let mut m = SetMeta::new();
        m.insert(key.into(), "v".into());
        let set = PageSet::from_raw(vec![0u8; 512], 512).unwrap();
        assert!(set.with_set_meta(m).is_err(), "{key:?}");
    }
}

/// Rewrites a header field and both checksums so that only the change itself is wrong.
fn patch(bytes: &mut [u8], f: impl FnOnce(&mut [u8])) {
    let names_len = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
    let set_len = u64::from_le_bytes(bytes[44..52].try_into().unwrap()) as usize;
    let end = 64 + names_len + set_len + 3 * 28;
    f(bytes);
    let crc = crc32fast::hash(&bytes[64..end]);
    bytes[40..44].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32fast::hash(&bytes[0..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
}

fn corrupt_at(bytes: &[u8]) -> (u64, String) {
    match PageSet::from_bytes(bytes, &opts()) {
        Err(PagesError::Corrupt { offset, msg, .. }) => (offset, msg),
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

#[test]
fn corrupt_sections_are_reported_where_they_are() {
    let good = encode(&sample());
    let start = 64 + 7;
    // Keys out of order: "empty" becomes "zmpty", which sorts after "note".
    let mut b = good.clone();
    patch(&mut b, |b| b[start] = b'z');
    let (offset, msg) = corrupt_at(&b);
    assert_eq!(offset, start as u64 + "zmpty=\n".len() as u64, "{msg}");
    assert!(msg.contains("out of order"), "{msg}");
    // A bad escape.
    let mut b = good.clone();
    let note = start + "empty=\nnote=two".len();
    patch(&mut b, |b| b[note + 1] = b'x');
    let (offset, msg) = corrupt_at(&b);
    assert_eq!(offset, note as u64, "{msg}");
    // A line without '='.
    let mut b = good.clone();
    patch(&mut b, |b| b[start + 5] = b'_');
    let (offset, msg) = corrupt_at(&b);
    assert_eq!(offset, start as u64, "{msg}");
    // Not UTF-8 in a value.
    let mut b = good.clone();
    patch(&mut b, |b| b[start + "empty=\nnote=".len()] = 0xff);
    assert!(corrupt_at(&b).1.contains("UTF-8"));
    // The set-metadata flag in a version 1 file.
    let mut b = good.clone();
    patch(&mut b, |b| b[8] = 1);
    assert_eq!(corrupt_at(&b).0, 10);
    // A version from the future.
    let mut b = good.clone();
    patch(&mut b, |b| b[8] = 3);
    assert_eq!(corrupt_at(&b).0, 8);
    // A section longer than the format allows.
    let mut b = good.clone();
    patch(&mut b, |b| b[44..52].copy_from_slice(&(format::MAX_SET_META_LEN + 1).to_le_bytes()));
    assert_eq!(corrupt_at(&b).0, 44);
    // A flipped bit in the section fails the tables checksum.
    let mut b = good;
    b[start + 1] ^= 1;
    assert!(corrupt_at(&b).1.contains("checksum"));
}

#[test]
fn truncation_inside_the_section_names_the_offset() {
    let good = encode(&sample());
    let cut = &good[..64 + 7 + 10];
    match PageSet::from_bytes(cut, &opts()) {
        Err(PagesError::Truncated { offset, what, .. }) => {
            assert_eq!(offset, cut.len() as u64);
            assert!(what.contains("set metadata"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}
