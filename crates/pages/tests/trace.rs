//! Traces: format round trip, corruption, and the generator's shape.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use zmem_pages::PagesError;
use zmem_pages::trace::generate::{Options, generate};
use zmem_pages::trace::{Access, HEADER_LEN, Op, RECORD_LEN, Trace, TraceReader};

fn small() -> Options {
    Options {
        pages: 1000,
        accesses: 20_000,
        working_set: 200,
        phases: 4,
        bursts_per_phase: 2,
        seed: 7,
        ..Options::default()
    }
}

fn encode(t: &Trace) -> Vec<u8> {
    let mut v = Vec::new();
    t.write_to(&mut v).unwrap();
    v
}

#[test]
fn round_trips_and_has_the_documented_layout() {
    let t = generate(&small()).unwrap();
    let bytes = encode(&t);
    assert_eq!(bytes.len(), HEADER_LEN + RECORD_LEN * t.accesses.len());
    assert_eq!(&bytes[..8], b"ZMEMTRCE");
    assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), 20_000);
    assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().unwrap()), 1000);
    let first = &bytes[HEADER_LEN..HEADER_LEN + RECORD_LEN];
    assert_eq!(u64::from_le_bytes(first[..8].try_into().unwrap()), t.accesses[0].time_ns);
    assert_eq!(u32::from_le_bytes(first[8..12].try_into().unwrap()), t.accesses[0].page);
    assert_eq!(Trace::read(&bytes[..]).unwrap(), t);
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    assert_eq!((r.len(), r.page_count()), (20_000, 1000));
    let mut n = 0;
    while let Some(a) = r.next_access().unwrap() {
        assert_eq!(a, t.accesses[n]);
        n += 1;
    }
    assert_eq!(n, 20_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    t.save(&path).unwrap();
    assert_eq!(Trace::open(&path).unwrap(), t);
}

#[test]
fn writing_refuses_an_invalid_trace() {
    let back = Trace {
        page_count: 10,
        file_pages: 0,
        accesses: vec![
            Access { time_ns: 5, page: 1, op: Op::Read },
            Access { time_ns: 4, page: 1, op: Op::Read },
        ],
    };
    assert!(back.write_to(&mut Vec::new()).is_err());
    let out_of_range = Trace {
        page_count: 1,
        file_pages: 0,
        accesses: vec![Access { time_ns: 0, page: 1, op: Op::Write }],
    };
    assert!(out_of_range.write_to(&mut Vec::new()).is_err());
}

#[test]
fn truncation_and_bad_records_name_offsets() {
    let t = generate(&Options { accesses: 50, ..small() }).unwrap();
    let bytes = encode(&t);
    for len in 0..bytes.len() {
        let err = Trace::read(&bytes[..len]).unwrap_err();
        assert!(
            matches!(err, PagesError::Truncated { offset, .. } if offset == len as u64),
            "{len}: {err}"
        );
    }
    // An op byte of 2 in record 3 (records are checked before the records checksum).
    let mut b = bytes.clone();
    let at = HEADER_LEN + 3 * RECORD_LEN + 12;
    b[at] = 2;
    assert_eq!(Trace::read(&b[..]).unwrap_err().offset(), Some(at as u64));
    // A flipped time bit somewhere: either order breaks or the checksum does.
    let mut b = bytes.clone();
    b[HEADER_LEN + 10 * RECORD_LEN] ^= 1;
    assert!(Trace::read(&b[..]).unwrap_err().offset().is_some());
}

#[test]
fn generation_is_deterministic_per_seed() {
    let a = generate(&small()).unwrap();
    assert_eq!(a, generate(&small()).unwrap());
    assert_ne!(a, generate(&Options { seed: 8, ..small() }).unwrap());
}

#[test]
fn popularity_is_skewed_phases_change_and_idle_gaps_exist() {
    let o = small();
    let t = generate(&o).unwrap();
    assert_eq!(t.accesses.len() as u64, o.accesses);
    let per_phase = (o.accesses / u64::from(o.phases)) as usize;
    let mut sets = Vec::new();
    for phase in t.accesses.chunks(per_phase) {
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for a in phase {
            *counts.entry(a.page).or_default() += 1;
        }
        // At most the working set is touched in a phase.
        assert!(counts.len() as u64 <= o.working_set);
        // Zipf s=0.99 over 200 ranks: the hottest page takes ~17 % of accesses; uniform would be 0.5 %.
        let top = *counts.values().max().unwrap();
        assert!(top * 10 > phase.len(), "hottest page {top} of {}", phase.len());
        sets.push(counts.keys().copied().collect::<HashSet<u32>>());
    }
    // Each phase's working set differs from the previous one's.
    for w in sets.windows(2) {
        let common = w[0].intersection(&w[1]).count();
        assert!(common < w[0].len() / 2, "phases share {common} of {} pages", w[0].len());
    }
    // Idle gaps: 8 bursts, each followed by at least idle_ns of silence; within bursts the gaps
    // are microseconds.
    let long_gaps =
        t.accesses.windows(2).filter(|w| w[1].time_ns - w[0].time_ns >= o.idle_ns).count();
    assert_eq!(long_gaps, (o.phases * o.bursts_per_phase) as usize - 1);
    let writes =
        t.accesses.iter().filter(|a| a.op == Op::Write).count() as f64 / t.accesses.len() as f64;
    assert!((writes - o.write_fraction).abs() < 0.03, "write fraction {writes}");
}

proptest! {
    #[test]
    fn corrupted_traces_are_errors_with_offsets_never_panics(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let t = generate(&Options { accesses: 40, ..small() }).unwrap();
        let mut bytes = encode(&t);
        let mut seen = HashSet::new();
        for (at, x) in &flips {
            let i = at.index(bytes.len());
            // Distinct positions, so two flips never cancel.
            if seen.insert(i) {
                bytes[i] ^= x;
            }
        }
        // Every flip is caught (a checksum covers every byte), and so is any cut.
        let e = Trace::read(&bytes[..]).unwrap_err();
        prop_assert!(e.offset().is_some(), "{}", e);
        let e = Trace::read(&encode(&t)[..cut.index(bytes.len())]).unwrap_err();
        prop_assert!(e.offset().is_some(), "{}", e);
    }
}

/// Version 2: a trace with file reads carries its file page count at offset 36 and op 2; one
/// without is written as version 1, the reserved bytes still zero.
#[test]
fn file_reads_round_trip_in_version_2_and_leave_version_1_as_it_was() {
    let t = generate(&Options { file_pages: 300, file_fraction: 0.25, ..small() }).unwrap();
    let bytes = encode(&t);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2);
    assert_eq!(u64::from_le_bytes(bytes[36..44].try_into().unwrap()), 300);
    assert_eq!(Trace::read(&bytes[..]).unwrap(), t);
    let file: Vec<&Access> = t.accesses.iter().filter(|a| a.op == Op::FileRead).collect();
    assert!(file.iter().all(|a| a.page < 300));
    let share = file.len() as f64 / t.accesses.len() as f64;
    assert!((0.23..0.27).contains(&share), "{share}");
    assert!(file.iter().map(|a| a.page).collect::<HashSet<_>>().len() > 100, "Zipf over the file");
    let plain = encode(&generate(&small()).unwrap());
    assert_eq!(u16::from_le_bytes([plain[8], plain[9]]), 1);
    assert!(plain[36..44].iter().all(|&b| b == 0));
}

/// A version 1 trace has no file: op 2 is unknown there, and a file read's id must be below
/// the file page count, not the anonymous one.
#[test]
fn a_file_read_is_checked_against_its_own_page_count() {
    let read = |page| Access { time_ns: 0, page, op: Op::FileRead };
    let no_file = Trace { page_count: 10, file_pages: 0, accesses: vec![read(0)] };
    assert!(no_file.write_to(&mut Vec::new()).is_err(), "no file pages: no file read");
    let t = Trace { page_count: 10, file_pages: 4, accesses: vec![read(3)] };
    let mut bytes = encode(&t);
    assert_eq!(Trace::read(&bytes[..]).unwrap(), t);
    assert!(Trace { accesses: vec![read(4)], ..t.clone() }.write_to(&mut Vec::new()).is_err());
    // Make it version 1 with the header checksum mended: op 2 is then corrupt.
    bytes[8] = 1;
    bytes[36..44].fill(0);
    let crc = crc32fast::hash(&bytes[..44]);
    bytes[44..48].copy_from_slice(&crc.to_le_bytes());
    let e = Trace::read(&bytes[..]).unwrap_err().to_string();
    assert!(e.contains("unknown op 2"), "{e}");
}

/// One encoding per trace: a version 2 header must give a file page count (else the trace is
/// version 1's), so reading and writing give back the same bytes.
#[test]
fn version_2_without_file_pages_is_refused() {
    let t = Trace { page_count: 4, file_pages: 0, accesses: vec![] };
    let mut bytes = encode(&t);
    bytes[8] = 2;
    let crc = crc32fast::hash(&bytes[..44]);
    bytes[44..48].copy_from_slice(&crc.to_le_bytes());
    let e = Trace::read(&bytes[..]).unwrap_err();
    assert_eq!(e.offset(), Some(36), "{e}");
}
