//! The decision's scripts, checked without touching the machine (issue 53, items 1 and 3):
//!
//! - every script zmem writes (every candidate policy as a zram decision, zswap decisions with
//!   and without a disk swap, keep, refusal, undo) parses (`sh -n`) and passes
//!   `shellcheck -s sh` (a live test: shellcheck is a tool `.ci/run` installs);
//! - run in a sandbox (a scratch directory with stub commands first on PATH, `ZMEM_SYSFS` and
//!   `ZMEM_PROCFS` pointing at a fake /sys and /proc), a zram and a zswap apply write what was
//!   decided into the fake tree and the undo puts it back;
//! - hostile values (newline, `$(...)`, backquotes, quotes, `;`, `\`, control characters) in
//!   every field that reaches a script are refused with an error naming the field, or give a
//!   script that parses, passes shellcheck and, run in the sandbox, makes no marker file; the
//!   text and HTML reports carry no control character or markup from them;
//! - a dictionary decision's dictionary is beside the script (0600), never in the script, the
//!   JSON or the HTML; the script checks its SHA-256 and installs it 0600.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use zmem_lab::decision::{Kind, Reason, SwapBehind};
use zmem_lab::{self as lab, Config, LabReport, LiveConfig, Now, Policy, ZswapParams};
use zmem_render as render;
use zmem_render::decision as dec;

mod common;
use common::decision;
use common::sandbox::{Sandbox, Scratch, ok};

// ---- Decisions and candidates ------------------------------------------------------------

/// zswap's parameters (accept_threshold_percent 90).
fn zswap_params(compressor: &str, max_pool_percent: u32, shrinker: bool) -> ZswapParams {
    common::zswap_params(compressor, max_pool_percent, shrinker)
}

/// A live zram device as the page set's metadata records it.
fn now(device: &str, algo: &str, disksize: u64, prio: Option<i32>) -> Now {
    Now {
        config: LiveConfig {
            device: device.into(),
            comp_algorithm: algo.into(),
            disksize_bytes: disksize,
            swap_priority: prio,
            ..Default::default()
        },
        exact: true,
        ..Default::default()
    }
}

fn zram_script(p: &Policy, now: Option<&Now>, dict: Option<&[u8]>) -> String {
    let d = decision(Kind::Zram, &format!("zram {}", p.name), None);
    dec::zram_apply_script(&d, p, now, 3600.0, dict, &[]).expect("a zram script")
}

fn zswap_script(existing: Option<&str>) -> String {
    let c = zswap_params("lzo", 20, true);
    let behind = SwapBehind {
        existing: existing.map(String::from),
        size_bytes: 32 << 20,
        new_file: existing.is_none().then(|| "/var/lib/zmem/swapfile".into()),
    };
    let d = decision(Kind::Zswap, &common::zswap_name(&c), Some(behind));
    dec::zswap_apply_script(&d, &c).expect("a zswap script")
}

/// One small lab run (1,024 generated pages), shared by the tests that need a whole report.
fn report() -> &'static LabReport {
    static R: OnceLock<LabReport> = OnceLock::new();
    R.get_or_init(common::small_report)
}

/// `r` with its decision made the zram policy named `name`.
fn decided(r: &LabReport, name: &str) -> LabReport {
    let mut r = r.clone();
    let i = r
        .candidates
        .iter()
        .position(|c| matches!(&c.config, Config::Zram { policy } if policy.name == name))
        .expect("the policy's candidate");
    common::decide_for(&mut r, i);
    assert_eq!(r.decision.config, format!("zram {name}"));
    r
}

/// Every script zmem writes, by name.
fn every_script() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for p in lab::candidates("lzo-rle") {
        let dict: Option<&[u8]> = if p.dict { Some(b"dictionary") } else { None };
        v.push((format!("zram {}", p.name), zram_script(&p, None, dict)));
        if p.dict {
            let name = format!("zram {} trained on the host", p.name);
            v.push((name, zram_script(&p, None, None)));
        }
    }
    let live = now("/dev/zram3", "lzo-rle", 1 << 30, Some(7));
    v.push((
        "zram lz4 on a live device".into(),
        zram_script(&Policy::single("lz4"), Some(&live), None),
    ));
    let agent = common::with_agent(zmem_kernel::reclaim::Exclude {
        comms: vec!["sshd".into()],
        ..Default::default()
    });
    let agent = dec::zram_apply_script(&agent, &Policy::single("lz4"), None, 3600.0, None, &[]);
    v.push(("zram lz4 with the proactive reclaim agent".into(), agent.expect("a script")));
    let damon = common::with_damon(&["/system.slice"]);
    let damon = dec::zram_apply_script(&damon, &Policy::single("lz4"), None, 3600.0, None, &[]);
    v.push(("zram lz4 with a DAMON pageout scheme".into(), damon.expect("a script")));
    let memcg = common::with_memcg(&[("/app.slice", 1 << 30)]);
    let memcg = dec::zram_apply_script(&memcg, &Policy::single("lz4"), None, 3600.0, None, &[]);
    v.push(("zram lz4 with the memory.reclaim driver".into(), memcg.expect("a script")));
    v.push(("zswap, a swap file".into(), zswap_script(None)));
    v.push(("zswap, a disk swap".into(), zswap_script(Some("/dev/vda2"))));
    let r = report();
    let mut keep = r.clone();
    keep.decision.kind = Kind::Keep;
    v.push(("keep".into(), dec::apply_script(&keep).unwrap()));
    let mut none = r.clone();
    none.decision.kind = Kind::None;
    none.decision.chosen = None;
    v.push(("refusal".into(), dec::apply_script(&none).unwrap()));
    v.push(("undo".into(), dec::undo_script()));
    v
}

// ---- Parsing and shellcheck ----------------------------------------------------------------

fn sh_n(script: &str) -> Result<(), String> {
    let out = Command::new("sh").args(["-n", "-c", script]).output().expect("sh");
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into()) }
}

fn shellcheck_available() -> bool {
    Command::new("shellcheck").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// shellcheck's findings on `script` (empty: none).
fn shellcheck(script: &str) -> String {
    let dir = Scratch::new("shellcheck");
    let path = dir.0.join("script.sh");
    fs::write(&path, script).unwrap();
    let out =
        Command::new("shellcheck").args(["-s", "sh"]).arg(&path).output().expect("shellcheck");
    if out.status.success() { String::new() } else { String::from_utf8_lossy(&out.stdout).into() }
}

#[test]
fn every_script_parses() {
    for (name, s) in every_script() {
        assert!(s.starts_with("#!/bin/sh\n"), "{name}");
        if let Err(e) = sh_n(&s) {
            panic!("{name}: sh -n: {e}\n{s}");
        }
    }
}

#[test]
#[ignore = "live: needs shellcheck (.ci/run installs it)"]
fn every_script_passes_shellcheck() {
    let t = zmem_testkit::may_skip();
    if !shellcheck_available() {
        t.skip_optional("no shellcheck on PATH (.ci/run installs it)");
        return;
    }
    for (name, s) in every_script() {
        let findings = shellcheck(&s);
        assert!(findings.is_empty(), "{name}: shellcheck -s sh:\n{findings}\n{s}");
    }
}

/// The generated part is one block of assignments: everything after it is the same text for
/// every decision of a kind (the templates), and no value appears outside that block and the
/// comments.
#[test]
fn only_the_assignment_block_differs() {
    let tail = |s: &str| {
        let start = s.find("# Everything from here on is fixed text").expect("the head");
        s[start..].to_string()
    };
    let scripts: Vec<String> =
        lab::candidates("lzo-rle").iter().map(|p| zram_script(p, None, Some(b"d"))).collect();
    assert!(scripts.iter().all(|s| tail(s) == tail(&scripts[0])));
    for s in &scripts {
        let block_start = s.find("# The decision's values").unwrap();
        let block = &s[block_start..s.find("# Everything from here on").unwrap()];
        let assignment = |l: &str| l.starts_with("ZMEM_") && l.contains('=');
        let directive = |l: &str| l.starts_with("# shellcheck disable=SC");
        assert!(block.lines().skip(1).all(|l| assignment(l) || directive(l)), "{block}");
        // Before the block: the shebang and comments only.
        assert!(s[..block_start].lines().skip(1).all(|l| l.starts_with('#')), "{s}");
    }
    assert_eq!(tail(&zswap_script(None)), tail(&zswap_script(Some("/dev/vda2"))));
}

/// A zram decision in the sandbox: a live zram swap (lzo-rle, 64 MiB, priority 5) reconfigured
/// to lzo-rle + zstd(idle) with its units and drop-in; the undo puts the device back.
#[test]
fn a_zram_decision_runs_in_the_sandbox_and_is_undone() {
    let sb = Sandbox::new("zram");
    sb.zram_device(0, "lzo [lzo-rle] lz4 lz4hc zstd deflate 842", "67108864");
    let swaps = "/dev/zram0 partition 65532 0 5\n/dev/vda2 partition 1048572 0 10\n";
    sb.put("proc/swaps", &(sb.get("proc/swaps") + swaps));
    let p =
        lab::candidates("lzo-rle").into_iter().find(|p| p.name == "lzo-rle + zstd(idle)").unwrap();
    let live = now("/dev/zram0", "lzo-rle", 64 << 20, Some(5));
    let script = zram_script(&p, Some(&live), None);
    ok(&sb.run("apply.sh", &script, &[]), "apply");
    // What was decided, in the fake tree.
    assert_eq!(sb.get("sys/block/zram0/comp_algorithm"), "lzo-rle\n");
    assert_eq!(sb.get("sys/block/zram0/recomp_algorithm"), "algo=zstd priority=1\n");
    assert_eq!(sb.get("sys/block/zram0/disksize"), "64M\n");
    assert_eq!(sb.get("sys/block/zram0/reset"), "1\n");
    assert_eq!(sb.get("sys/module/zswap/parameters/enabled"), "N\n", "zram decided: zswap off");
    let calls = sb.calls();
    let swapoff = calls.find("swapoff /dev/zram0").expect("swapoff");
    let swapon = calls.find("swapon -p 11 /dev/zram0").expect("above the other area's 10");
    assert!(swapoff < swapon, "{calls}");
    // The files say what was decided, on the device the script's notes name; the units are
    // there because the notes say it recompresses.
    let a = render::apply::forms(&p, Some(&live), None);
    assert_eq!(a.device, "zram0");
    assert!(a.timer && script.contains(&format!("{}.service and .timer", render::apply::UNIT)));
    let conf = sb.get("root/etc/systemd/zram-generator.conf.d/60-zmem.conf");
    assert_eq!(
        conf,
        format!(
            "# zmem lab: zram {}\n[zram0]\nzram-size = 64\ncompression-algorithm = {} {}\n\
             swap-priority = 5\n",
            p.name,
            p.algo,
            p.recomp.join(" ")
        )
    );
    let unit = render::apply::UNIT;
    let service = sb.get(&format!("root/etc/systemd/system/{unit}.service"));
    let recompress = p.recompress.as_deref().expect("a recompressing policy");
    for want in [
        "After=systemd-zram-setup@zram0.service swap.target\n".to_string(),
        "ConditionPathExists=/sys/block/zram0/recompress\n".to_string(),
        format!(
            "echo '{recompress}' > /sys/block/zram0/recompress && echo 1 > /sys/block/zram0/compact"
        ),
    ] {
        assert!(service.contains(&want), "{want:?} not in\n{service}");
    }
    assert_eq!(service.contains("echo all > /sys/block/zram0/idle"), p.mark_idle, "{service}");
    let timer = sb.get(&format!("root/etc/systemd/system/{unit}.timer"));
    assert!(
        timer.contains("[Timer]\nOnBootSec=3600s\nOnUnitActiveSec=3600s\n")
            && timer.contains("WantedBy=timers.target"),
        "{timer}"
    );
    assert_eq!(
        sb.get("root/etc/tmpfiles.d/zmem-zswap.conf"),
        "w /sys/module/zswap/parameters/enabled - - - - N\n"
    );
    // A second apply is refused while the first is not undone.
    let again = sb.run("apply.sh", &script, &[]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("not undone"));
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert_eq!(sb.get("sys/block/zram0/comp_algorithm"), "lzo-rle\n");
    assert_eq!(sb.get("sys/block/zram0/disksize"), "67108864\n");
    assert_eq!(sb.get("sys/module/zswap/parameters/enabled"), "Y\n");
    assert!(sb.calls().contains("swapon -p 5 /dev/zram0"), "{}", sb.calls());
    assert!(!sb.path("root/etc/systemd/zram-generator.conf.d/60-zmem.conf").exists());
    assert!(!sb.path(&format!("root/etc/systemd/system/{unit}.timer")).exists());
    assert!(!sb.path("state").exists(), "undo clears its state");
}

/// The checks come before any change: a kernel whose zram lacks the algorithm, a device name
/// that is not one in ZMEM_ZRAM_DEVICE, --no-persist writing no file.
#[test]
fn the_zram_script_checks_before_it_changes() {
    let sb = Sandbox::new("checks");
    sb.zram_device(0, "lzo [lzo-rle] lz4", "0");
    let script = zram_script(&Policy::single("zstd"), None, None);
    let out = sb.run("apply.sh", &script, &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("offers no zstd"));
    assert_eq!(sb.get("sys/block/zram0/comp_algorithm"), "lzo [lzo-rle] lz4\n");
    assert!(!sb.calls().contains("swapoff") && !sb.calls().contains("mkswap"));

    let sb = Sandbox::new("devname");
    let mark = sb.path("MARK");
    let hostile = format!("zram0$(touch {})", mark.display());
    let path = sb.path("apply.sh");
    fs::write(&path, zram_script(&Policy::single("lz4"), None, None)).unwrap();
    let out = Command::new("sh")
        .arg(&path)
        .env("PATH", format!("{}:{}", sb.path("bin").display(), std::env::var("PATH").unwrap()))
        .env("SANDBOX_LOG", sb.path("calls"))
        .env("ZMEM_SYSFS", sb.path("sys"))
        .env("ZMEM_PROCFS", sb.path("proc"))
        .env("ZMEM_STATE", sb.path("state"))
        .env("ZMEM_ZRAM_DEVICE", &hostile)
        .output()
        .unwrap();
    assert!(!out.status.success() && !mark.exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a zram device name"));
    assert!(!sb.path("state/applied").exists(), "a refusal leaves no apply to undo");

    let sb = Sandbox::new("nopersist");
    ok(
        &sb.run("apply.sh", &zram_script(&Policy::single("lz4"), None, None), &["--no-persist"]),
        "apply",
    );
    assert_eq!(sb.get("sys/block/zram0/comp_algorithm"), "lz4\n");
    // No live size: half of MemTotal (4,000,000 kB / 2048 = 1953 MiB).
    assert_eq!(sb.get("sys/block/zram0/disksize"), "1953M\n");
    assert!(!sb.path("root/etc").exists(), "--no-persist writes no file");
}

/// From every state a user starts in (issue 29): no device (hot-added, and removed by the
/// undo), no zram at all (modprobe tried, then refused), a mounted device (refused), each
/// refusal before any change; a plain algorithm never writes recomp_algorithm.
#[test]
fn the_zram_script_meets_every_state() {
    let lz4 = zram_script(&Policy::single("lz4"), None, None);
    // No zram0: hot_add makes zram1, which is configured instead and removed by the undo.
    let sb = Sandbox::new("hotadd");
    fs::remove_dir_all(sb.path("sys/block/zram0")).unwrap();
    sb.zram_device(1, "lzo [lzo-rle] lz4", "0");
    let out = sb.run("apply.sh", &lz4, &["--no-persist"]);
    ok(&out, "apply");
    assert!(String::from_utf8_lossy(&out.stderr).contains("hot_add made zram1"));
    assert_eq!(sb.get("sys/block/zram1/comp_algorithm"), "lz4\n");
    assert_eq!(sb.get("sys/block/zram1/recomp_algorithm"), "", "no secondary, no write");
    assert!(sb.calls().contains("swapon -p 100 /dev/zram1"), "{}", sb.calls());
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert_eq!(sb.get("sys/class/zram-control/hot_remove"), "1\n", "the device it made, removed");
    // No zram: modprobe is tried, then the script stops.
    let sb = Sandbox::new("nozram");
    fs::remove_dir_all(sb.path("sys/class/zram-control")).unwrap();
    fs::remove_dir_all(sb.path("sys/block/zram0")).unwrap();
    let out = sb.run("apply.sh", &lz4, &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("this kernel has no zram"));
    assert!(sb.calls().contains("modprobe zram"), "{}", sb.calls());
    assert!(!sb.calls().contains("swapo") && !sb.calls().contains("mkswap"));
    // A mounted zram0: left alone.
    let sb = Sandbox::new("mounted");
    sb.put("proc/mounts", "/dev/zram0 /tmp ext4 rw 0 0\n");
    let out = sb.run("apply.sh", &lz4, &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is mounted"));
    assert_eq!(sb.get("sys/block/zram0/reset"), "", "not reset");
}

/// A zswap decision in the sandbox: a swap file made, zswap's parameters written (enabled
/// last), tmpfiles.d and the swap unit; the undo puts every parameter back and removes them.
#[test]
fn a_zswap_decision_runs_in_the_sandbox_and_is_undone() {
    let sb = Sandbox::new("zswap");
    sb.put("proc/swaps", &(sb.get("proc/swaps") + "/dev/zram0 partition 65532 0 5\n"));
    let before: Vec<(String, String)> =
        ["compressor", "max_pool_percent", "shrinker_enabled", "enabled"]
            .iter()
            .map(|k| (k.to_string(), sb.get(&format!("sys/module/zswap/parameters/{k}"))))
            .collect();
    ok(&sb.run("apply.sh", &zswap_script(None), &[]), "apply");
    let param = |k: &str| sb.get(&format!("sys/module/zswap/parameters/{k}"));
    assert_eq!(param("compressor"), "lzo\n");
    assert_eq!(param("max_pool_percent"), "20\n");
    assert_eq!(param("shrinker_enabled"), "Y\n");
    assert_eq!(param("enabled"), "Y\n");
    let calls = sb.calls();
    let swapfile = sb.path("swapfile").display().to_string();
    assert!(calls.contains(&format!("fallocate -l 64M {swapfile}")), "{calls}");
    assert!(calls.contains(&format!("swapon -p 10 {swapfile}")), "{calls}");
    assert!(calls.contains("swapoff /dev/zram0"), "no zswap stacked on zram: {calls}");
    let tmpfiles = sb.get("root/etc/tmpfiles.d/zmem-zswap.conf");
    assert!(tmpfiles.starts_with("w /sys/module/zswap/parameters/compressor - - - - lzo\n"));
    assert!(tmpfiles.ends_with("w /sys/module/zswap/parameters/enabled - - - - Y\n"), "{tmpfiles}");
    assert_eq!(
        sb.get("root/etc/systemd/zram-generator.conf.d/60-zmem.conf"),
        "[zram0]\nzram-size = 0\n"
    );
    assert!(
        sb.get("root/etc/systemd/system/zmem-test.swap").contains(&format!("What={swapfile}\n"))
    );
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    for (k, v) in &before {
        assert_eq!(&param(k), v, "zswap {k} put back");
    }
    assert!(sb.calls().contains("swapon -p 5 /dev/zram0"), "{}", sb.calls());
    assert!(!sb.path("root/etc/tmpfiles.d/zmem-zswap.conf").exists());
    assert!(!sb.path("state").exists());
}

/// A kernel without zswap, or whose crypto API lacks the compressor: refused, nothing changed.
#[test]
fn the_zswap_script_checks_before_it_changes() {
    let sb = Sandbox::new("nozswap");
    fs::remove_dir_all(sb.path("sys/module/zswap")).unwrap();
    let out = sb.run("apply.sh", &zswap_script(None), &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no zswap"));
    let changed = sb.calls().lines().any(|l| !l.starts_with("id "));
    assert!(!sb.path("state/applied").exists() && !changed, "{}", sb.calls());
}

// ---- Hostile values ------------------------------------------------------------------------

/// Values that would run `touch MARK` if they reached code, or break a line or a comment.
fn hostile(mark: &Path) -> Vec<String> {
    let m = mark.display();
    vec![
        format!("x\ntouch {m}\n#"),
        format!("x\rtouch {m}"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("'; touch {m}; '"),
        format!("\"; touch {m}; \""),
        format!("x;touch {m}"),
        format!("\\'$(touch {m})\\'"),
        format!("x\x1b]0;title\x07\x1b[2J\0touch {m}"),
        "<script>alert(1)</script>\"onmouseover='x'".into(),
    ]
}

fn assert_refused<T: std::fmt::Debug>(got: Result<T, render::script::ScriptError>, field: &str) {
    let e = got.expect_err("a hostile value is refused");
    let line = e.to_string();
    assert!(line.starts_with(&format!("{field}: ")), "{line}");
    assert!(!line.contains('\n') && !line.contains('\r') && !line.contains('\x1b'), "{line:?}");
}

/// A script made from hostile free text: parses, passes shellcheck where it is installed, and
/// run in the sandbox ends as it would without them (`applies`: exit 0) and makes no marker.
fn assert_inert(script: &str, sb: &Sandbox, mark: &Path, applies: bool) {
    sh_n(script).unwrap_or_else(|e| panic!("sh -n: {e}\n{script}"));
    if shellcheck_available() {
        let f = shellcheck(script);
        assert!(f.is_empty(), "{f}\n{script}");
    }
    let out = sb.run("apply.sh", script, &["--no-persist"]);
    assert_eq!(out.status.success(), applies, "{}", String::from_utf8_lossy(&out.stderr));
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(!mark.exists(), "a hostile value ran:\n{script}");
}

#[test]
fn hostile_values_are_refused_naming_the_field() {
    let sb = Sandbox::new("refused");
    let lz4 = Policy::single("lz4");
    let d = decision(Kind::Zram, "zram lz4", None);
    let zram = |p: &Policy, n: Option<&Now>| dec::zram_apply_script(&d, p, n, 3600.0, None, &[]);
    for v in hostile(&sb.path("MARK")) {
        let n = now(&v, "lzo-rle", 0, None);
        assert_refused(zram(&lz4, Some(&n)), "now.config.device");
        let n = now(&format!("/dev/zram0{v}"), "lzo-rle", 0, None);
        assert_refused(zram(&lz4, Some(&n)), "now.config.device");
        assert_refused(zram(&Policy::single(&v), None), "policy.algo");
        let mut p = lab::candidates("lzo-rle").remove(8);
        p.recomp = vec![v.clone()];
        assert_refused(zram(&p, None), "policy.recomp[0]");
        let mut p = lab::candidates("lzo-rle").remove(8);
        p.recompress = Some(format!("type=idle{v}"));
        assert_refused(zram(&p, None), "policy.recompress");
        let c = zswap_params(&v, 20, false);
        let zd = decision(Kind::Zswap, "zswap", None);
        assert_refused(dec::zswap_apply_script(&zd, &c), "zswap.candidate.compressor");
        let c = zswap_params("lzo", 20, false);
        for (existing, new_file, field) in [
            (Some(format!("/dev/vda{v}")), None, "decision.swap_behind.existing"),
            (None, Some(format!("/var/lib/{v}")), "decision.swap_behind.new_file"),
        ] {
            let b = SwapBehind { existing, size_bytes: 1 << 20, new_file };
            let zd = decision(Kind::Zswap, "zswap", Some(b));
            assert_refused(dec::zswap_apply_script(&zd, &c), field);
        }
    }
    let n = now("/dev/zram0", "lzo-rle", 0, Some(40000));
    assert_refused(zram(&lz4, Some(&n)), "now.config.swap_priority");
    let c = zswap_params("lzo", 250, false);
    let zd = decision(Kind::Zswap, "zswap", None);
    assert_refused(dec::zswap_apply_script(&zd, &c), "zswap.candidate.max_pool_percent");
    assert!(!sb.path("MARK").exists());
}

/// Free text (the decision's name, what runs now, warnings, reasons) goes only into comments
/// and quoted strings: the scripts stay inert.
#[test]
fn hostile_free_text_stays_inert() {
    let sb = Sandbox::new("inert");
    let mark = sb.path("MARK");
    for v in hostile(&mark) {
        let mut d = decision(Kind::Zram, &v, None);
        d.basis.now_config = v.clone();
        let warnings = vec![v.clone()];
        let s = dec::zram_apply_script(&d, &Policy::single("lz4"), None, 3600.0, None, &warnings)
            .expect("free text is no reason to refuse");
        assert_inert(&s, &sb, &mark, true);
        let c = zswap_params("lzo", 20, true);
        let mut zd = decision(Kind::Zswap, &v, None);
        zd.basis.now_config = v.clone();
        assert_inert(&dec::zswap_apply_script(&zd, &c).unwrap(), &sb, &mark, true);
        let mut r = report().clone();
        r.decision.kind = Kind::Keep;
        r.decision.config = v.clone();
        r.decision.basis.now_config = v.clone();
        assert_inert(&dec::apply_script(&r).unwrap(), &sb, &mark, true);
        r.decision.kind = Kind::None;
        r.decision.chosen = None;
        r.decision.reason = Reason::TooFewPages { measured_pages: 1, min_pages: 2 };
        assert_inert(&dec::apply_script(&r).unwrap(), &sb, &mark, false);
    }
}

/// A report full of hostile metadata: its script is refused (the device), the JSON says why
/// and carries no script, no file is written, and the text and HTML reports carry no control
/// character or markup from it.
#[test]
fn a_hostile_report_gives_no_script_and_clean_reports() {
    let sb = Sandbox::new("report");
    let mark = sb.path("MARK");
    for v in hostile(&mark) {
        let mut r = decided(report(), "lz4");
        let mut n = now(&format!("/dev/{v}"), &v, 1 << 20, Some(3));
        n.config.algorithm_params = Some(v.clone());
        n.config.recomp_algorithm = Some(v.clone());
        n.config.offered = vec![v.clone()];
        n.drift = Some(v.clone());
        r.now = Some(n);
        r.kernel.release = v.clone();
        r.source.detail = v.clone();
        r.source.fallback_reason = Some(v.clone());
        // The chosen candidate unavailable, for a hostile reason (a warning with the answer and
        // a comment in the script); what runs now and a better kernel named with it.
        let chosen = r.decision.chosen.unwrap();
        r.candidates[chosen].unavailable(v.clone(), vec![v.clone()]);
        r.decision.basis.now_config = v.clone();
        r.decision.better_kernel = vec![lab::decision::BetterKernel {
            config: v.clone(),
            needs: v.clone(),
            extra_saved_bytes: 1 << 20,
        }];
        r.swap_device.name = v.clone();
        r.swap_device.note = v.clone();
        r.trace.detail = v.clone();
        assert_refused(dec::apply_script(&r), "now.config.device");
        let json = render::json::lab_report(&r);
        assert!(json["decision"]["apply_script"].is_null());
        assert!(
            json["decision"]["apply_refused"].as_str().unwrap().starts_with("now.config.device: ")
        );
        assert_eq!(json["decision"]["undo_script"], "");
        let out = LabOutputsIn::new(&sb);
        let e = render::write_lab_outputs(&r, &out.outputs).expect_err("refused");
        assert!(e.to_string().contains("now.config.device"), "{e}");
        assert!(!out.apply.exists() && !out.undo.exists(), "nothing written");
        for (what, text) in [
            ("summary", render::render_summary(&r)),
            ("decision text", dec::text(&r)),
            ("html", render::render_html(&r)),
        ] {
            let bad = text.chars().find(|c| c.is_control() && !matches!(c, '\n' | '\t'));
            assert!(bad.is_none(), "{what}: {bad:?} from {v:?}");
        }
        let html = render::render_html(&r);
        assert!(!html.contains("<script>") && !html.contains("\"onmouseover"), "{v:?}");
        // The script the same report gives without the hostile device is inert.
        r.now = Some(now("/dev/zram0", "lzo-rle", 1 << 20, Some(3)));
        assert_inert(&dec::apply_script(&r).unwrap(), &sb, &mark, true);
    }
}

/// The lab's output paths inside a sandbox.
struct LabOutputsIn {
    apply: PathBuf,
    undo: PathBuf,
    outputs: render::LabOutputs,
}

impl LabOutputsIn {
    fn new(sb: &Sandbox) -> Self {
        let (apply, undo) = (sb.path("out/apply.sh"), sb.path("out/undo.sh"));
        fs::create_dir_all(sb.path("out")).unwrap();
        let outputs = render::LabOutputs {
            apply_script: Some(apply.clone()),
            undo_script: Some(undo.clone()),
            dir: Some(sb.path("out/report")),
        };
        Self { apply, undo, outputs }
    }
}

// ---- The dictionary ------------------------------------------------------------------------

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            out.push(if k <= c.len() { A[(n >> (18 - 6 * k) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// Whether `text` holds one of 16 48-byte runs spread over `dict`, raw or in base64 at any
/// alignment.
fn holds(text: &[u8], dict: &[u8]) -> bool {
    let s = String::from_utf8_lossy(text);
    let n = dict.len().saturating_sub(48);
    (0..n).step_by((n / 16).max(1)).any(|i| {
        let run = &dict[i..i + 48];
        text.windows(48).any(|w| w == run) || (0..3).any(|k| s.contains(&base64(&run[k..k + 45])))
    })
}

/// A "zstd + dict" decision: the dictionary beside the script (0600), listed in the JSON, in
/// none of the script, report.json and report.html; the script checks its hash and installs it
/// 0600, and refuses a dictionary that is not the one decided.
#[test]
fn the_dictionary_is_beside_the_script_never_in_it() {
    let r = decided(report(), "zstd + dict");
    let dict = dec::dictionary(&r).expect("a trained dictionary").to_vec();
    assert!(dict.len() > 1024, "{} bytes", dict.len());
    let sb = Sandbox::new("dict");
    let out = LabOutputsIn::new(&sb);
    let json = render::write_lab_outputs(&r, &out.outputs).expect("written");
    let file = sb.path("out").join(render::apply::DICT_FILE);
    assert_eq!(fs::read(&file).unwrap(), dict);
    assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["decision"]["files_needed"], serde_json::json!([render::apply::DICT_FILE]));
    for f in
        [out.apply.clone(), sb.path("out/report/report.json"), sb.path("out/report/report.html")]
    {
        assert!(!holds(&fs::read(&f).unwrap(), &dict), "{} holds the dictionary", f.display());
    }
    assert!(holds(&dict, &dict), "the check finds what it looks for");
    // Run from its own directory's neighbour: the script finds the file beside itself.
    ok(&sb.run_file(&out.apply, &["--no-persist"]), "apply");
    let installed = sb.path("root/etc/zmem/zram-dict");
    assert_eq!(fs::read(&installed).unwrap(), dict);
    assert_eq!(fs::metadata(&installed).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        sb.get("sys/block/zram0/algorithm_params"),
        format!("algo=zstd dict={}\n", installed.display())
    );
    ok(&sb.run_file(&out.undo, &[]), "undo");
    assert!(!installed.exists(), "undo removes the dictionary it installed");
    // Another dictionary beside it: refused before anything changes.
    fs::write(&file, b"not the dictionary").unwrap();
    let before = sb.get("sys/block/zram0/comp_algorithm");
    let o = sb.run_file(&out.apply, &[]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("SHA-256"));
    assert_eq!(sb.get("sys/block/zram0/comp_algorithm"), before);
    assert!(!installed.exists() && !sb.path("state/applied").exists());
}

/// A dictionary decision without its dictionary (made from evidence, or read back from JSON):
/// nothing beside the script; the script trains one on this machine's memory with
/// `zmem dict train --live` in a private directory it removes, installs it 0600, and where the
/// training fails, refuses with zmem's reason before anything changes.
#[test]
fn a_dictionary_decision_without_its_dictionary_trains_one_here() {
    let mut r = decided(report(), "zstd + dict");
    for p in &mut r.policies {
        p.dict = None;
    }
    let sb = Sandbox::new("dict-train");
    let train = r#"while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
printf 'trained here' > "$out""#;
    common::sandbox::stub(&sb.path("bin"), "zmem", train);
    let out = LabOutputsIn::new(&sb);
    let json = render::write_lab_outputs(&r, &out.outputs).expect("written");
    assert!(!sb.path("out").join(render::apply::DICT_FILE).exists());
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["decision"]["files_needed"], serde_json::json!([]));
    assert!(dec::text(&r).contains("trains one on the host's memory"), "{}", dec::text(&r));
    let script = fs::read_to_string(&out.apply).unwrap();
    let tmp = sb.path("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let env = [("TMPDIR", tmp.to_str().unwrap())];
    ok(&sb.run_with("apply.sh", &script, &["--no-persist"], &env), "apply");
    assert!(sb.calls().contains("zmem dict train --live --algo zstd -o "), "{}", sb.calls());
    let installed = sb.path("root/etc/zmem/zram-dict");
    assert_eq!(fs::read(&installed).unwrap(), b"trained here");
    assert_eq!(fs::metadata(&installed).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::read_dir(&tmp).unwrap().count(), 0, "the training's directory is removed");
    ok(&sb.run_file(&out.undo, &[]), "undo");
    assert!(!installed.exists());
    // Training that fails: refused with its reason, nothing changed.
    common::sandbox::stub(&sb.path("bin"), "zmem", "echo 'zmem: not root' >&2; exit 2");
    let before = sb.get("sys/block/zram0/comp_algorithm");
    let o = sb.run_with("apply.sh", &script, &[], &env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("failed: zmem: not root"), "{err}");
    assert_eq!(sb.get("sys/block/zram0/comp_algorithm"), before);
    assert!(!installed.exists() && !sb.path("state/applied").exists());
    assert_eq!(fs::read_dir(&tmp).unwrap().count(), 0);
}

/// The audit found an apply script left without its undo script when the undo path was
/// refused: the lab's files are all or nothing.
#[test]
fn a_refused_output_leaves_no_other_file_written() {
    let dir = Scratch::new("all-or-nothing");
    let apply = dir.0.join("apply.sh");
    let undo = dir.0.join("undo.sh");
    std::os::unix::fs::symlink("/nonexistent/elsewhere", &undo).unwrap();
    let out = render::LabOutputs {
        apply_script: Some(apply.clone()),
        undo_script: Some(undo.clone()),
        dir: Some(dir.0.join("report")),
    };
    let err = render::write_lab_outputs(report(), &out).unwrap_err().to_string();
    assert!(err.contains("undo.sh"), "{err}");
    let left: Vec<_> = fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("undo.sh")], "{left:?}");
    assert!(fs::symlink_metadata(&undo).unwrap().file_type().is_symlink());
}
