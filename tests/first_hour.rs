//! What a new user meets in the first hour: a closed pipe, a mistyped history URL, huge counts,
//! defaults that must be able to decide. Each test failed before its fix.

mod common;
use common::*;
use std::path::Path;
use std::process::Stdio;

/// Run syscost with its stdout a pipe whose reader is already gone (`| head` after its lines).
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("panicked") && !err.contains("Broken pipe"),
        "{args:?} with a closed stdout: {:?} {err}",
        out.status
    );
    out
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let run = dir.path().join("run.json");
    std::fs::write(&run, quick_run().to_string()).unwrap();
    let (run, store) = (run.to_str().unwrap(), store.to_str().unwrap());
    let ok = syscost()
        .args(["history", "import", run, "--history", store])
        .output()
        .unwrap();
    assert!(ok.status.success());
    for args in [
        &["run", "syscall", "--list-events"][..],
        &["history", "list", "--history", store],
        &["history", "list", "--history", store, "--format", "json"],
        &["history", "show", "1", "--history", store],
        &["export", "kcidb", "--origin", "lab", run],
        &["show", run],
        &["show", run, "--format", "json"],
        &["env"],
        &["man"],
        &["completions", "bash"],
    ] {
        with_closed_stdout(args);
    }
}

#[test]
fn a_measurement_into_a_closed_stdout_is_still_written_and_recorded() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let (out, store) = (dir.path().join("r.json"), dir.path().join("h.sqlite"));
    let mut args = vec!["run", "syscall", "--runs", "2", "-e", "task-clock"];
    args.extend([
        "-o",
        out.to_str().unwrap(),
        "--history",
        store.to_str().unwrap(),
    ]);
    args.extend(QUICK);
    with_closed_stdout(&args);
    assert!(Path::new(&out).exists(), "-o was not written");
    let listed = syscost()
        .args(["history", "list", "--format", "json", "--history"])
        .arg(&store)
        .output()
        .unwrap();
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 1, "not recorded");
}

#[test]
fn a_mistyped_history_url_is_refused_without_its_password_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        "POSTGRES://user:s3cretPW@127.0.0.1:1/db",
        "Postgres://user:s3cretPW@127.0.0.1:1/db",
        "postgres:/user:s3cretPW@127.0.0.1:1/db",
        "mysql://user:s3cretPW@127.0.0.1:1/db",
    ] {
        for args in [
            &["history", "list", "--history", url][..],
            &["history", "import", "x.json", "--history", url],
            &["export", "kcidb", "--origin", "lab", "--history", url],
            &["run", "syscall", "--runs", "2", "--history", url],
        ] {
            let out = syscost().current_dir(&dir).args(args).output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.status.success(), "{args:?} accepted: {text}");
            assert!(
                !text.contains("s3cretPW"),
                "{args:?} printed the password: {text}"
            );
            assert!(text.contains("user:***@"), "{args:?}: {text}");
        }
        let out = syscost()
            .current_dir(&dir)
            .env("SYSCOST_HISTORY", url)
            .args(["run", "syscall", "--runs", "2", "-e", "task-clock"])
            .args(QUICK)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("s3cretPW") && err.contains("not recorded"),
            "{err}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "created {left:?}");
}

#[test]
fn reading_a_history_that_does_not_exist_says_so_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo/h.sqlite");
    let m = missing.to_str().unwrap();
    for args in [
        &["history", "list", "--history", m][..],
        &["history", "show", "1", "--history", m],
        &["history", "delete", "1", "--history", m],
        &["history", "compare", "--by", "kernel", "--history", m],
        &["export", "kcidb", "--origin", "lab", "--history", m],
    ] {
        refused(args, "no such store");
    }
    assert!(
        !dir.path().join("typo").exists(),
        "a read created the store"
    );
}

#[test]
fn huge_counts_and_endless_batches_are_refused_with_their_limit() {
    for (flag, value, says) in [
        (
            "--samples",
            "4000000000",
            "--samples 4,000,000,000: at most 100,000",
        ),
        (
            "--warmup",
            "1000000000",
            "--warmup 1,000,000,000: at most 100,000",
        ),
        ("--overhead-samples", "4000000000", "at most 100,000"),
        ("--sample-time", "10s", "--sample-time 10s: at most 1s"),
        ("--ops", "18446744073709551615", "give --ops"),
    ] {
        let err = refused(
            &["run", "spin", flag, value, "--runs", "1", "--no-history"],
            says,
        );
        assert!(
            !err.contains("memory allocation") && !err.contains("SIGABRT"),
            "{err}"
        );
    }
}
