//! The operating point in words (`zmem_lab::operating`): the sentence that opens the decision
//! (what the machine will really do, today and at the cold age), the figures at each point,
//! and the cold curve as a plot for the HTML report.

use zmem_lab::LabReport;
use zmem_lab::decision::Kind;
use zmem_lab::operating::{AtPoint, Named, OperatingPoint, TodayReason};
use zmem_lab::proactive::Mechanism;

use crate::cold::age;
use crate::units::human_bytes;

fn b(v: f64) -> String {
    human_bytes(v)
}

/// The point a decision's headline saving is at, in words.
pub fn named_words(d: &zmem_lab::Decision) -> &'static str {
    match d.operating_point.as_ref().map(|op| op.named) {
        Some(Named::Today) => "at today's pressure",
        Some(Named::ColdAge) => "at the cold age",
        Some(Named::AllPages) | None => "with every page swapped",
    }
}

/// What is short now, in words: the machine's free memory and PSI, or its cgroups.
fn pressure_words(op: &OperatingPoint) -> String {
    let t = &op.today;
    let avail = t.available_bytes.map_or("unknown".into(), |a| b(a as f64));
    let psi = t.psi_some_avg10.map_or("no PSI".into(), |p| format!("PSI {p:.2} %"));
    match t.reason {
        TodayReason::NotShort => format!("Memory is not short now ({avail} available, {psi})"),
        TodayReason::Short => format!(
            "Memory is short now ({} free, under the low watermark {}; {psi}): reclaim moves {} \
             of anonymous memory out",
            b(t.free_bytes as f64),
            b(t.low_watermark_bytes as f64),
            b(t.moved_out_bytes as f64)
        ),
        TodayReason::Cgroups => {
            let each: Vec<String> = t
                .cgroups
                .iter()
                .map(|c| {
                    format!(
                        "{} uses {} against {} limit of {}{}",
                        c.path,
                        b(c.usage_bytes as f64),
                        if c.asked { "the asked" } else { "its" },
                        b(c.limit_bytes as f64),
                        format_args!(", so its reclaim moves {} out", b(c.excess_bytes as f64))
                    )
                })
                .collect();
            format!(
                "Memory is short in its cgroups ({avail} available overall): {}",
                each.join("; ")
            )
        }
        TodayReason::LiveSwap => {
            format!("A compressed swap runs now and holds {}", b(t.moved_out_bytes as f64))
        }
        TodayReason::NoReading => "The pages are not this machine's (or its pressure was not \
             read), so what reclaim would move out of them is not known: the savings are for \
             every page swapped"
            .into(),
    }
}

/// The opening sentence (issue 54's form): today's point in plain words, then the cold age.
pub fn sentence(r: &LabReport) -> Option<String> {
    let d = &r.decision;
    let op = d.operating_point.as_ref()?;
    let c = d.chosen(&r.candidates).filter(|_| d.kind != Kind::None);
    let name = c.map_or("a compressed swap".to_string(), |c| c.name.clone());
    let mut s = pressure_words(op);
    if op.named == Named::AllPages {
        return Some(s + ".");
    }
    if op.today.reason == TodayReason::NotShort {
        s += &format!(": {name} will hold nothing until it is, or until cold memory is reclaimed");
    } else if let Some(c) = c.filter(|c| c.at_today.moved_out_bytes > 0) {
        // What runs now saves nothing against itself: say what it holds instead.
        let held = if c.runs_now {
            format!("; {name} holds it in {}", b(d.basis.now_bytes as f64))
        } else {
            format!(
                "; {name} would hold that in {} (saves {} against now)",
                b(c.at_today.pool_bytes as f64),
                b(c.at_today.memory_saved_bytes as f64)
            )
        };
        s += &held;
    }
    match (&op.cold, c.and_then(|c| c.at_cold_age)) {
        (Some(k), Some(at)) => {
            s += &format!(
                "; {} has been idle for {}, which {name} would hold in {} (saves {}) at {:.3} % \
                 of the working set a minute promoted{}",
                b(k.cold_bytes as f64),
                age(k.age_secs),
                b(at.pool_bytes as f64),
                b(at.memory_saved_bytes as f64),
                k.promotion_percent_per_min,
                if k.promotion_bound { " at most" } else { "" }
            );
            if k.over_promotion_budget {
                s += &format!(
                    " (over the promotion budget of {} %: T is too short to move memory out at)",
                    k.promotion_budget_percent_per_min
                );
            } else if k.promotion_under_floor
                && k.promotion_percent_per_min > k.promotion_budget_percent_per_min
            {
                s += &format!(
                    " (more than the promotion budget's {} % of so small a working set, but \
                     {:.2} pages a second: under one, within the budget)",
                    k.promotion_budget_percent_per_min,
                    k.promoted_bytes_per_sec / r.source.page_size.max(1) as f64
                );
            }
        }
        _ => {
            let why = op.cold_unseen.as_deref().unwrap_or("not read");
            s += &format!("; memory idle for a while: {why}");
        }
    }
    Some(s + ".")
}

/// The proactive reclaim the decision adds, in words (or why there is none).
pub fn proactive(r: &LabReport) -> Option<String> {
    let d = &r.decision;
    let Some(p) = &d.proactive else {
        return d.proactive_none.as_ref().map(|why| format!("No proactive reclaim: {why}."));
    };
    let how = match p.mechanism {
        Mechanism::ProcessMadvise => "zmem's agent (zmem agent) pages out",
        Mechanism::Damon => "a DAMON scheme in a kdamond of zmem's own pages out",
        Mechanism::MemoryReclaim => "memory.reclaim reclaims",
    };
    let saves = d.chosen(&r.candidates).and_then(|c| c.at_cold_age).map_or(String::new(), |a| {
        format!(", held in {} (saves {})", b(a.pool_bytes as f64), b(a.memory_saved_bytes as f64))
    });
    let left =
        d.operating_point.as_ref().and_then(|o| o.cold.as_ref()).map_or(&[][..], |k| &k.left_out);
    let left_out = if left.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = left
            .iter()
            .map(|o| format!("{} (pid {}, {} idle)", o.comm, o.pid, b(o.cold_bytes as f64)))
            .collect();
        format!(
            "; never paged out, their own idle memory coming back over the promotion budget: {}",
            names.join(", ")
        )
    };
    let held = if p.held_back_bytes == 0 {
        String::new()
    } else {
        format!(
            " (the agent keeps what came back resident while its hot mark ages, up to {} \
             once it has run 8 times T: the saving's interval reaches {} lower for it)",
            b(p.held_back_bytes as f64),
            b(p.held_back_saved_bytes as f64)
        )
    };
    Some(format!(
        "Proactive reclaim: {how} anonymous memory idle for {} ({}): it moves {} out now{saves}; \
         {:.1} pages a second come back{held}{left_out}; --no-proactive leaves it out.",
        age(p.cold_age_secs),
        p.why,
        b(p.moves_bytes as f64),
        p.promoted_bytes_per_sec / r.source.page_size.max(1) as f64,
    ))
}

fn figure(label: &str, at: &AtPoint) -> String {
    format!(
        "{label}: {} moved out, held in {}: saves {} [{} .. {}, 95 %]",
        b(at.moved_out_bytes as f64),
        b(at.pool_bytes as f64),
        b(at.memory_saved_bytes as f64),
        b(at.memory_saved_ci[0] as f64),
        b(at.memory_saved_ci[1] as f64)
    )
}

/// The chosen candidate's figures at each point, the named one first (terminal lines).
pub fn figures(r: &LabReport) -> Vec<String> {
    let d = &r.decision;
    let (Some(op), Some(c)) = (&d.operating_point, d.chosen(&r.candidates)) else {
        return Vec::new();
    };
    let today = figure("at today's pressure", &c.at_today);
    let cold = op.cold.as_ref().zip(c.at_cold_age).map(|(k, at)| {
        figure(&format!("at the cold age {} (idle that long)", age(k.age_secs)), &at)
    });
    let mut out = match op.named {
        Named::Today => [Some(today), cold].into_iter().flatten().collect::<Vec<_>>(),
        Named::ColdAge => [cold, Some(today)].into_iter().flatten().collect(),
        // Nothing is known of what the machine moves out: the figure below is the headline.
        Named::AllPages => return Vec::new(),
    };
    out.push(format!("(bytes moved: {})", op.compressibility));
    out
}

/// The size the decision sets, and what happens when it fills (zram only: zswap's pool is
/// capped by its max_pool_percent, its swap area named with the decision).
pub fn sizing(r: &LabReport) -> Option<String> {
    let d = &r.decision;
    if d.kind == Kind::Zswap {
        return zswap_sizing(r);
    }
    let s = d.sizing.as_ref().filter(|_| d.kind == Kind::Zram)?;
    Some(format!(
        "size: disksize {} ({} x the {} moved out at {}), mem_limit {} ({} x its {} pool); zram's \
         pool is charged to no memory cgroup, so a cgroup's limit, the OOM killer's per-process \
         counts and systemd-oomd's per-cgroup pressure do not see it; once it is full (or at \
         mem_limit) zram refuses writes, the pages stay in RAM or go to the next swap area, and \
         with nothing else to reclaim the OOM killer runs",
        b(s.disksize_bytes as f64),
        zmem_lab::operating::SIZE_HEADROOM,
        b(s.moved_out_bytes as f64),
        crate::apply::at(s),
        b(s.mem_limit_bytes as f64),
        zmem_lab::operating::LIMIT_HEADROOM,
        b(s.pool_bytes as f64),
    ))
}

/// zswap's pool at the point moving out the most against its max_pool_percent of this
/// machine's RAM, and the max_pool_percent the decision sets (the candidate's, raised where
/// the pool with its headroom would pass it): over the limit, 6.18's `zswap_store()` refuses
/// pages (they go to the swap device as they are) and `shrink_worker()` writes the oldest back
/// until the pool is under accept_threshold_percent of it (mm/zswap.c `zswap_check_limits()`).
fn zswap_sizing(r: &LabReport) -> Option<String> {
    let d = &r.decision;
    let s = d.sizing.as_ref()?;
    let zmem_lab::Config::Zswap { params, .. } = &d.chosen(&r.candidates)?.config else {
        return None;
    };
    let ram = r.zswap.as_ref()?.live.mem_total_bytes?;
    let percent = 100.0 * s.pool_bytes as f64 / ram.max(1) as f64;
    let judged = params.max_pool_percent;
    let set = s.max_pool_percent.unwrap_or(judged);
    let limit = if set > judged {
        format!(
            "max_pool_percent is set to {set} % (the {judged} % judged, raised so the pool may \
             grow {} x before it is refused)",
            zmem_lab::operating::LIMIT_HEADROOM
        )
    } else {
        format!("within its max_pool_percent of {judged} %")
    };
    let full = if f64::from(set) < percent * zmem_lab::operating::LIMIT_HEADROOM {
        "; past it zswap refuses pages (they go to the swap device as they are) and writes its \
         oldest back"
    } else {
        ""
    };
    Some(format!(
        "size: at {} zswap's pool would hold {} in {} ({percent:.1} % of RAM); {limit}{full}",
        crate::apply::at(s),
        b(s.moved_out_bytes as f64),
        b(s.pool_bytes as f64),
    ))
}

/// The cold curve as a plot: bytes idle against age, and what the chosen candidate would save
/// at each age; none without a curve.
pub fn plot(r: &LabReport, color: &str) -> Option<String> {
    let d = &r.decision;
    let k = d.operating_point.as_ref()?.cold.as_ref()?;
    let per_byte = d
        .chosen(&r.candidates)
        .and_then(|c| c.at_cold_age)
        .filter(|a| a.moved_out_bytes > 0)
        .map_or(0.0, |a| a.memory_saved_bytes as f64 / a.moved_out_bytes as f64);
    let mib = |v: u64| v as f64 / (1u64 << 20) as f64;
    let mut items = Vec::new();
    for (a, &cold) in k.ages_secs.iter().zip(&k.cold_bytes_at_age) {
        items.push((format!("idle {}", age(*a)), mib(cold)));
        items.push((format!("saves at {}", age(*a)), mib(cold) * per_byte));
    }
    Some(crate::svg::bars(
        &format!(
            "Cold memory by age ({} anonymous watched), and {} would save at each",
            b(k.anon_bytes as f64),
            r.decision.config
        ),
        &items,
        "MiB",
        color,
    ))
}
