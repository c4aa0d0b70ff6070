//! The one way syscost starts a child that must die with it (a kernel build's make, QEMU, a
//! user's build command, git bisect running syscost's steps, a probed command, the measuring
//! workers, a guest's measuring syscost): the kernel sends it SIGKILL when syscost dies, even
//! by SIGKILL (`PR_SET_PDEATHSIG`; SIGTERM to a child that undoes its own changes); a signal
//! syscost takes reaches it (SIGTERM, see [`super::ChildGuard`]); an interruption, a time limit
//! or the end of its owner kills it; and, started as a group of its own, every process it
//! started goes with it (a build's compilers, not only its make). Written here, not with a
//! crate: it is a few system calls around `std::process`, tied to this module's signal
//! handling.

use super::{ChildGuard, Interrupted};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// A started child that dies with syscost.
pub(crate) struct Guarded {
    /// `None` once [`Guarded::output`] has taken it to wait on.
    child: Option<Child>,
    /// It leads a process group of its own, killed whole.
    group: bool,
    ended: bool,
    _guard: ChildGuard,
}

/// How a wait ended short of the child's own end.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// A signal came: the child (its group) was killed.
    Interrupted(Interrupted),
    /// Its time was up: it was killed.
    TimedOut,
}

impl Guarded {
    /// Start `c` (a process group of its own with `group`) so that it dies with syscost: the
    /// kernel sends it SIGKILL when syscost dies.
    pub(crate) fn spawn(c: &mut Command, group: bool) -> std::io::Result<Guarded> {
        Self::start(c, group, libc::SIGKILL)
    }

    /// Start `c`, a child that undoes what it changed when it is told to stop (a worker, a
    /// measuring syscost): when syscost dies the kernel sends it SIGTERM, not SIGKILL, so it
    /// tears its workload down first. It stays in syscost's process group.
    pub(crate) fn spawn_told(c: &mut Command) -> std::io::Result<Guarded> {
        Self::start(c, false, libc::SIGTERM)
    }

    fn start(c: &mut Command, group: bool, death: libc::c_int) -> std::io::Result<Guarded> {
        let parent = std::process::id();
        // SAFETY: setpgid, prctl and getppid are async-signal-safe, and the closure allocates
        // nothing.
        unsafe {
            c.pre_exec(move || {
                if group {
                    libc::setpgid(0, 0);
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, death) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // syscost died before the death signal was set: nothing would kill this.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let child = c.spawn()?;
        let guard = ChildGuard::new(child.id());
        Ok(Guarded {
            child: Some(child),
            group,
            ended: false,
            _guard: guard,
        })
    }

    /// The child, for its pipes and its id.
    pub(crate) fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("a child until its output is taken")
    }

    /// Wait for it to end, polling every `poll` (and calling `each` between polls); killed
    /// on an interruption, or once `limit` has passed since the wait began.
    pub(crate) fn wait(
        &mut self,
        poll: Duration,
        limit: Option<Duration>,
        each: &mut dyn FnMut(&mut Child),
    ) -> std::io::Result<Result<ExitStatus, Stopped>> {
        let started = Instant::now();
        loop {
            if let Err(i) = super::check() {
                self.kill();
                return Ok(Err(Stopped::Interrupted(i)));
            }
            if let Some(s) = self.child().try_wait()? {
                self.ended = true;
                return Ok(Ok(s));
            }
            if limit.is_some_and(|l| started.elapsed() > l) {
                self.kill();
                return Ok(Err(Stopped::TimedOut));
            }
            each(self.child());
            std::thread::sleep(poll);
        }
    }

    /// Wait for it to end, blocked (no polling: a timed child's figure gets no poll's
    /// interval). A signal still ends it: syscost passes SIGTERM on to it (see
    /// [`super::ChildGuard`]), and the caller's next [`super::check`] sees the interruption.
    pub(crate) fn wait_end(&mut self) -> std::io::Result<ExitStatus> {
        let s = self.child().wait()?;
        self.ended = true;
        Ok(s)
    }

    /// Wait for it to end, blocked, with what it wrote to its piped stdout and stderr
    /// ([`std::process::Child::wait_with_output`], the guard kept until it has ended).
    pub(crate) fn output(mut self) -> std::io::Result<Output> {
        let child = self
            .child
            .take()
            .expect("a child until its output is taken");
        self.ended = true;
        child.wait_with_output()
    }

    /// Kill it (its whole group, when it leads one) and reap it.
    pub(crate) fn kill(&mut self) {
        let Some(child) = self.child.as_mut().filter(|_| !self.ended) else {
            return;
        };
        match self.group {
            // SAFETY: kill(2) of the process group this child leads.
            true => unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            },
            false => {
                let _ = child.kill();
            }
        }
        let _ = child.wait();
        self.ended = true;
    }
}

/// A child still running when its owner lets go of it (an error, a panic) is killed.
impl Drop for Guarded {
    fn drop(&mut self) {
        let running = |c: &mut Child| !matches!(c.try_wait(), Ok(Some(_)));
        if !self.ended && self.child.as_mut().is_some_and(running) {
            self.kill();
        }
    }
}

impl Stopped {
    /// The interruption as an error, or `timed_out` for a child whose time was up.
    pub(crate) fn into_error(self, timed_out: impl FnOnce() -> anyhow::Error) -> anyhow::Error {
        match self {
            Stopped::Interrupted(i) => i.into(),
            Stopped::TimedOut => timed_out(),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A group's every process is killed with it: a grandchild too, not only the child.
    #[test]
    fn a_group_dies_whole_and_a_limit_kills() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
        let mut g = Guarded::spawn(&mut sh, true).unwrap();
        while !pidfile.is_file() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let grandchild: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let waited = g.wait(
            Duration::from_millis(10),
            Some(Duration::from_millis(200)),
            &mut |_| {},
        );
        assert!(matches!(waited.unwrap(), Err(Stopped::TimedOut)));
        // Dead: no such process, or a zombie that init has not reaped yet.
        let gone = || {
            let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat"));
            stat.map_or(true, |s| {
                s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'))
            })
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !gone() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            gone(),
            "the grandchild {grandchild} outlived its group's kill"
        );
        let mut ok = Guarded::spawn(&mut Command::new("true"), false).unwrap();
        let s = ok
            .wait(Duration::from_millis(5), None, &mut |_| {})
            .unwrap();
        assert!(s.unwrap().success());
    }

    /// The death signal is the one asked for (SIGKILL, or SIGTERM for a child told to stop),
    /// as the child itself reads it, and its output is both pipes whole.
    #[test]
    fn the_death_signal_is_set_and_the_output_read() {
        use std::process::Stdio;
        let asks = "import ctypes, sys; v = ctypes.c_int(); \
                    ctypes.CDLL(None).prctl(2, ctypes.byref(v)); \
                    sys.stderr.write('e' * 200000); print(v.value)";
        let read = |told: bool| {
            let mut c = Command::new("python3");
            c.args(["-c", asks])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let g = match told {
                true => Guarded::spawn_told(&mut c),
                false => Guarded::spawn(&mut c, false),
            };
            let out = g.unwrap().output().unwrap();
            assert!(out.status.success());
            assert_eq!(out.stderr.len(), 200000);
            String::from_utf8(out.stdout)
                .unwrap()
                .trim()
                .parse::<i32>()
                .unwrap()
        };
        assert_eq!(read(false), libc::SIGKILL);
        assert_eq!(read(true), libc::SIGTERM);
    }

    /// A child let go of while it runs is killed, not left behind.
    #[test]
    fn a_child_let_go_of_is_killed() {
        let g = Guarded::spawn(Command::new("sleep").arg("30"), false).unwrap();
        let pid = g.child.as_ref().unwrap().id() as i32;
        drop(g);
        // SAFETY: signal 0 only asks whether the process exists (it was reaped by the drop).
        assert_ne!(unsafe { libc::kill(pid, 0) }, 0);
    }
}
