//! End-to-end: every bad input gets one clear message and a non-zero exit, before anything is
//! measured or written.

use crate::common::*;
use predicates::prelude::*;

crate::tests! {
    Shared unknown_syscall,
    Shared unknown_event_and_modifier,
    Shared bad_cpu_lists,
    Shared bad_counts_and_durations,
    Shared unwritable_output_is_refused_before_measuring,
    Shared help_teaches,
    Shared event_list_is_printed,
    Shared bad_adaptive_runs,
    Shared time_base_and_metric_do_not_mix,
    Shared sizes_beyond_any_real_run_or_cache_are_refused_by_their_limit,
    Shared damaged_results_are_refused_not_panicked_on,
    Shared malformed_modifiers_and_ignored_ab_options_are_refused,
    Shared bisect_git_outside_a_git_tree_says_so,
    Shared completions_and_man_page_come_from_the_command_line,
    Shared a_variant_failing_in_a_paced_round_stops_the_round,
    Shared boots_that_could_only_fail_are_refused_before_booting,
}

fn fails_with(args: &[&str], needles: &[&str]) {
    let out = syscost().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(out.stdout.is_empty(), "nothing on stdout for {args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected '{n}' in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

fn unknown_syscall() {
    fails_with(
        &["run", "syscall", "--syscall", "nosuch"],
        &["unknown or unsupported system call 'nosuch'", "getpid"],
    );
}

fn unknown_event_and_modifier() {
    fails_with(
        &["run", "syscall", "-e", "cyclez"],
        &["unknown event 'cyclez'"],
    );
    fails_with(
        &["run", "syscall", "-e", "cycles:q"],
        &["unknown modifier 'q'"],
    );
    fails_with(&["run", "syscall", "-e", "{cycles"], &["unbalanced"]);
}

fn bad_cpu_lists() {
    fails_with(
        &["run", "syscall", "--cpu", "x"],
        &["'x' is not a CPU number"],
    );
    fails_with(
        &["run", "syscall", "--cpu", "3-1"],
        &["ends before it starts"],
    );
    fails_with(
        &["run", "syscall", "--cpu", "4000"],
        &["CPU 4000 not available", "may run on CPUs"],
    );
}

fn bad_counts_and_durations() {
    fails_with(
        &["run", "syscall", "--runs", "0"],
        &["--runs must be at least 1"],
    );
    fails_with(
        &["run", "syscall", "--samples", "0"],
        &["--samples must be at least 1"],
    );
    fails_with(
        &["run", "syscall", "--ops", "0"],
        &["--ops must be at least 1"],
    );
    fails_with(&["run", "syscall", "--runs=-2"], &["invalid value '-2'"]);
    fails_with(&["run", "syscall", "--fifo", "0"], &["0 is not in 1..=99"]);
    fails_with(
        &["run", "syscall", "--sample-time", "soon"],
        &["not a duration"],
    );
}

fn unwritable_output_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/r.json");
    let start = std::time::Instant::now();
    fails_with(
        &["run", "syscall", "-o", missing.to_str().unwrap()],
        &["does not exist"],
    );
    // The default run lasts several seconds; a refusal up front takes a fraction of that.
    // (A ratio against the default plan, not an absolute timing of the machine.)
    assert!(
        start.elapsed() < std::time::Duration::from_secs(3),
        "refused before measuring"
    );
    fails_with(
        &["run", "syscall", "-o", dir.path().to_str().unwrap()],
        &["is a directory"],
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing half-written"
    );
}

fn help_teaches() {
    syscost()
        .args(["run", "syscall", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("taskset syntax"))
        .stdout(predicate::str::contains("Examples:"))
        .stdout(predicate::str::contains("perf's syntax"));
}

fn event_list_is_printed() {
    syscost()
        .args(["run", "syscall", "--list-events"])
        .assert()
        .success()
        .stdout(predicate::str::contains("L1-dcache-load-misses"))
        .stdout(predicate::str::contains("task-clock"));
}

fn bad_adaptive_runs() {
    fails_with(
        &["run", "syscall", "--until", "0%"],
        &["between 0% and 100%"],
    );
    fails_with(
        &["run", "syscall", "--until", "x"],
        &["'x' is not a percentage"],
    );
    fails_with(
        &["run", "syscall", "--until", "1%", "--runs", "2"],
        &["--until needs --runs 3 or more"],
    );
}

fn time_base_and_metric_do_not_mix() {
    fails_with(
        &[
            "compare", "a.json", "b.json", "--time", "cpu", "--metric", "cycles",
        ],
        &["--time cpu decides on task-clock"],
    );
}

// Inputs that panicked (exit 101) or aborted: each now gets one message and a non-zero exit.
fn sizes_beyond_any_real_run_or_cache_are_refused_by_their_limit() {
    fails_with(
        &["run", "syscall", "--sample-time", "18446744073709551615s"],
        &["longer than a day"],
    );
    fails_with(
        &[
            "compare",
            "a.json",
            "b.json",
            "--resamples",
            "18446744073709551615",
        ],
        &["--resamples must be from 1,000 to 1,000,000"],
    );
    fails_with(
        &["compare", "a.json", "b.json", "--noise-threshold", "NaN"],
        &["not NaN or infinity"],
    );
    for geometry in [
        "sets=4611686018427387904,ways=8,line=64",
        "sets=2,ways=1,line=4398046511104",
        "sets=1073741824,ways=8,line=64",
    ] {
        fails_with(
            &[
                "cachesets",
                "--geometry",
                geometry,
                "--objects",
                "3",
                "--size",
                "400",
            ],
            &["beyond what syscost models", "at most 65536 sets"],
        );
    }
    fails_with(
        &[
            "cachesets",
            "--geometry",
            "sets=64,ways=8,ways=4,line=64",
            "--objects",
            "3",
            "--size",
            "400",
        ],
        &["ways is given twice"],
    );
    fails_with(
        &[
            "cachesets",
            "--objects",
            "18446744073709551615",
            "--size",
            "400",
        ],
        &["at most 1048576 objects"],
    );
    fails_with(
        &[
            "cachesets",
            "--objects",
            "3",
            "--size",
            "400",
            "--trials",
            "18446744073709551615",
        ],
        &["at most 10000000 Monte Carlo trials"],
    );
}

fn damaged_results_are_refused_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let base = serde_json::json!({
        "schema": "syscost-result", "version": 2, "tool": {"name": "syscost", "version": "t"}
    });
    let mut compare = base.clone();
    compare["kind"] = "compare".into();
    for (k, v) in [
        ("test", serde_json::json!("t")),
        ("alpha", 0.05.into()),
        ("noise_threshold_pct", 2.0.into()),
        (
            "bootstrap",
            serde_json::json!({"resamples": 1, "seed": 1, "generator": "g", "confidence": 0.95}),
        ),
        ("correction", "holm".into()),
        ("primary_metric", "time".into()),
        ("variants", serde_json::json!([])),
        ("deltas", serde_json::json!([])),
        ("ranking", serde_json::json!([])),
        ("warnings", serde_json::json!([])),
    ] {
        compare[k] = v;
    }
    let c = write("novariants.json", compare);
    let out = dir.path().join("r.html");
    fails_with(
        &["report", c.to_str().unwrap(), "-o", out.to_str().unwrap()],
        &["novariants.json", "it has no variants"],
    );
    assert!(!out.exists());
}

fn malformed_modifiers_and_ignored_ab_options_are_refused() {
    fails_with(&["run", "syscall", "-e", "cycles:"], &["nothing after ':'"]);
    fails_with(
        &["run", "syscall", "-e", "cycles:uuuu"],
        &["a modifier is repeated"],
    );
    fails_with(
        &[
            "ab",
            "--variant",
            "syscall -o x.json",
            "--variant",
            "syscall",
        ],
        &["-o inside a variant", "--save DIR"],
    );
    fails_with(
        &[
            "ab",
            "--variant",
            "syscall",
            "--variant",
            "syscall",
            "--",
            "--format",
            "json",
        ],
        &["put it before --"],
    );
    // ab's own option after --, where the variants' shared run options go.
    fails_with(
        &[
            "ab",
            "--variant",
            "syscall",
            "--variant",
            "syscall",
            "--",
            "--cpu",
            "1",
            "--save",
            "abdir",
        ],
        &["--save is ab's own option: put it before --"],
    );
}

/// `bisect git` runs in a kernel tree: elsewhere it says so, not that a revision is unknown.
fn bisect_git_outside_a_git_tree_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = syscost()
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .args([
            "bisect", "git", "--good", "v6.11", "--bad", "v6.12", "--build", "true",
        ])
        .args(["--image", "bzImage", "--", "run", "syscall"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not in a git tree: run bisect git in the kernel tree"),
        "{err}"
    );
    assert!(!err.contains("not a commit"), "{err}");
}

fn completions_and_man_page_come_from_the_command_line() {
    for shell in ["bash", "zsh", "fish"] {
        let out = syscost().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("audit-replica") && text.contains("fail-on"),
            "{shell}"
        );
    }
    let man = syscost().arg("man").output().unwrap();
    assert!(man.status.success());
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(
        text.starts_with(".ie") && text.contains(".TH syscost 1"),
        "{text}"
    );
    fails_with(&["completions", "tcsh"], &["invalid value 'tcsh'"]);
}

// A variant that cannot set up in a paced round (with --ops, nothing is calibrated first):
// one clear message naming what failed, and the other run of the round, already waiting for
// its turn, stops with it (no worker is left: the command returns at all).
fn a_variant_failing_in_a_paced_round_stops_the_round() {
    let dir = tempfile::tempdir().unwrap();
    let ok = format!("file --op stat --dir {}", dir.path().display());
    fails_with(
        &[
            "ab",
            "--variant",
            &ok,
            "--variant",
            "file --op stat --dir /nonexistent/syscost",
            "--",
            "--ops",
            "1000",
            "--runs",
            "6",
            "--no-history",
        ],
        &["/nonexistent/syscost"],
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the first variant's scratch file is removed"
    );
}

/// A kernel cut short, an output every write to fails, and a figure no result can have are
/// refused before a campaign or a bisection boots anything (each took a boot, or all of them,
/// to fail).
fn boots_that_could_only_fail_are_refused_before_booting() {
    let Some(k) = kernels_in("boot") else {
        return;
    };
    let tmp = scratch();
    let cut = tmp.path().join("vmlinuz-cut");
    let head: Vec<u8> = std::fs::read(&k[0]).unwrap()[..4096].to_vec();
    std::fs::write(&cut, head).unwrap();
    let (cut, whole) = (cut.display().to_string(), k[0].display().to_string());
    let campaign = |arms: [&str; 2], extra: &[&str]| {
        let mut a = vec!["campaign", "--accel", "tcg", "--emulated-counters"];
        for arm in arms {
            a.extend(["--arm", arm]);
        }
        a.extend(extra);
        a.extend(["--", "run", "syscall"]);
        a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let (a_cut, b) = (format!("a={cut}"), format!("b={whole}"));
    let args = campaign([&a_cut, &b], &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_with(
        &args,
        &["--arm a:", "is cut short", "but the file has 4096"],
    );
    let a = format!("a={whole}");
    let args = campaign([&a, &b], &["-o", "/dev/full"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_with(&args, &["/dev/full", "every write to it fails"]);
    let list = tmp.path().join("builds.list");
    std::fs::write(&list, format!("g={whole}\nb={whole} audit=1\n")).unwrap();
    let list = list.display().to_string();
    fails_with(
        &[
            "bisect",
            "--accel",
            "tcg",
            "--emulated-counters",
            "--builds",
            &list,
            "--metric",
            "nonsense",
            "--",
            "run",
            "syscall",
        ],
        &["--metric nonsense: no boot's result can have it"],
    );
}
