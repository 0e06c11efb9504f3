//! The live kernel end to end for zswap: zswap enabled in front of a swap file of ours, a child
//! in a memory cgroup swaps known pages into it, and the lab's zswap "Now" agrees with the
//! kernel's counters; its prediction for the same pages agrees with the live pool.
//!
//! Set-up (each step undone by a guard, in reverse order, on failure too): debugfs mounted if
//! it was not (unmounted after); a 256 MiB swap file (fallocate, mkswap, swapon at priority 5;
//! swapoff and rm after); every zswap parameter the test writes saved and written back after
//! (`enabled`, `compressor`, `max_pool_percent`, `shrinker_enabled`); a memory cgroup with a 32
//! MiB limit, and in it this test re-executed as its child (`live_zswap_child`), which
//! fills 96 MiB with one known page repeated (text, lzo-compressible) and waits.
//!
//! Tolerances, and why:
//! - `stored_pages` and `pool_total_size` of the lab's Now against debugfs read directly just
//!   before and just after: the boot kdamond pages other processes' cold memory out into any
//!   swap, so the counters may move between two reads; the lab's value must lie within the
//!   range of the two direct reads widened by how much they moved (plus 0: nothing else is
//!   allowed to differ).
//! - The known page alone, measured exactly: after the lab's read, the child's other swapped
//!   pages (its stack, the harness's heap, the copied-on-write pages of libc's and the binary's
//!   data: 45 to 60 pages, found in its pagemap outside the known range) are read back through
//!   /proc/PID/mem, which faults them in and frees their zswap entries, and the pool compacted.
//!   zswap then holds copies of the known page only, and the live `pool_total_size` must be
//!   zmem's one-pool packing of `stored_pages` copies (6.18: one zsmalloc pool per compressor,
//!   mm/zswap.c `zswap_pool_create()`), give or take one zspage that compaction may leave
//!   (holes of the loads), plus up to one zspage (8 pages) per page of another process still
//!   stored once the child has exited (the boot kdamond pages others out into any swap; none
//!   were, in the runs of docs/BENCHMARKS.md). Measured: equal to the byte in every run. 32
//!   pools' packing (13 zspages more at this size) or a wrong compressor is outside.
//! - The lab's Now (the known page scaled to every stored page) is below the live pool by those
//!   other pages' partly filled zspages (450-630 KB here), and never above it by more than a
//!   zspage.
//!
//! A live test (`#[ignore]`, run by scripts/test's live pass): skips, reported as such by
//! zmem-testkit, without root, zswap, debugfs, a memory cgroup or swap file support.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use zmem_kernel::harness::{CgroupChild, MemCgroup};

const LIMIT: u64 = 32 << 20;
const CHILD_MIB: usize = 96;
/// Pages zswap must hold before the comparison (48 MiB).
const ENOUGH_PAGES: u64 = 12 * 1024;
const PARAMS: &str = "/sys/module/zswap/parameters";
const DEBUGFS: &str = "/sys/kernel/debug";

/// The one page the child repeats: text, so lzo compresses it well, and neither zero- nor
/// same-filled (those never reach zswap's compressor).
fn known_page() -> Vec<u8> {
    let text = b"zmem live zswap test: a known page, compressed by the kernel and by zmem alike. ";
    let mut p = Vec::with_capacity(4096);
    let mut i = 0u32;
    while p.len() < 4096 {
        p.extend_from_slice(text);
        p.extend_from_slice(format!("{i:05} ").as_bytes());
        i += 1;
    }
    p.truncate(4096);
    p
}

/// The child: fills `mib` MiB with the known page, says where, and waits to be killed.
fn live_zswap_child(mib: usize) {
    let page = 4096;
    let mut backing = vec![0u8; (mib << 20) + page];
    let skip = backing.as_ptr().align_offset(page);
    let known = known_page();
    for p in backing[skip..skip + (mib << 20)].chunks_exact_mut(page) {
        p.copy_from_slice(&known);
    }
    let start = backing[skip..].as_ptr() as usize;
    zmem_testkit::say_ready(format!("{start:x} {:x}", mib << 20));
    loop {
        std::thread::sleep(Duration::from_secs(1));
        std::hint::black_box(&backing);
    }
}

/// zswap parameters written by the test, restored on drop.
struct ZswapParams {
    saved: Vec<(String, String)>,
}

impl ZswapParams {
    fn set(&mut self, name: &str, value: &str) -> std::io::Result<()> {
        let path = format!("{PARAMS}/{name}");
        if !self.saved.iter().any(|(n, _)| n == name) {
            let old = std::fs::read_to_string(&path)?.trim().to_string();
            self.saved.push((name.to_string(), old));
        }
        std::fs::write(&path, value)
    }
}

impl Drop for ZswapParams {
    fn drop(&mut self) {
        // `enabled` first saved, restored last: the others are in place before it turns back on.
        for (name, old) in self.saved.iter().rev() {
            if let Err(e) = std::fs::write(format!("{PARAMS}/{name}"), old) {
                eprintln!("could not restore zswap {name}={old}: {e}");
            }
        }
    }
}

/// debugfs, mounted by the test when it was not.
struct Debugfs {
    mounted_here: bool,
}

impl Debugfs {
    fn ensure() -> Result<Self, String> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").map_err(|e| e.to_string())?;
        if zmem_kernel::zswap_state::debugfs_mounted(&mounts, DEBUGFS) {
            return Ok(Self { mounted_here: false });
        }
        let ok = Command::new("mount")
            .args(["-t", "debugfs", "none", DEBUGFS])
            .status()
            .is_ok_and(|s| s.success());
        if ok { Ok(Self { mounted_here: true }) } else { Err("cannot mount debugfs".into()) }
    }
}

impl Drop for Debugfs {
    fn drop(&mut self) {
        if self.mounted_here {
            let _ = Command::new("umount").arg(DEBUGFS).status();
        }
    }
}

/// A swap file of ours, swapped on; swapped off and removed on drop.
struct SwapFile {
    path: PathBuf,
    on: bool,
}

impl SwapFile {
    fn create(path: &Path, bytes: u64, priority: i32) -> Result<Self, String> {
        let mut f = Self { path: path.to_path_buf(), on: false };
        let run = |cmd: &mut Command| -> Result<(), String> {
            let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
            if o.status.success() {
                Ok(())
            } else {
                Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&o.stderr).trim()))
            }
        };
        run(Command::new("fallocate").args(["-l", &bytes.to_string()]).arg(path))?;
        run(Command::new("chmod").arg("600").arg(path))?;
        run(Command::new("mkswap").arg(path))?;
        run(Command::new("swapon").args(["-p", &priority.to_string()]).arg(path))?;
        f.on = true;
        Ok(f)
    }
}

impl Drop for SwapFile {
    fn drop(&mut self) {
        if self.on {
            let _ = Command::new("swapoff").arg(&self.path).status();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A /proc/vmstat counter (0 where absent).
fn vmstat(name: &str) -> u64 {
    zmem_kernel::stat::vmstat_counter(name).ok().flatten().unwrap_or(0)
}

fn debugfs_value(name: &str) -> u64 {
    std::fs::read_to_string(format!("{DEBUGFS}/zswap/{name}"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// The child's swapped pages (pagemap bit 62) over all its readable mappings (anonymous ones,
/// and the copied-on-write pages of private file mappings: a library's `.data`, its GOT): how
/// many lie in `known` (all copies of the known page), and the contents of the others, read
/// through /proc/PID/mem (each read faults its page back in).
fn child_swapped_pages(pid: u32, known: (u64, u64)) -> (usize, Vec<Vec<u8>>) {
    use std::os::unix::fs::FileExt;
    const PM_SWAPPED: u64 = 1 << 62;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("child maps");
    let pagemap = std::fs::File::open(format!("/proc/{pid}/pagemap")).expect("child pagemap");
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).expect("child mem");
    let (mut in_known, mut others) = (0, Vec::new());
    let ranges = maps.lines().filter_map(|l| {
        let (range, perms) = l.split_once(' ')?;
        let (a, b) = range.split_once('-')?;
        let readable = perms.starts_with('r');
        readable
            .then(|| Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?)))?
    });
    for (start, end) in ranges {
        for vaddr in (start..end).step_by(4096) {
            let mut e = [0u8; 8];
            pagemap.read_exact_at(&mut e, vaddr / 4096 * 8).expect("pagemap entry");
            if u64::from_le_bytes(e) & PM_SWAPPED == 0 {
                continue;
            }
            if (known.0..known.1).contains(&vaddr) {
                in_known += 1;
            } else {
                let mut page = vec![0u8; 4096];
                mem.read_exact_at(&mut page, vaddr).expect("a swapped page of the child");
                others.push(page);
            }
        }
    }
    (in_known, others)
}

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (swapon, zswap parameters and cgroups need it)".into());
    }
    if !Path::new(PARAMS).exists() {
        return Some("this kernel has no zswap".into());
    }
    None
}

#[test]
#[ignore = "live: needs root, zswap, debugfs, a swap file and a memory cgroup (scripts/test runs it)"]
fn live_zswap_now_matches_the_kernel() {
    zmem_testkit::child("fill", |mib| live_zswap_child(mib.parse().unwrap()));
    let Some(kit) = zmem_testkit::live(skip_reason()) else { return };
    let live = zmem_lab::zswap::read_live(false);
    let compressor = ["lzo", "lzo-rle", "lz4", "zstd"]
        .into_iter()
        .find(|c| live.offered.iter().any(|o| o == c))
        .expect("the kernel offers zswap one of lzo, lzo-rle, lz4, zstd");
    // Guards in the order they are undone last-to-first.
    let _debugfs = match Debugfs::ensure() {
        Ok(d) => d,
        Err(why) => return kit.skip(why),
    };
    let swap_path =
        std::env::temp_dir().join(format!("zmem-live-zswap-{}.swap", std::process::id()));
    let swap = match SwapFile::create(&swap_path, 256 << 20, 5) {
        Ok(s) => s,
        Err(why) => return kit.skip(format!("no swap file: {why}")),
    };
    let mut params = ZswapParams { saved: Vec::new() };
    params.set("enabled", "N").expect("zswap enabled");
    params.set("compressor", compressor).expect("zswap compressor");
    params.set("max_pool_percent", "20").expect("zswap max_pool_percent");
    params.set("shrinker_enabled", "N").expect("zswap shrinker_enabled");
    params.set("enabled", "Y").expect("zswap enabled");
    let baseline = debugfs_value("stored_pages");
    let vm_base = (vmstat("zswpout"), vmstat("zswpin"), vmstat("swpout_zero"));
    eprintln!("zswap set up: stored {baseline}, pool {} B", debugfs_value("pool_total_size"));

    let cgroup = match MemCgroup::create(LIMIT) {
        Ok(c) => c,
        Err(e) => return kit.skip(format!("no memory cgroup: {e}")),
    };
    let cmd = zmem_testkit::reexec("fill", &CHILD_MIB.to_string());
    let mut child = CgroupChild::spawn(cmd, &cgroup).expect("spawn the child");
    let pid = child.pid();
    let ready_line = zmem_testkit::Ready::watch(child.child_mut().stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ready = false;
    let mut known_range = (0u64, 0u64);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child exited before it was ready: {status}");
        }
        if let Some(payload) = ready_line.try_take() {
            let mut f = payload.split_whitespace();
            let mut hex = || u64::from_str_radix(f.next().unwrap_or(""), 16).unwrap();
            let start = hex();
            known_range = (start, start + hex());
            ready = true;
        }
        let stored = debugfs_value("stored_pages");
        if ready && stored >= baseline + ENOUGH_PAGES {
            break;
        }
        assert!(Instant::now() < deadline, "after 30 s: ready {ready}, {stored} pages in zswap");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.freeze().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // zsmalloc's pool keeps the holes pages freed while the child was reclaimed (a large folio
    // split, a store undone): fragmentation that no prediction from the pages can know. Its
    // shrinker compacts the pool; drop_slab (drop_caches 2) runs every shrinker, zsmalloc's
    // included (`zsmalloc.c: zs_shrinker_scan` -> `zs_compact`). It also drops dentry and inode
    // caches, which only costs other processes some re-reads.
    let before = debugfs_value("pool_total_size");
    std::fs::write("/proc/sys/vm/drop_caches", "2").expect("drop_caches");
    std::thread::sleep(Duration::from_millis(300));
    eprintln!(
        "pool_total_size {before} B before compaction, {} B after",
        debugfs_value("pool_total_size")
    );

    // The lab's Now, bracketed by direct reads of the kernel's counters.
    let (stored_a, pool_a) = (debugfs_value("stored_pages"), debugfs_value("pool_total_size"));
    let lab_live = zmem_lab::zswap::read_live(false);
    let (stored_b, pool_b) = (debugfs_value("stored_pages"), debugfs_value("pool_total_size"));
    let child_pages = zmem_lab::zswap::vm_swap_pages(pid);
    let known = known_page();
    let pages: Vec<u8> = known.iter().copied().cycle().take(16384 * 4096).collect();
    let facts = zmem_lab::PageFacts::of_pages(&pages, 4096, &[compressor]).unwrap();
    let now = zmem_lab::zswap::now(&lab_live, None, 0.0, &facts, None);
    eprintln!(
        "zswap {compressor}: stored {stored_a}..{stored_b} pages, pool {pool_a}..{pool_b} B; child \
         VmSwap {child_pages} pages; lab {:?}",
        now.fields
    );
    assert!(now.enabled && now.module.compressor == compressor, "{now:?}");
    let field = |name: &str| now.fields.iter().find(|f| f.field == name).unwrap().clone();
    let within = |v: u64, a: u64, b: u64| {
        let slack = a.abs_diff(b);
        v + slack >= a.min(b) && v <= a.max(b) + slack
    };
    let stored = field("stored_pages").live.expect("stored_pages read");
    assert!(within(stored, stored_a, stored_b), "stored_pages {stored} vs {stored_a}..{stored_b}");
    let pool = field("pool_total_size").live.expect("pool_total_size read");
    assert!(within(pool, pool_a, pool_b), "pool_total_size {pool} vs {pool_a}..{pool_b}");
    assert!(now.debugfs.as_ref().is_some_and(|d| d.contains_key("written_back_pages")));
    assert!(now.meminfo_zswapped_bytes.is_some() && now.vmstat.contains_key("zswpout"));

    // The prediction: the known page with the live compressor, scaled to the live pages.
    let p = now.prediction.as_ref().expect("a prediction");
    assert_eq!(p.stored_pages, 16384, "every known page is stored");
    let predicted = field("pool_total_size").predicted.expect("predicted pool");
    assert_eq!(
        now.pool_difference_bytes,
        Some(pool as i64 - predicted as i64),
        "the lab reports the live pool less the prediction"
    );

    // Where the rest of the live pool is: the child's other swapped pages (its stack, the test
    // harness's heap, the copied-on-write pages of libc's and the binary's data), each in a size
    // class of its own, most of them alone there: a partly filled zspage (up to 8 pages) for one
    // object. Found in its pagemap outside the known range and read back through /proc/PID/mem,
    // which faults them in (zswap_load frees their entries; the cgroup, at its limit, pushes as
    // many known pages out instead). Then the pool holds the known page's objects alone, packed
    // as one zsmalloc pool packs them.
    let vm = |i: usize| [vmstat("zswpout"), vmstat("zswpin"), vmstat("swpout_zero")][i];
    eprintln!(
        "vmstat since zswap was set up: zswpout +{}, zswpin +{}, swpout_zero +{}",
        vm(0) - vm_base.0,
        vm(1) - vm_base.1,
        vm(2) - vm_base.2,
    );
    let (known_swapped, others_child) = child_swapped_pages(pid, known_range);
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write("/proc/sys/vm/drop_caches", "2").expect("drop_caches");
    std::thread::sleep(Duration::from_millis(300));
    let (stored_k, pool_k) = (debugfs_value("stored_pages"), debugfs_value("pool_total_size"));
    let mut all: Vec<u8> = known.iter().copied().cycle().take(known_swapped * 4096).collect();
    for page in &others_child {
        all.extend_from_slice(page);
    }
    let with_others = zmem_lab::zswap::predict(&all, 4096, compressor).unwrap();
    let known_alone = |n: u64| {
        let pages: Vec<u8> = known.iter().copied().cycle().take(n as usize * 4096).collect();
        zmem_lab::zswap::predict(&pages, 4096, compressor).unwrap().pool_total_size
    };
    // Other processes' pages (the boot kdamond pages them out into any swap): what zswap still
    // holds once the child has exited.
    drop(child);
    std::thread::sleep(Duration::from_millis(300));
    let others = debugfs_value("stored_pages");
    eprintln!(
        "the child's swap: {known_swapped} known pages and {} others ({} zero); zmem's pool for \
         them all {} B against the live {pool} B (the known pages alone, scaled: {predicted} B); \
         with the others faulted back in: stored {stored_k}, pool {pool_k} B, zmem's pool for \
         {stored_k} known pages {} B; {others} pages of other processes left after the child \
         exited",
        others_child.len(),
        others_child.iter().filter(|p| p.iter().all(|&b| b == 0)).count(),
        with_others.pool_total_size,
        known_alone(stored_k),
    );
    // The known page's objects, alone in the pool: one zsmalloc pool's packing of them, plus at
    // most one zspage left by holes compaction could not close (the loads above and the swap
    // readahead's free zswap entries), plus a zspage (8 pages at most) per page of another
    // process still there. 32 pools' packing (+13 zspages here) or a wrong compressor is outside.
    let zspage = 8 * 4096;
    let low = known_alone(stored_k.saturating_sub(others));
    let high = known_alone(stored_k) + zspage + others * zspage;
    assert!(
        (low..=high).contains(&pool_k),
        "the pool of the known pages alone, {pool_k} B, outside [{low}, {high}]"
    );
    // And the lab's Now, which scales the known page to every stored page, is below the live
    // pool by the child's other pages' zspages: never above it by more than a zspage.
    assert!(predicted <= pool + zspage, "predicted {predicted} B above the live {pool} B");
    drop(cgroup);
    drop(params);
    drop(swap);
}
