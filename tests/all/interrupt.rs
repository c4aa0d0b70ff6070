//! End-to-end: SIGINT and SIGTERM stop a run cleanly: the worker is stopped, syscost exits with
//! 128 + the signal, and neither a result nor a temporary file is left behind.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

crate::tests! {
    Serial sigint_stops_cleanly,
    Serial sigterm_stops_cleanly,
    Serial a_signal_stops_both_runs_of_a_paced_round,
    Serial sigkill_of_syscost_stops_its_worker,
    Serial sigkill_of_a_paced_ab_stops_both_workers,
    Shared analysis_commands_stop_within_a_second,
}

/// The pids of syscost `pid`'s workers once `n` are alive (within 20 s).
fn workers_of(pid: u32, n: usize) -> Vec<i32> {
    let children = format!("/proc/{pid}/task/{pid}/children");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let alive: Vec<i32> = std::fs::read_to_string(&children)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if alive.len() >= n {
            return alive;
        }
        assert!(
            Instant::now() < deadline,
            "{n} worker(s) did not start: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn interrupt_with(sig: i32) {
    interrupt(
        &["run", "syscall", "--runs", "50", "--sample-time", "50ms"],
        sig,
        1,
    );
}

/// Start syscost with `args` (and `-o FILE`), wait until `workers` workers are alive, signal
/// syscost alone with `sig`, and check that it stopped cleanly: its workers gone, no result.
fn interrupt(args: &[&str], sig: i32, workers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // -o among the command's own options: before `--`, if any.
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(&args[..split])
        .arg("-o")
        .arg(&out)
        .args(&args[split..])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let worker = workers_of(child.id(), workers);
    // Let it get into its samples.
    std::thread::sleep(Duration::from_millis(300));
    // Only the parent is signalled, as `kill PID` would: it must pass the stop on.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.code(),
        Some(128 + sig),
        "status {status:?}, stderr: {err}"
    );
    assert!(err.contains("interrupted"), "{err}");
    assert!(!out.exists(), "no result after an interrupted run");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file"
    );
    assert!(status.signal().is_none());
    for pid in worker {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| s.contains(") Z "))
                    .unwrap_or(true),
            "worker {pid} is gone"
        );
    }
}

fn sigint_stops_cleanly() {
    interrupt_with(libc::SIGINT);
}

fn sigterm_stops_cleanly() {
    interrupt_with(libc::SIGTERM);
}

// `ab` keeps the two runs of a round alive together (they take turns sample by sample): a
// signal stops both, the one measuring and the one waiting for its turn.
fn a_signal_stops_both_runs_of_a_paced_round() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        interrupt(
            &[
                "ab",
                "--variant",
                "spin --iterations 100",
                "--variant",
                "spin --iterations 110",
                "--",
                "--runs",
                "50",
                "--sample-time",
                "50ms",
                "--no-history",
            ],
            sig,
            2,
        );
    }
}

fn sigkill_of_syscost_stops_its_worker() {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(["run", "syscall", "--runs", "50", "--ops", "200000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let worker = workers_of(child.id(), 1)[0];
    child.kill().unwrap();
    child.wait().unwrap();
    // The orphaned worker gets SIGTERM from the kernel and stops within a sample or two.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{worker}")).exists() {
        assert!(
            Instant::now() < deadline,
            "worker {worker} outlived syscost"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// SIGKILL of `ab` mid-round: the worker that was measuring gets its parent-death signal, the
// one waiting for its turn sees its pipe close; neither outlives syscost.
fn sigkill_of_a_paced_ab_stops_both_workers() {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .args([
            "ab",
            "--variant",
            "spin",
            "--variant",
            "spin --iterations 2000",
        ])
        .args(["--", "--runs", "50", "--ops", "20000", "--no-history"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let workers = workers_of(child.id(), 2);
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for w in workers {
        while std::path::Path::new(&format!("/proc/{w}")).exists() {
            assert!(Instant::now() < deadline, "worker {w} outlived syscost");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Commands that change nothing on the machine stopped only when their computation ended (a
/// long cachesets Monte Carlo ignored Ctrl-C for minutes): they now exit within a second.
fn analysis_commands_stop_within_a_second() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
            .env("SYSCOST_HISTORY", TEST_HISTORY)
            .args([
                "cachesets",
                "--objects",
                "100000",
                "--size",
                "400",
                "--trials",
                "10000000",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "still computing when signalled"
        );
        let sent = Instant::now();
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(1),
                "still running 1 s after the signal"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(128 + sig));
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(err.contains("interrupted by"), "{err}");
    }
}
