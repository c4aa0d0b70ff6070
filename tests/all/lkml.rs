//! End-to-end: `--format lkml` is meant to be pasted into a patch's cover letter, so every line
//! of every command's lkml output is plain ASCII and fits 80 columns (as the audit series' tables do),
//! with default labels. Each command below runs for real on this machine.

use crate::common::*;
use std::path::{Path, PathBuf};

crate::tests! {
    Serial every_command_writes_lkml_within_80_columns,
}

const WIDTH: usize = 80;

const TINY: &[&str] = &[
    "--runs",
    "3",
    "--samples",
    "2",
    "--warmup",
    "0",
    "--sample-time",
    "5ms",
    "-e",
    "task-clock",
];

/// Run syscost with `args`; its stdout, which must have succeeded.
fn lkml_of(what: &str, args: &[&str]) -> String {
    let out = syscost().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every line ASCII and within 80 columns; the offending lines named.
fn assert_mail_ready(what: &str, text: &str) {
    assert!(!text.trim().is_empty(), "{what}: no output");
    assert!(text.is_ascii(), "{what}: not plain ASCII:\n{text}");
    let long: Vec<String> = text
        .lines()
        .filter(|l| l.len() > WIDTH)
        .map(|l| format!("{:>3}: {l}", l.len()))
        .collect();
    assert!(
        long.is_empty(),
        "{what}: {} line(s) over {WIDTH} columns:\n{}\n\nwhole output:\n{text}",
        long.len(),
        long.join("\n")
    );
}

fn run_result(dir: &Path, name: &str, workload: &[&str]) -> PathBuf {
    let f = dir.join(name);
    let out = syscost()
        .arg("run")
        .args(workload)
        .args(TINY)
        .arg("-o")
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    f
}

fn every_command_writes_lkml_within_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &PathBuf| f.to_str().unwrap().to_string();

    let mut run = vec!["run", "syscall", "--format", "lkml"];
    run.extend(TINY);
    assert_mail_ready("run", &lkml_of("run", &run));

    let a = run_result(dir.path(), "a.json", &["syscall"]);
    let b = run_result(dir.path(), "b.json", &["syscall", "--syscall", "getppid"]);
    let c = run_result(dir.path(), "c.json", &["syscall", "--syscall", "gettid"]);
    assert_mail_ready(
        "show",
        &lkml_of("show", &["show", &p(&a), "--format", "lkml"]),
    );
    assert_mail_ready(
        "compare",
        &lkml_of(
            "compare",
            &[
                "compare",
                &p(&a),
                &p(&b),
                &p(&c),
                "--force",
                "--format",
                "lkml",
            ],
        ),
    );
    let merged = dir.path().join("m.json");
    let m = lkml_of(
        "merge",
        &[
            "merge",
            &p(&a),
            &p(&a),
            &p(&a),
            "--force",
            "--format",
            "lkml",
            "-o",
            &p(&merged),
        ],
    );
    assert_mail_ready("merge", &m);
    assert_mail_ready(
        "correlate",
        &lkml_of(
            "correlate",
            &[
                "correlate",
                &p(&a),
                &p(&b),
                "--x",
                "task-clock",
                "--format",
                "lkml",
            ],
        ),
    );
    let mut ab = vec![
        "ab",
        "--variant",
        "syscall",
        "--variant",
        "syscall --syscall getppid",
        "--variant",
        "syscall --syscall gettid",
        "--format",
        "lkml",
        "--",
    ];
    // Three variants: 7 rounds are the fewest whose paired test can decide after Holm.
    ab.extend(["--runs", "7"]);
    ab.extend(&TINY[2..]);
    let out = lkml_of("ab", &ab);
    assert_mail_ready("ab", &out);
    assert!(
        out.contains("\ngetppid ") && !out.contains("syscall --syscall getppid"),
        "default labels name what differs:\n{out}"
    );

    if is_root() && Path::new("/sys/bus/event_source/devices/uprobe/type").exists() {
        let mut sweep = vec!["run", "uprobe", "--threads", "1-2", "--format", "lkml"];
        sweep.extend(TINY);
        assert_mail_ready("uprobe thread sweep", &lkml_of("thread sweep", &sweep));
        let libc = "/lib/x86_64-linux-gnu/libc.so.6";
        if Path::new(libc).exists() {
            let target = format!("{libc}:getpid");
            let args = [
                "probe", "--target", &target, "--runs", "6", "--format", "lkml", "--", "true",
            ];
            assert_mail_ready("probe", &lkml_of("probe", &args));
        } else {
            skip(format!("the probe needs {libc} to put a probe on"));
        }
    } else {
        skip("the thread sweep and the probe need root and the uprobe PMU");
    }

    let audit = is_root()
        && syscost()
            .args(["audit", "status"])
            .output()
            .is_ok_and(|o| o.status.success());
    if audit {
        let mut sweep = vec!["audit", "sweep", "--rules", "0,4", "--format", "lkml"];
        sweep.extend(TINY);
        assert_mail_ready("audit sweep", &lkml_of("audit sweep", &sweep));
        let mut residue = vec!["audit", "residue", "--format", "lkml"];
        residue.extend(TINY);
        assert_mail_ready("audit residue", &lkml_of("audit residue", &residue));
    } else {
        skip("the audit sweep and residue need root and audit");
    }
}
