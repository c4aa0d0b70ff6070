//! End-to-end: audit rules files as auditctl reads them. Every rule file auditd ships loads
//! through syscost into the same kernel list as through `auditctl -R`; each field kind and
//! operator round-trips through the kernel to the line auditctl lists; a SIGKILLed run leaves
//! rules that the next command removes, the user's untouched. These change kernel state: each
//! is registered serial (it runs alone), none locks audit, and settings lines (-D, -e, -b, -f, -r,
//! --loginuid-immutable) are never given to auditctl here.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use syscost::audit::rules_file::{self, OnError};
use syscost::audit::session::Session;
use syscost::audit::{AuditSocket, rules};

crate::tests! {
    Serial every_rule_file_auditd_ships_loads_as_auditctl_loads_it,
    Serial a_rule_of_each_field_kind_and_operator_lists_back_as_its_line,
    Serial sigkill_during_a_run_with_a_rules_file_leaves_rules_the_next_run_removes,
    Serial a_sweep_over_the_stig_rules_ranks_each_rule_and_costs_the_set,
    Serial a_file_deletes_only_rules_it_added_itself,
}

const EXAMPLES: &str = "/usr/share/doc/auditd/examples/rules";

/// auditctl and libaudit, or why the test cannot run.
fn ready() -> bool {
    if !audit_available() {
        return false;
    }
    if let Err(e) = syscost::audit::libaudit::available() {
        skip(format!("{e:#}"));
        return false;
    }
    if Command::new("auditctl").arg("-v").output().is_err() {
        skip("auditctl is not installed (scripts/test.sh installs auditd)");
        return false;
    }
    true
}

/// Every rule in the kernel, in order.
fn listed() -> Vec<Vec<u8>> {
    let mut s = AuditSocket::open().unwrap();
    s.list_rules()
        .unwrap()
        .into_iter()
        .map(|r| r.bytes)
        .collect()
}

/// The rules of `after` that `before` did not have, in order.
fn added(before: &[Vec<u8>], after: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    after.into_iter().filter(|r| !before.contains(r)).collect()
}

/// A file's rule lines only: a settings line would change this machine (-D deletes every
/// rule), so neither auditctl nor syscost is given one here.
fn rule_lines(text: &str) -> String {
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            ["-a", "-A", "-w"].iter().any(|o| l.starts_with(o))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// What `auditctl -R` puts in the kernel for `text`, going on past errors (a `-i` line, as
/// auditd's 12-ignore-error.rules does); removed again before this returns.
fn through_auditctl(text: &str, dir: &Path) -> Vec<Vec<u8>> {
    let before = listed();
    let file = dir.join("auditctl.rules");
    std::fs::write(&file, format!("-i\n{text}")).unwrap();
    let out = Command::new("auditctl")
        .arg("-R")
        .arg(&file)
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let theirs = added(&before, listed());
    let mut s = AuditSocket::open().unwrap();
    for r in &theirs {
        s.del_rule(r).unwrap();
    }
    assert!(out.code().is_some(), "auditctl was killed");
    theirs
}

/// What syscost loads for `text` (going on past errors), with its own keys taken off, and the
/// lines it left out; removed again before this returns.
fn through_syscost(text: &str, name: &str) -> (Vec<Vec<u8>>, usize) {
    let before = listed();
    let mut set = rules_file::parse(text, name, OnError::Continue).unwrap();
    let mut session = Session::begin().unwrap();
    session.load_file(&mut set).unwrap();
    let ours = added(&before, listed())
        .iter()
        .map(|r| rules::without_key(r, "syscost-").unwrap())
        .collect();
    session.restore().unwrap();
    assert_eq!(before, listed(), "{name}: syscost's rules are gone");
    (ours, set.refused.len())
}

fn every_rule_file_auditd_ships_loads_as_auditctl_loads_it() {
    if !ready() {
        return;
    }
    let Ok(dir) = std::fs::read_dir(EXAMPLES) else {
        skip(format!("no {EXAMPLES} (auditd's examples)"));
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
    files.sort();
    let mut compared = 0;
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "rules"))
    {
        let text = rule_lines(&std::fs::read_to_string(f).unwrap());
        if text.is_empty() {
            continue;
        }
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let theirs = through_auditctl(&text, tmp.path());
        let (ours, refused) = through_syscost(&text, &name);
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{name}: syscost loaded {} rules, auditctl {} ({refused} lines left out)",
            ours.len(),
            theirs.len()
        );
        assert!(ours == theirs, "{name}: the kernel lists other rules");
        compared += theirs.len();
    }
    println!("{compared} rules of {} files compared", files.len());
    assert!(compared > 100, "only {compared} rules compared");
}

/// Lines as `auditctl -l` lists them: a field of each kind and every operator.
const LINES: &[&str] = &[
    "-a always,exit -F arch=b64 -S getpid -F auid>=1000 -F auid!=-1 -F exit=-EACCES -F a0&0x4 -F a1&=0x3 -F uid<5 -F gid<=5 -F pid>7 -F key=one -F key=two",
    "-a always,exit -F arch=b32 -S stime -C uid!=euid",
    "-w /etc/passwd -p wa -k id",
    "-a never,task",
    "-a always,exclude -F msgtype=CWD",
    "-a never,filesystem -F fstype=tracefs",
    "-a always,exit -S all -F dir=/etc -F perm=wa -F success=0",
    "-a always,user -F uid=0",
    "-a always,exit -F arch=b64 -S openat,open_by_handle_at -F path=/etc/shadow -F obj_uid=0 -F obj_gid=0 -F ppid=1",
    "-a never,exit -F arch=b64 -S openat -F exe=/usr/bin/cat -F devmajor=8 -F devminor=1 -F inode=5",
    "-a always,exit -F arch=b64 -S openat -F sessionid=-1 -F euid=0 -F suid=0 -F fsuid=0 -F egid=0 -F sgid=0 -F fsgid=0",
    "-a always,exit -F arch=b64 -S openat -F pers=0 -F a2!=0x5 -F a3>0x9 -F saddr_fam=2",
];

fn a_rule_of_each_field_kind_and_operator_lists_back_as_its_line() {
    if !ready() {
        return;
    }
    let text: String = LINES.iter().map(|l| format!("{l}\n")).collect();
    let mut set = rules_file::parse(&text, "lines", OnError::Stop).unwrap();
    let mut session = Session::begin().unwrap();
    session.load_file(&mut set).unwrap();
    let out = Command::new("auditctl").arg("-l").output().unwrap();
    session.restore().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let key = regex_lite::Regex::new(r" (-F key=|-k )syscost-\d+-\d+-\d+").unwrap();
    let ours: Vec<String> = listing
        .lines()
        .filter(|l| key.is_match(l))
        .map(|l| key.replace(l, "").to_string())
        .collect();
    for line in LINES {
        assert!(
            ours.iter().any(|l| l == line),
            "{line}\nnot listed in:\n{listing}"
        );
    }
    assert_eq!(ours.len(), LINES.len(), "{listing}");
}

fn syscost_rules(pid: Option<u32>) -> usize {
    let prefix = pid.map_or("syscost-".to_string(), |p| format!("syscost-{p}-"));
    let mut s = AuditSocket::open().unwrap();
    let rules = s.list_rules().unwrap();
    rules
        .iter()
        .filter(|r| r.key_starting(&prefix).is_some())
        .count()
}

/// Whether process `pid` has a child (a run's worker, started only once its rules are set up).
fn has_child(pid: u32) -> bool {
    let ppid_of = |stat: String| -> Option<u32> {
        // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
        stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
    };
    (std::fs::read_dir("/proc").into_iter().flatten().flatten())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| ppid_of(stat) == Some(pid))
}

fn sigkill_during_a_run_with_a_rules_file_leaves_rules_the_next_run_removes() {
    if !ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mine.rules");
    std::fs::write(
        &file,
        "-a always,exit -F arch=b64 -S acct -F key=mine\n-w /etc/hostname -p wa\n",
    )
    .unwrap();
    // A rule of the user's own, loaded by auditctl: it must outlive everything syscost does.
    let user = "-a always,exit -F arch=b64 -S swapon -F auid=4242 -F key=user-own";
    let ok = Command::new("auditctl")
        .args(user.split(' '))
        .status()
        .unwrap();
    assert!(ok.success());
    let before = listed();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args([
            "run",
            "syscall",
            "--runs",
            "500",
            "--samples",
            "2",
            "--sample-time",
            "10ms",
        ])
        .arg("--audit-rules")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it measures under its rules: a worker runs. Before that, the run loads the
    // file, then sets the machine to its first state, deleting and adding the rules again (a
    // deletion waits about 12 ms in the kernel): killed when its 2 rules first show, it could
    // die between a deletion and the next, leaving one.
    let deadline = Instant::now() + Duration::from_secs(30);
    while syscost_rules(Some(child.id())) < 2 || !has_child(child.id()) {
        assert!(
            Instant::now() < deadline,
            "the run never measured under its rules"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(syscost_rules(None), 2, "SIGKILL leaves the rules behind");
    let out = syscost()
        .args(["run", "syscall", "--runs", "2", "--json"])
        .args(QUICK)
        .arg("--audit-rules")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("left by a syscost that was killed"), "{said}");
    assert_eq!(
        syscost_rules(None),
        0,
        "the next run removed them and its own"
    );
    let after = listed();
    let d = Command::new("auditctl")
        .args(user.replacen("-a", "-d", 1).split(' '))
        .status();
    assert!(d.unwrap().success(), "the user's rule is still there");
    assert_eq!(
        after.iter().filter(|r| !before.contains(r)).count(),
        0,
        "nothing of syscost's is left"
    );
}

fn a_sweep_over_the_stig_rules_ranks_each_rule_and_costs_the_set() {
    if !ready() {
        return;
    }
    let stig = Path::new(EXAMPLES).join("30-stig.rules");
    if !stig.exists() {
        skip(format!("no {} (auditd's examples)", stig.display()));
        return;
    }
    let before = listed();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("sweep.json");
    let out = syscost()
        .args(["audit", "sweep", "--runs", "3", "--samples", "2", "-o"])
        .arg(&file)
        .args([
            "--warmup",
            "0",
            "--sample-time",
            "10ms",
            "--no-residue-step",
        ])
        .arg("--audit-rules")
        .arg(&stig)
        .args(["--audit-rules-errors", "continue"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(before, listed(), "every rule of the sweep removed");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let f = &v["rules_file"];
    let rules = f["rules"].as_array().unwrap();
    // The STIG set's 34 rule lines, less those this machine's kernel refuses (a dir= on a
    // directory that does not exist here), each with a cost and a kind.
    let refused = f["refused"].as_array().unwrap().len();
    assert_eq!(rules.len() + refused, 34, "{f}");
    assert!(rules.len() >= 30, "{f}");
    for r in rules {
        assert!(
            r["deltas"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["metric"] == "time"),
            "{r}"
        );
    }
    let kinds: Vec<&str> = rules.iter().map(|r| r["walk"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"other-syscalls") && kinds.contains(&"watch"),
        "{kinds:?}"
    );
    // The set against audit off: the audit series' audit=0 against its rules.
    let total = f["set_total"].as_array().unwrap();
    let t = total.iter().find(|d| d["metric"] == "time").unwrap();
    assert!(
        t["median"].as_f64().unwrap() > t["base_median"].as_f64().unwrap(),
        "{t}"
    );
    // The table ranks them, costliest first, and names the lines left out.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("costliest first"), "{text}");
    assert_eq!(text.matches(" left out: ").count(), refused, "{text}");
    // A rule without an interval (too few runs) is said to have none, never counted among
    // the intervals that hold zero.
    let ci = |r: &serde_json::Value| {
        let d = r["deltas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["metric"] == "time");
        d.and_then(|d| Some((d["ci_pct"]["lo"].as_f64()?, d["ci_pct"]["hi"].as_f64()?)))
    };
    let without = rules.iter().filter(|r| ci(r).is_none()).count();
    let zero = rules
        .iter()
        .filter_map(ci)
        .filter(|&(lo, hi)| lo <= 0.0 && hi >= 0.0)
        .count();
    let n = rules.len();
    for (count, says) in [
        (without, "rules have no interval"),
        (zero, "rules' intervals hold zero"),
    ] {
        let line = format!(" {count} of {n} {says}");
        assert_eq!(text.contains(&line), count > 0, "{line}: {text}");
    }
}

fn a_file_deletes_only_rules_it_added_itself() {
    if !ready() {
        return;
    }
    let before = listed();
    // The user's own watch, which the file's -W names: it must stay.
    let watch = ["/etc/hostname", "-p", "wa", "-k", "user-own"];
    let ok = Command::new("auditctl").arg("-w").args(watch).status();
    assert!(ok.unwrap().success());
    let with_user = listed();
    let text = "-a always,exit -F arch=b64 -S acct -k a\n\
                -a always,exit -F arch=b64 -S swapon -k b\n\
                -d always,exit -F arch=b64 -S acct -k a\n\
                -W /etc/hostname -p wa -k user-own\n";
    let mut set = rules_file::parse(text, "deletes", OnError::Stop).unwrap();
    let mut session = Session::begin().unwrap();
    let notes = session.load_file(&mut set).unwrap();
    let lines: Vec<usize> = session.file_rules().iter().map(|r| r.0).collect();
    assert_eq!(lines, [2], "the -d removed its own rule of line 1");
    assert!(
        notes.iter().any(|n| n.starts_with("line 4: not deleted")),
        "{notes:?}"
    );
    assert_eq!(added(&with_user, listed()).len(), 1);
    session.restore().unwrap();
    assert_eq!(with_user, listed(), "the user's watch is still there");
    let d = Command::new("auditctl").arg("-W").args(watch).status();
    assert!(d.unwrap().success());
    assert_eq!(before, listed());
}
