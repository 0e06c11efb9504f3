//! `zmem agent`: proactive reclaim. Pages out the anonymous memory of user processes that has
//! gone untouched for the cold age, with process_madvise(MADV_PAGEOUT), pausing under memory
//! pressure, within a CPU budget; writes its status for `zmem exporter` (zmem_kernel::reclaim
//! documents how it chooses pages).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use zmem_kernel::reclaim::{self, AgentConfig, AgentStats, Exclude, Predicted};
use zmem_kernel::record::SignalStop;

use super::args::{MAX_SECS, count};

/// How often the progress line is written.
const PROGRESS_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// T: page out anonymous memory untouched for at least SECS (default 60).
    #[arg(long, value_name = "SECS", value_parser = count::<u64>(1, reclaim::MAX_COLD_AGE_SECS))]
    cold_age: Option<u64>,
    /// How often it looks, in seconds (default: the cold age / 4, within 5 to 60, at most the
    /// cold age).
    #[arg(long, value_name = "SECS", value_parser = count::<u64>(1, reclaim::MAX_COLD_AGE_SECS))]
    period: Option<u64>,
    /// Most CPU the agent uses over any five minutes, page-outs and their compression
    /// included, in percent of one core (default 0.5; a first pass over memory idle since
    /// before it started spends what the minutes before it saved).
    #[arg(long, value_name = "PERCENT")]
    cpu_budget: Option<f64>,
    /// Pause while the memory PSI `some avg10` is above PERCENT (default 0.1).
    #[arg(long, value_name = "PERCENT")]
    psi_limit: Option<f64>,
    /// Never page these out, comma-separated: a number is a pid, a value starting with / a
    /// memory cgroup path prefix (as /proc/PID/cgroup shows it), anything else a process name.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    exclude: Vec<String>,
    /// Only these processes, comma-separated pids (default: every user process).
    #[arg(long = "pid", value_name = "LIST", value_delimiter = ',')]
    pids: Vec<u32>,
    /// Start from this JSON agent configuration (the `config` of a status file, or part of
    /// one); the flags given override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where to write the status after every look (its directory is made 0755 if missing).
    #[arg(long, value_name = "FILE", default_value = reclaim::DEFAULT_STATUS_PATH)]
    status: PathBuf,
    /// Stop after SECS (default: run until SIGINT or SIGTERM).
    #[arg(long, value_name = "SECS", value_parser = count::<u64>(1, MAX_SECS))]
    duration: Option<u64>,
    /// The lab's predicted bytes moved out, carried into the status for the exporter.
    #[arg(long, value_name = "BYTES")]
    predicted_moved_out: Option<u64>,
    /// The lab's predicted swap-ins per second.
    #[arg(long, value_name = "PER_SEC")]
    predicted_swap_ins: Option<f64>,
    /// The lab's predicted memory saved, in bytes (negative: it would cost memory).
    #[arg(long, value_name = "BYTES")]
    predicted_saved: Option<i64>,
}

/// A `--config` file: any fields of the agent's configuration.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    cold_age_secs: Option<u64>,
    period_secs: Option<u64>,
    cpu_budget_percent: Option<f64>,
    psi_some_avg10_limit: Option<f64>,
    exclude: Option<Exclude>,
    pids: Option<Vec<u32>>,
    min_idle_bytes: Option<u64>,
    predicted: Option<Predicted>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let file = args.config.as_deref().map(read_config).transpose()?.unwrap_or_default();
    let config = config(args, file)?;
    let mut agent = reclaim::Agent::new(config)?;
    let stop = SignalStop::install()?;
    let start = Instant::now();
    let mut said = start;
    let mut on_tick = |s: &AgentStats| {
        if said.elapsed() >= PROGRESS_EVERY {
            super::note(&progress(s, start.elapsed()));
            said = Instant::now();
        }
    };
    let duration = args.duration.map(Duration::from_secs);
    let stats = reclaim::run(&mut agent, stop.flag(), duration, Some(&args.status), &mut on_tick)?;
    drop(stop);
    super::note(&progress(&stats, start.elapsed()));
    Ok(())
}

fn read_config(path: &Path) -> anyhow::Result<FileConfig> {
    let text =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("--config {}: {e}", path.display()))?;
    serde_json::from_slice(&text).map_err(|e| anyhow::anyhow!("--config {}: {e}", path.display()))
}

/// The configuration: `file`'s fields, then the flags given, over the defaults; checked.
fn config(args: &Args, file: FileConfig) -> anyhow::Result<AgentConfig> {
    let t = args.cold_age.or(file.cold_age_secs).unwrap_or(reclaim::DEFAULT_COLD_AGE_SECS);
    let mut c = AgentConfig::new(t);
    // A period from the file holds for the file's cold age only: a new --cold-age derives it.
    let file_period = file.period_secs.filter(|_| args.cold_age.is_none());
    c.period_secs = args.period.or(file_period).unwrap_or(c.period_secs);
    c.cpu_budget_percent =
        args.cpu_budget.or(file.cpu_budget_percent).unwrap_or(c.cpu_budget_percent);
    c.psi_some_avg10_limit =
        args.psi_limit.or(file.psi_some_avg10_limit).unwrap_or(c.psi_some_avg10_limit);
    c.exclude = file.exclude.unwrap_or_default();
    for item in args.exclude.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        c.exclude.add(item).map_err(|e| anyhow::anyhow!("--exclude: {e}"))?;
    }
    c.pids = if args.pids.is_empty() { file.pids } else { Some(args.pids.clone()) };
    c.min_idle_bytes = file.min_idle_bytes.unwrap_or(c.min_idle_bytes);
    c.predicted = predicted(args, file.predicted);
    c.check().map_err(|e| anyhow::anyhow!("{}", flag_named(&e.to_string())))?;
    Ok(c)
}

/// The prediction: the file's, with the flags given over it (a missing part is 0).
fn predicted(args: &Args, file: Option<Predicted>) -> Option<Predicted> {
    let any = args.predicted_moved_out.is_some()
        || args.predicted_swap_ins.is_some()
        || args.predicted_saved.is_some();
    if !any {
        return file;
    }
    let p = file.unwrap_or(Predicted {
        moved_out_bytes: 0,
        swap_ins_per_sec: 0.0,
        memory_saved_bytes: 0,
    });
    Some(Predicted {
        moved_out_bytes: args.predicted_moved_out.unwrap_or(p.moved_out_bytes),
        swap_ins_per_sec: args.predicted_swap_ins.unwrap_or(p.swap_ins_per_sec),
        memory_saved_bytes: args.predicted_saved.unwrap_or(p.memory_saved_bytes),
    })
}

/// The check's message with the flag that sets the value in front.
fn flag_named(msg: &str) -> String {
    let flag = [
        ("cold age", "--cold-age"),
        ("period", "--period"),
        ("CPU budget", "--cpu-budget"),
        ("PSI limit", "--psi-limit"),
        ("excluded cgroup", "--exclude"),
        ("predicted", "--predicted-swap-ins"),
    ]
    .into_iter()
    .find(|(what, _)| msg.starts_with(what));
    flag.map_or_else(|| msg.to_string(), |(_, f)| format!("{f}: {msg}"))
}

/// The progress line: what went out, what came back, the agent's CPU and its pauses.
fn progress(s: &AgentStats, elapsed: Duration) -> String {
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let cpu = 100.0 * s.cpu_seconds / elapsed.as_secs_f64().max(1e-3);
    format!(
        "zmem agent: {}s: moved out {:.1} MiB ({:.1} MiB still out), came back {:.1} MiB, \
         CPU {cpu:.2} % of a core, paused {} of {} looks, {} processes",
        elapsed.as_secs(),
        mib(s.paged_out_bytes),
        mib(s.out_bytes),
        mib(s.came_back_bytes),
        s.paused_ticks,
        s.ticks,
        s.processes
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args::parse_flags;

    fn config_of(argv: &[&str], file: FileConfig) -> anyhow::Result<AgentConfig> {
        let mut all = vec!["agent"];
        all.extend_from_slice(argv);
        config(&parse_flags::<Args>(&all), file)
    }

    #[test]
    fn the_defaults_are_the_libraries() {
        let c = config_of(&[], FileConfig::default()).unwrap();
        assert_eq!(c, AgentConfig::new(60));
        let a: Args = parse_flags(&["agent"]);
        assert_eq!(a.status, Path::new("/run/zmem/agent.json"));
    }

    #[test]
    fn exclusions_are_pids_cgroups_or_names() {
        let c = config_of(
            &["--exclude", "1,/system.slice,sshd", "--pid", "7,8"],
            FileConfig::default(),
        )
        .unwrap();
        assert_eq!(c.exclude.pids, [1]);
        assert_eq!(c.exclude.cgroups, ["/system.slice"]);
        assert_eq!(c.exclude.comms, ["sshd"]);
        assert_eq!(c.pids, Some(vec![7, 8]));
    }

    #[test]
    fn flags_override_the_file_and_a_new_cold_age_derives_its_period() {
        let file = || FileConfig {
            cold_age_secs: Some(600),
            period_secs: Some(100),
            cpu_budget_percent: Some(2.0),
            predicted: Some(Predicted {
                moved_out_bytes: 5,
                swap_ins_per_sec: 1.0,
                memory_saved_bytes: 3,
            }),
            ..FileConfig::default()
        };
        let c = config_of(&[], file()).unwrap();
        assert_eq!((c.cold_age_secs, c.period_secs, c.cpu_budget_percent), (600, 100, 2.0));
        let c =
            config_of(&["--cold-age", "20", "--cpu-budget", "1", "--predicted-saved=-9"], file())
                .unwrap();
        assert_eq!((c.cold_age_secs, c.period_secs, c.cpu_budget_percent), (20, 5, 1.0));
        let p = c.predicted.unwrap();
        assert_eq!((p.moved_out_bytes, p.memory_saved_bytes), (5, -9));
    }

    #[test]
    fn bad_values_name_their_flag() {
        let e = config_of(&["--cpu-budget", "0"], FileConfig::default()).unwrap_err();
        assert!(e.to_string().starts_with("--cpu-budget: "), "{e}");
        let e =
            config_of(&["--cold-age", "10", "--period", "11"], FileConfig::default()).unwrap_err();
        assert!(e.to_string().starts_with("--period: "), "{e}");
        let e = config_of(&["--psi-limit", "NaN"], FileConfig::default()).unwrap_err();
        assert!(e.to_string().starts_with("--psi-limit: "), "{e}");
    }

    #[test]
    fn a_config_file_is_read_and_unknown_fields_refused() {
        let dir = tempfile_dir();
        let path = dir.join("agent.json");
        std::fs::write(&path, r#"{"cold_age_secs": 120, "exclude": {"comms": ["sshd"]}}"#).unwrap();
        let f = read_config(&path).unwrap();
        assert_eq!(f.cold_age_secs, Some(120));
        std::fs::write(&path, r#"{"cold_age": 120}"#).unwrap();
        let e = read_config(&path).unwrap_err().to_string();
        assert!(e.contains("unknown field") && e.starts_with("--config "), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("zmem-agent-cli-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
