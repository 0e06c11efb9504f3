use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::sync::Mutex;

use super::*;

/// The umask is the process's: tests that set it take turns.
static UMASK: Mutex<()> = Mutex::new(());

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

fn is_root() -> bool {
    check::euid() == 0
}

/// Gives `p` to nobody (65534), without following a link.
fn give_to_nobody(p: &Path) {
    std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

#[test]
fn modes_are_the_kinds_whatever_the_umask() {
    let _turn = UMASK.lock().unwrap_or_else(|p| p.into_inner());
    let d = tempfile::tempdir().unwrap();
    // SAFETY: umask has no preconditions; the old mask is put back below.
    let old = unsafe { libc::umask(0o022) };
    write(&d.path().join("p"), Kind::Private, b"pages").unwrap();
    write(&d.path().join("s.sh"), Kind::Script, b"true").unwrap();
    // SAFETY: as above.
    unsafe { libc::umask(0o077) };
    write(&d.path().join("r.html"), Kind::Shared, b"report").unwrap();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    assert_eq!(mode(&d.path().join("p")), 0o600);
    assert_eq!(mode(&d.path().join("s.sh")), 0o700);
    assert_eq!(mode(&d.path().join("r.html")), 0o644);
    assert_eq!(fs::read(d.path().join("p")).unwrap(), b"pages");
}

#[test]
fn an_existing_file_of_ours_is_replaced_with_the_new_mode() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("out");
    fs::write(&p, "old contents, longer than the new").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).unwrap();
    let before = fs::metadata(&p).unwrap().ino();
    write(&p, Kind::Private, b"new").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"new");
    assert_eq!(mode(&p), 0o600);
    assert_ne!(fs::metadata(&p).unwrap().ino(), before, "a new file, not the old one rewritten");
}

#[test]
fn a_planted_symlink_is_refused_and_its_target_untouched() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    fs::write(&victim, "root's file").unwrap();
    let link = d.path().join("out");
    symlink(&victim, &link).unwrap();
    let e = write(&link, Kind::Private, b"secret pages").unwrap_err();
    assert_eq!(e.path(), link);
    let msg = e.to_string();
    assert!(msg.contains("symbolic link") && !msg.contains('\n'), "{msg}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "root's file");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    // A dangling link (to where the attacker would read) is refused as well.
    let dangling = d.path().join("dangling");
    symlink(d.path().join("not-yet"), &dangling).unwrap();
    assert!(write(&dangling, Kind::Private, b"x").is_err());
    assert!(!d.path().join("not-yet").exists());
    assert_eq!(names(d.path()), ["dangling", "out", "victim"], "no temporary left");
}

#[test]
fn another_users_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = if is_root() {
        let p = d.path().join("planted");
        fs::write(&p, "nobody's").unwrap();
        give_to_nobody(&p);
        p
    } else {
        // Not root: a file root owns is another user's.
        Path::new("/etc/passwd").to_path_buf()
    };
    let before = fs::read(&p).unwrap();
    let e = write(&p, Kind::Private, b"secret pages").unwrap_err();
    assert!(e.to_string().contains("belongs to uid"), "{e}");
    assert_eq!(fs::read(&p).unwrap(), before);
}

#[test]
fn what_is_not_a_regular_file_is_refused() {
    let e = write(Path::new("/dev/null"), Kind::Private, b"x").unwrap_err();
    assert!(e.to_string().contains("a device"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let e = write(d.path(), Kind::Private, b"x").unwrap_err();
    assert!(e.to_string().contains("a directory"), "{e}");
}

#[test]
fn a_directory_others_may_write_needs_the_sticky_bit() {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let e = write(&d.path().join("out"), Kind::Private, b"x").unwrap_err();
    assert!(e.to_string().contains("sticky"), "{e}");
    assert_eq!(e.path(), d.path().join("out"));
    assert!(e.to_string().contains(&format!(": directory {}: ", d.path().display())), "{e}");
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    write(&d.path().join("out"), Kind::Private, b"x").unwrap();
}

#[test]
fn a_file_dropped_without_commit_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("out");
    let mut f = create(&p, Kind::Private).unwrap();
    f.write_all(b"half").unwrap();
    assert_eq!(names(d.path()).len(), 1, "the temporary is in the target's directory");
    assert!(names(d.path())[0].starts_with(".out."));
    drop(f);
    assert!(names(d.path()).is_empty());
    fs::write(&p, "old").unwrap();
    let mut f = create(&p, Kind::Private).unwrap();
    f.write_all(b"new").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "old", "the target changes only on commit");
    drop(f);
    assert_eq!(fs::read_to_string(&p).unwrap(), "old");
    assert_eq!(names(d.path()), ["out"]);
}

#[test]
fn a_link_planted_while_writing_is_refused_at_commit() {
    let d = tempfile::tempdir().unwrap();
    let (p, victim) = (d.path().join("out"), d.path().join("victim"));
    fs::write(&victim, "kept").unwrap();
    let mut f = create(&p, Kind::Private).unwrap();
    f.write_all(b"pages").unwrap();
    symlink(&victim, &p).unwrap();
    assert!(f.commit().unwrap_err().to_string().contains("symbolic link"));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "kept");
    assert_eq!(names(d.path()), ["out", "victim"]);
}

#[test]
fn output_directories_are_made_or_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("a/report");
    ensure_dir(&out, Kind::Shared).unwrap();
    assert_eq!(mode(&out) & 0o7000, 0);
    ensure_dir(&out, Kind::Shared).unwrap();
    let link = d.path().join("link");
    symlink(&out, &link).unwrap();
    assert!(ensure_dir(&link, Kind::Shared).unwrap_err().to_string().contains("symbolic link"));
    fs::write(d.path().join("file"), "").unwrap();
    assert!(ensure_dir(&d.path().join("file"), Kind::Shared).is_err());
    if is_root() {
        let theirs = d.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        give_to_nobody(&theirs);
        let e = ensure_dir(&theirs, Kind::Shared).unwrap_err();
        assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
    }
}

#[test]
fn a_private_temp_dir_is_0700_with_0600_files_and_goes_on_drop() {
    let _turn = UMASK.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    // SAFETY: umask has no preconditions; the old mask is put back below.
    let old = unsafe { libc::umask(0o022) };
    let t = PrivateTempDir::new_in(root.path(), "zmem-test").unwrap();
    let (_, a) = t.create_file("a").unwrap();
    let b = t.write_file("b", b"dictionary").unwrap();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    assert_eq!(mode(t.path()), 0o700);
    assert_eq!((mode(&a), mode(&b)), (0o600, 0o600));
    let name = t.path().file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.starts_with(&format!("zmem-test-{}.", std::process::id())), "{name}");
    assert!(t.create_file("a").is_err(), "never an existing file");
    drop(t);
    assert!(names(root.path()).is_empty());
}

#[test]
fn sweep_removes_dead_runs_dirs_only() {
    let root = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let start = temp_dir::own_start_time();
    let make = |name: String| {
        let p = root.path().join(name);
        fs::create_dir(&p).unwrap();
        fs::write(p.join("pages"), "x").unwrap();
        p
    };
    let gone = make(temp_dir::name_for(dead, 1));
    let reused = make(temp_dir::name_for(me, start + 1));
    let live = make(temp_dir::name_for(me, start));
    let other = make("zmem-live.lock.d".into());
    let link = root.path().join(temp_dir::name_for(dead, 2));
    symlink(&live, &link).unwrap();
    let theirs = is_root().then(|| {
        let p = make(temp_dir::name_for(dead, 3));
        give_to_nobody(&p);
        p
    });
    let n = sweep(root.path());
    assert_eq!(n, 2);
    assert!(!gone.exists() && !reused.exists());
    assert!(live.join("pages").exists() && other.exists());
    assert!(fs::symlink_metadata(&link).is_ok(), "a link is not swept (nor followed)");
    if let Some(p) = theirs {
        assert!(p.exists(), "another user's directory is left");
    }
}

/// The child: a temporary directory under its `$TMPDIR` and an uncommitted `out` there,
/// announced, then a long sleep.
fn hold_a_temp_dir() {
    let t = PrivateTempDir::new("zmem-held").unwrap();
    let mut f = create(&std::env::temp_dir().join("out"), Kind::Private).unwrap();
    f.write_all(b"half a page set").unwrap();
    zmem_testkit::say_ready(t.path().display());
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// Starts the child in `root`, returns it and its directory.
fn start_holder(root: &Path) -> (std::process::Child, std::path::PathBuf) {
    let mut c = zmem_testkit::reexec("hold", "").env("TMPDIR", root).spawn().unwrap();
    let ready = zmem_testkit::Ready::watch(c.stdout.take().unwrap());
    let dir = ready.wait(std::time::Duration::from_secs(30)).unwrap();
    let dir = std::path::PathBuf::from(dir);
    assert!(dir.is_dir() && dir.starts_with(root));
    (c, dir)
}

#[test]
fn sigint_and_sigterm_remove_the_dirs_and_sigkill_leftovers_are_swept() {
    zmem_testkit::child("hold", |_| hold_a_temp_dir());
    use std::os::unix::process::ExitStatusExt;
    let root = tempfile::tempdir().unwrap();
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let (mut c, _) = start_holder(root.path());
        // SAFETY: kill to our own child, which is alive until waited for.
        assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
        let status = c.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "ends as the signal would: {status:?}");
        assert!(names(root.path()).is_empty(), "signal {sig} left {:?}", names(root.path()));
    }
    let (mut c, dir) = start_holder(root.path());
    c.kill().unwrap();
    c.wait().unwrap();
    assert!(dir.exists(), "SIGKILL runs no code");
    assert_eq!(names(root.path()).len(), 2, "the directory and out's temporary");
    let next = PrivateTempDir::new_in(root.path(), "zmem-next").unwrap();
    assert!(!dir.exists(), "the next run sweeps it");
    drop(next);
    // The next write of `out` sweeps the killed run's temporary beside it.
    write(&root.path().join("out"), Kind::Private, b"pages").unwrap();
    assert_eq!(names(root.path()), ["out"]);
}

#[test]
fn a_live_writers_temporary_is_not_swept() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("out");
    let mut first = create(&p, Kind::Private).unwrap();
    first.write_all(b"first").unwrap();
    write(&p, Kind::Private, b"second").unwrap();
    first.commit().unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"first", "the first writer's temporary was kept");
}

/// `root/real` and `root/other`, two directories, and `root/mid`, a link to `real`.
fn two_dirs_and_a_link(
    root: &Path,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let (real, other, mid) = (root.join("real"), root.join("other"), root.join("mid"));
    fs::create_dir(&real).unwrap();
    fs::create_dir(&other).unwrap();
    symlink(&real, &mid).unwrap();
    (real, other, mid)
}

#[test]
fn a_link_on_the_path_swapped_before_commit_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (real, other, mid) = two_dirs_and_a_link(d.path());
    let mut f = create(&mid.join("out"), Kind::Private).unwrap();
    f.write_all(b"pages").unwrap();
    // The link on the path now points elsewhere: the commit lands where `create` opened.
    fs::remove_file(&mid).unwrap();
    symlink(&other, &mid).unwrap();
    f.commit().unwrap();
    assert_eq!(fs::read(real.join("out")).unwrap(), b"pages");
    assert!(names(&other).is_empty(), "nothing in the swapped-in directory");
    assert_eq!(names(&real), ["out"]);
}

#[test]
fn a_directory_replaced_by_a_link_before_commit_or_drop_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (_, other, _) = two_dirs_and_a_link(d.path());
    let (dir, moved) = (d.path().join("dir"), d.path().join("moved"));
    for commit in [true, false] {
        fs::create_dir(&dir).unwrap();
        let mut f = create(&dir.join("out"), Kind::Private).unwrap();
        f.write_all(b"pages").unwrap();
        fs::rename(&dir, &moved).unwrap();
        symlink(&other, &dir).unwrap();
        if commit {
            f.commit().unwrap();
            assert_eq!(names(&moved), ["out"]);
        } else {
            drop(f);
            assert!(names(&moved).is_empty(), "the temporary removed where it was made");
        }
        assert!(names(&other).is_empty(), "nothing in the swapped-in directory");
        fs::remove_file(&dir).unwrap();
        fs::remove_dir_all(&moved).unwrap();
    }
}

#[test]
fn a_private_temp_dir_replaced_by_a_link_still_gets_its_files() {
    let root = tempfile::tempdir().unwrap();
    let decoy = root.path().join("decoy");
    fs::create_dir(&decoy).unwrap();
    let t = PrivateTempDir::new_in(root.path(), "zmem-test").unwrap();
    let moved = root.path().join("moved");
    fs::rename(t.path(), &moved).unwrap();
    symlink(&decoy, t.path()).unwrap();
    let (_, a) = t.create_file("a").unwrap();
    t.write_file("b", b"pages").unwrap();
    assert_eq!(a, t.path().join("a"));
    assert_eq!(names(&moved), ["a", "b"], "made in the directory made");
    assert_eq!(fs::read(moved.join("b")).unwrap(), b"pages");
    assert_eq!(mode(&moved.join("a")), 0o600);
    assert!(names(&decoy).is_empty(), "nothing through the link");
    let link = t.path().to_path_buf();
    drop(t);
    assert!(names(&decoy).is_empty() && moved.is_dir(), "what the path names is not removed");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
}

#[test]
fn a_temp_parent_reached_through_a_link_is_resolved() {
    let root = tempfile::tempdir().unwrap();
    let (real, _, mid) = two_dirs_and_a_link(root.path());
    let t = PrivateTempDir::new_in(&mid, "zmem-test").unwrap();
    assert_eq!(t.path().parent().unwrap(), fs::canonicalize(&real).unwrap());
    let dir = t.path().to_path_buf();
    drop(t);
    assert!(!dir.exists());
}

#[test]
fn another_users_directory_is_refused_for_outputs_and_temp_dirs() {
    if !is_root() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let theirs = d.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o755)).unwrap();
    give_to_nobody(&theirs);
    // Named, or reached through a link (a link in the middle of the path is followed, and the
    // directory reached is checked).
    let link = d.path().join("link");
    symlink(&theirs, &link).unwrap();
    for out in [theirs.join("x.zpages"), link.join("x.zpages")] {
        let e = write(&out, Kind::Private, b"pages").unwrap_err();
        assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
        assert_eq!(e.path(), out);
    }
    let e = PrivateTempDir::new_in(&theirs, "zmem-test").unwrap_err();
    assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
    // A sticky world-writable directory of nobody's: its owner may still move what is in it.
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o1777)).unwrap();
    assert!(PrivateTempDir::new_in(&link, "zmem-test").is_err());
    // root's directory in nobody's: nobody may rename it and put a link there.
    let inner = theirs.join("inner");
    fs::create_dir(&inner).unwrap();
    let e = PrivateTempDir::new_in(&inner, "zmem-test").unwrap_err();
    assert!(e.to_string().contains(&format!("on its path, {}", theirs.display())), "{e}");
    assert!(names(&theirs) == ["inner"] && names(&inner).is_empty());
}
