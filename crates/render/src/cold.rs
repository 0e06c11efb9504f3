//! `zmem cold` on a terminal: one line per age read (age, cold bytes, share of the anonymous
//! memory), the rate idle memory came back, who was skipped, what measuring cost. The JSON
//! output is the [`ColdCurve`] itself, with exact bytes. Also the progress line the CLI shows
//! while it waits.

use std::fmt::Write;

use zmem_kernel::cold::ColdCurve;

use crate::status::human;

/// An age in the user's units: `45 s`, `2 min`, `90 s`, `1 h`.
pub fn age(secs: u64) -> String {
    match secs {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 { "-".into() } else { format!("{:.1} %", part as f64 * 100.0 / whole as f64) }
}

/// The progress line while waiting: where the run is, and the latest age read.
pub fn progress(elapsed_secs: u64, c: &ColdCurve) -> String {
    let last = c.asked_ages_secs.last().copied().unwrap_or(0);
    let mut line = format!("cold: {} of {}", age(elapsed_secs), age(last));
    if let (Some(a), Some(&cold)) = (c.ages_secs.last(), c.cold_bytes_at_age.last()) {
        let _ = write!(
            line,
            ", {} of {} idle for {} ({})",
            human(cold),
            human(c.anon_bytes),
            age(*a),
            percent(cold, c.anon_bytes)
        );
    }
    line
}

/// The line said when a signal stops the run early.
pub fn stopped(c: &ColdCurve) -> String {
    format!(
        "cold: stopped by a signal after {} of {} ages; printing what was measured",
        c.ages_secs.len(),
        c.asked_ages_secs.len()
    )
}

/// The whole result as text.
pub fn render(c: &ColdCurve) -> String {
    let mut o = String::new();
    // Writing to a String cannot fail.
    let _ = render_into(&mut o, c);
    o
}

fn render_into(o: &mut String, c: &ColdCurve) -> std::fmt::Result {
    let n = c.per_process.iter().filter(|p| p.exited_before_secs.is_none()).count();
    writeln!(
        o,
        "Cold memory of {n} process{}: {} anonymous at t0; idle since t0 \
         (clear_refs, then smaps' Referenced at each age):",
        if n == 1 { "" } else { "es" },
        human(c.anon_bytes)
    )?;
    writeln!(o, "{:>8}  {:>10}  {:>8}", "age", "cold", "of anon")?;
    for (i, &a) in c.ages_secs.iter().enumerate() {
        let cold = c.cold_bytes_at_age[i];
        writeln!(o, "{:>8}  {:>10}  {:>8}", age(a), human(cold), percent(cold, c.anon_bytes))?;
    }
    if c.ages_secs.is_empty() {
        writeln!(o, "No age was read.")?;
    }
    by_cgroup(o, c)?;
    for (i, rate) in c.returned_bytes_per_sec.iter().enumerate() {
        let (from, to) = (age(c.ages_secs[i]), age(c.ages_secs[i + 1]));
        writeln!(o, "Idle memory came back at {}/s from {from} to {to}.", human(*rate as u64))?;
    }
    skipped(o, c)?;
    let cost = &c.cost;
    writeln!(
        o,
        "Measuring cost {:.1} ms clearing and {:.1} ms in {} smaps reads.",
        cost.clear_secs * 1e3,
        cost.read_secs * 1e3,
        cost.reads
    )?;
    for note in &c.notes {
        writeln!(o, "Note: {note}.")?;
    }
    Ok(())
}

/// At most this many cgroups are listed, the largest first.
const MAX_CGROUPS_SHOWN: usize = 8;

/// The curve's last age per memory cgroup, largest first.
fn by_cgroup(o: &mut String, c: &ColdCurve) -> std::fmt::Result {
    let (Some(&last), mut groups) = (c.ages_secs.last(), c.by_cgroup()) else { return Ok(()) };
    if groups.is_empty() {
        return Ok(());
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.anon_bytes));
    writeln!(o, "By memory cgroup, idle for {}:", age(last))?;
    for g in groups.iter().take(MAX_CGROUPS_SHOWN) {
        let cold = g.cold_bytes_at_age.last().copied().unwrap_or(0);
        writeln!(
            o,
            "  {}: {} of {} ({}), {} process{}",
            g.path,
            human(cold),
            human(g.anon_bytes),
            percent(cold, g.anon_bytes),
            g.processes,
            if g.processes == 1 { "" } else { "es" }
        )?;
    }
    if groups.len() > MAX_CGROUPS_SHOWN {
        writeln!(o, "  ({} more)", groups.len() - MAX_CGROUPS_SHOWN)?;
    }
    Ok(())
}

fn skipped(o: &mut String, c: &ColdCurve) -> std::fmt::Result {
    let s = &c.skipped;
    let counts = [
        (s.exited, "gone"),
        (s.refused, "refused"),
        (s.kernel_threads, "kernel threads"),
        (s.itself, "zmem itself"),
        (s.no_anonymous, "with no anonymous memory"),
    ];
    let said: Vec<String> =
        counts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
    if !said.is_empty() {
        writeln!(o, "Skipped: {}.", said.join(", "))?;
    }
    for r in &s.reasons {
        writeln!(o, "  {r}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use zmem_kernel::cold::{ColdCurve, Cost, Method, Skipped};

    use super::*;

    fn curve() -> ColdCurve {
        ColdCurve {
            method: Method::ClearRefsReferenced,
            ages_secs: vec![10, 60],
            asked_ages_secs: vec![10, 60, 600],
            read_at_secs: vec![10.0, 60.0],
            anon_bytes: 100 << 20,
            cold_bytes_at_age: vec![90 << 20, 40 << 20],
            vanished_bytes_at_age: vec![0, 0],
            returned_bytes_per_sec: vec![(1 << 20) as f64],
            per_process: Vec::new(),
            skipped: Skipped {
                refused: 2,
                reasons: vec!["7: denied".into()],
                ..Default::default()
            },
            cost: Cost { clear_secs: 0.001, read_secs: 0.002, reads: 3 },
            notes: vec!["stopped after 2 of 3 ages".into()],
        }
    }

    #[test]
    fn one_line_per_age_with_its_share() {
        let t = render(&curve());
        assert!(t.contains("\n    10 s    90.0 MiB    90.0 %\n"), "{t}");
        assert!(t.contains("\n   1 min    40.0 MiB    40.0 %\n"), "{t}");
        assert!(t.contains("came back at 1.0 MiB/s from 10 s to 1 min"), "{t}");
        assert!(t.contains("Skipped: 2 refused.\n  7: denied"), "{t}");
        assert!(t.contains("Note: stopped after 2 of 3 ages."), "{t}");
        assert_eq!(
            progress(30, &curve()),
            "cold: 30 s of 10 min, 40.0 MiB of 100.0 MiB idle for 1 min (40.0 %)"
        );
        assert_eq!(age(7200), "2 h");
        assert_eq!(age(90), "90 s");
    }

    #[test]
    fn each_memory_cgroup_gets_its_line() {
        let mut c = curve();
        let p = |pid, cg: Option<&str>, anon, cold| zmem_kernel::cold::ProcessCold {
            memory_cgroup: cg.map(str::to_string),
            ..zmem_kernel::cold::ProcessCold::steady(pid, "x", anon, vec![cold, cold])
        };
        c.per_process = vec![
            p(1, Some("/sys/fs/cgroup/memory/lab"), 60 << 20, 30 << 20),
            p(2, Some("/sys/fs/cgroup/memory/lab"), 20 << 20, 10 << 20),
            p(3, Some("/sys/fs/cgroup/memory"), 10 << 20, 0),
            p(4, None, 10 << 20, 10 << 20),
        ];
        let t = render(&c);
        assert!(t.contains("By memory cgroup, idle for 1 min:\n  /sys/fs/cgroup/memory/lab: 40.0 MiB of 80.0 MiB (50.0 %), 2 processes\n  /sys/fs/cgroup/memory: 0 B of 10.0 MiB (0.0 %), 1 process\n"), "{t}");
    }
}
