//! The recommendation in words: why the choice, and why not the runner-up, with the numbers.

use zmem_lab::{LabReport, RunnerUpReason, UncertainReason};

const MIB: f64 = (1 << 20) as f64;

/// Why the measurement is too uncertain to advise on, in one sentence, when it is.
pub fn uncertain(r: &LabReport) -> Option<String> {
    let rec = &r.recommendation;
    if !rec.uncertain {
        return None;
    }
    Some(match &rec.uncertain_reason {
        Some(UncertainReason::TooFewPages { measured_pages, min_pages }) => format!(
            "too uncertain to recommend anything: {measured_pages} pages measured, fewer than the \
             {min_pages} the lab needs (below that the 95 % interval of the pool is wider than \
             +-10 %, and zsmalloc's partly filled zspages, one per size class, weigh more than \
             the pages themselves, so the ratio and the memory saved describe these few pages \
             only, not a device); measure more pages (--max-pages, --sample) or a larger capture"
        ),
        None => "too uncertain to recommend anything".into(),
    })
}

/// Why the lab recommends what it does, in one paragraph.
pub fn why(r: &LabReport) -> String {
    if let Some(u) = uncertain(r) {
        return u;
    }
    let rec = &r.recommendation;
    let b = &r.budgets;
    let mut why = if !rec.available {
        format!(
            "this kernel runs none of the candidates ({}); on a kernel that does, {} is the \
             one the rule picks",
            rec.unavailable_reason.as_deref().unwrap_or("unknown reason"),
            rec.config
        )
    } else if !rec.within_budgets {
        format!(
            "no configuration fits the budgets ({} % of a core, +{} us p99); {} is the cheapest \
             in CPU that saves at least as much memory as now",
            b.cpu_percent_of_core, b.added_load_p99_us, rec.config
        )
    } else if rec.keep_current {
        format!("keep {}: no configuration within the budgets saves more memory", rec.config)
    } else {
        format!("{} saves the most memory within the budgets", rec.config)
    };
    let pool = r.candidates.iter().find(|c| c.name == rec.config).map_or(0, |c| c.pool_bytes);
    let load_p99 = r.candidates.iter().find(|c| c.name == rec.config).map_or(0, |c| c.load_p99_ns);
    why += &format!(
        ": {:+.1} MiB against now ({:.1} MiB of {} pages), {:.3} % of a core ({:+.3} % against \
         now), p99 swap-in {:.1} us ({:+.1} us)",
        rec.memory_saved_bytes_vs_now as f64 / MIB,
        pool as f64 / MIB,
        rec.projected_pages,
        100.0 * rec.cpu_secs_per_sec,
        100.0
            * r.candidates
                .iter()
                .find(|c| c.name == rec.config)
                .map_or(0.0, |c| c.added_cpu_secs_per_sec),
        load_p99 as f64 / 1000.0,
        rec.added_load_p99_ns as f64 / 1000.0,
    );
    if let (Some(name), Some(reason)) = (&rec.runner_up, &rec.runner_up_reason) {
        let reason = match reason {
            RunnerUpReason::OutsideBudgets { over_budget } => {
                format!("outside the budgets ({})", over_budget.join("; "))
            }
            RunnerUpReason::SavesLess { bytes } => {
                format!("saves {:.2} MiB less", *bytes as f64 / MIB)
            }
            RunnerUpReason::SavesAsMuchCostsMore => "saves as much and costs more CPU".into(),
            RunnerUpReason::SavesAsMuchKeepCurrent => {
                "saves as much; the current configuration is kept".into()
            }
            RunnerUpReason::CostsMoreCpu => "costs more CPU".into(),
        };
        why += &format!("; runner-up {name}: {reason}");
    }
    why
}
