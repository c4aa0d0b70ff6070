//! Writing files so that a reader never sees half of one.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where `-o PATH` writes.
enum Target {
    /// A regular file (or a new one): replaced atomically. Symbolic links are followed, so the
    /// link stays and its target is replaced.
    Replace(PathBuf),
    /// A character device, FIFO or socket (/dev/null, /dev/stdout, a pipe): written directly.
    /// Renaming a file over it would replace the device node itself.
    Stream,
}

fn target(path: &Path) -> Result<Target> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!(
            "cannot write results to {}: it is a directory; give a file name",
            path.display()
        ),
        Ok(m) if m.file_type().is_file() => Ok(Target::Replace(
            std::fs::canonicalize(path)
                .with_context(|| format!("cannot resolve {}", path.display()))?,
        )),
        Ok(_) => Ok(Target::Stream),
        Err(_) => match std::fs::read_link(path) {
            // A dangling link: create its target.
            Ok(to) => Ok(Target::Replace(parent_dir(path).join(to))),
            Err(_) => Ok(Target::Replace(path.to_path_buf())),
        },
    }
}

/// Check, before measuring, that `path` can be written: a run that fails at the end because of
/// a typo in `-o` wastes the user's time.
pub(crate) fn check_writable(path: &Path) -> Result<()> {
    let Target::Replace(file) = target(path)? else {
        return check_stream(path);
    };
    let dir = parent_dir(&file);
    if !dir.is_dir() {
        bail!(
            "cannot write results to {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    tempfile::Builder::new()
        .prefix(".syscost-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "cannot write results to {}: directory {} is not writable",
                path.display(),
                dir.display()
            )
        })?;
    Ok(())
}

/// A device written directly: refused when every write to it fails (Linux's /dev/full, the
/// character device 1:7, answers ENOSPC to each: a campaign would boot, then lose its result).
fn check_stream(path: &Path) -> Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(m) = std::fs::metadata(path) else {
        return Ok(());
    };
    let dev = m.rdev();
    if m.file_type().is_char_device() && libc::major(dev) == 1 && libc::minor(dev) == 7 {
        bail!(
            "cannot write results to {}: it is the full device, every write to it fails; give \
             a file, or /dev/null to keep nothing",
            path.display()
        );
    }
    Ok(())
}

/// Refuse an output that is one of the command's own inputs (`compare a.json b.json -o a.json`
/// would replace a run's samples with the comparison).
pub(crate) fn check_not_an_input(output: &Path, inputs: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(());
    };
    if !out.is_file() {
        return Ok(());
    }
    for i in inputs {
        if let Ok(m) = std::fs::metadata(i)
            && m.dev() == out.dev()
            && m.ino() == out.ino()
        {
            bail!(
                "-o {} is one of the inputs ({}): writing it would replace that result; give \
                 another file name",
                output.display(),
                i.display()
            );
        }
    }
    Ok(())
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Write `bytes` to `path`. A regular file is replaced atomically: a temporary file in the same
/// directory, flushed to disk, then renamed over it (through any symbolic link), so readers see
/// the old file or the new one, never half of one, and the temporary file is removed if
/// anything fails. A device, FIFO or socket (/dev/null, /dev/stdout) is written directly.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let file = match target(path)? {
        Target::Stream => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes))
                .with_context(|| format!("cannot write {}", path.display()));
        }
        Target::Replace(file) => file,
    };
    let dir = parent_dir(&file);
    let mut tmp = tempfile::Builder::new()
        .prefix(".syscost-")
        .suffix(".tmp")
        // An ordinary file for its reader (0666 less the umask), not tempfile's private 0600.
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(&file)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Whether this process's standard output is /dev/null: what is written there is read by
/// nobody (a campaign guest runs its measurement so), and need not be made.
pub(crate) fn stdout_discarded() -> bool {
    // SAFETY: fstat fills the stat buffer it is given.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(1, &mut st) } != 0 {
        return false;
    }
    let null = std::fs::metadata("/dev/null").map(|m| std::os::unix::fs::MetadataExt::rdev(&m));
    (st.st_mode & libc::S_IFMT) == libc::S_IFCHR && null.is_ok_and(|r| r == st.st_rdev)
}

/// The SHA-256 of `bytes` in lowercase hexadecimal.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_full_device_is_refused_and_null_is_not() {
        let e = check_writable(Path::new("/dev/full"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("every write to it fails"), "{e}");
        check_writable(Path::new("/dev/null")).unwrap();
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "only the result remains: {names:?}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_ne!(
            mode & 0o044,
            0,
            "readable beyond its owner under a usual umask: {mode:o}"
        );
    }

    #[test]
    fn writability_checked_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(&dir.path().join("ok.json")).is_ok());
        let e = check_writable(&dir.path().join("missing/x.json")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = check_writable(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn links_are_followed_and_stay_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // A dangling link gets its target created.
        let gone = dir.path().join("gone.json");
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(&gone, &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert_eq!(std::fs::read_to_string(&gone).unwrap(), "made");
    }

    // The review's defect: as root, `-o /dev/null` replaced the device node with a regular
    // file. Tried on a FIFO and on a null device node of our own (mknod needs root; the test
    // says so and checks the FIFO alone otherwise), never on the machine's /dev/null.
    #[test]
    fn devices_and_fifos_are_written_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        check_writable(&fifo).unwrap();

        let null = dir.path().join("null");
        let c = std::ffi::CString::new(null.to_str().unwrap()).unwrap();
        let dev = libc::makedev(1, 3);
        if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, dev) } != 0 {
            eprintln!(
                "skipped the device-node half: mknod needs CAP_MKNOD ({})",
                std::io::Error::last_os_error()
            );
            return;
        }
        write_atomic(&null, b"gone").unwrap();
        assert!(
            std::fs::metadata(&null)
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let full = dir.path().join("full");
        let c = std::ffi::CString::new(full.to_str().unwrap()).unwrap();
        assert_eq!(
            unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 7)) },
            0
        );
        let e = write_atomic(&full, b"x").unwrap_err();
        assert!(format!("{e:#}").contains("No space left"), "{e:#}");
        assert!(
            std::fs::metadata(&full)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn an_input_is_not_an_output() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        std::fs::write(&a, "{}").unwrap();
        let via = dir.path().join(".").join("a.json");
        let e = check_not_an_input(&via, &[dir.path().join("b.json"), a.clone()]).unwrap_err();
        assert!(e.to_string().contains("is one of the inputs"), "{e}");
        assert!(check_not_an_input(&dir.path().join("c.json"), &[a]).is_ok());
    }
}
