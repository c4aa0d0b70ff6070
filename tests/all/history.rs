//! End-to-end: `syscost history` over real result files: import is idempotent, list filters
//! and formats, show renders a stored result, export writes it back byte for byte, delete
//! removes it, and stores that are not syscost's are refused without being touched.

use crate::common::*;
use std::path::Path;

crate::tests! {
    Shared results_are_kept_listed_shown_exported_and_deleted,
    Shared stores_that_are_not_syscost_s_are_refused_untouched,
    Shared measuring_commands_record_their_results,
    Shared too_few_boots_are_counted_as_boots,
    Shared kernels_are_compared_over_boots_and_trended_in_version_order,
    Shared concurrent_writers_lose_nothing_and_a_killed_one_loses_only_itself,
    Shared emulated_results_are_not_compared_with_others_unless_asked,
}

fn history(store: &Path, args: &[&str]) -> std::process::Output {
    syscost()
        .arg("history")
        .arg("--history")
        .arg(store)
        .args(args)
        .output()
        .unwrap()
}

fn ok(store: &Path, args: &[&str]) -> String {
    let o = history(store, args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn results_are_kept_listed_shown_exported_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h/history.sqlite");
    let run = dir.path().join("run.json");
    let out = syscost()
        .args([
            "run",
            "syscall",
            "--runs",
            "3",
            "--samples",
            "2",
            "--sample-time",
            "5ms",
        ])
        .args(["-e", "task-clock", "-o"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/example");
    let getpid = format!("{examples}/getpid.json");
    let ab = format!("{examples}/ab.json");
    let said = ok(
        &store,
        &["import", run.to_str().unwrap(), &getpid, "--tag", "build=a"],
    );
    assert!(said.contains("imported 2"), "{said}");
    let said = ok(&store, &["import", run.to_str().unwrap(), &ab]);
    assert!(
        said.contains("imported 1") && said.contains("1 already there"),
        "{said}"
    );

    let all: serde_json::Value =
        serde_json::from_str(&ok(&store, &["list", "--format", "json"])).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 3);
    // --newest N: the newest N, still oldest first, and the whole count said.
    let o = history(&store, &["list", "--newest", "2", "--format", "json"]);
    let newest: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids = |v: &serde_json::Value| -> Vec<i64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    let mut by_time: Vec<(i64, i64)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["created_unix"].as_i64().unwrap(),
                e["id"].as_i64().unwrap(),
            )
        })
        .collect();
    by_time.sort();
    assert_eq!(
        ids(&newest),
        by_time[1..].iter().map(|x| x.1).collect::<Vec<_>>()
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("newest 2 of 3"));
    let table = ok(&store, &["list", "--newest", "1"]);
    assert!(table.contains("The newest 1 of 3 result(s)"), "{table}");
    let tagged: serde_json::Value = serde_json::from_str(&ok(
        &store,
        &[
            "list",
            "--tag",
            "build=a",
            "--workload",
            "syscall",
            "--format",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(tagged.as_array().unwrap().len(), 2);
    let id = tagged[0]["id"].as_i64().unwrap().to_string();
    let table = ok(&store, &["list"]);
    assert!(
        table.contains("ns/call") && table.contains("build=a"),
        "{table}"
    );
    let lkml = ok(&store, &["list", "--format", "lkml"]);
    assert!(lkml.lines().all(|l| l.len() <= 80), "{lkml}");

    let shown = ok(&store, &["show", &id]);
    assert!(shown.contains("Per-call statistics"), "{shown}");
    let out_dir = dir.path().join("out");
    ok(&store, &["export", &id, "-o", out_dir.to_str().unwrap()]);
    let exported = std::fs::read_to_string(out_dir.join(format!("{id}.json"))).unwrap();
    // The oldest tagged entry (list is oldest first) is the example, made before this run.
    let original = std::fs::read_to_string(&getpid).unwrap();
    assert_eq!(
        exported.trim(),
        original.trim(),
        "stored whole, byte for byte"
    );

    ok(&store, &["delete", &id]);
    let o = history(&store, &["show", &id]);
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("no result with id {id}")));
    let left: serde_json::Value =
        serde_json::from_str(&ok(&store, &["list", "--format", "json"])).unwrap();
    assert_eq!(left.as_array().unwrap().len(), 2);
}

fn stores_that_are_not_syscost_s_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "my notes, certainly not a database, long enough to tell\n",
    )
    .unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    for (store, says) in [
        (text.as_path(), "not a database"),
        (empty.as_path(), "empty file"),
        (Path::new("/dev/null"), "not a regular file"),
    ] {
        let o = history(store, &["list"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(says),
            "{store:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "my notes, certainly not a database, long enough to tell\n"
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    let store = dir.path().join("h.sqlite");
    for (args, says) in [
        (vec!["list", "--since", "yesterday"], "--since 'yesterday'"),
        (vec!["list", "--tag", "novalue"], "KEY=VALUE"),
        (vec!["import", "/no/such.json"], "cannot read /no/such.json"),
    ] {
        let o = history(&store, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{args:?}: {err}");
    }
}

/// Measuring commands record their result by default (here into a store of the test's own),
/// with tags; --no-history skips it; a store that cannot be written costs a warning, never the
/// measurement; a bad tag is refused before anything is measured.
fn measuring_commands_record_their_results() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let quick = [
        "--runs",
        "2",
        "--samples",
        "2",
        "--sample-time",
        "5ms",
        "-e",
        "task-clock",
    ];
    let run = |extra: &[&str]| {
        syscost()
            .env("SYSCOST_HISTORY", &store)
            .args(["run", "syscall"])
            .args(quick)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&["--tag", "build=align-32"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("recorded as history entry 1"),
        "{err}"
    );
    let o = run(&["--no-history"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("recorded"));
    let list: serde_json::Value = serde_json::from_str(&ok(
        &store,
        &["list", "--tag", "build=align-32", "--format", "json"],
    ))
    .unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let all: serde_json::Value =
        serde_json::from_str(&ok(&store, &["list", "--format", "json"])).unwrap();
    assert_eq!(
        all.as_array().unwrap().len(),
        1,
        "--no-history recorded nothing"
    );
    // A store under a regular file cannot be created: warned, and the result still printed.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let o = run(&["--history", blocker.join("h.sqlite").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning: the result was not recorded"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("Per-call statistics"));
    let o = run(&["--tag", "oops"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("KEY=VALUE"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "refused at once: {err}");
}

/// Results of one real run, relabelled as `boots` boots of each kernel with the kernel's
/// factor applied to every per-run value (a known truth): what `history compare` and `trend`
/// must recover.
fn kernels_and_boots(dir: &Path, kernels: &[(&str, f64)], boots: usize) -> Vec<String> {
    let base = quick_run();
    let mut files = Vec::new();
    for (k, factor) in kernels {
        for b in 0..boots {
            // A boot-to-boot spread of about 0.3%, the same in every kernel.
            let boot = 1.0 + 0.003 * (b as f64 - boots as f64 / 2.0) / boots as f64;
            let boot_id = format!("{k}-boot-{b}");
            let r = relabelled(
                &base,
                &[("kernel_release", k), ("boot_id", &boot_id)],
                factor * boot,
            );
            let f = dir.join(format!("{k}-{b}.json"));
            std::fs::write(&f, r.to_string()).unwrap();
            files.push(f.to_str().unwrap().to_owned());
        }
    }
    files
}

/// Groups of boots are compared with boots as the units, and a verdict that cannot be reached
/// counts boots, not runs.
fn too_few_boots_are_counted_as_boots() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.sqlite");
    let files = kernels_and_boots(dir.path(), &[("6.1.0", 1.0), ("6.2.0", 1.1)], 2);
    let mut import = vec!["import"];
    import.extend(files.iter().map(String::as_str));
    ok(&store, &import);
    let text = ok(&store, &["compare", "--by", "kernel"]);
    assert!(text.contains("cannot decide with 2 and 2 boots"), "{text}");
    assert!(!text.contains("2 and 2 runs"), "{text}");
}

fn kernels_are_compared_over_boots_and_trended_in_version_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.sqlite");
    // Stored out of version order; 6.9 is 10% slower than the rest.
    let kernels = [
        ("6.10.0", 1.0),
        ("6.9.0", 1.1),
        ("6.18.0-rc1", 1.0),
        ("6.1.0", 1.0),
    ];
    let files = kernels_and_boots(dir.path(), &kernels, 6);
    let mut import = vec!["import"];
    import.extend(files.iter().map(String::as_str));
    import.extend(["--tag", "series=t"]);
    ok(&store, &import);

    let c: serde_json::Value = serde_json::from_str(&ok(
        &store,
        &["compare", "--by", "kernel", "--format", "json"],
    ))
    .unwrap();
    let labels: Vec<&str> = c["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["6.1.0", "6.9.0", "6.10.0", "6.18.0-rc1"],
        "version order"
    );
    assert!(
        c["variants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["unit"] == "boot")
    );
    let time = |i: usize| {
        c["deltas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["metric"] == "time" && d["variant"] == i)
            .unwrap()
            .clone()
    };
    assert_eq!(time(1)["decision"], "slower", "{}", time(1));
    let d = time(1)["delta_pct"].as_f64().unwrap();
    assert!((d - 10.0).abs() < 0.5, "{d}");
    assert_ne!(time(2)["decision"], "slower", "{}", time(2));
    assert_eq!(
        c["ranking"].as_array().unwrap().last().unwrap()["label"],
        "6.9.0"
    );

    // The trend flags the step into 6.9 as a regression, and the step out of it as faster.
    let trend = dir.path().join("trend.json");
    let out = history(
        &store,
        &[
            "trend",
            "--fail-on",
            "slower",
            "-o",
            trend.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 regression(s)"), "{text}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trend).unwrap()).unwrap();
    let flags: Vec<bool> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["regression"].as_bool().unwrap())
        .collect();
    assert_eq!(flags, [true, false, false]);
    assert_eq!(t["steps"][1]["decision"], "faster");
    // report draws it.
    let page = dir.path().join("page.html");
    let out = syscost()
        .args([
            "report",
            trend.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("time by kernel")
    );

    // Grouped by boot: each boot a group, its runs the units.
    let by_boot: serde_json::Value = serde_json::from_str(&ok(
        &store,
        &[
            "compare", "--by", "boot", "--kernel", "6.9.0", "--format", "json",
        ],
    ))
    .unwrap();
    assert_eq!(by_boot["variants"].as_array().unwrap().len(), 6);
    assert_eq!(by_boot["variants"][0]["unit"], "run");

    // What cannot be compared is refused with what to do.
    let refuse = |args: &[&str], says: &str| {
        let o = history(&store, args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success() && err.contains(says), "{args:?}: {err}");
    };
    refuse(
        &["compare", "--by", "kernel", "--baseline", "6.9"],
        "the groups are 6.1.0, 6.9.0",
    );
    refuse(&["compare", "--by", "tag:build"], "--tag build=VALUE");
    refuse(
        &["compare", "--by", "kernel", "--kernel", "6.9.0"],
        "only one kernel",
    );
    // One kernel stored: the trend says what would make one.
    refuse(
        &["trend", "--kernel", "6.9.0"],
        "a comparison needs two or more groups; measure another kernel (`syscost campaign",
    );
    refuse(&["compare", "--by", "cpu"], "kernel, host, boot or tag:KEY");
    refuse(
        &["compare", "--by", "kernel", "--param", "syscall=getppid"],
        "no stored run result",
    );
    refuse(
        &["compare", "--by", "kernel", "--param", "a b=c"],
        "--param 'a b=c'",
    );
    // Another workload in the store: name how to narrow.
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/example");
    ok(&store, &["import", &format!("{examples}/replica.json")]);
    refuse(&["compare", "--by", "kernel"], "--workload audit-replica");
    ok(
        &store,
        &[
            "compare",
            "--by",
            "kernel",
            "--workload",
            "syscall",
            "--param",
            "syscall=getpid",
        ],
    );
}

/// Two processes recording at once lose nothing (WAL and a busy timeout), and one killed while
/// recording leaves a store that opens with every result it had committed.
fn concurrent_writers_lose_nothing_and_a_killed_one_loses_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.sqlite");
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/example");
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{examples}/getpid.json")).unwrap())
            .unwrap();
    // 3 x 150 distinct results.
    let mut sets = Vec::new();
    for w in 0..3 {
        let mut files = Vec::new();
        for i in 0..150 {
            let mut r = base.clone();
            r["created_unix"] = (1_800_000_000 + w * 1000 + i).into();
            let f = dir.path().join(format!("w{w}-{i}.json"));
            std::fs::write(&f, r.to_string()).unwrap();
            files.push(f);
        }
        sets.push(files);
    }
    let import = |files: &[std::path::PathBuf]| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
            .env("SYSCOST_HISTORY", TEST_HISTORY)
            .arg("history")
            .arg("--history")
            .arg(&store)
            .arg("import")
            .args(files)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (import(&sets[0]), import(&sets[1]));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let count = || {
        let all: serde_json::Value =
            serde_json::from_str(&ok(&store, &["list", "--format", "json"])).unwrap();
        all.as_array().unwrap().len()
    };
    assert_eq!(count(), 300, "two writers at once");
    // The store was created whole by one of them; nothing of the other's is left.
    let stray: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".new"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");

    // A third writer killed in the middle of its imports.
    let mut c = import(&sets[2]);
    let stderr = c.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let mut committed = 0;
    while committed < 40 {
        let line = lines
            .next()
            .expect("the import reports each entry")
            .unwrap();
        if line.contains("is history entry") {
            committed += 1;
        }
    }
    // SAFETY: SIGKILL of our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
    c.wait().unwrap();
    let n = count();
    assert!(
        (300 + committed..450).contains(&n),
        "{n} results after the kill; {committed} were reported committed"
    );
    // And it takes more writes.
    ok(&store, &["import", sets[2][149].to_str().unwrap()]);
}

fn emulated_results_are_not_compared_with_others_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.sqlite");
    let files = kernels_and_boots(dir.path(), &[("6.1.0", 1.0), ("6.12.0", 1.0)], 3);
    let (tcg, native) = files.split_at(3);
    for (group, tag) in [(tcg, "accel=tcg"), (native, "accel=none")] {
        let mut import = vec!["import"];
        import.extend(group.iter().map(String::as_str));
        import.extend(["--tag", tag]);
        ok(&store, &import);
    }
    for verb in ["compare", "trend"] {
        let out = history(&store, &[verb, "--by", "kernel"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{verb}: {err}");
        assert!(
            err.contains("3 of the 6 matching results") && err.contains("--mix-emulated"),
            "{verb}: {err}"
        );
        ok(&store, &[verb, "--by", "kernel", "--mix-emulated"]);
    }
    ok(&store, &["compare", "--by", "boot", "--tag", "accel=tcg"]);
}
