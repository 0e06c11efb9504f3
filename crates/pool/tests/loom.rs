//! Model checks of zsmalloc's per-class locking with loom: every interleaving of the threads
//! below, up to a preemption bound, over the pool's real code compiled against loom's locks and
//! atomics (`src/sync.rs`).
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!   cargo test -p zmem-pool --release --test loom -- --nocapture
//! ```
//!
//! `LOOM_MAX_PREEMPTIONS=N` bounds the preemptions per interleaving (default: none). Without
//! `--cfg loom` this file is empty.
//!
//! What the locks must give (`src/zsmalloc/mod.rs`): writers of one class exclude each other
//! (a lost update would hand two objects one slot, or lose a zspage from the fullness lists);
//! writers of two classes share the arena behind its own lock, and its published page count
//! ends equal to the frames in use; compaction moves objects under the class lock while readers
//! and a free of the same class go on, and every reader sees its object's own bytes, wherever it
//! was. Each model ends with the pool's `audit`, which checks every list, counter and the page
//! count.
//!
//! The models can fail: with the page count published after the arena's lock is released
//! instead of before (a "shorter critical section" that lets an older count overwrite a newer
//! one), `writers_of_two_classes_share_the_arena` fails on the published count. An object read
//! after its class lock is dropped cannot be written at all: its bytes are borrowed from the
//! lock's guard (`src/zsmalloc/chain.rs`).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use zmem_pool::{Handle, PoolConfig, ZPool, ZsPool};

fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let builder = loom::model::Builder::new();
    let bound = builder.preemption_bound;
    let start = Instant::now();
    let before = RUNS.load(Ordering::Relaxed);
    builder.check(move || {
        RUNS.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "loom {name}: {} interleavings, preemption bound {bound:?}, {:.2?}",
        RUNS.load(Ordering::Relaxed) - before,
        start.elapsed()
    );
}

/// `len` bytes that say which object they are.
fn bytes(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i as u8)).collect()
}

fn read(pool: &ZsPool, h: Handle) -> Vec<u8> {
    let mut out = vec![0; 4096];
    let n = pool.read(h, &mut out).expect("a live handle reads");
    out.truncate(n);
    out
}

fn pool() -> Arc<ZsPool> {
    Arc::new(ZsPool::new(&PoolConfig::default()).unwrap())
}

/// Two writers store into the same class (1000-byte objects: four to a one-page zspage) and
/// read back: the first zspage is made once, each gets its own slot, nothing is lost.
#[test]
fn writers_of_one_class_exclude_each_other() {
    model("writers_of_one_class_exclude_each_other", || {
        let p = pool();
        let ts: Vec<_> = (0..2u8)
            .map(|t| {
                let p = p.clone();
                thread::spawn(move || {
                    let h = p.store(&bytes(t, 1000)).unwrap();
                    assert_eq!(read(&p, h), bytes(t, 1000), "thread {t} reads its own object");
                    h
                })
            })
            .collect();
        let hs: Vec<Handle> = ts.into_iter().map(|t| t.join().unwrap()).collect();
        assert_ne!(hs[0], hs[1]);
        assert_eq!(p.objects(), 2);
        assert_eq!(p.total_pages(), 1, "one zspage for both");
        p.audit().unwrap();
    });
}

/// Two writers of two classes both need a new zspage, so both take the shared arena; then one
/// frees its object and gives the zspage back. The published page count is the arena's.
#[test]
fn writers_of_two_classes_share_the_arena() {
    model("writers_of_two_classes_share_the_arena", || {
        let p = pool();
        let a = {
            let p = p.clone();
            thread::spawn(move || {
                let h = p.store(&bytes(1, 100)).unwrap();
                assert_eq!(read(&p, h), bytes(1, 100));
                p.free(h).unwrap();
            })
        };
        let b = {
            let p = p.clone();
            thread::spawn(move || {
                let h = p.store(&bytes(2, 3000)).unwrap();
                assert_eq!(read(&p, h), bytes(2, 3000));
                h
            })
        };
        a.join().unwrap();
        let h = b.join().unwrap();
        assert_eq!(read(&p, h), bytes(2, 3000));
        assert_eq!(p.objects(), 1);
        // The 3000-byte class's zspage alone is left (its chain length, from the class table).
        let want: u64 = p.class_stats().iter().filter(|c| c.objs_inuse > 0).map(|c| c.pages).sum();
        assert_eq!(p.total_pages(), want);
        p.audit().unwrap();
    });
}

/// A compaction of a class with holes runs while one thread reads an object that compaction
/// moves and another frees one: the reader sees its bytes before or after the move, the free
/// finds its object wherever it is, and the class ends compacted and consistent.
#[test]
fn compaction_moves_objects_under_readers_and_frees() {
    model("compaction_moves_objects_under_readers_and_frees", || {
        let p = pool();
        // Eight 1000-byte objects: two zspages of four. Free three of the first zspage's and
        // one of the second's: compaction then moves the first's last object into the second.
        let hs: Vec<Handle> = (0..8u8).map(|t| p.store(&bytes(t, 1000)).unwrap()).collect();
        for &i in &[0, 1, 2, 4] {
            p.free(hs[i]).unwrap();
        }
        assert_eq!(p.total_pages(), 2);
        let compactor = {
            let p = p.clone();
            thread::spawn(move || p.compact())
        };
        let reader = {
            let (p, h) = (p.clone(), hs[3]);
            thread::spawn(move || assert_eq!(read(&p, h), bytes(3, 1000)))
        };
        let freer = {
            let (p, h) = (p.clone(), hs[7]);
            thread::spawn(move || p.free(h).unwrap())
        };
        let freed = compactor.join().unwrap();
        reader.join().unwrap();
        freer.join().unwrap();
        assert!(freed <= 1, "at most the emptied zspage");
        assert_eq!(p.total_pages() + freed, 2);
        for (i, &h) in hs.iter().enumerate().filter(|(i, _)| [3, 5, 6].contains(i)) {
            assert_eq!(read(&p, h), bytes(i as u8, 1000), "object {i} after compaction");
        }
        p.audit().unwrap();
    });
}
