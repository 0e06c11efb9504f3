//! Issue 53 item 2, tried as the attacker would: an unprivileged user (nobody) plants a symbolic
//! link or a file of its own at every path the real `zmem` binary writes, in a world-writable
//! sticky directory like /tmp that is also the run's `$TMPDIR`, and root runs zmem there. No
//! write may go through a link (its target unchanged, nothing created where a dangling one
//! points), nobody's file is never written into (zmem refuses in one line), and what zmem writes
//! fresh is root's, 0600 where it holds memory, under umask 022. Then SIGTERM and SIGINT to a
//! run that holds a private temporary directory leave none behind, and one a SIGKILL left is
//! swept by the next run.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `zmem ARGS` with `$TMPDIR` set to `tmp`.
fn zmem(tmp: &Path, args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("the zmem binary runs")
}

#[track_caller]
fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `script` with sh as nobody (setpriv), in `dir`.
fn as_nobody(dir: &Path, script: &str) {
    let out = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c", script])
        .current_dir(dir)
        .output()
        .expect("setpriv runs");
    assert!(out.status.success(), "as nobody: {script}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A directory removed with everything in it when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).unwrap();
        Self(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process, killed and reaped when dropped.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn why_not_plant() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: planting files as nobody and capturing need it".into());
    }
    let setpriv = Command::new("setpriv").arg("--version").stdout(Stdio::null()).status();
    if !setpriv.is_ok_and(|s| s.success()) {
        return Some("setpriv (util-linux) is not installed".into());
    }
    None
}

/// One output zmem writes: its name in the planting directory, the arguments that write it
/// (`{}` stands for its path) and its mode when written fresh.
struct Case {
    name: &'static str,
    args: Vec<String>,
    mode: u32,
}

impl Case {
    fn args(&self, path: &Path) -> Vec<String> {
        self.args.iter().map(|a| a.replace("{}", s(path))).collect()
    }
}

fn cases(pages: &Path, trace_len: &str, pid: u32) -> Vec<Case> {
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let p = s(pages);
    let lab = |flag: &str| v(&["lab", p, "--observe", "0", "--max-pages", "256", flag, "{}"]);
    vec![
        Case {
            name: "gen.zpages",
            args: v(&["gen", "--kind", "mixed", "--pages", "64", "-o", "{}"]),
            mode: 0o600,
        },
        Case {
            name: "gen.zst",
            args: v(&["gen", "--kind", "perf", "--pages", "64", "-o", "{}"]),
            mode: 0o600,
        },
        Case { name: "export.raw", args: v(&["export", "--raw", "-o", "{}", p]), mode: 0o600 },
        Case {
            name: "capture.zpages",
            args: v(&["capture", "--pid", &pid.to_string(), "-o", "{}"]),
            mode: 0o600,
        },
        Case {
            name: "zram.dict",
            args: v(&["dict", "train", "--algo", "zstd", "--size", "8K", "-o", "{}", p]),
            mode: 0o600,
        },
        Case {
            name: "zipf.trace",
            args: v(&["trace", "gen", "--pages", "400", "--accesses", trace_len, "-o", "{}"]),
            mode: 0o600,
        },
        Case { name: "apply.sh", args: lab("--apply-script"), mode: 0o700 },
        Case { name: "undo.sh", args: lab("--undo-script"), mode: 0o700 },
    ]
}

/// What a refusal looks like: exit 2 and one line `zmem: ...` naming the path, last on stderr
/// (the lab says what it read before it), its reason said once.
#[track_caller]
fn refused(out: &Output, path: &Path, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: not refused: {err}");
    let line = err.lines().last().unwrap_or("");
    assert!(line.starts_with("zmem: "), "{what}: {err}");
    assert!(line.contains(s(path)), "{what}: the error names the path: {err}");
    let reason = line.rsplit(": ").next().unwrap();
    assert_eq!(line.matches(reason).count(), 1, "{what}: said twice: {line}");
}

/// The planting directory holds only `expected` (planted or written by the test) and no
/// temporary of zmem's.
#[track_caller]
fn only(plant: &Path, expected: &[String]) {
    let mut names: Vec<String> = std::fs::read_dir(plant)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(names, want, "left in the planting directory");
}

#[test]
#[ignore = "live: needs root (plants files as nobody with setpriv, captures a process)"]
fn planted_links_and_files_are_never_written_through() {
    // The live lock: conform and zram-speed make zram devices.
    let Some(_live) = zmem_testkit::live(why_not_plant()) else { return };
    // SAFETY: umask has no preconditions; the children inherit 022, as a root shell's.
    unsafe { libc::umask(0o022) };
    let base = Scratch::new("safe-files-test");
    let plant = base.0.join("plant");
    std::fs::create_dir(&plant).unwrap();
    chmod(&base.0, 0o755);
    chmod(&plant, 0o1777);
    let victim = base.0.join("victim");
    std::fs::write(&victim, "root's own file\n").unwrap();
    chmod(&victim, 0o600);
    let pages = base.0.join("in.zpages");
    ok(
        &zmem(
            &base.0,
            &["gen", "--kind", "mixed", "--pages", "400", "-o", s(&pages)].map(String::from),
        ),
        "gen",
    );
    let trace = base.0.join("in.trace");
    let trace_args = ["trace", "gen", "--pages", "400", "--accesses", "20000", "-o", s(&trace)];
    ok(&zmem(&base.0, &trace_args.map(String::from)), "trace gen");
    let held = Reaped(Command::new("sleep").arg("60").spawn().unwrap());
    let cases = cases(&pages, "2000", held.0.id());

    // nobody's directory named as a dead run's: the sweep leaves another user's alone.
    let decoy = "zmem-dict-999999999.1-abcdefgh";
    as_nobody(&plant, &format!("mkdir {decoy} && echo nobody > {decoy}/zram.dict"));
    let mut left: Vec<String> = vec![decoy.to_string()];
    for c in &cases {
        let path = plant.join(c.name);
        // A link to root's file, a dangling link to where nobody could read, nobody's file.
        let stolen = format!("stolen-{}", c.name);
        for (plant_it, what) in [
            (format!("ln -s {} {}", s(&victim), c.name), "a link to root's file"),
            (format!("ln -s {} {}", plant.join(&stolen).display(), c.name), "a dangling link"),
            (format!("echo nobody > {}", c.name), "nobody's file"),
        ] {
            as_nobody(&plant, &plant_it);
            let out = zmem(&plant, &c.args(&path));
            let what = format!("{} at {}", what, c.name);
            refused(&out, &path, &what);
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's own file\n", "{what}");
            assert!(!plant.join(&stolen).exists(), "{what}: written through the link");
            let m = std::fs::symlink_metadata(&path).unwrap();
            assert_eq!(m.uid(), NOBODY, "{what}: replaced");
            if m.is_file() {
                assert_eq!(std::fs::read_to_string(&path).unwrap(), "nobody\n", "{what}");
            }
            only(&plant, &[&left[..], &[c.name.to_string()]].concat());
            std::fs::remove_file(&path).unwrap();
        }
        // Fresh: root's, with the mode of what it holds, whatever the umask.
        ok(&zmem(&plant, &c.args(&path)), c.name);
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert!(m.is_file() && m.uid() == 0, "{}", c.name);
        assert_eq!(m.mode() & 0o7777, c.mode, "{}'s mode", c.name);
        left.push(c.name.to_string());
        only(&plant, &left);
    }

    // The report directory: a link to a directory, or nobody's directory, is refused.
    let report = plant.join("report");
    let lab = |dir: &Path| {
        let args = ["lab", s(&pages), "--observe", "0", "--max-pages", "256", "-o", s(dir)];
        zmem(&plant, &args.map(String::from))
    };
    for (plant_it, what) in [
        (format!("ln -s {} report", s(&base.0)), "a link"),
        ("mkdir report".to_string(), "nobody's"),
    ] {
        as_nobody(&plant, &plant_it);
        refused(&lab(&report), &report, what);
        assert!(!base.0.join("report.html").exists(), "{what}: written through the link");
        assert_eq!(std::fs::symlink_metadata(&report).unwrap().uid(), NOBODY);
        let _ = std::fs::remove_file(&report).or_else(|_| std::fs::remove_dir(&report));
    }
    ok(&lab(&report), "lab -o");
    assert_eq!(std::fs::metadata(report.join("report.html")).unwrap().mode() & 0o777, 0o644);
    left.push("report".into());

    // Scratch in $TMPDIR: replay's zswap swap file (a private directory, the file unlinked).
    let replay = ["replay", "--ram", "256K", "--swap", "zswap", s(&pages), s(&trace)];
    ok(&zmem(&plant, &replay.map(String::from)), "replay with a swap file");
    only(&plant, &left);
    assert_eq!(std::fs::read_to_string(plant.join(decoy).join("zram.dict")).unwrap(), "nobody\n");
    // The kernel oracle's pages (conform, zram-speed), where the kernel has zram: a private
    // directory each, never one someone made first, and none left.
    if Path::new("/sys/class/zram-control").exists() {
        for cmd in ["conform", "zram-speed"] {
            ok(&zmem(&plant, &[cmd.to_string(), s(&pages).to_string()]), cmd);
            only(&plant, &left);
        }
    }
    theirs_is_refused(&plant, &pages, &trace);
}

/// nobody's directory, named or reached through a link in the middle of the path, is no place
/// for root's outputs nor for its scratch (`$TMPDIR`, `replay --swap-dir`), and neither is a
/// directory of root's inside it: nobody may rename what is in a directory of theirs and put a
/// link in its place between zmem's check and its use. Refused, nothing made there.
fn theirs_is_refused(plant: &Path, pages: &Path, trace: &Path) {
    as_nobody(plant, "mkdir theirs && ln -s theirs link");
    let theirs = plant.join("theirs");
    let inner = theirs.join("inner");
    std::fs::create_dir(&inner).unwrap();
    for out in [theirs.join("x.zpages"), plant.join("link").join("x.zpages")] {
        let args = ["gen", "--kind", "mixed", "--pages", "64", "-o", s(&out)];
        refused(&zmem(plant, &args.map(String::from)), &out, "an output in nobody's directory");
    }
    for dir in [&theirs, &plant.join("link"), &inner] {
        let what = format!("scratch in {}", dir.display());
        let swap = ["replay", "--ram", "256K", "--swap", "zswap", "--swap-dir", s(dir)];
        let args = [&swap[..], &[s(pages), s(trace)]].concat();
        refused(&zmem(plant, &args.into_iter().map(String::from).collect::<Vec<_>>()), dir, &what);
        let out = plant.join("theirs.dict");
        let args = ["dict", "train", "--algo", "zstd", "--size", "8K", "-o", s(&out), s(pages)];
        // (The dictionary is written before the scratch directory is asked for.)
        refused(&zmem(dir, &args.map(String::from)), dir, &what);
        let _ = std::fs::remove_file(&out);
    }
    let mut made: Vec<String> = std::fs::read_dir(&theirs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    made.extend(std::fs::read_dir(&inner).unwrap().map(|e| format!("{:?}", e.unwrap().path())));
    assert_eq!(made, ["inner"], "nothing made in nobody's directory");
}

/// Waits up to `limit` for a `zmem-dict-*` directory in `dir`; its path.
fn wait_for_temp_dir(dir: &Path, limit: Duration) -> Option<PathBuf> {
    let t = Instant::now();
    while t.elapsed() < limit {
        let found = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("zmem-dict-")));
        if let Some(e) = found {
            return Some(e.path());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn zmem_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("zmem-"))
        .collect()
}

/// `n` generated mixed pages at `path`, made with `TMPDIR` at `tmp`.
fn gen_pages(tmp: &Path, path: &Path, n: u32) -> PathBuf {
    let args = ["gen", "--kind", "mixed", "--pages", &n.to_string(), "-o", s(path)];
    ok(&zmem(tmp, &args.map(String::from)), "gen");
    path.to_path_buf()
}

#[test]
fn signals_remove_the_private_temp_dir_and_a_killed_runs_is_swept() {
    use std::os::unix::process::ExitStatusExt;
    let base = Scratch::new("safe-files-signals");
    let tmp = base.0.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    chmod(&tmp, 0o700);
    // Large enough that training and the two devices' writes take seconds.
    let pages = gen_pages(&tmp, &base.0.join("big.zpages"), 40000);
    let train = |out: &str| {
        let args = ["dict", "train", "--algo", "zstd", "-o", out, s(&pages)];
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zmem"));
        cmd.args(args).env("TMPDIR", &tmp).stdout(Stdio::null()).stderr(Stdio::null());
        zmem_testkit::default_signals(&mut cmd);
        cmd.spawn().unwrap()
    };
    let out = base.0.join("d.dict");
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGKILL] {
        let mut run = Reaped(train(s(&out)));
        let dir = wait_for_temp_dir(&tmp, Duration::from_secs(60)).expect("a zmem-dict dir");
        // SAFETY: kill to our own child, alive until reaped.
        assert_eq!(unsafe { libc::kill(run.0.id() as i32, sig) }, 0);
        let status = run.0.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "ends by the signal: {status:?}");
        if sig == libc::SIGKILL {
            assert!(dir.exists(), "SIGKILL runs no code");
        } else {
            assert_eq!(zmem_entries(&tmp), Vec::<String>::new(), "after signal {sig}");
        }
    }
    // The next run that makes a private directory sweeps the killed run's.
    let small = gen_pages(&tmp, &base.0.join("small.zpages"), 400);
    let args = ["dict", "train", "--algo", "zstd", "--size", "8K", "-o", s(&out), s(&small)];
    ok(&zmem(&tmp, &args.map(String::from)), "dict train");
    assert_eq!(zmem_entries(&tmp), Vec::<String>::new(), "swept by the next run");
}
