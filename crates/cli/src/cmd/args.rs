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

/// A measured swap device's figures, on stderr (a profile's are its own, nothing to say).
pub fn report_measured(d: &zmem_sim::swap_device::SwapDevice) {
    if d.kind == "measured" {
        eprintln!(
            "zmem: swap device: 4 KiB read p50 {} us p99 {} us, write p50 {} us p99 {} us",
            d.read.p50_ns / 1000,
            d.read.p99_ns / 1000,
            d.write.p50_ns / 1000,
            d.write.p99_ns / 1000
        );
    }
}

/// The most threads a `--threads` may ask for.
pub const MAX_THREADS: u64 = zmem_lab::request::MAX_THREADS;
/// The longest a duration flag may be in seconds (a week; the library's bound).
pub const MAX_SECS: u64 = zmem_lab::request::MAX_SECS;

/// A count flag's value parser: a whole number in `min..=max` (clap names the flag in front of
/// the reason; the reason is the library's, the one the lab's options give). Negative numbers
/// reach it (main.rs lets every option take one as its value), so `-1` is "negative", not an
/// unknown argument.
pub fn count<T>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |text| {
        let n = zmem_lab::request::parse_count(text, min, max)?;
        T::try_from(n).map_err(|_| "more than this machine can take".to_string())
    }
}

/// A duration flag's value parser in whole `unit`s (`"s"` or `"ms"`), at most [`MAX_SECS`].
pub fn duration(unit: &'static str) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    let max = if unit == "ms" { MAX_SECS * 1000 } else { MAX_SECS };
    count::<u64>(0, max)
}

/// A seconds flag that takes fractions (`--interval 0.5`): finite, 0 or more, at most
/// [`MAX_SECS`].
pub fn seconds(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| "not a number of seconds".to_string())?;
    if !v.is_finite() || v < 0.0 {
        return Err("give a number of seconds, 0 or more".into());
    }
    if v > MAX_SECS as f64 {
        return Err(format!("more than the most this takes, {MAX_SECS} seconds"));
    }
    Ok(v)
}

/// Refuses `count` items of `item_bytes` bytes each that would not fit in this machine's
/// memory, naming `flag`: the check before any allocation that a user-given count sizes.
pub fn fits_in_memory(flag: &str, count: u64, item_bytes: u64) -> anyhow::Result<()> {
    zmem_pages::limits::fits_in_memory(count, item_bytes)
        .map_err(|e| anyhow::anyhow!("{flag} {count}: {e}"))
}

/// `argv` parsed as one command's flags alone (a test's view of what the bare flags give).
#[cfg(test)]
pub fn parse_flags<A: clap::Args>(argv: &[&str]) -> A {
    #[derive(clap::Parser)]
    struct Cli<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    <Cli<A> as clap::Parser>::parse_from(argv).args
}

#[cfg(test)]
mod tests {
    use super::{count, seconds, size};

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

    #[test]
    fn counts_refuse_negatives_text_and_too_much_with_the_reason() {
        let c = count::<usize>(1, 100);
        assert_eq!(c("7"), Ok(7));
        assert_eq!(c(" 100 "), Ok(100));
        assert!(c("-1").unwrap_err().starts_with("negative"));
        assert!(c("0").unwrap_err().contains("less than 1"));
        assert!(c("101").unwrap_err().contains("100"));
        // Past u64 and u128 alike: "too many", not "not a number".
        assert!(c("18446744073709551616").unwrap_err().contains("most"));
        assert!(c(&"9".repeat(60)).unwrap_err().contains("most"));
        for bad in ["", "1e3", "0x10", "1.5", "ten", "--1"] {
            assert_eq!(c(bad), Err("not a whole number".to_string()), "{bad:?}");
        }
        assert!(count::<u8>(0, 1000)("300").unwrap_err().contains("machine"));
        assert_eq!(seconds("0.5"), Ok(0.5));
        for bad in ["-1", "nan", "inf", "1e300", "x"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
