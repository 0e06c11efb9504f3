//! A trace's accesses as a replay takes them: a page index wide enough for any page set, and a
//! write flag, in time order. The replay (zmem-sim) and the kernel's player (zmem-kernel) both
//! run these, so the type lives with the traces it is made from.

/// One access of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Page id: an index into the page set.
    pub page: u64,
    pub write: bool,
    /// Nanoseconds since the trace start.
    pub time_ns: u64,
}

impl From<&crate::trace::Access> for Access {
    fn from(a: &crate::trace::Access) -> Self {
        Self { page: u64::from(a.page), write: a.op == crate::trace::Op::Write, time_ns: a.time_ns }
    }
}

/// The accesses of a trace (file or generated) as the replay takes them.
pub fn accesses(trace: &crate::trace::Trace) -> Vec<Access> {
    trace.accesses.iter().map(Access::from).collect()
}
