//! The validate player's stdin stream (`zmem_validate::player`) under arbitrary bytes: the
//! header must be refused or read, and playing the records into a region must return (an error
//! for a short stream, a page outside the region, a bad header), never crash or write outside
//! the region. The region is bounded here as the real player's mapping would be by memory.
#![no_main]

use std::io::Cursor;

use zmem_validate::player::{Header, play};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut input = Cursor::new(data);
    let Ok(h) = Header::read(&mut input) else { return };
    if h.page_size > 1 << 16 || h.pages > 256 {
        return;
    }
    let mut region = vec![0u8; h.page_size * h.pages as usize];
    // No file is mapped here: a file read is refused as outside a file of 0 pages.
    let played = play(&mut input, &mut region, &[], h.page_size, h.records.min(1 << 16));
    if let Ok(p) = played {
        assert_eq!(p.file_reads, 0, "no file to read");
        assert_eq!(p.accesses, p.reads + p.writes, "every record is a read or a write");
        assert!(p.first_touches <= p.accesses);
    }
});
