//! The alignment RFC's "VFS-mix": creat, lstat, lseek 4095, close, open O_RDWR|O_CREAT|O_TRUNC, write one
//! byte, mmap 4096 MAP_SHARED, store one byte, munmap, close, unlink, on one file, over and over:
//! ~1,500 kernel functions per iteration with a tiny data footprint.
//!
//! On a journalling file system the O_TRUNC + close of a written file makes ext4 flush it
//! (auto_da_alloc), so each iteration waits for the disk: the counters' context switches per
//! iteration show it and the run warns. Use a tmpfs (/dev/shm) to measure the kernel path.

use super::{Spec, Workload};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Options of `syscost run vfs-mix`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// Directory on the file system to measure [default: a fresh directory in $TMPDIR or /tmp]
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

impl Spec for Params {
    const NAME: &'static str = "vfs-mix";
    const OP_NAME: &'static str = "iteration";
    /// An iteration is a dozen file system calls: 64 of them average the page cache's and
    /// the dentry cache's occasional slow paths.
    const COUNTED_OPS: u64 = 64;
    const ABOUT: &'static str = "The VFS-mix loop of Ingo Molnar's 2015 function-alignment RFC (creat, lstat, lseek, close, open O_TRUNC, write, mmap, store, munmap, close, unlink) on the file system holding --dir";
    const EXAMPLES: &'static str = "Examples:
  syscost run vfs-mix --dir /dev/shm --cpu 1 --fifo 90 --pre sync
      the kernel path on tmpfs, pinned, SCHED_FIFO, sync before each run (the RFC's set-up)
  syscost run vfs-mix --dir /var/tmp --profile
      on a disk file system: context switches per iteration show the loop waiting for I/O";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(VfsMix::new(self)))
    }

    /// One iteration's calls, as strace counts them with glibc 2.36.
    fn syscalls(&self) -> Vec<u32> {
        let mut nrs = vec![
            libc::SYS_openat,
            libc::SYS_newfstatat,
            libc::SYS_lseek,
            libc::SYS_close,
            libc::SYS_write,
            libc::SYS_mmap,
            libc::SYS_munmap,
        ];
        #[cfg(target_arch = "x86_64")]
        nrs.extend([libc::SYS_creat, libc::SYS_unlink]);
        #[cfg(not(target_arch = "x86_64"))]
        nrs.push(libc::SYS_unlinkat);
        nrs.iter().map(|&n| n as u32).collect()
    }

    fn sleep_hint(&self) -> Option<&'static str> {
        Some(super::scratch::SLEEP_HINT)
    }

    fn describe(&self) -> String {
        match &self.dir {
            Some(d) => format!("vfs-mix in {}", d.display()),
            None => "vfs-mix in a temporary directory".into(),
        }
    }
}

/// Every name syscost gives files and directories here starts with this, then the owner's pid.
const PREFIX: &str = "syscost-vfs-";

pub(crate) struct VfsMix {
    dir: Option<PathBuf>,
    /// The directory syscost created (and removes), when no --dir was given.
    own_dir: Option<PathBuf>,
    file: Option<CString>,
    fs: String,
    /// The file system is not kept in memory alone: the loop waits for its disk.
    on_disk: bool,
}

/// statfs(2)'s magic number of the file system holding `path`.
fn magic(path: &Path) -> Option<i64> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs fills a plain struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_type as i64)
}

const TMPFS: i64 = 0x0102_1994;
const RAMFS: i64 = 0x858458f6;

/// Whether `path` is on a file system kept in memory alone (tmpfs, ramfs), where the loop
/// never waits for a disk.
fn in_memory(path: &Path) -> bool {
    matches!(magic(path), Some(TMPFS | RAMFS))
}

/// The file system type of `path`, by statfs magic.
pub(crate) fn fs_type(path: &Path) -> String {
    let Some(m) = magic(path) else {
        return "unknown".into();
    };
    match m {
        0xEF53 => "ext4".into(),
        TMPFS => "tmpfs".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x6969 => "nfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        RAMFS => "ramfs".into(),
        0xF2F5_2010 => "f2fs".into(),
        other => format!("type {other:#x}"),
    }
}

/// Remove what workers killed before their teardown left here.
fn remove_stale(dir: &Path) {
    super::scratch::remove_stale(dir, PREFIX);
}

impl VfsMix {
    pub(crate) fn new(p: &Params) -> VfsMix {
        VfsMix {
            dir: p.dir.clone(),
            own_dir: None,
            file: None,
            fs: String::new(),
            on_disk: false,
        }
    }

    fn path(&self) -> &CString {
        self.file.as_ref().expect("setup ran")
    }
}

fn check(ret: libc::c_long, what: &str, file: &CString) -> Result<()> {
    if ret < 0 {
        let e = std::io::Error::last_os_error();
        bail!("vfs-mix: {what} on {} failed: {e}", file.to_string_lossy());
    }
    Ok(())
}

impl Workload for VfsMix {
    fn setup(&mut self) -> Result<()> {
        let pid = std::process::id();
        let dir = match &self.dir {
            Some(d) => {
                if !d.is_dir() {
                    bail!("vfs-mix: --dir {}: no such directory", d.display());
                }
                remove_stale(d);
                d.clone()
            }
            None => {
                let base = std::env::temp_dir();
                remove_stale(&base);
                let d = tempfile::Builder::new()
                    .prefix(&format!("{PREFIX}{pid}-"))
                    .tempdir_in(&base)
                    .with_context(|| {
                        format!("vfs-mix: cannot create a directory in {}", base.display())
                    })?
                    .keep();
                self.own_dir = Some(d.clone());
                d
            }
        };
        self.fs = fs_type(&dir);
        self.on_disk = !in_memory(&dir);
        let file = dir.join(format!("{PREFIX}{pid}.tmp"));
        self.file = Some(CString::new(file.as_os_str().as_bytes())?);
        // One iteration up front: an unwritable directory or a file system that refuses an
        // operation shows here, named, before anything is timed.
        self.run_batch(1).map_err(|e| {
            e.context(format!(
                "the file system under {} ({}) cannot run the VFS-mix loop",
                dir.display(),
                self.fs
            ))
        })
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let path = self.path().clone();
        let p = path.as_ptr();
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for _ in 0..ops {
            // SAFETY: plain system calls on a path we own; the mapping is one page, written
            // within its length, and unmapped before the next iteration.
            unsafe {
                let fd = libc::creat(p, 0o700);
                check(fd as _, "creat", &path)?;
                check(libc::lstat(p, &mut st) as _, "lstat", &path)?;
                if libc::lseek(fd, 4095, libc::SEEK_SET) != 4095 {
                    check(-1, "lseek", &path)?;
                }
                libc::close(fd);
                let fd = libc::open(p, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC, 0o600);
                check(fd as _, "open(O_RDWR|O_CREAT|O_TRUNC)", &path)?;
                let c: u8 = 1;
                if libc::write(fd, &c as *const u8 as *const libc::c_void, 1) != 1 {
                    check(-1, "write", &path)?;
                }
                let m = libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                if m == libc::MAP_FAILED {
                    check(-1, "mmap(MAP_SHARED)", &path)?;
                }
                std::ptr::write_volatile(m as *mut u8, 1);
                check(libc::munmap(m, 4096) as _, "munmap", &path)?;
                libc::close(fd);
                check(libc::unlink(p) as _, "unlink", &path)?;
            }
        }
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        let place = match (&self.dir, &self.own_dir) {
            (Some(d), _) => d.display().to_string(),
            (None, Some(own)) => format!(
                "a temporary directory in {}",
                own.parent().unwrap_or(own).display()
            ),
            (None, None) => "?".into(),
        };
        vec![format!("vfs-mix ran on {place} ({})", self.fs)]
    }

    /// On a disk file system, O_TRUNC then close of a written file makes ext4 flush it: each
    /// iteration waits for the journal and the block layer, as in the RFC's runs on ext4
    /// (3 context switches an iteration, counted system-wide).
    fn waits_where_it_ran(&self) -> bool {
        self.on_disk
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(f) = &self.file {
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(f.as_bytes()));
            if path.exists() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
        if let Some(d) = self.own_dir.take() {
            std::fs::remove_dir_all(&d)
                .with_context(|| format!("cannot remove {}", d.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn runs_in_a_directory_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = VfsMix::new(&Params {
            dir: Some(dir.path().to_path_buf()),
        });
        w.setup().unwrap();
        w.run_batch(3).unwrap();
        assert!(w.notes()[0].contains(&dir.path().display().to_string()));
        w.teardown().unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn stale_files_of_dead_workers_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("{PREFIX}4194399.tmp"));
        let live = dir
            .path()
            .join(format!("{PREFIX}{}.tmp", std::process::id()));
        let other = dir.path().join("user-file");
        for p in [&dead, &live, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        remove_stale(dir.path());
        assert!(!dead.exists() && live.exists() && other.exists());
    }

    /// tmpfs never makes the loop wait; the disk this repository is on (ext4 here, as the
    /// RFC's) does, and the run says so for the emulated counts' join.
    #[test]
    fn the_loop_waits_on_a_disk_file_system_only() {
        let waits = |dir: &Path| {
            let mut w = VfsMix::new(&Params {
                dir: Some(dir.to_path_buf()),
            });
            w.setup().unwrap();
            w.teardown().unwrap();
            w.waits_where_it_ran()
        };
        assert!(!waits(Path::new("/dev/shm")), "tmpfs");
        let here = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        assert_ne!(fs_type(here.path()), "tmpfs", "the repository is on a disk");
        assert!(waits(here.path()), "{}", fs_type(here.path()));
    }

    #[test]
    fn a_missing_directory_is_named() {
        let mut w = VfsMix::new(&Params {
            dir: Some("/nonexistent/dir".into()),
        });
        let e = w.setup().unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/dir") && e.contains("no such directory"),
            "{e}"
        );
    }
}
