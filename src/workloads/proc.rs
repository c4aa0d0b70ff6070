//! Process and thread creation, as lmbench's lat_proc and perf bench's fork/execve time them.
//! One operation creates a process (or thread) that exits at once and is waited for: fork +
//! _exit + waitpid; fork + execve of a tiny static program + waitpid; posix_spawn of it +
//! waitpid; thread create + join. The tiny program (csrc/tiny_exit.c: one exit_group call, no
//! libc) is embedded in syscost and executed from a memfd, so no file is left anywhere. Each
//! child's exit status is checked: a failed fork or exec fails the run with the errno.

use super::{Spec, Workload};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::ffi::CString;

/// The static executable of csrc/tiny_exit.c, built by build.rs.
const TINY_EXIT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tiny_exit"));

/// What one operation creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProcOp {
    /// fork(2), the child _exit(0)s, waitpid(2) (lat_proc fork, perf bench syscall fork).
    Fork,
    /// fork(2) and execve(2) of a tiny static program that exits, waitpid(2) (lat_proc exec).
    Exec,
    /// posix_spawn(3) of the same tiny program, waitpid(2).
    Spawn,
    /// A thread created and joined (std::thread, i.e. pthread_create + pthread_join).
    Thread,
}

impl ProcOp {
    fn name(self) -> &'static str {
        match self {
            ProcOp::Fork => "fork+exit+wait",
            ProcOp::Exec => "fork+exec+wait",
            ProcOp::Spawn => "posix_spawn+wait",
            ProcOp::Thread => "thread create+join",
        }
    }
}

/// Options of `syscost run proc`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// What one operation creates.
    #[arg(long, value_enum, default_value_t = ProcOp::Fork)]
    pub op: ProcOp,
}

impl Spec for Params {
    const NAME: &'static str = "proc";
    const OP_NAME: &'static str = "process";
    const ABOUT: &'static str = "Process and thread creation as lmbench's lat_proc times it: \
        fork+exit+wait, fork+exec of a tiny static program, posix_spawn, thread create+join";
    const EXAMPLES: &'static str = "Examples:
  syscost run proc --op fork --cpu 1
      fork, the child exits at once, the parent waits: per process
  syscost ab --variant 'proc --op exec' --variant 'proc --op spawn' -- --cpu 1
      what posix_spawn saves over fork+exec";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(Proc {
            op: self.op,
            memfd: -1,
            path: CString::default(),
            argv: Vec::new(),
        }))
    }

    /// The calls of one operation that return (an exiting child's exit_group does not), as
    /// strace counts them with glibc 2.36.
    fn syscalls(&self) -> Vec<u32> {
        let nrs: &[libc::c_long] = match self.op {
            ProcOp::Fork => &[libc::SYS_clone, libc::SYS_wait4, libc::SYS_set_robust_list],
            ProcOp::Exec => &[libc::SYS_clone, libc::SYS_execveat, libc::SYS_wait4],
            ProcOp::Spawn => &[libc::SYS_clone3, libc::SYS_execve, libc::SYS_wait4],
            ProcOp::Thread => &[libc::SYS_clone3, libc::SYS_mmap, libc::SYS_futex],
        };
        nrs.iter().map(|&n| n as u32).collect()
    }

    fn describe(&self) -> String {
        format!("proc {}", self.op.name())
    }
}

pub struct Proc {
    op: ProcOp,
    /// The tiny program, in memory.
    memfd: libc::c_int,
    /// /proc/self/fd/N of the memfd, for posix_spawn.
    path: CString,
    argv: Vec<CString>,
}

fn errno(what: &str) -> anyhow::Error {
    anyhow::anyhow!("proc: {what} failed: {}", std::io::Error::last_os_error())
}

/// Wait for `pid` and check it exited with status 0.
fn reap(pid: libc::pid_t, what: &str) -> Result<()> {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(errno(&format!("waitpid after {what}")));
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("proc: the child of {what} did not exit with status 0 (wait status {status:#x})");
    }
    Ok(())
}

impl Workload for Proc {
    fn setup(&mut self) -> Result<()> {
        if matches!(self.op, ProcOp::Exec | ProcOp::Spawn) {
            // SAFETY: memfd_create with a NUL-terminated name; the bytes are written whole.
            unsafe {
                self.memfd = libc::memfd_create(c"syscost-tiny-exit".as_ptr(), libc::MFD_CLOEXEC);
                if self.memfd < 0 {
                    return Err(errno("memfd_create"));
                }
                let n = libc::write(self.memfd, TINY_EXIT.as_ptr() as *const _, TINY_EXIT.len());
                if n != TINY_EXIT.len() as isize {
                    return Err(errno("writing the tiny program to its memfd"));
                }
            }
            self.path = CString::new(format!("/proc/self/fd/{}", self.memfd))?;
            self.argv = vec![CString::new("tiny_exit")?];
        }
        self.run_batch(1)
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let argv: Vec<*const libc::c_char> = self
            .argv
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        for _ in 0..ops {
            match self.op {
                ProcOp::Fork => {
                    // SAFETY: the child only calls _exit.
                    let pid = unsafe { libc::fork() };
                    if pid < 0 {
                        return Err(errno("fork"));
                    }
                    if pid == 0 {
                        unsafe { libc::_exit(0) };
                    }
                    reap(pid, "fork")?;
                }
                ProcOp::Exec => {
                    // SAFETY: the child only calls execveat (argv and envp were built before
                    // the fork) and _exit.
                    let pid = unsafe { libc::fork() };
                    if pid < 0 {
                        return Err(errno("fork"));
                    }
                    if pid == 0 {
                        unsafe {
                            libc::syscall(
                                libc::SYS_execveat,
                                self.memfd,
                                c"".as_ptr(),
                                argv.as_ptr(),
                                envp.as_ptr(),
                                libc::AT_EMPTY_PATH,
                            );
                            libc::_exit(127);
                        }
                    }
                    reap(pid, "fork+execve")?;
                }
                ProcOp::Spawn => {
                    let mut pid = 0;
                    // SAFETY: posix_spawn with a NUL-terminated path and argv/envp arrays.
                    let rc = unsafe {
                        libc::posix_spawn(
                            &mut pid,
                            self.path.as_ptr(),
                            std::ptr::null(),
                            std::ptr::null(),
                            argv.as_ptr() as *const *mut libc::c_char,
                            envp.as_ptr() as *const *mut libc::c_char,
                        )
                    };
                    if rc != 0 {
                        bail!(
                            "proc: posix_spawn failed: {}",
                            std::io::Error::from_raw_os_error(rc)
                        );
                    }
                    reap(pid, "posix_spawn")?;
                }
                ProcOp::Thread => {
                    let t = std::thread::Builder::new()
                        .spawn(|| std::hint::black_box(()))
                        .map_err(|e| anyhow::anyhow!("proc: creating a thread failed: {e}"))?;
                    t.join()
                        .map_err(|_| anyhow::anyhow!("proc: the thread panicked"))?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if self.memfd >= 0 {
            // SAFETY: closing the memfd setup made.
            unsafe { libc::close(self.memfd) };
            self.memfd = -1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_op_creates_and_reaps() {
        assert_eq!(&TINY_EXIT[..4], b"\x7fELF", "the embedded program is an ELF file");
        for op in [ProcOp::Fork, ProcOp::Exec, ProcOp::Spawn, ProcOp::Thread] {
            let mut w = Params { op }.build().unwrap();
            w.setup().unwrap();
            w.run_batch(20).unwrap();
            w.teardown().unwrap();
        }
    }
}
