//! SIGINT, SIGTERM and SIGHUP in the parent process.
//!
//! A thread takes the signals instead of the default action (which would kill syscost before it
//! could undo what it changed on the machine). It records the signal and passes SIGTERM on to
//! the worker being waited for, which stops at its next sample boundary and tears its workload
//! down. The main thread then sees [`Interrupted`] from [`check`], unwinds through its guards
//! (which undo syscost's changes), and exits with 128 + the signal number.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

static CAUGHT: AtomicI32 = AtomicI32::new(0);
/// Commands that change nothing on the machine exit at once on a signal (see [`exit_promptly`]).
static PROMPT: AtomicBool = AtomicBool::new(false);
/// Writes in progress that a prompt exit waits for (see [`Defer`]).
static DEFERRED: AtomicUsize = AtomicUsize::new(0);
/// The workers being waited for (several when the runs of a round are alive together); 0 is
/// a free slot.
static CHILDREN: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// The error that unwinds syscost after a signal.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {}", signal_name(*.0))]
pub struct Interrupted(pub i32);

impl Interrupted {
    /// The conventional exit status for death by this signal.
    pub fn exit_code(&self) -> i32 {
        128 + self.0
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Take over SIGINT, SIGTERM and SIGHUP for the rest of the process (idempotent). An error
/// when the thread that takes them cannot start: syscost could then not undo its changes on
/// Ctrl-C, so it must not make any.
pub fn install() -> Result<(), String> {
    INSTALLED
        .get_or_init(|| {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
                Ok(mut signals) => {
                    std::thread::Builder::new()
                        .name("syscost-signals".into())
                        .spawn(move || {
                            for sig in signals.forever() {
                                CAUGHT.store(sig, Ordering::SeqCst);
                                for slot in &CHILDREN {
                                    let child = slot.load(Ordering::SeqCst);
                                    if child > 0 {
                                        // SAFETY: plain kill(2) of our own child.
                                        unsafe { libc::kill(child, libc::SIGTERM) };
                                    }
                                }
                                if PROMPT.load(Ordering::SeqCst) {
                                    while DEFERRED.load(Ordering::SeqCst) > 0 {
                                        std::thread::sleep(std::time::Duration::from_millis(5));
                                    }
                                    eprintln!("syscost: {}; stopped", Interrupted(sig));
                                    std::process::exit(128 + sig);
                                }
                            }
                        })
                        .map(|_| ())
                        .map_err(|e| {
                            format!(
                                "cannot start syscost's signal-handling thread: {e}{}",
                                crate::core::limits::hint(&e, true)
                            )
                        })
                }
                Err(e) => {
                    eprintln!("syscost: warning: cannot handle signals: {e}");
                    Ok(())
                }
            }
        })
        .clone()
}

/// For commands that change nothing on the machine (compare, merge, correlate, report,
/// cachesets, show, env): a signal ends the process at once, with 128 + the signal, rather
/// than at the next [`check`], which long computations (a bootstrap, a Monte Carlo run) do not
/// reach for seconds. A write in progress ([`Defer`]) is finished first, so no output is left
/// half written.
pub fn exit_promptly() -> Result<(), String> {
    install()?;
    PROMPT.store(true, Ordering::SeqCst);
    Ok(())
}

/// While alive, a prompt exit waits: hold one around writing an output file.
pub struct Defer;

impl Defer {
    pub fn new() -> Defer {
        DEFERRED.fetch_add(1, Ordering::SeqCst);
        Defer
    }
}

impl Default for Defer {
    fn default() -> Defer {
        Defer::new()
    }
}

impl Drop for Defer {
    fn drop(&mut self) {
        DEFERRED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `Err(Interrupted)` once a signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => Ok(()),
        s => Err(Interrupted(s)),
    }
}

/// Registers a worker being waited for, so a signal reaches it; unregisters on drop. Beyond
/// 16 workers at once a signal does not reach the others directly; they still stop, when
/// their pipe to syscost closes or when syscost dies (their parent-death signal).
pub struct ChildGuard(Option<usize>);

impl ChildGuard {
    pub fn new(pid: u32) -> ChildGuard {
        let slot = CHILDREN.iter().position(|c| {
            c.compare_exchange(0, pid as i32, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        if CAUGHT.load(Ordering::SeqCst) != 0 {
            // The signal came between the check and the spawn.
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        ChildGuard(slot)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            CHILDREN[i].store(0, Ordering::SeqCst);
        }
    }
}

mod child;
pub(crate) use child::{Guarded, Stopped};
