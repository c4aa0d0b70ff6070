//! Inter-process communication round trips and signals, as lmbench (lat_pipe, lat_unix,
//! lat_tcp, lat_udp, lat_ctx, lat_sig) and perf bench (sched pipe, futex) time them. One
//! operation is one round trip: a byte (or a wake-up) to a partner that sends it straight back.
//! The partner is a child process (pipe, unix, tcp, udp, ctx) or a thread (futex, eventfd),
//! pinned with the worker (`--cpu`) when the worker is, so a round trip is two context switches
//! on one CPU as lat_ctx measures. Every transfer's size is checked; the partner is killed and
//! reaped at teardown, and dies with the worker (PR_SET_PDEATHSIG) if that is killed.

use super::{Spec, Workload};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::IntoRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// What one round trip goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum IpcOp {
    /// A byte over a pipe to a child process and back over another (lat_pipe, perf bench sched
    /// pipe).
    Pipe,
    /// A byte over an AF_UNIX stream socket pair to a child and back (lat_unix).
    Unix,
    /// A byte over a TCP connection on 127.0.0.1 to a child and back (lat_tcp; TCP_NODELAY).
    Tcp,
    /// A 1-byte datagram over UDP on 127.0.0.1 to a child and back (lat_udp).
    Udp,
    /// lat_ctx: a token over pipes between two processes that each sum a working set of
    /// --working-set KiB before passing it on; a round trip is two context switches.
    Ctx,
    /// A futex wake/wait ping-pong between two threads of the worker (perf bench futex).
    Futex,
    /// An eventfd write/read ping-pong between two threads of the worker.
    Eventfd,
    /// SIGUSR1 sent to the worker's own thread (tgkill(2), kill(2) of a single-threaded
    /// process) and caught by a handler (lat_sig catch).
    Signal,
    /// sigaction(2) installing a SIGUSR1 handler (lat_sig install).
    Sigaction,
}

impl IpcOp {
    fn name(self) -> &'static str {
        match self {
            IpcOp::Pipe => "pipe",
            IpcOp::Unix => "unix",
            IpcOp::Tcp => "tcp",
            IpcOp::Udp => "udp",
            IpcOp::Ctx => "ctx",
            IpcOp::Futex => "futex",
            IpcOp::Eventfd => "eventfd",
            IpcOp::Signal => "signal",
            IpcOp::Sigaction => "sigaction",
        }
    }
}

/// Options of `syscost run ipc`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// The channel of one round trip.
    #[arg(long, value_enum, default_value_t = IpcOp::Pipe)]
    pub op: IpcOp,
    /// `--op ctx`: KiB of memory each process sums before passing the token (lat_ctx's size;
    /// 0 is a bare switch).
    #[arg(long, default_value_t = 0, value_name = "KIB")]
    #[serde(default)]
    pub working_set: u32,
}

impl Spec for Params {
    const NAME: &'static str = "ipc";
    const OP_NAME: &'static str = "round-trip";
    const ABOUT: &'static str = "IPC round trips and signals as lmbench and perf bench time \
        them: pipe, unix, tcp, udp, ctx (lat_ctx), futex, eventfd, signal, sigaction";
    const EXAMPLES: &'static str = "Examples:
  syscost run ipc --op pipe --cpu 1
      a byte to a child and back over pipes, both on CPU 1: two context switches per round trip
  syscost run ipc --op ctx --working-set 64 --cpu 1
      lat_ctx with 64 KiB per process
  syscost ab --variant 'ipc --op unix' --variant 'ipc --op tcp' -- --cpu 1
      what TCP's stack adds to a local round trip";

    fn build(&self) -> Result<Box<dyn Workload>> {
        if self.working_set > 1 << 20 {
            bail!("--working-set {} KiB: at most 1 GiB", self.working_set);
        }
        if self.working_set != 0 && self.op != IpcOp::Ctx {
            bail!("--working-set is lat_ctx's size: it goes with --op ctx");
        }
        Ok(Box::new(Ipc {
            op: self.op,
            working_set: vec![1u64; self.working_set as usize * 1024 / 8],
            partner: Partner::None,
            fds: (-1, -1),
            futex_turn: None,
        }))
    }

    fn not_as_threads(&self) -> Option<&'static str> {
        matches!(self.op, IpcOp::Signal | IpcOp::Sigaction)
            .then_some("a process has one SIGUSR1 handler and one count of its catches")
    }

    /// The worker's own calls per round trip, as strace counts them.
    fn syscalls(&self) -> Vec<u32> {
        let nrs: &[libc::c_long] = match self.op {
            IpcOp::Pipe | IpcOp::Unix | IpcOp::Tcp | IpcOp::Ctx | IpcOp::Eventfd => {
                &[libc::SYS_write, libc::SYS_read]
            }
            IpcOp::Udp => &[libc::SYS_sendto, libc::SYS_recvfrom],
            IpcOp::Futex => &[libc::SYS_futex],
            IpcOp::Signal => &[libc::SYS_tgkill, libc::SYS_rt_sigreturn],
            IpcOp::Sigaction => &[libc::SYS_rt_sigaction],
        };
        nrs.iter().map(|&n| n as u32).collect()
    }

    fn waits(&self) -> Option<&'static str> {
        match self.op {
            IpcOp::Signal | IpcOp::Sigaction => None,
            _ => Some("each side of a round trip waits for the other"),
        }
    }

    fn counting_perturbs(&self) -> Option<&'static str> {
        // Measured on this project's VM, a pipe round trip: 5.0 us uncounted, 6.2 us with any
        // one event (the worker's perf context is switched out and in with it), 7.2 us with
        // the default list; lmbench's lat_pipe counts nothing.
        self.waits().map(|_| {
            "each round trip switches the worker out and back in, and every counting event \
             adds work to both switches (about 20% of a pipe round trip for the first event \
             and 5% for each more, measured on a VM)"
        })
    }

    fn describe(&self) -> String {
        match self.op {
            IpcOp::Ctx => format!("ipc ctx, {} KiB working set", self.working_set),
            op => format!("ipc {}", op.name()),
        }
    }
}

enum Partner {
    None,
    Child(libc::pid_t),
    Thread {
        stop: Arc<AtomicBool>,
        handle: std::thread::JoinHandle<()>,
        wake: Box<dyn Fn() + Send>,
    },
}

pub(crate) struct Ipc {
    op: IpcOp,
    working_set: Vec<u64>,
    partner: Partner,
    /// The worker's ends: where it writes and where it reads (one socket for both on unix,
    /// tcp and udp; the eventfds for eventfd).
    fds: (libc::c_int, libc::c_int),
    futex_turn: Option<Arc<AtomicU32>>,
}

fn errno(what: &str) -> anyhow::Error {
    let e = std::io::Error::last_os_error();
    let hint = crate::core::limits::hint(&e, what.contains("fork") || what.contains("thread"));
    anyhow::anyhow!("ipc: {what} failed: {e}{hint}")
}

fn pipe() -> Result<(libc::c_int, libc::c_int)> {
    let mut p = [0; 2];
    // SAFETY: pipe2 fills two descriptors.
    if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno("pipe2"));
    }
    Ok((p[0], p[1]))
}

/// Sum a working set, as lat_ctx does between passes (the compiler must not drop it).
fn touch(ws: &[u64]) -> u64 {
    std::hint::black_box(ws.iter().fold(0u64, |a, x| a.wrapping_add(*x)))
}

/// Fork a child that echoes each byte from `rx` back to `tx` (summing `ws` first) until
/// either end closes; it dies with its parent. In the child only read, write and _exit run
/// (async-signal-safe after fork).
fn fork_echo(rx: libc::c_int, tx: libc::c_int, ws: &[u64], datagram: bool) -> Result<libc::pid_t> {
    // SAFETY: fork; the child runs only async-signal-safe calls and the pure `touch` loop.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno("fork of the echo partner"));
    }
    if pid == 0 {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            let mut b = 0u8;
            let p = &mut b as *mut u8 as *mut libc::c_void;
            loop {
                let n = if datagram {
                    libc::recv(rx, p, 1, 0)
                } else {
                    libc::read(rx, p, 1)
                };
                if n != 1 {
                    libc::_exit(0);
                }
                if !ws.is_empty() {
                    touch(ws);
                }
                let w = if datagram {
                    libc::send(tx, p, 1, 0)
                } else {
                    libc::write(tx, p, 1)
                };
                if w != 1 {
                    libc::_exit(1);
                }
            }
        }
    }
    Ok(pid)
}

fn close(fd: libc::c_int) {
    if fd >= 0 {
        // SAFETY: closing a descriptor this workload opened.
        unsafe { libc::close(fd) };
    }
}

static CAUGHT: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_usr1(_: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

fn install_usr1() -> Result<()> {
    // SAFETY: installing a handler that only increments an atomic.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_usr1 as *const () as usize;
        libc::sigemptyset(&mut act.sa_mask);
        if libc::sigaction(libc::SIGUSR1, &act, std::ptr::null_mut()) != 0 {
            return Err(errno("sigaction(SIGUSR1)"));
        }
    }
    Ok(())
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32) {
    // SAFETY: FUTEX_WAIT/WAKE on a live, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

impl Ipc {
    fn start_child(&mut self) -> Result<()> {
        let ws = &self.working_set;
        match self.op {
            IpcOp::Pipe | IpcOp::Ctx => {
                let (to_child_r, to_child_w) = pipe()?;
                let (to_parent_r, to_parent_w) = pipe()?;
                let pid = fork_echo(to_child_r, to_parent_w, ws, false);
                close(to_child_r);
                close(to_parent_w);
                self.fds = (to_child_w, to_parent_r);
                self.partner = Partner::Child(pid?);
            }
            IpcOp::Unix => {
                let mut sv = [0; 2];
                // SAFETY: socketpair fills two descriptors.
                if unsafe {
                    libc::socketpair(
                        libc::AF_UNIX,
                        libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                        0,
                        sv.as_mut_ptr(),
                    )
                } != 0
                {
                    return Err(errno("socketpair(AF_UNIX)"));
                }
                let pid = fork_echo(sv[1], sv[1], ws, false);
                close(sv[1]);
                self.fds = (sv[0], sv[0]);
                self.partner = Partner::Child(pid?);
            }
            IpcOp::Tcp => {
                let l = TcpListener::bind("127.0.0.1:0").context("ipc tcp: bind 127.0.0.1")?;
                let a = TcpStream::connect(l.local_addr()?).context("ipc tcp: connect")?;
                let (b, _) = l.accept().context("ipc tcp: accept")?;
                a.set_nodelay(true)?;
                b.set_nodelay(true)?;
                let (a, b) = (a.into_raw_fd(), b.into_raw_fd());
                let pid = fork_echo(b, b, ws, false);
                close(b);
                self.fds = (a, a);
                self.partner = Partner::Child(pid?);
            }
            IpcOp::Udp => {
                let a = UdpSocket::bind("127.0.0.1:0").context("ipc udp: bind 127.0.0.1")?;
                let b = UdpSocket::bind("127.0.0.1:0").context("ipc udp: bind 127.0.0.1")?;
                a.connect(b.local_addr()?)?;
                b.connect(a.local_addr()?)?;
                let (a, b) = (a.into_raw_fd(), b.into_raw_fd());
                let pid = fork_echo(b, b, ws, true);
                close(b);
                self.fds = (a, a);
                self.partner = Partner::Child(pid?);
            }
            _ => unreachable!("not a process partner"),
        }
        Ok(())
    }

    fn start_thread(&mut self) -> Result<()> {
        let stop = Arc::new(AtomicBool::new(false));
        match self.op {
            IpcOp::Futex => {
                // 0: the worker's turn; 1: the partner's.
                let turn = Arc::new(AtomicU32::new(0));
                let (t, s) = (turn.clone(), stop.clone());
                let handle = std::thread::Builder::new()
                    .name("syscost-futex".into())
                    .spawn(move || {
                        while !s.load(Ordering::Acquire) {
                            while t.load(Ordering::Acquire) == 0 && !s.load(Ordering::Acquire) {
                                futex(&t, libc::FUTEX_WAIT, 0);
                            }
                            t.store(0, Ordering::Release);
                            futex(&t, libc::FUTEX_WAKE, 1);
                        }
                    })
                    .context("ipc futex: starting the partner thread")?;
                let w = turn.clone();
                self.futex_turn = Some(turn);
                self.partner = Partner::Thread {
                    stop,
                    handle,
                    wake: Box::new(move || {
                        w.store(1, Ordering::Release);
                        futex(&w, libc::FUTEX_WAKE, 1);
                    }),
                };
            }
            IpcOp::Eventfd => {
                // SAFETY: eventfd returns a descriptor or -1.
                let (ping, pong) = unsafe {
                    (
                        libc::eventfd(0, libc::EFD_CLOEXEC),
                        libc::eventfd(0, libc::EFD_CLOEXEC),
                    )
                };
                if ping < 0 || pong < 0 {
                    close(ping);
                    close(pong);
                    return Err(errno("eventfd"));
                }
                let s = stop.clone();
                let handle = std::thread::Builder::new()
                    .name("syscost-eventfd".into())
                    .spawn(move || {
                        let mut v = 0u64;
                        let p = &mut v as *mut u64 as *mut libc::c_void;
                        // SAFETY: 8-byte reads and writes on the eventfds, which outlive the
                        // thread (closed after the join).
                        while unsafe { libc::read(ping, p, 8) } == 8 && !s.load(Ordering::Acquire)
                        {
                            let one = 1u64;
                            unsafe { libc::write(pong, &one as *const u64 as *const _, 8) };
                        }
                    })
                    .context("ipc eventfd: starting the partner thread")?;
                self.fds = (ping, pong);
                self.partner = Partner::Thread {
                    stop,
                    handle,
                    wake: Box::new(move || {
                        let one = 1u64;
                        // SAFETY: as above.
                        unsafe { libc::write(ping, &one as *const u64 as *const _, 8) };
                    }),
                };
            }
            _ => unreachable!("not a thread partner"),
        }
        Ok(())
    }
}

/// `ops` SIGUSR1s to this thread, each caught by the handler before tgkill returns (kill(2) of
/// a process may pick another of its threads).
///
/// # Safety
/// The SIGUSR1 handler `on_usr1` must be installed.
unsafe fn signal_batch(ops: u64) -> Result<()> {
    let before = CAUGHT.load(Ordering::Relaxed);
    // SAFETY: signals to this very thread, whose handler is installed.
    unsafe {
        let (me, tid) = (libc::getpid(), libc::gettid());
        for _ in 0..ops {
            if libc::syscall(libc::SYS_tgkill, me, tid, libc::SIGUSR1) != 0 {
                return Err(errno("tgkill(self, SIGUSR1)"));
            }
        }
    }
    let caught = CAUGHT.load(Ordering::Relaxed) - before;
    if caught != ops {
        bail!("ipc signal: {ops} SIGUSR1 sent, {caught} caught by the handler");
    }
    Ok(())
}

/// `ops` installs of the SIGUSR1 handler. The previous action is asked for, as lat_sig install
/// asks (and as code that installs a handler usually does): the kernel copies it out too.
///
/// # Safety
/// Changes this process's SIGUSR1 action (to the same handler `setup` installed).
unsafe fn sigaction_batch(ops: u64) -> Result<()> {
    // SAFETY: zeroed sigaction structs are valid; the handler is this module's.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_usr1 as *const () as usize;
        libc::sigemptyset(&mut act.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        for _ in 0..ops {
            if libc::sigaction(libc::SIGUSR1, &act, &mut old) != 0 {
                return Err(errno("sigaction(SIGUSR1)"));
            }
        }
    }
    Ok(())
}

impl Workload for Ipc {
    fn setup(&mut self) -> Result<()> {
        match self.op {
            IpcOp::Pipe | IpcOp::Ctx | IpcOp::Unix | IpcOp::Tcp | IpcOp::Udp => {
                self.start_child()?
            }
            IpcOp::Futex | IpcOp::Eventfd => self.start_thread()?,
            IpcOp::Signal | IpcOp::Sigaction => install_usr1()?,
        }
        // One round trip up front: a partner that cannot answer is found before timing.
        self.run_batch(1)
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let mut b = 0u8;
        let p = &mut b as *mut u8 as *mut libc::c_void;
        let (tx, rx) = self.fds;
        // SAFETY: reads and writes of one byte (eight for eventfd) on descriptors this
        // workload owns; kill and sigaction on this process's own SIGUSR1.
        unsafe {
            match self.op {
                IpcOp::Pipe | IpcOp::Ctx | IpcOp::Unix | IpcOp::Tcp => {
                    for _ in 0..ops {
                        if !self.working_set.is_empty() {
                            touch(&self.working_set);
                        }
                        if libc::write(tx, p, 1) != 1 {
                            return Err(errno(&format!("{} write of the byte", self.op.name())));
                        }
                        if libc::read(rx, p, 1) != 1 {
                            return Err(errno(&format!(
                                "{} read of the byte back (the partner is gone?)",
                                self.op.name()
                            )));
                        }
                    }
                }
                IpcOp::Udp => {
                    for _ in 0..ops {
                        if libc::send(tx, p, 1, 0) != 1 {
                            return Err(errno("udp send"));
                        }
                        if libc::recv(rx, p, 1, 0) != 1 {
                            return Err(errno("udp recv of the datagram back"));
                        }
                    }
                }
                IpcOp::Futex => {
                    let Partner::Thread { wake, .. } = &self.partner else {
                        bail!("ipc futex: no partner thread");
                    };
                    let turn = self.futex_turn.as_ref().expect("setup made it");
                    for _ in 0..ops {
                        wake();
                        while turn.load(Ordering::Acquire) == 1 {
                            futex(turn, libc::FUTEX_WAIT, 1);
                        }
                    }
                }
                IpcOp::Eventfd => {
                    let Partner::Thread { wake, .. } = &self.partner else {
                        bail!("ipc eventfd: no partner thread");
                    };
                    let mut v = 0u64;
                    for _ in 0..ops {
                        wake();
                        if libc::read(rx, &mut v as *mut u64 as *mut _, 8) != 8 {
                            return Err(errno("eventfd read of the answer"));
                        }
                    }
                }
                IpcOp::Signal => signal_batch(ops)?,
                IpcOp::Sigaction => sigaction_batch(ops)?,
            }
        }
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        match self.op {
            // lat_sig.c's bench_catch times kill(me, SIGUSR1) with a handler, then subtracts
            // the time of kill(me, 0) (its "cost of sending"): here 2.3 us a signal against
            // about 0.4 us for kill(me, 0), so lmbench's figure is about 20% lower
            // (bench/lmbench_gaps.sh signal measures both).
            IpcOp::Signal => vec![
                "This is the whole signal: tgkill, delivery, the handler and rt_sigreturn. \
                 lmbench's lat_sig catch (\"Signal handler overhead\") prints the same loop's \
                 time less that of kill(getpid(), 0), so it is lower by the cost of that system \
                 call"
                    .into(),
            ],
            _ => Vec::new(),
        }
    }

    fn teardown(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.partner, Partner::None) {
            Partner::None => {}
            Partner::Child(pid) => {
                // SAFETY: kill and reap our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
            }
            Partner::Thread { stop, handle, wake } => {
                stop.store(true, Ordering::Release);
                wake();
                let _ = handle.join();
            }
        }
        let (a, b) = std::mem::replace(&mut self.fds, (-1, -1));
        close(a);
        if b != a {
            close(b);
        }
        if matches!(self.op, IpcOp::Signal | IpcOp::Sigaction) {
            // SAFETY: back to the default disposition syscost found.
            unsafe { libc::signal(libc::SIGUSR1, libc::SIG_DFL) };
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_round_trip_completes_and_the_partner_goes() {
        for op in [
            IpcOp::Pipe,
            IpcOp::Unix,
            IpcOp::Tcp,
            IpcOp::Udp,
            IpcOp::Ctx,
            IpcOp::Futex,
            IpcOp::Eventfd,
            IpcOp::Signal,
            IpcOp::Sigaction,
        ] {
            let ws = if op == IpcOp::Ctx { 16 } else { 0 };
            let mut w = Params {
                op,
                working_set: ws,
            }
            .build()
            .unwrap();
            w.setup().unwrap();
            w.run_batch(200).unwrap();
            w.teardown().unwrap();
        }
        assert!(
            Params {
                op: IpcOp::Pipe,
                working_set: 4
            }
            .build()
            .is_err()
        );
    }
}
