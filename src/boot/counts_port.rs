//! The plugin's counts inside the guest, in a LAVA job: syscost's TCG plugin sends each
//! window's `W` line to a socket that QEMU makes the guest's second serial port (the job's
//! extra options), so the guest has its own exact counts and can report them among the job's
//! test cases, where a lab's readers look. (The plugin's log reaches only the console, which
//! the guest cannot read; QEMU 7.2's plugin API cannot write into the guest.)
//!
//! The port is read from before the measurement starts, so that the socket behind it never
//! fills, and taken once it has been quiet for a while after the measurement ended.

use crate::counters::emulated::{self, Window};
use anyhow::{Context, Result};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The second serial port, which carries the counts in a lab (the results go on the console
/// there).
pub const PORT: &str = "/dev/ttyS1";
/// Quiet this long after the measurement, the port has given everything.
const QUIET: Duration = Duration::from_secs(2);
/// Never wait longer than this for it.
const LIMIT: Duration = Duration::from_secs(30);

/// What the port has given so far, and when it last gave something.
type Received = Arc<Mutex<(Vec<u8>, Instant)>>;

pub struct CountsPort {
    received: Received,
}

impl CountsPort {
    /// The port opened in raw mode, read by a thread of its own from now on.
    pub fn open() -> Result<CountsPort> {
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

    /// The windows received, once the port has been quiet for [`QUIET`] (or after [`LIMIT`]).
    pub fn windows(self) -> Vec<Window> {
        let start = Instant::now();
        loop {
            let r = self.received.lock().unwrap_or_else(|e| e.into_inner());
            let quiet = r.1.elapsed() >= QUIET && start.elapsed() >= QUIET;
            if quiet || start.elapsed() >= LIMIT {
                return emulated::windows(&String::from_utf8_lossy(&r.0));
            }
            drop(r);
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A serial port's descriptor in raw mode: no echo, no line editing, no translation.
pub fn raw(fd: i32) {
    // SAFETY: a termios filled by tcgetattr on an open descriptor.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
}
