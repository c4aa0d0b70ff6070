//! The measured worker alone on a counting guest's CPU. Under the emulator every instruction of
//! a window counts, whoever runs it, so a window in which another task ran is left out of the
//! exact counts. At SCHED_OTHER the worker is preempted by whatever wakes: kauditd, woken by
//! the audit records of the worker's own counter reads when the rules name read(2) (20 of 21
//! windows lost per boot of Debian's 6.12 with such rules), kworkers and RCU's threads (4 to 7
//! of 21 without audit, on 6.1 and 6.12). The guest is syscost's own, so once the boot's own
//! work has ended (`settle`) its init takes SCHED_FIFO at the top priority before measuring,
//! and the measuring command, its worker and
//! the worker's partners inherit it: a task of the fair class never preempts them, and runs
//! when they sleep (between runs). What would still hand the fair class the CPU is turned off:
//! RT throttling (`kernel.sched_rt_runtime_us`, 95% of each second to RT tasks) and, on
//! kernels that have it (6.12), the fair server's reserve of 50 ms a second
//! (`/sys/kernel/debug/sched/fair_server/cpuN/runtime`); the soft-lockup watchdog, whose
//! stopper thread would still preempt every 4 s (`kernel.soft_watchdog`); and the audit
//! backlog's limit, at which the worker would wait for kauditd.
//! bench/windows_left_out.sh measures the share of windows lost.

use super::mount::mount;

/// The priority the measurement runs at: above every RT kernel thread (only the stop class,
/// CPU hotplug's migration, is higher).
pub(crate) const PRIORITY: i32 = 99;

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
/// Its timer wakes the CPU's stopper thread (the stop class, above any RT task) every 4 s.
const SOFT_WATCHDOG: &str = "/proc/sys/kernel/soft_watchdog";
const DEBUGFS: &str = "/sys/kernel/debug";
const FAIR_SERVER: &str = "/sys/kernel/debug/sched/fair_server";

/// Take SCHED_FIFO [`PRIORITY`] for this process (its children inherit it) and turn off what
/// gives the fair class the CPU under RT load. What could not be done is returned, a warning
/// each: the measurement goes on, and the windows another task ran in are still left out.
pub(crate) fn take_the_cpu() -> Vec<String> {
    let mut warnings = Vec::new();
    if let Err(e) = std::fs::write(RT_RUNTIME, "-1") {
        warnings.push(format!("RT throttling stays on ({RT_RUNTIME}: {e})"));
    }
    if let Err(e) = std::fs::write(SOFT_WATCHDOG, "0") {
        warnings.push(format!(
            "the soft-lockup watchdog stays on ({SOFT_WATCHDOG}: {e})"
        ));
    }
    warnings.extend(fair_server_off());
    warnings.extend(crng_ready());
    let param = libc::sched_param {
        sched_priority: PRIORITY,
    };
    // SAFETY: plain syscall on this process with a valid pointer.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        let e = std::io::Error::last_os_error();
        warnings.push(format!(
            "the measurement runs at SCHED_OTHER (SCHED_FIFO: {e})"
        ));
    }
    warnings
        .into_iter()
        .map(|w| format!("emulated counts: {w}: other tasks may run in more windows"))
        .collect()
}

/// Wait, still at SCHED_OTHER, for the kernel's random number generator to be seeded. On a
/// kernel that does not trust the CPU's RDRAND (a small build without RANDOM_TRUST_CPU), the
/// first read of /dev/urandom (the worker's, for its hash maps) generates entropy from timer
/// jitter, calling schedule() between ticks: at SCHED_FIFO 99 the reader is picked again at
/// once, RCU's kthread starves ("rcu_sched kthread starved") and the measurement never ends.
/// getrandom(2) without flags blocks until the generator is ready, running that same jitter
/// loop while the kernel's threads can still run.
fn crng_ready() -> Option<String> {
    let mut byte = [0u8; 1];
    // SAFETY: one byte into a live buffer.
    let n = unsafe { libc::getrandom(byte.as_mut_ptr().cast(), 1, 0) };
    (n != 1).then(|| {
        let e = std::io::Error::last_os_error();
        format!("the random number generator may not be seeded (getrandom: {e})")
    })
}

/// The audit backlog made unlimited, after the arm's rules and settings are in: every syscall
/// a rule names (the worker's own counter reads, with rules on read(2)) queues a record for
/// kauditd, a fair-class thread that cannot drain the queue while the measurement holds the
/// CPU, and at the limit (64 unless set) the worker would wait for it. A warning when it could
/// not be set; nothing when the kernel has no audit.
pub(crate) fn audit_backlog_unlimited() -> Option<String> {
    const BACKLOG_LIMIT: u32 = 16;
    let mut sock = crate::audit::AuditSocket::open().ok()?;
    let e = sock.set_status(BACKLOG_LIMIT, 0).err()?;
    Some(format!(
        "emulated counts: the audit backlog keeps its limit ({e:#}): other tasks may run in \
         more windows"
    ))
}

/// The fair server's runtime set to 0 on every CPU, where the kernel has one (debugfs mounted
/// for it); `None` when there is nothing to do or it was done.
fn fair_server_off() -> Option<String> {
    let _ = mount("debugfs", DEBUGFS, "debugfs", 0);
    let cpus = std::fs::read_dir(FAIR_SERVER).ok()?;
    let failed: Vec<String> = cpus
        .flatten()
        .map(|cpu| cpu.path().join("runtime"))
        .filter_map(|f| {
            let e = std::fs::write(&f, "0").err()?;
            Some(format!("{}: {e}", f.display()))
        })
        .collect();
    (!failed.is_empty())
        .then(|| format!("the fair server keeps its reserve ({})", failed.join(", ")))
}
