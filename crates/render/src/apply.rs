//! How to apply a recommended configuration, three ways: the zram sysfs attribute writes, a
//! zram-generator.conf section, and a systemd service and timer for what zram-generator cannot
//! express (the periodic `idle` marking and `recompress`: zram-generator configures a device
//! once, at boot, and its maintainers keep one-shot triggers out of it, docs/REFERENCES.md
//! [zram-generator-issues]). [`script`] puts them in one shell script for the user to review;
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

/// Unit names of the periodic recompression.
pub const UNIT: &str = "zmem-zram-recompress";

/// The three ways to set a configuration up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Apply {
    /// `zram0`, ... (the live swap device, else zram0).
    pub device: String,
    /// Which device and why.
    pub device_note: String,
    /// Shell lines that reconfigure the device through /sys/block (swapoff, reset, attributes,
    /// disksize, mkswap, swapon).
    pub sysfs: Vec<String>,
    /// A `[zramN]` section for /etc/systemd/zram-generator.conf(.d).
    pub generator_conf: String,
    /// Which zram-generator version each key used needs.
    pub generator_versions: Vec<String>,
    /// The service that recompresses periodically (recompressing configurations only).
    pub service: Option<String>,
    /// The timer that starts it every period.
    pub timer: Option<String>,
}

/// The device, its size and its swap priority: the live ones when known.
fn device(now: Option<&Now>) -> (String, String, u64, i32) {
    match now {
        Some(n) => {
            let dev = n.config.device.trim_start_matches("/dev/").to_string();
            let note =
                format!("{} is the live zram swap device the pages came from", n.config.device);
            (dev, note, n.config.disksize_bytes, n.config.swap_priority.unwrap_or(100))
        }
        None => (
            "zram0".into(),
            "no live zram swap device: zram0 and a size of half the RAM are assumed".into(),
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
    match policy {
        Some(p) => forms(p, r.now.as_ref(), r.budgets.recompress_period_secs),
        None => {
            forms(&Policy::single(&rec.config), r.now.as_ref(), r.budgets.recompress_period_secs)
        }
    }
}

/// Builds the three forms for policy `p`; `period_secs` is the recompression timer's period.
pub fn forms(p: &Policy, now: Option<&Now>, period_secs: f64) -> Apply {
    let (dev, device_note, disksize, prio) = device(now);
    let sys = format!("/sys/block/{dev}");
    let size = if disksize > 0 {
        disksize.to_string()
    } else {
        "$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) * 512 ))".into()
    };
    let mut sysfs = vec![
        format!("swapoff /dev/{dev}"),
        format!("echo 1 > {sys}/reset"),
        format!("echo {} > {sys}/comp_algorithm", p.algo),
    ];
    if p.dict {
        sysfs.push(format!("echo 'algo={} dict={DICT_PATH}' > {sys}/algorithm_params", p.algo));
    }
    for (i, a) in p.recomp.iter().enumerate() {
        sysfs.push(format!("echo 'algo={a} priority={}' > {sys}/recomp_algorithm", i + 1));
    }
    sysfs.push(format!("echo {size} > {sys}/disksize"));
    sysfs.push(format!("mkswap /dev/{dev}"));
    sysfs.push(format!("swapon -p {prio} /dev/{dev}"));

    let mut algos = if p.dict { format!("{}(dict={DICT_PATH})", p.algo) } else { p.algo.clone() };
    for a in &p.recomp {
        algos += &format!(" {a}");
    }
    let zram_size = if disksize > 0 {
        format!("{}", disksize.div_ceil(1 << 20))
    } else {
        "min(ram / 2, 4096)".into()
    };
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
    Apply { device: dev, device_note, sysfs, generator_conf, generator_versions, service, timer }
}

/// Standard base64 (RFC 4648, with padding), wrapped at 76 columns.
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len() * 4 / 3 + data.len() / 57 + 4);
    for (i, c) in data.chunks(3).enumerate() {
        if i > 0 && i % 19 == 0 {
            out.push('\n');
        }
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The apply script for `config` (the recommendation's name), `a` its forms, `dict` its
/// dictionary if it has one. Each part is commented; the sysfs part runs only with `--now`.
pub fn script(config: &str, a: &Apply, dict: Option<&[u8]>) -> String {
    let mut s = format!(
        "#!/bin/sh\n\
         # Apply the zram configuration `zmem lab` recommends: {config}\n\
         #\n\
         # Written by zmem {ver} for you to review. zmem ran none of it and changed nothing on\n\
         # this system. Run it as root: `sh THIS-FILE` installs the zram-generator section{units}\n\
         # (taking effect at the next boot); `sh THIS-FILE --now` also reconfigures\n\
         # /dev/{dev} at once through /sys/block (swapoff first moves every page it stores\n\
         # back into RAM: make sure there is room).\n\
         #\n\
         # Device: {note}.\n\
         set -eu\n\n",
        ver = env!("CARGO_PKG_VERSION"),
        units = if a.timer.is_some() { " and the recompression timer" } else { "" },
        dev = a.device,
        note = a.device_note,
    );
    if let Some(d) = dict {
        s += &format!(
            "# 0. The dictionary zstd compresses with ({} bytes, trained on the measured pages).\n\
             #    zram reads it when algorithm_params is written, before disksize.\n\
             mkdir -p {dir}\n\
             base64 -d > {DICT_PATH} <<'ZMEM_DICT'\n{}\nZMEM_DICT\n\n",
            d.len(),
            base64(d),
            dir = DICT_PATH.rsplit_once('/').map_or("/etc/zmem", |x| x.0),
        );
    }
    s += "# 1. zram-generator: the device's configuration at every boot.\n";
    for v in &a.generator_versions {
        s += &format!("#    {v}\n");
    }
    s += &format!(
        "mkdir -p /etc/systemd/zram-generator.conf.d\n\
         cat > /etc/systemd/zram-generator.conf.d/60-zmem.conf <<'ZMEM_CONF'\n\
         # zmem lab: {config}\n{}ZMEM_CONF\n\n",
        a.generator_conf
    );
    if let (Some(service), Some(timer)) = (&a.service, &a.timer) {
        s += &format!(
            "# 2. systemd units for what zram-generator cannot express: the periodic recompression.\n\
             cat > /etc/systemd/system/{UNIT}.service <<'ZMEM_UNIT'\n{service}ZMEM_UNIT\n\
             cat > /etc/systemd/system/{UNIT}.timer <<'ZMEM_UNIT'\n{timer}ZMEM_UNIT\n\
             systemctl daemon-reload\n\
             systemctl enable --now {UNIT}.timer\n\n"
        );
    } else {
        s += "# 2. No timer: this configuration does no background recompression.\n\
              systemctl daemon-reload\n\n";
    }
    s += &format!(
        "# 3. With --now: reconfigure /dev/{} immediately through its sysfs attributes.\n\
         if [ \"${{1:-}}\" = --now ]; then\n",
        a.device
    );
    for l in &a.sysfs {
        s += &format!("  {l}\n");
    }
    s += "fi\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_lab::candidates;

    fn policy(name: &str) -> Policy {
        candidates("lzo-rle").into_iter().find(|p| p.name == name).unwrap()
    }

    #[test]
    fn base64_matches_rfc_4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        let long = base64(&[0u8; 60]);
        assert_eq!(long.lines().next().unwrap().len(), 76);
    }

    #[test]
    fn a_recompressing_script_has_sysfs_the_generator_and_the_units() {
        let p = policy("lzo-rle + zstd(idle)");
        let a = forms(&p, None, 3600.0);
        let s = script(&p.name, &a, None);
        for want in [
            "echo lzo-rle > /sys/block/zram0/comp_algorithm",
            "echo 'algo=zstd priority=1' > /sys/block/zram0/recomp_algorithm",
            "[zram0]\nzram-size = min(ram / 2, 4096)\ncompression-algorithm = lzo-rle zstd\n",
            "zram-generator 1.2 or later",
            "/etc/systemd/system/zmem-zram-recompress.service",
            "/etc/systemd/system/zmem-zram-recompress.timer",
            "OnUnitActiveSec=3600s",
            "echo 'type=idle' > /sys/block/zram0/recompress && echo 1 > /sys/block/zram0/compact \
             && echo all > /sys/block/zram0/idle",
            "systemctl enable --now zmem-zram-recompress.timer",
            "zmem ran none of it",
        ] {
            assert!(s.contains(want), "{want:?} missing from\n{s}");
        }
        assert!(s.starts_with("#!/bin/sh\n"));
        // Huge pages: no idle marking.
        let h = forms(&policy("lzo-rle + deflate(huge)"), None, 600.0);
        let svc = h.service.unwrap();
        assert!(
            svc.contains("echo 'type=huge' > /sys/block/zram0/recompress") && !svc.contains("idle")
        );
    }

    #[test]
    fn a_single_algorithm_has_no_timer_and_a_dictionary_is_installed() {
        let p = policy("zstd");
        let a = forms(&p, None, 3600.0);
        assert!(a.timer.is_none() && a.service.is_none());
        let s = script(&p.name, &a, None);
        assert!(!s.contains(".timer") && s.contains("No timer"), "{s}");
        assert!(s.contains("compression-algorithm = zstd\n"));
        let d = policy("zstd + dict");
        let a = forms(&d, None, 3600.0);
        let s = script(&d.name, &a, Some(b"dictionary"));
        assert!(s.contains(
            "echo 'algo=zstd dict=/etc/zmem/zram-dict' > /sys/block/zram0/algorithm_params"
        ));
        assert!(s.contains("compression-algorithm = zstd(dict=/etc/zmem/zram-dict)"));
        assert!(s.contains(&base64(b"dictionary")));
        // The dictionary is written before the device is configured.
        assert!(s.find("base64 -d").unwrap() < s.find("comp_algorithm").unwrap());
    }
}
