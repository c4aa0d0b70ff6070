//! End-to-end: SIGINT and SIGTERM stop a run cleanly: the worker is stopped, syscost exits with
//! 128 + the signal, and neither a result nor a temporary file is left behind.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn interrupt_with(sig: i32) {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args([
            "run",
            "syscall",
            "--runs",
            "50",
            "--sample-time",
            "50ms",
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a worker is measuring (a child process of syscost exists).
    let deadline = Instant::now() + Duration::from_secs(20);
    let children = format!("/proc/{}/task/{}/children", child.id(), child.id());
    loop {
        let c = std::fs::read_to_string(&children).unwrap_or_default();
        if !c.trim().is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let worker: Vec<i32> = std::fs::read_to_string(&children)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert!(!worker.is_empty(), "a worker was started");
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

#[test]
fn sigint_stops_cleanly() {
    interrupt_with(libc::SIGINT);
}

#[test]
fn sigterm_stops_cleanly() {
    interrupt_with(libc::SIGTERM);
}

#[test]
fn sigkill_of_syscost_stops_its_worker() {
    let _s = serial();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(["run", "syscall", "--runs", "50", "--ops", "200000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let children = format!("/proc/{}/task/{}/children", child.id(), child.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    let worker = loop {
        let c = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(p) = c.split_whitespace().next() {
            break p.parse::<i32>().unwrap();
        }
        assert!(Instant::now() < deadline, "no worker started");
        std::thread::sleep(Duration::from_millis(20));
    };
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

/// Commands that change nothing on the machine stopped only when their computation ended (a
/// long cachesets Monte Carlo ignored Ctrl-C for minutes): they now exit within a second.
#[test]
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
