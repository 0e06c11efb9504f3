//! CPU time of the calling thread (user + system), for experiments that run on one thread.

/// User + system CPU seconds the calling thread has used, or `None` if the system refuses.
pub fn thread_cpu_secs() -> Option<f64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` points to writable memory of the size of `struct rusage`; getrusage only
    // writes into it, and we read it only after a 0 return (which means it was filled).
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: getrusage returned 0, so it initialised the whole struct (it was also zeroed).
    let ru = unsafe { ru.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(ru.ru_utime) + secs(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_is_available_and_never_goes_back() {
        let a = super::thread_cpu_secs().expect("getrusage(RUSAGE_THREAD)");
        let b = super::thread_cpu_secs().expect("getrusage(RUSAGE_THREAD)");
        assert!(a >= 0.0 && b >= a, "{a} then {b}");
    }
}
