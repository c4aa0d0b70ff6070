//! End-to-end: `syscost cachesets`, the audit replica's generated code, its crowding effect,
//! and correlating its runs' cacheline-spread with time.

use crate::common::*;
use serde_json::Value;
use std::collections::HashMap;

crate::tests! {
    Shared generated_code_differs_as_the_series_says,
    Serial crowded_placement_is_slower_than_packed,
    Serial replica_runs_correlate_spread_with_time,
    Shared cachesets_reproduces_the_post_and_refuses_bad_input,
    Serial replica_runs_record_their_pages_and_slabs,
}

/// The assembly of csrc/audit_replica.c as build.rs compiles it, split into functions.
fn functions() -> HashMap<String, Vec<String>> {
    let out = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-O2",
            "-fno-strict-aliasing",
            "-fno-ipa-icf",
            "-S",
            "-o",
            "-",
        ])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/csrc/audit_replica.c"))
        .output()
        .expect("the C compiler runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if !line.starts_with(['\t', ' ', '.']) && line.ends_with(':') {
            cur = Some(line.trim_end_matches(':').to_string());
            map.insert(cur.clone().unwrap(), Vec::new());
        } else if let Some(c) = &cur {
            map.get_mut(c).unwrap().push(line.to_string());
        }
    }
    map
}

/// The body of the function whose name starts with `prefix` (GCC may add `.constprop.0`).
fn body<'a>(f: &'a HashMap<String, Vec<String>>, prefix: &str) -> &'a [String] {
    let name = f
        .keys()
        .find(|k| k.as_str() == prefix || k.starts_with(&format!("{prefix}.")))
        .unwrap_or_else(|| panic!("no function {prefix} in {:?}", f.keys()));
    &f[name]
}

/// Line ranges inside loops: from a label to a later jump back to it.
fn loop_regions(body: &[String]) -> Vec<(usize, usize)> {
    let labels: HashMap<&str, usize> = body
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with(".L") && l.ends_with(':'))
        .map(|(i, l)| (l.trim_end_matches(':'), i))
        .collect();
    body.iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let t = l.trim();
            let target = t.strip_prefix('j')?.split_whitespace().nth(1)?;
            labels.get(target).filter(|&&at| at < i).map(|&at| (at, i))
        })
        .collect()
}

/// Whether ctx->major (offset 20 of the context) is loaded inside a loop.
fn reloads_major_in_loop(body: &[String]) -> bool {
    let regions = loop_regions(body);
    body.iter().enumerate().any(|(i, l)| {
        l.contains("mov")
            && l.contains("20(%")
            && !l.contains("%rsp")
            && regions.iter().any(|(a, b)| (*a..=*b).contains(&i))
    })
}

/// The conditional jump right after the mask-word test.
fn branch_after_mask_test(body: &[String]) -> String {
    let i = body
        .iter()
        .position(|l| l.contains("and") && l.contains(",4)"))
        .expect("a mask-word test");
    body[i + 1..]
        .iter()
        .find(|l| l.trim_start().starts_with('j'))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .unwrap()
}

// What the 2022 audit syscall-exit series' patches change in the generated code, and what
// this test checks:
// - baseline (and nonstatic, unlikely): ctx->major is loaded again in every iteration, since
//   the loop calls an opaque function that might write *ctx;
// - cached-major and all-three: loaded once before the loop;
// - all-three: the branch to the filter call is inverted (jne to a cold block; the common path
//   falls through), where the baseline skips the call with je.
// Not reproducible in user space: patch 3's `cmp $imm32, %reg` exit test needs the kernel's
// non-PIC code model; in a PIE binary the list head is in a register either way. And GCC 12
// keeps the baseline's branch layout for `unlikely` alone.
fn generated_code_differs_as_the_series_says() {
    let f = functions();
    assert!(reloads_major_in_loop(body(&f, "filter_baseline")));
    assert!(reloads_major_in_loop(body(&f, "replica_filter_nonstatic")));
    assert!(!reloads_major_in_loop(body(&f, "filter_cached_major")));
    assert!(!reloads_major_in_loop(body(&f, "replica_filter_all_three")));
    assert_eq!(branch_after_mask_test(body(&f, "filter_baseline")), "je");
    assert_eq!(
        branch_after_mask_test(body(&f, "replica_filter_all_three")),
        "jne"
    );
}

fn crowded_placement_is_slower_than_packed() {
    let ways = syscost::layout::Geometry::l1d()
        .map(|g| g.ways)
        .unwrap_or(8);
    let rules = 64u64;
    if ways >= rules {
        println!("skipped: this L1 has {ways} ways; {rules} entries in one set do not overflow it");
        return;
    }
    let cpu = syscost::core::cpus::allowed_cpus()
        .unwrap()
        .iter()
        .last()
        .unwrap()
        .to_string();
    let c = json_of(&[
        "ab",
        "--variant",
        "audit-replica --rules 64 --placement packed",
        "--variant",
        "audit-replica --rules 64 --placement sets=1",
        "--format",
        "json",
        "--",
        "--cpu",
        &cpu,
        "--runs",
        "6",
        "--samples",
        "3",
        "--sample-time",
        "20ms",
        "-e",
        "task-clock",
    ]);
    let d = time_delta(&c);
    let ratio = d["median"].as_f64().unwrap() / d["base_median"].as_f64().unwrap();
    assert!(
        ratio > 1.3,
        "64 entries in one {ways}-way set walk slower: ratio {ratio}"
    );
    // The runs record their placement's spread: packed is even, one set is as uneven as can be.
    let spreads: Vec<f64> = c["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            v["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == "cacheline-spread")
                .unwrap()["summary"]["median"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert!(spreads[1] > spreads[0] + 5.0, "{spreads:?}");
}

fn replica_runs_correlate_spread_with_time() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("replica.json");
    let out = syscost()
        .args([
            "run",
            "audit-replica",
            "--rules",
            "48",
            "--slab-fill",
            "50",
            "--runs",
            "6",
        ])
        .args([
            "--samples",
            "2",
            "--sample-time",
            "10ms",
            "-e",
            "task-clock",
            "-o",
        ])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(r["op_name"], "walk");
    let per_rule = metric(&r, "time-per-rule");
    assert!((median(per_rule) * 48.0 - median(metric(&r, "time"))).abs() < 1e-6);
    let spreads = metric(&r, "cacheline-spread")["values"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(spreads, 6, "one spread per run: a fresh placement each");
    let c = json_of(&[
        "correlate",
        f.to_str().unwrap(),
        "--x",
        "cacheline-spread",
        "--y",
        "time",
        "--format",
        "json",
    ]);
    assert_eq!(c["correlation"]["n"], 6);
    let r = c["correlation"]["pearson_r"].as_f64().unwrap();
    assert!((-1.0..=1.0).contains(&r));
}

fn cachesets_reproduces_the_post_and_refuses_bad_input() {
    let a = json_of(&[
        "cachesets",
        "--objects",
        "37",
        "--size",
        "408",
        "--geometry",
        "sets=64,ways=8,line=64",
        "--trials",
        "5000",
        "--json",
    ]);
    assert_eq!(a["slab_class"], 512);
    let reach: Vec<u64> = a["reachable_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(reach, vec![0, 8, 16, 24, 32, 40, 48, 56]);
    let p = a["monte_carlo"]["overflow_probability"].as_f64().unwrap();
    assert!(p > 0.0 && p < 1.0);
    // Addresses from stdin: ten entries all in set 0 overflow an 8-way set.
    let addrs: String = (0..10)
        .map(|i| format!("0x{:x}\n", 0xffff_8880_0000_0000u64 + i * 4096))
        .collect();
    let out = syscost()
        .args([
            "cachesets",
            "--addresses",
            "-",
            "--size",
            "408",
            "--geometry",
            "sets=64,ways=8,line=64",
        ])
        .write_stdin(addrs)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("set 0: 10") && text.contains("overflowing: [0]"),
        "{text}"
    );
    for (args, needle) in [
        (vec!["--objects", "0", "--size", "408"], "--objects"),
        (vec!["--objects", "4", "--size", "9000"], "--align"),
        (
            vec![
                "--objects",
                "4",
                "--size",
                "64",
                "--geometry",
                "sets=60,ways=8,line=64",
            ],
            "power of two",
        ),
        (vec!["--objects", "4"], "--size"),
    ] {
        let out = syscost().arg("cachesets").args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = syscost()
        .args(["cachesets", "--addresses", "-", "--size", "408"])
        .write_stdin("ffff8880\nzz\n")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
}

/// The replica's default is slab placement on huge pages, and each run records what it got.
fn replica_runs_record_their_pages_and_slabs() {
    for pages in ["huge", "4k"] {
        let r = json_of(&[
            "run",
            "audit-replica",
            "--pages",
            pages,
            "--runs",
            "2",
            "--samples",
            "2",
            "--sample-time",
            "5ms",
            "-e",
            "task-clock",
            "--json",
        ]);
        assert_eq!(r["workload"]["placement"], "slab");
        assert!(r["workload"]["slab_objects"].as_u64().unwrap() >= 1);
        let share = median(metric(&r, "huge-page-share"));
        let notes: Vec<&str> = r["runs"][0]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str())
            .collect();
        let joined = notes.join("\n");
        if pages == "4k" {
            assert_eq!(share, 0.0, "{joined}");
            assert!(joined.contains("4 KiB pages"), "{joined}");
        } else {
            assert!(
                joined.contains("2 MiB") || joined.contains("NOT granted"),
                "{joined}"
            );
            println!("huge pages here: {share}% ({joined})");
        }
        assert!(joined.contains("slab placement"), "{joined}");
        // 37 entries in 16-object slabs touch a few pages, not 37.
        assert!(median(metric(&r, "pages-touched")) < 37.0);
    }
}
