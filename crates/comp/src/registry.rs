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
        name: "zstd",
        summary: "Zstandard (zstd crate), parameters sized for one page as zram's backend",
        in_kernel: true,
        levels: Some((crate::zstd::MIN_LEVEL, crate::zstd::MAX_LEVEL)),
        default_level: Some(crate::zstd::DEFAULT_LEVEL),
        takes_dict: true,
        takes_winbits: false,
        build: |p, ps| Ok(Box::new(crate::Zstd::new(p, ps)?)),
    },
    Algorithm {
        name: "deflate",
        summary: "raw deflate (zlib-rs), window bits -11, memLevel 8, as zram's backend",
        in_kernel: true,
        levels: Some((0, 9)),
        default_level: Some(crate::deflate::DEFAULT_LEVEL),
        takes_dict: false,
        takes_winbits: true,
        build: |p, _| Ok(Box::new(crate::Deflate::new(p)?)),
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

/// Builds a stream of the named algorithm.
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
}
