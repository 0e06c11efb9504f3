//! A process that reads a page file holds other processes' memory: from the first read on it is
//! not dumpable (no core dump, no ptrace or /proc/PID/mem access by its user's other processes).
//! One test in its own binary: the flag is process-wide and starts set in a fresh process.

use zmem_pages::private::dumpable;
use zmem_pages::{PageSet, ReadOptions};

#[test]
fn reading_pages_makes_the_process_not_dumpable() {
    assert!(dumpable(), "a fresh test process starts dumpable");
    // Generated pages in memory are not anyone's memory: building them changes nothing.
    let bytes = vec![7u8; 2 * 4096];
    let set = PageSet::from_raw(bytes.clone(), 4096).unwrap();
    assert!(dumpable());
    // Parsing a page file (here raw pages held in memory) is a read of captured memory.
    let back = PageSet::from_bytes(&bytes, &ReadOptions::default()).unwrap();
    assert_eq!(back.bytes(), set.bytes());
    assert!(!dumpable(), "still dumpable after reading a page file");
}
