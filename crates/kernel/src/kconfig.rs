//! The running kernel's build configuration, read without changing anything: `/proc/config.gz`
//! (CONFIG_IKCONFIG_PROC) or `/boot/config-RELEASE`. `caps` falls back to it for zram's
//! abilities when no zram device exists, instead of hot-adding one (a read-only command must not
//! create devices).
//!
//! What zram offers follows from its options (6.18, drivers/block/zram/zcomp.c `backends[]`: one
//! entry per enabled `CONFIG_ZRAM_BACKEND_*`, in the order lzo-rle, lzo, lz4, lz4hc, zstd,
//! deflate, 842; drivers/block/zram/zram_drv.c: `recomp_algorithm` under
//! CONFIG_ZRAM_MULTI_COMP, `backing_dev` under CONFIG_ZRAM_WRITEBACK, `algorithm_params` on
//! every build since 6.12).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest configuration text read (a distribution's is about 300 KB): a bound on a file
/// that is not what it claims to be.
const MAX_CONFIG_BYTES: u64 = 8 << 20;

/// A kernel build configuration: `CONFIG_NAME` -> value (`y`, `m`, a number or a quoted string).
/// Options that are "not set" are absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelConfig {
    pub options: BTreeMap<String, String>,
    /// Where it was read.
    pub path: PathBuf,
}

impl KernelConfig {
    /// Whether `name` is built in or a module.
    pub fn enabled(&self, name: &str) -> bool {
        matches!(self.options.get(name).map(String::as_str), Some("y" | "m"))
    }
}

/// Parses a `.config` text: `CONFIG_X=value` lines; comments and blank lines are skipped.
pub fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Reads the configuration of kernel `release` under `root`: `proc/config.gz`, else
/// `boot/config-RELEASE`. `Err` says why neither could be read.
pub fn read_at(root: &Path, release: &str) -> Result<KernelConfig, String> {
    let gz = root.join("proc/config.gz");
    let mut why = Vec::new();
    match read_gz(&gz) {
        Ok(text) => return Ok(KernelConfig { options: parse(&text), path: gz }),
        Err(e) => why.push(format!("/proc/config.gz: {e}")),
    }
    if !release.is_empty() {
        let plain = root.join("boot").join(format!("config-{release}"));
        match read_plain(&plain) {
            Ok(text) => return Ok(KernelConfig { options: parse(&text), path: plain }),
            Err(e) => why.push(format!("/boot/config-{release}: {e}")),
        }
    }
    Err(why.join(", "))
}

fn read_gz(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    bounded_text(flate2::read::GzDecoder::new(file))
}

fn read_plain(path: &Path) -> std::io::Result<String> {
    bounded_text(std::fs::File::open(path)?)
}

fn bounded_text(r: impl Read) -> std::io::Result<String> {
    let mut text = String::new();
    r.take(MAX_CONFIG_BYTES).read_to_string(&mut text)?;
    Ok(text)
}

/// zram's compressors on a build with `config`, in `comp_algorithm`'s order (zcomp.c
/// `backends[]`).
pub fn zram_algorithms(config: &KernelConfig) -> Vec<String> {
    let order: [(&str, &[&str]); 6] = [
        ("CONFIG_ZRAM_BACKEND_LZO", &["lzo-rle", "lzo"]),
        ("CONFIG_ZRAM_BACKEND_LZ4", &["lz4"]),
        ("CONFIG_ZRAM_BACKEND_LZ4HC", &["lz4hc"]),
        ("CONFIG_ZRAM_BACKEND_ZSTD", &["zstd"]),
        ("CONFIG_ZRAM_BACKEND_DEFLATE", &["deflate"]),
        ("CONFIG_ZRAM_BACKEND_842", &["842"]),
    ];
    order
        .iter()
        .filter(|(opt, _)| config.enabled(opt))
        .flat_map(|(_, names)| names.iter().map(|n| n.to_string()))
        .collect()
}

/// Whether `release` (`uname -r`) is at least `major.minor`; `None` when it does not parse.
pub fn release_at_least(release: &str, major: u32, minor: u32) -> Option<bool> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let got_major: u32 = parts.next()?.parse().ok()?;
    let got_minor: u32 = parts.next()?.parse().ok()?;
    Some((got_major, got_minor) >= (major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// This machine kind's zram options (6.18.44-fc), as /proc/config.gz lists them.
    const CONFIG: &str = "#\n# Automatically generated\nCONFIG_ZRAM=y\nCONFIG_ZRAM_BACKEND_LZ4=y\n\
        # CONFIG_ZRAM_BACKEND_LZ4HC is not set\n# CONFIG_ZRAM_BACKEND_ZSTD is not set\n\
        CONFIG_ZRAM_BACKEND_LZO=y\nCONFIG_ZRAM_DEF_COMP=\"lzo-rle\"\n\
        # CONFIG_ZRAM_WRITEBACK is not set\n# CONFIG_ZRAM_MULTI_COMP is not set\n";

    #[test]
    fn parses_set_options_only() {
        let o = parse(CONFIG);
        assert_eq!(o["CONFIG_ZRAM_BACKEND_LZ4"], "y");
        assert_eq!(o["CONFIG_ZRAM_DEF_COMP"], "\"lzo-rle\"");
        assert!(!o.contains_key("CONFIG_ZRAM_WRITEBACK"));
        assert_eq!(o.len(), 4);
    }

    #[test]
    fn algorithms_follow_the_backend_order_not_the_file_order() {
        let c = KernelConfig { options: parse(CONFIG), path: PathBuf::new() };
        assert_eq!(zram_algorithms(&c), ["lzo-rle", "lzo", "lz4"]);
        let all =
            "CONFIG_ZRAM_BACKEND_842=y\nCONFIG_ZRAM_BACKEND_ZSTD=m\nCONFIG_ZRAM_BACKEND_LZ4HC=y\n";
        let c = KernelConfig { options: parse(all), path: PathBuf::new() };
        assert_eq!(zram_algorithms(&c), ["lz4hc", "zstd", "842"]);
    }

    #[test]
    fn reads_the_gzipped_config_then_boot() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        assert!(read_at(r, "6.18.0").unwrap_err().contains("/boot/config-6.18.0"));
        std::fs::create_dir_all(r.join("boot")).unwrap();
        std::fs::write(r.join("boot/config-6.18.0"), "CONFIG_ZRAM_BACKEND_ZSTD=y\n").unwrap();
        let c = read_at(r, "6.18.0").unwrap();
        assert_eq!(zram_algorithms(&c), ["zstd"]);
        assert!(c.path.ends_with("boot/config-6.18.0"));
        std::fs::create_dir_all(r.join("proc")).unwrap();
        let f = std::fs::File::create(r.join("proc/config.gz")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        gz.write_all(CONFIG.as_bytes()).unwrap();
        gz.finish().unwrap();
        let c = read_at(r, "6.18.0").unwrap();
        assert_eq!(zram_algorithms(&c), ["lzo-rle", "lzo", "lz4"]);
        assert!(c.path.ends_with("proc/config.gz"));
    }

    /// The live kernel: what its build configuration says zram offers is what an existing
    /// device lists (the fallback `caps` takes where no device exists must agree with the
    /// device it stands in for).
    #[test]
    #[ignore = "live: needs kernel zram and a readable kernel configuration (scripts/test runs it)"]
    fn live_configuration_agrees_with_a_device() {
        let root = Path::new("/");
        let release = crate::stat::kernel_release_at(&root.join("proc")).unwrap_or_default();
        let config = read_at(root, &release);
        let device = crate::stat::zram_ids(&root.join("sys"))
            .into_iter()
            .find_map(|id| crate::stat::zram_attr_at(&root.join("sys"), id, "comp_algorithm").ok());
        let why = match (&config, &device) {
            (Err(e), _) => Some(format!("no kernel configuration: {e}")),
            (_, None) => Some("no readable zram device to compare with".to_string()),
            _ => None,
        };
        let Some(_live) = zmem_testkit::live(why) else { return };
        let (config, device) = (config.unwrap(), device.unwrap());
        let listed = crate::parse::parse_comp_algorithm(&device).available;
        assert_eq!(zram_algorithms(&config), listed, "{}", config.path.display());
        let multi = Path::new("/sys/block/zram0/recomp_algorithm").exists();
        if Path::new("/sys/block/zram0").exists() {
            assert_eq!(config.enabled("CONFIG_ZRAM_MULTI_COMP"), multi);
        }
    }

    #[test]
    fn release_comparison() {
        assert_eq!(release_at_least("6.18.44-fc-v1300", 6, 12), Some(true));
        assert_eq!(release_at_least("6.11.9", 6, 12), Some(false));
        assert_eq!(release_at_least("5.15.0-91-generic", 6, 12), Some(false));
        assert_eq!(release_at_least("", 6, 12), None);
    }
}
