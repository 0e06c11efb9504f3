//! What the running kernel can do for compressed memory, learned without setting up a zram swap
//! device, each fact with the way it was learned (`KernelCaps::source`).
//!
//! zram: whether it is present, which compressors its build offers (a device's
//! `comp_algorithm`), whether it can recompress (`recomp_algorithm`, CONFIG_ZRAM_MULTI_COMP),
//! write back (`backing_dev`, CONFIG_ZRAM_WRITEBACK) and take `algorithm_params`. zswap: whether
//! it is built, its module parameters, and the compressors the crypto API offers it
//! (`/proc/crypto`). Nothing is written: devices are only read, and where none exists zram's
//! abilities come from the kernel's build configuration (`kconfig`), never from a hot-added
//! device.
//!
//! Not for: zswap's live counters (see `zswap_state`), a zram device's statistics (`stat`), or
//! configuring anything. Parsers are pure functions over the file's text; readers open the files
//! under a root so tests can use fake trees.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::KernelError;

/// What the kernel offers for compressed memory, and how each fact was learned. The default is
/// a kernel nothing is known of (no zram, no zswap, empty `source`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelCaps {
    /// `uname -r`, from `/proc/sys/kernel/osrelease` (empty when unreadable; see `source`).
    pub release: String,
    /// zram is built in or loaded (`/sys/class/zram-control` exists, or a zram device does).
    pub zram_present: bool,
    /// zram's compressors in the kernel's order (`comp_algorithm`, brackets removed). Empty means
    /// unknown: no device could be read (the reason is in `source`).
    pub zram_algorithms: Vec<String>,
    /// The device has `recomp_algorithm` (CONFIG_ZRAM_MULTI_COMP).
    pub zram_recompress: bool,
    /// The device has `backing_dev` (CONFIG_ZRAM_WRITEBACK).
    pub zram_writeback: bool,
    /// The device has `algorithm_params` (per-algorithm level and dictionary).
    pub zram_algorithm_params: bool,
    /// zswap is built (`/sys/module/zswap/parameters` exists).
    pub zswap_present: bool,
    /// Compressors the crypto API lists (`/proc/crypto` entries of type scomp, acomp or
    /// compression), sorted, without duplicates. Modules not yet loaded are not listed.
    pub zswap_compressors: Vec<String>,
    /// zswap's module parameters, file name -> trimmed contents.
    pub zswap_params: BTreeMap<String, String>,
    /// One sentence per fact, joined with "; ": how it was learned, or why it is unknown.
    pub source: String,
}

pub use crate::parse::{CompAlgorithms, parse_comp_algorithm};

/// Names of `/proc/crypto` entries whose `type` is `scomp`, `acomp` or `compression` (the
/// compressors zswap can ask the crypto API for, `zswap.c: zswap_compressor_param_set` ->
/// `crypto_has_acomp`), sorted and without duplicates. Entries are blank-line separated blocks of
/// `key : value` lines; lines without a colon are ignored.
pub fn parse_crypto_compressors(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut name: Option<String> = None;
    let mut kind: Option<String> = None;
    let mut flush = |name: &mut Option<String>, kind: &mut Option<String>| {
        if let (Some(n), Some(k)) = (name.take(), kind.take())
            && matches!(k.as_str(), "scomp" | "acomp" | "compression")
        {
            names.push(n);
        }
        *name = None;
        *kind = None;
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut name, &mut kind);
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            // A `name` line starts a new entry even without a blank line before it.
            "name" => {
                flush(&mut name, &mut kind);
                name = Some(value.trim().to_string());
            }
            "type" => kind = Some(value.trim().to_string()),
            _ => {}
        }
    }
    flush(&mut name, &mut kind);
    names.sort();
    names.dedup();
    names
}

/// Parses what reading `/sys/class/zram-control/hot_add` returns: the new device's number
/// (`zram_drv.c: hot_add_show` prints `"%d\n"`).
pub fn parse_hot_add(text: &str) -> Result<u32, KernelError> {
    text.trim().parse::<u32>().map_err(|_| {
        KernelError::parse(
            "/sys/class/zram-control/hot_add",
            format!("hot_add returned {:?}, not a device number", text.trim()),
        )
    })
}

/// The kernel option that builds a zram backend, for messages (drivers/block/zram/Kconfig).
pub fn zram_backend_config(algo: &str) -> Option<&'static str> {
    Some(match algo {
        "lzo" | "lzo-rle" => "CONFIG_ZRAM_BACKEND_LZO",
        "lz4" => "CONFIG_ZRAM_BACKEND_LZ4",
        "lz4hc" => "CONFIG_ZRAM_BACKEND_LZ4HC",
        "zstd" => "CONFIG_ZRAM_BACKEND_ZSTD",
        "deflate" => "CONFIG_ZRAM_BACKEND_DEFLATE",
        "842" => "CONFIG_ZRAM_BACKEND_842",
        _ => return None,
    })
}

/// The crypto API option that provides a compressor zswap can use, for messages (crypto/Kconfig).
fn crypto_config(algo: &str) -> Option<&'static str> {
    Some(match algo {
        "lzo" | "lzo-rle" => "CONFIG_CRYPTO_LZO",
        "lz4" => "CONFIG_CRYPTO_LZ4",
        "lz4hc" => "CONFIG_CRYPTO_LZ4HC",
        "zstd" => "CONFIG_CRYPTO_ZSTD",
        "deflate" => "CONFIG_CRYPTO_DEFLATE",
        "842" => "CONFIG_CRYPTO_842",
        _ => return None,
    })
}

impl KernelCaps {
    /// `Ok` when this kernel's zram can compress with `algo`; otherwise why not, in the user's
    /// terms ("this kernel's zram offers lzo-rle, lzo, lz4; zstd needs CONFIG_ZRAM_BACKEND_ZSTD").
    pub fn zram_can_run(&self, algo: &str) -> Result<(), KernelError> {
        if !self.zram_present {
            return Err(unsupported(
                "this kernel has no zram (no /sys/class/zram-control: CONFIG_ZRAM off or the \
                 module not loaded)",
            ));
        }
        if self.zram_algorithms.is_empty() {
            return Err(unsupported(format!(
                "this kernel's zram compressors are unknown ({})",
                self.source
            )));
        }
        if self.zram_algorithms.iter().any(|a| a == algo) {
            return Ok(());
        }
        let offers = self.zram_algorithms.join(", ");
        Err(unsupported(match zram_backend_config(algo) {
            Some(cfg) => format!("this kernel's zram offers {offers}; {algo} needs {cfg}"),
            None => {
                format!("this kernel's zram offers {offers}; zram has no compressor named {algo}")
            }
        }))
    }

    /// `Ok` when zswap can use `compressor`; otherwise why not. A compressor built as a module
    /// and not yet loaded is not in `/proc/crypto` but zswap would load it: the message says so.
    pub fn zswap_can_use(&self, compressor: &str) -> Result<(), KernelError> {
        if !self.zswap_present {
            return Err(unsupported(
                "this kernel has no zswap (no /sys/module/zswap: CONFIG_ZSWAP off)",
            ));
        }
        if self.zswap_compressors.iter().any(|c| c == compressor) {
            return Ok(());
        }
        let offers = if self.zswap_compressors.is_empty() {
            "no compressors".to_string()
        } else {
            self.zswap_compressors.join(", ")
        };
        let needs = match crypto_config(compressor) {
            Some(cfg) => format!("{compressor} needs {cfg}"),
            None => format!("the crypto API has no compressor named {compressor}"),
        };
        Err(unsupported(format!(
            "this kernel's crypto API offers zswap {offers}; {needs} (a module not loaded yet \
             is not listed in /proc/crypto, and zswap would try to load it)"
        )))
    }

    /// `Ok` when this kernel's zram can recompress (CONFIG_ZRAM_MULTI_COMP); otherwise why not.
    pub fn can_recompress(&self) -> Result<(), KernelError> {
        if !self.zram_present {
            return Err(unsupported(
                "this kernel has no zram (no /sys/class/zram-control), so no recompression",
            ));
        }
        if self.zram_recompress {
            return Ok(());
        }
        if self.zram_algorithms.is_empty() {
            return Err(unsupported(format!(
                "whether this kernel's zram can recompress is unknown: no zram device could be \
                 read ({})",
                self.source
            )));
        }
        Err(unsupported(
            "this kernel's zram cannot recompress: its devices have no recomp_algorithm \
             attribute (recompression needs CONFIG_ZRAM_MULTI_COMP)",
        ))
    }
}

fn unsupported(why: impl Into<String>) -> KernelError {
    KernelError::Unsupported(why.into())
}

/// The set-level metadata keys a capture records the kernel's capabilities under (with
/// [`set_meta`]), so a report on pages from another host judges candidates against that host's
/// kernel, and a fleet report can say what each host offers.
pub mod meta_keys {
    pub const HOST: &str = "host";
    pub const RELEASE: &str = "kernel.release";
    pub const ZRAM: &str = "kernel.zram";
    pub const ZRAM_ALGORITHMS: &str = "kernel.zram.algorithms";
    pub const ZRAM_RECOMPRESS: &str = "kernel.zram.recompress";
    pub const ZRAM_WRITEBACK: &str = "kernel.zram.writeback";
    pub const ZRAM_ALGORITHM_PARAMS: &str = "kernel.zram.algorithm_params";
    pub const ZSWAP: &str = "kernel.zswap";
    pub const ZSWAP_COMPRESSORS: &str = "kernel.zswap.compressors";
    pub const SOURCE: &str = "kernel.source";
}

/// This machine's host name (`/proc/sys/kernel/hostname`), empty when unreadable.
pub fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|t| t.trim().to_string())
        .unwrap_or_default()
}

/// `caps` and `host` as set-level metadata ([`meta_keys`]): lists space-separated (an empty
/// zram list: unknown), booleans `yes`/`no`, presence `present`/`absent`.
pub fn set_meta(caps: &KernelCaps, host: &str) -> Vec<(String, String)> {
    use meta_keys::*;
    let yn = |b: bool| if b { "yes" } else { "no" }.to_string();
    let pa = |b: bool| if b { "present" } else { "absent" }.to_string();
    vec![
        (HOST.into(), host.to_string()),
        (RELEASE.into(), caps.release.clone()),
        (ZRAM.into(), pa(caps.zram_present)),
        (ZRAM_ALGORITHMS.into(), caps.zram_algorithms.join(" ")),
        (ZRAM_RECOMPRESS.into(), yn(caps.zram_recompress)),
        (ZRAM_WRITEBACK.into(), yn(caps.zram_writeback)),
        (ZRAM_ALGORITHM_PARAMS.into(), yn(caps.zram_algorithm_params)),
        (ZSWAP.into(), pa(caps.zswap_present)),
        (ZSWAP_COMPRESSORS.into(), caps.zswap_compressors.join(" ")),
        (SOURCE.into(), caps.source.clone()),
    ]
}

/// The capabilities a capture recorded with [`set_meta`], and its host; `None` when the set
/// records none (older captures, generated sets). zswap's parameters are not recorded.
pub fn from_set_meta(meta: &BTreeMap<String, String>) -> Option<(KernelCaps, String)> {
    use meta_keys::*;
    let zram = meta.get(ZRAM)?;
    // Recorded by another host, or made by hand: untrusted text, shown on one line.
    let get = |k: &str| meta.get(k).map(|v| crate::parse::one_line(v)).unwrap_or_default();
    let list = |k: &str| get(k).split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let yes = |k: &str| get(k) == "yes";
    let caps = KernelCaps {
        release: get(RELEASE),
        zram_present: zram.trim() == "present",
        zram_algorithms: list(ZRAM_ALGORITHMS),
        zram_recompress: yes(ZRAM_RECOMPRESS),
        zram_writeback: yes(ZRAM_WRITEBACK),
        zram_algorithm_params: yes(ZRAM_ALGORITHM_PARAMS),
        zswap_present: get(ZSWAP) == "present",
        zswap_compressors: list(ZSWAP_COMPRESSORS),
        zswap_params: BTreeMap::new(),
        source: get(SOURCE),
    };
    Some((caps, get(HOST)))
}

/// Reads the running system. Never panics and never changes anything: anything unreadable
/// becomes a reason in `source`.
pub fn read() -> KernelCaps {
    read_at(Path::new("/"))
}

/// Reads `sys/`, `proc/` and `boot/` under `root` (`/` for the live system). zram's abilities
/// come from an existing device, else from the kernel's build configuration; no device is ever
/// created (a read-only command must leave the machine as it found it).
pub fn read_at(root: &Path) -> KernelCaps {
    let mut source: Vec<String> = Vec::new();

    let release = match crate::stat::kernel_release_at(&root.join("proc")) {
        Ok(t) => {
            source.push("release from /proc/sys/kernel/osrelease".to_string());
            t
        }
        Err(e) => {
            source.push(format!("release unknown: /proc/sys/kernel/osrelease: {}", e.reason()));
            String::new()
        }
    };

    let zram = read_zram(root, &release, &mut source);
    let zswap = read_zswap(root, &release, &mut source);

    KernelCaps {
        release,
        zram_present: zram.present,
        zram_algorithms: zram.algorithms,
        zram_recompress: zram.recompress,
        zram_writeback: zram.writeback,
        zram_algorithm_params: zram.algorithm_params,
        zswap_present: zswap.present,
        zswap_compressors: zswap.compressors,
        zswap_params: zswap.params,
        source: source.join("; "),
    }
}

#[derive(Default)]
struct ZramFacts {
    present: bool,
    algorithms: Vec<String>,
    recompress: bool,
    writeback: bool,
    algorithm_params: bool,
}

/// Existing zram devices' numbers under `sys/block`, ascending.
fn zram_devices(root: &Path) -> Vec<u32> {
    crate::stat::zram_ids(&root.join("sys"))
}

/// The attributes of one zram device that reveal its build.
struct DeviceFacts {
    algorithms: Result<Vec<String>, String>,
    recompress: bool,
    writeback: bool,
    algorithm_params: bool,
}

/// Reads zram device `id` under `root`'s `sys`.
fn read_device(root: &Path, id: u32) -> DeviceFacts {
    let sys = root.join("sys");
    let dev = crate::stat::zram_sysfs_at(&sys, id);
    let algorithms = match crate::stat::zram_attr_at(&sys, id, "comp_algorithm") {
        Ok(t) => {
            let parsed = parse_comp_algorithm(&t);
            if parsed.available.is_empty() {
                Err(format!("comp_algorithm lists no compressor ({:?})", t.trim()))
            } else {
                Ok(parsed.available)
            }
        }
        Err(e) => Err(format!("comp_algorithm: {}", e.reason())),
    };
    // Existence, not readability: `algorithm_params` is write-only (0200) and `backing_dev`
    // reads as "none" until set; both exist only when built in.
    DeviceFacts {
        algorithms,
        recompress: dev.join("recomp_algorithm").exists(),
        writeback: dev.join("backing_dev").exists(),
        algorithm_params: dev.join("algorithm_params").exists(),
    }
}

/// The first existing device that reads, with where it was read; else why none did.
fn existing_device(root: &Path, devices: &[u32]) -> Result<(String, DeviceFacts), String> {
    let mut failures = Vec::new();
    for id in devices {
        let path = format!("/sys/block/zram{id}");
        let facts = read_device(root, *id);
        match &facts.algorithms {
            Ok(_) => {
                return Ok((
                    format!("{path}/comp_algorithm (an existing device, not ours)"),
                    facts,
                ));
            }
            Err(e) => failures.push(format!("{path}: {e}")),
        }
    }
    Err(if devices.is_empty() {
        "no zram device exists".to_string()
    } else {
        format!("no existing device was readable ({})", failures.join(", "))
    })
}

/// zram's abilities from the build configuration (kconfig's module documentation cites the
/// kernel's rules); `Err` when the configuration is unreadable or lists no backend.
fn configured_device(root: &Path, release: &str) -> Result<(String, DeviceFacts), String> {
    let config = crate::kconfig::read_at(root, release)?;
    let algorithms = crate::kconfig::zram_algorithms(&config);
    if algorithms.is_empty() {
        return Err(format!("{} enables no CONFIG_ZRAM_BACKEND_*", config.path.display()));
    }
    let facts = DeviceFacts {
        algorithms: Ok(algorithms),
        recompress: config.enabled("CONFIG_ZRAM_MULTI_COMP"),
        writeback: config.enabled("CONFIG_ZRAM_WRITEBACK"),
        algorithm_params: crate::kconfig::release_at_least(release, 6, 12).unwrap_or(false),
    };
    let shown =
        config.path.strip_prefix(root).map_or(config.path.clone(), |p| Path::new("/").join(p));
    Ok((format!("the kernel's build configuration {} (no device read)", shown.display()), facts))
}

fn read_zram(root: &Path, release: &str, source: &mut Vec<String>) -> ZramFacts {
    let control = root.join("sys/class/zram-control").is_dir();
    let devices = zram_devices(root);
    let mut out = ZramFacts { present: control || !devices.is_empty(), ..ZramFacts::default() };
    if !out.present {
        source.push(
            "zram absent: no /sys/class/zram-control and no /sys/block/zram* (CONFIG_ZRAM off \
             or the module not loaded)"
                .to_string(),
        );
        return out;
    }
    source.push(if control {
        "zram present: /sys/class/zram-control exists".to_string()
    } else {
        "zram present: /sys/block/zram* exists (but no /sys/class/zram-control)".to_string()
    });

    // An existing device shows the build's attributes; read it, never write to it.
    let found = existing_device(root, &devices).or_else(|no_device| {
        configured_device(root, release)
            .map_err(|no_config| format!("zram algorithms unknown: {no_device}; {no_config}"))
    });
    let (device, facts) = match found {
        Ok(f) => f,
        Err(why) => {
            source.push(why);
            source.push(
                "zram recompression, writeback and algorithm_params unknown: no device or \
                 configuration was read"
                    .to_string(),
            );
            return out;
        }
    };
    out.algorithms = facts.algorithms.unwrap_or_default();
    out.recompress = facts.recompress;
    out.writeback = facts.writeback;
    out.algorithm_params = facts.algorithm_params;
    source.push(format!("zram algorithms from {device}"));
    source.push(if out.recompress {
        "recompression: recomp_algorithm attribute present (CONFIG_ZRAM_MULTI_COMP on)".to_string()
    } else {
        "recompression: no recomp_algorithm attribute (CONFIG_ZRAM_MULTI_COMP off)".to_string()
    });
    source.push(if out.writeback {
        "writeback: backing_dev attribute present (CONFIG_ZRAM_WRITEBACK on)".to_string()
    } else {
        "writeback: no backing_dev attribute (CONFIG_ZRAM_WRITEBACK off)".to_string()
    });
    source.push(if out.algorithm_params {
        "algorithm_params attribute present".to_string()
    } else {
        "no algorithm_params attribute (kernel before 6.12)".to_string()
    });
    out
}

#[derive(Default)]
struct ZswapFacts {
    present: bool,
    compressors: Vec<String>,
    params: BTreeMap<String, String>,
}

fn read_zswap(root: &Path, release: &str, source: &mut Vec<String>) -> ZswapFacts {
    let mut out = ZswapFacts::default();
    match crate::zswap_state::params_at(&root.join("sys")) {
        Ok(p) => {
            out.present = true;
            out.params = p.values;
            let unreadable: Vec<String> =
                p.unreadable.iter().map(|(name, e)| format!("{name} ({})", e.reason())).collect();
            if unreadable.is_empty() {
                source.push("zswap present: parameters from /sys/module/zswap/parameters".into());
            } else {
                source.push(format!(
                    "zswap present: parameters from /sys/module/zswap/parameters, unreadable: {}",
                    unreadable.join(", ")
                ));
            }
        }
        Err(e) if e.is_not_found() => {
            source.push("zswap absent: no /sys/module/zswap/parameters (CONFIG_ZSWAP off)".into());
        }
        Err(e) => {
            source.push(format!(
                "zswap presence unknown: /sys/module/zswap/parameters: {}",
                e.reason()
            ));
        }
    }
    match fs::read_to_string(root.join("proc/crypto")) {
        Ok(t) => {
            out.compressors = parse_crypto_compressors(&t);
            // zswap asks the crypto API (`crypto_has_acomp`), which may load a module on
            // demand; /proc/crypto shows only what is registered now. Without a module tree
            // for this release nothing can be loaded, so the list is then complete.
            let modules = !release.is_empty() && root.join("lib/modules").join(release).is_dir();
            source.push(if modules {
                format!(
                    "zswap compressors from /proc/crypto (types scomp, acomp, compression; \
                     compressors built as modules in /lib/modules/{release} and not loaded yet \
                     are not listed)"
                )
            } else {
                "zswap compressors from /proc/crypto (types scomp, acomp, compression; no \
                 /lib/modules for this release, so no compressor module can be loaded and the \
                 list is complete)"
                    .to_string()
            });
        }
        Err(e) => source.push(format!("zswap compressors unknown: /proc/crypto: {e}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compression entries of this project's machine's /proc/crypto (6.18.44), with one
    /// cipher and one hash around them so the parser must skip other types.
    const CRYPTO_FIXTURE: &str = include_str!("caps_fixtures/crypto.txt");

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A fake tree: osrelease, /proc/crypto, zswap parameters as on the project's machine.
    fn base_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/sys/kernel/osrelease", "6.18.44-fc-v669\n");
        write(r, "proc/crypto", CRYPTO_FIXTURE);
        for (k, v) in [
            ("accept_threshold_percent", "90"),
            ("compressor", "lzo"),
            ("enabled", "N"),
            ("max_pool_percent", "20"),
            ("shrinker_enabled", "N"),
        ] {
            write(r, &format!("sys/module/zswap/parameters/{k}"), &format!("{v}\n"));
        }
        dir
    }

    fn add_device(r: &Path, id: u32, comp: &str, recomp: bool, backing: bool) {
        let d = format!("sys/block/zram{id}");
        write(r, &format!("{d}/comp_algorithm"), comp);
        write(r, &format!("{d}/algorithm_params"), "");
        if recomp {
            write(r, &format!("{d}/recomp_algorithm"), "");
        }
        if backing {
            write(r, &format!("{d}/backing_dev"), "none\n");
        }
    }

    #[test]
    fn comp_algorithm_brackets_anywhere() {
        let p = parse_comp_algorithm("[lzo-rle] lzo lz4 \n");
        assert_eq!(p.available, ["lzo-rle", "lzo", "lz4"]);
        assert_eq!(p.current.as_deref(), Some("lzo-rle"));
        let p = parse_comp_algorithm("lzo-rle [lzo] lz4");
        assert_eq!(p.available, ["lzo-rle", "lzo", "lz4"]);
        assert_eq!(p.current.as_deref(), Some("lzo"));
        let p = parse_comp_algorithm("lzo lz4 zstd\n");
        assert_eq!(p.current, None);
        assert_eq!(p.available.len(), 3);
    }

    #[test]
    fn comp_algorithm_odd_input() {
        assert_eq!(parse_comp_algorithm(""), CompAlgorithms::default());
        let p = parse_comp_algorithm("[ ] [] lz4 lz4 [zstd");
        assert_eq!(p.available, ["lz4", "zstd"]);
        assert_eq!(p.current, None);
    }

    #[test]
    fn crypto_lists_only_compressors() {
        assert_eq!(parse_crypto_compressors(CRYPTO_FIXTURE), ["deflate", "lzo", "lzo-rle"]);
    }

    #[test]
    fn crypto_odd_input() {
        assert!(parse_crypto_compressors("").is_empty());
        assert!(parse_crypto_compressors("garbage\n:::\n\n\ntype : scomp\n").is_empty());
        // Entries without a blank line between them, and the legacy `compression` type.
        let t = "name : lz4\ntype : compression\nname : zstd\ntype : acomp";
        assert_eq!(parse_crypto_compressors(t), ["lz4", "zstd"]);
    }

    #[test]
    fn hot_add_parse() {
        assert_eq!(parse_hot_add("2\n").unwrap(), 2);
        assert!(parse_hot_add("").is_err());
        let e = parse_hot_add("-1").unwrap_err();
        assert!(
            matches!(&e, KernelError::Parse { path, .. }
            if path == Path::new("/sys/class/zram-control/hot_add")),
            "{e:?}"
        );
        assert!(e.to_string().contains("hot_add returned \"-1\", not a device number"), "{e}");
    }

    #[test]
    fn existing_device_is_read_not_hot_added() {
        let dir = base_tree();
        let r = dir.path();
        fs::create_dir_all(r.join("sys/class/zram-control")).unwrap();
        add_device(r, 0, "[lzo-rle] lzo lz4 \n", false, false);
        // If read_at hot-added despite the device, this read would fail loudly in `source`.
        let caps = read_at(r);
        assert!(caps.zram_present);
        assert_eq!(caps.zram_algorithms, ["lzo-rle", "lzo", "lz4"]);
        assert_eq!(caps.release, "6.18.44-fc-v669");
        assert!(caps.zram_algorithm_params);
        assert!(
            caps.source
                .contains("zram algorithms from /sys/block/zram0/comp_algorithm (an existing device, not ours)"),
            "{}",
            caps.source
        );
        assert!(!r.join("sys/class/zram-control/hot_remove").exists());
        assert!(caps.zram_can_run("lz4").is_ok());
        let why = caps.zram_can_run("zstd").unwrap_err();
        assert!(matches!(why, KernelError::Unsupported(_)), "{why:?}");
        assert_eq!(
            why.to_string(),
            "this kernel's zram offers lzo-rle, lzo, lz4; zstd needs CONFIG_ZRAM_BACKEND_ZSTD"
        );
    }

    #[test]
    fn recomp_and_backing_absent() {
        let dir = base_tree();
        let r = dir.path();
        fs::create_dir_all(r.join("sys/class/zram-control")).unwrap();
        add_device(r, 0, "[lzo-rle] lzo lz4 \n", false, false);
        let caps = read_at(r);
        assert!(!caps.zram_recompress);
        assert!(!caps.zram_writeback);
        assert!(caps.source.contains("no recomp_algorithm attribute (CONFIG_ZRAM_MULTI_COMP off)"));
        assert!(caps.source.contains("no backing_dev attribute (CONFIG_ZRAM_WRITEBACK off)"));
        let err = caps.can_recompress().unwrap_err().to_string();
        assert!(err.contains("CONFIG_ZRAM_MULTI_COMP"), "{err}");
    }

    #[test]
    fn recomp_and_backing_present() {
        let dir = base_tree();
        let r = dir.path();
        fs::create_dir_all(r.join("sys/class/zram-control")).unwrap();
        add_device(r, 0, "lzo [zstd]\n", true, true);
        let caps = read_at(r);
        assert!(caps.zram_recompress);
        assert!(caps.zram_writeback);
        assert!(caps.can_recompress().is_ok());
        assert!(caps.source.contains("recomp_algorithm attribute present"));
    }

    #[test]
    fn unreadable_device_falls_to_next() {
        let dir = base_tree();
        let r = dir.path();
        fs::create_dir_all(r.join("sys/class/zram-control")).unwrap();
        // zram0 lacks comp_algorithm (a directory entry only); zram1 is fine.
        fs::create_dir_all(r.join("sys/block/zram0")).unwrap();
        add_device(r, 1, "[lz4]\n", true, false);
        let caps = read_at(r);
        assert_eq!(caps.zram_algorithms, ["lz4"]);
        assert!(caps.source.contains("/sys/block/zram1/comp_algorithm"));
    }

    #[test]
    fn no_device_and_no_config_is_unknown_with_reason() {
        let dir = base_tree();
        let r = dir.path();
        write(r, "sys/class/zram-control/hot_add", "3\n");
        let caps = read_at(r);
        assert!(caps.zram_present);
        assert!(caps.zram_algorithms.is_empty());
        assert!(
            caps.source.contains(
                "zram algorithms unknown: no zram device exists; /proc/config.gz: No such file"
            ),
            "{}",
            caps.source
        );
        assert!(caps.source.contains("/boot/config-6.18.44-fc-v669"), "{}", caps.source);
        let err = caps.zram_can_run("lzo").unwrap_err().to_string();
        assert!(err.contains("unknown"), "{err}");
        assert!(caps.can_recompress().unwrap_err().to_string().contains("unknown"));
    }

    /// No device: the build configuration says what zram offers, and nothing is created (the
    /// old reader hot-added a device here, which a fake tree shows as no new zram directory).
    #[test]
    fn no_device_reads_the_build_configuration() {
        let dir = base_tree();
        let r = dir.path();
        write(r, "sys/class/zram-control/hot_add", "3\n");
        write(
            r,
            "boot/config-6.18.44-fc-v669",
            "CONFIG_ZRAM=y\nCONFIG_ZRAM_BACKEND_ZSTD=y\nCONFIG_ZRAM_BACKEND_LZO=y\n\
             CONFIG_ZRAM_MULTI_COMP=y\n# CONFIG_ZRAM_WRITEBACK is not set\n",
        );
        let caps = read_at(r);
        assert_eq!(caps.zram_algorithms, ["lzo-rle", "lzo", "zstd"]);
        assert!(caps.zram_recompress && !caps.zram_writeback && caps.zram_algorithm_params);
        assert!(
            caps.source.contains(
                "zram algorithms from the kernel's build configuration \
                 /boot/config-6.18.44-fc-v669 (no device read)"
            ),
            "{}",
            caps.source
        );
        assert!(zram_devices(r).is_empty());
        assert_eq!(fs::read_to_string(r.join("sys/class/zram-control/hot_add")).unwrap(), "3\n");
    }

    #[test]
    fn zswap_present_with_crypto() {
        let dir = base_tree();
        let caps = read_at(dir.path());
        assert!(!caps.zram_present);
        assert!(caps.source.contains("zram absent"));
        assert!(caps.zswap_present);
        assert_eq!(caps.zswap_params.get("compressor").map(String::as_str), Some("lzo"));
        assert_eq!(caps.zswap_params.get("enabled").map(String::as_str), Some("N"));
        assert_eq!(caps.zswap_params.len(), 5);
        assert_eq!(caps.zswap_compressors, ["deflate", "lzo", "lzo-rle"]);
        assert!(caps.zswap_can_use("lzo-rle").is_ok());
        let err = caps.zswap_can_use("zstd").unwrap_err().to_string();
        assert!(
            err.contains("deflate, lzo, lzo-rle") && err.contains("CONFIG_CRYPTO_ZSTD"),
            "{err}"
        );
        assert!(caps.source.contains("zswap compressors from /proc/crypto"));
        assert!(caps.source.contains("the list is complete"), "{}", caps.source);
        assert!(caps.zram_can_run("lzo").unwrap_err().to_string().contains("no zram"));
        // With a module tree for the release, unloaded modules may exist: the source says so.
        fs::create_dir_all(dir.path().join("lib/modules/6.18.44-fc-v669")).unwrap();
        let caps = read_at(dir.path());
        assert!(
            caps.source.contains("built as modules in /lib/modules/6.18.44-fc-v669"),
            "{}",
            caps.source
        );
    }

    #[test]
    fn zswap_absent() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "proc/crypto", CRYPTO_FIXTURE);
        let caps = read_at(dir.path());
        assert!(!caps.zswap_present);
        assert!(caps.zswap_params.is_empty());
        assert!(
            caps.source
                .contains("zswap absent: no /sys/module/zswap/parameters (CONFIG_ZSWAP off)")
        );
        assert!(caps.source.contains("release unknown"));
        assert!(caps.zswap_can_use("lzo").unwrap_err().to_string().contains("no zswap"));
    }

    #[test]
    fn empty_root_never_panics_and_roundtrips() {
        let dir = tempfile::tempdir().unwrap();
        let caps = read_at(dir.path());
        assert!(!caps.zram_present && !caps.zswap_present);
        assert!(caps.source.contains("/proc/crypto"));
        let json = serde_json::to_string(&caps).unwrap();
        let back: KernelCaps = serde_json::from_str(&json).unwrap();
        assert_eq!(back, caps);
    }

    /// The live kernel: `read()` must agree with the files read here independently.
    #[test]
    #[ignore = "live: needs kernel zram (scripts/test runs it)"]
    fn live_read_agrees_with_sysfs_and_crypto() {
        let why = (!Path::new("/sys/class/zram-control").exists())
            .then(|| "/sys/class/zram-control missing (no zram in this kernel)".to_string());
        let Some(_live) = zmem_testkit::live(why) else { return };
        let caps = read();
        println!("{caps:#?}");
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(caps.release, release.trim());
        if let Ok(text) = fs::read_to_string("/sys/block/zram0/comp_algorithm") {
            let expect: Vec<String> =
                text.split_whitespace().map(|t| t.replace(['[', ']'], "")).collect();
            assert_eq!(caps.zram_algorithms, expect);
            assert_eq!(
                caps.zram_recompress,
                Path::new("/sys/block/zram0/recomp_algorithm").exists()
            );
            assert_eq!(caps.zram_writeback, Path::new("/sys/block/zram0/backing_dev").exists());
        }
        if let Ok(crypto) = fs::read_to_string("/proc/crypto") {
            // Independent scan: every "type : scomp|acomp" line's entry name must be listed.
            let mut last_name = String::new();
            for line in crypto.lines() {
                let mut kv = line.splitn(2, ':').map(str::trim);
                match (kv.next(), kv.next()) {
                    (Some("name"), Some(v)) => last_name = v.to_string(),
                    (Some("type"), Some("scomp" | "acomp")) => {
                        assert!(caps.zswap_compressors.contains(&last_name), "{last_name}")
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(caps.zswap_present, Path::new("/sys/module/zswap/parameters").exists());
    }

    #[test]
    fn capabilities_survive_the_set_metadata() {
        let caps = KernelCaps {
            release: "6.18.0".into(),
            zram_present: true,
            zram_algorithms: vec!["lzo-rle".into(), "lzo".into(), "lz4".into()],
            zram_recompress: false,
            zram_writeback: true,
            zram_algorithm_params: true,
            zswap_present: true,
            zswap_compressors: vec!["deflate".into(), "lzo".into()],
            zswap_params: BTreeMap::new(),
            source: "zram algorithms from /sys/block/zram0/comp_algorithm".into(),
        };
        let meta: BTreeMap<String, String> = set_meta(&caps, "web-7").into_iter().collect();
        assert_eq!(meta["kernel.zram.algorithms"], "lzo-rle lzo lz4");
        assert_eq!(from_set_meta(&meta), Some((caps, "web-7".to_string())));
        assert_eq!(from_set_meta(&BTreeMap::new()), None);
    }
}
