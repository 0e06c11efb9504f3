//! lz4 and lz4hc specifics: dictionary round trips, the dictionary actually being used, level
//! checks, and the kernel's limited-output behaviour on a short destination.

use proptest::prelude::*;
use std::sync::Arc;
use zmem_comp::lz4::{Tables, compress, compress_bound, decompress_block};
use zmem_comp::{Params, create};

fn dict_params(dict: &[u8], level: Option<i32>) -> Params {
    Params { level, dict: Some(Arc::from(dict)), ..Params::default() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn dictionary_round_trip(
        dict in proptest::collection::vec(0u8..8, 0..3000),
        take in proptest::collection::vec((any::<prop::sample::Index>(), 1usize..200), 0..20),
        noise in proptest::collection::vec(any::<u8>(), 0..200),
        algo in prop_oneof![Just("lz4"), Just("lz4hc")],
    ) {
        // Pages made of pieces of the dictionary, so matches into it are likely.
        let mut page = noise;
        for (at, len) in take {
            if dict.is_empty() { break; }
            let s = at.index(dict.len());
            page.extend_from_slice(&dict[s..(s + len).min(dict.len())]);
        }
        let mut s = create(algo, &dict_params(&dict, None), 4096).unwrap();
        let mut comp = vec![0u8; zmem_comp::compress_bound(page.len())];
        let n = s.compress(&page, &mut comp).unwrap();
        let mut out = vec![0u8; page.len()];
        prop_assert_eq!(s.decompress(&comp[..n], &mut out), Ok(page.len()));
        prop_assert!(out == page);
    }

    #[test]
    fn every_acceleration_round_trips(input in proptest::collection::vec(0u8..4, 0..5000), accel in 1u32..70000) {
        let mut tables = Tables::new_boxed();
        let mut comp = vec![0u8; compress_bound(input.len())];
        let n = compress(&mut tables, &input, &mut comp, accel).unwrap();
        let mut out = vec![0u8; input.len()];
        prop_assert_eq!(decompress_block(&comp[..n], &mut out, &[]), Ok(input.len()));
        prop_assert!(out == input);
    }

    #[test]
    fn short_destination_fails_cleanly_or_matches(input in proptest::collection::vec(0u8..16, 0..3000), cut in 0usize..200) {
        let mut tables = Tables::new_boxed();
        let mut full = vec![0u8; compress_bound(input.len())];
        let n = compress(&mut tables, &input, &mut full, 1).unwrap();
        let mut short = vec![0u8; n.saturating_sub(cut)];
        // Either an error, or (when the limited-output checks pass) the very same bytes.
        if let Ok(m) = compress(&mut tables, &input, &mut short, 1) {
            prop_assert_eq!(&short[..m], &full[..n]);
        }
    }
}

#[test]
fn a_dictionary_is_used_and_needed() {
    let dict: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
    let page = dict[1000..3000].to_vec(); // incompressible alone, all in the dictionary
    for algo in ["lz4", "lz4hc"] {
        let mut plain = create(algo, &Params::default(), 4096).unwrap();
        let mut with = create(algo, &dict_params(&dict, None), 4096).unwrap();
        let mut a = vec![0u8; 8192];
        let mut b = vec![0u8; 8192];
        let na = plain.compress(&page, &mut a).unwrap();
        let nb = with.compress(&page, &mut b).unwrap();
        assert!(nb * 10 < na, "{algo}: {nb} with dictionary vs {na} without");
        let mut out = vec![0u8; page.len()];
        // Without the dictionary the block refers to bytes that are not there.
        assert!(plain.decompress(&b[..nb], &mut out).is_err(), "{algo}");
        assert_eq!(with.decompress(&b[..nb], &mut out), Ok(page.len()));
        assert_eq!(out, page);
    }
}

#[test]
fn levels_are_checked() {
    assert!(create("lz4", &Params::with_level(0), 4096).is_err());
    assert!(create("lz4", &Params::with_level(-3), 4096).is_err());
    assert!(create("lz4", &Params::with_level(8), 4096).is_ok());
    assert!(create("lz4hc", &Params::with_level(0), 4096).is_err());
    assert!(create("lz4hc", &Params::with_level(17), 4096).is_err());
    for level in 1..=16 {
        let mut s = create("lz4hc", &Params::with_level(level), 4096).unwrap();
        let page: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8 ^ (i / 700) as u8).collect();
        let mut comp = vec![0u8; 8192];
        let n = s.compress(&page, &mut comp).unwrap();
        let mut out = vec![0u8; 4096];
        assert_eq!(s.decompress(&comp[..n], &mut out), Ok(4096), "level {level}");
        assert_eq!(out, page);
    }
}

#[test]
fn higher_acceleration_never_compresses_better_on_text() {
    let text =
        b"the kernel compresses this page of text with lz4; the page of text repeats ".repeat(60);
    let mut tables = Tables::new_boxed();
    let mut comp = vec![0u8; compress_bound(text.len())];
    let n1 = compress(&mut tables, &text[..4096], &mut comp, 1).unwrap();
    let mut random: Vec<u8> =
        (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    random[2000..2100].copy_from_slice(&text[..100]);
    random[3000..3100].copy_from_slice(&text[..100]);
    let fast = compress(&mut tables, &random, &mut comp, 1).unwrap();
    let faster = compress(&mut tables, &random, &mut comp, 64).unwrap();
    assert!(n1 < 400, "repetitive text compresses: {n1}");
    // With acceleration 64 the search skips from the first probe on and misses the repeat.
    assert!(faster > fast, "{faster} vs {fast}");
}
