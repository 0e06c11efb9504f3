//! The HTTP side: `GET /metrics` reads the state afresh and answers it as OpenMetrics (when the
//! scraper's Accept header asks for it, as Prometheus does) or Prometheus text.
//!
//! hyper's HTTP/1 server on a single-threaded tokio runtime, with every bound a hostile local
//! client could push on set explicitly ([`Limits`]):
//! - GET and HEAD on `/metrics` and `/` (a pointer to `/metrics`); 405 for any other method
//!   there, 404 for any other path. No request body is ever read (a `Content-Length` is only a
//!   number), and every connection closes after one response (no keep-alive, so pipelined
//!   requests after the first are dropped with the connection).
//! - The request line and headers fit in [`Limits::max_head_bytes`] and [`Limits::max_headers`]
//!   or the answer is 431 and the connection closes; an HTTP/2 preface or garbage is answered
//!   with hyper's 505/400 and closed at once.
//! - A connection must send its whole head within [`Limits::header_timeout`] and is closed after
//!   [`Limits::connection_timeout`] whatever it does (slowloris, a reader that never reads).
//! - At most [`Limits::max_connections`] connections at once. One more evicts the oldest that has
//!   not yet sent a request (so idle hostile connections cannot lock out a scraper); when every
//!   connection is in a request, the newcomer is closed at once.
//! - Two threads: the runtime's and one blocking thread that runs the scrapes, one at a time.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Notify;
use zmem_kernel::status;

use crate::ExporterError;
use crate::expose::{self, Format};
use crate::lab_report::LabSavings;

/// The port `zmem exporter` listens on by default (127.0.0.1 only). Chosen for zmem; not in
/// Prometheus's default-port allocations list, so check it is free where you deploy.
pub const DEFAULT_PORT: u16 = 9863;

/// What a scrape reads and adds.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub status: status::Options,
    pub lab: Option<LabSavings>,
    /// `--advise`: the advisor's last judgement is added to every scrape.
    pub advice: Option<crate::advise::Handle>,
    /// `--agent-status`: the reclaim agent's status file, read on every scrape.
    pub agent: Option<crate::agent::Source>,
}

impl Scrape {
    /// Reads the state and encodes it: the body of one scrape.
    pub fn run(&self, format: Format) -> Result<String, ExporterError> {
        let t = Instant::now();
        let s = status::read(&self.status).map_err(|e| ExporterError::Io(e.to_string()))?;
        let mut fams = expose::families(&s, self.lab.as_ref(), Some(t.elapsed().as_secs_f64()));
        if let Some(a) = &self.advice {
            fams.extend(crate::advise::metrics::families(&a.snapshot(), Instant::now()));
        }
        if let Some(a) = &self.agent {
            fams.extend(a.families());
        }
        expose::encode(fams, format).map_err(|_| ExporterError::Io("encoding metrics".into()))
    }
}

/// The server's bounds (docs/BENCHMARKS.md, "zmem exporter", measures them under attack).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Bytes of request line and headers (hyper's read buffer; at least 8192).
    pub max_head_bytes: usize,
    /// Number of request headers.
    pub max_headers: usize,
    /// Time from accepting a connection to having its whole request head.
    pub header_timeout: Duration,
    /// Time a connection may stay open at all.
    pub connection_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            max_head_bytes: 16 * 1024,
            max_headers: 64,
            header_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(15),
        }
    }
}

/// Listens on `addr` with the default [`Limits`] and answers scrapes until the process ends.
/// `ready` is called with the address bound (port 0 picks a free one) before the first request
/// is served.
pub fn serve(
    addr: SocketAddr,
    scrape: Scrape,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ExporterError> {
    serve_with(addr, scrape, Limits::default(), ready)
}

/// [`serve`] with explicit bounds.
pub fn serve_with(
    addr: SocketAddr,
    scrape: Scrape,
    limits: Limits,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ExporterError> {
    if limits.max_connections == 0 {
        return Err(ExporterError::Input("max_connections must be at least 1".into()));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(1)
        .build()
        .map_err(|e| ExporterError::Io(format!("starting the server's runtime: {e}")))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ExporterError::Io(format!("listening on {addr}: {e}")))?;
        let bound = listener.local_addr().unwrap_or(addr);
        ready(bound);
        accept_loop(listener, Arc::new(scrape), limits).await;
        Ok(())
    })
}

/// The open connections, by age: whether each has started a request, and how to close it.
#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    open: BTreeMap<u64, Conn>,
}

#[derive(Debug)]
struct Conn {
    started: bool,
    evict: Arc<Notify>,
}

impl Registry {
    /// Admits one more connection: its id and eviction signal, or None when every open
    /// connection is in a request and there is no room.
    fn admit(&mut self, max: usize) -> Option<(u64, Arc<Notify>)> {
        if self.open.len() >= max {
            let oldest_idle = self.open.iter().find(|(_, c)| !c.started).map(|(id, _)| *id)?;
            if let Some(c) = self.open.remove(&oldest_idle) {
                c.evict.notify_one();
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let evict = Arc::new(Notify::new());
        self.open.insert(id, Conn { started: false, evict: Arc::clone(&evict) });
        Some((id, evict))
    }
}

type Shared = Arc<Mutex<Registry>>;

fn registry(r: &Shared) -> std::sync::MutexGuard<'_, Registry> {
    // The lock guards plain bookkeeping that no code path leaves half-done.
    r.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes a connection from the registry when its task ends, however it ends.
struct Leave(Shared, u64);

impl Drop for Leave {
    fn drop(&mut self) {
        registry(&self.0).open.remove(&self.1);
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, scrape: Arc<Scrape>, limits: Limits) {
    let reg: Shared = Arc::default();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(false)
        .max_buf_size(limits.max_head_bytes.max(8192))
        .max_headers(limits.max_headers);
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of file descriptors or similar: wait for connections to close rather
                // than spin on the error.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some((id, evict)) = registry(&reg).admit(limits.max_connections) else {
            // Every slot is in a request: this one is closed at once (dropped).
            continue;
        };
        let leave = Leave(Arc::clone(&reg), id);
        let (scrape, reg2) = (Arc::clone(&scrape), Arc::clone(&reg));
        let service = hyper::service::service_fn(move |req| {
            if let Some(c) = registry(&reg2).open.get_mut(&id) {
                c.started = true;
            }
            respond(req, Arc::clone(&scrape))
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let deadline = limits.connection_timeout;
        tokio::spawn(async move {
            let _leave = leave;
            tokio::select! {
                // A client that hung up or sent garbage is its problem, not the server's.
                _ = tokio::time::timeout(deadline, conn) => {}
                () = evict.notified() => {}
            }
        });
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

const INDEX: &str = "<html><head><title>zmem exporter</title></head><body><h1>zmem exporter</h1>\
                     <p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

/// One answer. The request's body is never read.
async fn respond(
    req: Request<Incoming>,
    scrape: Arc<Scrape>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path();
    if path != "/metrics" && path != "/" {
        return Ok(text(StatusCode::NOT_FOUND, "not found: the metrics are at /metrics\n"));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed: use GET\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(r);
    }
    if path == "/" {
        let mut r = Response::new(Full::new(Bytes::from_static(INDEX.as_bytes())));
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        return Ok(r);
    }
    let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    // The scrape reads files: on the runtime's one blocking thread, not its event loop.
    let body = tokio::task::spawn_blocking(move || scrape.run(format)).await;
    Ok(match body {
        Ok(Ok(body)) => {
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(format.content_type()));
            r
        }
        Ok(Err(e)) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("zmem exporter: {e}\n")),
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "zmem exporter: the scrape failed\n"),
    })
}
