//! The replay's memcg on cgroup v1 and v2 (src/replay/memcg.rs): zswap's charge against the
//! limit, `memory.zswap.max`, `memory.zswap.writeback`.

mod common;

use std::cell::Cell;

use common::{PS, counts, pages, trace, zswap_pool};
use zmem_sim::replay::{self, Access, CgroupVersion, ReplayConfig, ReplayResult, Simulator};
use zmem_sim::{NoProgress, SimError};

const RAM: u64 = 64;

fn cfg(cgroup: CgroupVersion) -> ReplayConfig {
    ReplayConfig { ram_pages: RAM, zswap: zswap_pool(100), cgroup, ..ReplayConfig::default() }
}

/// Replays `t` access by access, checking `check` after each one with the pages zswap wrote
/// back into the swap cache during it.
fn stepped(p: &[u8], t: &[Access], cfg: &ReplayConfig, check: impl Fn(&Simulator, u64)) {
    let mut sim = Simulator::new(p, cfg).unwrap();
    for &a in t {
        let before = sim.writeback_cached();
        sim.access(a).unwrap();
        check(&sim, sim.writeback_cached() - before);
    }
}

/// Checks the usage after each access: an access that charges a page reclaims to the limit
/// first, then may go over it by the folios zswap's writeback charged meanwhile; one that
/// charges nothing (a hit) leaves the usage as it was. The accesses that ended over the limit.
fn over_the_limit(p: &[u8], t: &[Access], cfg: &ReplayConfig) -> u64 {
    let (over, prev) = (Cell::new(0), Cell::new(0));
    stepped(p, t, cfg, |sim, written_back| {
        let usage = sim.memcg_pages();
        assert!(usage <= RAM + written_back || usage <= prev.get(), "usage {usage} over the limit");
        over.set(over.get() + u64::from(usage > RAM));
        prev.set(usage);
    });
    over.get()
}

fn run(p: &[u8], t: &[Access], cfg: &ReplayConfig) -> ReplayResult {
    let r = replay::run(p, t, cfg, &NoProgress).unwrap();
    assert!(r.verified);
    r
}

/// mm/zswap.c `zswap_store_page()` → mm/memcontrol.c `obj_cgroup_charge_zswap()`: on cgroup v2
/// the entries' compressed bytes are charged to the memcg, so resident pages plus the charged
/// pool stay within the limit (`try_charge_memcg()` reclaims until a fault's page fits) but for
/// the folios zswap's writeback charged over it from reclaim (`PF_MEMALLOC`: forced), and
/// reclaim swaps out more than on v1, where the pool is not charged.
#[test]
fn on_cgroup_v2_zswaps_pool_counts_against_the_limit() {
    let (p, t) = (pages(400, 1), trace(400, 6000, 2));
    let v2 = cfg(CgroupVersion::V2);
    assert!(over_the_limit(&p, &t, &v2) > 0, "the pool limit writes back, charged");
    // On v1 the same pool is not charged: usage is the resident pages alone.
    over_the_limit(&p, &t, &cfg(CgroupVersion::V1));
    let (a, b) = (run(&p, &t, &cfg(CgroupVersion::V1)), run(&p, &t, &v2));
    assert!(b.max_pool_bytes > 0);
    assert!(b.swap_outs > a.swap_outs, "{} vs {}", b.swap_outs, a.swap_outs);
    assert!(b.swap_ins > a.swap_ins, "{} vs {}", b.swap_ins, a.swap_ins);
    assert!(b.counter("zswpout") > a.counter("zswpout"));
}

/// zram's pool is nobody's charge (zram_drv.c `zram_write_page()`: `zs_malloc()` without
/// `__GFP_ACCOUNT`): v1 and v2 replay alike.
#[test]
fn zrams_pool_is_charged_on_neither_version() {
    let (p, t) = (pages(400, 3), trace(400, 6000, 4));
    let zram = |cgroup| ReplayConfig { swap: replay::SwapKind::Zram, ..cfg(cgroup) };
    let a = run(&p, &t, &zram(CgroupVersion::V1));
    let b = run(&p, &t, &zram(CgroupVersion::V2));
    assert!(a.swap_outs > 100);
    assert_eq!(counts(&a), counts(&b));
}

/// `memory.zswap.max` (mm/zswap.c `zswap_store()` → `obj_cgroup_may_zswap()`, then
/// `shrink_memcg()`): stores at the limit are rejected to the swap file or make room by writing
/// one of the memcg's entries back, so the pool stays smaller and its own limit is never
/// reached. (The limit is a pre-check, not a bound: a store that passes may go past it.)
#[test]
fn memory_zswap_max_caps_the_memcgs_pool() {
    let (p, t) = (pages(400, 5), trace(400, 8000, 6));
    let limited = ReplayConfig { zswap_max: Some(6 * PS as u64), ..cfg(CgroupVersion::V2) };
    let (free, capped) = (run(&p, &t, &cfg(CgroupVersion::V2)), run(&p, &t, &limited));
    assert!(free.counter("pool_limit_hit") > 0, "without memory.zswap.max the pool fills");
    assert_eq!(capped.counter("pool_limit_hit"), 0);
    assert!(capped.rejected > free.rejected && capped.counter("written_back_pages") > 0);
    assert!(capped.max_pool_bytes < free.max_pool_bytes);
    assert_eq!(capped.disk_writes, capped.rejected + capped.counter("written_back_pages"));
}

/// With `memory.zswap.writeback=0` as well, `shrink_memcg()` returns -ENOENT: every store at
/// the limit is rejected and the page stays in RAM (mm/page_io.c `swap_writeout()`), so a
/// working set that fits RAM and an unlimited pool no longer fits: the memcg runs out of
/// memory (the kernel's memcg OOM killer).
#[test]
fn memory_zswap_max_without_writeback_keeps_pages_in_ram() {
    let (p, t) = (pages(100, 7), trace(100, 6000, 8));
    let no_wb = ReplayConfig { writeback: false, ..cfg(CgroupVersion::V2) };
    let r = run(&p, &t, &no_wb);
    assert!(r.kept_in_ram > 0, "6.18 rejects incompressible pages without writeback");
    assert_eq!((r.rejected, r.disk_writes), (r.kept_in_ram, 0));
    let limited = ReplayConfig { zswap_max: Some(6 * PS as u64), ..no_wb };
    let e = replay::run(&p, &t, &limited, &NoProgress).unwrap_err();
    assert!(matches!(e, SimError::OutOfMemory { .. }), "{e}");
}

/// `memory.zswap.max` exists only on cgroup v2 (mm/memcontrol.c `cgroup_add_dfl_cftypes()`),
/// and on v1 `obj_cgroup_may_zswap()` always passes: a replay is refused rather than run
/// without the limit it was asked for.
#[test]
fn memory_zswap_max_is_a_cgroup_v2_file() {
    let p = pages(16, 9);
    let v1 = ReplayConfig { zswap_max: Some(1 << 20), ..cfg(CgroupVersion::V1) };
    let e = Simulator::new(&p, &v1).unwrap_err();
    assert!(matches!(&e, SimError::Setup(m) if m.contains("memory.zswap.max")), "{e}");
}

/// The default is today's replay: cgroup v1, no `memory.zswap.max`.
#[test]
fn the_default_memcg_is_cgroup_v1_without_a_zswap_limit() {
    let d = ReplayConfig::default();
    assert_eq!((d.cgroup, d.zswap_max, d.writeback), (CgroupVersion::V1, None, true));
}
