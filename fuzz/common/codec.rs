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
