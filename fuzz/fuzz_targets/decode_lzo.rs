#![no_main]
include!("../common/codec.rs");
// One decoder reads both bitstreams; each name also round-trips the input as a page.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_codec("lzo", data);
    fuzz_codec("lzo-rle", data);
    fuzz_tight_destinations("lzo", data);
    fuzz_tight_destinations("lzo-rle", data);
    // The raw fast loop and the bounds-checked decoder agree on arbitrary input, for an output
    // of a page and for one too small for most streams.
    for cap in [4096, 64] {
        let mut a = vec![0u8; cap];
        let mut b = vec![0u8; cap];
        let ra = zmem_comp::lzo::decompress(data, &mut a);
        let rb = zmem_comp::lzo::decompress_checked(data, &mut b);
        assert_eq!(ra, rb);
        if let Ok(k) = ra {
            assert_eq!(&a[..k], &b[..k]);
        }
    }
});
