//! The cost of the block device behind a swap file: what one 4 KiB page read or write takes, so
//! the replay can charge every device I/O (a zswap miss, a page zswap rejects or writes back, a
//! zram slot written back and read again) with a latency instead of the nanoseconds an
//! in-memory or page-cached swap file takes.
//!
//! A [`SwapDevice`] is either a named profile ([`PROFILES`]: `nvme`, `ssd`, `emmc`, `hdd`,
//! published 4 KiB queue-depth-1 random read and write latencies, sources in docs/REFERENCES.md
//! [swap-device-latency]) or measured ([`measure`]): a temporary file on the device is read and
//! written at random 4 KiB offsets with `O_DIRECT`, one request at a time, as swap reads a
//! faulting page, for about a second.
//!
//! **Charging** ([`DeviceSampler`]): each device I/O adds one latency drawn from the device's
//! distribution with the project's seeded generator (SplitMix64), so a replay's charges are the
//! same on every run. A measured device is sampled from its measured latencies (each equally
//! likely: the empirical distribution); a profile, which has only a p50 and a p99, from the
//! log-normal distribution with that median and that 99th percentile (storage latencies are
//! right-skewed and positive; the log-normal is the simplest such law two quantiles fix).
//! Nothing sleeps: the latency is added to the stage's measured time.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zmem_pages::prng::SplitMix64;

use crate::SimError;

/// A swap device's latencies, by name: published figures for a 4 KiB random read and write at
/// queue depth 1 (docs/REFERENCES.md [swap-device-latency]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub name: &'static str,
    pub description: &'static str,
    pub read_p50_ns: u64,
    pub read_p99_ns: u64,
    pub write_p50_ns: u64,
    pub write_p99_ns: u64,
}

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// The named profiles, fastest first.
pub const PROFILES: [Profile; 4] = [
    Profile {
        name: "nvme",
        description: "NVMe flash SSD",
        read_p50_ns: 60 * US,
        read_p99_ns: 200 * US,
        write_p50_ns: 40 * US,
        write_p99_ns: 250 * US,
    },
    Profile {
        name: "ssd",
        description: "SATA flash SSD",
        read_p50_ns: 150 * US,
        read_p99_ns: 500 * US,
        write_p50_ns: 100 * US,
        write_p99_ns: MS,
    },
    Profile {
        name: "emmc",
        description: "eMMC 5.1 flash",
        read_p50_ns: 400 * US,
        read_p99_ns: 2 * MS,
        write_p50_ns: MS,
        write_p99_ns: 10 * MS,
    },
    Profile {
        name: "hdd",
        description: "7200 rpm hard disk",
        read_p50_ns: 13 * MS,
        read_p99_ns: 25 * MS,
        write_p50_ns: 13 * MS,
        write_p99_ns: 25 * MS,
    },
];

/// The device a fresh `zmem replay` or `zmem lab` charges: most machines that swap to a file
/// today swap to NVMe, and it is the cheapest device, so the default understates rather than
/// overstates what a zswap miss costs.
pub const DEFAULT_PROFILE: &str = "nvme";

/// A profile by name.
pub fn profile(name: &str) -> Option<Profile> {
    PROFILES.iter().copied().find(|p| p.name == name)
}

/// What the user named with `--swap-device`: a profile, or a place on the device to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSpec {
    Profile(Profile),
    /// A directory on the device, or a file path whose directory is on it.
    Path(PathBuf),
}

impl FromStr for DeviceSpec {
    type Err = String;
    /// A profile name, else a path: one with a `/` or one that exists. Anything else is a
    /// mistyped profile name, refused.
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(p) = profile(s) {
            return Ok(Self::Profile(p));
        }
        if !s.is_empty() && (s.contains('/') || Path::new(s).exists()) {
            return Ok(Self::Path(PathBuf::from(s)));
        }
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        Err(format!(
            "unknown swap device {s:?} ({}, or a path on the swap device to measure)",
            names.join(", ")
        ))
    }
}

/// The text [`DeviceSpec::from_str`] reads back: the profile's name, or the path.
impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Profile(p) => f.write_str(p.name),
            Self::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

impl Default for DeviceSpec {
    fn default() -> Self {
        Self::Profile(profile(DEFAULT_PROFILE).unwrap_or(PROFILES[0]))
    }
}

/// Latency summary of one direction (read or write), nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub p50_ns: u64,
    pub p99_ns: u64,
}

/// The swap device a replay charges, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwapDevice {
    /// The profile's name, or the path that was measured.
    pub name: String,
    /// `profile` or `measured`.
    pub kind: String,
    /// Where the figures come from: the profile's description and source, or the measurement
    /// (samples, seconds, file system).
    pub note: String,
    pub read: LatencySummary,
    pub write: LatencySummary,
    /// A measured device's latencies, sorted (the distribution charges are drawn from).
    #[serde(skip)]
    samples: Option<Arc<Samples>>,
}

#[derive(Debug, PartialEq)]
struct Samples {
    read: Vec<u64>,
    write: Vec<u64>,
}

impl Default for SwapDevice {
    fn default() -> Self {
        Self::from_profile(profile(DEFAULT_PROFILE).unwrap_or(PROFILES[0]))
    }
}

impl SwapDevice {
    pub fn from_profile(p: Profile) -> Self {
        Self {
            name: p.name.into(),
            kind: "profile".into(),
            note: format!(
                "{}: medians from published 4 KiB QD1 random read/write latencies, p99 \
                 estimated (docs/REFERENCES.md [swap-device-latency])",
                p.description
            ),
            read: LatencySummary { p50_ns: p.read_p50_ns, p99_ns: p.read_p99_ns },
            write: LatencySummary { p50_ns: p.write_p50_ns, p99_ns: p.write_p99_ns },
            samples: None,
        }
    }

    /// The device `spec` names: a profile as it is, a path measured for about `duration`.
    pub fn resolve(spec: &DeviceSpec, duration: Duration) -> Result<Self, SimError> {
        match spec {
            DeviceSpec::Profile(p) => Ok(Self::from_profile(*p)),
            DeviceSpec::Path(path) => measure(path, duration),
        }
    }

    /// A sampler for one replay; the same seed gives the same charges.
    pub fn sampler(&self, seed: u64) -> DeviceSampler {
        DeviceSampler { device: self.clone(), rng: SplitMix64::new(seed) }
    }
}

/// Draws latencies for one replay (see the module documentation).
#[derive(Debug, Clone)]
pub struct DeviceSampler {
    device: SwapDevice,
    rng: SplitMix64,
}

/// The standard normal quantile at 0.99.
const Z99: f64 = 2.326_347_874_040_841;

impl DeviceSampler {
    /// One 4 KiB read's latency, nanoseconds.
    pub fn read_ns(&mut self) -> u64 {
        let (s, sum) = (self.device.samples.clone(), self.device.read);
        self.draw(s.as_deref().map(|s| s.read.as_slice()), sum)
    }

    /// One 4 KiB write's latency, nanoseconds.
    pub fn write_ns(&mut self) -> u64 {
        let (s, sum) = (self.device.samples.clone(), self.device.write);
        self.draw(s.as_deref().map(|s| s.write.as_slice()), sum)
    }

    fn draw(&mut self, samples: Option<&[u64]>, sum: LatencySummary) -> u64 {
        if let Some(v) = samples.filter(|v| !v.is_empty()) {
            return v[self.rng.below(v.len() as u64) as usize];
        }
        lognormal(&mut self.rng, sum)
    }
}

/// A log-normal draw with median `p50` and 99th percentile `p99` (Box-Muller for the normal).
fn lognormal(rng: &mut SplitMix64, s: LatencySummary) -> u64 {
    let p50 = s.p50_ns.max(1) as f64;
    let sigma = ((s.p99_ns.max(s.p50_ns).max(1) as f64) / p50).ln() / Z99;
    // 1 - unit() is in (0, 1], so the logarithm is finite.
    let (u1, u2) = (1.0 - rng.unit(), rng.unit());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    (p50 * (sigma * z).exp()).round().min(3.6e12) as u64
}

/// Size of the file the measurement reads and writes: large enough that its blocks are
/// spread over the device, small enough to lay down in well under a second on a disk.
pub const MEASURE_FILE_BYTES: u64 = 32 << 20;
const PAGE: usize = 4096;

/// `statfs`'s `f_type` of tmpfs (linux/magic.h `TMPFS_MAGIC`).
const TMPFS_MAGIC: u64 = 0x0102_1994;

/// Measures the device under `path` (a directory on it, or a file whose directory is on it):
/// lays down a temporary file of [`MEASURE_FILE_BYTES`] with `O_DIRECT`, then for half of
/// `duration` reads and for the other half writes random 4 KiB pages of it, one at a time
/// (queue depth 1, as a page fault waits for its page). The file is removed afterwards, also
/// on failure. A path on tmpfs, or on a file system without `O_DIRECT`, is refused: its
/// "device" is memory or the page cache, not what swap would wait for.
pub fn measure(path: &Path, duration: Duration) -> Result<SwapDevice, SimError> {
    let dir = if path.is_dir() {
        path.to_path_buf()
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    let bad = |why: String| SimError::Setup(format!("--swap-device {}: {why}", path.display()));
    if !dir.is_dir() {
        return Err(bad(format!("{} is not a directory", dir.display())));
    }
    if fs_type(&dir).map_err(|e| bad(e.to_string()))? == TMPFS_MAGIC {
        return Err(bad(
            "is on tmpfs (memory, not a block device; swap cannot live there): name a \
             directory on the swap device, or a profile (nvme, ssd, emmc, hdd)"
                .into(),
        ));
    }
    let tmp = TempFile::create(&dir).map_err(|e| {
        let e = e.into_io();
        if e.raw_os_error() == Some(libc::EINVAL) {
            bad("the file system does not support O_DIRECT: name a directory on the swap \
                 device, or a profile (nvme, ssd, emmc, hdd)"
                .into())
        } else {
            bad(format!("creating a temporary file in {}: {e}", dir.display()))
        }
    })?;
    let (read, write) = run_measurement(&tmp.file, duration).map_err(|e| bad(e.to_string()))?;
    drop(tmp);
    let summary =
        |v: &[u64]| LatencySummary { p50_ns: quantile(v, 0.50), p99_ns: quantile(v, 0.99) };
    Ok(SwapDevice {
        name: path.display().to_string(),
        kind: "measured".into(),
        note: format!(
            "measured: {} reads and {} writes of random 4 KiB pages with O_DIRECT at queue depth \
             1 in a {} MiB temporary file, {:.1} s",
            read.len(),
            write.len(),
            MEASURE_FILE_BYTES >> 20,
            duration.as_secs_f64()
        ),
        read: summary(&read),
        write: summary(&write),
        samples: Some(Arc::new(Samples { read, write })),
    })
}

/// The `q` quantile of sorted `v` (nearest rank), 0 when empty.
fn quantile(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn fs_type(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path that outlives the call, and `st` is a writable
    // `statfs` the kernel fills; it is read only after the call returned success.
    let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statfs returned 0, so it wrote the whole struct.
    let st = unsafe { st.assume_init() };
    // `f_type` is a signed word whose width depends on the architecture; magics are positive.
    Ok(st.f_type as u64)
}

/// The measurement's file, 0600 in a private directory of its own on the measured device
/// (zmem-files' `PrivateTempDir`, 0700); both removed when dropped, on SIGINT/SIGTERM too.
struct TempFile {
    file: File,
    _dir: zmem_files::PrivateTempDir,
}

impl TempFile {
    fn create(dir: &Path) -> Result<Self, zmem_files::FileError> {
        let private = zmem_files::PrivateTempDir::new_in(dir, "zmem-swap-device")?;
        let (file, _) = private.create_file_with("measure", libc::O_DIRECT)?;
        Ok(Self { file, _dir: private })
    }
}

/// A 4 KiB-aligned window of `buf` (O_DIRECT needs aligned memory): found inside an
/// over-sized vector, so no unsafe allocation is needed.
fn aligned(buf: &mut [u8], len: usize) -> &mut [u8] {
    let off = buf.as_ptr().align_offset(PAGE);
    &mut buf[off..off + len]
}

fn run_measurement(f: &File, duration: Duration) -> std::io::Result<(Vec<u64>, Vec<u64>)> {
    const CHUNK: usize = 1 << 20;
    let mut storage = vec![0u8; CHUNK + PAGE];
    let chunk = aligned(&mut storage, CHUNK);
    let mut rng = SplitMix64::new(0x5eed_d0e5_c057_0001);
    rng.fill(chunk);
    let mut w = f;
    for _ in 0..MEASURE_FILE_BYTES / CHUNK as u64 {
        w.write_all(chunk)?;
    }
    f.sync_all()?;
    let pages = MEASURE_FILE_BYTES / PAGE as u64;
    let half = duration / 2;
    let mut page = vec![0u8; 2 * PAGE];
    let buf = aligned(&mut page, PAGE);
    let mut reads = Vec::new();
    let start = Instant::now();
    while start.elapsed() < half || reads.len() < 16 {
        let off = rng.below(pages) * PAGE as u64;
        let t = Instant::now();
        f.read_exact_at(buf, off)?;
        reads.push(t.elapsed().as_nanos() as u64);
    }
    let mut writes = Vec::new();
    let start = Instant::now();
    while start.elapsed() < half || writes.len() < 16 {
        let off = rng.below(pages) * PAGE as u64;
        buf[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
        let t = Instant::now();
        f.write_all_at(buf, off)?;
        writes.push(t.elapsed().as_nanos() as u64);
    }
    reads.sort_unstable();
    writes.sort_unstable();
    Ok((reads, writes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_parse_and_anything_else_is_a_path_or_an_error() {
        for p in PROFILES {
            assert_eq!(p.name.parse::<DeviceSpec>(), Ok(DeviceSpec::Profile(p)));
            assert!(p.read_p50_ns < p.read_p99_ns && p.write_p50_ns < p.write_p99_ns);
        }
        assert_eq!(
            "/var/swap".parse::<DeviceSpec>(),
            Ok(DeviceSpec::Path(PathBuf::from("/var/swap")))
        );
        assert_eq!(".".parse::<DeviceSpec>(), Ok(DeviceSpec::Path(PathBuf::from("."))));
        let e = "nvm3".parse::<DeviceSpec>().unwrap_err();
        assert!(e.contains("\"nvm3\"") && e.contains("nvme, ssd, emmc, hdd"), "{e}");
        assert!(!e.contains('\n'));
        assert!("".parse::<DeviceSpec>().is_err());
        // The profiles are ordered fastest first.
        for w in PROFILES.windows(2) {
            assert!(w[0].read_p50_ns < w[1].read_p50_ns);
        }
    }

    #[test]
    fn a_profile_is_sampled_around_its_quantiles_and_the_same_seed_repeats() {
        for p in PROFILES {
            let d = SwapDevice::from_profile(p);
            let mut s = d.sampler(7);
            let mut v: Vec<u64> = (0..20_000).map(|_| s.read_ns()).collect();
            let mut again = d.sampler(7);
            assert!(v.iter().all(|&x| x == again.read_ns()), "{}: not deterministic", p.name);
            v.sort_unstable();
            let (p50, p99) = (quantile(&v, 0.5) as f64, quantile(&v, 0.99) as f64);
            let near = |got: f64, want: u64| (got / want as f64 - 1.0).abs() < 0.1;
            assert!(near(p50, p.read_p50_ns), "{}: p50 {p50} vs {}", p.name, p.read_p50_ns);
            assert!(near(p99, p.read_p99_ns), "{}: p99 {p99} vs {}", p.name, p.read_p99_ns);
            let mut w: Vec<u64> = (0..20_000).map(|_| s.write_ns()).collect();
            w.sort_unstable();
            assert!(near(quantile(&w, 0.5) as f64, p.write_p50_ns), "{} write", p.name);
        }
    }

    #[test]
    fn a_measured_device_is_sampled_from_its_samples() {
        let d = SwapDevice {
            samples: Some(Arc::new(Samples { read: vec![10, 20, 30], write: vec![5] })),
            ..SwapDevice::default()
        };
        let mut s = d.sampler(1);
        let mut seen = [false; 3];
        for _ in 0..200 {
            let r = s.read_ns();
            assert!([10, 20, 30].contains(&r));
            seen[(r / 10 - 1) as usize] = true;
            assert_eq!(s.write_ns(), 5);
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((quantile(&v, 0.5), quantile(&v, 0.99), quantile(&v, 1.0)), (50, 99, 100));
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&[7], 0.99), 7);
    }
}
