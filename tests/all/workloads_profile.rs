//! End-to-end: the vfs-mix, exec and vdso workloads, and `--profile` with its diff in compare.

use crate::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

crate::tests! {
    Serial vfs_mix_on_a_temp_dir_and_on_dev_shm_leaves_nothing,
    Serial vfs_mix_cleans_up_after_sigint,
    Shared vfs_mix_names_the_problem_with_its_directory,
    Serial exec_normalises_by_the_user_s_operation_count,
    Serial profiled_getpid_names_the_syscall_path,
    Serial profile_diff_names_audit_as_what_changed,
    Serial the_vdso_answers_without_entering_the_kernel,
}

fn syscost_entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("syscost-vfs-"))
        .collect()
}

fn vfs_mix_on_a_temp_dir_and_on_dev_shm_leaves_nothing() {
    let tmp = std::env::temp_dir();
    let before = syscost_entries(&tmp);
    let r = json_of(&[
        "run",
        "vfs-mix",
        "--runs",
        "2",
        "--ops",
        "200",
        "--samples",
        "2",
        "--json",
    ]);
    assert_eq!(r["workload"]["workload"], "vfs-mix");
    assert_eq!(r["op_name"], "iteration");
    assert!(median(metric(&r, "time")) > 0.0);
    assert_eq!(
        syscost_entries(&tmp),
        before,
        "the temporary directory is gone"
    );
    if std::path::Path::new("/dev/shm").is_dir() {
        let shm_before = syscost_entries(std::path::Path::new("/dev/shm"));
        let r = json_of(&[
            "run",
            "vfs-mix",
            "--dir",
            "/dev/shm",
            "--runs",
            "2",
            "--ops",
            "500",
            "--samples",
            "2",
            "--json",
        ]);
        let notes = r["runs"][0]["notes"][0].as_str().unwrap();
        assert!(notes.contains("/dev/shm (tmpfs)"), "{notes}");
        // On tmpfs the loop does not wait for a disk: (almost) no context switch per iteration.
        assert!(median(metric(&r, "context-switches")) < 0.05);
        assert_eq!(
            syscost_entries(std::path::Path::new("/dev/shm")),
            shm_before
        );
    } else {
        println!("skipped the /dev/shm half: no /dev/shm here");
    }
}

fn vfs_mix_cleans_up_after_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(["run", "vfs-mix", "--runs", "50", "--ops", "2000", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the worker's file to appear, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(20);
    while syscost_entries(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "the loop never started");
        std::thread::sleep(Duration::from_millis(2));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        syscost_entries(dir.path()).is_empty(),
        "the file is gone after SIGINT"
    );
}

fn vfs_mix_names_the_problem_with_its_directory() {
    let out = syscost()
        .args([
            "run",
            "vfs-mix",
            "--dir",
            "/nonexistent/x",
            "--runs",
            "1",
            "--ops",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/x") && err.contains("no such directory"),
        "{err}"
    );
    if is_root() {
        // A read-only file system refuses creat(): named, with the file system.
        let out = syscost()
            .args([
                "run", "vfs-mix", "--dir", "/proc", "--runs", "1", "--ops", "1",
            ])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("creat") && err.contains("/proc"), "{err}");
    }
}

fn exec_normalises_by_the_user_s_operation_count() {
    // A shell loop of 400 fork+exec of /bin/true against one of 40: per operation they cost
    // the same, so the per-op times agree within a generous ratio while totals differ 10x. The
    // machine's speed drifts (2x over tens of seconds here), so the two are measured in
    // adjacent pairs, three times, and the pairs' median ratio is what is checked.
    let run = |n: u32| {
        json_of(&[
            "run",
            "exec",
            "--ops",
            &n.to_string(),
            "--runs",
            "1",
            "--samples",
            "2",
            "--warmup",
            "0",
            "--json",
            "--",
            "sh",
            "-c",
            &format!("i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done"),
        ])
    };
    let mut ratios = Vec::new();
    let mut large = serde_json::Value::Null;
    for _ in 0..3 {
        let small = run(40);
        large = run(400);
        ratios.push(median(metric(&small, "time")) / median(metric(&large, "time")));
    }
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let ratio = sorted[1];
    assert!(
        ratio > 0.5 && ratio < 2.0,
        "per-op cost independent of N: 40 against 400 per op, pair by pair: {ratios:?}"
    );
    // Counters follow the process tree: each /bin/true is a new process, a context switch or
    // more each, and task-clock counts the children.
    assert!(median(metric(&large, "context-switches")) >= 0.9);
    let (task, b) = (
        median(metric(&large, "task-clock")),
        median(metric(&large, "time")),
    );
    assert!(
        task > 0.3 * b,
        "children's CPU time is counted: {task} of {b}"
    );
    let out = syscost()
        .args(["run", "exec", "--", "true"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("exec needs --ops"));
}

fn profiled_getpid_names_the_syscall_path() {
    let r = json_of(&[
        "run",
        "syscall",
        "--runs",
        "2",
        "--samples",
        "3",
        "--sample-time",
        "50ms",
        "--profile",
        "-e",
        "task-clock",
        "--json",
    ]);
    let p = &r["profile"];
    assert!(p["samples"].as_u64().unwrap() > 50, "{}", p["samples"]);
    let names: Vec<&str> = p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .take(15)
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let kallsyms_visible = syscost::profile::symbols::Kallsyms::load().hidden.is_none();
    if kallsyms_visible {
        assert!(
            names.iter().any(|n| n.contains("syscall")
                || n.contains("entry_SYSCALL")
                || n.contains("getpid")),
            "the syscall entry path is among the top functions: {names:?}"
        );
    } else {
        println!("kernel symbols hidden here: checking user frames only");
    }
    assert!(names.contains(&"syscall"), "libc's syscall(): {names:?}");
}

fn profile_diff_names_audit_as_what_changed() {
    use syscost::audit::session::Session;
    if !is_root() {
        skip("loading audit rules needs root (CAP_AUDIT_CONTROL)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let off = dir.path().join("off.json");
    let on = dir.path().join("on.json");
    let run = |out: &std::path::Path| {
        let o = syscost()
            .args([
                "run",
                "syscall",
                "--runs",
                "5",
                "--samples",
                "5",
                "--sample-time",
                "30ms",
            ])
            .args(["--profile", "-e", "task-clock", "-o"])
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    {
        let mut session = match Session::begin() {
            Ok(s) => s,
            Err(e) => {
                skip(format!("no usable audit: {e:#}"));
                return;
            }
        };
        // Audit off, and no audit context for new tasks: the never-enabled kernel.
        session.set_enabled(0).unwrap();
        session.set_task_never(true).unwrap();
        run(&off);
        session.set_task_never(false).unwrap();
        session
            .set_exit_rules(32, 4, &[libc::SYS_getpid as u32])
            .unwrap();
        session.set_enabled(1).unwrap();
        run(&on);
    } // the session restores audit here
    if syscost::profile::symbols::Kallsyms::load().hidden.is_some() {
        println!("skipped the checks: kernel symbols are hidden here");
        return;
    }
    let on_result: Value = serde_json::from_str(&std::fs::read_to_string(&on).unwrap()).unwrap();
    let names: Vec<&str> = on_result["profile"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .take(20)
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("audit")),
        "with 32 exit rules the audit functions are where the time goes: {names:?}"
    );
    let c = json_of(&[
        "compare",
        off.to_str().unwrap(),
        on.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let grown: Vec<&str> = c["profile_diff"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["delta_total_pp"].as_f64().unwrap() > 0.0)
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(
        grown.iter().take(5).any(|n| n.contains("audit")),
        "audit functions grew the most: {grown:?}"
    );
    let time = time_delta(&c);
    assert_eq!(time["verdict"], "slower", "{time}");
    let text = syscost()
        .args(["compare", off.to_str().unwrap(), on.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("What changed in the profile"));
}

fn the_vdso_answers_without_entering_the_kernel() {
    let cpu = a_cpu();
    let c = json_of(&[
        "ab",
        "--format",
        "json",
        "--variant",
        "vdso --call getcpu",
        "--variant",
        "syscall --syscall getcpu",
        "--",
        "--cpu",
        &cpu,
        "--runs",
        "6",
        "--samples",
        "3",
        "--sample-time",
        "10ms",
    ]);
    assert_eq!(c["variants"][0]["workload"]["workload"], "vdso");
    let d = time_delta(&c);
    // Interleaved in one run: the kernel round trip costs many times the vDSO call (here
    // about 34x); a factor of 3 leaves room for any machine's noise.
    assert!(
        d["median"].as_f64().unwrap() > 3.0 * d["base_median"].as_f64().unwrap(),
        "{d}"
    );
}
