//! `zmem exporter` against hostile and careless local clients: a huge Content-Length, methods
//! other than GET, an oversized header, slowloris, 10,000 connections, garbage, an HTTP/2
//! preface, pipelining. After each attack the process must still be there, answer a normal
//! scrape, and stay within its bounds of threads and resident memory (read from
//! /proc/PID/status; docs/BENCHMARKS.md, "zmem exporter", records the figures).
//!
//! Every exporter here is the real binary on a free loopback port (127.0.0.1 only), reading this
//! machine's state (no root needed: what it cannot read it lists). Every loop is bounded, every
//! socket has a timeout, and the process is killed when the test ends, on failure too.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

/// Threads the exporter may run: the runtime's and the one that runs scrapes (and one spare for
/// the runtime's own bookkeeping).
const MAX_THREADS: u64 = 3;
/// Resident memory the exporter stays under through every attack (docs/BENCHMARKS.md).
const MAX_RSS_KB: u64 = 16 * 1024;

/// A `zmem exporter` child, killed and reaped when dropped.
struct Exporter {
    child: Child,
    addr: SocketAddr,
    // Held open so the exporter never writes into a closed pipe.
    _stderr: BufReader<ChildStderr>,
}

impl Exporter {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["exporter", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the zmem binary runs");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("zmem exporter: listening on http://")
            .and_then(|r| r.strip_suffix("/metrics"))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no listening line: {line:?}"));
        Self { child, addr, _stderr: stderr }
    }

    /// A field of /proc/PID/status, in its unit (kB for memory).
    fn proc_status(&self, field: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the exporter is still running");
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in {text}"))
    }

    /// The process is alive, answers a normal scrape with metrics, and keeps its bounds.
    #[track_caller]
    fn still_serves(&mut self, after: &str) {
        assert!(self.child.try_wait().unwrap().is_none(), "the exporter died after {after}");
        let (head, body) = exchange(self.addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200"), "after {after}: {head}");
        assert!(body.contains("# TYPE zmem_"), "after {after}: {body}");
        let threads = self.proc_status("Threads");
        assert!(threads <= MAX_THREADS, "after {after}: {threads} threads");
        let rss = self.proc_status("VmRSS");
        assert!(rss <= MAX_RSS_KB, "after {after}: {rss} kB resident");
        eprintln!("after {after}: {threads} threads, {rss} kB resident");
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads until the server closes (or the 5 s timeout, which the caller sees as a missing
/// close): what came back, and whether the server closed.
fn read_all(s: &mut TcpStream) -> (String, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(n) if out.len() < (1 << 24) => out.extend_from_slice(&buf[..n]),
            Ok(_) => return (String::from_utf8_lossy(&out).into_owned(), false),
            // A reset is a close too (the server dropped what it did not read).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&out).into_owned(), true);
            }
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), false),
        }
    }
}

/// Sends `request` on a fresh connection: the response's head and body; the server must close.
#[track_caller]
fn exchange(addr: SocketAddr, request: &[u8]) -> (String, String) {
    let mut s = connect(addr);
    s.write_all(request).unwrap();
    let (text, closed) = read_all(&mut s);
    assert!(closed, "the server kept the connection open after answering: {text:.200}");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

fn status_code(head: &str) -> u16 {
    head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[test]
fn huge_content_length_is_never_read() {
    let mut e = Exporter::start();
    for method in ["GET", "POST", "PUT"] {
        for path in ["/", "/metrics", "/x"] {
            let req = format!(
                "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"
            );
            let (head, _) = exchange(e.addr, req.as_bytes());
            assert!(status_code(&head) != 0, "{method} {path}: no answer: {head}");
            e.still_serves(&format!("{method} {path} with Content-Length 99999999999"));
        }
    }
}

#[test]
fn methods_and_paths() {
    let mut e = Exporter::start();
    for (method, path, want) in [
        ("GET", "/metrics", 200),
        ("HEAD", "/metrics", 200),
        ("GET", "/metrics?x=1", 200),
        ("GET", "/", 200),
        ("HEAD", "/", 200),
        ("POST", "/metrics", 405),
        ("PUT", "/metrics", 405),
        ("DELETE", "/metrics", 405),
        ("OPTIONS", "/", 405),
        ("GET", "/favicon.ico", 404),
        ("POST", "/nope", 404),
    ] {
        let req = format!("{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        let (head, body) = exchange(e.addr, req.as_bytes());
        assert_eq!(status_code(&head), want, "{method} {path}: {head}");
        if want == 405 {
            assert!(head.to_ascii_lowercase().contains("allow: get, head"), "{head}");
        }
        if method == "HEAD" {
            assert!(body.is_empty(), "HEAD {path} has a body: {body:.100}");
        }
        if (method, path) == ("GET", "/") {
            assert!(body.contains("href=\"/metrics\""), "{body}");
        }
    }
    e.still_serves("every method");
}

#[test]
fn an_oversized_head_is_refused() {
    let mut e = Exporter::start();
    // An 8 MB header, a 64 KB request line, and 10,000 small headers.
    let big = format!("GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(8 << 20));
    let long_line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(64 << 10));
    let many = format!("GET /metrics HTTP/1.1\r\n{}\r\n", "X-A: b\r\n".repeat(10_000));
    for (what, req) in [("8 MB header", big), ("64 KB line", long_line), ("10,000 headers", many)] {
        let mut s = connect(e.addr);
        // The server stops reading early and closes: the write may fail, which is the point.
        let _ = s.write_all(req.as_bytes());
        let (text, closed) = read_all(&mut s);
        assert!(closed, "{what}: the connection stayed open");
        assert!(!text.starts_with("HTTP/1.1 200"), "{what} was served: {text:.200}");
        e.still_serves(what);
    }
}

#[test]
fn garbage_and_an_http2_preface_are_closed_at_once() {
    let mut e = Exporter::start();
    let cases: [(&str, &[u8]); 4] = [
        ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"),
        ("TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),
        ("binary", b"\x00\xff\x13\x37\r\n\r\n"),
        ("bad version", b"GET /metrics HTTP/9.9\r\n\r\n"),
    ];
    for (what, bytes) in cases {
        let mut s = connect(e.addr);
        s.write_all(bytes).unwrap();
        let t = Instant::now();
        let (text, closed) = read_all(&mut s);
        assert!(closed, "{what}: no close within 5 s: {text:.200}");
        // hyper answers a head it cannot parse at once; the header timeout is not involved.
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "{what}: closed only after {:?}",
            t.elapsed()
        );
        assert!(!text.starts_with("HTTP/1.1 200"), "{what} was served: {text:.200}");
        e.still_serves(what);
    }
}

#[test]
fn pipelined_requests_get_one_answer_and_a_close() {
    let mut e = Exporter::start();
    let one = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    let req: Vec<u8> = one.iter().copied().cycle().take(one.len() * 100).collect();
    let mut s = connect(e.addr);
    s.write_all(&req).unwrap();
    let (text, closed) = read_all(&mut s);
    assert!(closed, "pipelining kept the connection open");
    assert_eq!(text.matches("HTTP/1.1 200").count(), 1, "{:.300}", text);
    e.still_serves("100 pipelined requests");
}

#[test]
fn slowloris_neither_holds_a_connection_nor_locks_out_a_scraper() {
    let mut e = Exporter::start();
    // 200 connections (more than the server's 64) that each send part of a head.
    let mut slow: Vec<TcpStream> = (0..200).map(|_| connect(e.addr)).collect();
    for s in &mut slow {
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ");
    }
    // A few more bytes now and then, and a normal scrape in between.
    for round in 0..3 {
        for s in &mut slow {
            let _ = s.write_all(b"a");
        }
        e.still_serves(&format!("slowloris round {round}"));
        std::thread::sleep(Duration::from_millis(200));
    }
    // The last one admitted is not evicted by the ones before it: the server itself closes it
    // once the header timeout (5 s) is over.
    let last = slow.last_mut().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(9))).unwrap();
    let mut buf = [0u8; 1024];
    let closed = match last.read(&mut buf) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(closed, "a slowloris connection stayed open past the header timeout");
}

/// Raises this process's soft limit of open files towards `want` (up to the hard limit) and
/// returns the soft limit in force.
fn raise_nofile(want: u64) -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given, which lives on our stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    let target = want.min(lim.rlim_max);
    if target > lim.rlim_cur {
        let new = libc::rlimit { rlim_cur: target, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads the struct it is given; raising the soft limit up to the hard
        // one needs no privilege and affects only this test process.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            return target;
        }
    }
    lim.rlim_cur
}

#[test]
fn ten_thousand_connections() {
    let mut e = Exporter::start();
    const TOTAL: usize = 10_000;
    // Waves that fit this process's file limit (with room for the rest of the test harness).
    let limit = raise_nofile(TOTAL as u64 + 512);
    let wave = (limit.saturating_sub(256) as usize).clamp(64, TOTAL);
    let (mut opened, mut failed) = (0usize, 0usize);
    let t = Instant::now();
    while opened + failed < TOTAL {
        let n = wave.min(TOTAL - opened - failed);
        let mut conns = Vec::with_capacity(n);
        for i in 0..n {
            // In bursts of 100, as a client on another core would come: a tight loop on this
            // one outruns the listen queue and waits out SYN retransmits instead.
            if i % 100 == 99 {
                std::thread::sleep(Duration::from_millis(5));
            }
            match TcpStream::connect_timeout(&e.addr, Duration::from_secs(2)) {
                Ok(s) => conns.push(s),
                Err(_) => failed += 1,
            }
        }
        opened += conns.len();
        // Every one of them idle and open: a scraper still gets its answer.
        e.still_serves(&format!("{} connections open", conns.len()));
    }
    eprintln!("{opened} connections opened ({failed} refused) in {:?}", t.elapsed());
    assert!(opened >= TOTAL / 2, "only {opened} of {TOTAL} connections opened");
    e.still_serves("10,000 connections");
}
