//! zmem-kernel: everything zmem does to or reads from the running kernel.
//!
//! - [`capture`]: the resident anonymous pages of live processes (/proc/PID/{maps,pagemap,mem})
//!   and the pages a zram device stores ([`capture::zram`], read with O_DIRECT).
//! - [`record`]: what live processes touch over time (DAMON, soft-dirty bits, page-out
//!   sampling), as a trace over a captured page set.
//! - [`parse`]: pure parsers of the kernel's files (`mm_stat`, `io_stat`, `bd_stat`,
//!   `comp_algorithm`, /proc/meminfo, zsmalloc's classes ...) over their text: the leaf every
//!   reader below shares.
//! - [`stat`]: the one reader of each kernel fact (/proc/swaps, /proc/vmstat, /proc/meminfo,
//!   the vm sysctls, a block device's `stat`, zram's sysfs attributes into the engine's
//!   `MmStat`/`IoStat`/`BdStat`), pure parsers over text with readers under a root.
//! - [`harness`]: RAII set-up for runs against the kernel: a fresh zram swap device, a memory
//!   cgroup (v1 or v2), a program started inside it; each guard removes only what it made.
//! - [`zram_device`]: a fresh kernel zram device as an oracle (hot_add, `dd` in, `mm_stat`
//!   out, hot_remove), for `conform`, `zram-speed` and the engine's tests.
//! - [`status`]: every zram device, zswap and the swap areas in one value (`zmem status`, the
//!   exporter's metrics), with what could not be read and why.
//! - [`caps`]: what the running kernel can do (zram's algorithms, recompression, writeback;
//!   zswap's compressors), learned without a live device and saying how.
//! - [`cold`]: cold memory by age from the machine's own accesses (`clear_refs`, then smaps'
//!   `Referenced` at each age) for a set of processes, and the rate idle memory comes back.
//! - [`reclaim`]: the proactive-reclaim agent (`zmem agent`): pages out anonymous memory idle
//!   for at least T with process_madvise(MADV_PAGEOUT), paused under memory pressure.
//! - [`zswap_state`]: zswap's live state: parameters, debugfs counters (the one reader of
//!   each), meminfo, vmstat and memory cgroups.
//!
//! Every fallible public function returns [`KernelError`]: `Io` and `Parse` name the file.
//!
//! Not for: deciding anything from what it reads (zmem-lab), simulating (zmem-sim), page sets
//! and traces as data (zmem-pages), or playing a trace against the kernel (zmem-validate).

pub mod caps;
pub mod capture;
pub mod cgroups;
pub mod cold;
mod error;
pub mod harness;
pub mod kconfig;
pub mod parse;
pub mod pressure;
pub mod reclaim;
pub mod record;
pub mod stat;
pub mod status;
pub mod zram_device;
pub mod zswap_state;

pub use error::KernelError;
