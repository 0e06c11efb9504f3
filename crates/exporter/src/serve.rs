//! The HTTP side: `GET /metrics` reads the state afresh and answers it as OpenMetrics (when the
//! scraper's Accept header asks for it, as Prometheus does) or Prometheus text. A small
//! synchronous server (`tiny_http`), one request at a time: a scrape takes milliseconds, and the
//! exporter stays a few MB resident.

use std::net::SocketAddr;
use std::time::Instant;

use tiny_http::{Header, Response, Server};
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
}

impl Scrape {
    /// Reads the state and encodes it: the body of one scrape.
    pub fn run(&self, format: Format) -> Result<String, ExporterError> {
        let t = Instant::now();
        let s = status::read(&self.status).map_err(|e| ExporterError::Io(e.to_string()))?;
        let fams = expose::families(&s, self.lab.as_ref(), Some(t.elapsed().as_secs_f64()));
        expose::encode(fams, format).map_err(|_| ExporterError::Io("encoding metrics".into()))
    }
}

fn header(name: &str, value: &str) -> Result<Header, ExporterError> {
    Header::from_bytes(name.as_bytes(), value.as_bytes())
        .map_err(|()| ExporterError::Io(format!("bad header {name}: {value}")))
}

/// Listens on `addr` and answers scrapes until the process ends. `ready` is called with the
/// address bound (port 0 picks a free one) before the first request is served.
pub fn serve(
    addr: SocketAddr,
    scrape: &Scrape,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ExporterError> {
    let server =
        Server::http(addr).map_err(|e| ExporterError::Io(format!("listening on {addr}: {e}")))?;
    let bound = server.server_addr().to_ip().unwrap_or(addr);
    ready(bound);
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("").to_string();
        let response = match path.as_str() {
            "/metrics" => {
                let accept = req
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Accept"))
                    .map(|h| h.value.as_str());
                let format = Format::negotiate(accept);
                match scrape.run(format) {
                    Ok(body) => Response::from_string(body)
                        .with_header(header("Content-Type", format.content_type())?),
                    Err(e) => {
                        Response::from_string(format!("zmem exporter: {e}\n")).with_status_code(500)
                    }
                }
            }
            "/" => Response::from_string(
                "<html><head><title>zmem exporter</title></head><body><h1>zmem exporter</h1>\
                 <p><a href=\"/metrics\">Metrics</a></p></body></html>\n",
            )
            .with_header(header("Content-Type", "text/html; charset=utf-8")?),
            _ => Response::from_string("not found\n").with_status_code(404),
        };
        // A scraper that hung up is its problem, not a reason to stop serving.
        let _ = req.respond(response);
    }
    Ok(())
}
