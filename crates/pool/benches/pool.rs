//! Allocator benchmarks: malloc + write + free throughput per allocator in a steady-state pool,
//! copy vs mapped-window cost of mapping a straddling zsmalloc object, and (printed once, not
//! timed) pages and metadata bytes per object for the same stream of sizes.
//!
//! `cargo bench -p zmem-pool --bench pool`
//!
//! Sizes are a fixed pseudo-random stream shaped like compressed 4 KiB pages (mostly 200-3600 B,
//! a tail of incompressible 4096 B objects for zsmalloc and z3fold; zbud caps at 3968 B).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use zmem_pool::{ArenaKind, Handle, MapMethod, MapMode, PoolConfig, ZPool, ZsPool};

/// Live objects kept in the pool while timing.
const LIVE: usize = 20_000;

struct Sizes(u64);

impl Sizes {
    /// xorshift; sizes mostly 200..3600, 5 % at the allocator's maximum.
    fn next(&mut self, max: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let r = self.0 % 1000;
        if r < 50 {
            max
        } else {
            // Sum of two uniforms: a triangle peaking near 1900 B.
            let a = (self.0 >> 10) % 1700;
            let b = (self.0 >> 30) % 1700;
            (200 + a + b) as usize
        }
    }
}

fn fill(pool: &dyn ZPool, n: usize, sizes: &mut Sizes, data: &[u8]) -> Vec<Handle> {
    let max = pool.max_alloc_size().min(4096);
    (0..n).map(|_| pool.store(&data[..sizes.next(max)]).unwrap()).collect()
}

fn density_report() {
    let data = vec![0x5a; 4096];
    eprintln!("\nallocator   objects   pages   bytes/object(pool)   metadata bytes/object");
    for a in zmem_pool::allocators() {
        let pool = a.create(&PoolConfig::default()).unwrap();
        let hs = fill(&*pool, 100_000, &mut Sizes(0x9e37_79b9_7f4a_7c15), &data);
        let pages = pool.total_pages();
        eprintln!(
            "{:<10} {:>8} {:>7} {:>20.1} {:>23.1}",
            a.name,
            hs.len(),
            pages,
            pages as f64 * 4096.0 / hs.len() as f64,
            pool.metadata_bytes() as f64 / hs.len() as f64
        );
    }
}

fn malloc_write_free(c: &mut Criterion) {
    density_report();
    let data = vec![0xa5u8; 4096];
    let mut g = c.benchmark_group("malloc_write_free");
    g.throughput(Throughput::Elements(1));
    for a in zmem_pool::allocators() {
        let pool = a.create(&PoolConfig::default()).unwrap();
        let mut sizes = Sizes(0x2545_f491_4f6c_dd1d);
        let mut live = fill(&*pool, LIVE, &mut sizes, &data);
        let max = pool.max_alloc_size().min(4096);
        let mut victim = 0usize;
        g.bench_function(a.name, |b| {
            b.iter(|| {
                // Replace a pseudo-random live object: one malloc + write + free per iteration.
                victim = (victim + 7919) % LIVE;
                let h = pool.store(&data[..sizes.next(max)]).unwrap();
                pool.free(std::mem::replace(&mut live[victim], h)).unwrap();
            })
        });
    }
    g.finish();
}

fn map_methods(c: &mut Criterion) {
    let cfg = PoolConfig { arena: ArenaKind::Memfd, ..PoolConfig::default() };
    let pool = ZsPool::new(&cfg).unwrap();
    let hs: Vec<_> = (0..3).map(|_| pool.malloc(1632).unwrap()).collect();
    assert!(pool.is_straddling(hs[2]).unwrap());
    let mut g = c.benchmark_group("map_straddling_1632");
    for m in [MapMethod::Copy, MapMethod::Window] {
        g.bench_function(m.name(), |b| {
            b.iter(|| pool.map_object(hs[2], m, MapMode::ReadWrite, |o| black_box(o[0])).unwrap())
        });
    }
    g.bench_function("in_page", |b| {
        b.iter(|| {
            pool.map_object(hs[0], MapMethod::Copy, MapMode::ReadWrite, |o| black_box(o[0]))
                .unwrap()
        })
    });
    let mut out = vec![0u8; 1632];
    g.bench_function("read_copy", |b| b.iter(|| pool.read(hs[2], black_box(&mut out)).unwrap()));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = malloc_write_free, map_methods
}
criterion_main!(benches);
