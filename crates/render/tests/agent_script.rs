//! The proactive reclaim in the apply and undo scripts (issue 55, item 2), run in the sandbox
//! (`common::sandbox`): the agent is started now (a process of its own where systemd does not
//! run) and, unless --no-persist, its unit is written for every boot; the undo stops exactly
//! that process and removes the unit; a missing zmem binary refuses before anything changes;
//! hostile exclude values are refused naming the field.

use std::fs;
use std::path::Path;

use zmem_kernel::reclaim::Exclude;
use zmem_lab::Policy;
use zmem_lab::decision::{Decision, Kind};
use zmem_render::decision as dec;

mod common;
use common::sandbox::{Sandbox, ok, stub};
use common::{decision, with_agent};

fn script(d: &Decision) -> Result<String, zmem_render::script::ScriptError> {
    dec::zram_apply_script(d, &Policy::single("lzo-rle"), None, 3600.0, None, &[])
}

/// A stub `zmem` that logs its arguments and waits to be stopped (its command line keeps
/// ` agent `, as the real one's does).
fn agent_stub(sb: &Sandbox) {
    stub(&sb.path("bin"), "zmem", "trap 'kill $! 2> /dev/null; exit 0' TERM\nsleep 60 &\nwait");
}

/// The pid the apply logged for the agent.
fn agent_pid(sb: &Sandbox) -> u32 {
    let log = sb.get("state/log");
    let line = log.lines().find(|l| l.starts_with("agent ")).unwrap_or_else(|| panic!("{log}"));
    line[6..].trim().parse().expect("a pid")
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn the_agent_starts_with_the_decision_and_the_undo_stops_it() {
    let sb = Sandbox::new("agent");
    agent_stub(&sb);
    let exclude = Exclude {
        pids: vec![1],
        comms: vec!["sshd".into()],
        cgroups: vec!["/system.slice".into()],
    };
    let s = script(&with_agent(exclude)).expect("a script");
    assert!(s.contains("zmem agent started, paging out anonymous memory idle for 60 s"), "{s}");
    ok(&sb.run("apply.sh", &s, &[]), "apply");
    let pid = agent_pid(&sb);
    // The stub logs before it waits: give it a moment to start.
    for _ in 0..50 {
        if sb.calls().contains("zmem agent") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let calls = sb.calls();
    let want = "zmem agent --cold-age 60 --cpu-budget 0.500000 --psi-limit 0.100000 --status \
                /run/zmem/agent.json --predicted-moved-out 943718400 --predicted-swap-ins \
                2.500000 --predicted-saved 629145600 --exclude 1,sshd,/system.slice";
    assert!(calls.contains(want), "{calls}");
    assert!(alive(pid), "the agent runs after the apply");
    let unit = sb.get("root/etc/systemd/system/zmem-agent.service");
    assert!(unit.contains("ExecStart=") && unit.contains(" agent --cold-age 60 "), "{unit}");
    assert!(unit.contains("WantedBy=multi-user.target"), "{unit}");
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(!alive(pid), "the undo stops the agent it started");
    assert!(!sb.path("root/etc/systemd/system/zmem-agent.service").exists());
    assert!(!sb.path("state").exists());
}

#[test]
fn no_persist_writes_no_unit_and_a_missing_binary_changes_nothing() {
    let sb = Sandbox::new("agent-np");
    agent_stub(&sb);
    let s = script(&with_agent(Exclude::default())).expect("a script");
    ok(&sb.run("apply.sh", &s, &["--no-persist"]), "apply --no-persist");
    let pid = agent_pid(&sb);
    assert!(!sb.path("root/etc/systemd/system/zmem-agent.service").exists());
    assert!(!sb.get("state/log").contains("--exclude"));
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(!alive(pid));
    // No zmem to run: refused before the device or zswap is touched.
    let sb = Sandbox::new("agent-missing");
    let before = sb.get("sys/module/zswap/parameters/enabled");
    let out = sb.run_with("apply.sh", &s, &[], &[("ZMEM_AGENT_BIN", "/nonexistent/zmem")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/zmem is not found") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(sb.get("sys/module/zswap/parameters/enabled"), before);
    let calls = sb.calls();
    assert!(calls.lines().all(|l| l.starts_with("id ")), "only `id` ran: {calls}");
}

#[test]
fn a_decision_without_the_agent_starts_none() {
    let sb = Sandbox::new("agent-none");
    agent_stub(&sb);
    let d = decision(Kind::Zram, "zram lzo-rle", None);
    let s = script(&d).expect("a script");
    assert!(s.contains("ZMEM_AGENT=0"));
    ok(&sb.run("apply.sh", &s, &[]), "apply");
    assert!(!sb.get("state/log").contains("agent "));
    assert!(!sb.calls().contains("zmem agent"));
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
}

#[test]
fn hostile_exclude_values_are_refused_naming_the_field() {
    for bad in ["a b", "$(touch /tmp/x)", "x;y", "/sys'", "%n", "-rf", "`id`", "/a\nb"] {
        let e = Exclude { comms: vec![bad.into()], ..Exclude::default() };
        let err = script(&with_agent(e)).expect_err(bad);
        assert_eq!(err.field, "proactive.agent.exclude[0]", "{bad:?}");
    }
}

/// From the states the zram tests cover: where the script stops (no zram, a mounted device) no
/// agent is started; where hot_add makes the device, the agent starts and the undo stops it
/// and removes the device. A zswap decision starts it too.
#[test]
fn the_agent_follows_the_script_from_every_state() {
    let s = script(&with_agent(Exclude::default())).expect("a script");
    let sb = Sandbox::new("agent-nozram");
    agent_stub(&sb);
    std::fs::remove_dir_all(sb.path("sys/class/zram-control")).unwrap();
    std::fs::remove_dir_all(sb.path("sys/block/zram0")).unwrap();
    assert!(!sb.run("apply.sh", &s, &[]).status.success());
    assert!(!sb.calls().contains("zmem agent"), "{}", sb.calls());
    let sb = Sandbox::new("agent-mounted");
    agent_stub(&sb);
    sb.put("proc/mounts", "/dev/zram0 /tmp ext4 rw 0 0\n");
    assert!(!sb.run("apply.sh", &s, &[]).status.success());
    assert!(!sb.calls().contains("zmem agent"), "{}", sb.calls());
    let sb = Sandbox::new("agent-hotadd");
    agent_stub(&sb);
    std::fs::remove_dir_all(sb.path("sys/block/zram0")).unwrap();
    sb.zram_device(1, "lzo [lzo-rle] lz4", "0");
    ok(&sb.run("apply.sh", &s, &["--no-persist"]), "apply");
    let pid = agent_pid(&sb);
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(!alive(pid));
    assert_eq!(sb.get("sys/class/zram-control/hot_remove"), "1\n");
    // zswap in front of a new swap file, with the agent.
    let mut d = with_agent(Exclude::default());
    d.kind = Kind::Zswap;
    d.config = "zswap lzo".into();
    let c = common::zswap_params("lzo", 20, true);
    let zs = dec::zswap_apply_script(&d, &c).expect("a zswap script");
    let sb = Sandbox::new("agent-zswap");
    agent_stub(&sb);
    ok(&sb.run("apply.sh", &zs, &["--no-persist"]), "apply");
    let pid = agent_pid(&sb);
    assert!(alive(pid));
    ok(&sb.run("undo.sh", &dec::undo_script(), &[]), "undo");
    assert!(!alive(pid));
    assert_eq!(sb.get("sys/module/zswap/parameters/enabled"), "Y\n");
}
