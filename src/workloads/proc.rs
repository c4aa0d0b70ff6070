//! Process and thread creation, as lmbench's lat_proc and perf bench's fork/execve time them.
//! One operation creates a process (or thread) that exits at once and is waited for: fork +
//! _exit + waitpid; fork + execve of a tiny static program + waitpid; posix_spawn of it +
//! waitpid; thread create + join. The tiny program (csrc/tiny_exit.c: one exit_group call, no
//! libc) is embedded in syscost and executed from a memfd, so no file is left anywhere. Each
//! child's exit status is checked: a failed fork or exec fails the run with the errno.
//!
//! What a fork costs grows with the private memory it copies the page tables of (about 10 ns
//! per KiB here). The worker's own bookkeeping (its malloc heap, the stack its start-up once
//! used) is not the operation measured, so during each batch of forks the heap is marked
//! MADV_WIPEONFORK (children get it zero-filled: no page table is copied) and the stack pages
//! below the live frames are released. The process forked is then as small as a minimal C
//! program's, plus the worker's relocated read-only data; the run's notes say how large.

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
    /// fork(2), the child _exit(0)s, waitpid(2) (lat_proc fork, perf bench syscall fork). The
    /// worker's own heap is kept out of the child (MADV_WIPEONFORK), so what is forked is about
    /// as small as a minimal C program; the run's notes give its size.
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
    /// A process created and reaped is tens of thousands of instructions and a few page
    /// faults: 16 of them average the allocator's refills, at a fraction of a second emulated.
    const COUNTED_OPS: u64 = 16;
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
            heap: None,
            forked_kib: None,
            memfd: -1,
            path: CString::default(),
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

    fn waits(&self) -> Option<&'static str> {
        Some("the parent waits for each child to exit")
    }

    fn describe(&self) -> String {
        format!("proc {}", self.op.name())
    }
}

pub(crate) struct Proc {
    op: ProcOp,
    /// The worker's heap while it is marked wipe-on-fork.
    heap: Option<Range>,
    /// The private anonymous memory each fork copies, measured after setup.
    forked_kib: Option<u64>,
    /// The tiny program, in memory.
    memfd: libc::c_int,
    /// /proc/self/fd/N of the memfd, for posix_spawn.
    path: CString,
}

fn errno(what: &str) -> anyhow::Error {
    let e = std::io::Error::last_os_error();
    let hint = crate::core::limits::hint(&e, what.contains("fork") || what.contains("thread"));
    anyhow::anyhow!("proc: {what} failed: {e}{hint}")
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

/// An address range of a mapping, [start, end).
type Range = (usize, usize);

/// The `[heap]` and `[stack]` mappings in the text of /proc/self/maps.
fn heap_and_stack(maps: &str) -> (Option<Range>, Option<Range>) {
    let (mut heap, mut stack) = (None, None);
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let range = fields.next().and_then(|r| {
            let (a, b) = r.split_once('-')?;
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        });
        match line.split_whitespace().nth(5) {
            Some("[heap]") => heap = range,
            Some("[stack]") => stack = range,
            _ => {}
        }
    }
    (heap, stack)
}

/// The private anonymous memory in the text of /proc/self/smaps, in KiB, leaving out `skip`
/// (the mapping that starts there): what a fork copies the page tables of.
fn anonymous_kib(smaps: &str, skip: Option<usize>) -> u64 {
    let mut total = 0;
    let mut skipping = false;
    for line in smaps.lines() {
        if let Some(start) = line
            .split_once('-')
            .and_then(|(a, _)| usize::from_str_radix(a, 16).ok())
            .filter(|_| line.split_whitespace().count() >= 5)
        {
            skipping = Some(start) == skip;
        } else if let Some(kib) = line.strip_prefix("Anonymous:")
            && !skipping
        {
            total += kib.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0);
        }
    }
    total
}

impl Proc {
    /// Before a batch of forks: keep the worker's own heap and dead stack out of the children
    /// (see the module's documentation). Untimed.
    fn slim(&mut self) -> Result<()> {
        if !matches!(self.op, ProcOp::Fork | ProcOp::Exec) {
            return Ok(());
        }
        let maps = std::fs::read_to_string("/proc/self/maps")?;
        let (heap, stack) = heap_and_stack(&maps);
        if let Some((start, end)) = heap {
            // SAFETY: advice on the heap mapping itself; it changes only what a child sees
            // (zeros), and the children of a batch touch no heap memory.
            if unsafe { libc::madvise(start as *mut _, end - start, libc::MADV_WIPEONFORK) } != 0 {
                return Err(errno("madvise(MADV_WIPEONFORK) of the worker's heap"));
            }
            self.heap = Some((start, end));
        }
        if let Some((start, end)) = stack {
            // The batch runs at this depth (before_batch and run_batch are called from the
            // same frame) and a fork needs a few KiB more: everything 16 KiB below this frame
            // is dead. Release it; but only on the main thread, whose stack this is (a copy
            // running as a thread has a stack of its own elsewhere).
            let marker = 0u8;
            let here = std::hint::black_box(&marker) as *const u8 as usize;
            let below = here.saturating_sub(16 << 10) & !4095;
            if (start..end).contains(&here) && below > start {
                // SAFETY: pages of the main stack far below the live frames; a later use
                // faults in a zero page as the stack's growth always does.
                unsafe { libc::madvise(start as *mut _, below - start, libc::MADV_DONTNEED) };
            }
        }
        Ok(())
    }

    /// After a batch: the heap is inherited again, as by default.
    fn unslim(&mut self) {
        if let Some((start, end)) = self.heap.take() {
            // SAFETY: undoing slim's advice on the same range.
            unsafe { libc::madvise(start as *mut _, end - start, libc::MADV_KEEPONFORK) };
        }
    }
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
        }
        self.slim()?;
        if self.heap.is_some() {
            let smaps = std::fs::read_to_string("/proc/self/smaps")?;
            self.forked_kib = Some(anonymous_kib(&smaps, self.heap.map(|h| h.0)));
        }
        let done = self.run_batch(1);
        self.unslim();
        done
    }

    fn before_batch(&mut self, _ops: u64) -> Result<()> {
        self.slim()
    }

    fn after_batch(&mut self) -> Result<()> {
        self.unslim();
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = match self.forked_kib {
            Some(kib) => vec![format!(
                "each fork copied the page tables of {kib} KiB of the worker's private memory \
                 (its heap is wiped on fork, MADV_WIPEONFORK, and its unused stack released, \
                 so syscost's bookkeeping is not part of the figure)"
            )],
            None => Vec::new(),
        };
        if self.op == ProcOp::Fork {
            // Measured on this project's VM: a C loop whose child calls exit(1) took 1.2x one
            // whose child calls _exit(0) (the child's libc exit path writes pages shared with
            // its parent: copy-on-write faults), and lat_proc fork itself 1.5-1.6x
            // (bench/fork_exit.c).
            notes.push(
                "The child calls _exit. lmbench's lat_proc fork child calls exit(1), which runs \
                 libc's exit handlers (stdio flush, atexit, the linked libraries' destructors) \
                 in the child and takes copy-on-write faults doing so: its figure is higher by \
                 that"
                    .into(),
            );
        }
        notes
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        // What a child reads lives on the stack or in the binary, never on the heap, which
        // children see zero-filled (see `slim`).
        let argv: [*const libc::c_char; 2] = [c"tiny_exit".as_ptr(), std::ptr::null()];
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        let memfd = self.memfd;
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
                                memfd,
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
                        let e = std::io::Error::from_raw_os_error(rc);
                        let hint = crate::core::limits::hint(&e, true);
                        bail!("proc: posix_spawn failed: {e}{hint}");
                    }
                    reap(pid, "posix_spawn")?;
                }
                ProcOp::Thread => {
                    let t = std::thread::Builder::new()
                        .spawn(|| std::hint::black_box(()))
                        .map_err(|e| {
                            let hint = crate::core::limits::hint(&e, true);
                            anyhow::anyhow!("proc: creating a thread failed: {e}{hint}")
                        })?;
                    t.join()
                        .map_err(|_| anyhow::anyhow!("proc: the thread panicked"))?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        self.unslim();
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

    const SMAPS: &str = "\
55d0a1000000-55d0a1054000 r--p 008ac000 fe:00 5310311                    /usr/bin/syscost
Size:                336 kB
Anonymous:           336 kB
55d0a2000000-55d0a2085000 rw-p 00000000 00:00 0                          [heap]
Size:                532 kB
Anonymous:           492 kB
VmFlags: rd wr mr mw me ac wf
7ffd676ca000-7ffd676ef000 rw-p 00000000 00:00 0                          [stack]
Anonymous:            20 kB
";

    #[test]
    fn heap_stack_and_the_memory_a_fork_copies() {
        let (heap, stack) = heap_and_stack(SMAPS);
        assert_eq!(heap, Some((0x55d0a2000000, 0x55d0a2085000)));
        assert_eq!(stack, Some((0x7ffd676ca000, 0x7ffd676ef000)));
        assert_eq!(anonymous_kib(SMAPS, None), 848);
        assert_eq!(anonymous_kib(SMAPS, heap.map(|h| h.0)), 356);
        assert_eq!(heap_and_stack("garbage\n-\n"), (None, None));
    }

    #[test]
    fn a_batch_of_forks_leaves_the_heap_inherited_again() {
        let mut w = Proc {
            op: ProcOp::Fork,
            heap: None,
            forked_kib: None,
            memfd: -1,
            path: CString::default(),
        };
        w.setup().unwrap();
        assert!(w.forked_kib.is_some_and(|k| k > 0), "{:?}", w.forked_kib);
        w.before_batch(10).unwrap();
        let heap = w.heap.expect("the heap is marked during a batch");
        let flags = |maps: &str| {
            let start = format!("{:x}-", heap.0);
            maps.lines()
                .skip_while(|l| !l.starts_with(&start))
                .find_map(|l| l.strip_prefix("VmFlags:").map(str::to_owned))
                .unwrap()
        };
        let during = flags(&std::fs::read_to_string("/proc/self/smaps").unwrap());
        assert!(during.contains(" wf"), "{during}");
        w.run_batch(10).unwrap();
        w.after_batch().unwrap();
        let after = flags(&std::fs::read_to_string("/proc/self/smaps").unwrap());
        assert!(!after.contains(" wf"), "{after}");
        w.teardown().unwrap();
    }

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
