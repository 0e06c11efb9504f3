//! The memory.reclaim driver against fake trees: a cgroup v2 hierarchy whose files the test
//! moves as the kernel would, and a /proc with meminfo. What the driver writes to
//! `memory.reclaim` is read back from the file.

use std::sync::{Arc, Mutex};

use super::*;

const MIB: u64 = 1 << 20;

struct Tree {
    cg: tempfile::TempDir,
    proc: tempfile::TempDir,
}

impl Tree {
    fn new(cgroups: &[&str]) -> Self {
        let t = Self { cg: tempfile::tempdir().unwrap(), proc: tempfile::tempdir().unwrap() };
        for c in cgroups {
            let d = t.cg.path().join(c);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("memory.reclaim"), "").unwrap();
            t.set(c, 0, 0, 0.0);
        }
        t.swap(1 << 30, 1 << 30);
        t
    }

    /// A cgroup's swap use, its anonymous refaults (pages) and its PSI some avg10.
    fn set(&self, c: &str, swap: u64, refaults: u64, psi: f64) {
        let d = self.cg.path().join(c);
        std::fs::write(d.join("memory.swap.current"), format!("{swap}\n")).unwrap();
        let stat =
            format!("anon 1\nworkingset_refault_anon {refaults}\nworkingset_refault_file 9\n");
        std::fs::write(d.join("memory.stat"), stat).unwrap();
        let psi = format!(
            "some avg10={psi:.2} avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
        );
        std::fs::write(d.join("memory.pressure"), psi).unwrap();
    }

    fn swap(&self, total: u64, free: u64) {
        let m = format!(
            "MemTotal: 1000000 kB\nSwapTotal: {} kB\nSwapFree: {} kB\n",
            total >> 10,
            free >> 10
        );
        std::fs::write(self.proc.path().join("meminfo"), m).unwrap();
    }

    /// What the driver last wrote to the cgroup's memory.reclaim (emptied after reading).
    fn asked(&self, c: &str) -> String {
        let f = self.cg.path().join(c).join("memory.reclaim");
        let s = std::fs::read_to_string(&f).unwrap();
        std::fs::write(&f, "").unwrap();
        s
    }

    fn driver(&self, targets: &[(&str, u64)], clock: CpuClock) -> Driver {
        let config = MemcgReclaim {
            cold_age_secs: 60,
            period_secs: 15,
            cpu_budget_percent: 1.0,
            psi_some_avg10_limit: 0.1,
            targets: targets
                .iter()
                .map(|(p, b)| MemcgTarget { path: format!("/{p}"), bytes: *b })
                .collect(),
            predicted: None,
        };
        Driver::with(config, self.cg.path(), self.proc.path(), 4096, clock).expect("a driver")
    }
}

fn clock() -> (Arc<Mutex<f64>>, CpuClock) {
    let t = Arc::new(Mutex::new(0.0));
    let c = t.clone();
    (t, Box::new(move || *c.lock().expect("clock")))
}

#[test]
fn each_cgroup_is_asked_for_what_is_still_to_move_a_quarter_at_most() {
    let t = Tree::new(&["a.slice/app", "b"]);
    let (_, c) = clock();
    let mut d = t.driver(&[("a.slice/app", 400 * MIB), ("b", 8 * MIB)], c);
    d.tick().unwrap();
    assert_eq!(t.asked("a.slice/app"), format!("{} swappiness=max", 100 * MIB));
    assert_eq!(t.asked("b"), format!("{} swappiness=max", 2 * MIB));
    // The kernel moved 350 MiB of app's and all of b's; 12 pages of app's came back.
    t.set("a.slice/app", 350 * MIB, 12, 0.0);
    t.set("b", 8 * MIB, 0, 0.0);
    d.tick().unwrap();
    assert_eq!(t.asked("a.slice/app"), format!("{} swappiness=max", 50 * MIB), "the rest");
    assert_eq!(t.asked("b"), "", "nothing left to move");
    let s = d.stats();
    assert_eq!(s.paged_out_bytes, 358 * MIB);
    assert_eq!(s.came_back_bytes, 12 * 4096);
    assert_eq!((s.ticks, s.paused_ticks, s.errors), (2, 0, 0));
}

#[test]
fn pressure_full_swap_and_a_spent_budget_hold_it_back() {
    let t = Tree::new(&["app", "calm"]);
    let (cpu, c) = clock();
    let mut d = t.driver(&[("app", 40 * MIB), ("calm", 40 * MIB)], c);
    // app's own PSI is over the limit: only calm is asked.
    t.set("app", 0, 0, 0.5);
    d.tick().unwrap();
    assert_eq!(t.asked("app"), "");
    assert!(!t.asked("calm").is_empty());
    assert!((d.stats().last_psi_some_avg10 - 0.5).abs() < 1e-9);
    // Swap nearly full: a paused tick, nobody asked.
    t.set("app", 0, 0, 0.0);
    t.swap(1 << 30, 1 << 20);
    d.tick().unwrap();
    assert_eq!((t.asked("app"), t.asked("calm")), (String::new(), String::new()));
    assert_eq!(d.stats().paused_ticks, 1);
    // A clock that runs 10 s of CPU between any two reads: every tick's allowance (0.15 s)
    // is spent before the first cgroup is asked.
    t.swap(1 << 30, 1 << 30);
    let busy = Arc::new(Mutex::new(0.0));
    let b = busy.clone();
    let mut d = t.driver(
        &[("app", 40 * MIB)],
        Box::new(move || {
            let mut v = b.lock().expect("clock");
            *v += 10.0;
            *v
        }),
    );
    d.tick().unwrap();
    assert_eq!(t.asked("app"), "");
    assert!(d.stats().cpu_seconds > 10.0);
    drop(cpu);
}

#[test]
fn bad_configurations_and_missing_cgroups_are_refused() {
    let t = Tree::new(&["app"]);
    let (_, c) = clock();
    let base = MemcgReclaim {
        cold_age_secs: 60,
        period_secs: 15,
        cpu_budget_percent: 1.0,
        psi_some_avg10_limit: 0.1,
        targets: vec![MemcgTarget { path: "/app".into(), bytes: MIB }],
        predicted: None,
    };
    let with =
        |m: MemcgReclaim| Driver::with(m, t.cg.path(), t.proc.path(), 4096, Box::new(|| 0.0));
    assert!(with(base.clone()).is_ok());
    for path in ["/", "app", "/a/../b", "/a//b", "/./a"] {
        let m = MemcgReclaim {
            targets: vec![MemcgTarget { path: path.into(), bytes: 1 }],
            ..base.clone()
        };
        assert!(with(m).is_err(), "{path}");
    }
    assert!(with(MemcgReclaim { targets: vec![], ..base.clone() }).is_err());
    assert!(with(MemcgReclaim { period_secs: 61, ..base.clone() }).is_err());
    assert!(with(MemcgReclaim { cpu_budget_percent: 0.0, ..base.clone() }).is_err());
    let gone =
        MemcgReclaim { targets: vec![MemcgTarget { path: "/gone".into(), bytes: 1 }], ..base };
    let e = with(gone).expect_err("refused").to_string();
    assert!(e.contains("no memory.reclaim"), "{e}");
    // A cgroup removed while the driver runs: an error counted, the others go on.
    let mut d = t.driver(&[("app", MIB)], c);
    std::fs::remove_dir_all(t.cg.path().join("app")).unwrap();
    d.tick().unwrap();
    assert_eq!(d.stats().errors, 1);
    assert!(d.last_error.as_deref().is_some_and(|e| e.starts_with("/app: ")));
}

/// The status is the agent's format, so the exporter shows the driver as it shows the agent:
/// what moved, what came back, the prediction beside them.
#[test]
fn the_status_is_the_agents_format() {
    use crate::reclaim::{AgentStatus, Reclaimer};
    let t = Tree::new(&["app"]);
    let (_, c) = clock();
    let mut d = t.driver(&[("app", 40 * MIB)], c);
    d.config.predicted = Some(Predicted {
        moved_out_bytes: 40 * MIB,
        swap_ins_per_sec: 0.5,
        memory_saved_bytes: 30,
    });
    d.tick().unwrap();
    t.set("app", 10 * MIB, 3, 0.0);
    d.tick().unwrap();
    let s: AgentStatus =
        serde_json::from_slice(&d.status_json().unwrap()).expect("an agent status");
    assert_eq!(s.mechanism, "memory_reclaim");
    assert_eq!((s.config.cold_age_secs, s.config.period_secs), (60, 15));
    assert_eq!(s.stats.paged_out_bytes, 10 * MIB);
    assert_eq!(s.stats.came_back_bytes, 3 * 4096);
    assert_eq!(s.config.predicted.map(|p| p.moved_out_bytes), Some(40 * MIB));
    assert!(s.config.check().is_ok(), "{:?}", s.config);
}
