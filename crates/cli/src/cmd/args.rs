//! Argument values that several commands take.

use zmem_comp::AlgoSpec;

/// `--algo`: `NAME`, `NAME:LEVEL` or `NAME:level=L,dict=FILE,winbits=W`, checked against the
/// registry when the command line is parsed (the library's [`AlgoSpec`]).
pub fn algo(text: &str) -> Result<AlgoSpec, String> {
    text.parse::<AlgoSpec>().map_err(|e| e.to_string())
}

/// A comma-separated list of algorithms (`lz4,zstd:3`); a `KEY=VALUE` item without a name
/// continues the spec before it (`zstd:level=3,dict=F,lz4` is two specs).
pub fn algo_list(items: &[String]) -> anyhow::Result<Vec<AlgoSpec>> {
    let mut specs: Vec<String> = Vec::new();
    for item in items.iter().flat_map(|s| s.split(',')) {
        match specs.last_mut() {
            Some(last) if item.contains('=') && !item.contains(':') && last.contains(':') => {
                last.push(',');
                last.push_str(item);
            }
            _ => specs.push(item.to_string()),
        }
    }
    specs.iter().map(|s| algo(s).map_err(|e| anyhow::anyhow!("--algo {s}: {e}"))).collect()
}

/// The parameters of `spec` for a command that runs the algorithm at its defaults only (the
/// kernel's devices here, or zswap, whose crypto compressors take none): refused, saying why.
pub fn plain_algo(spec: &AlgoSpec, why: &str) -> anyhow::Result<String> {
    if spec.algorithm_params().is_some() {
        anyhow::bail!("--algo {spec}: {why}; give the algorithm's name alone");
    }
    Ok(spec.name.clone())
}

/// A size argument such as `--ram 256M`: the kernel's `memparse` syntax (a number with an
/// optional K, M, G, T, P or E suffix, 1024-based), strictly: text that is not a size is an
/// error naming `flag`.
pub fn size(flag: &str, text: &str) -> anyhow::Result<u64> {
    zmem_lab::parse_size(text).map_err(|e| anyhow::anyhow!("{flag}: {}", e.msg))
}

/// `--swap-device`: a profile as it is, or a path on the device, measured for about a second
/// (the measured figures go to stderr, as the lab's other steps report).
pub fn swap_device(text: &str) -> anyhow::Result<zmem_sim::swap_device::SwapDevice> {
    use zmem_sim::swap_device::{DeviceSpec, SwapDevice};
    let spec: DeviceSpec = text.parse().map_err(|e| anyhow::anyhow!("--swap-device: {e}"))?;
    let d = SwapDevice::resolve(&spec, std::time::Duration::from_secs(1))?;
    if d.kind == "measured" {
        eprintln!(
            "zmem: swap device: 4 KiB read p50 {} us p99 {} us, write p50 {} us p99 {} us",
            d.read.p50_ns / 1000,
            d.read.p99_ns / 1000,
            d.write.p50_ns / 1000,
            d.write.p99_ns / 1000
        );
    }
    Ok(d)
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
