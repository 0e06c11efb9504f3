//! What the zram apply script says about its set-up beside its fixed text
//! (`templates/apply-zram.sh` makes the device, its zram-generator drop-in, and a systemd
//! service and timer for what zram-generator cannot express: the periodic `idle` marking and
//! `recompress`; zram-generator configures a device once, at boot, and its maintainers keep
//! one-shot triggers out of it, docs/REFERENCES.md [zram-generator-issues]). zmem runs nothing
//! and changes nothing on the system.
//!
//! Which zram-generator version each key needs (docs/REFERENCES.md [zram-generator]):
//! `compression-algorithm` with one algorithm, `zram-size` and `swap-priority` are in every 1.x
//! release; a list of algorithms (the later ones secondaries for recompression) and parameters
//! in parentheses (`zstd(dict=...)`) need 1.2 (absent from 1.1.2). Up to 1.2.1 the generator
//! writes a secondary's parameters to the wrong attribute (zram-generator#215, fix open in
//! #237), so the secondaries here carry none.

use serde::{Deserialize, Serialize};

use zmem_lab::operating::{LIMIT_HEADROOM, Named, SIZE_HEADROOM, Sizing};
use zmem_lab::{Now, Policy};

/// Where a dictionary is installed by the script.
pub const DICT_PATH: &str = "/etc/zmem/zram-dict";

/// The dictionary's file beside the apply script (written 0600 by
/// [`crate::outputs::write_lab_outputs`]; the script checks its SHA-256 and installs it at
/// [`DICT_PATH`]). Never inside the script, the JSON or the HTML: it is made of the captured
/// memory.
pub const DICT_FILE: &str = "zmem-zram.dict";

/// Unit names of the periodic recompression.
pub const UNIT: &str = "zmem-zram-recompress";

/// What a zram apply script says about its set-up, beside its fixed text: the device, its
/// size rule, and the zram-generator versions its drop-in needs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Apply {
    /// `zram0`, ... (the live swap device, else zram0).
    pub device: String,
    /// Which device and why.
    pub device_note: String,
    /// `mem_limit` in MiB (0: none) and why.
    #[serde(default)]
    pub mem_limit_mib: u64,
    #[serde(default)]
    pub mem_limit_rule: String,
    /// The device's size, the one rule the script and its zram-generator drop-in share
    /// (e.g. `min(ram / 2, 4096) MiB, ram = MemTotal in MiB`).
    pub size_rule: String,
    /// Which zram-generator version each key used needs.
    pub generator_versions: Vec<String>,
    /// It recompresses periodically: the script installs a service and timer.
    pub timer: bool,
}

/// The device and its swap priority: the live ones when known. A recorded name that is not a
/// zram device name is not shown as one: zram0 stands in, and the note says why (the apply
/// script refuses it, naming the field).
fn device(now: Option<&Now>) -> (String, String, u64) {
    match now {
        Some(n) => match crate::script::zram_device("now.config.device", &n.config.device) {
            Ok(dev) => {
                let note = format!("{dev} is the live zram swap device the pages came from");
                (dev, note, n.config.disksize_bytes)
            }
            Err(e) => ("zram0".into(), format!("zram0 is assumed: {e}"), 0),
        },
        None => (
            "zram0".into(),
            "no live zram swap device: zram0 is assumed (the script loads zram and hot-adds it \
             when missing; ZMEM_ZRAM_DEVICE=zramN names another)"
                .into(),
            0,
        ),
    }
}

/// The size in MiB the script sets (0: its default rule) and the rule in words: the live
/// device's size (kept, rounded up to MiB), else the decision's sizing, else half the RAM, at
/// most 4 GiB.
pub fn size(disksize: u64, sizing: Option<&Sizing>) -> (u64, String) {
    match sizing {
        _ if disksize > 0 => {
            let mib = disksize.div_ceil(1 << 20);
            (mib, format!("{mib} MiB (the live device's size)"))
        }
        Some(s) => {
            let mib = s.disksize_bytes.div_ceil(1 << 20);
            let moved = s.moved_out_bytes.div_ceil(1 << 20);
            (mib, format!("{mib} MiB ({SIZE_HEADROOM} x the {moved} MiB moved out at {})", at(s)))
        }
        None => (0, "min(ram / 2, 4096) MiB, ram = MemTotal in MiB".into()),
    }
}

/// The operating point a size is for, in words.
pub fn at(s: &Sizing) -> &'static str {
    match s.at {
        Named::Today => "today's pressure",
        Named::ColdAge => "the cold age",
        Named::AllPages => "every page swapped",
    }
}

/// `mem_limit` in MiB (0: none) and why.
fn mem_limit(sizing: Option<&Sizing>) -> (u64, String) {
    match sizing {
        Some(s) => {
            let mib = s.mem_limit_bytes.div_ceil(1 << 20);
            let pool = s.pool_bytes.div_ceil(1 << 20);
            (mib, format!("{mib} MiB ({LIMIT_HEADROOM} x its {pool} MiB pool there)"))
        }
        None => (0, "none (nothing is known to move out)".into()),
    }
}

/// The set-up notes for policy `p`.
pub fn forms(p: &Policy, now: Option<&Now>, sizing: Option<&Sizing>) -> Apply {
    let (device, device_note, disksize) = device(now);
    let (mem_limit_mib, mem_limit_rule) = mem_limit(sizing);
    let mut generator_versions = vec![
        "zram-size, swap-priority, compression-algorithm with one algorithm: any zram-generator 1.x"
            .to_string(),
    ];
    if !p.recomp.is_empty() || p.dict {
        generator_versions.push(
            "compression-algorithm with secondaries or parameters in parentheses: \
             zram-generator 1.2 or later (not in 1.1.2); 1.2.1 writes secondaries' parameters to \
             the wrong attribute (issue #215), so check `cat /sys/block/DEV/recomp_algorithm` and \
             `algorithm_params` took after boot"
                .into(),
        );
    }
    if mem_limit_mib > 0 {
        generator_versions.push(
            "zram-resident-limit (mem_limit): zram-generator 1.2 or later (not in 1.1.2)".into(),
        );
    }
    if p.recompresses() {
        generator_versions.push(
            "periodic recompression: no zram-generator version triggers it (one-shot triggers \
             are out of its scope, issues #164, #178): the systemd timer the script installs does"
                .into(),
        );
    }
    Apply {
        device,
        device_note,
        size_rule: size(disksize, sizing).1,
        mem_limit_mib,
        mem_limit_rule,
        generator_versions,
        timer: p.recompresses(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_lab::candidates;

    fn policy(name: &str) -> Policy {
        candidates("lzo-rle").into_iter().find(|p| p.name == name).unwrap()
    }

    #[test]
    fn secondaries_and_recompression_name_what_zram_generator_cannot_do() {
        let a = forms(&policy("lzo-rle + zstd(idle)"), None, None);
        assert!(a.timer);
        let v = a.generator_versions.join("\n");
        assert!(v.contains("zram-generator 1.2 or later") && v.contains("systemd timer"), "{v}");
        let a = forms(&policy("zstd"), None, None);
        assert!(!a.timer && a.generator_versions.len() == 1);
        assert_eq!(a.size_rule, "min(ram / 2, 4096) MiB, ram = MemTotal in MiB");
    }

    /// A recorded device name that is no zram device name is never shown as one.
    #[test]
    fn a_hostile_device_name_is_not_shown_as_one() {
        let now = Now {
            config: zmem_lab::LiveConfig {
                device: "/dev/zram0\ntouch /tmp/X".into(),
                comp_algorithm: "lzo-rle".into(),
                disksize_bytes: 1 << 30,
                swap_priority: Some(5),
                ..Default::default()
            },
            exact: true,
            ..Default::default()
        };
        let a = forms(&policy("lz4"), Some(&now), None);
        assert_eq!(a.device, "zram0");
        assert!(a.device_note.contains("now.config.device") && !a.device_note.contains('\n'));
        assert_eq!(a.size_rule, "min(ram / 2, 4096) MiB, ram = MemTotal in MiB");
    }
}
