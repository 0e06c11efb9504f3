//! How much a user-given count may ask for: the check a front end (or a generator) makes before
//! it allocates what a count sizes, so a count larger than the machine is an error, not an
//! allocation failure that aborts the process.

/// Bytes of memory this machine has: `MemTotal` from /proc/meminfo (the most any one set can
/// hold), or 2^40 where that cannot be read.
pub fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1 << 40, |kb| kb.saturating_mul(1024))
}

/// Whether `count` items of `item_bytes` bytes each fit in this machine's memory; the error says
/// how much they need and how much there is.
pub fn fits_in_memory(count: u64, item_bytes: u64) -> Result<(), String> {
    let have = memory_bytes();
    match count.checked_mul(item_bytes) {
        Some(need) if need <= have && usize::try_from(need).is_ok() => Ok(()),
        need => Err(format!(
            "{count} x {item_bytes} bytes is {}, more than this machine's memory ({})",
            need.map_or_else(|| "more than 2^64 bytes".to_string(), human),
            human(have)
        )),
    }
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_past_the_machine_are_refused_with_the_sizes() {
        let have = memory_bytes();
        assert!(have >= 1 << 20, "{have}");
        assert!(fits_in_memory(16, 4096).is_ok());
        assert!(fits_in_memory(have / 4096, 4096).is_ok());
        let e = fits_in_memory(have / 4096 + 1, 4096).unwrap_err();
        assert!(e.contains("more than this machine's memory"), "{e}");
        let e = fits_in_memory(u64::MAX, 4096).unwrap_err();
        assert!(e.contains("more than 2^64 bytes"), "{e}");
        assert_eq!(human(1536), "1.5 KiB");
    }

    proptest::proptest! {
        /// Any count and item size: accepted exactly when their product fits the machine's
        /// memory (and a usize), refused with the sizes otherwise; never a panic or overflow.
        #[test]
        fn any_count_is_judged_by_its_product(count: u64, item in 0u64..1 << 40) {
            let have = memory_bytes();
            let fits = count.checked_mul(item).is_some_and(|n| n <= have);
            match fits_in_memory(count, item) {
                Ok(()) => proptest::prop_assert!(fits),
                Err(e) => {
                    proptest::prop_assert!(!fits);
                    proptest::prop_assert!(e.contains("more than this machine's memory"), "{}", e);
                }
            }
        }
    }
}
