//! Compression streams of one priority (the kernel's `zcomp`): a stream per concurrent user,
//! each with its own compressor state, a 2-page compression buffer and a 1-page `local_copy`
//! for reading objects out of the pool.
//!
//! The kernel keeps one stream per CPU; user space has no stable CPU to pin to, so streams live
//! in a small free list: a thread takes one, uses it, and gives it back. The list never holds
//! more streams than threads that ever ran at once, and taking one is a short mutex hold.

use std::sync::Mutex;

use zmem_comp::{Compressor, Params};

use crate::errno::{Errno, ZramError};

/// A stream's state.
#[derive(Debug)]
pub struct Stream {
    pub comp: Box<dyn Compressor>,
    /// Compression output, 2 pages as zram's.
    pub buffer: Vec<u8>,
    /// Where objects are copied out of the pool before decompression.
    pub local_copy: Vec<u8>,
}

/// All streams of one algorithm at one priority.
#[derive(Debug)]
pub struct Zcomp {
    name: String,
    params: Params,
    page_size: usize,
    free: Mutex<Vec<Stream>>,
}

impl Zcomp {
    /// Builds the first stream now, so a bad algorithm or parameter fails at `disksize` time as
    /// in the kernel, not on the first write.
    pub fn new(name: &str, params: &Params, page_size: usize) -> Result<Self, ZramError> {
        let z = Self {
            name: name.to_string(),
            params: params.clone(),
            page_size,
            free: Mutex::new(Vec::new()),
        };
        let first = z.new_stream()?;
        z.put(first);
        Ok(z)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn new_stream(&self) -> Result<Stream, ZramError> {
        let comp = zmem_comp::create(&self.name, &self.params, self.page_size)
            .map_err(|e| ZramError::new(Errno::EINVAL, e.to_string()))?;
        Ok(Stream {
            comp,
            buffer: vec![0; 2 * self.page_size],
            local_copy: vec![0; self.page_size],
        })
    }

    /// Takes a stream (building one if every stream is in use).
    pub fn get(&self) -> Result<Stream, ZramError> {
        let cached = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match cached {
            Some(s) => Ok(s),
            None => self.new_stream(),
        }
    }

    /// Gives a stream back.
    pub fn put(&self, s: Stream) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    }
}
