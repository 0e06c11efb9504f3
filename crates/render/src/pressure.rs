//! Memory pressure in words: what the kernel measured around the lab's observation window
//! (`zmem_lab::PressureReading`), for the text and HTML reports.

use zmem_kernel::pressure::{CgroupPressure, Pressure, Watermarks, Window};
use zmem_lab::PressureReading;

use crate::units::human_bytes;

/// The reading in lines: free memory against the watermarks, PSI, the window's changes, and
/// each memory cgroup with a limit.
pub fn lines(p: &PressureReading) -> Vec<String> {
    let mut out = vec![machine(&p.now)];
    if let Some(w) = &p.window {
        out.push(window(w));
    }
    out.extend(p.now.cgroups.iter().map(cgroup));
    out.extend(p.now.notes.iter().map(|n| format!("not read: {n}")));
    out
}

/// Whether kswapd is at work, from the zones' free memory against their watermarks (6.18:
/// woken under the low watermark, reclaiming until over the high one).
pub fn shortness(w: &Watermarks) -> &'static str {
    if w.low_bytes == 0 {
        "the watermarks are unknown"
    } else if w.free_bytes < w.low_bytes {
        "memory is short: free memory is under the low watermark, kswapd reclaims"
    } else if w.free_bytes < w.high_bytes {
        "memory is near short: free memory is between the low and high watermarks"
    } else {
        "memory is not short: free memory is over the high watermark, kswapd sleeps"
    }
}

/// The machine's line: whether memory is short, what is available and free, PSI.
pub fn machine(p: &Pressure) -> String {
    let w = &p.watermarks;
    let avail = p.mem_available_bytes.map_or("unknown".into(), |b| human_bytes(b as f64));
    let psi = match &p.psi {
        Some(psi) => format!(
            "memory PSI some avg10 {:.2} % avg60 {:.2} % avg300 {:.2} %{}",
            psi.some.avg10,
            psi.some.avg60,
            psi.some.avg300,
            psi.full.map_or(String::new(), |f| format!(", full avg60 {:.2} %", f.avg60))
        ),
        None => "no memory PSI".into(),
    };
    format!(
        "Pressure now: {}; {avail} available, {} free (watermarks min {}, low {}, high {}); {psi}",
        shortness(w),
        human_bytes(w.free_bytes as f64),
        human_bytes(w.min_bytes as f64),
        human_bytes(w.low_bytes as f64),
        human_bytes(w.high_bytes as f64),
    )
}

fn window(w: &Window) -> String {
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} %"));
    format!(
        "over the {:.0} s window: stalled some {}, full {}; refaults {:.1} anon/s, {:.1} file/s; \
         swap {:.1} in/s, {:.1} out/s",
        w.seconds,
        pct(w.psi_some_percent),
        pct(w.psi_full_percent),
        w.refaults_anon_per_sec,
        w.refaults_file_per_sec,
        w.pswpin_per_sec,
        w.pswpout_per_sec
    )
}

/// One memory cgroup with a limit.
pub fn cgroup(c: &CgroupPressure) -> String {
    let b = |v: Option<u64>| v.map_or("-".into(), |v| human_bytes(v as f64));
    let share = match (c.usage_bytes, c.high_bytes.or(c.max_bytes)) {
        (Some(u), Some(l)) if l > 0 => {
            format!(" ({:.0} % of its limit)", 100.0 * u as f64 / l as f64)
        }
        _ => String::new(),
    };
    format!(
        "cgroup v{} {}: usage {} of max {}, high {}{share}; refaults {} anon, {} file since it began",
        c.version,
        c.path,
        b(c.usage_bytes),
        b(c.max_bytes),
        b(c.high_bytes),
        c.refaults.anon,
        c.refaults.file
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_memory_against_the_watermarks_says_whether_kswapd_works() {
        let w =
            |free| Watermarks { free_bytes: free, min_bytes: 10, low_bytes: 20, high_bytes: 30 };
        assert!(shortness(&w(5)).starts_with("memory is short"));
        assert!(shortness(&w(25)).starts_with("memory is near short"));
        assert!(shortness(&w(31)).starts_with("memory is not short"));
        assert!(shortness(&Watermarks::default()).contains("unknown"));
    }

    #[test]
    fn a_reading_is_one_line_per_fact() {
        let mut now = Pressure::default();
        now.cgroups.push(CgroupPressure {
            path: "/lab".into(),
            version: 1,
            usage_bytes: Some(900 << 20),
            max_bytes: Some(1 << 30),
            high_bytes: None,
            refaults: Default::default(),
            psi: None,
            anon_bytes: None,
            inactive_file_bytes: None,
        });
        now.notes.push("/proc/pressure/memory: absent".into());
        let window =
            Some(Window { seconds: 10.0, psi_some_percent: Some(1.5), ..Window::default() });
        let l = lines(&PressureReading { now, window });
        assert_eq!(l.len(), 4, "{l:?}");
        assert!(l[0].contains("no memory PSI") && l[1].contains("stalled some 1.50 %"), "{l:?}");
        assert!(l[2].contains("/lab") && l[2].contains("(88 % of its limit)"), "{l:?}");
        assert!(l[3].starts_with("not read:"), "{l:?}");
    }
}
