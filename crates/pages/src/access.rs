//! A trace's accesses as a replay takes them: a page index wide enough for any page set, a
//! write flag and a file flag, in time order. The replay (zmem-sim) and the kernel's player (zmem-kernel) both
//! run these, so the type lives with the traces it is made from.

/// One access of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Page id: an index into the page set, or into the trace's file for a file read.
    pub page: u64,
    pub write: bool,
    /// A read of a file page (page cache; `write` is false), not an anonymous page.
    pub file: bool,
    /// Nanoseconds since the trace start.
    pub time_ns: u64,
}

impl From<&crate::trace::Access> for Access {
    fn from(a: &crate::trace::Access) -> Self {
        use crate::trace::Op;
        Self {
            page: u64::from(a.page),
            write: a.op == Op::Write,
            file: a.op == Op::FileRead,
            time_ns: a.time_ns,
        }
    }
}

/// The accesses of a trace (file or generated) as the replay takes them.
pub fn accesses(trace: &crate::trace::Trace) -> Vec<Access> {
    trace.accesses.iter().map(Access::from).collect()
}

/// Pages of the file the trace's file reads need: its highest file page id plus one (0 for a
/// trace without file reads).
pub fn file_pages(trace: &[Access]) -> u64 {
    trace.iter().filter(|a| a.file).map(|a| a.page + 1).max().unwrap_or(0)
}

/// A trace file that could not be read: "reading the trace", with the reader's error (which
/// names the file) as its source. Both front doors print it so (`zmem: reading the trace:
/// ...`; Python's exception the same words, its class by [`ReadTraceError::cause`]).
#[derive(Debug, thiserror::Error)]
#[error("reading the trace")]
pub struct ReadTraceError(#[source] pub crate::PagesError);

impl ReadTraceError {
    /// The reader's error.
    pub fn cause(&self) -> &crate::PagesError {
        &self.0
    }
}

/// Reads a trace file as the accesses a replay takes: the one loader of both front doors.
pub fn load_trace(path: &std::path::Path) -> Result<Vec<Access>, ReadTraceError> {
    let t = crate::trace::Trace::open(path).map_err(ReadTraceError)?;
    Ok(accesses(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_trace_is_read_with_its_name_as_the_cause() {
        let path = std::path::Path::new("/nonexistent/zmem/access.trace");
        let e = load_trace(path).unwrap_err();
        assert_eq!(e.to_string(), "reading the trace");
        let cause = std::error::Error::source(&e).map(|c| c.to_string()).unwrap_or_default();
        assert!(cause.contains("/nonexistent/zmem/access.trace"), "{cause}");
    }
}
