// Shared body of the decoder targets, included by each one with `include!`.
use zmem_comp::{Params, compress_bound, create};

fn fuzz_codec(algo: &str, data: &[u8]) {
    let mut stream = create(algo, &Params::default(), 4096).expect("registered algorithm");
    // Arbitrary bytes as compressed input: any result but a crash is acceptable.
    let mut out = vec![0u8; 8192];
    let _ = stream.decompress(data, &mut out);
    // The same bytes as a page: must come back unchanged.
    let input = &data[..data.len().min(4096)];
    let mut comp = vec![0u8; compress_bound(input.len())];
    if let Ok(n) = stream.compress(input, &mut comp) {
        let m = stream.decompress(&comp[..n], &mut out).expect("own output decodes");
        assert_eq!(&out[..m], input);
    }
}

/// For the kernel-exact compressors, whose roomy destinations take unchecked paths: the same
/// page compressed into a destination of exactly its output size gives the same bytes (the
/// checked paths), and one byte less is a clean `OutputTooSmall`.
#[allow(dead_code)] // used by the lzo and lz4 targets only
fn fuzz_tight_destinations(algo: &str, data: &[u8]) {
    let mut stream = create(algo, &Params::default(), 4096).expect("registered algorithm");
    let input = &data[..data.len().min(4096)];
    let mut roomy = vec![0u8; compress_bound(input.len())];
    let n = stream.compress(input, &mut roomy).expect("a roomy destination fits");
    let mut exact = vec![0u8; n];
    assert_eq!(stream.compress(input, &mut exact).expect("an exact destination fits"), n);
    assert_eq!(exact, roomy[..n]);
    if n > 0 {
        let mut short = vec![0u8; n - 1];
        assert!(matches!(
            stream.compress(input, &mut short),
            Err(zmem_comp::CompError::OutputTooSmall { .. })
        ));
    }
}
