//! End-to-end: `syscost bisect` over seven builds of a real Debian kernel booted in QEMU
//! (TCG), with a known change injected from the k-th build on (audit=1 with 40 exit rules on
//! syscalls getpid never makes, or audit=1 alone): the bisection must name the k-th build.
//! The builds are one image, Debian's 6.1 cloud kernel, seven times: the change is the
//! injected one, and 6.1 boots in about half the time 6.12 takes under TCG (the book's
//! bisection of the seven 6.12 images is tests/all/readme.rs's). scripts/test.sh unpacks the
//! kernels into target/kernels; without them (or QEMU, or git) these tests say so and skip.
//!
//! Those that count run two at a time, one QEMU per CPU, beside the campaign tests that count
//! (exact counts do not depend on the host's load); the timed one has the machine to itself.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

crate::tests! {
    // longest first (see main.rs)
    // exact counts: another guest on the other CPU moves them well within the resolution
    Shared a_figure_that_moves_twice_gives_two_findings_around_builds_that_cannot_boot,
    Shared emulated_counts_name_the_first_bad_build_and_resume_after_a_kill,
    Shared bisect_git_builds_the_ends_and_finds_the_middle_commit,
    Shared git_bisect_run_with_the_step_command_ends_on_the_right_commit,
    Shared ends_that_do_not_differ_stop_before_any_step,
    Serial time_alone_finds_the_build_or_says_the_step_was_undecided,
}

/// Seven builds: Debian's 6.1 cloud kernel, seven times.
fn kernels() -> Option<Vec<PathBuf>> {
    kernels_in("boot").map(|k| vec![k[0].clone(); 7])
}

/// The least measurement that still keeps a few windows when a kworker lands in one.
const MEASURE: &[&str] = &[
    "run",
    "syscall",
    "--runs",
    "1",
    "--samples",
    "3",
    "--warmup",
    "0",
    "--sample-time",
    "10ms",
    "--overhead-samples",
    "0",
];

fn forty_rules(dir: &Path) -> PathBuf {
    let rules: String = (0..40)
        .map(|i| {
            format!(
                "-a always,exit -F arch=b64 -S sethostname -F auid={} -k r{i}\n",
                1000 + i
            )
        })
        .collect();
    let file = dir.join("forty.rules");
    std::fs::write(&file, rules).unwrap();
    file
}

/// A list of `kernels`, those from `k` on with audit=1 (and their names, for --audit-rules).
fn list(dir: &Path, kernels: &[PathBuf], k: usize) -> (PathBuf, Vec<String>) {
    let mut text = String::from("# builds in order\n");
    let mut names = Vec::new();
    for (i, kernel) in kernels.iter().enumerate() {
        let name = format!("b{i}");
        let audit = if i >= k { "audit=1" } else { "audit=0" };
        text.push_str(&format!("{name}={} {audit}\n", kernel.display()));
        names.push(name);
    }
    let file = dir.join("builds.list");
    std::fs::write(&file, text).unwrap();
    (file, names)
}

/// `syscost bisect --accel tcg ARGS -- MEASURE` in `tmp`: its JSON result and stderr.
fn bisect(tmp: &Path, args: &[String]) -> (std::process::Output, Option<Value>) {
    let out_file = tmp.join("bisect.json");
    let _ = std::fs::remove_file(&out_file);
    let out = syscost()
        .env("TMPDIR", tmp)
        .env("XDG_STATE_HOME", tmp.join("state"))
        .arg("bisect")
        .args([
            "--accel",
            "tcg",
            "--retries",
            "0",
            "--seed",
            "3",
            "--history",
        ])
        .arg(tmp.join("history.sqlite"))
        .arg("-o")
        .arg(&out_file)
        .args(args)
        .arg("--")
        .args(MEASURE)
        .output()
        .unwrap();
    let json = std::fs::read_to_string(&out_file)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    (out, json)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// The steps that measured a build.
fn measured_steps(b: &Value) -> usize {
    b["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["decision"]["class"] != "skipped")
        .count()
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// k at the start: the first build after the good end is the first bad one (audit=1 and 40
/// rules from it on). One boot per build decides; a SIGKILL after the ends leaves a state that
/// `bisect resume` finishes without booting the ends again, and nothing behind. With the
/// emulated profile, the answer names the functions the step moved.
fn emulated_counts_name_the_first_bad_build_and_resume_after_a_kill() {
    let Some(k) = kernels() else { return };
    let tmp = scratch();
    let (file, names) = list(tmp.path(), &k, 1);
    let rules = forty_rules(tmp.path());
    let mut args = words(&["--emulated-counters", "--emulated-profile", "--builds"]);
    args.push(file.display().to_string());
    for n in &names[1..] {
        args.extend(["--audit-rules".into(), format!("{n}={}", rules.display())]);
    }
    // Killed once the ends' four boots are saved.
    let state = tmp.path().join("state/syscost/bisect.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_syscost"))
        .env("TMPDIR", tmp.path())
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .env("SYSCOST_HISTORY", tmp.path().join("history.sqlite"))
        .arg("bisect")
        .args(["--accel", "tcg", "--retries", "0", "--seed", "3"])
        .args(&args)
        .arg("--")
        .args(MEASURE)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let saved = |n: usize| {
        std::fs::read_to_string(&state)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|s| s["boots"].as_array().unwrap().len() >= n)
    };
    let started = std::time::Instant::now();
    while !saved(4) && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        saved(4),
        "the ends' boots were not saved in {}",
        state.display()
    );
    let status = syscost()
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .args(["bisect", "status"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(said.contains("boots so far: 4"), "{status:?}");
    assert!(
        said.contains("(exact) from ") && said.contains(", measured by `syscost run"),
        "the plan, not a command line: {said}"
    );

    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let id = kept["id"].as_str().unwrap().to_string();
    let out = syscost()
        .env("TMPDIR", tmp.path())
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .env("SYSCOST_HISTORY", tmp.path().join("history.sqlite"))
        .args(["bisect", "resume"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("from 4 saved boot(s)"), "{err}");
    // The kept plan goes on: the same bisection, its boots under one id in the history.
    assert!(err.contains(&format!("bisection {id} of ")), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first bad build b1:"), "{text}");
    assert!(text.contains("Last good build: b0"), "{text}");
    // The step's profile: the 40 rules' walk is audit_filter_syscall's, absent at audit=0.
    let at = text
        .find("functions that moved from b0 to b1")
        .unwrap_or_else(|| panic!("{text}"));
    let walk = text[at..]
        .lines()
        .find(|l| l.starts_with(" audit_filter_syscall "))
        .unwrap_or_else(|| panic!("{text}"));
    let cols: Vec<&str> = walk.split_whitespace().collect();
    assert_eq!(cols[1], "0", "{walk}");
    assert!(cols[3].starts_with('+'), "{walk}");
    // Each build with rules that measured says how many the kernel took, with audit on.
    let whole = crate::common::unwrapped(&text);
    let audit: Vec<&str> = whole
        .lines()
        .filter(|l| {
            l.starts_with(" Audit rules, build b") || l.starts_with(" Audit rules, builds b")
        })
        .collect();
    assert!(!audit.is_empty(), "{text}");
    for l in &audit {
        assert!(
            l.contains(": 40 rule(s) of ") && l.ends_with("audit on (on at boot)"),
            "{l}"
        );
    }
    // Only the steps booted again: at most ceil(log2 7) + 2 builds beyond the ends.
    let booted = err.lines().filter(|l| l.contains(": measured (")).count();
    assert!(
        (1..=5).contains(&booted),
        "{booted} boots after resuming: {err}"
    );
    assert!(!state.exists(), "the state is removed at the end");
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("syscost-campaign-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A figure that moves in two steps (audit=1 from b2 on, 40 exit rules from b6 on), with a
/// file that is not a kernel and a build whose command line cannot finish where the search
/// looks first: both are skipped and stepped around, the middle build counts neither end's
/// figure and splits the search, and each step is its own finding with the functions it moved.
fn a_figure_that_moves_twice_gives_two_findings_around_builds_that_cannot_boot() {
    let Some(k) = kernels() else { return };
    let tmp = scratch();
    let not_kernel = tmp.path().join("vmlinuz-broken");
    std::fs::write(&not_kernel, b"not a kernel").unwrap();
    let mut kernels = k.clone();
    kernels.insert(3, not_kernel);
    // b0..b7: b3 is not a kernel, b4 cannot finish. The search tries b3 first (the middle),
    // then b4, then b2 (audit on: neither end's count), then b1 and b5, b6 on each side.
    let (file, _) = list(tmp.path(), &kernels, 2);
    let rules = forty_rules(tmp.path()).display().to_string();
    let mut args = words(&["--emulated-counters", "--emulated-profile", "--builds"]);
    args.push(file.display().to_string());
    args.extend(words(&["--append", "b4=rdinit=/nonexistent"]));
    for b in ["b6", "b7"] {
        args.extend(["--audit-rules".into(), format!("{b}={rules}")]);
    }
    let (out, json) = bisect(tmp.path(), &args);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let b = json.unwrap();
    assert_eq!(b["found"]["found"], "steps", "{}", b["found"]);
    let found = b["found"]["steps"].as_array().unwrap();
    let ends: Vec<(&str, &str)> = found
        .iter()
        .map(|f| {
            (
                f["last_good"].as_str().unwrap(),
                f["first_bad"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(ends, [("b1", "b2"), ("b5", "b6")], "{}", b["found"]);
    // Each step's figures: audit on adds to audit off's, the rules add more.
    let (from, to) = (
        |f: &Value| f["from"].as_f64().unwrap(),
        |f: &Value| f["to"].as_f64().unwrap(),
    );
    assert!(
        from(&found[0]) < to(&found[0]) && (to(&found[0]) - from(&found[1])).abs() < 0.1,
        "{found:?}"
    );
    assert!(to(&found[1]) > from(&found[1]) + 40.0, "{found:?}");
    let steps = b["steps"].as_array().unwrap();
    let step = |name: &str| steps.iter().find(|s| s["build"] == name).unwrap().clone();
    let b3 = &step("b3")["decision"];
    assert_eq!(b3["class"], "skipped");
    assert!(b3["why"].as_str().unwrap().contains("not a kernel"), "{b3}");
    assert_eq!(step("b4")["decision"]["class"], "skipped", "{}", step("b4"));
    assert_eq!(step("b2")["decision"]["class"], "other", "{}", step("b2"));
    assert_eq!(step("b5")["same_as"], "b2", "{}", step("b5"));
    assert_eq!(measured_steps(&b), 4, "{}", b["steps"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "Skipped (not a kernel, or did not boot): b3, b4",
        "moves in 2 steps, first bad builds: b2 +",
        "Step 1: first bad build b2, last good build b1: ",
        "Step 2: first bad build b6, last good build b5: ",
        "functions that moved from b1 to b2",
        "functions that moved from b5 to b6",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(text.contains("as b2"), "{text}");
}

/// Ends that do not differ stop the bisection before any step.
fn ends_that_do_not_differ_stop_before_any_step() {
    let Some(k) = kernels() else { return };
    let tmp = scratch();
    // The same kernel and settings at every build.
    let (file, _) = list(tmp.path(), &[k[0].clone(), k[0].clone(), k[0].clone()], 99);
    let mut args = words(&["--emulated-counters", "--builds"]);
    args.push(file.display().to_string());
    args.extend(words(&["--good", "b0", "--bad", "b0"]));
    let (out, _) = bisect(tmp.path(), &args);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--good and --bad both name b0"),
        "{}",
        stderr(&out)
    );
    // A state that cannot be kept is refused before any boot, and leaves nothing.
    let mut nowhere = args[..3].to_vec();
    nowhere.extend(words(&["--state", "/proc/nope/bisect.json"]));
    let (out, _) = bisect(tmp.path(), &nowhere);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot keep the boots in /proc/nope"), "{err}");
    assert!(!err.contains(": measured ("), "{err}");
    // The same question with audit on and 40 exit rules at every build, in two flags.
    let (file, _) = list(tmp.path(), &[k[0].clone(), k[0].clone(), k[0].clone()], 0);
    let rules = forty_rules(tmp.path()).display().to_string();
    let mut args = words(&["--emulated-counters", "--builds"]);
    args.push(file.display().to_string());
    args.extend(words(&["--bad", "b1", "--append-all", "nokaslr"]));
    args.extend(["--audit-rules-all".into(), rules]);
    let (out, json) = bisect(tmp.path(), &args);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("the ends do not differ: nothing to bisect"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(" Audit rules, builds b0, b1: 40 rule(s) of "),
        "{text}"
    );
    let b = json.unwrap();
    for boot in b["boots"].as_array().unwrap() {
        assert_eq!(boot["result"]["arm_audit"]["rules"], 40, "{boot}");
    }
    let cmdline = |i: usize| b["builds"][i]["append"].as_str().unwrap().to_string();
    // Every build's own line after what applies to all.
    assert_eq!(
        (cmdline(0), cmdline(1)),
        ("nokaslr audit=1".into(), "nokaslr audit=1".into())
    );
    assert_eq!(b["found"]["found"], "ends-equal");
    assert_eq!(b["steps"].as_array().unwrap().len(), 0);
    assert_eq!(
        err.lines().filter(|l| l.contains(": measured (")).count(),
        4,
        "{err}"
    );
}

/// Time alone: the ends are booted round by round until Student's t tells them apart, then
/// the step boots the build between fresh boots of both ends until the t test decides at its
/// share of the error bound. Timed figures under TCG follow the host (2x between boots beside
/// another guest), so this test has the machine to itself, and checks what the design
/// guarantees whichever way the noise falls: a build found only with p below its bar (and it
/// is b1, where audit and the rules start), an undecided step said as a range, ends called
/// equal only when their own test's p is above theirs, after every round.
fn time_alone_finds_the_build_or_says_the_step_was_undecided() {
    let Some(k) = kernels() else { return };
    let tmp = scratch();
    let (file, names) = list(tmp.path(), &k[..3], 1);
    let rules = forty_rules(tmp.path());
    let mut args = words(&["--builds"]);
    args.push(file.display().to_string());
    for n in &names[1..] {
        args.extend(["--audit-rules".into(), format!("{n}={}", rules.display())]);
    }
    args.extend(words(&["--step-rounds", "3"]));
    let (out, json) = bisect(tmp.path(), &args);
    let err = stderr(&out);
    let b = json.unwrap_or_else(|| panic!("no result: {err}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Error bound 5%: 1 step(s)"), "{text}");
    assert_eq!(b["metric"], "time");
    let ends = &b["ends"];
    let ends_p = ends["p"].as_f64().unwrap();
    let bar = b["budget"]["per_look"].as_f64().unwrap();
    match b["found"]["found"].as_str().unwrap() {
        "build" => {
            assert!(out.status.success(), "{err}");
            assert!(ends_p < bar && ends["differ"] == true, "{ends}");
            assert_eq!(b["found"]["first_bad"], "b1", "{text}");
            let step = &b["steps"][0];
            // One look at the step's whole share (3 rounds at most): p below 5%.
            let p = step["decision"]["p"].as_f64().unwrap();
            let bar = step["decision"]["bar"].as_f64().unwrap();
            assert!(p < bar && (bar - 0.05).abs() < 1e-12, "{step}");
            assert!(step["rounds"].as_u64().unwrap() >= 3, "{step}");
        }
        "range" => {
            assert!(ends_p < bar, "{ends}");
            assert_eq!(b["steps"][0]["decision"]["class"], "undecided", "{text}");
            assert!(text.contains("p "), "{text}");
        }
        "ends-equal" => {
            eprintln!("the timed ends did not differ in 3 rounds here (p {ends_p})");
            assert!(!out.status.success());
            assert!(err.contains("the ends do not differ"), "{err}");
            assert!(ends_p >= bar && ends["differ"] == false, "{ends}");
            assert_eq!(ends["good"].as_array().unwrap().len(), 3, "{ends}");
            assert_eq!(b["steps"].as_array().unwrap().len(), 0);
        }
        "underpowered" => {
            // The ends differ, but at their spread a step of 3 rounds could not place a build
            // that sits at one end: refused before any step, with the rounds that would.
            eprintln!("the timed ends' spread needs more than 3 rounds a step here");
            assert!(!out.status.success());
            assert!(ends_p < bar && ends["differ"] == true, "{ends}");
            assert!(err.contains("cannot place a build between them"), "{err}");
            assert_eq!(b["steps"].as_array().unwrap().len(), 0);
        }
        other => panic!("found {other}: {text}"),
    }
}

/// Run git in `repo`; its trimmed stdout.
fn git_in(repo: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A repository of one commit per kernel: each names its prebuilt image (the build command
/// copies it) and carries the tree's audit rules, 40 from commit `first_bad` on.
fn repository(tmp: &Path, kernels: &[PathBuf], first_bad: usize) -> (PathBuf, Vec<String>) {
    let repo = tmp.join("linux");
    std::fs::create_dir(&repo).unwrap();
    git_in(&repo, &["init", "-q"]);
    let rules = std::fs::read_to_string(forty_rules(tmp)).unwrap();
    let mut commits = Vec::new();
    for (i, kernel) in kernels.iter().enumerate() {
        std::fs::write(repo.join("image"), kernel.display().to_string()).unwrap();
        let r = if i >= first_bad { rules.as_str() } else { "" };
        std::fs::write(repo.join("audit.rules"), r).unwrap();
        git_in(&repo, &["add", "-A"]);
        // One image for every build: a commit may change nothing but its message.
        git_in(
            &repo,
            &["commit", "-q", "--allow-empty", "-m", &format!("build {i}")],
        );
        commits.push(git_in(&repo, &["rev-parse", "HEAD"]));
    }
    (repo, commits)
}

/// git is installed (scripts/test.sh installs it), or the test says it skips.
fn git_works() -> bool {
    let works = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok();
    if !works {
        skip("needs git (scripts/test.sh installs it)");
    }
    works
}

/// The build command of [`repository`]'s commits.
const BUILD: &str = "mkdir -p out && cp \"$(cat image)\" out/bzImage";

/// The git mode on a small repository whose commits each name a prebuilt image (the build
/// command copies it) and carry the tree's audit rules: `git bisect run syscost bisect step`
/// ends on the commit that added the rules, the last one (k at the end). Four commits: two
/// between the ends, so the steps that keep the ends' boots are more than one.
fn git_bisect_run_with_the_step_command_ends_on_the_right_commit() {
    let Some(k) = kernels() else { return };
    if !git_works() {
        return;
    }
    let tmp = scratch();
    let rules = std::fs::read_to_string(forty_rules(tmp.path())).unwrap();
    let k = &k[..4];
    let (repo, commits) = repository(tmp.path(), k, 3);
    let git = |args: &[&str]| git_in(&repo, args);
    let ends = tmp.path().join("ends");
    std::fs::create_dir(&ends).unwrap();
    std::fs::copy(&k[0], ends.join("good")).unwrap();
    std::fs::copy(&k[3], ends.join("bad")).unwrap();
    std::fs::write(ends.join("bad.rules"), &rules).unwrap();
    git(&["bisect", "start", &commits[3], &commits[0]]);
    let exe = env!("CARGO_BIN_EXE_syscost");
    let good = ends.join("good").display().to_string();
    let bad = ends.join("bad").display().to_string();
    let bad_rules = ends.join("bad.rules").display().to_string();
    let state = tmp.path().join("step-state.json").display().to_string();
    let history = tmp.path().join("history.sqlite").display().to_string();
    let mut run = vec![
        "bisect",
        "run",
        exe,
        "bisect",
        "step",
        "--accel",
        "tcg",
        "--emulated-counters",
        "--retries",
        "0",
        "--seed",
        "3",
        "--good-image",
        &good,
        "--bad-image",
        &bad,
        "--bad-audit-rules",
        &bad_rules,
        "--audit-rules",
        "audit.rules",
        "--append",
        "audit=1",
        "--build",
        BUILD,
        "--image",
        "out/bzImage",
        "--state",
        &state,
        "--history",
        &history,
        "--",
    ];
    run.extend(MEASURE);
    let o = std::process::Command::new("git")
        .args(&run)
        .current_dir(&repo)
        .env("TMPDIR", tmp.path())
        .env("SYSCOST_CACHE", tmp.path().join("cache"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}\n{err}");
    assert!(
        said.contains(&format!("{} is the first bad commit", commits[3])),
        "{said}\n{err}"
    );
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let steps = s["steps"].as_array().unwrap();
    assert!((1..=5).contains(&steps.len()), "{steps:?}");
    // The ends were booted once, by the first step, and kept for the others.
    let ends_booted = err.matches("round 1 good: measured").count();
    assert_eq!(ends_booted, 1, "{err}");
    // Each commit a step built is kept in the store, by its commit.
    assert_eq!(
        kept_builds(&tmp.path().join("cache")).len(),
        steps.len(),
        "{err}"
    );
    git(&["bisect", "reset"]);
}

/// `bisect git` builds the ends itself, drives git bisect with its own step, and leaves the
/// tree as it was: the commit in the middle that added the rules (k in the middle, of four).
fn bisect_git_builds_the_ends_and_finds_the_middle_commit() {
    let Some(k) = kernels() else { return };
    if !git_works() {
        return;
    }
    let tmp = scratch();
    let (repo, commits) = repository(tmp.path(), &k[..4], 2);
    let out_file = tmp.path().join("bisect.json");
    let cache = tmp.path().join("cache");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_syscost"))
        .current_dir(&repo)
        .env("TMPDIR", tmp.path())
        .env("SYSCOST_CACHE", &cache)
        .args([
            "bisect", "git", "--good", "HEAD~3", "--bad", "HEAD", "--build", BUILD,
        ])
        .args([
            "--image",
            "out/bzImage",
            "--append",
            "audit=1",
            "--audit-rules",
            "audit.rules",
        ])
        .args([
            "--accel",
            "tcg",
            "--emulated-counters",
            "--retries",
            "0",
            "--seed",
            "3",
        ])
        .arg("--history")
        .arg(tmp.path().join("history.sqlite"))
        .arg("-o")
        .arg(&out_file)
        .arg("--")
        .args(MEASURE)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let first_bad = b["found"]["first_bad"].as_str().unwrap();
    assert!(commits[2].starts_with(first_bad), "{}: {err}", b["found"]);
    assert!((1..=5).contains(&measured_steps(&b)), "{}", b["steps"]);
    // The tree as it was: the same commit checked out, no bisection, nothing of syscost's.
    assert_eq!(git_in(&repo, &["rev-parse", "HEAD"]), commits[3]);
    let git_dir = PathBuf::from(git_in(&repo, &["rev-parse", "--absolute-git-dir"]));
    assert!(
        !git_dir.join("BISECT_LOG").exists(),
        "git bisect was not reset"
    );
    assert!(!git_dir.join("syscost-bisect").exists());
    // The ends and each step's commit were built once and kept in the store by their commit:
    // a second bisection over them builds none again.
    let kept = kept_builds(&cache);
    assert!(
        kept.contains(&commits[0]) && kept.contains(&commits[3]),
        "{kept:?}"
    );
    assert_eq!(kept.len(), 2 + measured_steps(&b), "{kept:?}\n{err}");
}

/// The commits whose builds the store under `cache` keeps.
fn kept_builds(cache: &Path) -> Vec<String> {
    let Ok(dirs) = std::fs::read_dir(cache.join("kernels")) else {
        return Vec::new();
    };
    dirs.flatten()
        .filter(|d| d.file_name().to_string_lossy().starts_with("tree-"))
        .filter_map(|d| std::fs::read_to_string(d.path().join("build.json")).ok())
        .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
        .filter_map(|b| b["name"].as_str().map(String::from))
        .collect()
}
