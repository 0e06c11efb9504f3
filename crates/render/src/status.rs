//! `zmem status` on a terminal: one screen, human sizes (binary units). The JSON output is the
//! [`Status`] struct itself, with exact bytes.

use std::fmt::Write;

use zmem_kernel::status::Status;

/// A size in binary units: `0 B`, `812 B`, `4.0 KiB`, `1.5 GiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

fn human_signed(bytes: i64) -> String {
    if bytes < 0 { format!("-{}", human(bytes.unsigned_abs())) } else { human(bytes as u64) }
}

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// Renders the whole state as text.
pub fn render(s: &Status) -> String {
    let mut o = String::new();
    // Writing to a String cannot fail.
    let _ = render_into(&mut o, s);
    o
}

fn render_into(o: &mut String, s: &Status) -> std::fmt::Result {
    writeln!(o, "zram: {} device{}", s.zram.len(), if s.zram.len() == 1 { "" } else { "s" })?;
    if !s.zram.is_empty() {
        zram_table(o, s)?;
    }
    zswap_lines(o, s)?;
    rest(o, s)
}

/// One row per zram device, and the total.
fn zram_table(o: &mut String, s: &Status) -> std::fmt::Result {
    {
        let rows: Vec<[String; 13]> = s
            .zram
            .iter()
            .map(|d| {
                let mm = d.mm_stat;
                let algo = match (&d.algorithm, d.secondaries.is_empty()) {
                    (Some(a), true) => a.clone(),
                    (Some(a), false) => {
                        let sec: Vec<String> =
                            d.secondaries.iter().map(|s| s.algorithm.clone()).collect();
                        format!("{a}+{}", sec.join(","))
                    }
                    (None, _) => "-".into(),
                };
                let swap = match &d.swap {
                    Some(a) => format!("{} {}", a.priority, human(a.used_bytes)),
                    None => "-".into(),
                };
                [
                    d.name.clone(),
                    algo,
                    if d.initialized { human(d.disksize_bytes) } else { "unset".into() },
                    opt(mm, |m| human(m.orig_data_size)),
                    opt(mm, |m| human(m.compr_data_size)),
                    opt(mm, |m| human(m.mem_used_total)),
                    opt(d.compression_ratio, |r| format!("{r:.2}")),
                    opt(mm, |m| m.same_pages.to_string()),
                    opt(mm, |m| m.huge_pages.to_string()),
                    opt(d.idle_pages, |n| n.to_string()),
                    opt(d.written_back_pages, |n| n.to_string()),
                    opt(d.compactable, |c| {
                        format!(
                            "{}{}",
                            if c.source == "mm_stat_bound" { "<=" } else { "" },
                            human(c.bytes)
                        )
                    }),
                    swap,
                ]
            })
            .collect();
        let head = [
            "DEVICE",
            "ALGORITHM",
            "DISKSIZE",
            "DATA",
            "COMPR",
            "TOTAL",
            "RATIO",
            "SAME",
            "HUGE",
            "IDLE",
            "WB",
            "COMPACT",
            "SWAP PRIO USED",
        ];
        let mut width = head.map(str::len);
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |o: &mut String, cells: &[&str]| -> std::fmt::Result {
            let mut l = String::new();
            for (i, (c, w)) in cells.iter().zip(width).enumerate() {
                if i == 0 || i == 1 || i == cells.len() - 1 {
                    write!(l, "{c:<w$}  ")?;
                } else {
                    write!(l, "{c:>w$}  ")?;
                }
            }
            writeln!(o, "  {}", l.trim_end())
        };
        line(o, &head)?;
        for r in &rows {
            line(o, &r.each_ref().map(String::as_str))?;
        }
        let (orig, used): (u64, u64) = s
            .zram
            .iter()
            .filter_map(|d| d.mm_stat)
            .fold((0, 0), |(a, b), m| (a + m.orig_data_size, b + m.mem_used_total));
        writeln!(
            o,
            "  total: {} stored in {}, saving {}",
            human(orig),
            human(used),
            human_signed(orig as i64 - used as i64)
        )?;
    }
    Ok(())
}

/// zswap's state in two lines.
fn zswap_lines(o: &mut String, s: &Status) -> std::fmt::Result {
    let z = &s.zswap;
    if !z.present {
        writeln!(o, "zswap: not in this kernel")?;
    } else {
        writeln!(
            o,
            "zswap: {}, compressor {}, pool {} of {} (max_pool_percent {}), shrinker {}",
            match z.enabled {
                Some(true) => "enabled",
                Some(false) => "disabled",
                None => "state unknown",
            },
            z.compressor.as_deref().unwrap_or("-"),
            opt(z.pool_bytes, human),
            opt(z.pool_limit_bytes, human),
            opt(z.max_pool_percent, |p| format!("{p} %")),
            opt(z.shrinker_enabled, |e| if e { "on".into() } else { "off".into() }),
        )?;
        writeln!(
            o,
            "  stored {} pages ({}), ratio {}, written back {}, rejected {}",
            opt(z.stored_pages, |n| n.to_string()),
            opt(z.stored_bytes, human),
            opt(z.compression_ratio, |r| format!("{r:.2}")),
            opt(z.written_back_pages, |n| n.to_string()),
            opt(z.rejects(), |n| n.to_string()),
        )?;
    }
    Ok(())
}

/// The swap areas, the rates, the pressure and what could not be read.
fn rest(o: &mut String, s: &Status) -> std::fmt::Result {
    if s.swaps.is_empty() {
        writeln!(o, "swap areas: none")?;
    } else {
        writeln!(o, "swap areas:")?;
        for a in &s.swaps {
            writeln!(
                o,
                "  {:<24} {:<9} {:>10} used {:>10}  priority {}",
                a.filename,
                a.kind,
                human(a.size_bytes),
                human(a.used_bytes),
                a.priority
            )?;
        }
    }
    if let Some(r) = &s.rates {
        let o2 = |v: Option<f64>| opt(v, |x| format!("{x:.0}"));
        writeln!(
            o,
            "rates over {:.1} s (pages/s): swap in {:.0}, out {:.0}; zswap in {}, out {}, written back {}",
            r.window_seconds,
            r.pswpin_per_sec,
            r.pswpout_per_sec,
            o2(r.zswpin_per_sec),
            o2(r.zswpout_per_sec),
            o2(r.zswpwb_per_sec)
        )?;
    }
    if let Some(p) = &s.pressure {
        writeln!(o, "{}", crate::pressure::machine(p).replacen("Pressure now: ", "pressure: ", 1))?;
        for c in &p.cgroups {
            writeln!(o, "  {}", crate::pressure::cgroup(c))?;
        }
    }
    if !s.unreadable.is_empty() {
        writeln!(o, "could not read:")?;
        for u in &s.unreadable {
            writeln!(o, "  {} ({}): {}", u.what, u.path, u.why)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(4096), "4.0 KiB");
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human_signed(-2048), "-2.0 KiB");
    }
}
