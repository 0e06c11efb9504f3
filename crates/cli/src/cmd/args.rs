//! Argument values that several commands take.

/// A size argument such as `--ram 256M`: the kernel's `memparse` syntax (a number with an
/// optional K, M, G, T, P or E suffix, 1024-based), strictly: text that is not a size is an
/// error naming `flag`.
pub fn size(flag: &str, text: &str) -> anyhow::Result<u64> {
    zmem_lab::parse_size(text).map_err(|e| anyhow::anyhow!("{flag}: {}", e.msg))
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_take_1024_based_suffixes() {
        assert_eq!(size("--ram", "4096").unwrap(), 4096);
        assert_eq!(size("--ram", "64K").unwrap(), 65536);
        assert_eq!(size("--ram", "256m").unwrap(), 256 << 20);
        assert_eq!(size("--ram", "2G").unwrap(), 2 << 30);
        assert_eq!(size("--ram", " 1 T ").unwrap(), 1 << 40);
        for bad in ["12Q", "M", "", "99999999999T", "12abc"] {
            let e = size("--ram", bad).unwrap_err().to_string();
            assert!(e.starts_with("--ram: ") && e.contains(&format!("{bad:?}")), "{bad:?}: {e}");
        }
    }
}
