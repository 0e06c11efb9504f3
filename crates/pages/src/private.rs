//! Keeping the memory zmem reads to itself. A process that has read other processes' pages
//! (their `/proc/PID/mem`, a zram swap device) holds copies of them: it must not leave them in a
//! core dump, and no other process of the same user may attach to it or read its
//! `/proc/self/mem`.
//!
//! `PR_SET_DUMPABLE` 0 does both (kernel/sys.c `prctl_set_dumpable()`; fs/coredump.c skips a
//! process with `!__get_dumpable()`; kernel/ptrace.c `__ptrace_may_access()` refuses
//! `PTRACE_MODE_*` access to a non-dumpable process without CAP_SYS_PTRACE, which guards
//! `/proc/PID/mem`). It lasts until `execve`, which resets it: a program zmem starts is its own.

use std::sync::OnceLock;

/// Marks this process not dumpable, once, before the first read of another process's memory.
/// Every reader of page contents calls it: page files ([`crate::PageReader`], mapped sets),
/// [`crate::PageSetBuilder`] (captures), the exporter's samplers. `Err` is the OS error of
/// `prctl`; callers fail rather than read memory they could leak.
pub fn hold_captured_memory() -> Result<(), std::io::Error> {
    static DONE: OnceLock<Result<(), i32>> = OnceLock::new();
    let done = DONE.get_or_init(|| {
        // SAFETY: prctl(PR_SET_DUMPABLE, 0) takes integer arguments only and changes only this
        // process's dumpable flag; no memory is passed.
        let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    });
    done.map_err(std::io::Error::from_raw_os_error)
}

/// [`hold_captured_memory`] as a page-set error.
pub(crate) fn hold() -> Result<(), crate::PagesError> {
    hold_captured_memory().map_err(|e| crate::PagesError::io("prctl(PR_SET_DUMPABLE)", e))
}

/// Whether this process is dumpable now (`PR_GET_DUMPABLE`).
pub fn dumpable() -> bool {
    // SAFETY: PR_GET_DUMPABLE reads this process's flag and takes no pointers.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After the call the process is not dumpable; a second call is a no-op that still succeeds.
    #[test]
    fn marks_the_process_not_dumpable() {
        hold_captured_memory().unwrap();
        assert!(!dumpable());
        hold_captured_memory().unwrap();
        assert!(!dumpable());
    }
}
