//! End-to-end: the documentation's examples, as written. Every `syscost` command of a code
//! block of the README or the book (docs/src) is either run here, in a scratch directory holding the files it names (on the
//! Debian kernels scripts/test.sh fetches), or listed below with why it is not (a kernel tree,
//! a LAVA lab, results of several kernels); a new example must be one or the other. A run may
//! change a count (`--runs 6` to `--runs 2`, shorter samples) or a path an example names
//! (`/boot/...` to the fetched kernel) by an exact substitution that fails when the document no
//! longer holds it: the examples' words are checked, not their figures.

use crate::common::*;
use std::path::{Path, PathBuf};

crate::tests! {
    // longest first (see main.rs)
    // exact counts
    Shared the_campaign_and_bisection_examples_run_as_written,
    Serial the_host_examples_run_as_written,
    Shared every_example_is_run_or_says_why_not,
}

use crate::book::{At, examples};

/// What an example needs to run: the kernels of the bisection tests (7) or of the campaign
/// tests (2).
#[derive(Clone, Copy, PartialEq)]
enum Needs {
    Host,
    Audit,
    Kernels,
    Builds,
}

/// An example run here: the documented command it starts with, the substitutions applied to it,
/// what it needs, and what its output must say.
struct Run {
    starts: &'static str,
    subs: &'static [(&'static str, &'static str)],
    needs: Needs,
    says: &'static [&'static str],
}

const RUNS: &[Run] = &[
    Run {
        starts: "syscost run syscall --cpu 1 --runs 5",
        subs: &[(
            "--runs 5",
            "--runs 3 --samples 3 --sample-time 20ms -o base.json",
        )],
        needs: Needs::Host,
        says: &["Per-call statistics for syscall getpid"],
    },
    Run {
        starts: "syscost compare base.json patch1.json patch2.json --format lkml",
        subs: &[],
        needs: Needs::Host,
        says: &["time"],
    },
    Run {
        starts: "syscost run file --op read --copies 1,2 --runs 3 -e none",
        subs: &[("--runs 3", "--runs 2 --samples 3 --sample-time 20ms")],
        needs: Needs::Host,
        says: &["file read (processes) ( 2 cpus):"],
    },
    Run {
        starts: "syscost history import base.json patch.json --tag build=align-32",
        subs: &[],
        needs: Needs::Host,
        says: &[],
    },
    Run {
        starts: "syscost history list --workload syscall --since 2026-11-01",
        subs: &[],
        needs: Needs::Host,
        says: &["syscall getpid (nr 39)", "build=align-32"],
    },
    Run {
        starts: "syscost history --history /var/lib/syscost/history.sqlite list",
        subs: &[("/var/lib/syscost/history.sqlite", "history.sqlite")],
        needs: Needs::Host,
        says: &[],
    },
    Run {
        starts: "syscost audit sweep --rules 0,8,16,24,32,40,48 --cpu 1 --runs 6",
        subs: &[
            ("0,8,16,24,32,40,48", "0,48"),
            ("--runs 6", "--runs 2 --samples 3 --sample-time 20ms"),
        ],
        needs: Needs::Audit,
        says: &["Audit sweep of"],
    },
    Run {
        starts: "syscost run syscall --cpu 1 --audit-rules /etc/audit/rules.d/audit.rules",
        subs: &[(
            "audit.rules",
            "audit.rules --runs 2 --samples 3 --sample-time 20ms",
        )],
        needs: Needs::Audit,
        says: &["audit rules of /etc/audit/rules.d/audit.rules"],
    },
    Run {
        starts: "syscost ab --variant 'syscall' --variant 'syscall --audit-rules my.rules'",
        subs: &[("--runs 10", "--runs 6 --samples 3 --sample-time 10ms")],
        needs: Needs::Audit,
        says: &["time"],
    },
    Run {
        starts: "syscost audit sweep --audit-rules my.rules --cpu 1 --runs 6",
        subs: &[("--runs 6", "--runs 2 --samples 3 --sample-time 20ms")],
        needs: Needs::Audit,
        says: &["Audit sweep of", "my.rules"],
    },
    Run {
        starts: "syscost campaign --accel tcg --cache-model skylake-x",
        subs: &[
            ("/boot/vmlinuz-6.1.0-56-cloud-amd64", "{6.1}"),
            // An exact count does not get truer by repeating it: one run, its windows sized by
            // count as the book's are.
            ("--runs 3", "--runs 1"),
        ],
        needs: Needs::Kernels,
        says: &[
            "Audit rules, arm audit1: 3 rule(s) of prod.rules, audit on (on at boot)",
            "L1d",
        ],
    },
    Run {
        // As the book prints it, at the defaults (windows sized by count) and its seed.
        starts: "syscost bisect --accel tcg --emulated-counters --builds builds.list --seed 1 -- run",
        subs: &[],
        needs: Needs::Builds,
        // A real one-instruction change per getpid between two consecutive updates, found
        // at the defaults.
        says: &["first bad build v117:", "Last good build: v115"],
    },
];

/// Examples not run here, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "syscost run uprobe --probe uprobe --insn nop --threads 1-2",
        "tests/all/uprobe.rs measures the uprobe thread's benchmark",
    ),
    (
        "syscost history trend --workload syscall --param syscall=getpid",
        "a trend needs results of several kernels (tests/all/history.rs)",
    ),
    (
        "syscost history --history /var/lib/syscost/history.sqlite compare --by kernel",
        "a comparison of kernels needs results of several (tests/all/history.rs)",
    ),
    (
        "syscost campaign --accel tcg --emulated-counters --arm 6.1=vmlinuz-6.1 --guest-file",
        "an audit sweep over a rules file in each boot (tests/all/campaign.rs)",
    ),
    (
        "syscost campaign --accel tcg --boots 12 --format lkml --arm base=linux/",
        "the builds of a kernel tree",
    ),
    (
        "syscost bisect --accel tcg --builds builds.list --good v107 --bad v117",
        "timed: 9 to 18 boots a step (tests/all/bisect.rs bisects by time)",
    ),
    (
        "syscost bisect git ",
        "a kernel tree (tests/all/bisect.rs makes one of git commits)",
    ),
    (
        "syscost campaign --via lava",
        "a LAVA lab (tests/all/lava.rs starts one)",
    ),
    (
        "syscost reproduce audit-series --build",
        "18 boots; tests/all/reproduce.rs builds the baseline and patch 1 and boots their arms",
    ),
    (
        "syscost reproduce syscall-latency --build --kernels target/kernels/boot",
        "18 boots; tests/all/reproduce.rs runs the audit series on the same builds",
    ),
    (
        "syscost reproduce alignment-rfc --build",
        "11 builds of 2.6 minutes each; tests/all/reproduce.rs builds two and boots them, and \
         refuses a part of the RFC with one build",
    ),
    (
        "syscost reproduce uprobe-thread --kernels target/kernels/boot",
        "8 boots on 2 vCPUs; tests/all/campaign.rs boots its arms' own commands on one",
    ),
    (
        "syscost bisect --via lava",
        "a LAVA lab (tests/all/lava.rs starts one)",
    ),
    (
        "syscost reproduce status",
        "tests/all/reproduce.rs runs it on the uprobe thread's reproduction, killed",
    ),
    (
        "syscost reproduce resume",
        "tests/all/reproduce.rs kills the uprobe thread's reproduction after its third boot and \
         resumes it",
    ),
    (
        "syscost reproduce abort",
        "drops a kept run as `campaign abort` does (kept_run::drop_run; tests/all/campaign.rs)",
    ),
];

/// The documentation's example `syscost` commands are each run here or listed as not run:
/// none can be added, or changed past its entry, unseen.
fn every_example_is_run_or_says_why_not() {
    let all = examples();
    assert!(all.len() >= 20, "{all:?}");
    for (at, cmd) in &all {
        let run = RUNS.iter().filter(|r| cmd.starts_with(r.starts)).count();
        let not = NOT_RUN.iter().filter(|(s, _)| cmd.starts_with(s)).count();
        assert_eq!(
            run + not,
            1,
            "{at}: `{cmd}` must be run by tests/all/readme.rs or listed in NOT_RUN"
        );
    }
    for r in RUNS {
        assert!(
            all.iter().any(|(_, c)| c.starts_with(r.starts)),
            "the documentation no longer has `{}`",
            r.starts
        );
    }
}

/// The documentation's example command starting `starts`, with `subs` applied (each must apply).
fn example(starts: &str, subs: &[(&str, &str)], fill: &dyn Fn(&str) -> String) -> Vec<String> {
    let (at, cmd): (At, String) = examples()
        .into_iter()
        .find(|(_, c)| c.starts_with(starts))
        .unwrap_or_else(|| panic!("the documentation no longer has `{starts}`"));
    let mut cmd = cmd;
    for (from, to) in subs {
        assert!(cmd.contains(from), "{at}: `{from}` is gone from `{cmd}`");
        cmd = cmd.replace(from, &fill(to));
    }
    let words = shlex::split(&cmd).unwrap_or_else(|| panic!("{at}: `{cmd}`"));
    assert_eq!(words[0], "syscost");
    words[1..].to_vec()
}

/// The bisection chapter's builds.list block, each of its kernels (`k/vmlinuz-VERSION`) linked
/// in `dir/k/` to the fetched image of the same name: tests/kernels.list pins the book's seven.
fn builds_list(dir: &Path, fetched: &[PathBuf]) {
    let chapter =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/bisect.md"))
            .unwrap();
    let at = chapter
        .find("# builds.list\n")
        .expect("the bisection chapter's builds.list");
    let text = &chapter[at..at + chapter[at..].find("```").unwrap()];
    let named: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next()?.split_once('=').map(|(_, k)| k))
        .collect();
    assert_eq!(named.len(), fetched.len(), "{text}");
    for name in named {
        let link = dir.join(name);
        let file = link.file_name().unwrap();
        let kernel = fetched
            .iter()
            .find(|k| k.file_name() == Some(file))
            .unwrap_or_else(|| panic!("tests/kernels.list pins no {file:?} for {name}"));
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(kernel, link).unwrap();
    }
    std::fs::write(dir.join("builds.list"), text).unwrap();
}

const RULES: &str = "-a always,exit -F arch=b64 -S getppid -k a\n\
                     -a always,exit -F arch=b64 -S sethostname -F auid=1000 -k b\n\
                     -a always,exit -F arch=b64 -S acct -k c\n";

/// The files the examples name, in `dir`.
fn files(dir: &Path) {
    std::fs::write(dir.join("my.rules"), RULES).unwrap();
    std::fs::write(dir.join("prod.rules"), RULES).unwrap();
}

/// Run each example of `RUNS` that needs `needs`, in order, in one scratch directory.
fn run_examples(needs: Needs, dir: &Path, fill: &dyn Fn(&str) -> String) {
    for r in RUNS.iter().filter(|r| r.needs == needs) {
        let words = example(r.starts, r.subs, fill);
        let out = syscost()
            .current_dir(dir)
            .env("TMPDIR", dir)
            .env("XDG_STATE_HOME", dir.join("state"))
            .env("SYSCOST_HISTORY", dir.join("history.sqlite"))
            .args(&words)
            .output()
            .unwrap();
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "syscost {words:?}: {err}");
        for s in r.says {
            assert!(text.contains(s), "syscost {words:?}: no `{s}` in {text}");
        }
        // The compare and import examples name results the run example wrote.
        if dir.join("base.json").exists() {
            for other in ["patch.json", "patch1.json", "patch2.json"] {
                let _ = std::fs::copy(dir.join("base.json"), dir.join(other));
            }
        }
    }
}

/// The examples measured on this machine itself, one after another (their times must not
/// share the machine with other tests).
fn the_host_examples_run_as_written() {
    let tmp = scratch();
    files(tmp.path());
    run_examples(Needs::Host, tmp.path(), &|s| s.to_string());
    if audit_available() {
        run_examples(Needs::Audit, tmp.path(), &|s| s.to_string());
    }
}

/// The campaign and the bisection, booted under TCG with exact counts, on the kernels
/// scripts/test.sh fetches (the documentation's 6.1 image is the fetched one).
fn the_campaign_and_bisection_examples_run_as_written() {
    let (Some(k), Some(builds)) = (kernels_in("boot"), kernels_in("bisect")) else {
        return;
    };
    let tmp = scratch();
    files(tmp.path());
    let old = k[0].display().to_string();
    run_examples(Needs::Kernels, tmp.path(), &|s| s.replace("{6.1}", &old));
    builds_list(tmp.path(), &builds);
    run_examples(Needs::Builds, tmp.path(), &|s| s.to_string());
}
