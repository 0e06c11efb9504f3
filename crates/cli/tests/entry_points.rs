//! Every `zmem` command a user can run, with only the arguments it requires (as README.md and
//! docs/COMMANDS.md show them), on small generated inputs: each must exit 0 and give what it
//! promises (a file written, a line printed). [`COVERED`] names every command and where it
//! runs; a command added to the binary without a line there fails
//! `every_command_is_run_somewhere`. Commands that need root, kernel zram or that serve forever
//! run in the live pass (`#[ignore = "live: ..."]`, zmem-testkit); a few are run with only
//! their required arguments by a test of their own, named here. `zmem-fleet`, the Python
//! package's console entry point, is python/tests/test_fleet.py's.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where each command runs with its required arguments only: `here` (a test below, the normal
/// pass), `live` (a test below, the live pass) or the test file that does it.
const COVERED: &[(&str, &str)] = &[
    ("lab", "readme_commands.rs: `zmem lab` with no arguments, as the README's first command"),
    ("evidence", "evidence.rs: from a page file, judged by `zmem lab EVIDENCE`"),
    ("cold", "here"),
    ("comp-bench", "here"),
    ("compress", "here"),
    ("decompress", "here"),
    ("zram", "here"),
    ("conform", "live"),
    ("zram-speed", "live"),
    ("mapbench", "here"),
    ("capture", "live"),
    ("export", "here"),
    ("gen", "here"),
    ("trace gen", "here"),
    ("trace record", "trace_record.rs: a recording of a process ended by SIGTERM"),
    ("trace info", "here"),
    ("replay", "here"),
    ("validate replay", "live"),
    ("validate lab", "validate_zswap.rs and validate.rs: the kernel's runs beside the lab's"),
    (
        "validate apply",
        "validate_apply.rs: a fixture decision applied to a child for 10 s, with --json and --html",
    ),
    ("agent", "agent.rs: bad input, and the agent over a child for 6 s with its status file"),
    ("damon start", "damon.rs: bad input; the scheme against fake sysfs in zmem-kernel"),
    ("damon stop", "damon.rs: bad input; the stop against fake sysfs in zmem-kernel"),
    (
        "memcg-reclaim",
        "damon.rs: bad input, and no v2 memory controller here; the driver against fake trees in zmem-kernel",
    ),
    ("study allocators", "here"),
    ("status", "here"),
    ("exporter", "live"),
    ("dict train", "here"),
];

fn zmem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
}

/// Runs `zmem ARGS` (stdin: `input`) and asserts it exited 0.
fn ok(args: &[&str], input: &[u8]) -> Output {
    let mut child = zmem()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zmem runs");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input).expect("stdin written");
    drop(stdin);
    let out = child.wait_with_output().expect("zmem ends");
    assert!(
        out.status.success(),
        "zmem {}: {:?}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A directory of this test binary's own, and in it a small page set (`zmem gen`, 256 mixed
/// pages) and an access trace over it (`zmem trace gen`), made once.
struct Inputs {
    dir: PathBuf,
    pages: PathBuf,
    trace: PathBuf,
}

fn inputs() -> &'static Inputs {
    static INPUTS: OnceLock<Inputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        // Under target/ (cargo clean takes it), one per test process: the live pass and the
        // normal pass may run at once.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("entry-points-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let pages = dir.join("pages.zpages");
        ok(&["gen", "--pages", "256", "--seed", "7", "-o", s(&pages)], b"");
        let trace = dir.join("pages.trace");
        ok(&["trace", "gen", "--pages", "256", "--accesses", "4000", "-o", s(&trace)], b"");
        Inputs { dir, pages, trace }
    })
}

/// Every command the binary offers, by its path of names (from `--help`'s `Commands:`).
fn commands(path: &mut Vec<String>, out: &mut Vec<String>) {
    let out_help = zmem().args(path.iter()).arg("--help").output().expect("zmem runs");
    let text = String::from_utf8_lossy(&out_help.stdout).into_owned();
    let subs: Vec<String> = match text.find("\nCommands:\n") {
        Some(i) => text[i + "\nCommands:\n".len()..]
            .lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| *n != "help")
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    if subs.is_empty() {
        out.push(path.join(" "));
    }
    for sub in subs {
        path.push(sub);
        commands(path, out);
        path.pop();
    }
}

#[test]
fn every_command_is_run_somewhere() {
    let mut all = Vec::new();
    commands(&mut Vec::new(), &mut all);
    assert!(all.len() >= 20, "{all:?}");
    let named: Vec<&str> = COVERED.iter().map(|(c, _)| *c).collect();
    let missing: Vec<&String> = all.iter().filter(|c| !named.contains(&c.as_str())).collect();
    assert!(missing.is_empty(), "commands no test runs with their required arguments: {missing:?}");
    let gone: Vec<&&str> = named.iter().filter(|c| !all.iter().any(|a| a == *c)).collect();
    assert!(gone.is_empty(), "COVERED names commands the binary lacks: {gone:?}");
    // A command said to run elsewhere names a test file that exists.
    for (cmd, at) in COVERED {
        if let Some((file, _)) = at.split_once(".rs") {
            let first = file.split_whitespace().next().unwrap_or(file);
            let path =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(format!("{first}.rs"));
            assert!(path.is_file(), "{cmd}: {}", path.display());
        }
    }
}

#[test]
fn gen_writes_a_page_set() {
    let out = inputs().dir.join("gen.zpages");
    ok(&["gen", "-o", s(&out)], b"");
    // The default: 4096 pages of 4096 bytes, in a page set with its header.
    let len = std::fs::metadata(&out).expect("written").len();
    assert!(len > 4096 * 4096, "{len}");
    let _ = std::fs::remove_file(&out);
}

#[test]
fn comp_bench_prints_the_table() {
    let out = ok(&["comp-bench", s(&inputs().pages)], b"");
    let text = stdout(&out);
    for algo in ["lzo-rle", "lz4", "zstd"] {
        assert!(text.lines().any(|l| l.split_whitespace().next() == Some(algo)), "{algo}: {text}");
    }
}

#[test]
fn compress_and_decompress_round_trip_a_page() {
    let page: Vec<u8> = (0..4096u32).map(|i| (i / 64) as u8).collect();
    let packed = ok(&["compress", "--algo", "lz4"], &page).stdout;
    assert!(!packed.is_empty() && packed.len() < page.len(), "{}", packed.len());
    let back = ok(&["decompress", "--algo", "lz4"], &packed).stdout;
    assert_eq!(back, page);
}

#[test]
fn zram_prints_the_devices_stat_files() {
    let text = stdout(&ok(&["zram", s(&inputs().pages)], b""));
    assert!(text.contains("mm_stat"), "{text}");
}

#[test]
fn mapbench_prints_cycles_per_map() {
    let text = stdout(&ok(&["mapbench"], b""));
    assert!(!text.trim().is_empty(), "{text}");
}

#[test]
fn export_writes_bare_pages() {
    let out = inputs().dir.join("export.raw");
    ok(&["export", "--raw", "-o", s(&out), s(&inputs().pages)], b"");
    assert_eq!(std::fs::metadata(&out).expect("written").len(), 256 * 4096);
}

#[test]
fn trace_gen_writes_and_trace_info_describes() {
    let out = inputs().dir.join("gen.trace");
    ok(&["trace", "gen", "-o", s(&out)], b"");
    assert!(std::fs::metadata(&out).expect("written").len() > 0);
    let text = stdout(&ok(&["trace", "info", s(&inputs().trace)], b""));
    assert!(text.contains("4000"), "the trace's 4000 accesses: {text}");
}

#[test]
fn replay_prints_its_swap_ins() {
    let i = inputs();
    let text = stdout(&ok(&["replay", "--ram", "256K", s(&i.pages), s(&i.trace)], b""));
    assert!(text.to_lowercase().contains("swap"), "{text}");
}

#[test]
fn study_allocators_prints_each_allocator() {
    let text = stdout(&ok(&["study", "allocators", s(&inputs().pages)], b""));
    for a in ["zsmalloc", "zbud", "z3fold"] {
        assert!(text.contains(a), "{a}: {text}");
    }
}

#[test]
fn status_prints_the_swap_state() {
    // Read-only and fast without root: what it cannot read it says so.
    let text = stdout(&ok(&["status"], b""));
    assert!(text.to_lowercase().contains("swap"), "{text}");
}

/// A child of ours, idle: its anonymous memory (the shell's) is all cold after a second.
#[test]
fn cold_measures_a_process_by_age() {
    let mut child = Command::new("sh").args(["-c", "x=$(seq 20000); sleep 30"]).spawn().unwrap();
    // Let the shell build its variable (anonymous memory) before t0.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = child.id().to_string();
    let out = zmem().args(["cold", "--pid", &pid, "--ages", "1s"]).output().expect("zmem runs");
    let _ = child.kill();
    let _ = child.wait();
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.starts_with("Cold memory of 1 process"), "{text}");
    let row = text.lines().find(|l| l.trim_start().starts_with("1 s")).expect("the 1 s row");
    assert!(row.contains('%'), "an idle shell has cold anonymous memory: {text}");
}

/// Nothing to watch (the pid does not exist): it says so and ends, rather than waiting out
/// an age nobody can be measured at (10 minutes here; a minute is the test's patience).
#[test]
fn cold_with_nothing_to_watch_does_not_wait() {
    let mut child = zmem()
        .args(["cold", "--pid", "4194303", "--ages", "10m"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("zmem runs");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("zmem cold waited for a process it could not watch");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("Cold memory of 0 processes"), "{text}");
}

#[test]
fn dict_train_writes_a_dictionary() {
    let out = inputs().dir.join("zram.dict");
    let run = ok(&["dict", "train", "--algo", "zstd", "-o", s(&out), s(&inputs().pages)], b"");
    assert!(std::fs::metadata(&out).expect("written").len() > 0);
    assert!(!stdout(&run).trim().is_empty(), "{}", stderr(&run));
}

// The live pass: root and kernel zram.

fn root_and_zram() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Path::new("/sys/class/zram-control").exists() {
        return Some("no kernel zram (/sys/class/zram-control)".into());
    }
    None
}

fn swaps() -> String {
    std::fs::read_to_string("/proc/swaps").unwrap_or_default()
}

#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn conform_and_zram_speed_run_on_the_kernels_zram() {
    let Some(_live) = zmem_testkit::live(root_and_zram()) else { return };
    let p = s(&inputs().pages);
    let text = stdout(&ok(&["conform", p], b""));
    assert!(text.contains("mm_stat"), "{text}");
    let text = stdout(&ok(&["zram-speed", p], b""));
    assert!(!text.trim().is_empty(), "{text}");
}

#[test]
#[ignore = "live: needs root to read another process's memory (scripts/test runs it)"]
fn capture_writes_a_processs_pages() {
    // SAFETY: geteuid has no preconditions.
    let why = (unsafe { libc::geteuid() } != 0).then(|| "not root".to_string());
    let Some(_live) = zmem_testkit::live(why) else { return };
    let mut target = Command::new("sleep").arg("60").spawn().expect("sleep runs");
    let out = inputs().dir.join("capture.zpages");
    let run = zmem()
        .args(["capture", "--pid", &target.id().to_string(), "-o", s(&out)])
        .output()
        .expect("zmem runs");
    let _ = target.kill();
    let _ = target.wait();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("captured"), "{}", stderr(&run));
    assert!(std::fs::metadata(&out).expect("written").len() > 4096);
}

#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn validate_replay_plays_the_trace_on_the_kernel() {
    let Some(_live) = zmem_testkit::live(root_and_zram()) else { return };
    let i = inputs();
    let before = swaps();
    // Its required arguments only: the default RAM budget (half the pages the trace touches,
    // and room for the player itself) must let the kernel's player run on a small set.
    let run = ok(&["validate", "replay", s(&i.pages), s(&i.trace)], b"");
    assert!(!stdout(&run).trim().is_empty(), "{}", stderr(&run));
    assert_eq!(swaps(), before, "a swap area left behind");
}

/// Kills and reaps a child when dropped, on panic too.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "live: serves on the default port 127.0.0.1:9863 (scripts/test runs it)"]
fn exporter_serves_metrics_on_its_default_address() {
    let Some(live) = zmem_testkit::live(None) else { return };
    // Its only required argument is none: the default address, which something not ours may
    // hold (a user's exporter): then there is nothing to run here.
    if std::net::TcpListener::bind("127.0.0.1:9863").is_err() {
        return live.skip_optional("127.0.0.1:9863 is in use by something not ours");
    }
    let mut child = zmem().arg("exporter").stderr(Stdio::piped()).spawn().expect("zmem runs");
    let mut err = child.stderr.take().expect("stderr");
    let _child = Reaped(child);
    // Its one line says where it listens; then a scrape.
    let mut said = String::new();
    let t0 = Instant::now();
    let mut buf = [0u8; 256];
    while !said.contains('\n') && t0.elapsed() < Duration::from_secs(30) {
        match err.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => said.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    assert!(said.contains("listening on http://127.0.0.1:9863/metrics"), "{said}");
    let mut conn = std::net::TcpStream::connect("127.0.0.1:9863").expect("connects");
    conn.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout set");
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("request sent");
    let mut reply = String::new();
    conn.read_to_string(&mut reply).expect("reply read");
    assert!(reply.starts_with("HTTP/1.") && reply.contains(" 200 "), "{reply}");
    assert!(reply.contains("zmem_"), "{reply}");
}
