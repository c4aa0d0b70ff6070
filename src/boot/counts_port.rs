//! The plugin's counts inside the guest, in a LAVA job: syscost's TCG plugin sends each
//! window's `W` line to a socket that QEMU makes the guest's second serial port (the job's
//! extra options), so the guest has its own exact counts and can report them among the job's
//! test cases, where a lab's readers look. (The plugin's log reaches only the console, which
//! the guest cannot read; QEMU 7.2's plugin API cannot write into the guest.)
//!
//! The port is read from before the measurement starts, so that the socket behind it never
//! fills, and taken once its windows are all of the measurement's (or, when they never are,
//! once it has been quiet for a while after the measurement ended).

use crate::counters::emulated::{self, Window};
use anyhow::{Context, Result};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The second serial port, which carries the counts in a lab (the results go on the console
/// there).
pub(crate) const PORT: &str = "/dev/ttyS1";
/// Quiet this long after the measurement, the port has given everything.
const QUIET: Duration = Duration::from_secs(2);
/// Never wait longer than this for it.
const LIMIT: Duration = Duration::from_secs(30);

/// What the port has given so far, and when it last gave something.
type Received = Arc<Mutex<(Vec<u8>, Instant)>>;

pub(crate) struct CountsPort {
    received: Received,
}

impl CountsPort {
    /// The port opened in raw mode, read by a thread of its own from now on.
    pub(crate) fn open() -> Result<CountsPort> {
        let mut port = std::fs::File::open(PORT).with_context(|| format!("cannot open {PORT}"))?;
        raw(port.as_raw_fd());
        let received: Received = Arc::new(Mutex::new((Vec::new(), Instant::now())));
        let into = received.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = port.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut r = into.lock().unwrap_or_else(|e| e.into_inner());
                r.0.extend_from_slice(&buf[..n]);
                r.1 = Instant::now();
            }
        });
        Ok(CountsPort { received })
    }

    /// The windows received: as soon as they are `complete` (every batch the measurement
    /// opened has its window), else once the port has been quiet for [`QUIET`] (or after
    /// [`LIMIT`]).
    pub(crate) fn windows(self, complete: impl Fn(&[Window]) -> bool) -> Vec<Window> {
        wait(&self.received, complete)
    }
}

/// What [`CountsPort::windows`] waits for, over what the port's reader received.
fn wait(received: &Received, complete: impl Fn(&[Window]) -> bool) -> Vec<Window> {
    let start = Instant::now();
    let mut tried = None;
    loop {
        let (bytes, last) = {
            let r = received.lock().unwrap_or_else(|e| e.into_inner());
            (r.0.clone(), r.1)
        };
        // Whole lines only: a line still arriving could read as a window with a number cut.
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let windows = emulated::windows(&String::from_utf8_lossy(&bytes[..whole]));
        // Judged again only when more came.
        if tried != Some(windows.len()) && complete(&windows) {
            return windows;
        }
        tried = Some(windows.len());
        let quiet = last.elapsed() >= QUIET && start.elapsed() >= QUIET;
        if quiet || start.elapsed() >= LIMIT {
            return emulated::windows(&String::from_utf8_lossy(&bytes));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A serial port's descriptor in raw mode: no echo, no line editing, no translation.
pub(crate) fn raw(fd: i32) {
    // SAFETY: a termios filled by tcgetattr on an open descriptor.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn port() -> Received {
        Arc::new(Mutex::new((Vec::new(), Instant::now())))
    }

    fn give(r: &Received, bytes: &[u8]) {
        let mut r = r.lock().unwrap();
        r.0.extend_from_slice(bytes);
        r.1 = Instant::now();
    }

    #[test]
    fn the_windows_are_taken_once_complete_without_waiting_for_quiet() {
        let r = port();
        let (taken, told) = std::sync::mpsc::channel();
        let writer = {
            let r = r.clone();
            std::thread::spawn(move || {
                give(&r, b"W 1 10 20\n");
                std::thread::sleep(Duration::from_millis(50));
                give(&r, b"W 2 11 21\n");
                // Another window only after the waiter returned, or long after.
                let _ = told.recv_timeout(Duration::from_secs(10));
                give(&r, b"W 3 12 22\n");
            })
        };
        let got = wait(&r, |w| w.len() >= 2);
        taken.send(()).unwrap();
        writer.join().unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
    }

    #[test]
    fn a_line_still_arriving_is_not_a_window_until_it_ends() {
        let r = port();
        give(&r, b"W 1 10 20\nW 2 11 2");
        let seen = Mutex::new(Vec::new());
        let got = wait(&r, |w| {
            seen.lock().unwrap().push(w.len());
            false
        });
        // Judged on the whole line alone; taken whole once quiet.
        assert_eq!(*seen.lock().unwrap(), vec![1]);
        assert_eq!(got.len(), 2);
    }
}
