//! The evidence reader and the judge under arbitrary bytes: reading must never crash, and
//! findings that read must be judged to a report or an error, never a crash.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(f) = zmem_lab::findings::parse(data) {
        let _ = zmem_lab::judge::judge(&f);
    }
});
