//! End-to-end: the audit sweep on this kernel, and the machine's audit state afterwards.
//! These change kernel state: each is registered serial (it runs alone), and none locks audit.

use crate::common::*;
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use syscost::audit::{AuditSocket, rules};

crate::tests! {
    Serial sweep_measures_and_leaves_audit_exactly_as_found,
    Serial sigkill_leaves_keyed_rules_that_the_next_command_removes,
    Serial sigint_mid_sweep_cleans_up,
    Serial sigterm_mid_sweep_cleans_up,
    Serial locked_audit_is_refused_before_any_change,
    Shared unprivileged_user_is_told_the_capability,
    Shared bad_sweep_arguments,
    Serial residue_measures_without_enabling_audit,
    Shared env_reports_audit_and_residue_fields,
    Shared rule_addresses_are_dumped_or_the_missing_settings_named,
    Serial sweep_of_any_workload,
}

/// Everything that identifies the audit state: enabled flag and every rule's bytes, in order.
fn snapshot() -> (u32, Vec<Vec<u8>>) {
    let mut s = AuditSocket::open().unwrap();
    let st = s.status_message().unwrap();
    let r = s
        .list_rules()
        .unwrap()
        .into_iter()
        .map(|r| r.bytes)
        .collect();
    (st.enabled, r)
}

fn syscost_rules() -> usize {
    let mut s = AuditSocket::open().unwrap();
    s.list_rules()
        .unwrap()
        .iter()
        .filter(|r| r.key_starting("syscost-").is_some())
        .count()
}

const SWEEP: &[&str] = &[
    "audit",
    "sweep",
    "--rules",
    "0,8,64",
    "--runs",
    "3",
    "--samples",
    "3",
    "--warmup",
    "0",
    "--sample-time",
    "15ms",
];

/// A user's own rule, added through the same netlink code, with its own key.
struct UserRule(Vec<u8>);

impl UserRule {
    fn add() -> UserRule {
        let key = format!("usertest-{}", std::process::id());
        let r = rules::encode(
            rules::FILTER_EXIT,
            rules::ACTION_ALWAYS,
            &[libc::SYS_acct as u32],
            &[(rules::FIELD_PID, 0x7fff_fff0)],
            &key,
        );
        AuditSocket::open().unwrap().add_rule(&r).unwrap();
        UserRule(r)
    }
}

impl Drop for UserRule {
    fn drop(&mut self) {
        let _ = AuditSocket::open().and_then(|mut s| s.del_rule(&self.0));
    }
}

fn sweep_measures_and_leaves_audit_exactly_as_found() {
    if !audit_available() {
        return;
    }
    let user = UserRule::add();
    let before = snapshot();
    assert!(before.1.contains(&user.0));
    let cpu = a_cpu();
    let out = syscost()
        .args(SWEEP)
        .args(["--matching", "2", "--cpu", &cpu, "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = snapshot();
    assert_eq!(
        before, after,
        "enabled flag and every rule, byte for byte, in order"
    );
    assert_eq!(syscost_rules(), 0);

    let sweep: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sweep["kind"], "audit-sweep");
    let steps = sweep["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5, "off+never, off, on with 0, 8, 64 rules");
    let median = |i: usize| {
        steps[i]["result"]["metrics"][0]["summary"]["median"]
            .as_f64()
            .unwrap()
    };
    // Ratios with generous margins, never absolute times.
    assert!(
        median(4) > median(0) * 1.05,
        "64 rules cost more than audit off: {} vs {}",
        median(4),
        median(0)
    );
    assert!(median(2) > median(0), "audit on is slower than audit off");
    let fit = &sweep["fits"][0];
    assert_eq!(fit["metric"], "time");
    assert!(
        fit["slope"].as_f64().unwrap() > 0.0,
        "each rule adds time: {fit}"
    );
    assert_eq!(
        sweep["audit_before"]["lost"], sweep["audit_after"]["lost"],
        "no records lost"
    );
    assert!(sweep["baseline"].as_str().unwrap().contains("never,task"));
    drop(user);
    // Its table says what its rules name: the first 2 the benchmarked syscall; of a sweep with
    // --matching 0, that none does (it said "the first 0 name ...").
    let dir = tempfile::tempdir().unwrap();
    let shown = |sweep: &Value| {
        let file = dir.path().join("sweep.json");
        std::fs::write(&file, sweep.to_string()).unwrap();
        let out = syscost().arg("show").arg(&file).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = shown(&sweep);
    assert!(
        text.contains(" Rules: the first 2 name the benchmarked syscall"),
        "{text}"
    );
    let mut none = sweep.clone();
    none["matching"] = 0.into();
    let text = shown(&none);
    assert!(
        text.contains(" Rules: none names the benchmarked syscall (--matching 0)"),
        "{text}"
    );
    assert!(!text.contains("the first 0"), "{text}");
}

fn wait_for_rules(pid: u32, min: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut s = AuditSocket::open().unwrap();
        let n = s
            .list_rules()
            .unwrap()
            .iter()
            .filter(|r| r.key_starting(&format!("syscost-{pid}-")).is_some())
            .count();
        if n >= min {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the sweep never loaded {min} rules"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn long_sweep() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin!("syscost"));
    c.env("SYSCOST_HISTORY", TEST_HISTORY);
    c.args([
        "audit",
        "sweep",
        "--rules",
        "0,8,16",
        "--runs",
        "200",
        "--samples",
        "2",
    ])
    .args(["--warmup", "0", "--sample-time", "10ms"])
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    c
}

fn sigkill_leaves_keyed_rules_that_the_next_command_removes() {
    if !audit_available() {
        return;
    }
    let before = snapshot();
    let mut child = long_sweep().spawn().unwrap();
    wait_for_rules(child.id(), 8);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(syscost_rules() >= 1, "SIGKILL leaves the rules behind");
    let out = syscost().args(["audit", "status"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("left by a syscost that was killed"), "{err}");
    assert_eq!(syscost_rules(), 0);
    assert_eq!(before, snapshot(), "rules and enabled flag restored");
    let out = syscost().args(["audit", "cleanup"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to clean up"));
}

fn interrupted_cleanly(sig: i32) {
    if !audit_available() {
        return;
    }
    let before = snapshot();
    let mut child = long_sweep().spawn().unwrap();
    wait_for_rules(child.id(), 8);
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(128 + sig), "stderr: {err}");
    assert_eq!(syscost_rules(), 0, "cleaned before exit");
    assert_eq!(before, snapshot());
}

fn sigint_mid_sweep_cleans_up() {
    interrupted_cleanly(libc::SIGINT);
}

fn sigterm_mid_sweep_cleans_up() {
    interrupted_cleanly(libc::SIGTERM);
}

fn locked_audit_is_refused_before_any_change() {
    if !audit_available() {
        return;
    }
    let before = snapshot();
    let out = syscost()
        .args(SWEEP)
        .env(syscost::audit::PRETEND_LOCKED_ENV, "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("locked") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(before, snapshot());
}

fn unprivileged_user_is_told_the_capability() {
    if !is_root() {
        skip("needs root to switch to an unprivileged user");
        return;
    }
    let out = Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(SWEEP)
        .uid(65534)
        .gid(65534)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CAP_AUDIT_CONTROL"), "{err}");
}

fn bad_sweep_arguments() {
    for (args, needle) in [
        (vec!["--rules", "16,8"], "strictly increasing"),
        (vec!["--rules", "-1"], "not a rule count"),
        (vec!["--rules", "0,99999"], "above syscost's limit"),
        (
            vec!["--rules", "0,8", "--matching", "9"],
            "more than the largest rule count",
        ),
    ] {
        let out = syscost()
            .args(["audit", "sweep"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

fn residue_measures_without_enabling_audit() {
    if !audit_available() {
        return;
    }
    let before = snapshot();
    let out = syscost()
        .args([
            "audit",
            "residue",
            "--runs",
            "3",
            "--samples",
            "2",
            "--warmup",
            "0",
        ])
        .args(["--sample-time", "10ms", "--format", "json", "--profile"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for s in steps {
        let samples = s["result"]["profile"]["samples"].as_u64().unwrap_or(0);
        assert!(
            samples > 0,
            "--profile gives each step its profile: {}",
            s["label"]
        );
    }
    assert!(
        steps.iter().all(|s| s["enabled"] == 0),
        "audit is never switched on"
    );
    assert_eq!(r["residue"][0]["metric"], "time");
    assert_eq!(before, snapshot());
}

fn env_reports_audit_and_residue_fields() {
    if !audit_available() {
        return;
    }
    let out = syscost().args(["env", "--json"]).output().unwrap();
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(env["audit"]["status"]["enabled"].is_number());
    assert!(env["audit"].get("residue").is_some());
    assert_eq!(env["audit"]["leftover_rules"], 0);
    if std::path::Path::new(syscost::audit::session::ENABLED_MARKER).exists() {
        assert_eq!(env["audit"]["residue"], true);
    }
}

/// `audit addresses` on this kernel: the entries' addresses where it can read them, else one
/// message naming each missing setting and no output file; and a dump in its format (recorded
/// from a kernel that had CONFIG_KALLSYMS_ALL and /proc/kcore) is what `cachesets --addresses`
/// reads.
fn rule_addresses_are_dumped_or_the_missing_settings_named() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("rules.txt");
    let out = syscost()
        .args(["audit", "addresses", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let c = syscost()
            .args(["cachesets", "--size", "408", "--addresses"])
            .arg(&out_file)
            .output()
            .unwrap();
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    } else {
        assert!(
            err.contains("CONFIG_KALLSYMS_ALL")
                || err.contains("CONFIG_PROC_KCORE")
                || err.contains("kptr_restrict")
                || err.contains("/proc/kcore"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
        assert!(!out_file.exists(), "nothing written on a refusal");
        let kallsyms_all = std::fs::read_to_string("/proc/kallsyms")
            .unwrap_or_default()
            .lines()
            .any(|l| l.ends_with(" audit_filter_list"));
        if !kallsyms_all {
            assert!(err.contains("CONFIG_KALLSYMS_ALL"), "{err}");
        }
        if !Path::new("/proc/kcore").exists() {
            assert!(err.contains("CONFIG_PROC_KCORE"), "{err}");
        }
    }
    let recorded = dir.path().join("recorded.txt");
    std::fs::write(
        &recorded,
        "# 4 audit syscall-exit rule entries (struct audit_entry, kmalloc-512), in list order\n\
         0xffff888004123400\n0xffff888004123600\n0xffff8880041a2200\n0xffff888007a10200\n",
    )
    .unwrap();
    let c = syscost()
        .args(["cachesets", "--size", "408", "--json", "--addresses"])
        .arg(&recorded)
        .args(["--geometry", "sets=64,ways=8,line=64"])
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let v: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
    assert_eq!(v["objects"], 4, "{v}");
}

/// `audit sweep --workload`: any workload is swept, its matching rules name that workload's
/// syscalls, audit is left as found, and run options inside --workload or --matching for a
/// workload that cannot name its syscalls are refused.
fn sweep_of_any_workload() {
    if !audit_available() {
        return;
    }
    let before = snapshot();
    let r = json_of(&[
        "audit",
        "sweep",
        "--workload",
        "file --op open-close",
        "--rules",
        "0,4",
        "--matching",
        "2",
        "--runs",
        "2",
        "--samples",
        "2",
        "--warmup",
        "0",
        "--sample-time",
        "5ms",
        "-e",
        "task-clock",
        "--format",
        "json",
    ]);
    assert_eq!(snapshot(), before, "audit left as found");
    assert_eq!(r["workload"]["workload"], "file");
    let syscalls: Vec<u64> = r["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_u64())
        .collect();
    assert_eq!(
        syscalls,
        [libc::SYS_openat as u64, libc::SYS_close as u64],
        "the matching rules name open+close's calls"
    );
    for (args, says) in [
        (vec!["--workload", "file --runs 3"], "run options"),
        (
            vec!["--workload", "mem --op fault-anon", "--matching", "1"],
            "--matching 0",
        ),
        (
            vec!["--workload", "nosuch"],
            "not a valid `syscost run` workload",
        ),
        (
            vec!["--workload", "file", "--syscall", "getppid"],
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["audit", "sweep", "--rules", "0,2", "--runs", "2"];
        all.extend(args);
        refused(&all, says);
    }
    assert_eq!(snapshot(), before, "nothing changed by the refusals");
}
