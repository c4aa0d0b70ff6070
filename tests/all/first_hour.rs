//! What a new user meets in the first hour: a closed pipe, a mistyped history URL, huge counts,
//! defaults that must be able to decide. Each test failed before its fix.

use crate::common::*;
use std::path::Path;
use std::process::Stdio;

crate::tests! {
    Shared a_closed_stdout_ends_every_command_quietly,
    Serial a_measurement_into_a_closed_stdout_is_still_written_and_recorded,
    Shared a_mistyped_history_url_is_refused_without_its_password_and_creates_nothing,
    Shared reading_a_history_that_does_not_exist_says_so_and_creates_nothing,
    Shared huge_counts_and_endless_batches_are_refused_with_their_limit,
    Serial ab_at_its_default_rounds_decides,
    Shared round_counts_that_can_never_decide_are_refused_before_measuring,
    Shared ab_refuses_an_unpaired_test_rather_than_replacing_it,
    Shared a_comparison_with_too_few_units_says_how_many_it_needs,
    Serial ab_gives_an_exec_variant_s_command_only_its_own_arguments,
    Shared history_says_what_it_did_with_every_file_id_and_tag,
    Shared help_and_readme_name_public_sources_not_seeds,
    Shared man_pages_come_one_per_command,
    Shared small_things_a_new_user_meets,
    Serial run_until_takes_the_floor_unless_the_samples_are_chosen,
    Shared sources_name_public_investigations_not_private_names,
    Shared messages_carry_no_run_of_spaces_from_a_lost_line_continuation,
}

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

fn a_measurement_into_a_closed_stdout_is_still_written_and_recorded() {
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
    // The arms of a paced ab round are sized apart from run's calibration: checked there too.
    let mut ab = vec![
        "ab",
        "--variant",
        "spin",
        "--variant",
        "spin --iterations 200",
    ];
    ab.extend(["--", "--ops", "18446744073709551615", "--no-history"]);
    refused(&ab, "give --ops");
}

/// ab at its default rounds (the samples shortened only to keep the test quick): a change of
/// 2x is decided slower, so a `--fail-on slower` gate fails.
fn ab_at_its_default_rounds_decides() {
    let cpu = a_cpu();
    let out = syscost()
        .args(["ab", "--variant", "spin --iterations 100"])
        .args(["--variant", "spin --iterations 200", "--format", "json"])
        .args(["--fail-on", "slower", "--", "--cpu", &cpu, "--no-history"])
        .args(["--samples", "3", "--warmup", "1", "--sample-time", "10ms"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "the gate must fail: {err}");
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let time = time_delta(&c);
    assert_eq!(time["decision"], "slower", "{time}");
    assert_eq!(time["n"], 10, "ab's default is 10 rounds");
    assert!(c.to_string().contains("Wilcoxon signed-rank"));
}

fn round_counts_that_can_never_decide_are_refused_before_measuring() {
    let two = [
        "ab",
        "--variant",
        "spin",
        "--variant",
        "spin --iterations 200",
    ];
    let mut args = two.to_vec();
    args.extend(["--", "--runs", "5", "--no-history"]);
    refused(&args, "smallest possible p is 0.0625, above alpha 0.05");
    refused(&args, "use --runs 6 or more");
    let mut three = two.to_vec();
    three.extend(["--variant", "spin --iterations 300", "--", "-r", "6"]);
    refused(&three, "after Holm over 2 comparisons, above alpha 0.05");
    let mut strict = two.to_vec();
    strict.extend(["--alpha", "0.01", "--", "--runs", "7"]);
    refused(&strict, "use --runs 8 or more");
    let probe = [
        "probe",
        "--target",
        "/bin/true:main",
        "--runs",
        "5",
        "--",
        "true",
    ];
    refused(&probe, "use --runs 6 or more");
}

fn ab_refuses_an_unpaired_test_rather_than_replacing_it() {
    let mut args = vec![
        "ab",
        "--variant",
        "spin",
        "--variant",
        "spin --iterations 200",
    ];
    args.extend(["--test", "mann-whitney", "--", "--no-history"]);
    refused(&args, "--test mann-whitney compares unpaired runs");
    let help = syscost().args(["ab", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("signed-rank where rounds pair them (ab)"),
        "{help}"
    );
}

fn a_comparison_with_too_few_units_says_how_many_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let base = quick_run();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, base.to_string()).unwrap();
    std::fs::write(&b, relabelled(&base, &[], 1.5).to_string()).unwrap();
    let out = syscost()
        .args([
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            "json",
            // Wall time stays the primary metric, alone in its Holm family, even when this
            // machine's load leaves the quick run's CPUs utilized below 0.98 (`--time auto`
            // would then decide on task-clock and put time in the family of the others).
            "--time",
            "wall",
        ])
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = time_delta(&c)["verdict"].as_str().unwrap().to_string();
    assert_eq!(
        verdict,
        "cannot decide with 3 and 3 runs: the smallest possible p is 0.1000 > alpha 0.05; use \
         4 or more each"
    );
}

/// The shared options after `--` are ab's, not the command's: an `exec` variant's command gets
/// no extra arguments (the script fails if it does), and the options take effect.
fn ab_gives_an_exec_variant_s_command_only_its_own_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let out = syscost()
        .env("SYSCOST_HISTORY", &store)
        .args(["ab", "--variant", "exec --ops 1 -- sh -c 'test $# -eq 0' x"])
        .args(["--variant", "exec --ops 1 -- sh -c 'test $# -eq 0 && :' x"])
        .args(["--format", "json", "--", "--runs", "6", "--samples", "2"])
        .args(["--warmup", "0", "--no-history"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(time_delta(&c)["n"], 6, "--runs 6 was not applied");
    assert!(!store.exists(), "--no-history was ignored");
}

fn history_says_what_it_did_with_every_file_id_and_tag() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let h = |args: &[&str]| {
        syscost()
            .args(args)
            .arg("--history")
            .arg(&store)
            .output()
            .unwrap()
    };
    let base = quick_run();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let a = write("a.json", base.to_string());
    let b = write("b.json", relabelled(&base, &[], 1.1).to_string());
    let bad = write(
        "damaged.json",
        "{\"schema\": \"syscost-result\", \"ver".into(),
    );
    // A damaged file among others: the others are imported, and the summary names it.
    let out = h(&["history", "import", &a, &bad, &b]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stderr}");
    assert!(stdout.contains("imported 2 result(s)"), "{stdout}");
    assert!(
        stdout.contains("1 not imported") && stdout.contains("damaged.json"),
        "{stdout}"
    );
    // Importing again with a tag says the entry was there and takes the tag.
    let out = h(&["history", "import", &a, "--tag", "build=x"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("was already history entry 1; its tags now include build=x"));
    // Tags that would forge a row or never end are refused.
    for (tag, says) in [
        ("note=a\nb", "control characters"),
        ("k=a\tb", "control characters"),
        (&format!("{}=v", "k".repeat(65)), "at most 64"),
        (&format!("k={}", "v".repeat(257)), "at most 256"),
    ] {
        let out = h(&["history", "import", &a, "--tag", tag]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{tag:?}: {err}"
        );
    }
    // An id given twice is deleted once.
    let out = h(&["history", "delete", "2", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("deleted 1 result(s)"));
    // The same file twice in a KCIDB report: its tests once.
    let out = syscost()
        .args(["export", "kcidb", "--origin", "lab", &a, &a])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "duplicate test ids");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the same result as"));
}

/// Every command's help, recursively: the subcommands it lists.
fn helps(words: &mut Vec<String>, out: &mut Vec<(String, String)>) {
    let o = syscost().args(&*words).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let subs: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            l.strip_prefix("  ")?
                .split_whitespace()
                .next()
                .map(String::from)
        })
        .filter(|c| c != "help" && !c.starts_with('-'))
        .collect();
    out.push((words.join(" "), text));
    for s in subs {
        words.push(s);
        helps(words, out);
        words.pop();
    }
}

/// Users have not read the project's source documents: help, README and book name the public
/// investigations instead ("seed" is said only of the bootstrap's and the Monte Carlo's).
fn help_and_readme_name_public_sources_not_seeds() {
    let mut all = Vec::new();
    helps(&mut Vec::new(), &mut all);
    assert!(all.len() > 30, "only {} help pages", all.len());
    let random = ["--seed", "bootstrap seed", "monte carlo seed", "given seed"];
    let said = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                let l = l.to_lowercase();
                // A campaign's or a bisection's output names its shuffle's seed: "seed 17".
                let numbered = l
                    .split("seed ")
                    .skip(1)
                    .all(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                let shuffle = l.contains("seed ") && numbered;
                l.contains("seed")
                    && !random.iter().any(|r| l.contains(r))
                    && !l.contains("seeded")
                    && !shuffle
            })
            .map(String::from)
            .collect()
    };
    for (cmd, text) in &all {
        assert!(
            said(text).is_empty(),
            "syscost {cmd} --help: {:?}",
            said(text)
        );
    }
    let docs = crate::book::documents();
    for d in &docs {
        assert!(said(&d.text).is_empty(), "{}: {:?}", d.path, said(&d.text));
    }
    assert!(docs.iter().any(|d| d.text.contains("\"version\": 2")));
}

fn man_pages_come_one_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = syscost()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    for page in [
        "syscost.1",
        "syscost-run-syscall.1",
        "syscost-history-compare.1",
        "syscost-ab.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    assert!(!dir.path().join("syscost-__worker.1").exists());
}

fn small_things_a_new_user_meets() {
    let dir = tempfile::tempdir().unwrap();
    let base = quick_run();
    let write = |name: &str, v: &serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (a, b) = (
        write("a.json", &base),
        write("b.json", &relabelled(&base, &[], 1.2)),
    );
    refused(
        &["compare", &a, &b, "--resamples", "1"],
        "from 1,000 to 1,000,000",
    );
    let mut labels = vec![
        "ab",
        "--variant",
        "spin",
        "--variant",
        "spin --iterations 200",
    ];
    labels.extend(["--label", "x", "--label", "x", "--", "--no-history"]);
    refused(&labels, "--label 'x' is given twice");
    let mut empty = base.clone();
    empty["metrics"] = serde_json::json!([]);
    let e = write("empty.json", &empty);
    refused(&["compare", &a, &e], "it has no metrics at all");
    // The cause of an error is said once.
    let err = refused(
        &["show", "/nonexistent/r.json"],
        "cannot read /nonexistent/r.json",
    );
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    // Markdown: GitHub would hide <not supported> as a tag. A run that asks for cycles, which
    // a machine without a PMU (this one) cannot count.
    let c = json_of(&[
        "run",
        "syscall",
        "--runs",
        "2",
        "--samples",
        "2",
        "--sample-time",
        "5ms",
        "-e",
        "task-clock,cycles",
        "--no-history",
        "--json",
    ]);
    let c = write("c.json", &c);
    let table = syscost().args(["show", &c]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    let md = syscost()
        .args(["show", &c, "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(!md.contains("<not supported>"), "{md}");
    if table.contains("<not supported>") {
        assert!(md.contains("&lt;not supported&gt;"), "{md}");
    } else {
        println!("this machine counts cycles: the Markdown escape was not exercised");
    }
    // One label, not `CPUs-utilized (CPUs utilized)`.
    assert!(table.contains("CPUs-utilized"), "{table}");
    assert!(!table.contains("CPUs-utilized (CPUs utilized)"), "{table}");
}

/// `run --until` takes the floor design unless the samples are chosen, and says so.
fn run_until_takes_the_floor_unless_the_samples_are_chosen() {
    let cpu = a_cpu();
    let base = [
        "run", "spin", "--cpu", &cpu, "--runs", "3", "--until", "50%",
    ];
    let with = |more: &[&str]| {
        let mut args = base.to_vec();
        args.extend(more);
        args.extend(["--no-history", "--json"]);
        json_of(&args)
    };
    let r = with(&[]);
    assert_eq!(r["options"]["estimator"], "min");
    assert_eq!(r["options"]["samples"], 100);
    let chosen = with(&["--samples", "3", "--sample-time", "10ms"]);
    assert_eq!(chosen["options"]["estimator"], "median");
    assert_eq!(chosen["options"]["samples"], 3);
}

/// Every file under `dir`, into `out`.
fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Comments, scripts and docs name the public investigations and say what a target is, never
/// the project's own files or tracker (a source document's or an issue's number): a newcomer can
/// look neither up.
fn sources_name_public_investigations_not_private_names() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in [
        "src", "bench", "benches", "csrc", "docs", "scripts", "tests",
    ] {
        walk(&root.join(d), &mut files);
    }
    files.extend(["build.rs", "README.md"].map(|f| root.join(f)));
    // The investigations' files are numbered 000 to 004, issues from 1 (the words are built
    // here, so that this test does not find itself).
    let (seed, issue) = (["se", "ed"].concat(), ["iss", "ue"].concat());
    let private = |l: &str| {
        let l = l.to_lowercase();
        let numbered = |w: &str, digits: &str| {
            l.match_indices(w)
                .any(|(at, _)| l[at + w.len()..].starts_with(digits))
        };
        numbered(&format!("{seed} 00"), "")
            || numbered(&format!("{seed}s 00"), "")
            // an investigation's possessive, or a test named after one (never the shuffle's
            // random seed)
            || numbered(&format!("{seed}'s"), "")
            || numbered(&format!("the {seed} says"), "")
            || numbered(&format!("_{seed}_"), "")
            || [format!("{issue} "), format!("{issue} #")]
                .iter()
                .any(|w| (0..10).any(|d| numbered(w, &d.to_string())))
    };
    let mut found = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (i, l) in text.lines().enumerate() {
            if private(l) {
                found.push(format!("{}:{}: {l}", f.display(), i + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A string literal that goes on to the next line without its `\` keeps the next line's
/// indentation: "as a shell                      would". No line of the sources has a literal
/// with a run of 8 or more spaces between words (an indentation; a table lines up with fewer).
fn messages_carry_no_run_of_spaces_from_a_lost_line_continuation() {
    // The parts of a line inside double quotes (a line's literals, naively: enough here).
    fn stray(line: &str) -> bool {
        let t = line.trim_start();
        if t.starts_with("//") {
            return false;
        }
        line.split('"').skip(1).step_by(2).any(|lit| {
            let b = lit.as_bytes();
            (1..b.len()).any(|i| {
                let run = b[i..].iter().take_while(|c| **c == b' ').count();
                run >= 8
                    && b[i - 1] != b' '
                    && b.get(i + run).is_some_and(|c| c.is_ascii_alphabetic())
            })
        })
    }
    assert!(stray(
        r#"    "into words as a shell                      would (an unclosed quote?)""#
    ));
    assert!(!stray(r#"    "into words as a shell \"#));
    assert!(!stray(r#"    // "a comment's     spaces""#));
    let mut files = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut found = Vec::new();
    for p in files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
    {
        let text = std::fs::read_to_string(p).unwrap();
        for (i, l) in text.lines().enumerate().filter(|(_, l)| stray(l)) {
            found.push(format!("{}:{}: {l}", p.display(), i + 1));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
