//! Threads allocating, writing, reading back and freeing their own objects of every size while
//! another thread compacts without pause: every read must return what its owner wrote. Objects
//! are made both ways zram and zswap make them (`malloc` then `write`, and `store`) and read
//! both ways (`read`, and `read_with`, in place where zsmalloc can), so zsmalloc's per-class
//! locks see allocations, frees, in-place reads and compaction of one class at once.

use std::sync::atomic::{AtomicBool, Ordering};

use zmem_pages::prng::SplitMix64 as Rng;
use zmem_pool::{Handle, PoolConfig, ZPool};

fn fill(len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    Rng::new(seed).fill(&mut data);
    data
}

fn hammer(pool: &dyn ZPool, ops: u64) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                pool.compact();
                std::thread::yield_now();
            }
        });
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = Rng::new(0x9e37 + t * 7919);
                    let mut live: Vec<(Handle, Vec<u8>)> = Vec::new();
                    let mut out = vec![0u8; pool.page_size()];
                    for _ in 0..ops {
                        match rng.next_u64() % 10 {
                            0..=3 => {
                                let len = 1 + (rng.next_u64() as usize % pool.max_alloc_size());
                                let data = fill(len, rng.next_u64());
                                let h = if rng.next_u64().is_multiple_of(2) {
                                    pool.store(&data).unwrap()
                                } else {
                                    let h = pool.malloc(len).unwrap();
                                    std::thread::yield_now();
                                    pool.write(h, &data).unwrap();
                                    h
                                };
                                live.push((h, data));
                            }
                            4..=6 if !live.is_empty() => {
                                let i = rng.next_u64() as usize % live.len();
                                let (h, data) = &live[i];
                                if rng.next_u64().is_multiple_of(2) {
                                    let n = pool.read(*h, &mut out).unwrap();
                                    assert!(out[..n] == data[..], "thread {t}: object differs");
                                } else {
                                    let mut same = false;
                                    let mut f = |b: &[u8]| same = b == &data[..];
                                    pool.read_with(*h, &mut out, &mut f).unwrap();
                                    assert!(same, "thread {t}: object read in place differs");
                                }
                            }
                            _ if !live.is_empty() => {
                                let i = rng.next_u64() as usize % live.len();
                                let (h, _) = live.swap_remove(i);
                                pool.free(h).unwrap();
                            }
                            _ => {}
                        }
                    }
                    for (h, data) in &live {
                        let n = pool.read(*h, &mut out).unwrap();
                        assert!(out[..n] == data[..], "thread {t}: object differs at the end");
                    }
                    for (h, _) in live {
                        pool.free(h).unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
}

#[test]
fn zsmalloc_under_concurrent_compaction() {
    let ops = std::env::var("ZMEM_POOL_STRESS_OPS").ok().and_then(|v| v.parse().ok());
    for a in zmem_pool::allocators() {
        let name = a.name;
        let pool = zmem_pool::create(name, &PoolConfig::default()).unwrap();
        hammer(&*pool, ops.unwrap_or(20_000));
    }
    // And the pool's own bookkeeping, checked with every lock held.
    let pool = zmem_pool::ZsPool::new(&PoolConfig::default()).unwrap();
    hammer(&pool, ops.unwrap_or(20_000));
    pool.audit().unwrap();
    assert_eq!(pool.objects(), 0);
}
