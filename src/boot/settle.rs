//! A guest waits for its boot's own work to end before it measures. Under the emulator every
//! instruction of a window counts, whoever runs it: a kernel's asynchronous boot work (Debian's
//! 6.12 runs its crypto self-tests in kernel threads for seconds after the init starts) lands
//! in the windows of a measurement that starts at once. The init sleeps until the whole
//! machine's CPU time, from /proc/stat, shows a quiet interval: no busy tick in a tenth of a
//! second (the kernel's threads, its interrupts and their softirqs all count as busy; the
//! init's own reads are a few microseconds).
//!
//! The first line of /proc/stat is read by hand: one line of integers, where a crate such as
//! procfs would bring a whole /proc parser for it.

use std::time::{Duration, Instant};

/// One interval's length: 10 ticks of one CPU at USER_HZ 100. A quarter of a second took
/// 0.25 s more of each boot's settling here than this (24 boots of Debian's 6.1 and 6.12
/// cloud kernels, alternated), and no window of either was left out with it: the measurement
/// that follows is a second of windows of a few milliseconds each.
const INTERVAL: Duration = Duration::from_millis(100);
/// At most this share of an interval's CPU time is busy in a quiet interval.
const QUIET_BUSY: f64 = 0.02;

/// How a wait for the boot's work ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Settled {
    pub seconds: f64,
    /// A quiet interval was seen before the limit.
    pub quiet: bool,
    /// The busy share of the last interval, 0 to 1.
    pub busy: f64,
}

impl Settled {
    /// What the result says when the wait ended without a quiet interval (a quiet one is
    /// shown as the boot's settling time).
    pub(crate) fn warning(&self) -> Option<String> {
        (!self.quiet).then(|| {
            format!(
                "the guest's boot work had not ended after {:.1} s (CPU {:.0}% busy): it was \
                 measured anyway, and windows in which another task ran are left out by their \
                 context switches",
                self.seconds,
                self.busy * 100.0
            )
        })
    }
}

/// Busy and total ticks of every CPU from /proc/stat's first line (`cpu  user nice system
/// idle iowait irq softirq steal ...`): idle and iowait are not busy.
fn ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().next()?;
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = v.iter().sum();
    let idle = v.get(3)? + v.get(4)?;
    Some((total - idle, total))
}

fn read_ticks() -> Option<(u64, u64)> {
    ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Sleep until an interval is quiet, or `limit` has passed.
pub(crate) fn settle(limit: Duration) -> Settled {
    let start = Instant::now();
    let mut last = read_ticks();
    let mut busy = 0.0;
    while start.elapsed() < limit {
        std::thread::sleep(INTERVAL);
        let now = read_ticks();
        if let (Some((b0, t0)), Some((b1, t1))) = (last, now)
            && t1 > t0
        {
            busy = (b1 - b0) as f64 / (t1 - t0) as f64;
            if busy <= QUIET_BUSY {
                return Settled {
                    seconds: start.elapsed().as_secs_f64(),
                    quiet: true,
                    busy,
                };
            }
        }
        last = now;
    }
    Settled {
        seconds: start.elapsed().as_secs_f64(),
        quiet: false,
        busy,
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn ticks_count_everything_but_idle_and_iowait_as_busy() {
        let stat = "cpu  10 1 20 500 5 2 3 4 0 0\ncpu0 10 1 20 500 5 2 3 4 0 0\nintr 1\n";
        assert_eq!(ticks(stat), Some((40, 545)));
        assert_eq!(ticks("intr 1\n"), None);
        assert_eq!(ticks("cpu  1 2 x\n"), None);
    }

    #[test]
    fn this_machine_s_ticks_are_read() {
        let (busy, total) = read_ticks().expect("/proc/stat");
        assert!(total > busy && total > 0);
    }

    #[test]
    fn a_limit_of_zero_does_not_wait() {
        let s = settle(Duration::ZERO);
        assert!(!s.quiet && s.seconds < 0.1, "{s:?}");
        assert!(s.warning().unwrap().contains("had not ended"));
    }
}
