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

/// Bytes the kernel says can be allocated without swapping: `MemAvailable`, or `MemTotal`
/// where the kernel predates it (before 3.14).
pub fn available_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo_bytes(&text, "MemAvailable:").unwrap_or_else(memory_bytes)
}

fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    let v = text.lines().find_map(|l| l.strip_prefix(key))?;
    v.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|kb| kb.saturating_mul(1024))
}

/// The environment variable that sets [`read_ceiling`] in bytes (for a machine that must read
/// a set larger than the default allows).
pub const READ_CEILING_ENV: &str = "ZMEM_READ_CEILING";

/// The least default ceiling, so a machine short of memory can still read small sets.
const MIN_READ_CEILING: u64 = 256 << 20;

/// Decompressed bytes a zstd stream may reach whatever its ratio.
const EXPANSION_SLACK: u64 = 64 << 20;

/// Past the slack, the most a zstd stream may expand. Page sets of real memory compress a few
/// times (zero pages, which compress best, are a part of them); a stream of nothing but zero
/// pages expands some thousands of times and is refused once past the slack.
const MAX_EXPANSION: u64 = 1024;

/// The ceiling the user set (`ZMEM_READ_CEILING`), read once.
fn explicit_ceiling() -> Option<u64> {
    static SET: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *SET.get_or_init(|| {
        std::env::var(READ_CEILING_ENV).ok().and_then(|v| v.trim().parse::<u64>().ok())
    })
}

/// The most decompressed bytes a zstd stream may give after `compressed` bytes of it were
/// read: 64 MiB plus 1024 times those (`None`: no bound, where `ZMEM_READ_CEILING` is set and
/// the user chose the ceiling). The header's declaration is bounded by [`read_ceiling`]; this
/// bounds what a bomb costs before its declaration is reached or where it declares nothing
/// (raw pages in zstd).
pub fn expansion_bound(compressed: u64) -> Option<u64> {
    match explicit_ceiling() {
        Some(_) => None,
        None => Some(EXPANSION_SLACK.saturating_add(compressed.saturating_mul(MAX_EXPANSION))),
    }
}

/// Half of this process's address-space limit (`RLIMIT_AS`), where one is set.
fn address_space_share() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given, which lives on this
    // stack frame.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) };
    (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur / 2)
}

/// The most page bytes a read copies into memory by default: half of `MemAvailable`, and of
/// the address-space limit where one is set (at least 256 MiB), or `ZMEM_READ_CEILING` bytes
/// where it is set. A file is untrusted input: a few
/// kilobytes of zstd can declare gigabytes of zero pages, and a header can claim 2^28
/// checksums; past the ceiling the read stops with [`crate::PagesError::TooLarge`] before it
/// allocates.
pub fn read_ceiling() -> u64 {
    match explicit_ceiling() {
        Some(bytes) => bytes,
        None => {
            let share = (available_bytes() / 2).min(address_space_share().unwrap_or(u64::MAX));
            share.max(MIN_READ_CEILING)
        }
    }
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

    #[test]
    fn the_read_ceiling_is_half_of_what_is_available() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(meminfo_bytes(text, "MemAvailable:"), Some(1000 * 1024));
        assert_eq!(meminfo_bytes("MemTotal: 5 kB\n", "MemAvailable:"), None);
        let avail = available_bytes();
        assert!(avail > 0 && avail <= memory_bytes(), "{avail}");
        // Without the variable (tests never set it): half of MemAvailable, at least 256 MiB. The
        // two reads of meminfo may differ by what the machine did between them.
        if std::env::var_os(READ_CEILING_ENV).is_none() {
            let c = read_ceiling();
            let now = (available_bytes() / 2).max(MIN_READ_CEILING);
            assert!(c.abs_diff(now) <= now / 4, "{c} against {now}");
        }
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
