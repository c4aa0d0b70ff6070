//! End-to-end: `syscost run syscall` on this machine's kernel, through the real binary.

use crate::common::*;
use predicates::prelude::*;
use serde_json::Value;
use std::os::unix::process::CommandExt;

crate::tests! {
    Serial three_runs_with_consistent_software_counters,
    Serial unsupported_hardware_events_are_labelled_not_zero,
    Serial result_file_is_written_whole_and_alone,
    Serial subtracted_overhead_matches_the_raw_samples,
    Serial fifo_policy_is_taken_by_the_worker_only,
    Serial unprivileged_user_gets_time_and_reasons,
    Shared fifo_refused_names_the_capability,
    Serial adaptive_runs_say_why_they_stopped,
    Serial the_estimator_is_recorded_and_used,
}

fn run_json(args: &[&str]) -> Value {
    let out = syscost()
        .args(["run", "syscall", "--json"])
        .args(QUICK)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "syscost failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("ETA"),
        "no progress bar when stderr is not a terminal"
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

fn three_runs_with_consistent_software_counters() {
    let cpu = a_cpu();
    let r = run_json(&["--cpu", &cpu, "--runs", "3"]);
    assert_eq!(r["schema"], "syscost-result");
    assert_eq!(r["version"], 2);
    assert_eq!(r["workload"]["syscall"], "getpid");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "--runs 3 gives 3 runs");
    let n_events = r["events"].as_array().unwrap().len();
    assert_eq!(
        n_events, 10,
        "perf stat -d's events plus four software events"
    );
    let pids: std::collections::HashSet<u64> =
        runs.iter().map(|x| x["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 3, "each run is its own worker process");
    for run in runs {
        assert_eq!(run["samples"].as_array().unwrap().len(), 3);
        assert_eq!(run["warmup"].as_array().unwrap().len(), 1);
        assert_eq!(run["overhead"].as_array().unwrap().len(), 3);
        assert_eq!(run["cpu_first"].as_u64().unwrap().to_string(), cpu);
        for s in run["samples"].as_array().unwrap() {
            assert_eq!(s["counts"].as_array().unwrap().len(), n_events);
            assert!(s["ops"].as_u64().unwrap() > 0);
        }
    }
    assert!(r["options"]["calibrated"].as_bool().unwrap());
    let ops = r["options"]["ops_per_sample"].as_u64().unwrap();
    assert!(
        ops.is_power_of_two(),
        "calibration doubles the batch: {ops}"
    );

    let time = median(metric(&r, "time"));
    let task = median(metric(&r, "task-clock"));
    assert!(time > 0.0 && task > 0.0);
    // In every run, not only in the median (a misread task-clock once hid in one run of three).
    // Never above wall time; below it by what else ran on the worker's CPU (half of it under
    // a build beside the suite), not by a factor that misreads it.
    let times = metric(&r, "time")["values"].as_array().unwrap();
    let tasks = metric(&r, "task-clock")["values"].as_array().unwrap();
    for (t, k) in times.iter().zip(tasks) {
        let ratio = k.as_f64().unwrap() / t.as_f64().unwrap();
        assert!(
            (0.2..=1.1).contains(&ratio),
            "task-clock per call follows wall time per call in each run: {k} vs {t}"
        );
    }
    assert!(median(metric(&r, "context-switches")) < 0.01);
    assert!(
        median(metric(&r, "cpu-migrations")) < 0.001,
        "pinned to one CPU"
    );
    assert!(median(metric(&r, "page-faults")) < 0.01);
    assert_eq!(
        metric(&r, "time")["summary"]["n"],
        3,
        "statistics over runs"
    );
    assert_eq!(metric(&r, "time")["replication"], "run");
    let ci = metric(&r, "time")["summary"]["ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= time && time <= ci[1].as_f64().unwrap() * 1.5);

    let env = &r["environment"];
    assert!(env["kernel_release"].is_string());
    if env["hardware_pmu"] == false {
        for name in ["cycles", "instructions", "L1-dcache-load-misses"] {
            let ev = r["events"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .unwrap();
            assert_eq!(ev["status"]["state"], "not-supported", "{name}");
            let m = metric(&r, name);
            assert!(m["summary"].is_null(), "{name} is not reported as a number");
            assert_eq!(m["status"], "<not supported>");
        }
    } else {
        println!("hardware PMU present: checking that cycles are counted instead");
        assert!(median(metric(&r, "cycles")) > 0.0);
    }
}

fn unsupported_hardware_events_are_labelled_not_zero() {
    let out = syscost()
        .args([
            "run",
            "syscall",
            "-e",
            "cycles,instructions:u",
            "-e",
            "task-clock",
        ])
        .args(["--runs", "2", "--ops", "10000", "--samples", "2"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(stdout.contains("task-clock (ns/call)"));
    if !syscost::counters::hardware_pmu_present() {
        assert!(stdout.contains("cycles (/call)"));
        assert!(stdout.contains("<not supported>"), "{stdout}");
        assert!(
            stdout.contains("no hardware PMU"),
            "the reason is given: {stdout}"
        );
    } else {
        println!("hardware PMU present: no <not supported> expected");
    }
}

fn result_file_is_written_whole_and_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("getppid.json");
    syscost()
        .args(["run", "syscall", "--syscall", "getppid", "--runs", "2"])
        .args(QUICK)
        .arg("-o")
        .arg(&path)
        .assert()
        .success()
        .stderr(predicate::str::contains("result written to"));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(r["workload"]["syscall"], "getppid");
    assert_eq!(r["runs"].as_array().unwrap().len(), 2);
    let loaded = syscost::results::RunResult::load(&path).unwrap();
    assert_eq!(loaded.runs.len(), 2);
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(
        entries.len(),
        1,
        "no temporary file is left beside the result"
    );
}

fn subtracted_overhead_matches_the_raw_samples() {
    // The pooled mean (perf stat's figure); the default, each run's median sample, is checked
    // against the same samples in results::metrics.
    let r = run_json(&["--runs", "2", "--subtract-overhead", "--estimator", "mean"]);
    assert_eq!(r["options"]["subtract_overhead"], true);
    let values = metric(&r, "time")["values"].as_array().unwrap();
    for (run, v) in r["runs"].as_array().unwrap().iter().zip(values) {
        let per_op = |samples: &Value| {
            let s = samples.as_array().unwrap();
            let wall: f64 = s.iter().map(|x| x["wall_ns"].as_f64().unwrap()).sum();
            let ops: f64 = s.iter().map(|x| x["ops"].as_f64().unwrap()).sum();
            wall / ops
        };
        let expected = per_op(&run["samples"]) - per_op(&run["overhead"]);
        let got = v.as_f64().unwrap();
        assert!(
            (got - expected).abs() <= 1e-9 * expected.abs().max(1.0),
            "time per call is the run's pooled time less its own empty loop: {got} vs {expected}"
        );
    }
    let oh = r["overhead"].as_array().unwrap();
    assert_eq!(oh[0]["name"], "time");
}

fn fifo_policy_is_taken_by_the_worker_only() {
    if !is_root() {
        skip("SCHED_FIFO needs root (CAP_SYS_NICE) and this test is not root");
        return;
    }
    let cpu = a_cpu();
    let r = run_json(&["--cpu", &cpu, "--runs", "2", "--fifo", "10"]);
    for run in r["runs"].as_array().unwrap() {
        assert_eq!(run["sched"], "SCHED_FIFO 10");
    }
    assert_eq!(r["options"]["fifo"], 10);
    // The invoking process keeps its own policy.
    assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
}

/// A short run for the unprivileged user.
const NOBODY_RUN: &[&str] = &[
    "run",
    "syscall",
    "--runs",
    "2",
    "--ops",
    "20000",
    "--samples",
    "2",
    "--json",
];

fn as_nobody() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("syscost"));
    c.env("SYSCOST_HISTORY", TEST_HISTORY);
    c.uid(65534).gid(65534).current_dir("/");
    c
}

fn unprivileged_user_gets_time_and_reasons() {
    if !is_root() {
        skip("needs root to switch to an unprivileged user");
        return;
    }
    let out = as_nobody().args(NOBODY_RUN).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        median(metric(&r, "time")) > 0.0,
        "time is measured without privileges"
    );
    let paranoid = syscost::counters::perf_event_paranoid().unwrap_or(2);
    let tc = metric(&r, "task-clock");
    if paranoid >= 2 {
        assert_eq!(tc["status"], "<not permitted>");
        let reason = tc["reason"].as_str().unwrap();
        assert!(reason.contains("perf_event_paranoid"), "{reason}");
        assert!(reason.contains("CAP_PERFMON"), "{reason}");
        assert!(
            reason.contains(":u"),
            "suggests user-only counting: {reason}"
        );
        // Events refused for one reason share one footnote: the table has one footnote per
        // distinct reason, not one per event (ten events said the same thing ten times).
        let mut reasons: Vec<&str> = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["reason"].as_str())
            .collect();
        let refused = reasons.len();
        reasons.sort();
        reasons.dedup();
        assert!(refused > reasons.len(), "{refused} events, {reasons:?}");
        let table = as_nobody()
            .args(&NOBODY_RUN[..NOBODY_RUN.len() - 1])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&table.stdout);
        let footnotes: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with('[') && l.contains("] "))
            .collect();
        assert_eq!(footnotes.len(), reasons.len(), "{text}");
        assert!(!text.contains("task-clock: kernel."), "{text}");
    } else {
        println!("perf_event_paranoid={paranoid}: kernel counting allowed, nothing to refuse");
    }
    // User-space-only counting is allowed up to paranoid 2.
    let out = as_nobody()
        .args(NOBODY_RUN)
        .args(["-e", "task-clock:u"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    if paranoid <= 2 {
        assert!(metric(&r, "task-clock:u")["summary"].is_object());
    }
}

fn fifo_refused_names_the_capability() {
    if !is_root() {
        skip("needs root to switch to an unprivileged user");
        return;
    }
    let out = as_nobody()
        .args([
            "run", "syscall", "--fifo", "10", "--runs", "1", "--ops", "10",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SCHED_FIFO") && err.contains("CAP_SYS_NICE"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one clear message: {err}");
}

fn adaptive_runs_say_why_they_stopped() {
    let r = json_of(&[
        "run",
        "syscall",
        "--until",
        "50%",
        "--runs",
        "3",
        "--samples",
        "2",
        "--sample-time",
        "5ms",
        "--json",
    ]);
    // A 50% precision is reached at the minimum of 3 runs on a quiet machine; a busy one (a
    // debug build beside a compile) may add a round. Never fewer than the minimum, and the
    // reason is recorded.
    let runs = r["runs"].as_array().unwrap().len();
    assert!((3..=10).contains(&runs), "{runs} runs");
    assert_eq!(r["options"]["until_pct"], 50.0);
    let said = r["warnings"].as_array().unwrap();
    assert!(
        said.iter()
            .any(|w| w.as_str().unwrap().starts_with("--until 50%: ±")),
        "{said:?}"
    );
}

fn the_estimator_is_recorded_and_used() {
    let r = json_of(&[
        "run",
        "syscall",
        "--estimator",
        "min",
        "--runs",
        "3",
        "--samples",
        "3",
        "--sample-time",
        "5ms",
        "--json",
    ]);
    assert_eq!(r["options"]["estimator"], "min");
    // Each run's value is its fastest sample's time per call.
    let time = metric(&r, "time");
    for (run, v) in r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(time["values"].as_array().unwrap())
    {
        let fastest = run["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["wall_ns"].as_f64().unwrap() / s["ops"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!(
            (v.as_f64().unwrap() - fastest).abs() < 1e-9,
            "{v} vs {fastest}"
        );
    }
}
