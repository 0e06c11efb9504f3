//! The kernel's own proactive reclaim in the apply and undo scripts (issue 55, item 2), run in
//! the sandbox (`common::sandbox`). The DAMON pageout scheme: `zmem damon start` runs after the store is set up and its pid is
//! logged; unless --no-persist a oneshot unit starts it at every boot and stops it; the undo runs
//! `zmem damon stop` with that pid; a kdamond that appeared since the lab looked refuses the
//! apply before anything changes; hostile cgroup values are refused naming the field. The
//! memory.reclaim driver: `zmem memcg-reclaim` started with each cgroup's target, as a process
//! of its own (or a unit), stopped by the undo; hostile target paths refused.

use zmem_lab::Policy;
use zmem_lab::decision::Decision;
use zmem_render::decision as dec;

mod common;
use common::sandbox::{Sandbox, ok, stub};
use common::{with_damon, with_memcg};

const NR: &str = "sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds";

fn script(d: &Decision) -> Result<String, zmem_render::script::ScriptError> {
    dec::zram_apply_script(d, &Policy::single("lzo-rle"), None, 3600.0, None, &[])
}

/// A sandbox with a free DAMON interface and a stub `zmem` that prints a kdamond pid for
/// `damon start`, as the real one does.
fn sandbox(name: &str) -> Sandbox {
    let sb = Sandbox::new(name);
    sb.put(NR, "0\n");
    stub(&sb.path("bin"), "zmem", "[ \"$1 $2\" = 'damon start' ] && echo 4242\ntrue");
    sb
}

#[test]
fn the_scheme_starts_with_the_decision_and_the_undo_stops_that_kdamond() {
    let sb = sandbox("damon");
    let s = script(&with_damon(&["/system.slice"])).expect("a script");
    assert!(s.contains("kdamond 0, zmem's own, started with a DAMON pageout scheme"), "{s}");
    ok(&sb.run("apply.sh", &s, &[]), "apply");
    let calls = sb.calls();
    let want = "zmem damon start --cold-age 60 --cpu-budget 0.500000 --psi-limit 0.100000 \
                --pid-file /run/zmem/damon.pid --exclude /system.slice";
    assert!(calls.contains(want), "{calls}");
    assert!(!calls.contains("zmem agent"), "{calls}");
    let log = sb.get("state/log");
    assert!(log.lines().any(|l| l.starts_with("damon 4242 ")), "{log}");
    let unit = sb.get("root/etc/systemd/system/zmem-damon.service");
    assert!(unit.contains("Type=oneshot") && unit.contains("RemainAfterExit=yes"), "{unit}");
    assert!(unit.contains(" damon start --cold-age 60 "), "{unit}");
    assert!(unit.contains(" damon stop --pid-file /run/zmem/damon.pid"), "{unit}");
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    let calls = sb.calls();
    assert!(calls.contains("zmem damon stop --pid 4242 --pid-file /run/zmem/damon.pid"), "{calls}");
    assert!(!sb.path("root/etc/systemd/system/zmem-damon.service").exists());
    assert!(!sb.path("state").exists());
}

#[test]
fn no_persist_writes_no_unit_and_a_kdamond_since_refuses_before_any_change() {
    let sb = sandbox("damon-np");
    let s = script(&with_damon(&[])).expect("a script");
    ok(&sb.run("apply.sh", &s, &["--no-persist"]), "apply --no-persist");
    assert!(!sb.path("root/etc/systemd/system/zmem-damon.service").exists());
    assert!(!sb.calls().contains("--exclude"), "{}", sb.calls());
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(sb.calls().contains("zmem damon stop --pid 4242"), "{}", sb.calls());
    // Someone's kdamond since the lab looked: refused, nothing changed, nothing started.
    let sb = sandbox("damon-taken");
    sb.put(NR, "1\n");
    let before = sb.get("sys/block/zram0/disksize");
    let out = sb.run("apply.sh", &s, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has 1 kdamond(s) now") && err.contains("nothing was changed"), "{err}");
    assert_eq!(sb.get("sys/block/zram0/disksize"), before);
    assert!(!sb.calls().contains("zmem damon"), "{}", sb.calls());
}

#[test]
fn hostile_cgroup_values_are_refused_naming_the_field() {
    for bad in ["system.slice", "/a b", "/$(id)", "/x;y", "/a\nb", "/'"] {
        let err = script(&with_damon(&[bad])).expect_err(bad);
        assert_eq!(err.field, "proactive.damon.exclude_cgroups[0]", "{bad:?}");
    }
}

/// A stub `zmem` that logs its arguments and waits to be stopped (its command line keeps
/// ` memcg-reclaim `, as the real one's does).
fn waiting_stub(sb: &Sandbox) {
    stub(&sb.path("bin"), "zmem", "trap 'kill $! 2> /dev/null; exit 0' TERM\nsleep 60 &\nwait");
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn the_memory_reclaim_driver_starts_with_its_targets_and_the_undo_stops_it() {
    let sb = Sandbox::new("memcg");
    waiting_stub(&sb);
    let d = with_memcg(&[("/app.slice/web.service", 800 << 20), ("/user.slice", 50 << 20)]);
    let s = script(&d).expect("a script");
    assert!(s.contains("zmem memcg-reclaim started"), "{s}");
    ok(&sb.run("apply.sh", &s, &[]), "apply");
    let log = sb.get("state/log");
    let line = log.lines().find(|l| l.starts_with("agent ")).unwrap_or_else(|| panic!("{log}"));
    let pid: u32 = line[6..].trim().parse().expect("a pid");
    let want = "zmem memcg-reclaim --cold-age 60 --period 15 --cpu-budget 0.500000 --psi-limit \
                0.100000 --status /run/zmem/agent.json --target \
                /app.slice/web.service=838860800,/user.slice=52428800";
    for _ in 0..50 {
        if sb.calls().contains(want) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(sb.calls().contains(want), "{}", sb.calls());
    let unit = sb.get("root/etc/systemd/system/zmem-memcg-reclaim.service");
    assert!(unit.contains(" memcg-reclaim --cold-age 60 "), "{unit}");
    assert!(!sb.path("root/etc/systemd/system/zmem-agent.service").exists());
    assert!(alive(pid));
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(!alive(pid), "the undo stops the driver it started");
    assert!(!sb.path("root/etc/systemd/system/zmem-memcg-reclaim.service").exists());
    for bad in ["/", "app", "/a b", "/$(id)", "/x;y", "/a\nb"] {
        let err = script(&with_memcg(&[(bad, 1)])).expect_err(bad);
        assert_eq!(err.field, "proactive.memory_reclaim.targets[0]", "{bad:?}");
    }
}

/// From the states the zram tests cover: where the script stops (no zram) neither kernel tool
/// starts; a zswap decision starts them as a zram one does, and the undo stops them.
#[test]
fn the_kernel_tools_follow_the_script_from_every_state() {
    let damon = with_damon(&[]);
    let memcg = with_memcg(&[("/app.slice", 1 << 20)]);
    for (d, what) in [(&damon, "zmem damon start"), (&memcg, "zmem memcg-reclaim")] {
        let sb = sandbox("kt-nozram");
        std::fs::remove_dir_all(sb.path("sys/class/zram-control")).unwrap();
        std::fs::remove_dir_all(sb.path("sys/block/zram0")).unwrap();
        assert!(!sb.run("apply.sh", &script(d).expect("a script"), &[]).status.success());
        assert!(!sb.calls().contains(what), "{}", sb.calls());
        let mut z = d.clone();
        z.kind = zmem_lab::decision::Kind::Zswap;
        z.config = "zswap lzo".into();
        let zs = dec::zswap_apply_script(&z, &common::zswap_params("lzo", 20, true));
        let sb = sandbox("kt-zswap");
        ok(&sb.run("apply.sh", &zs.expect("a zswap script"), &["--no-persist"]), "apply");
        // The driver is a process of its own: its stub logs once it has started.
        for _ in 0..50 {
            if sb.calls().contains(what) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(sb.calls().contains(what), "{}", sb.calls());
        ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
        assert_eq!(sb.get("sys/module/zswap/parameters/enabled"), "Y\n");
        assert!(!sb.path("state").exists());
    }
}
