//! Byte-level vectors (docs/REFERENCES.md [lzo-vectors]: output of the kernel algorithm), the
//! decoder on hand-made streams, and the compressor's output-space checks.

use super::*;
use proptest::prelude::*;

pub(super) fn compress_vec(variant: Variant, src: &[u8]) -> Vec<u8> {
    let mut dict = Box::new([0u16; D_SIZE]);
    let mut dst = vec![0u8; crate::compress_bound(src.len())];
    let n = compress(src, &mut dst, &mut dict, variant).unwrap();
    dst.truncate(n);
    dst
}

fn decompress_vec(src: &[u8], len: usize) -> Result<Vec<u8>, CompError> {
    let mut dst = vec![0u8; len];
    let n = decompress(src, &mut dst)?;
    dst.truncate(n);
    Ok(dst)
}

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect()
}

fn zeros_rle() -> Vec<u8> {
    let mut v = hex("11 01 02 00 00 00 00 00 1f fc ff ff 18 fc ff fc 00 02");
    v.extend([0u8; 20]);
    v.extend([0x11, 0, 0]);
    v
}

fn zeros_lzo() -> Vec<u8> {
    let mut v = hex("02 00 00 00 00 00 20");
    v.extend([0u8; 15]);
    v.extend(hex("da 10 00 0c"));
    v.extend([0u8; 15]);
    v.extend([0x11, 0, 0]);
    v
}

const HELLO: &[u8] = b"hello hello hello hello hello hello!";

fn hello_rle() -> Vec<u8> {
    hex(
        "11 01 03 68 65 6c 6c 6f 20 2a 14 00 0f 68 65 6c 6c 6f 20 68 65 6c 6c 6f 20 68 65 6c 6c 6f 21 11 00 00",
    )
}

#[test]
fn zero_page_vectors() {
    assert_eq!(zeros_rle().len(), 41);
    assert_eq!(zeros_lzo().len(), 44);
    assert_eq!(compress_vec(Variant::LzoRle, &[0u8; 4096]), zeros_rle());
    assert_eq!(compress_vec(Variant::Lzo, &[0u8; 4096]), zeros_lzo());
}

#[test]
fn hello_vectors() {
    assert_eq!(compress_vec(Variant::LzoRle, HELLO), hello_rle());
    assert_eq!(compress_vec(Variant::Lzo, HELLO), hello_rle()[2..]);
}

#[test]
fn vectors_decode() {
    assert_eq!(decompress_vec(&zeros_rle(), 4096).unwrap(), vec![0u8; 4096]);
    assert_eq!(decompress_vec(&zeros_lzo(), 4096).unwrap(), vec![0u8; 4096]);
    assert_eq!(decompress_vec(&hello_rle(), 64).unwrap(), HELLO);
    assert_eq!(decompress_vec(&hello_rle()[2..], 64).unwrap(), HELLO);
}

#[test]
fn short_inputs_are_one_literal_run() {
    // 20 bytes or fewer: first-byte literal count 17 + t, then the end marker.
    assert_eq!(compress_vec(Variant::Lzo, b""), [0x11, 0, 0]);
    assert_eq!(compress_vec(Variant::LzoRle, b""), [0x11, 1, 0x11, 0, 0]);
    assert_eq!(compress_vec(Variant::Lzo, b"abc"), [20, b'a', b'b', b'c', 0x11, 0, 0]);
    assert_eq!(decompress_vec(&[0x11, 0, 0], 0).unwrap(), b"");
    assert_eq!(decompress_vec(&[0x11, 1, 0x11, 0, 0], 0).unwrap(), b"");
}

#[test]
fn zero_runs_only_in_rle_streams() {
    // `18 fc ff 00` is a 4-byte zero run under version 1; without the header it is an M4 match
    // with a length extension, here reaching before the output start.
    let body = [0x15, 1, 2, 3, 4, 0x18, 0xfc, 0xff, 0x00, 0x11, 0, 0];
    let mut rle = vec![0x11, 1];
    rle.extend(body);
    assert_eq!(decompress_vec(&rle, 64).unwrap(), [1, 2, 3, 4, 0, 0, 0, 0]);
    assert!(matches!(decompress_vec(&body, 64), Err(CompError::Corrupt { .. })));
}

#[test]
fn decoder_rejects_malformed_streams() {
    let cases: &[(&[u8], &str)] = &[
        (&[], "empty"),
        (&[0x11, 0], "end marker cut"),
        (&[0x11, 0, 0, 0], "byte after end"),
        (&[0x12, 0, 0, 0], "bad end marker length"),
        (&[0x15, 1, 2, 3, 4], "no end marker"),
        (&[0x15, 1, 2, 3], "literals cut"),
        (&[0x13, 1, 2, 0x40 | 0x1c, 0xff, 0x11, 0, 0], "distance before start"),
    ];
    for (stream, why) in cases {
        let r = decompress_vec(stream, 64);
        assert!(matches!(r, Err(CompError::Corrupt { .. })), "{why}: {r:?}");
    }
    let mut small = [0u8; 4095];
    assert_eq!(
        decompress(&zeros_lzo(), &mut small),
        Err(CompError::OutputTooSmall { capacity: 4095 })
    );
}

#[test]
fn compress_reports_a_small_destination_and_fits_an_exact_one() {
    let page: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    for variant in [Variant::Lzo, Variant::LzoRle] {
        for src in [&page[..], &[0u8; 4096][..], HELLO] {
            let want = compress_vec(variant, src);
            let mut dict = Box::new([0u16; D_SIZE]);
            let mut exact = vec![0u8; want.len()];
            assert_eq!(compress(src, &mut exact, &mut dict, variant), Ok(want.len()));
            assert_eq!(exact, want);
            for cut in [0, 1, want.len() / 2, want.len() - 1] {
                let mut short = vec![0u8; cut];
                assert_eq!(
                    compress(src, &mut short, &mut dict, variant),
                    Err(CompError::OutputTooSmall { capacity: cut }),
                    "{variant:?} cut {cut}"
                );
            }
        }
    }
}

/// The zero-run scan must stop at the first non-zero byte and at the 2051 cap, wherever the
/// byte sits relative to the 8-byte steps; compare with a plain byte scan.
#[test]
fn zero_runs_of_every_length_round_trip() {
    for run in (0..80).chain(2040..2060).chain(4060..4096) {
        let mut page = vec![0xa5u8; 4096];
        page[5..5 + run.min(4091)].fill(0);
        for variant in [Variant::Lzo, Variant::LzoRle] {
            let c = compress_vec(variant, &page);
            assert_eq!(decompress_vec(&c, 4096).unwrap(), page, "{variant:?} run {run}");
        }
    }
}

/// A reference for the match length: byte by byte, with the end test every 8 bytes.
fn slow_match_len(src: &[u8], ip: usize, m_pos: usize, ip_end: usize) -> usize {
    let mut m_len = 4;
    loop {
        for _ in 0..8 {
            if src[ip + m_len] != src[m_pos + m_len] {
                return m_len;
            }
            m_len += 1;
        }
        if ip + m_len >= ip_end {
            return m_len;
        }
    }
}

proptest! {
    #[test]
    fn multi_chunk_inputs_round_trip(seed in any::<u64>(), len in 0xbf00usize..0x1_8100) {
        // Inputs longer than one chunk (0xc000 / 0xbfff) carry literals across chunks.
        let mut x = seed | 1;
        let src: Vec<u8> = (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (i / 512) % 3 == 0 { 0 } else if (i / 64) % 2 == 0 { (x % 4) as u8 } else { x as u8 }
            })
            .collect();
        for variant in [Variant::Lzo, Variant::LzoRle] {
            let c = compress_vec(variant, &src);
            prop_assert_eq!(decompress_vec(&c, len).unwrap(), src.clone());
        }
    }

    #[test]
    fn ctz_match_length_equals_byte_scan(a in proptest::collection::vec(0u8..3, 64..400), shift in 1usize..40) {
        // Where a 4-byte prefix matches, the 8-byte xor/ctz extension must agree with a byte scan,
        // in both compress paths.
        let src: Vec<u8> = a.iter().chain(a.iter()).copied().collect();
        let ip_end = src.len() - 20;
        for ip in shift..ip_end {
            let m_pos = ip - shift;
            if src[ip..ip + 4] != src[m_pos..m_pos + 4] {
                continue;
            }
            let want = slow_match_len(&src, ip, m_pos, ip_end);
            prop_assert_eq!(compress_checked::match_len(&src, ip, m_pos, ip_end), want);
            // SAFETY: `m_pos < ip < ip_end`, `ip_end + 20` bytes are readable from the start of
            // `src`, and the 4 bytes at `ip` and `m_pos` are equal (just checked).
            let fast = unsafe { compress_fast::match_len_fast(src.as_ptr(), ip, m_pos, ip_end) };
            prop_assert_eq!(fast, want);
        }
    }
}

/// Memory-like inputs: zero runs, short periods (distances 1-7, the decoders' pattern copies),
/// repeated words, small values and random bytes mixed, up to 70,000 bytes (several chunks, so
/// long repeats land far back as M4 matches).
pub(super) fn page_like() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        (1usize..3000).prop_map(|n| vec![0u8; n]),
        (proptest::collection::vec(any::<u8>(), 1..8), 1usize..300).prop_map(|(w, n)| w.repeat(n)),
        (any::<u32>(), 1usize..200).prop_map(|(w, n)| w.to_le_bytes().repeat(n)),
        proptest::collection::vec(any::<u8>(), 1..400),
        proptest::collection::vec(0u8..4, 1..400),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|parts| {
        let mut v: Vec<u8> = parts.concat();
        v.truncate(70_000);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The fast path (unchecked loads and writes) gives exactly the output of the safe,
    /// bounds-checked path, for both variants, up to and past one chunk.
    #[test]
    fn unchecked_loads_equal_checked_path(src in page_like()) {
        for variant in [Variant::Lzo, Variant::LzoRle] {
            let fast = compress_vec(variant, &src);
            let mut dict = Box::new([0u16; D_SIZE]);
            let mut dst = vec![0u8; crate::compress_bound(src.len())];
            let n = compress_checked(&src, &mut dst, &mut dict, variant).unwrap();
            prop_assert_eq!(&dst[..n], &fast[..]);
            prop_assert_eq!(decompress_vec(&fast, src.len()).unwrap(), src.clone());
            // The fast path's smallest destination.
            let mut tight = vec![0u8; compress_fast::fast_bound(variant, src.len())];
            prop_assert_eq!(compress(&src, &mut tight, &mut dict, variant), Ok(n));
            prop_assert_eq!(&tight[..n], &fast[..]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Destinations around the exact size (below the fast path's bound but for the shortest
    /// inputs, so `compress` takes the checked path): the fast path's bytes whenever they fit,
    /// `OutputTooSmall` whenever they do not.
    #[test]
    fn tight_destinations_equal_checked_path(src in page_like(), slack in 0usize..48, short in 1usize..48) {
        for variant in [Variant::Lzo, Variant::LzoRle] {
            let mut dict = Box::new([0u16; D_SIZE]);
            let want = &compress_vec(variant, &src)[..];
            let n = want.len();
            let mut dst = vec![0u8; n + slack];
            prop_assert_eq!(compress(&src, &mut dst, &mut dict, variant), Ok(n));
            prop_assert_eq!(&dst[..n], want);
            let cap = n.saturating_sub(short);
            let mut small = vec![0u8; cap];
            prop_assert_eq!(
                compress(&src, &mut small, &mut dict, variant),
                Err(CompError::OutputTooSmall { capacity: cap })
            );
        }
    }
}

/// Inputs that make the compressor expand as much as it can, to put the unchecked writes of the
/// fast path near the end of a destination of exactly [`compress_fast::fast_bound`] bytes: random
/// bytes (literals only, with long-run headers), 19 literals and a far 4-byte match (one byte of
/// overhead per 23), 4 literals and a 4-byte zero run (lzo-rle: one per 8), each at page and
/// multi-chunk sizes.
fn expanding_inputs() -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    // Under Miri, a page and two chunks (the third size adds nothing Miri would see).
    let lens: &[usize] =
        if cfg!(miri) { &[4096, 0xc000 + 100] } else { &[4096, 0xc000 + 4096, 0x1_8000 + 100] };
    for &len in lens {
        let random: Vec<u8> = (0..len).map(|_| rand() as u8).collect();
        let mut far = Vec::with_capacity(len + 32);
        while far.len() < len {
            far.extend((0..19).map(|_| rand() as u8));
            let at = far.len().saturating_sub(3000);
            let word: [u8; 4] = far[at..at + 4].try_into().unwrap();
            far.extend(word);
        }
        far.truncate(len);
        let mut zeros = Vec::with_capacity(len + 8);
        while zeros.len() < len {
            let r = rand().to_le_bytes();
            zeros.extend([0, 0, 0, 0, r[0] | 1, r[1] | 1, r[2] | 1, r[3] | 1]);
        }
        zeros.truncate(len);
        out.extend([random, far, zeros]);
    }
    out
}

/// The fast path (destination of at least `fast_bound` bytes, no room checks) on the inputs that
/// expand most, at exactly that size: the checked path's bytes, and (debug builds) its
/// invariant and room assertions hold. Under Miri this also proves no write leaves `dst`.
#[test]
fn fast_path_at_its_bound_equals_checked_path() {
    for src in expanding_inputs() {
        for variant in [Variant::Lzo, Variant::LzoRle] {
            let bound = compress_fast::fast_bound(variant, src.len());
            let mut dict = Box::new([0u16; D_SIZE]);
            let mut big = vec![0u8; crate::compress_bound(src.len())];
            let n = compress_checked(&src, &mut big, &mut dict, variant).unwrap();
            assert!(n <= bound, "{variant:?} {}: {n} > {bound}", src.len());
            for cap in [bound, bound - 1] {
                let mut dst = vec![0u8; cap];
                assert_eq!(compress(&src, &mut dst, &mut dict, variant), Ok(n));
                assert_eq!(dst[..n], big[..n], "{variant:?} {} cap {cap}", src.len());
            }
        }
    }
}
