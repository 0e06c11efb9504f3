//! A program started inside a [`MemCgroup`]: it enters the cgroup in the forked child before
//! `exec`, so every page it ever allocates is charged there. Freezing is SIGSTOP; dropping it
//! sends SIGCONT then SIGKILL and waits.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::{MemCgroup, setup};
use crate::KernelError;

/// A child process this guard spawned into a cgroup; killed when dropped.
#[derive(Debug)]
pub struct CgroupChild {
    child: Child,
    frozen: bool,
}

impl CgroupChild {
    /// Spawns `cmd` with its process moved into `cgroup` before `exec`.
    pub fn spawn(mut cmd: Command, cgroup: &MemCgroup) -> Result<Self, KernelError> {
        let procs_path = cgroup.path().join("cgroup.procs");
        // Opened here, written in the child: std opens it close-on-exec, so it is inherited by
        // the fork and closed by the exec.
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(&procs_path)
            .map_err(|e| setup(procs_path.display(), e))?;
        let fd = procs.as_raw_fd();
        // SAFETY: the hook runs in the forked child before exec, where only async-signal-safe
        // work is allowed: it makes one write(2) from a static buffer and allocates nothing
        // (`last_os_error` reads errno into an integer). `fd` stays open in the parent until
        // spawn returns, so it is valid in the child.
        unsafe {
            cmd.pre_exec(move || {
                // "0" moves the writing process itself (cgroup v1 and v2).
                // SAFETY: `fd` is an open descriptor and the buffer is 2 valid bytes.
                let n = libc::write(fd, b"0\n".as_ptr().cast(), 2);
                if n == 2 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
            });
        }
        let child = cmd.spawn().map_err(|e| setup(format!("spawn {cmd:?} in its cgroup"), e))?;
        drop(procs);
        Ok(Self { child, frozen: false })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The standard library's handle (its pipes, `try_wait`).
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Whether it has exited (and how), without waiting.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, KernelError> {
        self.child.try_wait().map_err(|e| setup("wait", e))
    }

    fn signal(&self, sig: libc::c_int) -> Result<(), KernelError> {
        let pid = libc::pid_t::try_from(self.pid()).expect("pids fit pid_t");
        // SAFETY: kill has no memory-safety preconditions; the pid is our unreaped child, so it
        // cannot have been reused.
        if unsafe { libc::kill(pid, sig) } != 0 {
            return Err(setup(format!("kill -{sig} {pid}"), std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Stops it (SIGSTOP) and waits until the kernel reports it stopped (state `T` in
    /// /proc/PID/stat), so that nothing it does changes memory after this returns.
    pub fn freeze(&mut self) -> Result<(), KernelError> {
        self.signal(libc::SIGSTOP)?;
        self.frozen = true;
        let stat = format!("/proc/{}/stat", self.pid());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut s = String::new();
            let state = std::fs::File::open(&stat)
                .and_then(|mut f| f.read_to_string(&mut s))
                .ok()
                .and_then(|_| s.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()));
            match state {
                Some('T') => return Ok(()),
                Some('Z') | None => {
                    return Err(KernelError::Setup(format!("process {} exited", self.pid())));
                }
                _ if Instant::now() > deadline => {
                    return Err(KernelError::Setup(format!(
                        "process {} did not stop within 5 s",
                        self.pid()
                    )));
                }
                _ => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }

    /// Lets it run again (SIGCONT).
    pub fn thaw(&mut self) -> Result<(), KernelError> {
        self.signal(libc::SIGCONT)?;
        self.frozen = false;
        Ok(())
    }
}

impl Drop for CgroupChild {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        if self.frozen {
            let _ = self.signal(libc::SIGCONT);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
