//! The registry: every algorithm by its kernel name, what parameters it takes, and how to build a
//! stream of it.
//!
//! The order is the kernel's backend list (`lzo-rle, lzo, lz4, lz4hc, zstd, deflate, 842`) followed
//! by the algorithms the kernel does not ship (LZ4m, WKdm), so listings read like
//! `/sys/block/zramN/comp_algorithm`.

use crate::{CompError, Compressor, Params};

/// Page sizes the stack supports (4 KiB everywhere; 16 KiB and 64 KiB as on arm64).
pub const PAGE_SIZES: [usize; 3] = [4096, 16384, 65536];

type Builder = fn(&Params, usize) -> Result<Box<dyn Compressor>, CompError>;

/// One algorithm the registry can build.
#[derive(Debug)]
pub struct Algorithm {
    /// The kernel's name.
    pub name: &'static str,
    /// One line for listings.
    pub summary: &'static str,
    /// Whether Linux zram offers it (the others are research codecs from the seeds).
    pub in_kernel: bool,
    /// Accepted `level` range, if the algorithm takes a level.
    pub levels: Option<(i32, i32)>,
    /// The level used when none is given.
    pub default_level: Option<i32>,
    /// Whether `dict=` is accepted.
    pub takes_dict: bool,
    /// Whether `deflate.winbits=` is accepted.
    pub takes_winbits: bool,
    build: Builder,
}

impl Algorithm {
    /// Builds a stream after checking `params` against what this algorithm accepts.
    pub fn create(
        &self,
        params: &Params,
        page_size: usize,
    ) -> Result<Box<dyn Compressor>, CompError> {
        let invalid = |msg: String| CompError::InvalidParam { algo: self.name, msg };
        if !PAGE_SIZES.contains(&page_size) {
            return Err(invalid(format!(
                "unsupported page size {page_size} (use 4096, 16384 or 65536)"
            )));
        }
        if let Some(level) = params.level {
            match self.levels {
                None => return Err(invalid("takes no level".into())),
                Some((lo, hi)) if !(lo..=hi).contains(&level) => {
                    return Err(invalid(format!("level {level} out of range {lo}..={hi}")));
                }
                Some(_) => {}
            }
        }
        if params.dict.is_some() && !self.takes_dict {
            return Err(invalid("takes no dictionary".into()));
        }
        if params.deflate_winbits.is_some() && !self.takes_winbits {
            return Err(invalid("takes no deflate.winbits".into()));
        }
        (self.build)(params, page_size)
    }

    /// Builds a stream as Linux 6.18's zram backend builds it from `algorithm_params`: without
    /// the checks of [`Algorithm::create`], which 6.18 does not have (they came after 7.0).
    /// See [`Algorithm::backend_params`] for what each backend makes of the parameters; what
    /// is left can still fail where the kernel's library fails too (a deflate level outside
    /// -1..=9 or bad `deflate.winbits` make `zlib_deflateInit2` refuse).
    pub fn create_as_backend(
        &self,
        params: &Params,
        page_size: usize,
    ) -> Result<Box<dyn Compressor>, CompError> {
        self.create(&self.backend_params(params), page_size)
    }

    /// The parameters 6.18's backend actually uses: backends without a `setup_params` check
    /// ignore what they do not take (a level on lzo, lzo-rle or 842; a dictionary on lzo,
    /// lzo-rle, deflate or 842; `deflate.winbits` on anything but deflate), and levels go to
    /// the library, which treats them as it does: lz4 acceleration below 1 is the default 1
    /// (`LZ4_compress_fast`; above [`crate::lz4`]'s cap it is capped), an lz4hc level below 1
    /// is the default 9 and above 16 is 16 (`LZ4_compress_HC`), zstd levels are clamped to
    /// its range (`zstd_get_params`), deflate level -1 is `Z_DEFAULT_COMPRESSION`.
    pub fn backend_params(&self, params: &Params) -> Params {
        let mut p = params.clone();
        if !self.takes_dict {
            p.dict = None;
        }
        if !self.takes_winbits {
            p.deflate_winbits = None;
        }
        p.level = match (self.levels, params.level) {
            (None, _) | (_, None) => None,
            (Some((lo, hi)), Some(level)) => match self.name {
                "lz4" | "lz4hc" if level < 1 => None,
                "lz4" | "lz4hc" | "zstd" => Some(level.clamp(lo, hi)),
                "deflate" if level == -1 => None,
                _ => Some(level),
            },
        };
        p
    }
}

static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "lzo-rle",
        summary: "LZO1X-1 with zero-run encoding, the kernel's bytes (zram's default)",
        in_kernel: true,
        levels: None,
        default_level: None,
        takes_dict: false,
        takes_winbits: false,
        build: |_, _| Ok(Box::new(crate::Lzo::new(crate::lzo::Variant::LzoRle))),
    },
    Algorithm {
        name: "lzo",
        summary: "LZO1X-1, the kernel's bytes (= liblzo2 lzo1x_1_15_compress on x86)",
        in_kernel: true,
        levels: None,
        default_level: None,
        takes_dict: false,
        takes_winbits: false,
        build: |_, _| Ok(Box::new(crate::Lzo::new(crate::lzo::Variant::Lzo))),
    },
    Algorithm {
        name: "lz4",
        summary: "LZ4 block, the kernel's v1.7.3 compressor byte for byte; level = acceleration",
        in_kernel: true,
        levels: Some((1, crate::lz4::MAX_ACCELERATION)),
        default_level: Some(crate::lz4::DEFAULT_ACCELERATION),
        takes_dict: true,
        takes_winbits: false,
        build: |p, _| Ok(Box::new(crate::Lz4::new(p)?)),
    },
    Algorithm {
        name: "lz4hc",
        summary: "LZ4 HC, the kernel's v1.7.3 hash-chain compressor byte for byte; level 1..=16",
        in_kernel: true,
        levels: Some((crate::lz4hc::MIN_LEVEL, crate::lz4hc::MAX_LEVEL)),
        default_level: Some(crate::lz4hc::DEFAULT_LEVEL),
        takes_dict: true,
        takes_winbits: false,
        build: |p, _| Ok(Box::new(crate::Lz4Hc::new(p)?)),
    },
    Algorithm {
        name: "zstd",
        summary: "Zstandard, the kernel's bytes (libzstd 1.5.7 driven as 6.18's backend drives lib/zstd)",
        in_kernel: true,
        levels: Some((crate::zstd::MIN_LEVEL, crate::zstd::MAX_LEVEL)),
        default_level: Some(crate::zstd::DEFAULT_LEVEL),
        takes_dict: true,
        takes_winbits: false,
        build: |p, ps| Ok(Box::new(crate::Zstd::new(p, ps)?)),
    },
    Algorithm {
        name: "deflate",
        summary: "raw deflate through zlib (the kernel's algorithm), window bits -11, memLevel 8",
        in_kernel: true,
        levels: Some((0, 9)),
        default_level: Some(crate::deflate::DEFAULT_LEVEL),
        takes_dict: false,
        takes_winbits: true,
        build: |p, _| Ok(Box::new(crate::Deflate::new(p)?)),
    },
    Algorithm {
        name: "842",
        summary: "IBM 842 as the kernel's software sw842 (byte-identical output, CRC-checked)",
        in_kernel: true,
        levels: None,
        default_level: None,
        takes_dict: false,
        takes_winbits: false,
        build: |_, _| Ok(Box::new(crate::Sw842::new())),
    },
    Algorithm {
        name: "lz4m",
        summary: "LZ4m (ICCE 2017): LZ4 in 32-bit words, 16-bit tokens, 10-bit word offsets",
        in_kernel: false,
        levels: None,
        default_level: None,
        takes_dict: false,
        takes_winbits: false,
        build: |_, _| Ok(Box::new(crate::Lz4m::new())),
    },
    Algorithm {
        name: "wkdm",
        summary: "WKdm (Wilson-Kaplan, Apple xnu format): 16-word dictionary, 2-bit word tags",
        in_kernel: false,
        levels: None,
        default_level: None,
        takes_dict: false,
        takes_winbits: false,
        build: |_, ps| Ok(Box::new(crate::Wkdm::new(ps))),
    },
];

/// Every algorithm, kernel backends first in the kernel's order.
pub fn algorithms() -> &'static [Algorithm] {
    ALGORITHMS
}

/// Looks an algorithm up by its kernel name.
pub fn find(name: &str) -> Result<&'static Algorithm, CompError> {
    ALGORITHMS.iter().find(|a| a.name == name).ok_or_else(|| CompError::UnknownAlgorithm {
        name: name.to_string(),
        available: ALGORITHMS.iter().map(|a| a.name).collect::<Vec<_>>().join(", "),
    })
}

/// Builds a stream of the named algorithm as 6.18's zram backend would
/// ([`Algorithm::create_as_backend`]): what the kernel ignores is ignored, not refused.
pub fn create_as_backend(
    name: &str,
    params: &Params,
    page_size: usize,
) -> Result<Box<dyn Compressor>, CompError> {
    find(name)?.create_as_backend(params, page_size)
}

/// Builds a stream of the named algorithm, refusing parameters it does not take or levels out
/// of its range (for user input: the CLI, the lab's `--algo`).
pub fn create(
    name: &str,
    params: &Params,
    page_size: usize,
) -> Result<Box<dyn Compressor>, CompError> {
    find(name)?.create(params, page_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = algorithms().iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), algorithms().len());
    }

    #[test]
    fn unknown_name_lists_the_available_ones() {
        let err = create("snappy", &Params::default(), 4096).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("snappy") && text.contains("zstd"), "{text}");
    }

    #[test]
    fn every_default_level_is_in_range() {
        for a in algorithms() {
            if let (Some((lo, hi)), Some(d)) = (a.levels, a.default_level) {
                assert!((lo..=hi).contains(&d), "{}", a.name);
            }
            assert_eq!(a.levels.is_some(), a.default_level.is_some(), "{}", a.name);
        }
    }

    #[test]
    fn parameters_an_algorithm_does_not_take_are_refused() {
        for a in algorithms() {
            let dict = Params { dict: Some(vec![1u8; 64].into()), ..Params::default() };
            assert_eq!(a.create(&dict, 4096).is_ok(), a.takes_dict, "{}", a.name);
            let wb = Params { deflate_winbits: Some(-11), ..Params::default() };
            assert_eq!(a.create(&wb, 4096).is_ok(), a.takes_winbits, "{}", a.name);
            if let Some((lo, hi)) = a.levels {
                assert!(a.create(&Params::with_level(hi + 1), 4096).is_err(), "{}", a.name);
                assert!(a.create(&Params::with_level(lo), 4096).is_ok(), "{}", a.name);
            } else {
                assert!(a.create(&Params::with_level(1), 4096).is_err(), "{}", a.name);
            }
            assert!(a.create(&Params::default(), 8192).is_err(), "{}", a.name);
        }
    }

    /// 6.18's backends (drivers/block/zram/backend_*.c, `*_setup_params`) check nothing but
    /// fill in defaults: a level on lzo/lzo-rle/842, a dictionary on lzo/lzo-rle/deflate/842,
    /// `deflate.winbits` on another algorithm, lz4 level 0 and deflate level -1 all build.
    #[test]
    fn backend_setup_params_of_6_18_ignore_what_they_do_not_use() {
        let dict = || Some(Arc::<[u8]>::from(vec![7u8; 64]));
        for name in ["lzo", "lzo-rle", "842"] {
            let p = Params { level: Some(3), dict: dict(), deflate_winbits: Some(-11) };
            assert!(create_as_backend(name, &p, 4096).is_ok(), "{name}");
            assert!(create(name, &p, 4096).is_err(), "{name}: the strict path still refuses");
        }
        let deflate_dict = Params { dict: dict(), ..Params::default() };
        assert!(create_as_backend("deflate", &deflate_dict, 4096).is_ok());
        for name in ["lz4", "lz4hc", "zstd"] {
            let wb = Params { deflate_winbits: Some(-11), ..Params::default() };
            assert!(create_as_backend(name, &wb, 4096).is_ok(), "{name}");
        }
        for level in [0, -5] {
            assert!(create_as_backend("lz4", &Params::with_level(level), 4096).is_ok());
            assert!(create_as_backend("lz4hc", &Params::with_level(level), 4096).is_ok());
        }
        assert!(create_as_backend("lz4hc", &Params::with_level(99), 4096).is_ok());
        assert!(create_as_backend("zstd", &Params::with_level(99), 4096).is_ok());
        assert!(create_as_backend("deflate", &Params::with_level(-1), 4096).is_ok());
        // zlib_deflateInit2 refuses a level past 9 (and so does the kernel's disksize).
        assert!(create_as_backend("deflate", &Params::with_level(10), 4096).is_err());
        // Ignored means unused: lz4 level 0 compresses as level 1, lzo with a level as without.
        let page: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let squeeze = |name: &str, p: &Params| {
            let mut c = create_as_backend(name, p, 4096).unwrap();
            let mut out = vec![0u8; 8192];
            let n = c.compress(&page, &mut out).unwrap();
            out.truncate(n);
            out
        };
        assert_eq!(squeeze("lz4", &Params::with_level(0)), squeeze("lz4", &Params::default()));
        assert_eq!(squeeze("lzo", &Params::with_level(5)), squeeze("lzo", &Params::default()));
    }
}
