//! Compressor round trips small enough for Miri, which is what checks the unchecked loads of the
//! match finder and the wild literal copies: every input shape that reaches them (short and long
//! literal runs, near and far matches, the `byU32` table past 64 KiB, a dictionary below and
//! above the page, the end-of-input bound, destinations from roomy to too small).

use super::*;

/// A deterministic generator (xorshift), so Miri and the normal run see the same inputs.
fn bytes(seed: u64, len: usize, alphabet: u8) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(alphabet)) as u8
        })
        .collect()
}

/// Memory-like input: runs of zeros, repeated words, counters and random bytes.
fn page_like(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let noise = bytes(seed, len, 255);
    let mut k = 0;
    while out.len() < len {
        let take = 1 + usize::from(noise[k % len]) % 60;
        match noise[(k + 1) % len] % 4 {
            0 => out.extend(std::iter::repeat_n(0u8, take)),
            1 => out.extend(noise[k % len..].iter().take(take)),
            2 => out.extend((0..take as u32).flat_map(|i| (i * 8 + 0x1000).to_le_bytes())),
            _ => {
                let back = out.len().saturating_sub(1 + usize::from(noise[(k + 2) % len]) * 7);
                let copy: Vec<u8> = out[back..].iter().copied().take(take).collect();
                out.extend(copy);
            }
        }
        k += 3;
    }
    out.truncate(len);
    out
}

fn inputs() -> Vec<Vec<u8>> {
    let long = if cfg!(miri) { LIMIT_64K_PLUS } else { 3 * 65536 };
    let mut v = vec![
        Vec::new(),
        vec![7u8; 12],
        vec![0u8; 4096],
        bytes(1, 4096, 255),
        bytes(2, 4096, 3),
        page_like(3, 4096),
        page_like(4, 8192),
        page_like(5, 300),
    ];
    v.push(page_like(6, long));
    v
}

/// Just past `LZ4_64Klimit`, the smallest input that takes the `byU32` table.
const LIMIT_64K_PLUS: usize = compress::LIMIT_64K + 40;

fn round_trip(stream: &mut Lz4, src: &[u8], prefix: &[u8]) {
    let mut dst = vec![0u8; compress_bound(src.len())];
    let n = stream.compress(src, &mut dst).expect("a compress_bound destination fits");
    let mut back = vec![0u8; src.len()];
    assert_eq!(decompress_block_checked(&dst[..n], &mut back, prefix), Ok(src.len()));
    assert!(back == src, "round trip differs at {} bytes", src.len());
    // Destinations from exactly the output size down: the same bytes, or a clean error.
    for cap in [n, n.saturating_sub(1), n / 2] {
        let mut tight = vec![0u8; cap];
        match stream.compress(src, &mut tight) {
            Ok(m) => assert_eq!(tight[..m], dst[..n], "cap {cap}"),
            Err(CompError::OutputTooSmall { .. }) => assert!(cap < n, "cap {cap} >= {n}"),
            Err(e) => panic!("cap {cap}: {e}"),
        }
    }
}

#[test]
fn compress_round_trips_every_input_shape() {
    let mut plain = Lz4::new(&Params::default()).unwrap();
    let mut fast = Lz4::new(&Params { level: Some(9), ..Params::default() }).unwrap();
    for src in inputs() {
        round_trip(&mut plain, &src, &[]);
        round_trip(&mut fast, &src, &[]);
    }
}

#[test]
fn compress_with_a_dictionary_round_trips() {
    // A dictionary shorter than 8 bytes (ignored), one of a few KiB (`dictSmall`), and one
    // longer than the 64 KiB window (only its end is used).
    let big = if cfg!(miri) { 65536 + 100 } else { 100_000 };
    for dict in [vec![1u8, 2, 3], page_like(7, 3000), page_like(8, big)] {
        let params = Params { dict: Some(Arc::from(dict.clone())), ..Params::default() };
        let mut stream = Lz4::new(&params).unwrap();
        let mut src = dict[dict.len().saturating_sub(900)..].to_vec();
        src.extend(page_like(9, 4096 - src.len()));
        round_trip(&mut stream, &src, &dict);
        round_trip(&mut stream, &page_like(10, 4096), &dict);
    }
}
