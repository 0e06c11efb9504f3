#![no_main]
include!("../common/codec.rs");

/// A dictionary for the second half of the target: zram's dictionary path (matches that start
/// in the dictionary and continue into the page).
const DICT: &[u8] = b"zram lz4 dictionary: the quick brown fox jumps over the lazy dog \
    0123456789abcdef \x00\x00\x00\x00\x7f\x00\x00\x00 repeated words words words words";

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_codec("lz4", data);
    fuzz_tight_destinations("lz4", data);
    // The same bytes against a dictionary: decoding must return, and a page must round-trip.
    let params = Params { dict: Some(DICT.into()), ..Params::default() };
    let mut stream = create("lz4", &params, 4096).expect("lz4 takes a dictionary");
    let mut out = vec![0u8; 8192];
    let _ = stream.decompress(data, &mut out);
    let input = &data[..data.len().min(4096)];
    let mut comp = vec![0u8; compress_bound(input.len())];
    let n = stream.compress(input, &mut comp).expect("compress with dictionary");
    let m = stream.decompress(&comp[..n], &mut out).expect("own output decodes");
    assert_eq!(&out[..m], input);
    // The fast decoder and the bounds-checked one agree on arbitrary input.
    let mut a = vec![0u8; 4096];
    let mut b = vec![0u8; 4096];
    let ra = zmem_comp::lz4::decompress_block(data, &mut a, DICT);
    let rb = zmem_comp::lz4::decompress_block_checked(data, &mut b, DICT);
    assert_eq!(ra, rb);
    if let Ok(k) = ra {
        assert_eq!(&a[..k], &b[..k]);
    }
});
