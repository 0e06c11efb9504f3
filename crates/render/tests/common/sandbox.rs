//! The scripts' sandbox: a scratch directory with stub commands first on PATH, `ZMEM_SYSFS` and
//! `ZMEM_PROCFS` pointing at a fake /sys and /proc, a root and a state directory.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("zmem-scripts-{}-{tag}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Commands that change the machine, stubbed: each logs its name and arguments to
/// `$SANDBOX_LOG` and succeeds (`id` says root; `systemd-escape` gives a fixed unit name;
/// `swapon -p PRIO PATH` and `swapoff PATH` edit the fake /proc/swaps).
pub const STUBS: [&str; 9] =
    ["mkswap", "modprobe", "systemctl", "udevadm", "mknod", "fallocate", "dd", "chmod", "ln"];

/// The fake swapon: `swapon -p PRIO PATH` adds PATH to the fake /proc/swaps.
const SWAPON: &str = r#"[ "$1" = -p ] && echo "$3 file 65536 0 $2" >> "$ZMEM_PROCFS/swaps""#;
/// The fake swapoff: `swapoff PATH` takes PATH out of it.
const SWAPOFF: &str = r#"awk -v f="$1" '$1 != f' "$ZMEM_PROCFS/swaps" > "$ZMEM_PROCFS/swaps.new"
mv "$ZMEM_PROCFS/swaps.new" "$ZMEM_PROCFS/swaps""#;

/// A fake machine: stub commands, a fake /sys and /proc, a root and a state directory.
pub struct Sandbox {
    pub dir: Scratch,
}

impl Sandbox {
    pub fn new(tag: &str) -> Self {
        let sb = Self { dir: Scratch::new(tag) };
        let bin = sb.path("bin");
        fs::create_dir_all(&bin).unwrap();
        for name in STUBS {
            stub(&bin, name, "");
        }
        stub(&bin, "id", "echo 0");
        stub(&bin, "swapon", SWAPON);
        stub(&bin, "swapoff", SWAPOFF);
        stub(&bin, "systemd-escape", "echo zmem-test.swap");
        sb.zram_device(0, "lzo [lzo-rle] lz4 lz4hc zstd deflate 842", "0");
        sb.put("sys/class/zram-control/hot_add", "1\n");
        for (k, v) in [
            ("enabled", "Y"),
            ("compressor", "lz4"),
            ("max_pool_percent", "20"),
            ("accept_threshold_percent", "90"),
            ("shrinker_enabled", "N"),
        ] {
            sb.put(&format!("sys/module/zswap/parameters/{k}"), &format!("{v}\n"));
        }
        sb.put("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        sb.put("proc/mounts", "/dev/vda1 / ext4 rw 0 0\n");
        sb.put("proc/meminfo", "MemTotal:        4000000 kB\n");
        sb.put("proc/crypto", "name         : lzo\ndriver       : lzo-generic\n");
        sb
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.0.join(rel)
    }

    pub fn put(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    pub fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    pub fn zram_device(&self, id: u32, algos: &str, disksize: &str) {
        let d = format!("sys/block/zram{id}");
        for (a, v) in [
            ("comp_algorithm", format!("{algos}\n")),
            ("disksize", format!("{disksize}\n")),
            ("reset", String::new()),
            ("recomp_algorithm", String::new()),
            ("algorithm_params", String::new()),
            ("recompress", String::new()),
            ("dev", format!("252:{id}\n")),
        ] {
            self.put(&format!("{d}/{a}"), &v);
        }
    }

    /// The stubs' calls so far.
    pub fn calls(&self) -> String {
        fs::read_to_string(self.path("calls")).unwrap_or_default()
    }

    /// Runs `script` (written as `name` in the sandbox) with `args`.
    pub fn run(&self, name: &str, script: &str, args: &[&str]) -> Output {
        self.run_with(name, script, args, &[])
    }

    /// The same with more environment variables.
    pub fn run_with(
        &self,
        name: &str,
        script: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        let path = self.path(name);
        fs::write(&path, script).unwrap();
        self.run_file_with(&path, args, env)
    }

    pub fn run_file(&self, path: &Path, args: &[&str]) -> Output {
        self.run_file_with(path, args, &[])
    }

    fn run_file_with(&self, path: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let path_env = format!("{}:{}", self.path("bin").display(), std::env::var("PATH").unwrap());
        Command::new("sh")
            .arg(path)
            .args(args)
            .current_dir(&self.dir.0)
            .envs(env.iter().copied())
            .env("PATH", path_env)
            .env("SANDBOX_LOG", self.path("calls"))
            .env("ZMEM_SYSFS", self.path("sys"))
            .env("ZMEM_PROCFS", self.path("proc"))
            .env("ZMEM_ROOT", self.path("root"))
            .env("ZMEM_STATE", self.path("state"))
            .env("ZMEM_SWAPFILE", self.path("swapfile"))
            .env_remove("ZMEM_ZRAM_DEVICE")
            .output()
            .expect("sh")
    }
}

pub fn stub(bin: &Path, name: &str, body: &str) {
    let p = bin.join(name);
    fs::write(&p, format!("#!/bin/sh\necho \"{name} $*\" >> \"$SANDBOX_LOG\"\n{body}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
