//! Bad input to the `zmem` binary: missing and truncated files, wrong page sizes, unknown
//! algorithms and allocators, malformed attribute strings, corrupt compressed streams. Each must
//! end with exactly one line on stderr starting `zmem: `, exit status 2, and no panic.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use zmem_pages::trace::{Access, Op, Trace};

mod common;
use common::Scratch;

fn zmem(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the zmem binary runs");
    // The child may exit before reading its input; a broken pipe here is not the test's concern.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

/// Asserts the clean-failure contract and returns the message after `zmem: `.
#[track_caller]
fn fails_cleanly(args: &[&str], stdin: &[u8]) -> String {
    let out = zmem(args, stdin);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
    assert_eq!(out.status.code(), Some(2), "{args:?}: exit status; stderr:\n{stderr}");
    assert!(
        stderr.starts_with("zmem: "),
        "{args:?}: stderr does not start with `zmem: `:\n{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{args:?}: more than one line:\n{stderr}");
    stderr["zmem: ".len()..].trim_end().to_string()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Four pages of text-like data.
fn pages() -> Vec<u8> {
    let text = b"zram stores compressed pages in a zsmalloc pool; ".repeat(400);
    text[..4 * 4096].to_vec()
}

#[test]
fn missing_files() {
    let missing = "/nonexistent/zmem/pages.bin";
    let msg = fails_cleanly(&["zram", missing], b"");
    assert!(msg.contains(missing), "{msg}");
    let msg = fails_cleanly(&["comp-bench", "--algo", "lz4", missing], b"");
    assert!(msg.contains(missing), "{msg}");
    let msg = fails_cleanly(&["compress", "--algo", "zstd", "--dict", missing], b"abc");
    assert!(msg.contains(missing), "{msg}");
}

#[test]
fn empty_and_truncated_files() {
    let d = Scratch::new("bad-input");
    let empty = d.file("empty", b"");
    let msg = fails_cleanly(&["zram", s(&empty)], b"");
    assert!(msg.contains("no pages"), "{msg}");
    // A raw page file that ends inside a page is truncated.
    let short = d.file("short", &pages()[..1000]);
    let msg = fails_cleanly(&["zram", s(&short)], b"");
    assert!(msg.contains("truncated"), "{msg}");
    let cut = d.file("cut", &pages()[..3 * 4096 + 17]);
    let msg = fails_cleanly(&["zram", s(&cut)], b"");
    assert!(msg.contains("truncated"), "{msg}");
    // Four 4 KiB pages are a quarter of one 64 KiB page.
    let four = d.file("four", &pages());
    let msg = fails_cleanly(&["zram", "--page-size", "65536", s(&four)], b"");
    assert!(msg.contains("truncated"), "{msg}");
    let msg = fails_cleanly(&["comp-bench", "--algo", "lz4", s(&cut)], b"");
    assert!(msg.contains("truncated"), "{msg}");
}

#[test]
fn wrong_page_sizes() {
    let d = Scratch::new("bad-input");
    let f = d.file("pages", &pages());
    for ps in ["1000", "0", "8192"] {
        let msg = fails_cleanly(&["zram", "--page-size", ps, s(&f)], b"");
        assert!(msg.contains("page size"), "{ps}: {msg}");
        let msg = fails_cleanly(&["compress", "--algo", "lz4", "--page-size", ps], b"abc");
        assert!(msg.contains("page size"), "{ps}: {msg}");
    }
    let msg = fails_cleanly(&["comp-bench", "--algo", "lz4", "--page-size", "3000", s(&f)], b"");
    assert!(msg.contains("3000"), "{msg}");
}

#[test]
fn unknown_algorithms_and_allocators() {
    let d = Scratch::new("bad-input");
    let f = d.file("pages2", &pages());
    let msg = fails_cleanly(&["zram", "--algo", "lzma", s(&f)], b"");
    assert!(msg.contains("lzma"), "{msg}");
    let msg = fails_cleanly(&["zram", "--recomp", "zstd,nope", s(&f)], b"");
    assert!(msg.contains("nope"), "{msg}");
    let msg = fails_cleanly(&["zram", "--pool", "slab", s(&f)], b"");
    assert!(msg.contains("slab"), "{msg}");
    let msg = fails_cleanly(&["compress", "--algo", "lzma"], b"abc");
    assert!(msg.contains("lzma"), "{msg}");
    let msg = fails_cleanly(&["decompress", "--algo", ""], b"abc");
    assert!(!msg.is_empty());
    let msg = fails_cleanly(&["comp-bench", "--algo", "nope", s(&f)], b"");
    assert!(msg.contains("nope"), "{msg}");
    let msg = fails_cleanly(&["comp-bench", "--algo", "zstd:abc", s(&f)], b"");
    assert!(msg.contains("zstd:abc"), "{msg}");
}

#[test]
fn malformed_parameters_and_attribute_strings() {
    let d = Scratch::new("bad-input");
    let f = d.file("pages3", &pages());
    for params in ["level", "level=", "level=abc", "priority=7 level=1", "dict="] {
        let msg = fails_cleanly(&["zram", "--algo", "zstd", "--params", params, s(&f)], b"");
        assert!(!msg.is_empty(), "{params}");
    }
    // What 6.18's backends accept and ignore or clamp (a level for lzo, zstd level 99), a zram
    // device accepts too: the run succeeds.
    for (algo, params) in [("lzo", "level=1"), ("zstd", "level=99")] {
        let out = zmem(&["zram", "--algo", algo, "--params", params, s(&f)], b"");
        assert!(out.status.success(), "{algo} {params}: {}", String::from_utf8_lossy(&out.stderr));
    }
    for recompress in ["max_pages=x", "threshold=-1", "priority=9", "algo=lz4", "threshold=5000"] {
        let msg =
            fails_cleanly(&["zram", "--recomp", "zstd", "--recompress", recompress, s(&f)], b"");
        assert!(!msg.is_empty(), "{recompress}");
    }
    // recompress without a secondary algorithm.
    fails_cleanly(&["zram", "--recompress", "type=huge", s(&f)], b"");
    fails_cleanly(&["compress", "--algo", "zstd", "--level", "99"], b"abc");
    fails_cleanly(&["compress", "--algo", "deflate", "--deflate-winbits", "3"], b"abc");
    fails_cleanly(&["compress", "--algo", "lzo", "--level", "1"], b"abc");
}

#[test]
fn oversized_input_to_compress_and_decompress() {
    let big = vec![7u8; 3 * 4096];
    let msg = fails_cleanly(&["compress", "--algo", "lz4"], &big);
    assert!(msg.contains("larger than"), "{msg}");
    let msg = fails_cleanly(&["decompress", "--algo", "lz4"], &vec![0u8; 64 * 1024]);
    assert!(msg.contains("larger than"), "{msg}");
}

#[test]
fn corrupt_input_to_decompress_fails_cleanly_in_every_codec() {
    let page = &pages()[..4096];
    for algo in zmem_comp::algorithms().iter().map(|a| a.name) {
        let out = zmem(&["compress", "--algo", algo], page);
        assert_eq!(out.status.code(), Some(0), "{algo}: {}", String::from_utf8_lossy(&out.stderr));
        let stream = out.stdout;
        // The stream itself decodes back to the page.
        let back = zmem(&["decompress", "--algo", algo], &stream);
        assert_eq!(back.status.code(), Some(0), "{algo}");
        assert_eq!(back.stdout, page, "{algo}");
        // Empty input is no page: an error, or (zstd: zero frames) empty output.
        let empty = zmem(&["decompress", "--algo", algo], b"");
        match empty.status.code() {
            Some(0) => assert!(empty.stdout.is_empty(), "{algo}: output from empty input"),
            _ => {
                fails_cleanly(&["decompress", "--algo", algo], b"");
            }
        }
        // A zeroed stream and a stream cut in half are not pages.
        fails_cleanly(&["decompress", "--algo", algo], &vec![0u8; stream.len()]);
        let half = &stream[..stream.len() / 2];
        let cut = zmem(&["decompress", "--algo", algo], half);
        let stderr = String::from_utf8_lossy(&cut.stderr);
        assert!(!stderr.contains("panicked"), "{algo}: {stderr}");
        // A decoder may stop cleanly at a block boundary; what it returns is then shorter.
        match cut.status.code() {
            Some(0) => assert!(cut.stdout.len() < page.len(), "{algo}: half a stream, a full page"),
            Some(2) => assert!(stderr.starts_with("zmem: ") && stderr.lines().count() == 1),
            other => panic!("{algo}: exit {other:?}: {stderr}"),
        }
        // Garbage: whatever it decodes to, the binary reports it without panicking.
        let garbage: Vec<u8> =
            (0..600u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let g = zmem(&["decompress", "--algo", algo], &garbage);
        let stderr = String::from_utf8_lossy(&g.stderr);
        assert!(!stderr.contains("panicked"), "{algo}: {stderr}");
        assert!(matches!(g.status.code(), Some(0 | 2)), "{algo}: {stderr}");
    }
}

#[test]
fn bad_swap_devices() {
    for cmd in [&["replay", "--ram", "1M"][..], &["lab", "--observe", "0"]] {
        let mut args = cmd.to_vec();
        args.extend(["--swap-device", "nvm3", "pages", "trace"]);
        args.truncate(cmd.len() + 2 + if cmd[0] == "replay" { 2 } else { 0 });
        let msg = fails_cleanly(&args, b"");
        assert!(msg.contains("--swap-device") && msg.contains("\"nvm3\""), "{msg}");
        assert!(msg.contains("nvme, ssd, emmc, hdd"), "{msg}");
    }
    // tmpfs is memory, not a swap device: refused before anything is measured.
    if std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("tmpfs /dev/shm "))
    {
        let msg = fails_cleanly(&["lab", "--swap-device", "/dev/shm"], b"");
        assert!(msg.contains("tmpfs"), "{msg}");
    }
}

#[test]
fn usage_errors_exit_2_without_panicking() {
    // clap's own usage errors keep clap's format (with a usage hint), but the same status.
    for args in [&["zram"][..], &["frobnicate"], &["zram", "--threads", "x", "f"], &["compress"]] {
        let out = zmem(args, b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn capture_zram_of_something_else() {
    let d = Scratch::new("bad-input");
    let out = d.file("capture-out.zpages", b"");
    let msg = fails_cleanly(&["capture", "--zram", "/dev/null", "-o", s(&out)], b"");
    assert!(msg.contains("not a block device"), "{msg}");
    let msg = fails_cleanly(&["capture", "--zram", "/nonexistent/zram9", "-o", s(&out)], b"");
    assert!(msg.contains("/nonexistent/zram9"), "{msg}");
}

/// A zram device that exists but was never given a disksize holds nothing to capture: one line,
/// exit 2. Needs root and kernel zram (a device of our own, removed afterwards).
#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn capture_zram_of_an_uninitialised_device() {
    const CONTROL: &str = "/sys/class/zram-control";
    struct Device(String);
    impl Drop for Device {
        fn drop(&mut self) {
            let _ = std::fs::write(format!("{CONTROL}/hot_remove"), &self.0);
        }
    }
    let why = zmem_kernel::zram_device::unavailable_reason();
    let Some(_live) = zmem_testkit::live(why) else { return };
    let id = std::fs::read_to_string(format!("{CONTROL}/hot_add")).expect("hot_add");
    let dev = Device(id.trim().to_string());
    let d = Scratch::new("bad-input");
    let out = d.file("capture-uninit.zpages", b"");
    let path = format!("/dev/zram{}", dev.0);
    let msg = fails_cleanly(&["capture", "--zram", &path, "-o", s(&out)], b"");
    assert!(msg.contains("not initialised"), "{msg}");
}

/// `zmem lab --source zram` with no zram swap active says so and stops (the default source
/// falls back instead).
#[test]
#[ignore = "live: the machine must have no zram swap active (scripts/test runs it)"]
fn lab_source_zram_without_a_zram_swap() {
    // The live lock: no live test of ours has a zram swap on meanwhile.
    let Some(live) = zmem_testkit::live(None) else { return };
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    if swaps.lines().any(|l| l.starts_with("/dev/zram")) {
        return live.skip_optional("a zram swap not ours is active here, so the lab would use it");
    }
    let msg = fails_cleanly(&["lab", "--source", "zram", "--observe", "0"], b"");
    assert!(msg.contains("no active zram swap"), "{msg}");
}

#[test]
fn trace_record_of_no_such_process_or_a_bad_duration() {
    let d = Scratch::new("bad-input");
    let out = d.file("record.trace", b"");
    let msg =
        fails_cleanly(&["trace", "record", "--pid", "0", "--duration", "1", "-o", s(&out)], b"");
    assert!(msg.contains("no such process: 0"), "{msg}");
    let me = std::process::id().to_string();
    for bad in ["0", "-1", "nan", "inf", "x"] {
        let args = ["trace", "record", "--pid", &me, "--duration", bad, "-o", s(&out)];
        let got = zmem(&args, b"");
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.status.code(), Some(2), "--duration {bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "--duration {bad}: {stderr}");
    }
    let msg =
        fails_cleanly(&["trace", "record", "--pid", &me, "--duration", "0", "-o", s(&out)], b"");
    assert!(msg.contains("--duration"), "{msg}");
    let msg = fails_cleanly(
        &[
            "trace",
            "record",
            "--pid",
            &me,
            "--duration",
            "0.05",
            "--interval",
            "100",
            "-o",
            s(&out),
        ],
        b"",
    );
    assert!(msg.contains("shorter than one interval"), "{msg}");
    let msg = fails_cleanly(
        &["trace", "record", "--cgroup", "/nonexistent/cg", "--duration", "1", "-o", s(&out)],
        b"",
    );
    assert!(msg.contains("/nonexistent/cg"), "{msg}");
    assert_eq!(std::fs::read(&out).unwrap(), b"", "nothing written on a refusal");
}

/// `zmem lab --trace` with a trace whose page ids exceed the page set: one line naming both.
#[test]
fn lab_trace_over_more_pages_than_the_set() {
    let d = Scratch::new("bad-input");
    let pages = d.file("lab-trace.pages", &pages());
    // A trace over 8 pages, its last access to page 7: the set has 4.
    let read = |time_ns, page| Access { time_ns, page, op: Op::Read };
    let mut trace = Vec::new();
    Trace { page_count: 8, file_pages: 0, accesses: vec![read(0, 1), read(10, 7)] }
        .write_to(&mut trace)
        .unwrap();
    let t = d.file("lab-trace.trace", &trace);
    let msg = fails_cleanly(&["lab", "--observe", "0", "--trace", s(&t), s(&pages)], b"");
    assert!(msg.contains("names page 7") && msg.contains("has 4 pages"), "{msg}");
    let msg =
        fails_cleanly(&["lab", "--observe", "0", "--trace", "/nonexistent/t", s(&pages)], b"");
    assert!(msg.contains("/nonexistent/t"), "{msg}");
}

/// A capture that got nothing (no such process) is an error, one line, exit 2, and writes no
/// file: before, it exited 0 and wrote an empty set.
#[test]
fn capture_of_no_such_process_writes_nothing() {
    let d = Scratch::new("bad-input");
    let out = d.join("none.zpages");
    // Above the default pid_max (4194304 at most): no such process can exist.
    let msg = fails_cleanly(&["capture", "--pid", "999999999", "-o", s(&out)], b"");
    assert!(msg.contains("nothing captured"), "{msg}");
    assert!(msg.contains("999999999"), "{msg}");
    assert!(!out.exists(), "no file written");
}

/// Tiny inputs give an honest result, not a failure and not advice: 1, 10 and 16 pages each
/// exit 0 with the recommendation marked uncertain and no lines to apply (before: 10 pages
/// failed in dictionary training, 16 recommended zstd with "memory saved -318.8 %").
#[test]
fn a_tiny_input_is_too_uncertain_to_advise_on() {
    let text = b"zram stores compressed pages in a zsmalloc pool; ".repeat(2000);
    let mut bytes = text[..16 * 4096].to_vec();
    // Pages that differ, so not every one is same-filled or identical.
    for (i, page) in bytes.chunks_exact_mut(4096).enumerate() {
        page[..8].copy_from_slice(&(i as u64).to_le_bytes());
    }
    let d = Scratch::new("bad-input");
    let sixteen = d.file("sixteen.pages", &bytes);
    let ten = d.file("ten.pages", &bytes[..10 * 4096]);
    for args in [
        vec!["lab", "--observe", "0", "--min-time-ms", "0", "--json", s(&ten)],
        vec!["lab", "--observe", "0", "--min-time-ms", "0", "--json", s(&sixteen)],
        vec!["lab", "--observe", "0", "--min-time-ms", "0", "--json", "--max-pages", "1", s(&ten)],
    ] {
        let out = zmem(&args, b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}:\n{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let d = &v["decision"];
        assert_eq!(d["kind"], "none", "{args:?}: {d}");
        assert_eq!(d["reason"]["kind"], "too_few_pages", "{d}");
        assert!(d["chosen"].is_null() && d["undo_script"] == "", "{d}");
        assert!(v.get("recommendation").is_none(), "one answer: {v}");
    }
}

/// Every numeric flag of every command, given values past its range (negative, huge, past
/// u64), in both spellings (`--flag -1` and `--flag=-1`): exit status 2 with one line naming
/// the flag, never a panic, an abort or an unexpected-argument complaint.
#[test]
fn numeric_flags_refuse_out_of_range_values_by_name() {
    let d = Scratch::new("bad-input");
    let p = d.file("sweep.bin", &pages());
    let t = d.join("sweep.out");
    let (p, t) = (s(&p).to_string(), s(&t).to_string());
    let flags: &[(&[&str], &str)] = &[
        (&["gen", "-o", &t], "--pages"),
        (&["gen", "-o", &t], "--page-size"),
        (&["gen", "-o", &t], "--seed"),
        (&["zram", &p], "--threads"),
        (&["zram", &p], "--page-size"),
        (&["comp-bench", &p], "--min-time-ms"),
        (&["comp-bench", &p], "--page-size"),
        (&["lab", &p], "--threads"),
        (&["lab", &p], "--observe"),
        (&["lab", &p], "--sample"),
        (&["lab", &p], "--min-time-ms"),
        (&["lab", &p], "--cpu-budget"),
        (&["lab", &p], "--latency-budget"),
        (&["mapbench"], "--threads"),
        (&["mapbench"], "--duration-ms"),
        (&["status"], "--interval"),
        (&["trace", "gen", "-o", &t], "--pages"),
        (&["trace", "gen", "-o", &t], "--accesses"),
        (&["trace", "gen", "-o", &t], "--phases"),
        (&["trace", "gen", "-o", &t], "--gap-us"),
        (&["trace", "gen", "-o", &t], "--idle-ms"),
        (&["study", "allocators", &p], "--rounds"),
        (&["replay", "--ram", "1M", &p, &p], "--max-pool-percent"),
        (&["replay", "--ram", "1M", &p, &p], "--page-cluster"),
        (&["replay", "--ram", "1M", &p, &p], "--swappiness"),
        (&["dict", "train", "--algo", "zstd", "-o", &t, &p], "--samples"),
        (&["capture", "-o", &t], "--pid"),
        (&["validate", "replay", &p, &p], "--timeout"),
    ];
    let huge = ["-1", "-9223372036854775808", "18446744073709551616", "1e300", "nan"];
    let mut checked = 0;
    for (args, flag) in flags {
        for v in huge {
            // Floats take 1e300 as a number; seeds, percentages take any u64: only the values
            // past every type's range and the negatives are swept for them.
            let float = ["--cpu-budget", "--latency-budget"].contains(flag);
            if float && !v.starts_with('-') && v != "nan" {
                continue;
            }
            for spelled in [vec![flag.to_string(), v.to_string()], vec![format!("{flag}={v}")]] {
                let mut all: Vec<&str> = args.to_vec();
                all.extend(spelled.iter().map(String::as_str));
                let msg = fails_cleanly(&all, b"");
                let name = flag.trim_start_matches("--").replace('-', "_");
                assert!(
                    msg.contains(*flag) || msg.contains(&name),
                    "{all:?}: the message does not name {flag}: {msg}"
                );
                assert!(!msg.contains("unexpected argument"), "{all:?}: {msg}");
                assert!(!msg.contains(".tmp"), "{all:?}: {msg}");
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn huge_counts_are_refused_before_any_allocation() {
    let d = Scratch::new("bad-input");
    let t = d.join("huge.out");
    let msg = fails_cleanly(&["gen", "--pages", "1000000000000", "-o", s(&t)], b"");
    assert!(msg.contains("--pages") && msg.contains("more than this machine's memory"), "{msg}");
    let msg = fails_cleanly(&["trace", "gen", "--accesses", "99999999999999", "-o", s(&t)], b"");
    assert!(msg.contains("--accesses") && msg.contains("memory"), "{msg}");
    assert!(!t.exists(), "a refused command wrote its output");
}

#[test]
fn directories_devices_and_empty_files_are_named() {
    let dir = std::env::temp_dir();
    for (path, what) in [(s(&dir), "a directory"), ("/dev/null", "a character device")] {
        for cmd in ["lab", "zram", "comp-bench"] {
            let msg = fails_cleanly(&[cmd, path], b"");
            assert!(msg.contains(what) && msg.contains(path), "{cmd} {path}: {msg}");
        }
    }
    let d = Scratch::new("bad-input");
    let empty = d.file("empty-lab", b"");
    let msg = fails_cleanly(&["lab", s(&empty)], b"");
    assert!(msg.contains("an empty file"), "{msg}");
}

/// `zmem lab FILE` on a page set of 16 KiB pages: refused in one line that names no option the
/// lab lacks (it once said "run with --page-size 16384").
#[test]
fn lab_of_a_page_set_with_other_pages() {
    let d = Scratch::new("bad-input");
    let out = d.file("lab-16k.zpages", b"");
    let made = zmem(&["gen", "--pages", "8", "--page-size", "16384", "-o", s(&out)], b"");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let msg = fails_cleanly(&["lab", s(&out), "--observe", "0"], b"");
    assert!(msg.contains("16384-byte pages") && !msg.contains("--page-size"), "{msg}");
}
