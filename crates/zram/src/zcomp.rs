//! Compression streams of one priority (drivers/block/zram/zcomp.c `struct zcomp`): a stream per
//! concurrent user, each with its own compressor state, a 2-page compression buffer and a 1-page
//! `local_copy` for objects the pool cannot hand out in place (`zcomp_strm_init()`).
//!
//! The kernel keeps one stream per CPU (`zcomp_cpu_up_prepare()`) and takes the current CPU's
//! with its mutex (`zcomp_stream_get()`), waiting if another task holds it. User space has
//! no stable CPU, so a `Zcomp` keeps one stream slot per available CPU and gives each thread a
//! home slot (round robin at its first use): a thread takes its home slot's mutex if it is free,
//! else any free slot. Uncontended, a get and its release are one lock and one unlock of a
//! mutex nobody else touches. When every slot is busy (more threads than CPUs, or one thread
//! holding two streams) the stream comes from an overflow list, built if the list is empty, so
//! taking a stream never waits and never deadlocks. Streams are built on first use, so a device
//! used by one thread holds one stream.
//!
//! Parameters can change while the streams run, as in 6.18, where `comp->params` points at
//! `zram->params[prio]` (`zcomp_init()`), every call passes it to the backend
//! (`zcomp_compress()`, `zcomp_decompress()`) and `algorithm_params` may rewrite it after
//! `disksize` (see
//! [`Zcomp::update_params`]). Each stream keeps an `Arc` of the parameters it was built with
//! and is rebuilt when it is next taken after a change, so a dictionary lives as long as any
//! stream built with it (the kernel `vfree`s the old dictionary under running streams).

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crossbeam_utils::CachePadded;
use zmem_comp::{Compressor, Params};

use crate::errno::{Errno, ZramError};

/// A stream's state.
#[derive(Debug)]
pub struct Stream {
    pub comp: Box<dyn Compressor>,
    /// Compression output, 2 pages as zram's.
    pub buffer: Vec<u8>,
    /// Where objects the pool cannot hand out in place are copied before decompression.
    pub local_copy: Vec<u8>,
    /// The parameters `comp` was built with. Held, never read: it keeps their dictionary
    /// alive for as long as the stream may use it, whatever `algorithm_params` does meanwhile.
    _params: Arc<Params>,
    /// The [`Zcomp::generation`] of `params`: a stream of an older one is rebuilt when taken.
    generation: u64,
}

/// All streams of one algorithm at one priority.
#[derive(Debug)]
pub struct Zcomp {
    name: String,
    /// The parameters of `disksize`, what every backend but lz4/lz4hc keeps using.
    init: Params,
    /// The parameters new and rebuilt streams take.
    current: Mutex<Arc<Params>>,
    /// Bumped (under `current`'s lock) at each change of `current`.
    generation: AtomicU64,
    page_size: usize,
    /// One stream per CPU, each on cache lines of its own: two writers take and release their
    /// streams' locks on every page, and side by side they would fight over one line.
    slots: Box<[CachePadded<Mutex<Option<Stream>>>]>,
    overflow: Mutex<Vec<Stream>>,
}

/// A stream taken from a [`Zcomp`]; given back when dropped.
pub struct StreamGuard<'a>(Taken<'a>);

enum Taken<'a> {
    /// A per-CPU slot, held by its mutex; the slot always holds a stream while taken.
    Slot(MutexGuard<'a, Option<Stream>>),
    /// From the overflow list; `Option` only so `drop` can move it back.
    Overflow(&'a Zcomp, Option<Stream>),
}

impl Deref for StreamGuard<'_> {
    type Target = Stream;
    fn deref(&self) -> &Stream {
        let s = match &self.0 {
            Taken::Slot(g) => g.as_ref(),
            Taken::Overflow(_, s) => s.as_ref(),
        };
        s.expect("a taken stream exists until it is given back")
    }
}

impl DerefMut for StreamGuard<'_> {
    fn deref_mut(&mut self) -> &mut Stream {
        let s = match &mut self.0 {
            Taken::Slot(g) => g.as_mut(),
            Taken::Overflow(_, s) => s.as_mut(),
        };
        s.expect("a taken stream exists until it is given back")
    }
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        if let Taken::Overflow(z, s) = &mut self.0
            && let Some(s) = s.take()
        {
            z.overflow.lock().unwrap_or_else(|p| p.into_inner()).push(s);
        }
    }
}

/// Hands each thread its home slot index, round robin.
static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static HOME: Cell<Option<usize>> = const { Cell::new(None) };
}

fn home() -> usize {
    HOME.with(|h| match h.get() {
        Some(i) => i,
        None => {
            let i = NEXT_HOME.fetch_add(1, Ordering::Relaxed);
            h.set(Some(i));
            i
        }
    })
}

impl Zcomp {
    /// Builds the first stream now, so a bad algorithm or parameter fails at `disksize` time as
    /// in the kernel (zcomp.c `zcomp_create()`: `setup_params()`, then every CPU's stream), not
    /// on the first write.
    pub fn new(name: &str, params: &Params, page_size: usize) -> Result<Self, ZramError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let z = Self {
            name: name.to_string(),
            init: params.clone(),
            current: Mutex::new(Arc::new(params.clone())),
            generation: AtomicU64::new(0),
            page_size,
            slots: (0..cpus).map(|_| CachePadded::new(Mutex::new(None))).collect(),
            overflow: Mutex::new(Vec::new()),
        };
        let first = z.new_stream()?;
        *z.slots[home() % cpus].lock().unwrap_or_else(|p| p.into_inner()) = Some(first);
        Ok(z)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameters streams compress with now (before the backend drops what it ignores).
    pub fn params(&self) -> Arc<Params> {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `algorithm_params` written after `disksize`: 6.18's `comp_params_store` rewrites
    /// `zram->params[prio]`, which the running streams read through their pointer. What that
    /// changes depends on when each backend reads it:
    ///
    /// - lz4 and lz4hc read `params->level` on every call (backend_lz4.c `lz4_compress()`,
    ///   backend_lz4hc.c `lz4hc_compress()`): the new level (unset: the default) applies from
    ///   the next write on;
    /// - zstd built its compression parameters and C/D dictionaries in backend_zstd.c
    ///   `zstd_setup_params()` at `disksize`, deflate its level and window in each stream's
    ///   backend_deflate.c `deflate_create()`: they keep the parameters of `disksize`, as do
    ///   lzo, lzo-rle and 842, which take none.
    ///
    /// The dictionary stays the one of `disksize` for every backend. This is a deliberate
    /// departure (ARCHITECTURE.md, "Which kernel zmem follows"): 6.18's `comp_params_reset()`
    /// `vfree`s it while streams still use it. zstd's C/D dictionaries reference it (a
    /// use-after-free); lz4/lz4hc streams built with a dictionary reload `params->dict` on
    /// every compress and decompress, so they switch to the new dictionary (or none) and the
    /// pages written before no longer decompress. Here the old parameters live on in an `Arc`
    /// for as long as a stream holds them.
    pub fn update_params(&self, params: &Params) {
        if !matches!(self.name.as_str(), "lz4" | "lz4hc") {
            return;
        }
        let next = Params { level: params.level, ..self.init.clone() };
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if **current == next {
            return;
        }
        *current = Arc::new(next);
        self.generation.fetch_add(1, Ordering::Release);
    }

    fn new_stream(&self) -> Result<Stream, ZramError> {
        let (params, generation) = {
            let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
            (current.clone(), self.generation.load(Ordering::Acquire))
        };
        // As 6.18's backends (each `setup_params()`/`create_ctx()`): parameters they do not
        // use are ignored, not refused.
        let comp = zmem_comp::create_as_backend(&self.name, &params, self.page_size)
            .map_err(|e| ZramError::new(Errno::EINVAL, e.to_string()))?;
        Ok(Stream {
            comp,
            buffer: vec![0; 2 * self.page_size],
            local_copy: vec![0; self.page_size],
            _params: params,
            generation,
        })
    }

    /// Rebuilds `stream` if the parameters changed since it was built. One atomic load when
    /// they did not.
    fn refresh(&self, stream: &mut Stream) -> Result<(), ZramError> {
        if stream.generation != self.generation.load(Ordering::Acquire) {
            *stream = self.new_stream()?;
        }
        Ok(())
    }

    /// Takes a stream: the thread's home slot, else any free slot, else one from the overflow
    /// list. Builds the stream on a slot's (or the list's) first need.
    pub fn get(&self) -> Result<StreamGuard<'_>, ZramError> {
        let n = self.slots.len();
        let start = home() % n;
        for k in 0..n {
            let mut g = match self.slots[(start + k) % n].try_lock() {
                Ok(g) => g,
                // A panic while a stream was held leaves the stream usable: every use starts
                // from a fresh input.
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => continue,
            };
            match g.as_mut() {
                Some(s) => self.refresh(s)?,
                None => *g = Some(self.new_stream()?),
            }
            return Ok(StreamGuard(Taken::Slot(g)));
        }
        let cached = self.overflow.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let s = match cached {
            Some(mut s) => {
                self.refresh(&mut s)?;
                s
            }
            None => self.new_stream()?,
        };
        Ok(StreamGuard(Taken::Overflow(self, Some(s))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_users_get_distinct_streams_and_released_ones_are_reused() {
        let z = Zcomp::new("lz4", &Params::default(), 4096).unwrap();
        // One thread holding more streams than there are slots never waits: every stream it
        // holds at once is a different one.
        let held: Vec<StreamGuard<'_>> = (0..z.slots.len() + 2).map(|_| z.get().unwrap()).collect();
        let addrs: Vec<*const Stream> = held.iter().map(|g| &**g as *const Stream).collect();
        for (i, a) in addrs.iter().enumerate() {
            assert!(addrs[i + 1..].iter().all(|b| !std::ptr::eq(*a, *b)), "stream {i} shared");
        }
        drop(held);
        // Given back, not dropped: taking them again builds nothing new.
        let again: Vec<StreamGuard<'_>> =
            (0..z.slots.len() + 2).map(|_| z.get().unwrap()).collect();
        for g in &again {
            assert!(addrs.iter().any(|a| std::ptr::eq(*a, &**g)), "a new stream was built");
        }
        assert_eq!(z.overflow.lock().unwrap().len(), 0);
        drop(again);
        assert_eq!(z.overflow.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_bad_algorithm_fails_at_construction() {
        let e = Zcomp::new("no-such-algo", &Params::default(), 4096).unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
    }
}
