//! End-to-end: `syscost env` reports what makes results comparable.

use crate::common::*;
use serde_json::Value;

crate::tests! {
    Shared text_names_every_field,
    Shared json_matches_the_machine,
}

fn text_names_every_field() {
    let out = syscost().arg("env").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for field in [
        "kernel",
        "cmdline",
        "config",
        "cpu id",
        "microcode",
        "L1 data",
        "sets x",
        "smt active",
        "governor",
        "boost",
        "clocksource",
        "isolated cpus",
        "nohz_full",
        "mitigations",
        "audit",
        "perf_event_paranoid",
        "hardware PMU",
    ] {
        assert!(text.contains(field), "'{field}' missing from:\n{text}");
    }
}

fn json_matches_the_machine() {
    let out = syscost().args(["env", "--json"]).output().unwrap();
    assert!(out.status.success());
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(env["kernel_release"], release.trim());
    let paranoid = syscost::counters::perf_event_paranoid();
    assert_eq!(env["perf_event_paranoid"].as_i64(), paranoid.map(i64::from));
    let l1d = env["cpu"]["caches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["level"] == 1 && c["type"] == "Data");
    if let Some(l1d) = l1d {
        let sets =
            std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/number_of_sets")
                .unwrap();
        assert_eq!(l1d["sets"].as_u64().unwrap().to_string(), sets.trim());
    } else {
        println!("skipped L1 check: sysfs has no cache description here");
    }
    if std::path::Path::new("/proc/config.gz").exists() {
        assert!(
            env["config"]["CONFIG_AUDIT"].is_string(),
            "config read from /proc/config.gz"
        );
    }
    if is_root() {
        assert!(
            env["audit"]["status"]["enabled"].is_number(),
            "{}",
            env["audit"]
        );
    } else {
        let e = env["audit"]["error"].as_str().unwrap_or("");
        assert!(e.contains("CAP_AUDIT_CONTROL"), "{e}");
    }
}
