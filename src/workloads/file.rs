//! File system calls, one per operation, as lmbench's lat_syscall and perf bench time them:
//! 1-byte read and write on /dev/zero and /dev/null, pread and lseek, stat and fstat, open+close
//! and dup+close. Every call's return value is checked: a short read or a refused call fails the
//! run with the call and the errno.

use super::scratch::ScratchFile;
use super::{Spec, Workload};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The operation one loop iteration performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FileOp {
    /// read(2) of 1 byte from /dev/zero (lat_syscall read).
    Read,
    /// write(2) of 1 byte to /dev/null (lat_syscall write).
    Write,
    /// pread(2) of 1 byte at offset 0 of a 4 KiB file in --dir (page-cache hit).
    Pread,
    /// lseek(2) to offset 0 of that file.
    Lseek,
    /// stat(2) of that file by path (lat_syscall stat: the path walk).
    Stat,
    /// fstat(2) of that file's descriptor (lat_syscall fstat).
    Fstat,
    /// open(2) O_RDONLY and close(2) of that file (lat_syscall open).
    OpenClose,
    /// dup(2) of a descriptor and close(2) of the copy.
    DupClose,
}

impl FileOp {
    fn name(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::Write => "write",
            FileOp::Pread => "pread",
            FileOp::Lseek => "lseek",
            FileOp::Stat => "stat",
            FileOp::Fstat => "fstat",
            FileOp::OpenClose => "open+close",
            FileOp::DupClose => "dup+close",
        }
    }

    /// Whether the operation works on the scratch file in --dir.
    fn needs_file(self) -> bool {
        matches!(
            self,
            FileOp::Pread | FileOp::Lseek | FileOp::Stat | FileOp::Fstat | FileOp::OpenClose
        )
    }
}

/// Options of `syscost run file`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// The system call(s) of one operation.
    #[arg(long, value_enum, default_value_t = FileOp::Read)]
    pub op: FileOp,
    /// Directory of the file that pread, lseek, stat, fstat and open+close work on (its file
    /// system is the one measured) [default: $TMPDIR or /tmp].
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

impl Spec for Params {
    const NAME: &'static str = "file";
    const OP_NAME: &'static str = "call";
    const ABOUT: &'static str = "File system calls as lmbench's lat_syscall times them: read, \
        write, pread, lseek, stat, fstat, open+close, dup+close, one per operation";
    const EXAMPLES: &'static str = "Examples:
  syscost run file --op read --cpu 1
      1-byte read(2) from /dev/zero per call
  syscost run file --op open-close --dir /dev/shm --cpu 1
      open(2)+close(2) of a file on tmpfs
  syscost ab --variant 'file --op stat --dir /dev/shm' --variant 'file --op stat --dir /var/tmp'
      the same path walk on two file systems";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(FileCalls {
            op: self.op,
            dir: self.dir.clone(),
            file: None,
            path: CString::default(),
            fd: -1,
        }))
    }

    /// As strace counts them here (glibc 2.36: stat and fstat are newfstatat).
    fn syscalls(&self) -> Vec<u32> {
        let nrs: &[libc::c_long] = match self.op {
            FileOp::Read => &[libc::SYS_read],
            FileOp::Write => &[libc::SYS_write],
            FileOp::Pread => &[libc::SYS_pread64],
            FileOp::Lseek => &[libc::SYS_lseek],
            FileOp::Stat | FileOp::Fstat => &[libc::SYS_newfstatat],
            FileOp::OpenClose => &[libc::SYS_openat, libc::SYS_close],
            FileOp::DupClose => &[libc::SYS_dup, libc::SYS_close],
        };
        nrs.iter().map(|&n| n as u32).collect()
    }

    fn sleep_hint(&self) -> Option<&'static str> {
        Some(super::scratch::SLEEP_HINT)
    }

    fn describe(&self) -> String {
        match (&self.dir, self.op.needs_file()) {
            (Some(d), true) => format!("file {} in {}", self.op.name(), d.display()),
            _ => format!("file {}", self.op.name()),
        }
    }
}

pub(crate) struct FileCalls {
    op: FileOp,
    dir: Option<PathBuf>,
    file: Option<ScratchFile>,
    path: CString,
    /// /dev/zero, /dev/null or the scratch file, per the operation.
    fd: libc::c_int,
}

/// The errno of the last failed call, with the call named.
fn failed(what: &str) -> anyhow::Error {
    let e = std::io::Error::last_os_error();
    let hint = crate::core::limits::hint(&e, false);
    anyhow::anyhow!("file: {what} failed: {e}{hint}")
}

impl Workload for FileCalls {
    fn setup(&mut self) -> Result<()> {
        let target: CString = if self.op.needs_file() {
            let f = ScratchFile::create("file", self.dir.as_deref(), 4096)?;
            self.path = CString::new(f.path.as_os_str().as_bytes())?;
            self.file = Some(f);
            self.path.clone()
        } else if self.op == FileOp::Read {
            c"/dev/zero".into()
        } else {
            c"/dev/null".into()
        };
        let flags = if self.op == FileOp::Write {
            libc::O_WRONLY
        } else {
            libc::O_RDONLY
        };
        // SAFETY: a NUL-terminated path.
        self.fd = unsafe { libc::open(target.as_ptr(), flags | libc::O_CLOEXEC) };
        if self.fd < 0 {
            return Err(failed(&format!("open({})", target.to_string_lossy())));
        }
        // One operation up front: a file system that refuses it is named before timing.
        self.run_batch(1)
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let mut byte = 0u8;
        let buf = &mut byte as *mut u8 as *mut libc::c_void;
        // SAFETY: plain system calls on a descriptor and a path this workload owns, into a
        // one-byte buffer on the stack.
        unsafe {
            match self.op {
                FileOp::Read => {
                    for _ in 0..ops {
                        if libc::read(self.fd, buf, 1) != 1 {
                            return Err(failed("read(/dev/zero, 1 byte)"));
                        }
                    }
                }
                FileOp::Write => {
                    for _ in 0..ops {
                        if libc::write(self.fd, buf, 1) != 1 {
                            return Err(failed("write(/dev/null, 1 byte)"));
                        }
                    }
                }
                FileOp::Pread => {
                    for _ in 0..ops {
                        if libc::pread(self.fd, buf, 1, 0) != 1 {
                            return Err(failed("pread(1 byte at 0)"));
                        }
                    }
                }
                FileOp::Lseek => {
                    for _ in 0..ops {
                        if libc::lseek(self.fd, 0, libc::SEEK_SET) != 0 {
                            return Err(failed("lseek(0, SEEK_SET)"));
                        }
                    }
                }
                FileOp::Stat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    for _ in 0..ops {
                        if libc::stat(self.path.as_ptr(), &mut st) != 0 {
                            return Err(failed("stat"));
                        }
                    }
                }
                FileOp::Fstat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    for _ in 0..ops {
                        if libc::fstat(self.fd, &mut st) != 0 {
                            return Err(failed("fstat"));
                        }
                    }
                }
                FileOp::OpenClose => {
                    for _ in 0..ops {
                        let fd = libc::open(self.path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                        if fd < 0 {
                            return Err(failed(&format!("open({})", self.path.to_string_lossy())));
                        }
                        if libc::close(fd) != 0 {
                            return Err(failed("close"));
                        }
                    }
                }
                FileOp::DupClose => {
                    for _ in 0..ops {
                        let fd = libc::dup(self.fd);
                        if fd < 0 {
                            return Err(failed("dup"));
                        }
                        if libc::close(fd) != 0 {
                            return Err(failed("close"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        match &self.file {
            Some(f) => vec![format!(
                "file: {} on {}",
                f.path.display(),
                super::vfs_mix::fs_type(f.path.parent().unwrap_or(&f.path))
            )],
            None => Vec::new(),
        }
    }

    fn teardown(&mut self) -> Result<()> {
        if self.fd >= 0 {
            // SAFETY: closing the descriptor setup opened.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
        }
        self.file = None;
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_op_runs_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for op in [
            FileOp::Read,
            FileOp::Write,
            FileOp::Pread,
            FileOp::Lseek,
            FileOp::Stat,
            FileOp::Fstat,
            FileOp::OpenClose,
            FileOp::DupClose,
        ] {
            let mut w = Params {
                op,
                dir: Some(dir.path().to_path_buf()),
            }
            .build()
            .unwrap();
            w.setup().unwrap();
            w.run_batch(100).unwrap();
            w.teardown().unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut w = Params {
            op: FileOp::Stat,
            dir: Some("/no/such/dir".into()),
        }
        .build()
        .unwrap();
        let e = w.setup().unwrap_err().to_string();
        assert!(e.contains("no such directory"), "{e}");
    }
}
