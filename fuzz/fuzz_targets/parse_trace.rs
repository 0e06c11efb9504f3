//! The access-trace reader under arbitrary bytes. Each input is tried as it is and with both of
//! its CRC32 fields recomputed (so mutations reach the records instead of dying at the
//! checksums). Reading must never crash; an error must name the offset it found; a trace that
//! reads must be valid and re-encode to exactly the input bytes (the format has one encoding).
#![no_main]

use zmem_pages::trace::{HEADER_LEN, Trace};

fn check(data: &[u8]) {
    match Trace::read(data) {
        Ok(trace) => {
            trace.validate().expect("a trace that reads is valid");
            let mut out = Vec::new();
            trace.write_to(&mut out).expect("writing to a Vec");
            assert!(out == data, "re-encoding differs from the input");
        }
        Err(e) => assert!(e.offset().is_some(), "error without an offset: {e}"),
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= HEADER_LEN {
        let mut fixed = data.to_vec();
        let records = crc32fast::hash(&fixed[HEADER_LEN..]);
        fixed[32..36].copy_from_slice(&records.to_le_bytes());
        let header = crc32fast::hash(&fixed[..44]);
        fixed[44..48].copy_from_slice(&header.to_le_bytes());
        check(&fixed);
    }
});
