//! End-to-end: the lmbench / perf bench hot paths (`run file`, `ipc`, `proc`, `mem`) on this
//! machine. Each checks that its operations happened (counters per op where the kernel counts
//! them: page faults, context switches) and that its time is plausible against a neighbour
//! measured in the same test (never an absolute time); bad input is refused clearly, and an
//! interrupted run leaves neither its partner process nor its file behind.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

crate::tests! {
    Serial file_calls_run_and_rank_plausibly,
    Serial exec_targets_that_cannot_run_are_refused,
    Serial ipc_round_trips_switch_and_cost_more_than_a_syscall,
    Serial processes_are_created_and_reaped,
    Serial page_faults_are_counted_one_per_op,
    Serial an_interrupted_round_trip_leaves_no_partner,
    Serial copies_scale_like_will_it_scale,
    Serial figures_a_command_prints_are_captured,
    Serial limits_reached_are_named,
}

const TINY: &[&str] = &[
    "--runs",
    "3",
    "--samples",
    "2",
    "--warmup",
    "1",
    "--sample-time",
    "10ms",
    "-e",
    "task-clock,context-switches,page-faults",
    "--json",
];

fn run(workload: &str, args: &[&str]) -> Value {
    let cpu = a_cpu();
    let mut all = vec!["run", workload];
    all.extend(args);
    all.extend(["--cpu", &cpu]);
    all.extend(TINY);
    json_of(&all)
}

fn per_op(r: &Value, name: &str) -> f64 {
    median(metric(r, name))
}

fn file_calls_run_and_rank_plausibly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let t = |op: &str| per_op(&run("file", &["--op", op, "--dir", d]), "time");
    let (read, open_close) = (t("read"), t("open-close"));
    assert!(
        open_close > read,
        "open+close ({open_close} ns) costs more than a 1-byte read ({read} ns)"
    );
    let (stat, fstat) = (t("stat"), t("fstat"));
    assert!(stat > fstat, "stat's path walk ({stat}) vs fstat ({fstat})");
    for op in ["write", "pread", "lseek", "dup-close"] {
        assert!(t(op) > 0.0, "{op}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the file is removed"
    );
    refused(
        &["run", "file", "--op", "stat", "--dir", "/no/such/dir"],
        "no such directory",
    );
    // A file system that refuses the file: sysfs lets nobody, root included, create one.
    let err = refused(
        &["run", "file", "--op", "open-close", "--dir", "/sys"],
        "file: cannot create /sys/syscost-file-",
    );
    assert!(err.contains("Permission denied"), "{err}");
}

/// An exec target that is missing or not executable is refused with the errno.
fn exec_targets_that_cannot_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\nexit 0\n").unwrap();
    let plain = plain.to_str().unwrap();
    let exec = |target| {
        [
            "run",
            "exec",
            "--runs",
            "1",
            "--samples",
            "2",
            "--ops",
            "1",
            "--",
            target,
        ]
    };
    let err = refused(&exec(plain), "cannot run");
    assert!(err.contains("Permission denied"), "{err}");
    let err = refused(&exec("/no/such/program"), "cannot run");
    assert!(err.contains("No such file"), "{err}");
}

fn ipc_round_trips_switch_and_cost_more_than_a_syscall() {
    let write = per_op(&run("file", &["--op", "write"]), "time");
    // Round trips are timed uncounted unless -e asks (counting adds to every switch), and
    // the run says which was done.
    let cpu = a_cpu();
    let uncounted = json_of(&[
        "run",
        "ipc",
        "--op",
        "pipe",
        "--cpu",
        &cpu,
        "--runs",
        "3",
        "--samples",
        "2",
        "--sample-time",
        "10ms",
        "--json",
    ]);
    let rt = per_op(&uncounted, "time");
    assert!(
        rt > 3.0 * write,
        "a pipe round trip ({rt} ns) vs a write to /dev/null ({write} ns)"
    );
    let notes = |r: &serde_json::Value| r["runs"][0]["notes"].to_string();
    assert!(
        uncounted["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["name"] != "context-switches")
    );
    assert!(notes(&uncounted).contains("Timed uncounted, as lmbench times it"));
    let pipe = run("ipc", &["--op", "pipe"]);
    assert!(notes(&pipe).contains("Counted, so the time includes the counters' cost"));
    // Both ends on one CPU: the worker is switched out once per round trip.
    let cs = per_op(&pipe, "context-switches");
    assert!(
        (0.9..=2.5).contains(&cs),
        "{cs} context switches per round trip"
    );
    for op in ["unix", "tcp", "udp", "futex", "eventfd"] {
        let r = run("ipc", &["--op", op]);
        let cs = per_op(&r, "context-switches");
        assert!(cs >= 0.5, "{op}: {cs} context switches per round trip");
    }
    let ctx = run("ipc", &["--op", "ctx", "--working-set", "16"]);
    assert!(per_op(&ctx, "time") > 0.0);
    let signalled = run("ipc", &["--op", "signal"]);
    assert!(notes(&signalled).contains("lmbench's lat_sig catch"));
    let (signal, sigaction) = (
        per_op(&signalled, "time"),
        per_op(&run("ipc", &["--op", "sigaction"]), "time"),
    );
    assert!(
        signal > sigaction,
        "delivering a signal ({signal}) vs installing a handler ({sigaction})"
    );
    refused(
        &["run", "ipc", "--op", "pipe", "--working-set", "8"],
        "--op ctx",
    );
}

fn processes_are_created_and_reaped() {
    let forked = run("proc", &["--op", "fork"]);
    let fork = per_op(&forked, "time");
    // The worker's heap is kept out of the children, and the run says how much is copied.
    let note = forked["runs"][0]["notes"].to_string();
    assert!(note.contains("lat_proc fork child calls exit(1)"), "{note}");
    assert!(
        note.contains("each fork copied the page tables of"),
        "{note}"
    );
    // Waiting for the child is the operation: no "the loop sleeps" warning.
    let warnings = forked["warnings"].to_string();
    assert!(!warnings.contains("the loop sleeps"), "{warnings}");
    let thread = per_op(&run("proc", &["--op", "thread"]), "time");
    assert!(
        fork > thread,
        "fork+exit+wait ({fork} ns) vs thread create+join ({thread} ns)"
    );
    for op in ["exec", "spawn"] {
        let r = run("proc", &["--op", op]);
        // Each operation waits for its child: the worker sleeps at least once per op.
        let cs = per_op(&r, "context-switches");
        assert!(cs >= 0.9, "{op}: {cs} context switches per process");
    }
}

fn page_faults_are_counted_one_per_op() {
    let anon = run("mem", &["--op", "fault-anon"]);
    let pf = per_op(&anon, "page-faults");
    assert!(
        (0.9..=1.1).contains(&pf),
        "{pf} page faults per anonymous fault"
    );
    let mmap = run("mem", &["--op", "mmap", "--size", "1048576"]);
    assert!(
        per_op(&mmap, "page-faults") < 0.1,
        "mmap+munmap touches nothing"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = run(
        "mem",
        &["--op", "fault-file", "--dir", dir.path().to_str().unwrap()],
    );
    let pf = per_op(&file, "page-faults");
    assert!(pf > 0.0 && pf <= 1.05, "{pf} faults per file page");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(per_op(&run("mem", &["--op", "brk", "--size", "65536"]), "time") > 0.0);
    refused(
        &["run", "mem", "--op", "mmap", "--size", "100"],
        "multiple of 4096",
    );
}

/// SIGINT mid-run: the pipe's echo partner (the worker's child) is gone, and so is the file a
/// file workload made.
fn an_interrupted_round_trip_leaves_no_partner() {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args([
            "run",
            "ipc",
            "--op",
            "pipe",
            "--runs",
            "50",
            "--sample-time",
            "50ms",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let children = |pid: u32| -> Vec<u32> {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut partners = Vec::new();
    while partners.is_empty() && Instant::now() < deadline {
        for w in children(child.id()) {
            partners.extend(children(w));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!partners.is_empty(), "a worker started its echo partner");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    std::thread::sleep(Duration::from_millis(200));
    for p in partners {
        let gone = !Path::new(&format!("/proc/{p}")).exists()
            || std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true);
        assert!(gone, "echo partner {p} is still running");
    }
}

/// `--copies` as will-it-scale: the sweep's table has one row per count, more copies do more
/// operations per second on this 2-CPU machine, threads work as processes do, and the counts
/// are checked.
fn copies_scale_like_will_it_scale() {
    let cpus = syscost::core::cpus::allowed_cpus().unwrap();
    if cpus.len() < 2 {
        println!("skipped: one CPU, nothing to scale over");
        return;
    }
    let sweep = json_of(&[
        "run",
        "file",
        "--op",
        "read",
        "--copies",
        "1,2",
        "--runs",
        "3",
        "--samples",
        "2",
        "--sample-time",
        "20ms",
        "-e",
        "none",
        "--format",
        "json",
    ]);
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{sweep}");
    assert_eq!(
        (rows[0]["threads"].as_u64(), rows[1]["threads"].as_u64()),
        (Some(1), Some(2))
    );
    let (one, two) = (
        rows[0]["mean"].as_f64().unwrap(),
        rows[1]["mean"].as_f64().unwrap(),
    );
    assert!(
        two > 1.2 * one,
        "2 copies: {two} M/s against 1 copy: {one} M/s"
    );
    let threads = json_of(&[
        "run",
        "ipc",
        "--op",
        "pipe",
        "--copies",
        "2",
        "--mode",
        "thread",
        "--runs",
        "2",
        "--samples",
        "2",
        "--sample-time",
        "20ms",
        "-e",
        "none",
        "--json",
    ]);
    assert_eq!(threads["options"]["copies"], 2);
    assert!(median(metric(&threads, "total-throughput")) > 0.0);
    assert!(median(metric(&threads, "per-copy-throughput")) > 0.0);
    for (args, says) in [
        (vec!["run", "file", "--copies", "0"], "counts start at 1"),
        (vec!["run", "file", "--copies", "x"], "--copies 'x'"),
        // Copies of one producer each share the uprobe (two processes hitting it); a copy
        // of several producers is refused.
        (
            vec!["run", "uprobe", "--copies", "2", "--threads", "2"],
            "--threads above 1",
        ),
        (
            vec![
                "run", "mem", "--op", "brk", "--copies", "2", "--mode", "thread",
            ],
            "one break",
        ),
    ] {
        refused(&args, says);
    }
}

/// `--capture NAME=REGEX`: a figure the command prints becomes a per-run metric of `run exec`
/// and both arms of `probe`; a regex that matches nothing fails the run with the output's tail.
fn figures_a_command_prints_are_captured() {
    let r = json_of(&[
        "run",
        "exec",
        "--ops",
        "1",
        "--runs",
        "3",
        "--samples",
        "2",
        "--warmup",
        "0",
        "-e",
        "task-clock",
        "--capture",
        "rate=rate: ([0-9.,]+) ops/s",
        "--json",
        "--",
        "sh",
        "-c",
        "echo 'rate: 1,042.5 ops/s'",
    ]);
    let m = metric(&r, "rate");
    assert_eq!(median(m), 1042.5, "{m}");
    let out = syscost()
        .args(["run", "exec", "--ops", "1", "--runs", "2", "--samples", "1"])
        .args([
            "--capture",
            "rate=rate: ([0-9.]+)",
            "--",
            "sh",
            "-c",
            "echo refused; echo bye",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("matched nothing") && err.contains("bye"),
        "{err}"
    );
    let out = syscost()
        .args([
            "run",
            "exec",
            "--ops",
            "1",
            "--capture",
            "rate=[0-9]+",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a group"));

    let libc_so = "/lib/x86_64-linux-gnu/libc.so.6";
    if !is_root() || !Path::new(libc_so).exists() {
        skip(format!("the probe half needs root and {libc_so}"));
        return;
    }
    let target = format!("{libc_so}:getpid");
    let p = json_of(&[
        "probe",
        "--target",
        &target,
        "--runs",
        "6",
        "--capture",
        "n=n=([0-9]+)",
        "--format",
        "json",
        "--",
        "sh",
        "-c",
        "echo n=7",
    ]);
    let variants = p["comparison"]["variants"].as_array().unwrap();
    for v in variants {
        let n = v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "n")
            .unwrap_or_else(|| panic!("each arm records the capture: {v}"));
        assert_eq!(n["values"], serde_json::json!(vec![7.0; 6]));
    }
}

/// The processes that `uid` has now (RLIMIT_NPROC counts them all).
fn processes_of(uid: u32) -> u64 {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("status")).ok())
        .filter(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next())
                == Some(&uid.to_string())
        })
        .count() as u64
}

/// A limit hit, by syscost itself or by the workload, is named with its value and what to
/// raise, and nothing panics (a failed signal thread used to).
fn limits_reached_are_named() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        skip("prlimit (util-linux) is not installed");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin!("syscost");
    let run = |limit: &str, uid: Option<u32>, workload: &[&str]| {
        let mut c = Command::new("prlimit");
        c.arg(limit).arg(bin).arg("run").args(workload);
        c.args([
            "--runs",
            "1",
            "--samples",
            "2",
            "--ops",
            "10",
            "--no-history",
        ]);
        c.current_dir("/");
        if let Some(u) = uid {
            use std::os::unix::process::CommandExt;
            c.uid(u).gid(u);
        }
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !out.status.success(),
            "{limit} {workload:?} succeeded: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    let err = run("--nofile=8", None, &["file", "--op", "dup-close"]);
    assert!(err.contains("RLIMIT_NOFILE (ulimit -n), is 8"), "{err}");
    if !is_root() {
        skip("the RLIMIT_NPROC half needs root to run as nobody");
        return;
    }
    // As nobody (root is exempt from RLIMIT_NPROC): one process more than nobody has leaves
    // no room for the signal thread; three more, room for syscost, its signal thread and its
    // worker, but not for the worker's forks.
    let nobody = 65534;
    let now = processes_of(nobody);
    for (extra, says) in [(1, "signal-handling thread"), (3, "proc: fork failed")] {
        let limit = format!("--nproc={}", now + extra);
        let err = run(&limit, Some(nobody), &["proc", "--op", "fork"]);
        assert!(err.contains(says), "{limit}: {err}");
        assert!(err.contains("RLIMIT_NPROC (ulimit -u)"), "{limit}: {err}");
    }
}
