//! Many copies of a workload at once, as will-it-scale runs each loop as N processes or N
//! threads: copy 0 is the worker itself and is timed batch by batch as usual (its time per
//! operation is the latency under contention); copies 1..N run the same workload continuously,
//! each pinned to its own CPU, from before the first batch to after the last, and publish how
//! many operations they have done. The run's throughput counts every copy's operations done
//! while copy 0's batches were timed.
//!
//! The counters live in one shared anonymous mapping, one 64-byte line per copy (so copies do
//! not contend on a line, as will-it-scale does it), readable by forked processes and threads
//! alike. A copy that fails marks its line failed, and copy 0's next batch fails the run,
//! naming the copy.

use crate::core::CpuList;
use crate::workloads::{CopyMode, Workload, WorkloadSpec};
use anyhow::{Result, bail};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One copy's line of the shared mapping.
#[repr(C, align(64))]
struct Line {
    /// Operations done, published after each of the copy's batches.
    ops: AtomicU64,
    /// 0 running, 1 ready (set up), 2 failed, 3 stopped.
    state: AtomicU64,
}

const READY: u64 = 1;
const FAILED: u64 = 2;

/// The shared lines: one per copy (line 0 unused) and a stop flag in the last.
struct Shared {
    base: *mut Line,
    lines: usize,
}

// The mapping is shared memory of atomics.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    fn new(copies: usize) -> Result<Shared> {
        let lines = copies + 1;
        // SAFETY: a fresh shared anonymous mapping, zeroed, unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                lines * 64,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!(
                "copies: cannot map their counters: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Shared {
            base: p as *mut Line,
            lines,
        })
    }

    fn line(&self, i: usize) -> &Line {
        assert!(i < self.lines);
        // SAFETY: inside the mapping; lines are 64-byte aligned and zero-initialised atomics.
        unsafe { &*self.base.add(i) }
    }

    fn stop(&self) -> &AtomicU64 {
        &self.line(self.lines - 1).state
    }

    /// Operations done by copies 1..N so far.
    fn others(&self) -> u64 {
        (1..self.lines - 1)
            .map(|i| self.line(i).ops.load(Ordering::Relaxed))
            .sum()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: unmapping what `new` mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.lines * 64) };
    }
}

enum Copy {
    Process(libc::pid_t),
    Thread(std::thread::JoinHandle<()>),
}

/// Copies 2..N's loop: set up, publish ready, run batches of about a millisecond until told to
/// stop, publishing the count after each; tear down.
fn copy_loop(spec: &WorkloadSpec, line: &Line, stop: &AtomicU64) -> Result<()> {
    let mut w = spec.build()?;
    w.setup()?;
    line.state.store(READY, Ordering::Release);
    let mut chunk = 1u64;
    let mut done = 0u64;
    let r = (|| -> Result<()> {
        while stop.load(Ordering::Acquire) == 0 {
            w.before_batch(chunk)?;
            let t = Instant::now();
            let r = w.run_batch(chunk);
            let ns = t.elapsed().as_nanos();
            w.after_batch()?;
            r?;
            done += chunk;
            line.ops.store(done, Ordering::Release);
            // Batches of about 100 us: counts fresh enough for copy 0's ~100 ms samples.
            if ns < 100_000 && chunk < 1 << 30 {
                chunk *= 2;
            }
        }
        Ok(())
    })();
    let down = w.teardown();
    r.and(down)
}

/// A workload run as N copies (see the module's text).
pub(crate) struct Copies {
    spec: WorkloadSpec,
    n: usize,
    mode: CopyMode,
    cpus: Vec<usize>,
    first: Box<dyn Workload>,
    shared: Option<std::sync::Arc<Shared>>,
    copies: Vec<Copy>,
    /// Copy 0's timed operations and wall time, and the others' operations in that time.
    own_ops: u64,
    others_ops: u64,
    wall_ns: u128,
}

impl Copies {
    /// `cpus`: the CPUs the copies are pinned to, copy i on `cpus[i % len]`.
    pub(crate) fn new(
        spec: &WorkloadSpec,
        n: u32,
        mode: CopyMode,
        cpus: CpuList,
    ) -> Result<Copies> {
        Ok(Copies {
            spec: spec.clone(),
            n: n as usize,
            mode,
            cpus: cpus.iter().collect(),
            first: spec.build()?,
            shared: None,
            copies: Vec::new(),
            own_ops: 0,
            others_ops: 0,
            wall_ns: 0,
        })
    }

    fn cpu_of(&self, i: usize) -> Option<usize> {
        (!self.cpus.is_empty()).then(|| self.cpus[i % self.cpus.len()])
    }

    fn check_copies(&self) -> Result<()> {
        let s = self.shared.as_ref().expect("setup made it");
        for i in 1..self.n {
            if s.line(i).state.load(Ordering::Acquire) == FAILED {
                bail!(
                    "copy {i} of {} failed (its workload's error is in its own process; run \
                     one copy to see it)",
                    self.n
                );
            }
        }
        Ok(())
    }
}

fn pin(cpu: Option<usize>) {
    if let Some(c) = cpu
        && let Ok(one) = CpuList::parse(&c.to_string())
    {
        let _ = crate::core::cpus::set_affinity(&one);
    }
}

impl Workload for Copies {
    fn setup(&mut self) -> Result<()> {
        let shared = std::sync::Arc::new(Shared::new(self.n)?);
        self.shared = Some(shared.clone());
        // The other copies start first, while the worker is still one thread (fork is safe).
        for i in 1..self.n {
            let cpu = self.cpu_of(i);
            match self.mode {
                CopyMode::Process => {
                    // SAFETY: fork; the child runs the copy loop (glibc's malloc is usable
                    // after fork) and leaves with _exit, never returning into the worker.
                    let pid = unsafe { libc::fork() };
                    if pid < 0 {
                        bail!(
                            "copies: fork of copy {i}: {}",
                            std::io::Error::last_os_error()
                        );
                    }
                    if pid == 0 {
                        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
                        pin(cpu);
                        let line = shared.line(i);
                        let ok = copy_loop(&self.spec, line, shared.stop()).is_ok();
                        if !ok {
                            line.state.store(FAILED, Ordering::Release);
                        }
                        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
                    }
                    self.copies.push(Copy::Process(pid));
                }
                CopyMode::Thread => {
                    let (spec, s) = (self.spec.clone(), shared.clone());
                    let h = std::thread::Builder::new()
                        .name(format!("syscost-copy-{i}"))
                        .spawn(move || {
                            pin(cpu);
                            if copy_loop(&spec, s.line(i), s.stop()).is_err() {
                                s.line(i).state.store(FAILED, Ordering::Release);
                            }
                        })?;
                    self.copies.push(Copy::Thread(h));
                }
            }
        }
        pin(self.cpu_of(0));
        self.first.setup()?;
        // Every copy set up before anything is timed.
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        while (1..self.n).any(|i| shared.line(i).state.load(Ordering::Acquire) != READY) {
            self.check_copies()?;
            if Instant::now() > deadline {
                bail!("copies: not every copy was set up within 60 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    fn before_batch(&mut self, ops: u64) -> Result<()> {
        self.first.before_batch(ops)
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let s = self.shared.as_ref().expect("setup made it");
        let before = s.others();
        let t = Instant::now();
        let r = self.first.run_batch(ops);
        let ns = t.elapsed().as_nanos();
        let after = s.others();
        r?;
        self.check_copies()?;
        self.own_ops += ops;
        self.others_ops += after - before;
        self.wall_ns += ns;
        Ok(())
    }

    fn after_batch(&mut self) -> Result<()> {
        self.first.after_batch()
    }

    fn notes(&self) -> Vec<String> {
        let mut n = self.first.notes();
        n.push(format!(
            "{} copies as {}, pinned one per CPU{}; time per op is copy 0's",
            self.n,
            match self.mode {
                CopyMode::Process => "processes",
                CopyMode::Thread => "threads",
            },
            if self.cpus.len() < self.n {
                " (more copies than CPUs: they share)"
            } else {
                ""
            }
        ));
        n
    }

    fn finish(&mut self) -> Result<()> {
        self.check_copies()?;
        self.first.finish()
    }

    fn run_metrics(&self) -> Vec<(String, f64)> {
        let mut m = self.first.run_metrics();
        if self.wall_ns > 0 {
            let total = (self.own_ops + self.others_ops) as f64 / (self.wall_ns as f64 / 1e9);
            m.push(("total-throughput".into(), total / 1e6));
            m.push(("per-copy-throughput".into(), total / 1e6 / self.n as f64));
        }
        m
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(s) = &self.shared {
            s.stop().store(1, Ordering::Release);
        }
        for c in self.copies.drain(..) {
            match c {
                Copy::Process(pid) => {
                    // SAFETY: reaping our own child; it stops at its next batch.
                    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
                }
                Copy::Thread(h) => {
                    let _ = h.join();
                }
            }
        }
        self.first.teardown()
    }
}
