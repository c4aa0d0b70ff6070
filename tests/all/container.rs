//! syscost as a container's process 1 (`docker run IMAGE syscost ...`, a Kubernetes job
//! without an init): it runs the command it was given. Only a campaign's guest, whose
//! initramfs holds the campaign's plan and whose kernel command line names the arm, makes it
//! the guest's init. `unshare --pid --fork --mount-proc` makes it process 1 as a container
//! runtime does.

use crate::common::*;
use std::process::{Command, Output};

crate::tests! {
    Shared as_process_1_it_prints_its_version,
    Serial as_process_1_it_measures,
}

/// syscost `args` as process 1 of a new PID namespace, or why it cannot be run here.
fn as_process_1(args: &[&str]) -> Result<Output, String> {
    if !is_root() {
        return Err("unshare --pid needs root (CAP_SYS_ADMIN)".into());
    }
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--"])
        .arg(env!("CARGO_BIN_EXE_syscost"))
        .args(args)
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .output()
        .map_err(|e| format!("unshare (util-linux) cannot be started: {e}"))?;
    Ok(out)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn as_process_1_it_prints_its_version() {
    let out = match as_process_1(&["--version"]) {
        Ok(out) => out,
        Err(why) => return skip(why),
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let want = format!("syscost {}", env!("CARGO_PKG_VERSION"));
    assert!(text(&out.stdout).contains(&want), "{}", text(&out.stdout));
}

fn as_process_1_it_measures() {
    let dir = scratch();
    let file = dir.path().join("run.json");
    let f = file.to_str().unwrap();
    let mut args = vec!["run", "syscall", "--runs", "2", "--no-history", "-o", f];
    args.extend(QUICK);
    let out = match as_process_1(&args) {
        Ok(out) => out,
        Err(why) => return skip(why),
    };
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("guest"), "{err}");
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let time = metric(&result, "time");
    assert_eq!(time["values"].as_array().unwrap().len(), 2, "{time}");
    assert!(median(time) > 0.0);
}
