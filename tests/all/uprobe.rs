//! End-to-end: real uprobes on this machine (uprobe PMU), ELF offsets against binutils, and a
//! probe on a real server.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

crate::tests! {
    Serial every_probe_kind_counts_every_call,
    Serial bpf_attaches_and_still_counts,
    Serial the_probed_loop_is_slower_than_the_unprobed_one,
    Serial thread_sweep_prints_the_uprobe_thread_s_table,
    Serial probes_leave_nothing_in_tracefs,
    Shared elf_offsets_agree_with_binutils,
    Serial probe_on_a_real_server,
}

fn uprobes_available() -> bool {
    if !Path::new("/sys/bus/event_source/devices/uprobe/type").exists() {
        skip("this kernel has no uprobe PMU");
        return false;
    }
    if !is_root() && syscost::counters::perf_event_paranoid().unwrap_or(2) > 1 {
        skip("uprobes need root or perf_event_paranoid <= 1");
        return false;
    }
    true
}

fn values(r: &Value, name: &str) -> Vec<f64> {
    metric(r, name)["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn every_probe_kind_counts_every_call() {
    if !uprobes_available() {
        return;
    }
    let cpu = a_cpu();
    for probe in ["uprobe", "uretprobe"] {
        for insn in ["nop", "push", "ret"] {
            let r = json_of(&[
                "run",
                "uprobe",
                "--probe",
                probe,
                "--insn",
                insn,
                "--cpu",
                &cpu,
                "--runs",
                "2",
                "--samples",
                "2",
                "--warmup",
                "0",
                "--ops",
                "3000",
                "-e",
                "task-clock",
                "--json",
            ]);
            let (calls, hits) = (values(&r, "calls"), values(&r, "probe-hits"));
            assert!(
                hits_match(&calls, &hits),
                "{probe}-{insn}: hits {hits:?} for calls {calls:?}"
            );
            assert_eq!(
                calls[0], 6001.0,
                "2 samples of 3000 and the setup's check call"
            );
            assert!(median(metric(&r, "throughput")) > 0.0);
        }
    }
}

fn bpf_attaches_and_still_counts() {
    if !uprobes_available() {
        return;
    }
    let r = json_of(&[
        "run",
        "uprobe",
        "--probe",
        "uretprobe",
        "--insn",
        "nop",
        "--bpf",
        "--runs",
        "2",
        "--samples",
        "2",
        "--ops",
        "5000",
        "-e",
        "task-clock",
        "--json",
    ]);
    assert_eq!(r["workload"]["bpf"], true);
    let (calls, hits) = (values(&r, "calls"), values(&r, "probe-hits"));
    assert!(
        hits_match(&calls, &hits),
        "hits {hits:?} for calls {calls:?}"
    );
}

/// Every call fired the probe, and at most one restart fired it again (syscost's own rule
/// for these counts: one extra hit in ten thousand calls, plus one).
fn hits_match(calls: &[f64], hits: &[f64]) -> bool {
    calls.len() == hits.len() && calls.iter().zip(hits).all(|(c, h)| h >= c && *h <= c + 1.0)
}

fn the_probed_loop_is_slower_than_the_unprobed_one() {
    if !uprobes_available() {
        return;
    }
    let cpu = a_cpu();
    let c = json_of(&[
        "ab",
        "--variant",
        "uprobe --probe none",
        "--variant",
        "uprobe --probe uprobe",
        "--format",
        "json",
        "--",
        "--cpu",
        &cpu,
        "--runs",
        "6",
        "--samples",
        "2",
        "--sample-time",
        "20ms",
        "-e",
        "task-clock",
    ]);
    let d = time_delta(&c);
    let ratio = d["median"].as_f64().unwrap() / d["base_median"].as_f64().unwrap();
    assert!(
        ratio > 3.0,
        "a trap per call costs far more than a call: {ratio}"
    );
}

fn thread_sweep_prints_the_uprobe_thread_s_table() {
    if !uprobes_available() {
        return;
    }
    let out = syscost()
        .args([
            "run",
            "uprobe",
            "--threads",
            "1-2",
            "--runs",
            "2",
            "--samples",
            "2",
        ])
        .args([
            "--sample-time",
            "20ms",
            "-e",
            "task-clock",
            "--oversubscribe",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("uprobe-nop") && text.contains("( 1 cpus):") && text.contains("( 2 cpus):"),
        "{text}"
    );
    assert!(text.contains("M/s/cpu"));
    let out = syscost()
        .args(["run", "uprobe", "--threads", "999"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--oversubscribe"));
}

fn probes_leave_nothing_in_tracefs() {
    if !uprobes_available() {
        return;
    }
    json_of(&[
        "run",
        "uprobe",
        "--runs",
        "1",
        "--samples",
        "1",
        "--ops",
        "100",
        "-e",
        "task-clock",
        "--json",
    ]);
    let events = [
        "/sys/kernel/tracing/uprobe_events",
        "/sys/kernel/debug/tracing/uprobe_events",
    ];
    match events.iter().find_map(|p| std::fs::read_to_string(p).ok()) {
        Some(t) => assert!(!t.contains("syscost"), "{t}"),
        None => println!("tracefs is not mounted here: the PMU probes never used it anyway"),
    }
}

/// (LOAD segment file offset, vaddr, size) from readelf, for an independent offset.
fn expected_offset(file: &Path, symbol: &str, dynamic: bool) -> u64 {
    let nm = Command::new("nm")
        .args(if dynamic { vec!["-D"] } else { vec![] })
        .arg(file)
        .output()
        .unwrap();
    let addr = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .find(|l| l.ends_with(&format!(" {symbol}")))
        .map(|l| u64::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap())
        .unwrap_or_else(|| panic!("nm finds no {symbol} in {}", file.display()));
    let re = Command::new("readelf")
        .args(["-lW"])
        .arg(file)
        .output()
        .unwrap();
    for l in String::from_utf8_lossy(&re.stdout).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() == Some(&"LOAD") {
            let p = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
            let (off, va, memsz) = (p(f[1]), p(f[2]), p(f[5]));
            if addr >= va && addr < va + memsz {
                return addr - va + off;
            }
        }
    }
    panic!("no LOAD segment holds {symbol}");
}

fn elf_offsets_agree_with_binutils() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("t.c");
    std::fs::write(
        &src,
        "__attribute__((noinline)) int marker_fn(int x) { return x * 3 + 1; }\n\
         int main(int c, char **v) { (void)v; return marker_fn(c); }\n",
    )
    .unwrap();
    let lib = dir.path().join("l.c");
    std::fs::write(&lib, "int lib_marker(int x) { return x + 7; }\n").unwrap();
    let cc = |args: &[&str], out: &str| {
        let o = Command::new("cc")
            .args(args)
            .arg("-o")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir.path().join(out)
    };
    let pie = cc(&["-O1", "-pie", "-fPIE", src.to_str().unwrap()], "t.pie");
    let nopie = cc(&["-O1", "-no-pie", src.to_str().unwrap()], "t.nopie");
    let so = cc(&["-O1", "-shared", "-fPIC", lib.to_str().unwrap()], "l.so");
    for (f, sym, dynamic) in [
        (&pie, "marker_fn", false),
        (&nopie, "marker_fn", false),
        (&so, "lib_marker", true),
    ] {
        let got = syscost::probes::elf::symbol_offset(f, sym).unwrap();
        assert_eq!(got, expected_offset(f, sym, dynamic), "{}", f.display());
    }
    // Stripped: the symbol table is gone, and the error says so.
    let stripped = dir.path().join("t.stripped");
    std::fs::copy(&pie, &stripped).unwrap();
    assert!(
        Command::new("strip")
            .arg(&stripped)
            .status()
            .unwrap()
            .success()
    );
    let e = syscost::probes::elf::symbol_offset(&stripped, "marker_fn")
        .unwrap_err()
        .to_string();
    assert!(e.contains("stripped"), "{e}");
    // A stripped shared library keeps its dynamic symbols: still probeable.
    let so_stripped = dir.path().join("l.stripped.so");
    std::fs::copy(&so, &so_stripped).unwrap();
    assert!(
        Command::new("strip")
            .arg(&so_stripped)
            .status()
            .unwrap()
            .success()
    );
    assert!(syscost::probes::elf::symbol_offset(&so_stripped, "lib_marker").is_ok());
    // Through the CLI: unknown symbol, not an ELF file.
    let out = syscost()
        .args([
            "probe",
            "--target",
            &format!("{}:nosuch", pie.display()),
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no symbol 'nosuch'"));
    let out = syscost()
        .args([
            "probe",
            "--target",
            &format!("{}:main", src.display()),
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an ELF"));
    let out = syscost()
        .args(["run", "uprobe", "--probe", "none", "--bpf"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bpf needs a probe"));
}

fn probe_on_a_real_server() {
    if !uprobes_available() {
        return;
    }
    let server = Path::new("/usr/bin/redis-server");
    if !server.exists()
        || Command::new("redis-benchmark")
            .arg("--version")
            .output()
            .is_err()
    {
        skip(
            "redis-server/redis-benchmark are not installed (scripts/test.sh installs them as root)",
        );
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/redis_bench.sh");
    let r = json_of(&[
        "probe",
        "--target",
        "/usr/bin/redis-server:processCommand",
        "--runs",
        "6",
        "--format",
        "json",
        "--",
        script,
        "5000",
    ]);
    let hits: Vec<u64> = r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_u64().unwrap())
        .collect();
    assert_eq!(hits.len(), 6);
    // 5,000 SETs and 5,000 GETs, each one processCommand (plus the script's pings).
    assert!(hits.iter().all(|h| *h >= 10_000 && *h < 10_100), "{hits:?}");
    assert_eq!(r["unprobed_s"].as_array().unwrap().len(), 6);
    assert!(r["comparison"]["deltas"][0]["metric"] == "time");
    let left = Command::new("pgrep")
        .arg("-x")
        .arg("redis-server")
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "the test's redis-server is gone");
}
