//! Writing files so that a reader never sees half of one.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::Path;

/// Check, before measuring, that `path` can be written: a run that fails at the end because of
/// a typo in `-o` wastes the user's time.
pub fn check_writable(path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!(
            "cannot write results to {}: it is a directory; give a file name",
            path.display()
        );
    }
    let dir = parent_dir(path);
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

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over `path`. Readers see the old file or the new one, never half of one; the
/// temporary file is removed if anything fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent_dir(path);
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
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

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
}
