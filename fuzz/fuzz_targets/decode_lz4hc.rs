#![no_main]
include!("../common/codec.rs");
libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_codec("lz4hc", data));
