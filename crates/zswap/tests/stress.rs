//! Verified stress: threads swap pages out and in, free swap slots, and drive every reclaim
//! path (the limit's shrink worker, the memory-pressure shrinker, single writebacks) and
//! compressor switches on one zswap instance, and every swap-in is checked against a shadow.
//!
//! Each thread owns the swap offsets congruent to its number and tracks each one as free, in
//! memory (swapped in) or in swap (swapped out: in zswap or on the device, the thread cannot
//! know which and need not). Reclaim moves entries to the device concurrently; the page a
//! swap-in returns must still be exactly the one swapped out.
//!
//! Scale with `ZMEM_STRESS_OPS` (total operations, default 40,000) and `ZMEM_STRESS_THREADS`
//! (default 4); the long run in docs/RELIABILITY.md is
//! `ZMEM_STRESS_OPS=1000000 cargo test -p zmem-zswap --test stress -- --nocapture`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use zmem_pages::prng::SplitMix64 as Rng;
use zmem_zswap::{SwapFile, SwapIn, SwapLayer, SwapOut, Zswap, ZswapConfig, ZswapParams};

const PS: usize = 4096;

/// Same-filled, incompressible (stored as-is) or text-like pages of varied compressibility.
fn page_for(rng: &mut Rng) -> Vec<u8> {
    match rng.next_u64() % 8 {
        0 => rng.next_u64().to_ne_bytes().repeat(PS / 8),
        1 => (0..PS / 8).flat_map(|_| rng.next_u64().to_le_bytes()).collect(),
        k => {
            let words: [&[u8]; 6] = [b"swap ", b"entry ", b"lru ", b"pool ", b"zswap ", b"slot "];
            let mut p = Vec::with_capacity(PS + 8);
            while p.len() < PS {
                if rng.next_u64() % 100 < k * 6 {
                    p.push(rng.next_u64() as u8);
                } else {
                    p.extend_from_slice(words[(rng.next_u64() % 6) as usize]);
                }
            }
            p.truncate(PS);
            p
        }
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

enum State {
    /// Swapped in: zswap and the device hold nothing the thread may read.
    InMemory,
    InSwap(Vec<u8>),
}

#[derive(Default)]
struct Counts {
    swap_outs: AtomicU64,
    to_disk: AtomicU64,
    swap_ins: AtomicU64,
    from_disk: AtomicU64,
    invalidates: AtomicU64,
    shrinks: AtomicU64,
    written_back: AtomicU64,
    switches: AtomicU64,
    /// Swap-ins during the run that failed or returned another page than the one swapped out.
    mismatches: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// Counts a swap-in that did not return its page, describing the first few on stderr.
fn mismatch(counts: &Counts, what: std::fmt::Arguments<'_>) {
    if counts.mismatches.fetch_add(1, Ordering::Relaxed) < 10 {
        eprintln!("mismatch: {what}");
    }
}

fn run(name: &str, zpool: &str, alloc_limit: Option<u64>) {
    let threads = env_or("ZMEM_STRESS_THREADS", 4).max(1);
    let total_ops = env_or("ZMEM_STRESS_OPS", 40_000);
    let per_thread = 256u64;
    let slots = threads * per_thread;
    // A small pool cap (2% of 16 Ki pages = 327 pages, ~1000 stored pages) so the limit,
    // the hysteresis and the shrink worker are busy.
    let config = ZswapConfig {
        zpool: zpool.into(),
        total_ram_pages: 1 << 14,
        module: ZswapParams { max_pool_percent: 2, shrinker_enabled: true, ..Default::default() },
        ..ZswapConfig::default()
    };
    let swap = Arc::new(SwapFile::in_memory(PS, slots));
    let swap = SwapLayer::with_zswap(Zswap::with_alloc_limit(&config, swap, alloc_limit).unwrap());
    let z = swap.zswap().expect("zswap");
    let counts = Counts::default();
    let start = Instant::now();
    let states: Vec<HashMap<u64, State>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (z, swap, counts) = (z, &swap, &counts);
                s.spawn(move || {
                    let mut rng = Rng::new(0xabc + t);
                    let mut state: HashMap<u64, State> = HashMap::new();
                    let mut out = vec![0u8; PS];
                    for _ in 0..total_ops / threads {
                        let offset = (rng.next_u64() % per_thread) * threads + t;
                        match rng.next_u64() % 1000 {
                            0..=449 => match state.remove(&offset) {
                                // Swap in what is out; swap out what is in memory or new.
                                Some(State::InSwap(page)) => {
                                    match swap.read(offset, &mut out, &mut ()) {
                                        Ok(w) => {
                                            if out != page {
                                                mismatch(
                                                    counts,
                                                    format_args!(
                                                        "thread {t}: offset {offset} ({w:?})"
                                                    ),
                                                );
                                            }
                                            bump(&counts.from_disk, (w == SwapIn::Device) as u64);
                                        }
                                        Err(e) => mismatch(
                                            counts,
                                            format_args!("thread {t}: offset {offset}: {e:?}"),
                                        ),
                                    }
                                    bump(&counts.swap_ins, 1);
                                    state.insert(offset, State::InMemory);
                                }
                                _ => {
                                    let page = page_for(&mut rng);
                                    let w = swap.swap_out(offset, &page, &mut ()).unwrap();
                                    bump(&counts.swap_outs, 1);
                                    bump(&counts.to_disk, (w == SwapOut::Device) as u64);
                                    state.insert(offset, State::InSwap(page));
                                }
                            },
                            450..=899 => {
                                // Dirtied in memory and swapped out again: a fresh page.
                                let page = page_for(&mut rng);
                                if matches!(state.get(&offset), Some(State::InSwap(_))) {
                                    z.invalidate(offset);
                                }
                                let w = swap.swap_out(offset, &page, &mut ()).unwrap();
                                bump(&counts.swap_outs, 1);
                                bump(&counts.to_disk, (w == SwapOut::Device) as u64);
                                state.insert(offset, State::InSwap(page));
                            }
                            900..=959 => {
                                // The swap slot is freed (process exit, or the page was
                                // swapped in and its slot released).
                                if matches!(state.remove(&offset), Some(State::InSwap(_))) {
                                    z.invalidate(offset);
                                    bump(&counts.invalidates, 1);
                                }
                            }
                            960..=979 => {
                                let n = match rng.next_u64() % 3 {
                                    0 => z.shrinker_scan(1 + rng.next_u64() % 64),
                                    1 => z.shrink_worker(),
                                    _ => z.writeback_one() as u64,
                                };
                                bump(&counts.shrinks, 1);
                                bump(&counts.written_back, n);
                            }
                            980..=981 => {
                                let algo = ["lzo", "lz4", "zstd", "lzo-rle"]
                                    [(rng.next_u64() % 4) as usize];
                                z.set_param("compressor", algo).unwrap();
                                bump(&counts.switches, 1);
                            }
                            _ => {
                                let _ = z.shrinker_count();
                                let _ = z.stats();
                            }
                        }
                    }
                    state
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();

    // Every page still swapped out comes back; then the cache is empty and its pools too.
    let mut out = vec![0u8; PS];
    let (mut in_swap, mut lost) = (0u64, 0u64);
    for state in &states {
        for (offset, s) in state {
            if let State::InSwap(page) = s {
                let read = swap.read(*offset, &mut out, &mut ());
                if read.is_err() || out != *page {
                    eprintln!("offset {offset} lost after the run: {read:?}");
                    lost += 1;
                }
                in_swap += 1;
                z.invalidate(*offset);
            }
        }
    }
    let mismatches = counts.mismatches.load(Ordering::Relaxed);
    assert_eq!(
        (mismatches, lost),
        (0, 0),
        "(swap-ins that did not return their page, pages that did not come back at the end)"
    );
    let st = z.stats();
    assert_eq!(st.decompress_fail, 0);
    assert_eq!((st.stored_pages, st.stored_incompressible_pages), (0, 0), "entries left");
    assert_eq!(z.nr_entries(), 0);
    assert_eq!(z.total_pages(), 0, "the pools hold no page once every entry is gone");
    assert_eq!(z.nr_pools(), 1, "old compressors' pools are released once empty");

    let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "zswap stress {name}: {threads} threads, {total_ops} ops in {secs:.1}s: {} swap-outs \
         ({} to disk), {} swap-ins verified ({} from disk), {} invalidates, {} reclaim calls \
         writing back {} (zswpwb {}), {} compressor switches; pool_limit_hit {}, \
         reject_alloc_fail {}, reject_reclaim_fail {}; {in_swap} \
         pages verified at the end; mismatches {mismatches}, pages lost {lost}",
        c(&counts.swap_outs),
        c(&counts.to_disk),
        c(&counts.swap_ins),
        c(&counts.from_disk),
        c(&counts.invalidates),
        c(&counts.shrinks),
        c(&counts.written_back),
        st.zswpwb,
        c(&counts.switches),
        st.pool_limit_hit,
        st.reject_alloc_fail,
        st.reject_reclaim_fail,
    );
}

#[test]
fn zswap_stress_zsmalloc() {
    run("zsmalloc", "zsmalloc", None);
}

#[test]
fn zswap_stress_with_allocation_failures() {
    // The arena runs out before the pool cap: stores fail with reject_alloc_fail and the
    // pages go to the device.
    run("alloc-limit", "zsmalloc", Some(120));
}

#[test]
fn zswap_stress_z3fold() {
    run("z3fold", "z3fold", None);
}
