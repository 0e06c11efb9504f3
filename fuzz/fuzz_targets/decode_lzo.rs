#![no_main]
include!("../common/codec.rs");
// One decoder reads both bitstreams; each name also round-trips the input as a page.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_codec("lzo", data);
    fuzz_codec("lzo-rle", data);
});
