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
    /// The script's `apply_now` shell function ([`now_function`]); not in the JSON.
    #[serde(skip)]
    now_function: String,
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

/// The `apply_now` shell function of `a` ([`now_function`]), for a script to call.
pub(crate) fn now_function_text(a: &Apply) -> &str {
    &a.now_function
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
    let mut a = Apply {
        device: dev,
        device_note,
        sysfs,
        size_rule,
        generator_conf,
        generator_versions,
        service,
        timer,
        warnings: Vec::new(),
        now_function: String::new(),
    };
    a.now_function = now_function(p, &a, prio, &size_line);
    a
}

/// The `--now` part of the script: a shell function that checks every state first (zram
/// present, or loaded with modprobe; the device present, or hot-added; not mounted; the
/// algorithms offered; recompression and algorithm_params present), then reconfigures, so that
/// under `set -eu` it either stops before changing anything or runs to the end. From any state:
/// no zram module, no device, a device that is not swap (reset, no swapoff), a zram swap in
/// use (swapoff first), another swap area active (left alone; this one gets a priority above
/// it).
fn now_function(p: &Policy, a: &Apply, base_prio: i32, size_line: &str) -> String {
    let mut s = format!(
        "apply_now() {{\n\
         \x20 dev=${{ZMEM_ZRAM_DEVICE:-{dev}}}\n\
         \x20 sys=/sys/block/$dev\n\
         \x20 # zram_drv.c: zram_init creates num_devices (1) at load; hot_add makes more.\n\
         \x20 if [ ! -d /sys/class/zram-control ] && [ ! -d \"$sys\" ] && command -v modprobe > /dev/null 2>&1; then\n\
         \x20   modprobe zram || true\n\
         \x20 fi\n\
         \x20 if [ ! -d /sys/class/zram-control ] && [ ! -d \"$sys\" ]; then\n\
         \x20   echo \"zmem: this kernel has no zram (no /sys/class/zram-control: CONFIG_ZRAM off or the module missing); nothing was changed\" >&2\n\
         \x20   return 1\n\
         \x20 fi\n\
         \x20 if [ ! -d \"$sys\" ]; then\n\
         \x20   # hot_add gives the lowest free number, which may not be $dev's.\n\
         \x20   new=zram$(cat /sys/class/zram-control/hot_add)\n\
         \x20   if [ \"$new\" != \"$dev\" ]; then\n\
         \x20     echo \"zmem: $dev does not exist; hot_add made $new, which is configured instead\" >&2\n\
         \x20     dev=$new\n\
         \x20     sys=/sys/block/$dev\n\
         \x20   fi\n\
         \x20 fi\n\
         \x20 if grep -q \"^/dev/$dev \" /proc/mounts; then\n\
         \x20   echo \"zmem: /dev/$dev is mounted, not a swap device: nothing was changed\" >&2\n\
         \x20   return 1\n\
         \x20 fi\n",
        dev = a.device
    );
    let mut algos: Vec<&str> = vec![p.algo.as_str()];
    algos.extend(p.recomp.iter().map(String::as_str));
    for algo in algos {
        s += &format!(
            "  if ! tr -d '[]' < \"$sys/comp_algorithm\" | tr ' ' '\\n' | grep -qx '{algo}'; then\n\
             \x20   echo \"zmem: this kernel's zram offers no {algo} ($(cat \"$sys/comp_algorithm\")): nothing was changed\" >&2\n\
             \x20   return 1\n\
             \x20 fi\n"
        );
    }
    if !p.recomp.is_empty() {
        s += "  if [ ! -e \"$sys/recomp_algorithm\" ]; then\n\
              \x20   echo \"zmem: this kernel's zram has no recomp_algorithm (CONFIG_ZRAM_MULTI_COMP off): nothing was changed\" >&2\n\
              \x20   return 1\n\
              \x20 fi\n";
    }
    if p.dict {
        s += "  if [ ! -e \"$sys/algorithm_params\" ]; then\n\
              \x20   echo \"zmem: this kernel's zram has no algorithm_params (Linux 6.12 or later): nothing was changed\" >&2\n\
              \x20   return 1\n\
              \x20 fi\n";
    }
    s += "  # swapoff moves every page the device stores back into RAM: that much must be free.\n\
          \x20 if grep -q \"^/dev/$dev \" /proc/swaps; then\n\
          \x20   swapoff \"/dev/$dev\"\n\
          \x20 fi\n";
    s += &format!(
        "  # Above every other swap area (left as it is), so this one is filled first; 32767 is the\n\
         \x20 # highest priority swapon takes (mm/swapfile.c: SWAP_FLAG_PRIO_MASK).\n\
         \x20 prio=$(awk -v p={base_prio} 'NR > 1 && $5 + 0 >= p {{ p = $5 + 1 }} END {{ if (p > 32767) p = 32767; print p }}' /proc/swaps)\n"
    );
    for l in configure(p, "$dev", "$sys", size_line, "\"$prio\"") {
        let l = l.replace("/dev/$dev", "\"/dev/$dev\"");
        if l.starts_with("mkswap") {
            // A container without udev has no device node yet.
            s += "  [ -b \"/dev/$dev\" ] || { command -v udevadm > /dev/null 2>&1 && udevadm settle || true; }\n\
                  \x20 [ -b \"/dev/$dev\" ] || mknod \"/dev/$dev\" b $(tr ':' ' ' < \"$sys/dev\")\n";
        }
        s += &format!("  {l}\n");
    }
    s += "  echo \"zmem: /dev/$dev configured: $(cat \"$sys/comp_algorithm\"), ${size_mib} MiB, swap priority $prio\" >&2\n}\n";
    s
}

/// Standard base64 (RFC 4648, with padding), wrapped at 76 columns.
pub(crate) fn base64(data: &[u8]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_lab::candidates;
    use zmem_lab::decision::{Contender, Decision, Kind, Pick, Reason};

    fn policy(name: &str) -> Policy {
        candidates("lzo-rle").into_iter().find(|p| p.name == name).unwrap()
    }

    /// The decision's apply script for `p` (a zram decision).
    fn script_for(p: &Policy, dict: Option<&[u8]>, period: f64) -> String {
        let c = Contender {
            pick: Pick::Zram(0),
            config: format!("zram {}", p.name),
            memory_saved_bytes: 1 << 20,
            memory_saved_ci: [1 << 19, 3 << 19],
            cpu_seconds_per_second: 1e-4,
            swap_in_p50_ns: 2000,
            swap_in_p99_ns: 4000,
            within_budgets: true,
            runs_now: false,
        };
        let d = Decision {
            kind: Kind::Zram,
            config: c.config.clone(),
            chosen: Some(c),
            memory_saved_bytes: 1 << 20,
            memory_saved_ci: [1 << 19, 3 << 19],
            cpu_seconds_per_second: 1e-4,
            swap_in_p99_ns: 4000,
            tie: false,
            runner_up: None,
            margin_bytes: 0,
            uncertainty_bytes: 0,
            reason: Reason::SavesMost,
            now_config: "none".into(),
            now_bytes: 2 << 20,
            pages: 512,
            swap_behind: None,
        };
        crate::decision::zram_apply_script(&d, p, None, period, dict, &[])
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
        let s = script_for(&p, None, 3600.0) + &a.sysfs.join("\n");
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
        let s = script_for(&p, None, 3600.0);
        assert!(!s.contains(".timer"), "{s}");
        assert!(s.contains("compression-algorithm = zstd\n"));
        let d = policy("zstd + dict");
        let a = forms(&d, None, 3600.0);
        let s = script_for(&d, Some(b"dictionary"), 3600.0);
        assert!(a.sysfs.contains(
            &"echo 'algo=zstd dict=/etc/zmem/zram-dict' > /sys/block/zram0/algorithm_params".into()
        ));
        assert!(s.contains("echo 'algo=zstd dict=/etc/zmem/zram-dict' > $sys/algorithm_params"));
        assert!(s.contains("compression-algorithm = zstd(dict=/etc/zmem/zram-dict)"));
        assert!(s.contains(&base64(b"dictionary")));
        // The dictionary is written before the device is configured.
        assert!(
            s.find("base64 -d").unwrap()
                < s.find("> \"$sys/comp_algorithm\"").or(s.find("> $sys/comp_algorithm")).unwrap()
        );
    }

    fn at(s: &str, what: &str) -> usize {
        s.find(what).unwrap_or_else(|| panic!("{what:?} missing from\n{s}"))
    }

    /// Issue 29: the script ran `swapoff` on a device that was not swap (exit 4 under
    /// `set -eu`) after installing the generator file. Now every state is checked before
    /// anything changes, zram is loaded and the device hot-added when missing, swapoff runs
    /// only for an active swap area, and `--now` configures before anything is installed.
    #[test]
    fn the_script_checks_every_state_before_changing_anything() {
        let p = policy("lzo-rle + zstd(idle)");
        let a = forms(&p, None, 3600.0);
        let s = script_for(&p, None, 3600.0);
        // Loading and hot-adding, guarded.
        let modprobe = at(&s, "command -v modprobe > /dev/null 2>&1; then\n    modprobe zram");
        assert!(at(&s, "[ ! -d /sys/class/zram-control ] && [ ! -d \"$sys\" ] &&") < modprobe);
        let hot_add = at(&s, "new=zram$(cat /sys/class/zram-control/hot_add)");
        assert!(modprobe < hot_add);
        assert!(s.contains("dev=${ZMEM_ZRAM_DEVICE:-zram0}"));
        // swapoff only for an active swap area: every swapoff line is inside that test.
        for (i, line) in s.lines().enumerate() {
            if line.trim_start().starts_with("swapoff") {
                let before = s.lines().nth(i - 1).unwrap();
                assert!(before.contains("if grep -q \"^/dev/$dev \" /proc/swaps; then"), "{s}");
            }
        }
        assert!(a.sysfs[0].starts_with("grep -q '^/dev/zram0 ' /proc/swaps && swapoff"));
        // The checks come before the first change (swapoff, reset).
        let first_change = at(&s, "    swapoff \"/dev/$dev\"");
        for check in [
            "grep -qx 'lzo-rle'",
            "grep -qx 'zstd'",
            "[ ! -e \"$sys/recomp_algorithm\" ]",
            "grep -q \"^/dev/$dev \" /proc/mounts",
        ] {
            assert!(at(&s, check) < first_change, "{check} after the first change");
        }
        assert!(first_change < at(&s, "echo 1 > $sys/reset"));
        // Another swap area is left alone; this one's priority is above it.
        assert!(s.contains("awk -v p=100 'NR > 1 && $5 + 0 >= p { p = $5 + 1 }"));
        assert!(s.contains("swapon -p \"$prio\" \"/dev/$dev\""));
        // The device is configured before anything is installed; --no-persist installs nothing.
        let run_now = at(&s, "apply_now\n");
        let persist = at(&s, "if [ \"$persist\" = 1 ]; then\n");
        assert!(
            run_now < persist && persist < at(&s, "  f=$ROOT/etc/systemd/zram-generator.conf.d")
        );
        assert!(s.contains("--no-persist) persist=0 ;;"));
        // A plain algorithm never touches recomp_algorithm.
        let plain = forms(&policy("lz4"), None, 3600.0);
        let ps = script_for(&policy("lz4"), None, 3600.0);
        assert!(!ps.contains("recomp_algorithm") && !plain.sysfs.join("\n").contains("recomp"));
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
        let s = script_for(&policy("lz4"), None, 3600.0);
        assert!(s.contains(line) && s.contains("echo \"${size_mib}M\" > $sys/disksize"));
        assert!(s.contains("# Size: min(ram / 2, 4096) MiB"));
    }

    /// Every script is valid shell (`sh -n`), for every candidate.
    #[test]
    fn every_script_parses() {
        for p in candidates("lzo-rle") {
            let dict: Option<&[u8]> = if p.dict { Some(b"dict") } else { None };
            let s = script_for(&p, dict, 3600.0);
            let out =
                std::process::Command::new("sh").arg("-n").arg("-c").arg(&s).output().unwrap();
            assert!(out.status.success(), "{}: {}", p.name, String::from_utf8_lossy(&out.stderr));
        }
    }
}
