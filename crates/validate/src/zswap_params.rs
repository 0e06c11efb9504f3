//! zswap's module parameters for `zmem validate lab`: the configuration a kernel run writes
//! (a [`ZswapParams`], [`parse`]d from the command line), and a guard ([`ParamsGuard`]) that saves every parameter it is about to
//! write and writes each back as it was when dropped: on success, on error, and on SIGINT or
//! SIGTERM (the CLI's `SignalStop` turns those into a flag that every waiting loop of the run
//! polls, so the run returns through its error path and the guard drops; SIGKILL cannot be
//! caught, and is the one way to leave zswap changed).
//!
//! The parameters (6.18 mm/zswap.c, `module_param_cb`/`module_param_named`): `enabled`
//! (`zswap_enabled_param_set()`), `compressor` (`zswap_compressor_param_set()`: a new pool is
//! made and becomes current; the old one is freed once empty), `max_pool_percent`,
//! `accept_threshold_percent`, `shrinker_enabled`. The order of writes matters only for
//! `enabled`: it goes last when turning zswap on (every other parameter is in place before the
//! first store), and when restoring it goes first where it was off (no store happens under the
//! parameters being restored) and last where it was on.

use std::path::{Path, PathBuf};

use zmem_lab::ZswapParams;

/// Where the kernel shows zswap's parameters.
pub const PARAMS_DIR: &str = "/sys/module/zswap/parameters";

/// The parameters written by a run, in the order they are written (`enabled` apart).
const WRITTEN: [&str; 4] =
    ["compressor", "max_pool_percent", "accept_threshold_percent", "shrinker_enabled"];

/// Parses one zswap configuration a kernel run sets:
/// `COMPRESSOR[,max_pool_percent=N][,accept_threshold_percent=N][,shrinker=on|off]` (`mpp`,
/// `accept` and `shrinker_enabled=Y|N` are accepted too). Defaults: the kernel's (20, 90, off).
/// Its name in reports is [`ZswapParams::label`].
pub fn parse(spec: &str) -> Result<ZswapParams, String> {
    let mut parts = spec.split(',').map(str::trim);
    let compressor = parts.next().filter(|c| !c.is_empty()).ok_or_else(|| {
        format!("zswap configuration {spec:?}: no compressor (e.g. lzo,max_pool_percent=20)")
    })?;
    if !compressor.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(format!("zswap configuration {spec:?}: bad compressor {compressor:?}"));
    }
    let mut s = ZswapParams { compressor: compressor.to_string(), ..ZswapParams::default() };
    for p in parts {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| format!("zswap configuration {spec:?}: {p:?} is not KEY=VALUE"))?;
        let percent = |v: &str, max: u32| -> Result<u32, String> {
            v.parse::<u32>().ok().filter(|&n| n <= max).ok_or_else(|| {
                format!("zswap configuration {spec:?}: {k}={v} is not a number 0..={max}")
            })
        };
        match k {
            // The kernel takes any uint for max_pool_percent; more than 100 % of RAM is
            // no limit at all.
            "max_pool_percent" | "mpp" => s.max_pool_percent = percent(v, 100)?,
            "accept_threshold_percent" | "accept" => s.accept_threshold_percent = percent(v, 100)?,
            "shrinker" | "shrinker_enabled" => {
                s.shrinker_enabled = parse_bool(v)
                    .ok_or_else(|| format!("zswap configuration {spec:?}: {k}={v} is not on/off"))?
            }
            _ => return Err(format!("zswap configuration {spec:?}: unknown key {k:?}")),
        }
    }
    Ok(s)
}

/// The values a run writes, parameter by parameter, `enabled` last.
fn writes(s: &ZswapParams) -> Vec<(&'static str, String)> {
    vec![
        ("compressor", s.compressor.clone()),
        ("max_pool_percent", s.max_pool_percent.to_string()),
        ("accept_threshold_percent", s.accept_threshold_percent.to_string()),
        ("shrinker_enabled", if s.shrinker_enabled { "Y" } else { "N" }.to_string()),
        ("enabled", "Y".to_string()),
    ]
}

/// `Y`/`N`, `on`/`off`, `1`/`0`.
fn parse_bool(v: &str) -> Option<bool> {
    match v.trim() {
        "Y" | "y" | "1" | "on" | "true" => Some(true),
        "N" | "n" | "0" | "off" | "false" => Some(false),
        _ => None,
    }
}

/// Every parameter's value as read from `dir`, by name (trimmed), the five a run writes.
/// Read by zmem-kernel's one reader of zswap's parameters (`zswap_state::params_in`).
pub fn snapshot(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let mut read = zmem_kernel::zswap_state::params_in(dir).map_err(|e| e.to_string())?;
    WRITTEN
        .iter()
        .chain(std::iter::once(&"enabled"))
        .map(|name| match read.values.remove(*name) {
            Some(v) => Ok((name.to_string(), v)),
            None => Err(match read.unreadable.iter().find(|(n, _)| n == name) {
                Some((_, e)) => e.to_string(),
                None => format!("{}: no such parameter", dir.join(name).display()),
            }),
        })
        .collect()
}

/// The order to write `saved` back in: `enabled` first where it was off, last where it was on.
fn restore_order(saved: &[(String, String)]) -> Vec<(String, String)> {
    let (enabled, mut rest): (Vec<_>, Vec<_>) =
        saved.iter().cloned().partition(|(n, _)| n == "enabled");
    match enabled.into_iter().next() {
        Some(e) if parse_bool(&e.1) == Some(false) => {
            rest.insert(0, e);
            rest
        }
        Some(e) => {
            rest.push(e);
            rest
        }
        None => rest,
    }
}

/// zswap's parameters as a run set them; written back as they were when dropped.
#[derive(Debug)]
pub struct ParamsGuard {
    dir: PathBuf,
    saved: Vec<(String, String)>,
}

impl ParamsGuard {
    /// Saves the five parameters of `dir`, then writes `s` (and `enabled=Y`). A write that
    /// fails restores what was written so far (the guard drops) and says which.
    pub fn apply(dir: &Path, s: &ZswapParams) -> Result<Self, String> {
        let g = Self { dir: dir.to_path_buf(), saved: snapshot(dir)? };
        for (name, value) in writes(s) {
            let p = dir.join(name);
            std::fs::write(&p, &value)
                .map_err(|e| format!("writing zswap {name}={value} ({}): {e}", p.display()))?;
        }
        Ok(g)
    }

    /// What was there before, by name.
    pub fn saved(&self) -> &[(String, String)] {
        &self.saved
    }

    /// Writes every saved value back; the parameters that could not be written, with why.
    fn restore(&self) -> Vec<String> {
        let mut failed = Vec::new();
        let now = zmem_kernel::zswap_state::params_in(&self.dir).map(|p| p.values);
        for (name, value) in restore_order(&self.saved) {
            let p = self.dir.join(&name);
            // Skip what already holds the value: writing `compressor` makes a new pool.
            if now.as_ref().is_ok_and(|now| now.get(&name) == Some(&value)) {
                continue;
            }
            if let Err(e) = std::fs::write(&p, &value) {
                failed.push(format!("{name}={value}: {e}"));
            }
        }
        failed
    }
}

impl Drop for ParamsGuard {
    fn drop(&mut self) {
        for f in self.restore() {
            eprintln!("zmem: could not restore zswap's parameter {f}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(dir: &Path, enabled: &str) {
        for (n, v) in [
            ("compressor", "lzo\n"),
            ("max_pool_percent", "20\n"),
            ("accept_threshold_percent", "90\n"),
            ("shrinker_enabled", "N\n"),
            ("enabled", enabled),
        ] {
            std::fs::write(dir.join(n), v).unwrap();
        }
    }

    fn temp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("zmem-zswap-params-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn specs_parse_with_the_kernels_defaults() {
        let s = parse("lzo-rle").unwrap();
        assert_eq!(
            (s.max_pool_percent, s.accept_threshold_percent, s.shrinker_enabled),
            (20, 90, false)
        );
        let s = parse("lzo,max_pool_percent=5,accept=70,shrinker=on").unwrap();
        assert_eq!(s.compressor, "lzo");
        assert_eq!(
            (s.max_pool_percent, s.accept_threshold_percent, s.shrinker_enabled),
            (5, 70, true)
        );
        assert_eq!(
            s.label(),
            "zswap lzo max_pool_percent=5 shrinker=on accept_threshold_percent=70"
        );
        for bad in ["", ",mpp=3", "lzo,mpp", "lzo,mpp=101", "lzo,shrinker=maybe", "lzo,x=1", "l/zo"]
        {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_guard_writes_the_settings_and_restores_what_was_there() {
        let d = temp("restore");
        fake(&d, "N\n");
        let before = snapshot(&d).unwrap();
        let s = parse("lzo-rle,mpp=7,accept=50,shrinker=on").unwrap();
        {
            let g = ParamsGuard::apply(&d, &s).unwrap();
            assert_eq!(g.saved(), before.as_slice());
            let now = snapshot(&d).unwrap();
            let get = |n: &str| now.iter().find(|(k, _)| k == n).unwrap().1.clone();
            assert_eq!(get("compressor"), "lzo-rle");
            assert_eq!(get("max_pool_percent"), "7");
            assert_eq!(get("accept_threshold_percent"), "50");
            assert_eq!(get("shrinker_enabled"), "Y");
            assert_eq!(get("enabled"), "Y");
        }
        assert_eq!(snapshot(&d).unwrap(), before);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_failed_write_restores_what_was_written() {
        let d = temp("fail");
        fake(&d, "N\n");
        // max_pool_percent readable but not writable (procfs has no write for it, root or not):
        // compressor is written before it, and must be written back.
        std::fs::remove_file(d.join("max_pool_percent")).unwrap();
        std::os::unix::fs::symlink("/proc/version", d.join("max_pool_percent")).unwrap();
        let e = ParamsGuard::apply(&d, &parse("lzo-rle").unwrap()).unwrap_err();
        assert!(e.contains("max_pool_percent"), "{e}");
        let now = snapshot(&d).unwrap();
        assert!(now.contains(&("compressor".into(), "lzo".into())), "{now:?}");
        assert!(now.contains(&("enabled".into(), "N".into())), "{now:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn enabled_is_restored_first_when_it_was_off_and_last_when_on() {
        let s = |e: &str| {
            vec![("compressor".to_string(), "lzo".to_string()), ("enabled".into(), e.into())]
        };
        assert_eq!(restore_order(&s("N"))[0].0, "enabled");
        assert_eq!(restore_order(&s("Y"))[1].0, "enabled");
        assert_eq!(restore_order(&s("Y")).len(), 2);
    }
}
