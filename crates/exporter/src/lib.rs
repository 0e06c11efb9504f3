//! zmem-exporter: the live compressed-memory state ([`zmem_kernel::status`]) for people and
//! for monitoring.
//!
//! - [`expose`]: the state as OpenMetrics / Prometheus text metric families (`zmem_` names).
//! - [`serve`]: `zmem exporter --listen`: an HTTP `/metrics` endpoint.
//! - [`textfile`]: `zmem exporter --textfile`: one atomic write for node_exporter.
//! - [`lab_report`]: the what-if savings of a `zmem lab` report, as gauges.
//! - [`agent`]: the proactive-reclaim agent's status file (`zmem agent`), as metrics.
//! - [`advise`]: `zmem exporter --advise`: the what-if savings kept current by a background
//!   sampler of the live zram devices, judged with the lab's estimator and cost model.
//!
//! Not for: reading the kernel's files (zmem-kernel's `status`), or the terminal view of `zmem status` (zmem-render), or argument parsing (the
//! `zmem` binary).

pub mod advise;
pub mod agent;
pub mod expose;
pub mod lab_report;
pub mod serve;
pub mod textfile;

/// Why the exporter failed.
#[derive(Debug, thiserror::Error)]
pub enum ExporterError {
    /// A file or socket.
    #[error("{0}")]
    Io(String),
    /// Something the user gave.
    #[error("{0}")]
    Input(String),
}
