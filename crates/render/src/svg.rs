//! Minimal inline-SVG charts for the HTML report: bars, a labelled scatter, and log2 latency
//! histograms. No scripts, no external files: the report opens offline.
//!
//! Each chart draws its marks in one accent colour passed by the caller, so a screenshot test
//! can find every chart by its colour.

use std::fmt::Write;

const W: f64 = 720.0;
const H: f64 = 300.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// Text in SVG markup: escaped, control characters removed (names can come from a report
/// read back from JSON).
fn esc(s: &str) -> String {
    crate::script::html_text(s)
}

fn open(title: &str, height: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" \
         viewBox=\"0 0 {W} {height}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect width=\"{W}\" height=\"{height}\" fill=\"#ffffff\"/>\
         <text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        10,
        esc(title)
    )
}

/// Horizontal bars, one per label; `unit` follows each value.
pub fn bars(title: &str, items: &[(String, f64)], unit: &str, color: &str) -> String {
    let row = 24.0;
    let height = TOP + BOTTOM / 2.0 + row * items.len().max(1) as f64;
    let mut s = open(title, height);
    let max = items.iter().map(|i| i.1).fold(0.0, f64::max).max(1e-12);
    let span = W - LEFT - RIGHT - 90.0;
    for (k, (label, v)) in items.iter().enumerate() {
        let y = TOP + k as f64 * row;
        let w = (v.max(0.0) / max * span).max(1.0);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{LEFT}\" y=\"{}\" width=\"{w:.1}\" height=\"{}\" fill=\"{color}\"/>\
             <text x=\"{}\" y=\"{}\">{} {}</text>",
            LEFT - 8.0,
            y + 15.0,
            esc(label),
            y + 3.0,
            row - 6.0,
            LEFT + w + 6.0,
            y + 15.0,
            fmt_num(*v),
            esc(unit)
        );
    }
    s + "</svg>"
}

/// Points with labels; `log_x` draws the x axis logarithmically (speeds span decades).
pub fn scatter(
    title: &str,
    points: &[(String, f64, f64)],
    x_label: &str,
    y_label: &str,
    log_x: bool,
    color: &str,
) -> String {
    let mut s = open(title, H);
    let fx = |x: f64| if log_x { x.max(1e-9).log10() } else { x };
    let (x0, x1) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(fx(p.1)), b.max(fx(p.1))));
    let y1 = points.iter().map(|p| p.2).fold(0.0, f64::max) * 1.1;
    let (x0, x1) =
        if x1 > x0 { (x0 - 0.05 * (x1 - x0), x1 + 0.05 * (x1 - x0)) } else { (x0 - 1.0, x0 + 1.0) };
    let px = |x: f64| 60.0 + (fx(x) - x0) / (x1 - x0) * (W - 60.0 - RIGHT);
    let py = |y: f64| H - BOTTOM - y / y1.max(1e-12) * (H - TOP - BOTTOM);
    let _ = write!(
        s,
        "<line x1=\"60\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/>\
         <line x1=\"60\" y1=\"{TOP}\" x2=\"60\" y2=\"{b}\" stroke=\"#333\"/>\
         <text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text x=\"14\" y=\"{cy}\" transform=\"rotate(-90 14 {cy})\" text-anchor=\"middle\">{}</text>",
        H - 12.0,
        esc(x_label),
        esc(y_label),
        b = H - BOTTOM,
        r = W - RIGHT,
        cx = (W + 60.0) / 2.0,
        cy = (H - BOTTOM + TOP) / 2.0,
    );
    // Tick labels at the ends of both axes (and the middle of x), enough to read the scale.
    let unfx = |v: f64| if log_x { 10f64.powf(v) } else { v };
    for t in [x0, (x0 + x1) / 2.0, x1] {
        let xv = unfx(t);
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            px(xv),
            H - BOTTOM + 16.0,
            fmt_num(xv)
        );
    }
    for t in [0.0, y1 / 2.0, y1] {
        let _ = write!(
            s,
            "<text x=\"54\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{}</text>",
            py(t) + 4.0,
            fmt_num(t)
        );
    }
    let at: Vec<(f64, f64, usize)> =
        points.iter().map(|(l, x, y)| (px(*x), py(*y), l.chars().count())).collect();
    for ((label, _, _), (mx, my, _), (lx, ly)) in
        points.iter().zip(&at).zip(place_labels(&at)).map(|((a, b), c)| (a, b, c))
    {
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{color}\"/>\
             <text class=\"label\" x=\"{lx:.1}\" y=\"{ly:.1}\">{}</text>",
            mx - 5.0,
            my - 5.0,
            esc(label)
        );
    }
    s + "</svg>"
}

/// A label's width in the plots' 12 px sans-serif, estimated from its length (wide enough
/// for the widest glyphs of the names shown: digits, lower case and `-`).
const CHAR_W: f64 = 7.0;

/// The box a label takes at baseline `(x, y)`: left, top, right, bottom.
fn label_box(x: f64, y: f64, chars: usize) -> [f64; 4] {
    [x, y - 11.0, x + CHAR_W * chars as f64, y + 3.0]
}

fn overlap(a: [f64; 4], b: [f64; 4]) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

/// Where each point's label goes (its text's x and baseline y): beside its marker, above or
/// below, right or left, centred over or under it, or further up or down, the first place that
/// overlaps no label placed before it, no marker, and stays inside the plot; points are
/// `(x, y, label length)` in pixels. So close points (lzo and lzo-rle) keep readable labels.
/// Where no place is free (a crowded corner), the one inside the plot that overlaps the fewest
/// labels, then the fewest markers: never blindly the first.
fn place_labels(points: &[(f64, f64, usize)]) -> Vec<(f64, f64)> {
    let markers: Vec<[f64; 4]> =
        points.iter().map(|&(x, y, _)| [x - 5.0, y - 5.0, x + 5.0, y + 5.0]).collect();
    let mut placed: Vec<[f64; 4]> = Vec::new();
    let mut out = Vec::new();
    for &(x, y, n) in points {
        let w = CHAR_W * n as f64;
        let mut tries = Vec::new();
        for k in 0..=20 {
            // A label's box is 14 px high: a step of 14 stacks them without overlap.
            let dy = 14.0 * k as f64;
            for lx in [x + 8.0, x - 8.0 - w, x - w / 2.0] {
                tries.extend([(lx, y - 7.0 - dy), (lx, y + 16.0 + dy)]);
            }
        }
        let inside =
            |b: [f64; 4]| b[0] >= 0.0 && b[2] <= W && b[1] >= TOP - 12.0 && b[3] <= H - BOTTOM;
        let clashes = |b: [f64; 4]| {
            let labels = placed.iter().filter(|&&p| overlap(p, b)).count();
            let marks = markers.iter().filter(|&&m| overlap(m, b)).count();
            (labels, marks)
        };
        let (lx, ly) = tries
            .iter()
            .copied()
            .find(|&(lx, ly)| {
                let b = label_box(lx, ly, n);
                inside(b) && clashes(b) == (0, 0)
            })
            .or_else(|| {
                let inside_tries =
                    tries.iter().copied().filter(|&(lx, ly)| inside(label_box(lx, ly, n)));
                inside_tries.min_by_key(|&(lx, ly)| clashes(label_box(lx, ly, n)))
            })
            .unwrap_or(tries[0]);
        placed.push(label_box(lx, ly, n));
        out.push((lx, ly));
    }
    out
}

/// One point of [`tradeoff`].
#[derive(Debug, Clone, PartialEq)]
pub struct TradePoint {
    pub label: String,
    /// CPU, percent of one core.
    pub cpu_percent: f64,
    /// Memory saved against now, MiB (negative: more than now).
    pub saved_mib: f64,
    pub is_current: bool,
    pub is_chosen: bool,
    pub within_budgets: bool,
}

/// Memory saved against CPU per second: one labelled point per candidate (filled in `color`
/// within the budgets, hollow outside), a dashed vertical line at the CPU budget, a ring around
/// the current configuration, a larger square on the chosen one, and the zero line (now).
pub fn tradeoff(title: &str, points: &[TradePoint], budget_percent: f64, color: &str) -> String {
    let mut s = open(title, H);
    let (l, r, b, t) = (70.0, W - RIGHT - 110.0, H - BOTTOM, TOP);
    let x1 = points.iter().map(|p| p.cpu_percent).fold(budget_percent, f64::max).max(1e-6) * 1.08;
    let (ymin, ymax) =
        points.iter().fold((0.0f64, 0.0f64), |(a, z), p| (a.min(p.saved_mib), z.max(p.saved_mib)));
    let pad = ((ymax - ymin) * 0.08).max(0.01);
    let (y0, y1) = (ymin - pad, ymax + pad);
    let px = |x: f64| l + x.max(0.0) / x1 * (r - l);
    let py = |y: f64| b - (y - y0) / (y1 - y0) * (b - t);
    let bx = px(budget_percent);
    let _ = write!(
        s,
        "<line x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/>\
         <line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{b}\" stroke=\"#333\"/>\
         <line x1=\"{l}\" y1=\"{z:.1}\" x2=\"{r}\" y2=\"{z:.1}\" stroke=\"#999\"/>\
         <text x=\"{}\" y=\"{:.1}\" fill=\"#555\">now</text>\
         <line x1=\"{bx:.1}\" y1=\"{t}\" x2=\"{bx:.1}\" y2=\"{b}\" stroke=\"{color}\" \
         stroke-width=\"3\" stroke-dasharray=\"8 5\"/>\
         <text x=\"{:.1}\" y=\"{}\" fill=\"#555\">CPU budget {} %</text>\
         <text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">CPU, % of one core (at the swap rates)</text>\
         <text x=\"14\" y=\"{cy}\" transform=\"rotate(-90 14 {cy})\" \
         text-anchor=\"middle\">memory saved against now, MiB</text>",
        r + 4.0,
        py(0.0) + 4.0,
        bx + 4.0,
        t - 4.0,
        fmt_num(budget_percent),
        H - 12.0,
        z = py(0.0),
        cx = (l + r) / 2.0,
        cy = (b + t) / 2.0,
    );
    for v in [0.0, x1 / 2.0, x1] {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            px(v),
            b + 16.0,
            fmt_num(v)
        );
    }
    for v in [y0, (y0 + y1) / 2.0, y1] {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{}</text>",
            l - 6.0,
            py(v) + 4.0,
            fmt_num(v)
        );
    }
    // Labels beside their points, none over another or over a marker ([`place_labels`]).
    let mark = |p: &TradePoint| match (p.is_chosen, p.is_current) {
        (true, true) => " (now, chosen)",
        (true, false) => " (chosen)",
        (false, true) => " (now)",
        _ => "",
    };
    let at: Vec<(f64, f64, usize)> = points
        .iter()
        .map(|p| (px(p.cpu_percent), py(p.saved_mib), p.label.chars().count() + mark(p).len()))
        .collect();
    let label_at = place_labels(&at);
    for (k, p) in points.iter().enumerate() {
        let (x, y) = (px(p.cpu_percent), py(p.saved_mib));
        let half = if p.is_chosen { 8.0 } else { 5.0 };
        let fill = if p.within_budgets { color } else { "#ffffff" };
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{w}\" height=\"{w}\" fill=\"{fill}\" \
             stroke=\"{color}\" stroke-width=\"2\"/>",
            x - half,
            y - half,
            w = 2.0 * half
        );
        if p.is_current {
            let _ = write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"12\" fill=\"none\" stroke=\"#333\" \
                 stroke-width=\"2\"/>"
            );
        }
        let _ = write!(
            s,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}{}</text>",
            label_at[k].0,
            label_at[k].1,
            esc(&p.label),
            mark(p)
        );
    }
    s + "</svg>"
}

/// bpftrace-style log2 histogram: one bar per power-of-two bucket.
pub fn log2_histogram(title: &str, buckets: &[(u64, u64)], color: &str) -> String {
    let items: Vec<(String, f64)> = buckets
        .iter()
        .map(|(lo, c)| (format!("[{}, {})", fmt_ns(*lo), fmt_ns(lo * 2)), *c as f64))
        .collect();
    bars(title, &items, "", color)
}

fn fmt_ns(ns: u64) -> String {
    match ns {
        n if n >= 1 << 30 => format!("{}G", n >> 30),
        n if n >= 1 << 20 => format!("{}M", n >> 20),
        n if n >= 1 << 10 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_and_escaped() {
        let b = bars("a<b", &[("x&y".into(), 2.0), ("z".into(), 1.0)], "MB/s", "#123456");
        assert!(b.starts_with("<svg") && b.ends_with("</svg>"));
        assert!(b.contains("a&lt;b") && b.contains("x&amp;y"));
        assert_eq!(b.matches("fill=\"#123456\"").count(), 2);
        let s = scatter(
            "t",
            &[("p".into(), 10.0, 2.0), ("q".into(), 1000.0, 3.0)],
            "x",
            "y",
            true,
            "#abcdef",
        );
        assert_eq!(s.matches("fill=\"#abcdef\"").count(), 2);
        let pt =
            |label: &str, cpu: f64, saved: f64, cur: bool, chosen: bool, within: bool| TradePoint {
                label: label.into(),
                cpu_percent: cpu,
                saved_mib: saved,
                is_current: cur,
                is_chosen: chosen,
                within_budgets: within,
            };
        let t = tradeoff(
            "trade-off",
            &[
                pt("lzo-rle", 0.1, 0.0, true, false, true),
                pt("zstd", 0.3, 2.5, false, true, true),
                pt("lz4", 0.05, -0.5, false, false, true),
                pt("deflate", 2.0, 3.0, false, false, false),
            ],
            1.0,
            "#17becf",
        );
        assert!(t.starts_with("<svg") && t.ends_with("</svg>"));
        // Three filled points, the budget line, four outlines.
        assert_eq!(t.matches("fill=\"#17becf\"").count(), 3);
        assert_eq!(t.matches("stroke=\"#17becf\"").count(), 5);
        assert!(t.contains("lzo-rle (now)") && t.contains("zstd (chosen)"));
        assert!(t.contains("CPU budget 1.00 %"));
        assert_eq!(t.matches("<circle").count(), 1);
        let h = log2_histogram("h", &[(512, 3), (1024, 7)], "#00ff00");
        assert!(h.contains("[512, 1K)") && h.contains("[1K, 2K)"));
    }

    /// Places `pts`' labels and asserts each lies inside the plot and on no other: their boxes.
    fn labels_inside_and_apart(pts: &[(f64, f64, usize)]) -> Vec<[f64; 4]> {
        let at = place_labels(pts);
        let boxes: Vec<[f64; 4]> =
            at.iter().zip(pts).map(|(&(x, y), &(_, _, n))| label_box(x, y, n)).collect();
        for (i, a) in boxes.iter().enumerate() {
            assert!(a[0] >= 0.0 && a[2] <= W && a[3] <= H - BOTTOM, "label {i} outside: {a:?}");
            for (j, b) in boxes.iter().enumerate().skip(i + 1) {
                assert!(!overlap(*a, *b), "labels {i} and {j} overlap: {a:?} {b:?}");
            }
        }
        boxes
    }

    /// The lab's tradeoff plot as a report drew it (markers' centres and label lengths of its
    /// twelve candidates; the chosen one's label longest, beside two others near the top
    /// left): every label finds a place on no other. The old search (13 px steps for 14 px
    /// labels, and the first place when none was free) put the chosen one's label on zstd's,
    /// which the browser test caught.
    #[test]
    fn a_crowded_tradeoff_plot_keeps_its_labels_apart() {
        let pts: Vec<(f64, f64, usize)> = vec![
            (95.5, 127.1, 13),
            (102.0, 118.9, 3),
            (103.9, 146.2, 3),
            (209.1, 116.5, 5),
            (109.9, 54.5, 4),
            (256.8, 59.2, 7),
            (200.1, 132.9, 3),
            (95.3, 127.1, 19),
            (103.5, 54.5, 19),
            (95.7, 127.1, 22),
            (103.1, 59.2, 32),
            (110.1, 235.5, 11),
        ];
        labels_inside_and_apart(&pts);
    }

    /// Close points (the LZO variants differ by a few MB/s and a few hundredths of ratio) get
    /// labels that overlap neither each other nor a marker, inside the plot.
    #[test]
    fn labels_of_close_points_do_not_overlap() {
        let pts: Vec<(f64, f64, usize)> = vec![
            (300.0, 120.0, 7),
            (302.0, 121.0, 3),
            (305.0, 118.0, 3),
            (303.0, 122.0, 5),
            (600.0, 100.0, 4),
            (120.0, 200.0, 7),
            (700.0, 60.0, 4),
        ];
        for (i, a) in labels_inside_and_apart(&pts).iter().enumerate() {
            for &(x, y, _) in &pts {
                assert!(
                    !overlap(*a, [x - 5.0, y - 5.0, x + 5.0, y + 5.0]),
                    "label {i} on a marker"
                );
            }
        }
        // The old rule put the four close ones on top of each other.
        let old: Vec<[f64; 4]> =
            pts[..4].iter().map(|&(x, y, n)| label_box(x + 8.0, y - 7.0, n)).collect();
        assert!(overlap(old[0], old[1]));
    }
}
