//! Files the workloads create (a file to stat, to open, to fault in), named so that they are
//! recognisably syscost's and removable after a SIGKILL: `syscost-KIND-PID...` in the directory
//! measured. A worker's own teardown removes its file; the next worker removes those of dead
//! ones ([`remove_stale`]).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// Why a loop over a scratch file may sleep, and what to do (the "loop sleeps" warning).
pub(crate) const SLEEP_HINT: &str = "on ext4, O_TRUNC then close of a written file waits for a block \
    write: try a tmpfs such as /dev/shm";

/// Remove files and directories of `dir` named `{prefix}{pid}...` by a syscost worker that no
/// longer runs (killed with SIGKILL before its teardown). Names of live processes, and every
/// other name, are left alone.
pub(crate) fn remove_stale(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let pid: Option<u32> = rest.split(['-', '.']).next().and_then(|p| p.parse().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}

/// A file of `size` bytes syscost owns in `dir` (default: $TMPDIR or /tmp), removed on drop.
pub(crate) struct ScratchFile {
    pub path: PathBuf,
}

impl ScratchFile {
    pub(crate) fn create(kind: &str, dir: Option<&Path>, size: u64) -> Result<ScratchFile> {
        let dir = dir
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        if !dir.is_dir() {
            bail!("{kind}: --dir {}: no such directory", dir.display());
        }
        let prefix = format!("syscost-{kind}-");
        remove_stale(&dir, &prefix);
        let path = dir.join(format!("{prefix}{}.tmp", std::process::id()));
        let f = std::fs::File::create(&path)
            .with_context(|| format!("{kind}: cannot create {}", path.display()))?;
        let file = ScratchFile { path };
        f.set_len(size)
            .with_context(|| format!("{kind}: cannot size {}", file.path.display()))?;
        Ok(file)
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn stale_files_of_dead_workers_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let dead = dir.path().join("syscost-t-999999999.tmp");
        let live = dir.path().join(format!("syscost-t-{me}.tmp"));
        let other = dir.path().join("user-file");
        for p in [&dead, &live, &other] {
            std::fs::write(p, "x").unwrap();
        }
        remove_stale(dir.path(), "syscost-t-");
        assert!(!dead.exists() && live.exists() && other.exists());
        std::fs::remove_file(&live).unwrap();
        let f = ScratchFile::create("t", Some(dir.path()), 4096).unwrap();
        assert_eq!(std::fs::metadata(&f.path).unwrap().len(), 4096);
        let p = f.path.clone();
        drop(f);
        assert!(!p.exists(), "removed on drop");
        assert!(ScratchFile::create("t", Some(Path::new("/no/such/dir")), 1).is_err());
    }
}
