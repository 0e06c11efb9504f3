//! Model checks of the per-slot lock (`src/slot.rs`) with loom: every interleaving of the
//! threads below, and every value the memory model lets each load see, up to a preemption bound.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!   cargo test -p zmem-zram --release --test loom -- --nocapture
//! ```
//!
//! `LOOM_MAX_PREEMPTIONS=N` bounds the preemptions per interleaving (default: none, every
//! interleaving). Without `--cfg loom` this file is empty.
//!
//! The lock is a bit of the slot's flags word: `lock` spins on a compare-and-swap (Acquire),
//! `try_lock` is one `fetch_or` (Acquire), the guard's drop a `fetch_and` (Release). Under the
//! lock every field access is Relaxed, and the flags are set and cleared by a load and a store of
//! the word, so these models check that the lock orders them: a lock that let two holders in
//! would lose one's read-modify-write, a lock without Acquire/Release would let the next holder
//! read stale fields, and a failed `try_lock` that touched the holder's bit would do both.
//!
//! The slot table is compiled here from its own source (`#[path]`) against the same `sync` shim
//! as the library, so the model checks exactly the code zram runs, without making the module
//! public.
#![cfg(loom)]

#[path = "../src/sync.rs"]
mod sync;

// The models use the lock and a few accessors, not the whole table.
#[allow(dead_code)]
#[path = "../src/slot.rs"]
mod slot;

use loom::sync::Arc;
use loom::thread;
use slot::{Flag, SlotTable};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

const PAGE_SIZE: usize = 4096;

/// Runs `f` under loom and reports how many interleavings it explored. No preemption bound
/// unless `LOOM_MAX_PREEMPTIONS` sets one: these models are small enough to explore exhaustively
/// (about 14,000 interleavings in all, under 2 s).
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
    // Tests run in parallel and share the counter; run with --test-threads=1 for exact counts.
    eprintln!(
        "loom {name}: {} interleavings, preemption bound {bound:?}, {:.2?}",
        RUNS.load(Ordering::Relaxed) - before,
        start.elapsed()
    );
}

/// One model thread's work on the table.
type Job<R> = Box<dyn FnOnce(&SlotTable) -> R + Send>;

/// Runs each closure on its own loom thread over one fresh one-slot table, joins them, and
/// returns the table and their results. The threads under test are all spawned: with the reader
/// on the model's own thread, loom 0.7 did not catch a `lock` without Acquire in
/// `unlock_publishes` (it explored no stale read of the handle there); spawned, it does.
fn run<R: Send + 'static>(fs: Vec<Job<R>>) -> (Arc<SlotTable>, Vec<R>) {
    let t = Arc::new(SlotTable::with_actime(1, PAGE_SIZE, true));
    let handles: Vec<_> = fs
        .into_iter()
        .map(|f| {
            let t = t.clone();
            thread::spawn(move || f(&t))
        })
        .collect();
    let results = handles.into_iter().map(|h| h.join().unwrap()).collect();
    (t, results)
}

/// A read-modify-write of two fields under the lock, made of separate loads and stores (the
/// handle, and the size bits of the flags word, which also holds the lock bit).
fn increment_locked(g: &slot::SlotGuard<'_>) {
    let h = g.handle();
    let s = g.size();
    g.set_handle(h + 1);
    g.set_size(s + 1);
    assert!(g.test(Flag::EntryLock), "the holder's lock bit was cleared");
}

fn increment(t: &SlotTable) {
    increment_locked(&t.lock(0));
}

/// Two threads increment under `lock`: neither update may be lost, and the lock ends free.
#[test]
fn the_lock_excludes() {
    model("the_lock_excludes", || {
        let (t, _) = run::<()>(vec![Box::new(increment), Box::new(increment)]);
        let g = t.try_lock(0).expect("the lock was left held");
        assert_eq!((g.handle(), g.size()), (2, 2), "an update under the lock was lost");
    });
}

/// One thread holds the lock while another tries it and, failing, waits for it with `lock`. A
/// failed `try_lock` must leave the holder's bit alone: when the guard was built before the
/// test and dropped on failure (the bug in docs/RELIABILITY.md), the second thread got in while
/// the first still held the slot, and one increment was lost.
#[test]
fn a_failed_try_lock_keeps_the_holders_lock() {
    model("a_failed_try_lock_keeps_the_holders_lock", || {
        let (t, took) = run(vec![
            Box::new(|t: &SlotTable| {
                increment(t);
                false
            }),
            Box::new(|t: &SlotTable| match t.try_lock(0) {
                Some(g) => {
                    increment_locked(&g);
                    true
                }
                None => {
                    increment(t);
                    false
                }
            }),
        ]);
        let g = t.try_lock(0).expect("the lock was left held");
        assert_eq!(
            (g.handle(), g.size()),
            (2, 2),
            "two holders at once (try_lock {})",
            if took[1] { "succeeded" } else { "failed" }
        );
    });
}

/// What one holder writes under the lock, the next holder reads, whether it takes the lock with
/// `lock` or with `try_lock`: the unlock is a Release and both lock paths Acquire. The handle and
/// the access time are separate atomics from the flags word, so only that ordering makes them
/// visible; the flag tells the reader which holder came first.
#[test]
fn unlock_publishes_what_was_written_under_the_lock() {
    for use_try_lock in [false, true] {
        model(
            if use_try_lock {
                "unlock_publishes (reader uses try_lock)"
            } else {
                "unlock_publishes (reader uses lock)"
            },
            move || {
                run::<()>(vec![
                    Box::new(|t: &SlotTable| {
                        let g = t.lock(0);
                        g.set_handle(42);
                        g.set_ac_time(7);
                        g.set_size(100);
                        g.set(Flag::Wb);
                    }),
                    Box::new(move |t: &SlotTable| {
                        let g = if use_try_lock { t.try_lock(0) } else { Some(t.lock(0)) };
                        if let Some(g) = g {
                            let seen = (g.handle(), g.ac_time(), g.size());
                            if g.test(Flag::Wb) {
                                assert_eq!(
                                    seen,
                                    (42, 7, 100),
                                    "the writer's fields were not visible"
                                );
                            } else {
                                assert_eq!(
                                    seen,
                                    (0, 0, 0),
                                    "fields visible before the writer's flag"
                                );
                            }
                        }
                    }),
                ]);
            },
        );
    }
}

/// The holder changes the flags word by load and store (set, clear, size, priority, reset)
/// while another thread tries the lock. The failed attempt must change nothing, the holder's
/// changes must all land, and `reset` must keep the lock held.
#[test]
fn flag_changes_under_the_lock_survive_a_racing_try_lock() {
    model("flag_changes_under_the_lock_survive_a_racing_try_lock", || {
        let (t, took) = run(vec![
            Box::new(|t: &SlotTable| {
                let g = t.lock(0);
                g.set(Flag::Same);
                g.set_handle(5);
                g.reset();
                assert!(g.test(Flag::EntryLock), "reset released the lock");
                g.set(Flag::Idle);
                g.set_size(100);
                g.clear(Flag::Idle);
                g.set(Flag::Huge);
                g.set_priority(2);
                false
            }),
            Box::new(|t: &SlotTable| match t.try_lock(0) {
                Some(g) => {
                    g.set(Flag::PpSlot);
                    true
                }
                None => false,
            }),
        ]);
        let g = t.try_lock(0).expect("the lock was left held");
        assert!(!g.test(Flag::Same) && g.handle() == 0, "the holder's reset was lost");
        assert_eq!(g.size(), 100);
        assert!(g.test(Flag::Huge) && !g.test(Flag::Idle) && g.priority() == 2);
        // The holder's reset clears PpSlot, so it survives only if try_lock came after.
        if !took[1] {
            assert!(!g.test(Flag::PpSlot), "a failed try_lock changed the flags");
        }
    });
}
