//! How to apply a recommended configuration, three ways: the zram sysfs attribute writes, a
//! zram-generator.conf section, and a systemd service and timer for what zram-generator cannot
//! express (the periodic `idle` marking and `recompress`: zram-generator configures a device
//! once, at boot, and its maintainers keep one-shot triggers out of it, docs/REFERENCES.md
//! [zram-generator-issues]). [`crate::decision::zram_apply_script`] puts them in the one script
//! that applies a zram decision, for the user to review;
//! zmem runs nothing and changes nothing on the system.
//!
//! Which zram-generator version each key needs (docs/REFERENCES.md [zram-generator]):
//! `compression-algorithm` with one algorithm, `zram-size` and `swap-priority` are in every 1.x
//! release; a list of algorithms (the later ones secondaries for recompression) and parameters
//! in parentheses (`zstd(dict=...)`) need 1.2 (absent from 1.1.2). Up to 1.2.1 the generator
//! writes a secondary's parameters to the wrong attribute (zram-generator#215, fix open in
//! #237), so the secondaries here carry none.

use serde::{Deserialize, Serialize};

use zmem_lab::{LabReport, Now, Policy};

/// Where a dictionary is installed by the script.
pub const DICT_PATH: &str = "/etc/zmem/zram-dict";

/// The dictionary's file beside the apply script (written 0600 by
/// [`crate::outputs::write_lab_outputs`]; the script checks its SHA-256 and installs it at
/// [`DICT_PATH`]). Never inside the script, the JSON or the HTML: it is made of the captured
/// memory.
pub const DICT_FILE: &str = "zmem-zram.dict";

/// Unit names of the periodic recompression.
pub const UNIT: &str = "zmem-zram-recompress";

/// The three ways to set a configuration up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Apply {
    /// `zram0`, ... (the live swap device, else zram0).
    pub device: String,
    /// Which device and why.
    pub device_note: String,
    /// Shell lines that reconfigure the device through /sys/block (swapoff if it is swap,
    /// reset, attributes, disksize, mkswap, swapon), for the device named; the script runs the
    /// same steps with every state checked first.
    pub sysfs: Vec<String>,
    /// The device's size, the one rule the sysfs lines, the zram-generator section and this
    /// text share (e.g. `min(ram / 2, 4096) MiB, ram = MemTotal in MiB`).
    pub size_rule: String,
    /// A `[zramN]` section for /etc/systemd/zram-generator.conf(.d).
    pub generator_conf: String,
    /// Which zram-generator version each key used needs.
    pub generator_versions: Vec<String>,
    /// The service that recompresses periodically (recompressing configurations only).
    pub service: Option<String>,
    /// The timer that starts it every period.
    pub timer: Option<String>,
    /// What the reader must know before applying it (made from generated pages; a kernel that
    /// cannot run it), one sentence each; the script's first comment lines say them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The device, its size and its swap priority: the live ones when known. A recorded name that
/// is not a zram device name is not shown as one: zram0 stands in, and the note says why (the
/// apply script refuses it, naming the field).
fn device(now: Option<&Now>) -> (String, String, u64, i32) {
    match now {
        Some(n) => match crate::script::zram_device("now.config.device", &n.config.device) {
            Ok(dev) => {
                let note = format!("{dev} is the live zram swap device the pages came from");
                (dev, note, n.config.disksize_bytes, n.config.swap_priority.unwrap_or(100))
            }
            Err(e) => ("zram0".into(), format!("zram0 is assumed: {e}"), 0, 100),
        },
        None => (
            "zram0".into(),
            "no live zram swap device: zram0 is assumed (the script loads zram and hot-adds it \
             when missing; ZMEM_ZRAM_DEVICE=zramN names another)"
                .into(),
            0,
            100,
        ),
    }
}

/// The recompress pass the service runs, as attribute writes under `sys` (/sys/block/zramN):
/// for idle pages, first recompress the slots marked idle a period ago and still untouched,
/// then mark every slot idle for the next pass (so a page is recompressed once it has been idle
/// for a whole period); for huge pages, recompress the huge slots.
fn pass(p: &Policy, sys: &str) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(r) = &p.recompress {
        v.push(format!("echo '{r}' > {sys}/recompress"));
        v.push(format!("echo 1 > {sys}/compact"));
    }
    if p.mark_idle {
        v.push(format!("echo all > {sys}/idle"));
    }
    v
}

/// The three forms for the report's recommendation.
pub fn build(r: &LabReport) -> Apply {
    let rec = &r.recommendation;
    let policy = r.policies.iter().find(|row| row.policy.name == rec.config).map(|row| &row.policy);
    let single = Policy::single(&rec.config);
    let mut a = forms(policy.unwrap_or(&single), r.now.as_ref(), r.budgets.recompress_period_secs);
    if r.source.kind == "builtin" {
        a.warnings.push(format!(
            "made from zmem's built-in generated pages, not this machine's memory ({})",
            r.source.fallback_reason.as_deref().unwrap_or("the built-in set was asked for")
        ));
    }
    if !rec.available {
        a.warnings.push(format!(
            "this kernel cannot run it: {}",
            rec.unavailable_reason.as_deref().unwrap_or("unknown reason")
        ));
    }
    a
}

/// The size in MiB, as a shell assignment to `size_mib` (the script and the sysfs lines), as a
/// zram-generator `zram-size` expression, and in words. `disksize`: the live device's bytes
/// (kept, rounded up to MiB), 0: half the RAM, at most 4 GiB.
fn size(disksize: u64) -> (String, String, String) {
    if disksize > 0 {
        let mib = disksize.div_ceil(1 << 20);
        (format!("size_mib={mib}"), mib.to_string(), format!("{mib} MiB (the live device's size)"))
    } else {
        // MemTotal is in kB: kB / 2048 = floor(RAM in MiB / 2), as the generator's ram / 2.
        (
            "size_mib=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 2048 )); \
             [ \"$size_mib\" -le 4096 ] || size_mib=4096"
                .into(),
            "min(ram / 2, 4096)".into(),
            "min(ram / 2, 4096) MiB, ram = MemTotal in MiB".into(),
        )
    }
}

/// The configuring steps for `dev` (a name or `$dev`) under `sys`, `prio` the swap priority
/// (a number or `$prio`); the device must already exist and not be swap.
fn configure(p: &Policy, dev: &str, sys: &str, size_line: &str, prio: &str) -> Vec<String> {
    let mut v =
        vec![format!("echo 1 > {sys}/reset"), format!("echo {} > {sys}/comp_algorithm", p.algo)];
    if p.dict {
        v.push(format!("echo 'algo={} dict={DICT_PATH}' > {sys}/algorithm_params", p.algo));
    }
    for (i, a) in p.recomp.iter().enumerate() {
        v.push(format!("echo 'algo={a} priority={}' > {sys}/recomp_algorithm", i + 1));
    }
    v.push(size_line.to_string());
    v.push(format!("echo \"${{size_mib}}M\" > {sys}/disksize"));
    v.push(format!("mkswap /dev/{dev} > /dev/null"));
    v.push(format!("swapon -p {prio} /dev/{dev}"));
    v
}

/// Builds the three forms for policy `p`; `period_secs` is the recompression timer's period.
pub fn forms(p: &Policy, now: Option<&Now>, period_secs: f64) -> Apply {
    let (dev, device_note, disksize, prio) = device(now);
    let sys = format!("/sys/block/{dev}");
    let (size_line, zram_size, size_rule) = size(disksize);
    let mut sysfs = vec![format!("grep -q '^/dev/{dev} ' /proc/swaps && swapoff /dev/{dev}")];
    sysfs.extend(configure(p, &dev, &sys, &size_line, &prio.to_string()));

    let mut algos = if p.dict { format!("{}(dict={DICT_PATH})", p.algo) } else { p.algo.clone() };
    for a in &p.recomp {
        algos += &format!(" {a}");
    }
    let generator_conf = format!(
        "[{dev}]\nzram-size = {zram_size}\ncompression-algorithm = {algos}\nswap-priority = {prio}\n"
    );
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
    if p.recompresses() {
        generator_versions.push(
            "periodic recompression: no zram-generator version triggers it (one-shot triggers \
             are out of its scope, issues #164, #178): the systemd timer below does"
                .into(),
        );
    }
    let (service, timer) = if p.recompresses() {
        let cmds = pass(p, &sys).join(" && ");
        let what = if p.mark_idle {
            "pages idle for a whole period"
        } else {
            "huge (incompressible by the primary) pages"
        };
        let service = format!(
            "[Unit]\nDescription=Recompress {what} of /dev/{dev} with the secondary algorithm (zmem lab)\n\
             After=systemd-zram-setup@{dev}.service swap.target\n\
             ConditionPathExists={sys}/recompress\n\n\
             [Service]\nType=oneshot\nExecStart=/bin/sh -c \"{cmds}\"\n"
        );
        let period = period_secs.round().max(1.0) as u64;
        let timer = format!(
            "[Unit]\nDescription=Recompress zram pages every {period} s (zmem lab)\n\n\
             [Timer]\nOnBootSec={period}s\nOnUnitActiveSec={period}s\n\n\
             [Install]\nWantedBy=timers.target\n"
        );
        (Some(service), Some(timer))
    } else {
        (None, None)
    };
    Apply {
        device: dev,
        device_note,
        sysfs,
        size_rule,
        generator_conf,
        generator_versions,
        service,
        timer,
        warnings: Vec::new(),
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
    fn a_recompressing_configuration_has_sysfs_the_generator_and_the_units() {
        let a = forms(&policy("lzo-rle + zstd(idle)"), None, 3600.0);
        let s = a.sysfs.join("\n") + &a.generator_conf + &a.generator_versions.join("\n");
        let svc = a.service.as_deref().unwrap();
        for want in [
            "echo lzo-rle > /sys/block/zram0/comp_algorithm",
            "echo 'algo=zstd priority=1' > /sys/block/zram0/recomp_algorithm",
            "[zram0]\nzram-size = min(ram / 2, 4096)\ncompression-algorithm = lzo-rle zstd\n",
            "zram-generator 1.2 or later",
        ] {
            assert!(s.contains(want), "{want:?} missing from\n{s}");
        }
        assert!(svc.contains(
            "echo 'type=idle' > /sys/block/zram0/recompress && echo 1 > /sys/block/zram0/compact \
             && echo all > /sys/block/zram0/idle"
        ));
        assert!(a.timer.as_deref().unwrap().contains("OnUnitActiveSec=3600s"));
        // Huge pages: no idle marking.
        let h = forms(&policy("lzo-rle + deflate(huge)"), None, 600.0);
        let svc = h.service.unwrap();
        assert!(
            svc.contains("echo 'type=huge' > /sys/block/zram0/recompress") && !svc.contains("idle")
        );
    }

    #[test]
    fn a_single_algorithm_has_no_timer_and_a_dictionary_is_named() {
        let a = forms(&policy("zstd"), None, 3600.0);
        assert!(a.timer.is_none() && a.service.is_none());
        assert!(a.generator_conf.contains("compression-algorithm = zstd\n"));
        let a = forms(&policy("zstd + dict"), None, 3600.0);
        assert!(a.sysfs.contains(
            &"echo 'algo=zstd dict=/etc/zmem/zram-dict' > /sys/block/zram0/algorithm_params".into()
        ));
        assert!(
            a.generator_conf.contains("compression-algorithm = zstd(dict=/etc/zmem/zram-dict)")
        );
    }

    /// A recorded device name that is no zram device name never reaches the shell lines.
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
        let a = forms(&policy("lz4"), Some(&now), 3600.0);
        assert_eq!(a.device, "zram0");
        assert!(a.sysfs.iter().all(|l| !l.contains("touch")), "{:?}", a.sysfs);
        assert!(a.device_note.contains("now.config.device") && !a.device_note.contains('\n'));
    }

    /// One size rule in all three forms: the sysfs lines' shell arithmetic gives
    /// min(ram / 2, 4096) MiB on this machine, as the generator's expression says.
    #[test]
    fn one_size_rule_in_the_three_forms() {
        let a = forms(&policy("lz4"), None, 3600.0);
        assert_eq!(a.size_rule, "min(ram / 2, 4096) MiB, ram = MemTotal in MiB");
        assert!(a.generator_conf.contains("\nzram-size = min(ram / 2, 4096)\n"));
        let line = a.sysfs.iter().find(|l| l.starts_with("size_mib=")).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{line}; echo $size_mib"))
            .output()
            .unwrap();
        let got: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let kb: u64 = std::fs::read_to_string("/proc/meminfo")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap();
        assert_eq!(got, (kb / 1024 / 2).min(4096));
        assert!(a.sysfs.contains(&"echo \"${size_mib}M\" > /sys/block/zram0/disksize".into()));
    }
}
