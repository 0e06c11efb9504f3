//! The zones' watermarks as 6.18 sets them (mm/page_alloc.c `__setup_per_zone_wmarks()`), from
//! `vm.min_free_kbytes` and `vm.watermark_scale_factor`: what the replay's kswapd works between,
//! and what a setting would make of them without writing it.
//!
//! Per zone, with `pages_min` = min_free_kbytes in pages and `lowmem` the managed pages of the
//! zones that are neither highmem nor Movable:
//!
//! - `min` = pages_min × managed / lowmem (integer division); a Movable (or highmem) zone gets
//!   managed / 1024 clamped to 32..=128 (`SWAP_CLUSTER_MAX` to 128) instead;
//! - the step = max(pages_min × managed / lowmem >> 2, `mult_frac(managed, scale, 10000)`);
//! - `low` = min + step, `high` = low + step, `promo` = high + step.
//!
//! /proc/zoneinfo shows each mark plus the zone's `watermark_boost` (`min_wmark_pages()` and
//! the others add it; a fragmentation event raises it and kswapd lets it decay), so a zone
//! read there is these marks, each raised by the same boost.

use serde::{Deserialize, Serialize};

/// One zone's watermarks, in pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
    pub promo: u64,
}

/// `mult_frac(x, n, d)` (include/linux/math.h): x × n / d without overflowing x × n.
fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    (x / d) * n + (x % d) * n / d
}

/// The marks of each zone `(name, managed pages)`, in order, for `min_free_kbytes`,
/// `watermark_scale_factor` and `page_size`.
pub fn setup(
    zones: &[(&str, u64)],
    min_free_kbytes: u64,
    scale: u64,
    page_size: u64,
) -> Vec<Marks> {
    let shift = page_size.max(1024).trailing_zeros().saturating_sub(10);
    let pages_min = min_free_kbytes >> shift;
    let capped = |name: &str| name == "Movable" || name == "HighMem";
    let lowmem: u64 = zones.iter().filter(|(n, _)| !capped(n)).map(|&(_, m)| m).sum();
    zones
        .iter()
        .map(|&(name, managed)| {
            let share = if lowmem == 0 {
                0
            } else {
                (u128::from(pages_min) * u128::from(managed) / u128::from(lowmem)) as u64
            };
            let min = if capped(name) { (managed / 1024).clamp(32, 128) } else { share };
            let step = (share >> 2).max(mult_frac(managed, scale, 10000));
            Marks { min, low: min + step, high: min + 2 * step, promo: min + 3 * step }
        })
        .collect()
}

/// The marks summed over the zones that hold memory, in bytes ([`super::Watermarks`]' sums).
pub fn total_bytes(zones: &[(&str, u64)], marks: &[Marks], page_size: u64) -> Marks {
    let held = zones.iter().zip(marks).filter(|((_, m), _)| *m > 0).map(|(_, k)| k);
    let mut t = Marks::default();
    for k in held {
        t.min += k.min * page_size;
        t.low += k.low * page_size;
        t.high += k.high * page_size;
        t.promo += k.promo * page_size;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's zones (Linux 6.18.44, 24 GiB): min_free_kbytes 67584, scale factor 10,
    /// and the marks its /proc/zoneinfo showed (no boost).
    const ZONES: [(&str, u64); 5] =
        [("DMA", 3840), ("DMA32", 772_845), ("Normal", 5_394_258), ("Movable", 0), ("Device", 0)];

    #[test]
    fn the_marks_are_six_eighteens_for_this_machines_zones() {
        let m = setup(&ZONES, 67584, 10, 4096);
        let want = [
            Marks { min: 10, low: 13, high: 16, promo: 19 },
            Marks { min: 2116, low: 2888, high: 3660, promo: 4432 },
            Marks { min: 14769, low: 20163, high: 25557, promo: 30951 },
            // An empty Movable zone still gets the clamp's 32; ZONE_DEVICE is lowmem: 0.
            Marks { min: 32, low: 32, high: 32, promo: 32 },
            Marks::default(),
        ];
        assert_eq!(m, want);
    }

    /// The scale factor's top (3000, 30 % of each zone) puts the low mark near 7 GiB here:
    /// what waking kswapd on purpose would take (issue 51).
    #[test]
    fn the_top_scale_factor_sets_a_low_mark_near_seven_gib() {
        let m = setup(&ZONES, 67584, 3000, 4096);
        let t = total_bytes(&ZONES, &m, 4096);
        let gib = t.low as f64 / f64::from(1 << 30);
        assert!((6.9..7.2).contains(&gib), "{gib}");
        // Only zones holding memory count: the empty Movable zone's 32 pages are not free.
        assert_eq!(t.min, (10 + 2116 + 14769) * 4096);
    }

    #[test]
    fn mult_frac_does_not_overflow_and_matches_the_product() {
        assert_eq!(
            mult_frac(u64::MAX, 10, 10000),
            u64::MAX / 10000 * 10 + (u64::MAX % 10000) * 10 / 10000
        );
        for (x, n, d) in [(772_845, 10, 10000), (3840, 3000, 10000), (7, 3, 2)] {
            assert_eq!(mult_frac(x, n, d), x * n / d, "{x} {n} {d}");
        }
    }

    /// The marks 6.18 set on the running kernel, read from /proc/zoneinfo: each zone's four
    /// marks exceed ours by one same amount (its watermark_boost, often 0). Reads only. A boost
    /// that changes while zoneinfo prints one zone could split its four marks, so a mismatch is
    /// read again, up to three times: an arithmetic error mismatches every time.
    #[test]
    fn the_running_kernels_marks_are_these_plus_one_boost() {
        let mut last = String::new();
        for _ in 0..3 {
            match running_marks_mismatch() {
                Ok(()) => return,
                Err(e) => last = e,
            }
        }
        panic!("{last}");
    }

    fn running_marks_mismatch() -> Result<(), String> {
        let (Ok(info), Ok(min_free), Ok(scale)) = (
            std::fs::read_to_string("/proc/zoneinfo"),
            std::fs::read_to_string("/proc/sys/vm/min_free_kbytes"),
            std::fs::read_to_string("/proc/sys/vm/watermark_scale_factor"),
        ) else {
            println!("skipped: no /proc/zoneinfo or vm sysctls here");
            return Ok(());
        };
        let zones = crate::pressure::parse_zoneinfo(&info);
        let promo = promo_marks(&info);
        let named: Vec<(&str, u64)> = zones.iter().map(|z| (z.name.as_str(), z.managed)).collect();
        let ps = crate::capture::system_page_size() as u64;
        let num = |s: &str| s.trim().parse::<u64>().map_err(|e| format!("{s:?}: {e}"));
        let m = setup(&named, num(&min_free)?, num(&scale)?, ps);
        if zones.is_empty() || promo.len() != zones.len() {
            return Err(format!("{} zones, {} promo lines", zones.len(), promo.len()));
        }
        for ((z, k), &p) in zones.iter().zip(&m).zip(&promo) {
            let boost = z.min.wrapping_sub(k.min);
            let rest =
                [z.low.wrapping_sub(k.low), z.high.wrapping_sub(k.high), p.wrapping_sub(k.promo)];
            if z.min < k.min || rest != [boost; 3] {
                return Err(format!(
                    "zone {}: shown {}/{}/{}/{p}, computed {k:?}",
                    z.name, z.min, z.low, z.high
                ));
            }
        }
        Ok(())
    }

    /// Where min_free_kbytes is large against the scale factor, the step is a quarter of the
    /// zone's min (`tmp >> 2`), not the scale factor's share: 1 GiB of min_free_kbytes at a
    /// factor of 1 on this machine's zones.
    #[test]
    fn a_large_min_free_kbytes_steps_by_a_quarter_of_min() {
        let m = setup(&ZONES, 1 << 20, 1, 4096);
        // Normal: min = 262144 × 5394258 / 6170943 = 229150; its quarter 57287 over the
        // factor's 539.
        assert_eq!(m[2].min, 229_150);
        assert_eq!((m[2].low, m[2].high, m[2].promo), (286_437, 343_724, 401_011));
        // DMA: min 163, a quarter 40 over the factor's 0.
        assert_eq!(m[0], Marks { min: 163, low: 203, high: 243, promo: 283 });
    }

    /// Each zone's `promo` line, in order (the zone parser keeps min, low and high).
    fn promo_marks(info: &str) -> Vec<u64> {
        info.lines().filter_map(|l| l.trim().strip_prefix("promo")?.trim().parse().ok()).collect()
    }
}
