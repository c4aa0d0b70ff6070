//! `syscost reproduce`: a public investigation in one command, its tables beside syscost's.

use crate::common::*;
use serde_json::Value;

crate::tests! {
    Shared the_audit_series_is_rebuilt_and_its_change_counted_exactly,
    Shared the_alignment_rfc_s_builds_are_read_and_its_claims_put_to_tests,
    Serial the_uprobe_thread_s_causes_are_counted_and_its_claims_decided,
    Shared investigations_that_cannot_run_are_refused_before_booting,
}

/// `syscost reproduce ARGS --build --boots 1 -o DIR/out` in `dir`, which must succeed: its
/// stdout and stderr.
fn reproduced(dir: &std::path::Path, args: &[&str]) -> (String, String) {
    let out = syscost()
        .current_dir(dir)
        .arg("reproduce")
        .args(args)
        .args(["--build", "--boots", "1", "-o"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    succeeded(&out)
}

/// The stdout and stderr of `out`, which must have succeeded.
fn succeeded(out: &std::process::Output) -> (String, String) {
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{err}");
    (text, err)
}

/// `reproduced`, SIGKILLed once `kills_after` of its boots are kept, then `reproduce resume`,
/// which must succeed: its stdout and stderr. Nothing is kept after the resume.
fn killed_and_resumed(
    dir: &std::path::Path,
    args: &[&str],
    kills_after: usize,
) -> (String, String) {
    use std::io::BufRead;
    let state = dir.join("state");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
        .current_dir(dir)
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .env("XDG_STATE_HOME", &state)
        .arg("reproduce")
        .args(args)
        .args(["--build", "--boots", "1", "-o"])
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut booted = 0;
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        booted += usize::from(line.starts_with("syscost: round "));
        if booted == kills_after {
            break;
        }
    }
    assert_eq!(booted, kills_after, "it ended first: {said}");
    // A boot is said and recorded, then kept: killed once its state holds it.
    let kept = state.join("syscost/reproductions");
    let holds = || -> usize {
        let Some(file) = (std::fs::read_dir(&kept)
            .ok()
            .into_iter()
            .flatten()
            .flatten())
        .find(|e| e.path().extension().is_some_and(|x| x == "json")) else {
            return 0;
        };
        let text = std::fs::read_to_string(file.path()).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        v["boots"].as_array().map_or(0, Vec::len)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while holds() < kills_after {
        assert!(
            std::time::Instant::now() < deadline,
            "boot {kills_after} never kept"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let status = syscost()
        .env("XDG_STATE_HOME", &state)
        .args(["reproduce", "status"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&status.stdout);
    assert!(
        listed.contains("(stopped) of uprobe-thread")
            && listed.contains(&format!("boots so far: {kills_after} ")),
        "{listed}"
    );
    let out = syscost()
        .current_dir("/")
        .env("XDG_STATE_HOME", &state)
        .args(["reproduce", "resume"])
        .output()
        .unwrap();
    let (text, err) = succeeded(&out);
    let from = format!("from {kills_after} kept boot(s)");
    assert!(
        err.starts_with("syscost: resuming reproduction ") && err.contains(&from),
        "{err}"
    );
    let kept = state.join("syscost/reproductions");
    assert_eq!(
        std::fs::read_dir(&kept).unwrap().count(),
        0,
        "nothing kept after the end"
    );
    (text, err)
}

/// The audit series rebuilt on its own code: Debian's linux-source-6.1 built as it is and with
/// the series' patch 1 (kept in the user's cache: a machine builds them once, 8 minutes and 25 s
/// here), one boot per arm under TCG. Every cell of the paper is shown with its class and
/// reason, scored only where it has an error model; the patch's change per getpid and per turn
/// of the rule walk is counted exactly (a whole number of instructions, loads and branches);
/// the guest reads where its rule entries are; the JSON, the page and the rule set are written
/// to -o DIR; and `show` scores the saved file again from its boots.
fn the_audit_series_is_rebuilt_and_its_change_counted_exactly() {
    if !std::path::Path::new("/usr/src/linux-source-6.1.tar.xz").is_file() {
        return skip("no linux-source-6.1 to build (apt-get install linux-source-6.1)");
    }
    let tmp = scratch();
    let out_dir = tmp.path().join("out");
    let arms = "audit0,baseline,patch1,walk-baseline,walk-patch1";
    let (text, err) = reproduced(tmp.path(), &["audit-series", "--only", arms, "--runs", "2"]);
    // Built here, or found made by an earlier run on this machine: either way, named.
    let made = [
        "syscost: build patch1 is made (",
        "syscost: built patch1 in ",
    ];
    assert!(made.iter().any(|m| err.contains(m)), "{err}");
    // The preamble's lines wrap at 100 columns, going on two spaces in: read them whole.
    let whole_lines = text.replace("\n  ", " ");
    assert!(whole_lines.contains("Agreement: exact "), "{text}");
    assert!(whole_lines.contains(". Not scored: shown "), "{text}");
    assert!(whole_lines.contains("The series build by build"), "{text}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("audit-series.json")).unwrap())
            .unwrap();
    assert_eq!(r["kind"], "reproduction");
    let rows = r["rows"].as_array().unwrap();
    let paper: Value =
        serde_json::from_str(include_str!("../../papers/audit-series.json")).unwrap();
    let cells: usize = paper["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cells"].as_array().unwrap().len())
        .sum();
    assert_eq!(rows.len(), cells, "every cell of the paper is shown");
    for row in rows {
        assert!(!row["why"].as_str().unwrap().is_empty(), "{row}");
        let (measured, scored) = (row.get("ours").is_some(), row.get("agrees").is_some());
        match row["class"].as_str().unwrap() {
            // Scored where measured, or said why not: a test that could not fail or decide
            // (one boot: no direction can reach p < 0.05).
            "exact" | "modelled" | "direction" => {
                assert_eq!(scored || row["unscored"].is_string(), measured, "{row}")
            }
            "shown" | "time" => assert!(!scored, "never scored: {row}"),
            "repeat" => assert!(!scored && row["repeats"].is_string(), "{row}"),
            "not-reproducible" | "misprint" => assert!(!measured, "{row}"),
            other => panic!("class {other}"),
        }
    }
    // A modelled cell is scored by the middle 80% of its boots, which the row carries.
    for row in rows
        .iter()
        .filter(|r| r["class"] == "modelled" && r.get("ours").is_some())
    {
        assert!(row["middle_range"].is_array(), "{row}");
    }
    let row = |table: &str, name: &str, column: &str| -> &Value {
        rows.iter()
            .find(|r| r["table"] == table && r["row"] == name && r["column"] == column)
            .unwrap_or_else(|| panic!("{table} {name} {column}"))
    };
    let ours = |table: &str, name: &str, column: &str| row(table, name, column)["ours"].as_f64();
    // Windows sized by count: every count's figure is a slope, whole where the code is.
    let whole = |v: f64| (v - v.round()).abs() < 1e-6;
    // Patch 1 on its code, per turn of the walk: exact and fewer instructions, shown (the
    // compiler's, not the paper's); its loads, whole, scored.
    let turn = ours("per-iteration", "instructions", "patch1 - baseline").unwrap();
    assert!(turn < 0.0 && whole(turn), "{text}");
    let shown = row("per-iteration", "instructions", "patch1 - baseline");
    assert!(
        shown["class"] == "shown" && shown.get("agrees").is_none(),
        "{shown}"
    );
    assert!(row("per-iteration", "L1-dcache-loads", "patch1 - baseline")["agrees"].is_boolean());
    let loads = ours("per-iteration", "L1-dcache-loads", "baseline").unwrap();
    assert!(loads >= 1.0 && whole(loads), "loads per turn: {text}");
    // Per getpid with the 42 rules, build by build.
    let steps = r["steps"].as_array().unwrap();
    let step = |build: &str, counter: &str| {
        steps
            .iter()
            .find(|s| s["build"] == build && s["counter"] == counter)
            .unwrap_or_else(|| panic!("{build} {counter}: {steps:?}"))
    };
    // Per getpid and per turn of the walk, loads as much as instructions.
    for (counter, fields) in [
        (
            "instructions",
            &["change", "per_rule", "per_rule_change"][..],
        ),
        ("branches", &["change", "per_rule", "per_rule_change"]),
        (
            "L1-dcache-loads",
            &["change", "per_rule", "per_rule_change"],
        ),
    ] {
        let s = step("patch1", counter);
        for f in fields {
            assert!(whole(s[f].as_f64().unwrap()), "{counter} {f}: {s}");
        }
    }
    let per_call = step("patch1", "instructions")["change"].as_f64().unwrap();
    assert!(
        per_call < turn * 30.0,
        "37 turns that miss the mask, at least: {per_call}"
    );
    assert_eq!(
        step("patch1", "instructions")["per_rule_change"].as_f64(),
        Some(turn)
    );
    // The builds not booted leave their cells unmeasured, and say so.
    assert!(ours("changes", "instructions", "patch1-3 - baseline").is_none());
    let not = r["not_booted"].as_array().unwrap();
    assert!(not.iter().any(|a| a == "patch1-3"), "{not:?}");
    // audit=0 against audit=1 on one build: the rules' cost, shown.
    let audit = ours("changes", "instructions", "audit=1 - audit=0").unwrap();
    assert!(audit > 1000.0, "42 rules: {text}");
    // Per getpid (a rule walk's figures are per turn, where every branch is conditional).
    let figures = r["campaign"]["figures"].as_array().unwrap();
    for f in figures
        .iter()
        .filter(|f| !f["arm"].as_str().unwrap().starts_with("walk-"))
    {
        let counter = |name: &str| {
            let c = f["counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name);
            c.and_then(|c| c["median"].as_f64())
        };
        if let (Some(all), Some(cond)) = (
            counter("branches:k (emulated)"),
            counter("conditional-branches:k (emulated)"),
        ) {
            assert!(
                all > cond * 1.2,
                "calls, jumps and returns count too: {all} {cond}"
            );
        }
    }
    // Each boot with the 42 rules read where its entries are (its /proc/kcore): 8 sets
    // reachable by a kmalloc-512 object's first line, and the boot's misses beside them.
    let placed = r["placements"].as_array().unwrap();
    assert_eq!(placed.len(), 2, "the arms with rules: {placed:?}");
    let boot = &placed[0]["boots"][0];
    assert_eq!(boot["entries"], 42, "{boot}");
    assert_eq!(boot["reachable"], 8, "{boot}");
    assert!(
        boot["peak"].as_u64().unwrap() >= 6,
        "42 over 8 sets: {boot}"
    );
    assert!(boot["misses"].as_f64().is_some(), "{boot}");
    // Under the cache model each run placed the entries anew (campaign --placement run):
    // two placements a boot, each recorded with its misses, the arm's figures a distribution
    // over them, and its modelled cells scored over them.
    let runs = boot["placed_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{boot}");
    assert!(
        runs.iter()
            .all(|p| p["misses"].is_number() && p["peak"].is_u64()),
        "{boot}"
    );
    let d = &placed[0]["distribution"];
    assert_eq!(d["placements"], 2, "{d}");
    assert_eq!(d["per_run"], true, "{d}");
    assert!(
        d["seconds"].as_f64().unwrap() > 0.0,
        "what placing cost: {d}"
    );
    assert!(
        whole_lines.contains("The placements each arm measured"),
        "{text}"
    );
    assert_eq!(
        row("per-call", "L1-load-misses", "audit=1")["over"],
        "2 placements"
    );
    assert_eq!(
        row("per-call", "L1-load-misses", "audit=0")["over"],
        "1 boot"
    );
    let summary = r["summary"].as_array().unwrap();
    let total: u64 = summary.iter().map(|s| s["cells"].as_u64().unwrap()).sum();
    assert_eq!(total as usize, cells);
    let page = std::fs::read_to_string(out_dir.join("audit-series.html")).unwrap();
    assert!(page.contains("Reproduction of the 2022 audit syscall-exit series"));
    let rules = std::fs::read_to_string(out_dir.join("audit-series.rules")).unwrap();
    assert_eq!(rules.lines().filter(|l| l.starts_with("-a ")).count(), 42);
    // Scored again from its boots: a file whose scores were wiped shows the same.
    let file = out_dir.join("audit-series.json");
    let mut wiped = r.clone();
    for row in wiped["rows"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("agrees");
    }
    wiped["summary"] = serde_json::json!([]);
    wiped["steps"] = serde_json::json!([]);
    std::fs::write(&file, serde_json::to_string(&wiped).unwrap()).unwrap();
    let shown = syscost().arg("show").arg(&file).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        text,
        "show scores it again"
    );
}

/// The alignment RFC on two of its builds: the vanilla kernel (the source as it is, which is
/// the audit series' baseline, built once for both) and the 64-byte one, one boot each under
/// the Xeon's cache model with a fully associative L1i and the Opteron's beside it. Each
/// build's functions are read from its vmlinux (the share on its boundary), the 64-byte
/// build's misses over the vanilla one's are scored though within 10% of 1 (the boots resolve
/// it), and the claims that need two builds are decided; those that need more say so.
fn the_alignment_rfc_s_builds_are_read_and_its_claims_put_to_tests() {
    if !std::path::Path::new("/usr/src/linux-source-6.1.tar.xz").is_file() {
        return skip("no linux-source-6.1 to build (apt-get install linux-source-6.1)");
    }
    let tmp = scratch();
    let out_dir = tmp.path().join("out");
    let (text, _) = reproduced(
        tmp.path(),
        &["alignment-rfc", "--only", "a16,a64", "--runs", "1"],
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("alignment-rfc.json")).unwrap())
            .unwrap();
    let claim = |id: &str| -> &Value {
        let all = r["claims"].as_array().unwrap();
        all.iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no claim {id}: {text}"))
    };
    // Each build's functions, read from the vmlinux the store keeps: the vanilla kernel's on 16
    // bytes; whether the 64-byte build's took is the verdict, and it follows the shares.
    let aligned = claim("builds-aligned");
    let rows = aligned["detail"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{aligned}");
    let pct = |row: &Value, col: usize| -> f64 {
        row[col]
            .as_str()
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap()
    };
    // Of the functions gcc aligns at all: the most a build puts on 16 (it leaves cold ones
    // where they fall).
    let at_all = rows.iter().map(|r| pct(r, 4)).fold(0.0, f64::max);
    for row in rows {
        let (on_it, took) = (pct(row, 3), row[6] == "took");
        assert_eq!(took, on_it >= 0.95 * at_all, "{row}");
        assert!(
            row[2].as_str().unwrap().parse::<u64>().unwrap() > 10_000,
            "{row}"
        );
    }
    let vanilla = rows.iter().find(|r| r[0] == "a16").unwrap();
    assert!(
        pct(vanilla, 4) > 90.0 && pct(vanilla, 5) < 40.0,
        "{vanilla}"
    );
    let took_all = rows.iter().all(|r| r[6] == "took");
    assert_eq!(aligned["verdict"]["is"] == "agrees", took_all, "{aligned}");
    // The 64-byte build's misses over the vanilla's: a ratio within 10% of 1, scored where the
    // boots resolve it, and the least of the two builds: decided either way.
    let decided =
        |c: &Value| ["agrees", "disagrees"].contains(&c["verdict"]["is"].as_str().unwrap());
    assert!(decided(claim("64-over-16")), "{}", claim("64-over-16"));
    let least = claim("least-at-64");
    assert!(decided(least), "{least}");
    assert_eq!(least["detail"]["rows"].as_array().unwrap().len(), 2);
    // Rank correlation needs three builds: not measured, said why.
    assert_eq!(claim("ranked-as-intel")["verdict"]["is"], "not-measured");
    // The associativity claim has both models' misses, and the Opteron's L1i counted too.
    let capacity = claim("associativity");
    assert!(capacity["detail"]["rows"][0][2] != "-", "{capacity}");
    let rows = r["rows"].as_array().unwrap();
    let row = |table: &str, name: &str| {
        rows.iter()
            .find(|x| {
                x["table"] == table && x["row"] == name && x["column"] == "L1-icache-load-misses"
            })
            .unwrap()
    };
    let misses = row("intel-misses", "falign-functions=_64-bytes");
    assert!(
        misses["agrees"].is_boolean() || misses["unscored"].is_string(),
        "{misses}"
    );
    assert!(row("amd-misses", "falign-functions=_64-bytes")["ours"].is_number());
    let whole = text.replace("\n  ", " ");
    assert!(whole.contains("claims of the text "), "{text}");
    assert!(
        whole.contains("Each build's functions by the boundary they start on"),
        "{text}"
    );
}

/// The uprobe thread's causes, counted exactly on the pinned Debian kernels, on guests of two
/// vCPUs (one boot an arm, nine arms, two minutes here): the kernel instructions a hit of each
/// probe kind, the single step's slot functions and their atomics in the profile, the lockless
/// changes' atomics between 6.1 and 6.12, and the cache lines two producers take from each
/// other, each claim decided; in every boot of one producer the profile adds up to the kernel
/// instructions counted, exactly, and no line moves. Serial: how many lines two producers
/// take follows how the host runs the two vCPUs' threads (0.5 to 12 a hit on a ret over runs
/// here, 0.003 with other guests beside them), and the claims ask only whether any move.
/// Killed after its third boot, it resumes from the three kept and boots the six it lacks.
fn the_uprobe_thread_s_causes_are_counted_and_its_claims_decided() {
    let Some(k) = kernels_in("boot") else { return };
    let dir = k[0].parent().unwrap().to_str().unwrap();
    let tmp = scratch();
    let out_dir = tmp.path().join("out");
    let args = ["uprobe-thread", "--kernels", dir, "--runs", "1"];
    let (text, err) = killed_and_resumed(tmp.path(), &args, 3);
    // A try that oopsed (2 vCPUs under TCG, now and then) is booted again: count the measured.
    let made = (err.lines())
        .filter(|l| l.starts_with("syscost: round ") && l.contains(": measured ("))
        .count();
    assert_eq!(made, 6, "the resume boots only what the run lacks: {err}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("uprobe-thread.json")).unwrap())
            .unwrap();
    let claims = r["claims"].as_array().unwrap();
    let ids: Vec<&str> = claims.iter().map(|c| c["id"].as_str().unwrap()).collect();
    let want = [
        "ret-costs-more",
        "uretprobe-ret-costs-more",
        "xol-slot-functions",
        "xol-slot-atomics",
        "lockless-fewer-atomics",
        "xol-slot-bounces",
        "lockless-refcount-stops-bouncing",
    ];
    assert_eq!(ids, want, "{text}");
    for c in claims {
        assert_eq!(c["verdict"]["is"], "agrees", "{c}");
    }
    let rows = |id: &str| {
        let c = claims.iter().find(|c| c["id"] == id).unwrap();
        c["detail"]["rows"].as_array().unwrap().clone()
    };
    assert!(
        rows("xol-slot-atomics")
            .iter()
            .any(|r| r[0] == "xol_free_insn_slot")
    );
    assert!(
        rows("xol-slot-bounces")
            .iter()
            .any(|r| r[0] == "xol_free_insn_slot")
    );
    assert!(
        rows("lockless-refcount-stops-bouncing")
            .iter()
            .any(|r| r[0] == "__find_uprobe")
    );
    let all = r["campaign"]["boots"].as_array().unwrap();
    let boots: Vec<&Value> = all.iter().filter(|b| b["outcome"] == "measured").collect();
    assert_eq!(boots.len(), 9, "one boot an arm");
    let mut arms: Vec<&str> = boots.iter().map(|b| b["arm"].as_str().unwrap()).collect();
    arms.sort_unstable();
    arms.dedup();
    assert_eq!(arms.len(), 9, "none booted twice");
    for b in &boots {
        let two = b["arm"].as_str().unwrap().contains("-2");
        let f = &b["result"]["emulated_functions"];
        let kernel = median(metric(&b["result"], "instructions:k (emulated)"));
        let atomics = median(metric(&b["result"], "atomics:k (emulated)"));
        let moved = median(metric(&b["result"], "lines-moved:k (emulated)"));
        assert!(atomics >= 1.0, "a hit takes locks: {}", b["arm"]);
        if two {
            assert!(
                moved > 0.1,
                "two producers take lines: {}: {moved}",
                b["arm"]
            );
            continue;
        }
        assert_eq!(moved, 0.0, "one producer takes none: {}", b["arm"]);
        assert_eq!(
            f["total_per_op"].as_f64(),
            Some(kernel),
            "{}: {f}",
            b["arm"]
        );
        assert_eq!(
            f["atomics"]["total_per_op"].as_f64(),
            Some(atomics),
            "{}",
            b["arm"]
        );
    }
    let one = boots.iter().find(|b| b["arm"] == "uprobe-nop-6.1").unwrap();
    let nop = median(metric(&one["result"], "instructions:k (emulated)"));
    assert_eq!(nop, 1380.0, "on two vCPUs as on one");
    let whole = text.replace("\n  ", " ");
    assert!(whole.contains("claims of the text 7 of 7 agree"), "{text}");
}

fn investigations_that_cannot_run_are_refused_before_booting() {
    let tmp = scratch();
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    refused(
        &["reproduce", "nope"],
        "syscost reproduces audit-series, syscall-latency",
    );
    let empty = tmp.path().display().to_string();
    // A part of an investigation with one kernel refuses, built or not, saying how to build.
    for (name, only) in [("alignment-rfc", "a16"), ("audit-series", "audit0")] {
        let e = refused(
            &[
                "reproduce",
                name,
                "--only",
                only,
                "--kernels",
                &empty,
                "-o",
                o,
            ],
            &format!("syscost reproduce {name} --build builds them"),
        );
        assert!(e.contains(only), "{e}");
    }
    refused(
        &["reproduce", "audit-series", "--only", "nope", "-o", o],
        "--only nope: audit-series has the arms audit0, baseline",
    );
    let e = refused(
        &["reproduce", "uprobe-thread", "--kernels", &empty, "-o", o],
        "apt-get download linux-image-6.12.",
    );
    assert!(e.contains("arm uprobe-nop"), "{e}");
    refused(
        &[
            "reproduce",
            "audit-series",
            "--arm",
            "x=/boot/vmlinuz",
            "-o",
            o,
        ],
        "--arm x: audit-series has the arms audit0, baseline",
    );
    refused(&["reproduce"], "NAME");
    assert!(!out.exists(), "nothing is written for a refusal");
    let list = syscost().args(["reproduce", "--list"]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    for name in [
        "audit-series",
        "syscall-latency",
        "alignment-rfc",
        "uprobe-thread",
    ] {
        assert!(text.contains(name), "{text}");
    }
    assert!(
        text.contains("needs: syscost's builds of Debian's linux-source-6.1"),
        "{text}"
    );
}
