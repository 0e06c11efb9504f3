//! Compression streams of one priority (the kernel's `zcomp`): a stream per concurrent user,
//! each with its own compressor state, a 2-page compression buffer and a 1-page `local_copy`
//! for objects the pool cannot hand out in place.
//!
//! The kernel keeps one stream per CPU and takes it with the CPU's stream mutex. User space has
//! no stable CPU, so a `Zcomp` keeps one stream slot per available CPU and gives each thread a
//! home slot (round robin at its first use): a thread takes its home slot's mutex if it is free,
//! else any free slot. Uncontended, a get and its release are one lock and one unlock of a
//! mutex nobody else touches. When every slot is busy (more threads than CPUs, or one thread
//! holding two streams) the stream comes from an overflow list, built if the list is empty, so
//! taking a stream never waits and never deadlocks. Streams are built on first use, so a device
//! used by one thread holds one stream.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

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
}

/// All streams of one algorithm at one priority.
#[derive(Debug)]
pub struct Zcomp {
    name: String,
    params: Params,
    page_size: usize,
    slots: Box<[Mutex<Option<Stream>>]>,
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
    /// in the kernel, not on the first write.
    pub fn new(name: &str, params: &Params, page_size: usize) -> Result<Self, ZramError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let z = Self {
            name: name.to_string(),
            params: params.clone(),
            page_size,
            slots: (0..cpus).map(|_| Mutex::new(None)).collect(),
            overflow: Mutex::new(Vec::new()),
        };
        let first = z.new_stream()?;
        *z.slots[home() % cpus].lock().unwrap_or_else(|p| p.into_inner()) = Some(first);
        Ok(z)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameters the streams were built with (before the backend drops what it ignores).
    pub fn params(&self) -> &Params {
        &self.params
    }

    fn new_stream(&self) -> Result<Stream, ZramError> {
        // As 6.18's backends: parameters they do not use are ignored, not refused.
        let comp = zmem_comp::create_as_backend(&self.name, &self.params, self.page_size)
            .map_err(|e| ZramError::new(Errno::EINVAL, e.to_string()))?;
        Ok(Stream {
            comp,
            buffer: vec![0; 2 * self.page_size],
            local_copy: vec![0; self.page_size],
        })
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
            if g.is_none() {
                *g = Some(self.new_stream()?);
            }
            return Ok(StreamGuard(Taken::Slot(g)));
        }
        let cached = self.overflow.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let s = match cached {
            Some(s) => s,
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
