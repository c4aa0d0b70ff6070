//! The steps of one build, and the cache's own state: its lock, the unpacked source, the base
//! trees builds with changes start from, and what a killed build left (removed under the lock
//! by the next build).
//!
//! A tree is the unpacked source hard-linked (no copy of its 1.5 GB) with its object tree
//! inside it (`linux/out`), so Kbuild names the source `..` in every command it records: the
//! object tree of a base copied into another tree of the same source is up to date there, and
//! `make` compiles only the files a change touched (GNU patch writes a changed file anew, so
//! the pristine source it was linked to is left as it was).

use super::{Built, Progress, Recipe, Source};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The cache's lock, held for a whole build: one build at a time per cache. The processes of
/// syscost's own builds ([`run`]) hold it too (the descriptor is theirs as well), so a build
/// whose syscost was killed (make dies with it, but its compilers finish the file they are
/// on, seconds) keeps the next build waiting until its last process has ended, before that
/// one removes the work tree they write in.
pub(super) struct Lock {
    held: std::fs::File,
}

/// The lock's descriptor while held, for [`run`]'s children to keep (-1: none).
static LOCK_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

impl Lock {
    /// Taken, waiting for another syscost's build to end (an interruption stops the wait).
    pub(super) fn take(root: &Path) -> Result<Lock> {
        loop {
            if let Some(l) = Lock::try_take(root)? {
                return Ok(l);
            }
            crate::signals::check()?;
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Taken, or `None` while another build (or a process of one) holds it.
    pub(super) fn try_take(root: &Path) -> Result<Option<Lock>> {
        use std::os::fd::AsRawFd;
        let path = root.join(".lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: flock(2) on a descriptor this function owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(None);
        }
        LOCK_FD.store(f.as_raw_fd(), std::sync::atomic::Ordering::SeqCst);
        Ok(Some(Lock { held: f }))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        let fd = self.held.as_raw_fd();
        let _ = LOCK_FD.compare_exchange(
            fd,
            -1,
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
        );
    }
}

/// Remove what a killed build left: the work tree, half-unpacked sources, half-kept builds
/// and base trees whose build did not finish. Called with the lock held, so none is in use.
pub(super) fn remove_leftovers(root: &Path) -> Result<()> {
    let mut gone: Vec<PathBuf> = Vec::new();
    for dir in [root.to_path_buf(), root.join("sources"), root.join("trees")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let p = e.path();
            let unfinished = dir.ends_with("trees") && !p.join("done").is_file();
            if name == "work" || name.ends_with(".tmp") || unfinished {
                gone.push(p);
            }
        }
    }
    for p in gone {
        std::fs::remove_dir_all(&p)
            .with_context(|| format!("cannot remove a killed build's {}", p.display()))?;
    }
    Ok(())
}

/// The source unpacked once per tarball (`sources/SHA/linux`), read-only by convention.
pub(super) fn unpacked(
    root: &Path,
    s: Source,
    tarball: &Path,
    sha: &str,
    progress: &mut dyn FnMut(Progress),
) -> Result<PathBuf> {
    let dir = root.join("sources").join(&sha[..16]);
    let linux = dir.join("linux");
    if linux.join("Makefile").is_file() {
        return Ok(linux);
    }
    progress(Progress::Unpacking);
    let tmp = root.join("sources").join(format!("{}.tmp", &sha[..16]));
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let log = root.join("logs").join(format!("unpack-{}.log", &sha[..16]));
    let mut tar = Command::new("tar");
    tar.arg("-xaf").arg(tarball).arg("-C").arg(&tmp);
    run(tar, &log, &format!("unpacking {}", s.package), &mut || {})?;
    std::fs::rename(tmp.join(s.top), tmp.join("linux"))
        .with_context(|| format!("{} did not unpack into {}", s.package, s.top))?;
    std::fs::rename(&tmp, &dir).with_context(|| format!("cannot keep {}", dir.display()))?;
    Ok(linux)
}

/// Compile `recipe` (kept as `key`): a base in its own kept tree; a build with changes in a
/// work tree from `base_tree`'s objects, whose bzImage is kept and the rest removed.
pub(super) fn compile(
    root: &Path,
    recipe: &Recipe,
    key: &str,
    pristine: &Path,
    base_tree: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Built> {
    let is_base = recipe.changes.is_empty();
    // Every build is made at one path: objtool's build records absolute paths, so a base's
    // objects are up to date only where they were made.
    let tree = root.join("work");
    let log = root.join("logs").join(format!("{key}.log"));
    let _ = std::fs::remove_file(&log);
    let started = Instant::now();
    progress(Progress::Starting {
        name: recipe.name.to_string(),
        from_base: !is_base,
    });
    let made = steps(recipe, &tree, (pristine, base_tree), (root, &log), progress);
    let kept = made.and_then(|_| {
        let image = tree.join("linux/out/arch/x86/boot/bzImage");
        let changes = recipe.changes.iter().map(|c| c.name.to_string()).collect();
        let what = (recipe.name, changes);
        keep(root, key, what, &image, started.elapsed().as_secs_f64())
    });
    // A base's tree is kept, whole, for the builds with changes; every other tree goes.
    match &kept {
        Ok(_) if is_base => {
            std::fs::write(tree.join("done"), "")?;
            std::fs::create_dir_all(root.join("trees"))?;
            let _ = std::fs::remove_dir_all(base_tree);
            std::fs::rename(&tree, base_tree)
                .with_context(|| format!("cannot keep {}", base_tree.display()))?;
        }
        _ => std::fs::remove_dir_all(&tree)
            .with_context(|| format!("cannot remove the build tree {}", tree.display()))?,
    }
    kept
}

/// Link the source into `tree`, configure it or copy the base's objects and apply the
/// changes, and make the bzImage, saying how many objects are compiled as make goes.
fn steps(
    recipe: &Recipe,
    tree: &Path,
    (pristine, base_tree): (&Path, &Path),
    (root, log): (&Path, &Path),
    progress: &mut dyn FnMut(Progress),
) -> Result<()> {
    let is_base = recipe.changes.is_empty();
    let linux = tree.join("linux");
    let said = |step: &str| format!("building {} ({step})", recipe.name);
    std::fs::create_dir_all(tree).with_context(|| format!("cannot create {}", tree.display()))?;
    let mut cp = Command::new("cp");
    cp.arg("-al").arg(pristine).arg(&linux);
    run(cp, log, &said("linking the source"), &mut || {})?;
    if is_base {
        configure(&linux, recipe, log, &said("configuring"))?;
    } else {
        let mut cp = Command::new("cp");
        cp.arg("-a").arg(base_tree.join("linux/out")).arg(&linux);
        run(cp, log, &said("copying the base's objects"), &mut || {})?;
        for c in recipe.changes {
            apply(&linux, c, log, &said(&format!("applying {}", c.name)))?;
        }
    }
    let mut make = kbuild(&linux);
    make.arg(format!("-j{}", jobs()))
        .arg(format!("KCFLAGS={}", recipe.kcflags))
        .arg("bzImage");
    let known = Objects::known(root, recipe);
    let total = is_base.then_some(known).flatten();
    let mut objects = Objects::after(log);
    let started = Instant::now();
    let mut last = None;
    run(make, log, &said("make bzImage"), &mut || {
        let done = objects.count();
        let now = started.elapsed();
        if last.is_none_or(|(d, at): (usize, Duration)| d != done && now - at >= TICK) {
            last = Some((done, now));
            progress(Progress::Compiling {
                name: recipe.name.to_string(),
                done,
                total,
                elapsed: now,
            });
        }
    })?;
    if is_base {
        Objects::keep(root, recipe, objects.count());
    }
    Ok(())
}

/// How often a build's progress is said at most.
const TICK: Duration = Duration::from_secs(1);

/// The objects make compiles, counted from the lines Kbuild writes to the log as it goes
/// (`  CC      fs/ext4/inode.o`, `  AS ...`).
struct Objects {
    log: PathBuf,
    read: u64,
    done: usize,
    /// The last line read, when it had not ended yet.
    partial: String,
}

impl Objects {
    /// Counting from the log's end now.
    fn after(log: &Path) -> Objects {
        Objects {
            log: log.to_path_buf(),
            read: std::fs::metadata(log).map_or(0, |m| m.len()),
            done: 0,
            partial: String::new(),
        }
    }

    /// The objects compiled so far.
    fn count(&mut self) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.log) else {
            return self.done;
        };
        let mut new = Vec::new();
        if f.seek(SeekFrom::Start(self.read)).is_err() || f.read_to_end(&mut new).is_err() {
            return self.done;
        }
        self.read += new.len() as u64;
        let text = std::mem::take(&mut self.partial) + &String::from_utf8_lossy(&new);
        let mut lines = text.split('\n').collect::<Vec<_>>();
        self.partial = lines.pop().unwrap_or_default().to_string();
        self.done += (lines.iter())
            .filter(|l| l.starts_with("  CC ") || l.starts_with("  AS "))
            .count();
        self.done
    }

    /// Where the count of a whole build of a source and configuration is kept (whatever it is
    /// optimised for: -Os compiles the same objects).
    fn file(root: &Path, recipe: &Recipe) -> PathBuf {
        use super::config::{DISABLED, ENABLED};
        let key = crate::core::sha256_hex(
            format!(
                "{}\n{}\n{}",
                recipe.source.tarball,
                DISABLED.join(" "),
                ENABLED.join(" ")
            )
            .as_bytes(),
        );
        root.join("objects").join(&key[..16])
    }

    /// The objects a whole build of the same source and configuration compiled, if one was made.
    fn known(root: &Path, recipe: &Recipe) -> Option<usize> {
        std::fs::read_to_string(Objects::file(root, recipe))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn keep(root: &Path, recipe: &Recipe, n: usize) {
        let file = Objects::file(root, recipe);
        let _ = std::fs::create_dir_all(file.parent().unwrap_or(root));
        let _ = crate::core::write_atomic(&file, n.to_string().as_bytes());
    }
}

/// `make` in `linux` with its object tree in `linux/out`.
fn kbuild(linux: &Path) -> Command {
    let mut c = Command::new("make");
    c.arg("-C").arg(linux).arg("O=out").arg("ARCH=x86_64");
    c
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// tinyconfig, then the guest's options ([`super::config`]), completed by olddefconfig.
fn configure(linux: &Path, recipe: &Recipe, log: &Path, step: &str) -> Result<()> {
    let mut tiny = kbuild(linux);
    tiny.arg("tinyconfig");
    run(tiny, log, step, &mut || {})?;
    let mut config = Command::new(linux.join("scripts/config"));
    config
        .arg("--file")
        .arg(linux.join("out/.config"))
        .args(super::config::script_args(recipe.optimize));
    run(config, log, step, &mut || {})?;
    let mut old = kbuild(linux);
    old.arg("olddefconfig");
    run(old, log, step, &mut || {})
}

/// Apply one change with GNU patch, refusing one that does not apply exactly.
fn apply(linux: &Path, c: &super::Change, log: &Path, step: &str) -> Result<()> {
    let file = linux.join(format!("{}.syscost-change", c.name));
    std::fs::write(&file, c.diff)?;
    let mut patch = Command::new("patch");
    patch
        .arg("-p1")
        .arg("--forward")
        .arg("--no-backup-if-mismatch")
        .arg("-F0")
        .arg("-d")
        .arg(linux)
        .arg("-i")
        .arg(&file);
    let r = run(patch, log, step, &mut || {});
    std::fs::remove_file(&file)?;
    r
}

/// Keep the bzImage, its vmlinux (beside `image`, or four levels above it, where Kbuild's
/// object tree has it) and what it is, a name and the changes it holds (`KEY/bzImage`,
/// `KEY/vmlinux`, `KEY/build.json`), atomically.
pub(super) fn keep(
    root: &Path,
    key: &str,
    (name, changes): (&str, Vec<String>),
    image: &Path,
    seconds: f64,
) -> Result<Built> {
    let tmp = root.join(format!("{key}.tmp"));
    let dir = root.join(key);
    std::fs::create_dir_all(&tmp)?;
    std::fs::copy(image, tmp.join("bzImage"))
        .with_context(|| format!("cannot keep {}", image.display()))?;
    // The ELF with its symbols, for objdump and the size of each section (22 MB here).
    let vmlinux = (image.ancestors().nth(4).map(|out| out.join("vmlinux"))).filter(|v| v.is_file());
    if let Some(v) = vmlinux {
        std::fs::copy(&v, tmp.join("vmlinux"))
            .with_context(|| format!("cannot keep {}", v.display()))?;
    }
    let mut b = Built {
        name: name.to_string(),
        image: dir.join("bzImage"),
        key: key.to_string(),
        changes,
        seconds,
    };
    std::fs::write(tmp.join("build.json"), serde_json::to_vec_pretty(&b)?)?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).with_context(|| format!("cannot keep {}", dir.display()))?;
    b.image = dir.join("bzImage");
    Ok(b)
}

/// Run `c` with its output appended to `log`, in a process group of its own that dies with
/// syscost and is killed whole on an interruption (see [`crate::signals::Guarded`]), calling
/// `tick` as it waits; a failure names `step` and the log's last lines.
fn run(mut c: Command, log: &Path, step: &str, tick: &mut dyn FnMut()) -> Result<()> {
    if let Some(d) = log.parent() {
        std::fs::create_dir_all(d)?;
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot write {}", log.display()))?;
    c.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    let lock = LOCK_FD.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: fcntl(2) is async-signal-safe; the descriptor is the held lock's, which this
    // child keeps open across its exec (and so do the processes it starts).
    unsafe {
        use std::os::unix::process::CommandExt;
        c.pre_exec(move || {
            if lock >= 0 {
                libc::fcntl(lock, libc::F_SETFD, 0);
            }
            Ok(())
        });
    }
    let program = c.get_program().to_string_lossy().into_owned();
    let mut child = crate::signals::Guarded::spawn(&mut c, true)
        .with_context(|| format!("{step}: cannot start {program}"))?;
    let status = (child.wait(Duration::from_millis(100), None, &mut |_| tick())?)
        .map_err(|s| s.into_error(|| anyhow::anyhow!("{step}: stopped")))?;
    if !status.success() {
        bail!(
            "{step} failed ({status}); its log is {}, ending:\n{}",
            log.display(),
            tail(log, 12)
        );
    }
    Ok(())
}

fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod unit {
    use super::*;

    /// Objects are counted from Kbuild's lines as they land in the log, a line cut by a read
    /// counted once it ends.
    #[test]
    fn a_build_s_objects_are_counted_as_make_writes_them() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "  CC      before.o\n").unwrap();
        let mut o = Objects::after(&log);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        write!(
            f,
            "  CC      a.o\n  HOSTCC  scripts/x\n  AS      b.o\n  CC   "
        )
        .unwrap();
        assert_eq!(o.count(), 2, "what was there before is not counted");
        write!(f, "   c.o\n  LD      vmlinux\n").unwrap();
        assert_eq!(o.count(), 3);
    }

    /// A process a build started keeps the cache locked after the build's syscost let go of
    /// the lock (as a killed one does), until that process ends.
    #[test]
    fn a_build_s_last_process_holds_the_lock_until_it_ends() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("log");
        let lock = Lock::take(root.path()).unwrap();
        let mut sh = Command::new("sh");
        sh.arg("-c").arg("sleep 1 >/dev/null 2>&1 &");
        run(sh, &log, "a step that leaves a process behind", &mut || {}).unwrap();
        drop(lock);
        assert!(
            Lock::try_take(root.path()).unwrap().is_none(),
            "the step's process holds the lock"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut again = None;
        while again.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            again = Lock::try_take(root.path()).unwrap();
        }
        assert!(
            again.is_some(),
            "the lock was not free after its last process ended"
        );
    }
}
