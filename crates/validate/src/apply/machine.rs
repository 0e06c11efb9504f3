//! The machine's state that `zmem validate apply` must leave as it found it, read before the
//! set-up and after the undo ([`Machine`]), and what differs ([`differs`]): the active swap
//! areas (/proc/swaps: name, kind, size, priority; what they hold moves on its own), zswap's
//! parameters, the zram devices that exist, and each kdamond's state (read only: the machine's
//! own DAMON is never touched).

use std::collections::BTreeMap;
use std::path::Path;

/// Where the kdamonds are.
pub const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// What is compared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    /// Active swap areas by name: kind, size in bytes, priority.
    pub swaps: BTreeMap<String, (String, u64, i32)>,
    /// zswap's parameters by name (empty without zswap).
    pub zswap: BTreeMap<String, String>,
    /// zram devices that exist, by number.
    pub zram: Vec<u32>,
    /// kdamonds by number: their `state`.
    pub kdamonds: BTreeMap<String, String>,
    /// What could not be read (compared too: a file that became unreadable is a difference).
    pub unreadable: Vec<String>,
}

impl Machine {
    /// Reads the live machine.
    pub fn read() -> Self {
        let mut m = Machine::default();
        match zmem_kernel::stat::swaps() {
            Ok(areas) => {
                for a in areas {
                    m.swaps.insert(a.filename, (a.kind, a.size_bytes, a.priority));
                }
            }
            Err(e) => m.unreadable.push(format!("/proc/swaps: {e}")),
        }
        let zswap = Path::new(crate::zswap_params::PARAMS_DIR);
        if zswap.is_dir() {
            match zmem_kernel::zswap_state::params_in(zswap) {
                Ok(p) => m.zswap = p.values,
                Err(e) => m.unreadable.push(format!("zswap's parameters: {e}")),
            }
        }
        m.zram = zmem_kernel::stat::zram_ids(Path::new("/sys"));
        m.kdamonds = kdamonds(Path::new(KDAMONDS));
        m
    }
}

/// Each kdamond's `state` under `dir`, by its number.
fn kdamonds(dir: &Path) -> BTreeMap<String, String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return BTreeMap::new() };
    rd.filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.bytes().all(|b| b.is_ascii_digit()).then_some((name, e.path()))
        })
        .map(|(name, p)| {
            let state = std::fs::read_to_string(p.join("state"))
                .map_or_else(|e| format!("unreadable ({e})"), |s| s.trim().to_string());
            (name, state)
        })
        .collect()
}

/// What reads differently in `after` from `before`, one line each (empty: as it was).
pub fn differs(before: &Machine, after: &Machine) -> Vec<String> {
    let mut out = Vec::new();
    for (name, (kind, size, prio)) in &after.swaps {
        match before.swaps.get(name) {
            None => out.push(format!(
                "swap area {name} ({kind}, {} MiB, priority {prio}) is active and was not",
                size >> 20
            )),
            Some(b) if b != &(kind.clone(), *size, *prio) => out.push(format!(
                "swap area {name}: was {} {} bytes priority {}, now {kind} {size} bytes \
                 priority {prio}",
                b.0, b.1, b.2
            )),
            Some(_) => {}
        }
    }
    for name in before.swaps.keys().filter(|n| !after.swaps.contains_key(*n)) {
        out.push(format!("swap area {name} was active and is not"));
    }
    for (name, v) in &before.zswap {
        match after.zswap.get(name) {
            Some(a) if a == v => {}
            Some(a) => out.push(format!("zswap {name} was {v}, now {a}")),
            None => out.push(format!("zswap {name} was {v}, now unreadable")),
        }
    }
    for id in after.zram.iter().filter(|i| !before.zram.contains(i)) {
        out.push(format!("zram{id} exists and did not"));
    }
    for id in before.zram.iter().filter(|i| !after.zram.contains(i)) {
        out.push(format!("zram{id} existed and does not"));
    }
    let names: std::collections::BTreeSet<&String> =
        before.kdamonds.keys().chain(after.kdamonds.keys()).collect();
    for k in names {
        let (b, a) = (before.kdamonds.get(k), after.kdamonds.get(k));
        if b != a {
            let show = |s: Option<&String>| s.map_or("absent".to_string(), |s| s.clone());
            out.push(format!("kdamond {k} was {}, now {}", show(b), show(a)));
        }
    }
    for u in after.unreadable.iter().filter(|u| !before.unreadable.contains(u)) {
        out.push(format!("unreadable after: {u}"));
    }
    out
}

/// Said after a difference that names nothing this run made.
pub const NOT_OURS: &str = " (not this run's: something else changed it meanwhile)";

/// Whether `line` names `id` as a whole name (`zram1` is not `zram10`).
fn mentions(line: &str, id: &str) -> bool {
    line.match_indices(id).any(|(i, _)| {
        let next = line[i + id.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// `differs` with each line that names none of `ours` (what this run made: its swap area,
/// `zram1`, `zswap` where it set zswap) marked [`NOT_OURS`]; and whether any line is ours.
pub fn attribute(differs: Vec<String>, ours: &[String]) -> (Vec<String>, bool) {
    let mut any = false;
    let lines = differs
        .into_iter()
        .map(|l| {
            if ours.iter().any(|id| mentions(&l, id)) {
                any = true;
                l
            } else {
                l + NOT_OURS
            }
        })
        .collect();
    (lines, any)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        let mut m = Machine::default();
        m.swaps.insert("/swapfile".into(), ("file".into(), 1 << 30, -2));
        m.zswap.insert("enabled".into(), "N".into());
        m.zswap.insert("compressor".into(), "lzo".into());
        m.zram = vec![0];
        m.kdamonds.insert("0".into(), "on".into());
        m
    }

    #[test]
    fn the_same_machine_differs_in_nothing() {
        assert!(differs(&machine(), &machine()).is_empty());
    }

    #[test]
    fn each_thing_left_changed_is_named() {
        let before = machine();
        let mut after = machine();
        after.swaps.insert("/dev/zram1".into(), ("partition".into(), 256 << 20, 32767));
        after.zswap.insert("enabled".into(), "Y".into());
        after.zram.push(1);
        after.kdamonds.insert("0".into(), "off".into());
        let d = differs(&before, &after);
        assert_eq!(d.len(), 4, "{d:?}");
        assert!(d[0].starts_with("swap area /dev/zram1 (partition, 256 MiB, priority 32767)"));
        assert_eq!(d[1], "zswap enabled was N, now Y");
        assert_eq!(d[2], "zram1 exists and did not");
        assert_eq!(d[3], "kdamond 0 was on, now off");
        let mut gone = machine();
        gone.swaps.clear();
        gone.kdamonds.clear();
        let d = differs(&before, &gone);
        assert_eq!(
            d,
            ["swap area /swapfile was active and is not", "kdamond 0 was on, now absent"]
        );
    }

    #[test]
    fn what_this_run_did_not_make_is_marked_as_not_its_own() {
        let d = vec![
            "swap area /dev/zram10 (partition, 255 MiB, priority 1) is active and was not".into(),
            "zram10 exists and did not".into(),
            "kdamond 0 was on, now off".into(),
        ];
        let ours = ["/dev/zram1".to_string(), "zram1".to_string()];
        let (lines, any) = attribute(d.clone(), &ours);
        assert!(!any && lines.iter().all(|l| l.ends_with(NOT_OURS)), "{lines:?}");
        let ours = ["/dev/zram10".to_string(), "zram10".to_string()];
        let (lines, any) = attribute(d, &ours);
        assert!(any);
        assert!(!lines[0].ends_with(NOT_OURS) && !lines[1].ends_with(NOT_OURS));
        assert!(lines[2].ends_with(NOT_OURS));
    }

    #[test]
    fn kdamonds_are_read_by_number() {
        let d = std::env::temp_dir().join(format!("zmem-apply-kdamonds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("0")).unwrap();
        std::fs::write(d.join("0/state"), "on\n").unwrap();
        std::fs::write(d.join("nr_kdamonds"), "1\n").unwrap();
        let k = kdamonds(&d);
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(k.into_iter().collect::<Vec<_>>(), [("0".to_string(), "on".to_string())]);
    }
}
