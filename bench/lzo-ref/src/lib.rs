//! Bench-only helpers: the few liblzo2 entry points zmem is compared with, page loading, and the
//! deterministic synthetic page set of the fixture.

use std::os::raw::{c_int, c_uint, c_void};

/// `lzo_uint` is `unsigned long` (pointer-sized on the 64-bit Linux targets this runs on).
type LzoUint = usize;

unsafe extern "C" {
    fn __lzo_init_v2(
        v: c_uint,
        s1: c_int,
        s2: c_int,
        s3: c_int,
        s4: c_int,
        s5: c_int,
        s6: c_int,
        s7: c_int,
        s8: c_int,
        s9: c_int,
    ) -> c_int;
    fn lzo_version_string() -> *const std::os::raw::c_char;
    fn lzo1x_1_15_compress(
        src: *const u8,
        src_len: LzoUint,
        dst: *mut u8,
        dst_len: *mut LzoUint,
        wrkmem: *mut c_void,
    ) -> c_int;
    fn lzo1x_decompress_safe(
        src: *const u8,
        src_len: LzoUint,
        dst: *mut u8,
        dst_len: *mut LzoUint,
        wrkmem: *mut c_void,
    ) -> c_int;
}

/// `LZO1X_1_15_MEM_COMPRESS`: 32768 dictionary entries of `lzo_sizeof_dict_t` (a pointer).
const MEM_COMPRESS: usize = 32768 * std::mem::size_of::<*const u8>();

/// liblzo2 with its work memory.
pub struct LibLzo {
    wrkmem: Vec<u64>,
}

impl LibLzo {
    /// Initialises the library (`lzo_init()`: checks the type sizes this binding assumes).
    pub fn new() -> Self {
        let p = std::mem::size_of::<*const u8>() as c_int;
        // SAFETY: plain call with integer arguments; the values mirror the lzo_init() macro of
        // LZO 2.10 (LZO_VERSION 0x20a0; sizeof lzo_callback_t is 6 pointers = 48 bytes on LP64).
        let r = unsafe { __lzo_init_v2(0x20a0, 2, 4, 8, 4, p, p, p, p, 6 * p) };
        assert_eq!(r, 0, "lzo_init failed ({r}): type sizes differ from this binding");
        LibLzo { wrkmem: vec![0u64; MEM_COMPRESS / 8] }
    }

    /// The library's version string.
    pub fn version(&self) -> String {
        // SAFETY: liblzo2 returns a pointer to a static NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(lzo_version_string()) }.to_string_lossy().into_owned()
    }

    /// `lzo1x_1_15_compress`; `dst` must hold `src.len() + src.len() / 16 + 64 + 3` bytes.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        assert!(dst.len() >= src.len() + src.len() / 16 + 64 + 3);
        let mut out_len: LzoUint = 0;
        // SAFETY: src/dst are valid for their lengths, dst meets LZO's worst-case bound (asserted
        // above), wrkmem has LZO1X_1_15_MEM_COMPRESS bytes, aligned to 8.
        let r = unsafe {
            lzo1x_1_15_compress(
                src.as_ptr(),
                src.len(),
                dst.as_mut_ptr(),
                &mut out_len,
                self.wrkmem.as_mut_ptr().cast(),
            )
        };
        assert_eq!(r, 0, "lzo1x_1_15_compress failed: {r}");
        out_len
    }

    /// `lzo1x_decompress_safe`; returns the decoded length or liblzo2's error code.
    pub fn decompress_safe(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, i32> {
        let mut out_len: LzoUint = dst.len();
        // SAFETY: src/dst valid for their lengths; the safe decoder checks both bounds (out_len
        // carries dst's capacity in) and needs no work memory.
        let r = unsafe {
            lzo1x_decompress_safe(
                src.as_ptr(),
                src.len(),
                dst.as_mut_ptr(),
                &mut out_len,
                std::ptr::null_mut(),
            )
        };
        if r == 0 { Ok(out_len) } else { Err(r) }
    }
}

impl Default for LibLzo {
    fn default() -> Self {
        Self::new()
    }
}

/// A file of pages, cut into 4 KiB pages (a short last piece is dropped).
pub fn read_pages(path: &str) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    data.chunks_exact(4096).map(<[u8]>::to_vec).collect()
}

/// All 8-byte words equal: zram stores such pages without compressing them.
pub fn same_filled(page: &[u8]) -> bool {
    let first = &page[..8];
    page.chunks_exact(8).all(|w| w == first)
}

/// xorshift64: a fixed, dependency-free generator so the fixture is reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the", "page", "memory", "compressed", "zram", "swap", "kernel", "of", "and", "a", "to",
    "in", "is", "that", "for", "it", "with", "as", "was", "on", "function", "return", "struct",
    "int", "static", "void", "const", "if", "else", "while", "null", "true", "false", "value",
];

fn text(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 16);
    while v.len() < len {
        v.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
        v.push(if rng.below(12) == 0 { b'\n' } else { b' ' });
    }
    v.truncate(len);
    v
}

/// The synthetic part of the fixture: (label, input) pairs, 4 KiB unless the label says so.
pub fn synthetic_pages() -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng::new(0x5eed);
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let p = 4096;

    out.push(("zeros".into(), vec![0; p]));
    out.push(("ones".into(), vec![0xff; p]));
    for density in [1u64, 4, 16, 64, 256, 1024] {
        let mut v = vec![0u8; p];
        for _ in 0..(p as u64 * density / 4096).max(1) {
            let at = rng.below(p as u64) as usize;
            v[at] = rng.next() as u8 | 1;
        }
        out.push((format!("sparse-{density}"), v));
    }
    // Zero runs of many lengths at several offsets, in text or low-entropy surroundings: the lzo-rle run
    // cap (2051), its 8-byte scan steps, the 20-byte tail and M2/M3/length-extension boundaries.
    let runs = [
        1usize, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 19, 20, 21, 31, 32, 33, 34, 35, 60,
        254, 255, 256, 257, 259, 260, 261, 264, 265, 511, 1000, 2046, 2047, 2050, 2051, 2052,
        2053, 2055, 2056, 2060, 2100, 4000, 4070, 4075, 4076, 4080, 4090,
    ];
    for (i, &run) in runs.iter().enumerate() {
        // Text around the runs keeps the pages compressible (not huge), so the kernel stores them
        // compressed and its compr_data_size covers them.
        let mut v = if i % 4 == 3 {
            (0..p).map(|_| rng.below(16) as u8 + 1).collect()
        } else {
            text(&mut rng, p)
        };
        let at = [0usize, 1, 5, 6, 9, 100, 3][i % 7].min(p - run);
        v[at..at + run].fill(0);
        if i % 3 == 0 {
            // A second run near the end, reaching into the tail.
            let end = p - (i % 25);
            let start = end.saturating_sub(run.min(300));
            v[start..end].fill(0);
        }
        out.push((format!("zero-run-{run}@{at}"), v));
    }
    for i in 0..8 {
        out.push((format!("text-{i}"), text(&mut rng, p)));
    }
    for i in 0..8 {
        // 64-bit pointers into a few heap regions, some NULL, some small tags.
        let bases = [0x0000_7f3a_1c00_0000u64, 0x0000_5581_2e40_0000, 0x0000_7ffd_9a00_0000];
        let v: Vec<u8> = (0..p / 8)
            .flat_map(|_| {
                let w = match rng.below(8) {
                    0 => 0,
                    1 => rng.below(64),
                    _ => bases[rng.below(3) as usize] + rng.below(1 << (12 + i)) * 8,
                };
                w.to_le_bytes()
            })
            .collect();
        out.push((format!("pointers-{i}"), v));
    }
    for bits in [1u32, 3, 7, 12, 20] {
        let v: Vec<u8> = (0..p / 4).flat_map(|_| (rng.below(1 << bits) as u32).to_le_bytes()).collect();
        out.push((format!("small-u32-{bits}bit"), v));
    }
    for i in 0..4 {
        let v: Vec<u8> = (0..p).map(|_| rng.next() as u8).collect();
        out.push((format!("random-{i}"), v));
    }
    for alphabet in [2u64, 3, 4, 8, 16, 64] {
        let v: Vec<u8> = (0..p).map(|_| rng.below(alphabet) as u8).collect();
        out.push((format!("low-entropy-{alphabet}"), v));
    }
    for period in [1usize, 2, 3, 5, 7, 8, 9, 13, 64, 100, 2049] {
        let pat: Vec<u8> = (0..period).map(|_| rng.next() as u8).collect();
        let v: Vec<u8> = pat.iter().copied().cycle().take(p).collect();
        out.push((format!("period-{period}"), v));
    }
    // Half random, half repeated: far matches (M3 distances up to 4 KiB).
    for i in 0..4 {
        let half: Vec<u8> = (0..p / 2).map(|_| rng.below(200) as u8).collect();
        let mut v = half.clone();
        v.extend(&half);
        v.rotate_left(i * 17);
        out.push((format!("repeat-half-{i}"), v));
    }
    out
}

/// Odd lengths around the literal-only limit (20), the first-byte literal form (238), and the
/// chunk size (0xc000), cut from `source` (at least 100,000 bytes).
pub fn odd_length_inputs(source: &[u8]) -> Vec<(String, Vec<u8>)> {
    [0usize, 1, 3, 4, 19, 20, 21, 24, 25, 33, 100, 238, 239, 255, 4095, 4097, 8192, 16384, 49151,
        49152, 49153, 65536, 100_000]
    .iter()
    .enumerate()
    .map(|(i, &len)| {
        let at = (i * 7919) % (source.len() - len);
        (format!("len-{len}"), source[at..at + len].to_vec())
    })
    .collect()
}
