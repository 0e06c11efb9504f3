//! Generators: deterministic for a seed, the documented patterns, and the mixed set's ratio in
//! its calibrated range.

use zmem_pages::builtin;
use zmem_pages::generate::{self, Kind, mixed};
use zmem_zram::{Zram, ZramConfig};

/// orig_data_size / compr_data_size of the page set written to zmem's zram under `algo`: the
/// kernel's accounting (docs/REFERENCES.md [live-zram-oracle]), where same-filled pages cost
/// nothing and pages that compress to `huge_class_size` or more cost a whole page.
fn zram_ratio(set: &zmem_pages::PageSet, algo: &str) -> f64 {
    let z = Zram::new(ZramConfig { page_size: set.page_size(), ..ZramConfig::default() }).unwrap();
    z.store("comp_algorithm", algo).unwrap();
    z.store("disksize", &set.bytes().len().to_string()).unwrap();
    for (index, page) in set.pages().enumerate() {
        z.write_page(index as u64, page).unwrap();
    }
    let mm = z.mm_stat();
    assert_eq!(mm.orig_data_size, set.bytes().len() as u64, "every page is stored");
    mm.orig_data_size as f64 / mm.compr_data_size as f64
}

#[test]
fn generators_are_deterministic_for_a_seed_and_differ_across_seeds() {
    for (_, kind) in Kind::ALL {
        let a = generate::generate(kind, 64, 4096, 42).unwrap();
        let b = generate::generate(kind, 64, 4096, 42).unwrap();
        let c = generate::generate(kind, 64, 4096, 43).unwrap();
        assert_eq!(a.bytes(), b.bytes(), "{kind:?}");
        assert_ne!(a.bytes(), c.bytes(), "{kind:?}");
        assert_eq!(a.len(), 64);
    }
}

#[test]
fn generated_bytes_never_change_between_versions() {
    // CRC32 of the first 256 pages for seed 1: a change to the PRNG, the pattern or the mixed
    // weights changes these, and with them every published benchmark figure. Update them only on
    // purpose, together with docs/FORMATS.md.
    let perf = generate::generate(Kind::Perf, 256, 4096, 1).unwrap();
    let mixed = generate::generate(Kind::Mixed, 256, 4096, 1).unwrap();
    let got = (crc32fast::hash(perf.bytes()), crc32fast::hash(mixed.bytes()));
    eprintln!("perf {:#010x} mixed {:#010x}", got.0, got.1);
    assert_eq!(got, (PERF_CRC, MIXED_CRC));
}

const PERF_CRC: u32 = 0xb0a3_e25d;
const MIXED_CRC: u32 = 0x1bc1_15e7;

#[test]
fn perf_pages_are_val_plus_i_with_a_16_bit_val() {
    let set = generate::generate(Kind::Perf, 32, 4096, 9).unwrap();
    let mut vals = std::collections::HashSet::new();
    for page in set.pages() {
        let words: Vec<u32> =
            page.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
        let val = words[0];
        assert!(val <= 0xffff);
        for (i, &w) in words.iter().enumerate() {
            assert_eq!(w, val + i as u32);
        }
        vals.insert(val);
    }
    assert!(vals.len() > 16, "each page draws its own val");
}

#[test]
fn mixed_pages_hold_every_kind_in_about_their_proportions() {
    let set = generate::generate(Kind::Mixed, 4000, 4096, 5).unwrap();
    let zero = set.pages().filter(|p| p.iter().all(|&b| b == 0)).count();
    // Zero pages: 10 per mille by weight; 40 expected in 4000.
    assert!((20..=70).contains(&zero), "{zero} zero pages");
    let total: u32 = mixed::WEIGHTS.iter().map(|w| w.1).sum();
    assert_eq!(total, 1000);
}

#[test]
fn mixed_deflate_ratio_is_in_the_calibrated_band() {
    // The band for deflate that corresponds to kernel lzo in 2.5-3x on this generator: on the
    // calibration sets deflate's ratio was 1.335-1.344 times the kernel's lzo ratio (seeds 1-3,
    // 3000 pages: deflate 3.898/3.920/3.878, lzo 2.920/2.916/2.889), so lzo 2.5-3.0 is deflate
    // 3.35-4.03 (docs/FORMATS.md, "mixed"). Checked on several seeds.
    for seed in [1, 2, 3] {
        let set = generate::generate(Kind::Mixed, 3000, 4096, seed).unwrap();
        let r = zram_ratio(&set, "deflate");
        eprintln!("seed {seed}: deflate ratio {r:.3}");
        assert!((DEFLATE_LO..=DEFLATE_HI).contains(&r), "seed {seed}: deflate ratio {r:.3}");
    }
}

const DEFLATE_LO: f64 = 3.35;
const DEFLATE_HI: f64 = 4.05;

#[test]
#[ignore = "live: needs root, kernel zram and shared/tools/kernel-zram-mmstat (scripts/test runs it)"]
fn mixed_kernel_lzo_and_lz4_ratios_are_in_the_published_range() {
    // The live-kernel oracle lives beside the repository, in shared/tools.
    let tool = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/tools/kernel-zram-mmstat");
    let why = (!std::path::Path::new("/sys/class/zram-control").exists())
        .then(|| "no /sys/class/zram-control (zram module not loaded)".to_string());
    let Some(live) = zmem_testkit::live(why) else { return };
    if !tool.exists() {
        // The oracle lives outside the repository: a checkout without it skips, never fails.
        return live.skip_optional(format!("no {}", tool.display()));
    }
    let set = generate::generate(Kind::Mixed, 4096, 4096, 11).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("mixed.bin");
    set.save_raw(&raw).unwrap();
    for algo in ["lzo", "lz4"] {
        let out = std::process::Command::new(&tool).arg(algo).arg(&raw).output().unwrap();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return live.skip(format!("the oracle failed for {algo} (not root?): {}", err.trim()));
        }
        let text = String::from_utf8(out.stdout).unwrap();
        let f: Vec<f64> = text.split_whitespace().map(|x| x.parse().unwrap()).collect();
        let ratio = f[0] / f[1];
        eprintln!("kernel {algo}: ratio {ratio:.3}");
        assert!((2.5..=3.0).contains(&ratio), "{algo}: {ratio:.3}");
    }
}

#[test]
fn the_builtin_set_is_the_seeded_mixed_set() {
    let a = builtin::default_set();
    assert_eq!(a.page_size(), 4096);
    assert_eq!(a.len(), builtin::DEFAULT_PAGES);
    assert!((16 << 20..=32 << 20).contains(&a.bytes().len()));
    let b = generate::generate(Kind::Mixed, builtin::DEFAULT_PAGES, 4096, builtin::DEFAULT_SEED)
        .unwrap();
    assert_eq!(a.bytes(), b.bytes());
    let big = builtin::default_set_with(16384).unwrap();
    assert_eq!(big.bytes().len(), a.bytes().len());
    assert!(builtin::default_set_with(1000).is_err());
}
