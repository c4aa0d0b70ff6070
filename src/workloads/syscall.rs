//! A raw system call in a tight loop: the audit investigations' `getpid()` benchmark.
//!
//! Calls go through `syscall(2)`, never through a libc wrapper that might cache the answer
//! (glibc cached getpid() until 2.25), so every operation enters the kernel.

use super::{Spec, Workload};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// Options of `syscost run syscall`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// System call to time, called raw through syscall(2) with fixed harmless arguments.
    #[arg(long, default_value = "getpid", value_parser = parse_name)]
    pub syscall: String,
}

impl Spec for Params {
    const NAME: &'static str = "syscall";
    const OP_NAME: &'static str = "call";
    const ABOUT: &'static str = "A raw system call in a loop (the getpid() benchmark of the audit syscall-exit latency series)";
    const EXAMPLES: &'static str = "Examples:
  syscost run syscall --cpu 1 --runs 5
      getpid() per call, pinned to CPU 1, 5 worker processes
  syscost run syscall --syscall getppid --fifo 50 -e cycles,instructions:u -o getppid.json
      SCHED_FIFO 50, two events, result file for compare/report
  syscost run syscall --ops 1000000 --samples 20 --json
      fixed batch of 10^6 calls (no calibration), JSON on stdout";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(SyscallLoop::new(self)?))
    }

    fn syscalls(&self) -> Vec<u32> {
        find(&self.syscall).map(|k| vec![k.nr as u32]).unwrap_or_default()
    }

    fn describe(&self) -> String {
        match find(&self.syscall) {
            Some(s) => format!("syscall {} (nr {})", s.name, s.nr),
            None => format!("syscall {}", self.syscall),
        }
    }

    fn case_label(&self) -> String {
        format!("syscall {}", self.syscall)
    }
}

/// A system call syscost can time: argument-free or with fixed arguments, without side effects
/// that accumulate over millions of calls.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Known {
    pub name: &'static str,
    pub nr: libc::c_long,
    /// Up to three arguments (all zero/NULL here); `None` calls with no arguments.
    pub args: Option<[libc::c_long; 3]>,
}

/// The system calls `--syscall` accepts.
pub(crate) const KNOWN: &[Known] = &[
    Known {
        name: "getpid",
        nr: libc::SYS_getpid,
        args: None,
    },
    Known {
        name: "getppid",
        nr: libc::SYS_getppid,
        args: None,
    },
    Known {
        name: "gettid",
        nr: libc::SYS_gettid,
        args: None,
    },
    Known {
        name: "getuid",
        nr: libc::SYS_getuid,
        args: None,
    },
    Known {
        name: "geteuid",
        nr: libc::SYS_geteuid,
        args: None,
    },
    Known {
        name: "getgid",
        nr: libc::SYS_getgid,
        args: None,
    },
    Known {
        name: "getegid",
        nr: libc::SYS_getegid,
        args: None,
    },
    #[cfg(target_arch = "x86_64")]
    Known {
        name: "getpgrp",
        nr: libc::SYS_getpgrp,
        args: None,
    },
    // getcpu(NULL, NULL, NULL): the raw syscall, not the vDSO.
    Known {
        name: "getcpu",
        nr: libc::SYS_getcpu,
        args: Some([0, 0, 0]),
    },
    // getpriority(PRIO_PROCESS, 0)
    Known {
        name: "getpriority",
        nr: libc::SYS_getpriority,
        args: Some([0, 0, 0]),
    },
    Known {
        name: "sched_yield",
        nr: libc::SYS_sched_yield,
        args: None,
    },
];

pub(crate) fn find(name: &str) -> Option<Known> {
    KNOWN.iter().copied().find(|k| k.name == name)
}

/// The names `--syscall` accepts, comma-separated, for messages.
pub(crate) fn known_names() -> String {
    KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

fn parse_name(s: &str) -> Result<String, String> {
    match find(s) {
        Some(k) => Ok(k.name.to_string()),
        None => Err(format!(
            "unknown or unsupported system call '{s}'; syscost can time: {}",
            known_names()
        )),
    }
}

pub(crate) struct SyscallLoop {
    call: Known,
}

impl SyscallLoop {
    pub(crate) fn new(p: &Params) -> Result<SyscallLoop> {
        match find(&p.syscall) {
            Some(call) => Ok(SyscallLoop { call }),
            None => bail!(
                "unknown or unsupported system call '{}'; syscost can time: {}",
                p.syscall,
                known_names()
            ),
        }
    }
}

impl Workload for SyscallLoop {
    fn setup(&mut self) -> Result<()> {
        // One call up front: a seccomp filter or an unexpected errno shows here, not as an
        // absurdly fast loop of failing calls.
        let ret = unsafe { invoke(&self.call) };
        if ret < 0 {
            let err = std::io::Error::last_os_error();
            bail!("{} failed before measuring: {err}", self.call.name);
        }
        Ok(())
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let nr = self.call.nr;
        match self.call.args {
            None => {
                for _ in 0..ops {
                    unsafe { libc::syscall(nr) };
                }
            }
            Some([a, b, c]) => {
                for _ in 0..ops {
                    unsafe { libc::syscall(nr, a, b, c) };
                }
            }
        }
        Ok(())
    }
}

unsafe fn invoke(k: &Known) -> libc::c_long {
    match k.args {
        None => unsafe { libc::syscall(k.nr) },
        Some([a, b, c]) => unsafe { libc::syscall(k.nr, a, b, c) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_this_arch_numbers() {
        assert_eq!(find("getpid").unwrap().nr, libc::SYS_getpid);
        assert!(
            find("fork").is_none(),
            "only side-effect-free calls are offered"
        );
        assert!(parse_name("execve").unwrap_err().contains("getpid"));
    }

    #[test]
    fn getpid_loop_enters_the_kernel() {
        let mut w = SyscallLoop::new(&Params {
            syscall: "gettid".into(),
        })
        .unwrap();
        w.setup().unwrap();
        w.run_batch(10).unwrap();
        w.teardown().unwrap();
        let tid = unsafe { invoke(&find("gettid").unwrap()) };
        assert_eq!(tid as i32, unsafe { libc::gettid() });
    }
}
