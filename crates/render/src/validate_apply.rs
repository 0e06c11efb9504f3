//! `zmem validate apply`'s result: the terminal text ([`text`]: realized against predicted in
//! words, the table of figures, the changes made, the events, whether the machine is as it
//! was), the JSON ([`json`]) and a small offline HTML page ([`html`]: the same table and an
//! inline SVG of what the store held and saved over the watch). Every text that came from the
//! machine (paths, process names, kernel messages) has its control characters removed.

use std::fmt::Write;
use std::path::Path;

use zmem_validate::apply::report::{ApplyReport, Sample, ratio};

use crate::script::{html_text, terminal};

/// The chart's accent colours: held, saved.
pub const PLOT_COLORS: [&str; 2] = ["#1f77b4", "#2ca02c"];

fn mib(b: f64) -> String {
    // No "-0.0": a few bytes under nothing are nothing.
    let m = b / (1u64 << 20) as f64;
    format!("{:.1} MiB", if m.abs() < 0.05 { 0.0 } else { m })
}

/// `5 min`, or `m:ss` for a watch of no whole number of minutes.
fn span(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

fn ratio_text(realized: f64, predicted: f64) -> String {
    ratio(realized, predicted).map_or_else(|| "-".into(), |r| format!("{r:.2}"))
}

/// What was applied, in words: `zram lz4 with proactive reclaim at T = 60 s`.
fn applied(r: &ApplyReport) -> String {
    let what = match r.decision_kind.as_str() {
        "zram" | "zswap" => format!("Applied {}", r.config),
        "keep" => format!("Applied nothing (the decision keeps {})", r.config),
        _ => "Applied nothing (the decision is none)".to_string(),
    };
    let reclaim = match (&r.mechanism, r.cold_age_secs) {
        (Some(m), Some(t)) => format!(" with proactive reclaim ({m}) at T = {t} s"),
        _ => " without proactive reclaim".into(),
    };
    let watched = match &r.ended_early {
        Some(_) => format!("for {} of {}", span(r.seconds), span(r.seconds_asked as f64)),
        None => format!("for {}", span(r.seconds_asked as f64)),
    };
    format!("{what}{reclaim} {watched}")
}

/// The first line: realized against predicted.
pub fn headline(r: &ApplyReport) -> String {
    let (p, z, w) = (&r.predicted, &r.realized, &r.within);
    let ci = p.memory_saved_ci;
    format!(
        "{}: saved {}, predicted {} [{:.1}, {:.1}] ({}, {}); moved out {}, predicted {}; \
         {:.2} swap-ins/s, predicted {:.2}; PSI some avg60 {:.2} %{}.",
        applied(r),
        mib(z.memory_saved_bytes as f64),
        mib(p.memory_saved_bytes as f64),
        ci[0] as f64 / (1u64 << 20) as f64,
        ci[1] as f64 / (1u64 << 20) as f64,
        ratio_text(z.memory_saved_bytes as f64, p.memory_saved_bytes as f64),
        if w.saved_inside_ci { "inside" } else { "outside" },
        mib(z.moved_out_bytes as f64),
        mib(p.moved_out_bytes as f64),
        z.swap_ins_per_sec,
        p.swap_ins_per_sec,
        z.psi_some_avg60,
        if w.psi_below_0_1 { " (under 0.1 %)" } else { " (over 0.1 %)" }
    )
}

/// The figures: name, predicted, realized, ratio, verdict.
fn rows(r: &ApplyReport) -> Vec<Vec<String>> {
    let (p, z, w) = (&r.predicted, &r.realized, &r.within);
    let yes = |b: bool, s: &str| if b { s.to_string() } else { format!("not {s}") };
    let ci = format!(
        "{} [{}, {}]",
        mib(p.memory_saved_bytes as f64),
        mib(p.memory_saved_ci[0] as f64),
        mib(p.memory_saved_ci[1] as f64)
    );
    vec![
        vec![
            "memory saved".into(),
            ci,
            mib(z.memory_saved_bytes as f64),
            ratio_text(z.memory_saved_bytes as f64, p.memory_saved_bytes as f64),
            format!(
                "{}, {}",
                yes(w.saved_within_10_percent, "within 10 %"),
                yes(w.saved_inside_ci, "inside the interval")
            ),
        ],
        vec![
            "moved out".into(),
            mib(p.moved_out_bytes as f64),
            mib(z.moved_out_bytes as f64),
            ratio_text(z.moved_out_bytes as f64, p.moved_out_bytes as f64),
            format!("most held {}", mib(z.moved_out_max_bytes as f64)),
        ],
        vec![
            "swap-ins/s".into(),
            format!("{:.2}", p.swap_ins_per_sec),
            format!("{:.2}", z.swap_ins_per_sec),
            ratio_text(z.swap_ins_per_sec, p.swap_ins_per_sec),
            format!(
                "{}, from {}",
                yes(w.swap_ins_within_25_percent, "within 25 %"),
                zmem_validate::apply::watch::clock(z.swap_ins_from_secs)
            ),
        ],
        vec![
            "PSI some avg60".into(),
            "under 0.10 %".into(),
            format!("{:.2} %", z.psi_some_avg60),
            "-".into(),
            format!("{}, most {:.2} %", yes(w.psi_below_0_1, "under 0.1 %"), z.psi_some_avg60_max),
        ],
        vec![
            "agent CPU".into(),
            "-".into(),
            format!("{:.3} % of a core", z.cpu_seconds_per_second * 100.0),
            "-".into(),
            String::new(),
        ],
    ]
}

/// The store's and the agent's figures at the end, one line each.
fn details(r: &ApplyReport) -> Vec<String> {
    let z = &r.realized;
    let mut out = Vec::new();
    if z.at_secs + 0.5 < r.seconds {
        out.push(format!(
            "the figures are at {}: the last sample before the processes watched had all exited",
            span(z.at_secs)
        ));
    }
    if let Some(m) = &z.zram {
        out.push(format!(
            "zram at the end: orig_data_size {}, compr_data_size {}, mem_used_total {}, \
             mem_limit {}, same_pages {}, huge_pages {}; {} pages read back",
            m.orig_data_size,
            m.compr_data_size,
            m.mem_used_total,
            m.mem_limit,
            m.same_pages,
            m.huge_pages,
            m.pages_read
        ));
    }
    if let Some(s) = &z.zswap {
        out.push(format!(
            "zswap at the end ({}): stored_pages {}, pool_total_size {}; zswpout {}, zswpin {}, \
             {} pages read from the swap file",
            s.source, s.stored_pages, s.pool_total_size, s.zswpout, s.zswpin, s.disk_reads
        ));
    }
    if let Some(a) = &z.agent {
        out.push(format!(
            "agent: {} ticks ({} paused), {} paged out, {} came back, {} out at the end, {} \
             refused, {:.3} CPU s",
            a.ticks,
            a.paused_ticks,
            mib(a.paged_out_bytes as f64),
            mib(a.came_back_bytes as f64),
            mib(a.out_bytes as f64),
            mib(a.refused_bytes as f64),
            a.cpu_seconds
        ));
        out.push(format!("agent CPU: {}", z.cpu_note));
    }
    if let Some(b) = z.watched_swapped_bytes {
        out.push(format!(
            "the processes watched hold {} in swap at the end (VmSwap)",
            mib(b as f64)
        ));
    }
    if let Some(n) = &r.predicted.note {
        out.push(format!("predicted: {n}"));
    }
    out
}

/// Whether the machine is as it was, in words.
fn verdict(r: &ApplyReport) -> String {
    match (r.restored, r.differs.is_empty()) {
        (true, true) => "The machine is as it was.".into(),
        (true, false) => format!(
            "Everything this run made is undone; the machine differs in what something else \
             changed meanwhile: {}",
            r.differs.join("; ")
        ),
        (false, true) => {
            "The machine reads as it was, but a change could not be undone (see the events).".into()
        }
        (false, false) => format!("The machine is NOT as it was: {}", r.differs.join("; ")),
    }
}

/// The terminal text.
pub fn text(r: &ApplyReport) -> String {
    let mut out = headline(r) + "\n";
    out += &crate::table::render(
        "  ",
        "lrrrl",
        &["figure", "predicted", "realized", "ratio", ""],
        &rows(r),
    );
    for d in details(r) {
        out += &format!("  {d}\n");
    }
    let list = |title: &str, items: &[String]| {
        if items.is_empty() {
            return String::new();
        }
        let mut s = format!("{title}:\n");
        for i in items {
            s += &format!("  - {i}\n");
        }
        s
    };
    out += &list("Changes made", &r.changes);
    out += &list("Events", &r.events);
    if let Some(why) = &r.ended_early {
        out += &format!("Ended early: {why}\n");
    }
    out += &verdict(r);
    out.push('\n');
    terminal(&out)
}

/// The JSON document (the report itself).
pub fn json(r: &ApplyReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// A line of the chart: its name and its value at a sample.
type Series = (&'static str, fn(&Sample) -> f64);

/// Two lines over time: what the store held, and what it saved; the predicted saving dashed.
fn chart(samples: &[Sample], predicted_saved: f64) -> String {
    let (w, h, left, bottom, top) = (720.0, 260.0, 70.0, 40.0, 30.0);
    let t1 = samples.iter().map(|s| s.t_secs).fold(1.0, f64::max);
    let held = samples.iter().map(|s| s.moved_out_bytes as f64).fold(1.0, f64::max);
    let y1 = held.max(predicted_saved) * 1.1;
    let px = |t: f64| left + t / t1 * (w - left - 20.0);
    let py = |b: f64| h - bottom - b.max(0.0) / y1 * (h - top - bottom);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} \
         {h}\" font-family=\"sans-serif\" font-size=\"12\"><rect width=\"{w}\" height=\"{h}\" \
         fill=\"#fff\"/><line x1=\"{left}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/>\
         <line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{b}\" stroke=\"#333\"/>\
         <text x=\"{left}\" y=\"{}\">0</text><text x=\"{r}\" y=\"{}\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        h - bottom + 16.0,
        h - bottom + 16.0,
        span(t1),
        left - 6.0,
        top + 4.0,
        mib(y1),
        b = h - bottom,
        r = w - 20.0,
    );
    let series: [Series; 2] =
        [("held (moved out)", |x| x.moved_out_bytes as f64), ("saved", |x| x.saved_bytes() as f64)];
    for (k, (name, f)) in series.iter().enumerate() {
        let pts: Vec<String> =
            samples.iter().map(|x| format!("{:.1},{:.1}", px(x.t_secs), py(f(x)))).collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>\
             <text x=\"{}\" y=\"{}\" fill=\"{c}\">{}</text>",
            pts.join(" "),
            left + 10.0 + 160.0 * k as f64,
            top - 10.0,
            html_text(name),
            c = PLOT_COLORS[k],
        );
    }
    if predicted_saved > 0.0 {
        let y = py(predicted_saved);
        let _ = write!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"{c}\" \
             stroke-dasharray=\"6 4\"/><text x=\"{}\" y=\"{}\" fill=\"{c}\">predicted saving</text>",
            w - 20.0,
            left + 330.0,
            top - 10.0,
            c = PLOT_COLORS[1],
        );
    }
    s + "</svg>"
}

/// The HTML page.
pub fn html(r: &ApplyReport) -> String {
    let mut s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>zmem \
                 validate apply</title><style>body{font-family:sans-serif;max-width:760px;\
                 margin:2em auto;color:#222}table{border-collapse:collapse}td,th{border:1px \
                 solid #ccc;padding:2px 8px;text-align:right}td:first-child,td:last-child{\
                 text-align:left}svg{display:block;margin:1em 0}</style></head><body>\
                 <h1>zmem validate apply</h1>"
        .to_string();
    let _ = write!(
        s,
        "<p>{}</p><table><tr><th>figure</th><th>predicted</th><th>realized</th><th>ratio</th><th></th></tr>",
        html_text(&headline(r))
    );
    for row in rows(r) {
        s += "<tr>";
        for c in row {
            let _ = write!(s, "<td>{}</td>", html_text(&c));
        }
        s += "</tr>";
    }
    s += "</table>";
    s += &chart(&r.samples, r.predicted.memory_saved_bytes as f64);
    let list = |title: &str, items: &[String]| {
        let li: String = items.iter().map(|i| format!("<li>{}</li>", html_text(i))).collect();
        if items.is_empty() { String::new() } else { format!("<h2>{title}</h2><ul>{li}</ul>") }
    };
    s += &list("Details", &details(r));
    s += &list("Changes made", &r.changes);
    s += &list("Events", &r.events);
    let _ = writeln!(s, "<p><strong>{}</strong></p></body></html>", html_text(&verdict(r)));
    s
}

/// Writes the JSON and the HTML where asked (0644, through zmem-files).
pub fn write_files(
    r: &ApplyReport,
    json_to: Option<&Path>,
    html_to: Option<&Path>,
) -> Result<(), String> {
    let kind = zmem_files::Kind::Shared;
    if let Some(p) = json_to {
        zmem_files::write(p, kind, (json(r) + "\n").as_bytes()).map_err(|e| e.to_string())?;
    }
    if let Some(p) = html_to {
        zmem_files::write(p, kind, html(r).as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
