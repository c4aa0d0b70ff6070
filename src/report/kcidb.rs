//! `syscost export kcidb`: run results as a KernelCI KCIDB report (I/O schema v5.0), so a
//! fleet can send syscost's figures to KernelCI's results database with its own submission
//! tool (`kcidb-submit`). One checkout per kernel release, one build per kernel configuration
//! (a hash of the config and command line), one test per metric of each result: status DONE,
//! its `number` the metric's median in the metric's unit, the machine in its environment, and
//! the interval, runs and workload in `misc`. A campaign's boots are results of their own,
//! each with its arm and round, and a lab's boot with its job's log (`log_url`), lab, device
//! and worker.
//!
//! Written by hand: the document is plain JSON, and the schema (kcidb-io) is Python; the tests
//! validate the output with it.

use crate::core::input::Opt;
use crate::core::{VERSION, fmt_num};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The schema version written.
pub(crate) const MAJOR: u64 = 5;
pub(crate) const MINOR: u64 = 0;

/// Check an origin name as KCIDB requires it (`^[a-z0-9_]+$`).
pub(crate) fn check_origin(origin: &str) -> Result<()> {
    if origin.is_empty()
        || !origin
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        bail!(crate::refused!(
            Opt::Origin,
            format!(" '{origin}': KCIDB origins are lower-case letters, digits and _ (e.g. "),
            Opt::Origin,
            " mylab_perf); ask KernelCI for yours"
        ));
    }
    Ok(())
}

/// A piece of a KCIDB test path: letters, digits, _ and - only.
fn path_piece(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn rfc3339(unix: i64) -> String {
    humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix.max(0) as u64),
    )
    .to_string()
    .replace('Z', "+00:00")
}

/// The test path of a metric of a workload: `syscost.WORKLOAD.PARAMS....METRIC`, e.g.
/// `syscost.syscall.getpid.time`.
fn test_path(workload: &Value, metric: &str) -> String {
    let mut parts = vec!["syscost".to_string()];
    if let Some(w) = workload["workload"].as_str() {
        parts.push(path_piece(w));
    }
    if let Some(m) = workload.as_object() {
        for (k, v) in m {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => format!("{k}-{n}"),
                Value::Bool(true) => k.clone(),
                _ => continue,
            };
            if k != "workload" {
                parts.push(path_piece(&v));
            }
        }
    }
    parts.push(path_piece(metric));
    parts.retain(|p| !p.is_empty());
    parts.join(".")
}

/// The KCIDB report of `results` (each: where it came from, and its JSON text). Results other
/// than runs are left out, with a warning each.
pub(crate) fn document(results: &[(String, String)], origin: &str) -> Result<(Value, Vec<String>)> {
    check_origin(origin)?;
    let mut warnings = Vec::new();
    let mut checkouts: BTreeMap<String, Value> = BTreeMap::new();
    let mut builds: BTreeMap<String, Value> = BTreeMap::new();
    let mut tests = Vec::new();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (source, text) in results {
        // The same result twice would give its tests the same ids.
        if let Some(first) = seen.get(text.as_str()) {
            warnings.push(format!(
                "{source}: the same result as {first}: left out (its tests are already there)"
            ));
            continue;
        }
        seen.insert(text, source);
        let v: Value = serde_json::from_str(text)?;
        if v["kind"] == "campaign" {
            for (at, boot) in boots_of(source, &v, &mut warnings) {
                let text = serde_json::to_string(&boot["result"])?;
                let out = exported(&at, (&text, &boot["result"]), origin, Some(boot))?;
                absorb(out, &mut checkouts, &mut builds, &mut tests);
            }
            continue;
        }
        if v["kind"] != "run" {
            warnings.push(format!(
                "{source}: a {} result, not a run: left out (KCIDB tests are per-run figures)",
                v["kind"].as_str().unwrap_or("?")
            ));
            continue;
        }
        absorb(
            exported(source, (text, &v), origin, None)?,
            &mut checkouts,
            &mut builds,
            &mut tests,
        );
    }
    if tests.is_empty() {
        bail!("no run result with figures to export (KCIDB tests are the metrics of run results)");
    }
    Ok((
        json!({
            "version": {"major": MAJOR, "minor": MINOR},
            "checkouts": checkouts.into_values().collect::<Vec<_>>(),
            "builds": builds.into_values().collect::<Vec<_>>(),
            "tests": tests,
        }),
        warnings,
    ))
}

/// One run result's checkout, build and tests.
type Exported = ((String, Value), (String, Value), Vec<Value>);

/// A run result's checkout, build and tests; `boot`: the campaign boot it is the result of.
/// `result`: its text (digested, and read as every reader reads results) and its JSON.
fn exported(
    source: &str,
    (text, v): (&str, &Value),
    origin: &str,
    boot: Option<&Value>,
) -> Result<Exported> {
    let (checkout_id, checkout) = checkout(v, origin);
    let (build_id, build) = build(v, &checkout_id, origin);
    // The figures as every reader of results takes them: summaries recomputed from the
    // values (a stored summary is not trusted).
    let view = crate::results::view::ResultView::from_text(source, text)?;
    let digest = crate::history::digest(text);
    let run = Run {
        v,
        origin,
        build_id: &build_id,
        digest: &digest,
    };
    let mut tests: Vec<Value> = view.metrics.iter().filter_map(|m| run.test(m)).collect();
    if let Some(b) = boot {
        tests.iter_mut().for_each(|t| of_boot(t, b));
    }
    Ok(((checkout_id, checkout), (build_id, build), tests))
}

fn absorb(
    ((cid, c), (bid, b), t): Exported,
    checkouts: &mut BTreeMap<String, Value>,
    builds: &mut BTreeMap<String, Value>,
    tests: &mut Vec<Value>,
) {
    checkouts.entry(cid).or_insert(c);
    builds.entry(bid).or_insert(b);
    tests.extend(t);
}

/// A campaign's boots that measured a run, each named by where it is (`FILE, boot 3`); the
/// others are left out, with a warning each.
fn boots_of<'a>(
    source: &str,
    v: &'a Value,
    warnings: &mut Vec<String>,
) -> Vec<(String, &'a Value)> {
    let boots = v["boots"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::new();
    for (i, b) in boots.iter().enumerate() {
        let arm = b["arm"].as_str().unwrap_or("?");
        let at = format!("{source}, boot {} ({arm} round {})", i + 1, b["round"]);
        match b["result"]["kind"].as_str() {
            Some("run") => out.push((at, b)),
            Some(kind) => warnings.push(format!("{at}: a {kind} result, not a run: left out")),
            None => warnings.push(format!("{at}: did not measure: left out")),
        }
    }
    out
}

/// A test of a campaign's boot: its arm and round, and a lab's job (its log as the test's
/// `log_url`, its lab, device and worker).
fn of_boot(test: &mut Value, boot: &Value) {
    test["misc"]["arm"] = boot["arm"].clone();
    test["misc"]["round"] = boot["round"].clone();
    let Ok(job) = serde_json::from_value::<crate::boot::lava::LabJob>(boot["job"].clone()) else {
        return;
    };
    test["log_url"] = job.log_url().into();
    let misc = &mut test["environment"]["misc"];
    misc["lab"] = job.lab.into();
    misc["lava_job"] = job.id.into();
    misc["device"] = job.device.into();
    misc["worker"] = job.worker.into();
}

/// A run's checkout: its kernel release from this origin.
fn checkout(v: &Value, origin: &str) -> (String, Value) {
    let env = &v["environment"];
    let kernel = env["kernel_release"].as_str().unwrap_or("unknown");
    let id = format!("{origin}:{kernel}");
    let version = env["kernel_version"].as_str().map(|s| format!(" ({s})"));
    let checkout = json!({
        "id": id,
        "origin": origin,
        "comment": format!("Linux {kernel}{}", version.unwrap_or_default()),
        "valid": true,
        "misc": {"kernel_release": kernel},
    });
    (id, checkout)
}

/// A run's build: its checkout with its kernel config.
fn build(v: &Value, checkout_id: &str, origin: &str) -> (String, Value) {
    let env = &v["environment"];
    let config = crate::history::config_hash(v).unwrap_or_else(|| "unknown".into());
    let id = format!("{checkout_id}:{config}");
    let mut b = json!({
        "id": id,
        "checkout_id": checkout_id,
        "origin": origin,
        "config_name": format!("config-{config}"),
        "status": "PASS",
        "misc": {"cmdline": env["cmdline"], "config_hash": config},
    });
    if let Some(arch) = env["machine"].as_str() {
        b["architecture"] = arch.into();
    }
    (id, b)
}

/// One run result as the tests' common part.
struct Run<'a> {
    v: &'a Value,
    origin: &'a str,
    build_id: &'a str,
    digest: &'a str,
}

impl Run<'_> {
    /// A metric's test: its median with its unit; `None` without a finite median.
    fn test(&self, m: &crate::results::Metric) -> Option<Value> {
        let (v, origin) = (self.v, self.origin);
        let env = &v["environment"];
        let sum = m.summary.as_ref()?;
        let (name, median) = (m.name.as_str(), sum.median);
        if !median.is_finite() {
            return None;
        }
        let mut number = json!({"value": median});
        if !m.unit.is_empty() {
            number["unit"] = m.unit.clone().into();
        }
        let host = env["hostname"].as_str().unwrap_or("unknown");
        let cpu = env["cpu"]["model_name"].as_str().unwrap_or("unknown CPU");
        let boot = env["boot_id"].as_str().unwrap_or("unknown");
        let mut test = json!({
            "id": format!("{origin}:{}:{}", &self.digest[..16], path_piece(name)),
            "build_id": self.build_id,
            "origin": origin,
            "path": test_path(&v["workload"], name),
            "status": "DONE",
            "number": number,
            "comment": format!(
                "{name}: median {} {} over {} {}(s)",
                fmt_num(median),
                m.unit,
                m.values.len(),
                m.replication
            ),
            "environment": {
                "comment": format!("{host}, {cpu}, boot {boot}"),
                "misc": {
                    "host": host, "cpu_model": cpu, "boot_id": boot,
                    "hardware_pmu": env["hardware_pmu"],
                },
            },
            "misc": {
                "tool": format!("syscost {}", env!("CARGO_PKG_VERSION")),
                "result_schema": VERSION,
                "result_digest": self.digest,
                "workload": v["workload"],
                "op_name": v["op_name"],
                "replication": m.replication,
                "units": m.values.len(),
                "ci95_of_mean": sum.ci95,
                "pstdev": sum.pstdev,
            },
        });
        if let Some(t) = v["created_unix"].as_i64().filter(|t| *t > 0) {
            test["start_time"] = rfc3339(t).into();
        }
        Some(test)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn paths_ids_and_origins_follow_the_schema_patterns() {
        let w = json!({"workload": "syscall", "syscall": "getpid", "cpu": null});
        assert_eq!(test_path(&w, "time"), "syscost.syscall.getpid.time");
        assert_eq!(
            test_path(&json!({"workload": "file", "op": "open-close"}), "cycles:u"),
            "syscost.file.open-close.cycles_u"
        );
        assert_eq!(
            test_path(&json!({"workload": "mem", "size": 4096}), "page-faults"),
            "syscost.mem.size-4096.page-faults"
        );
        assert!(check_origin("my_lab2").is_ok());
        for bad in ["", "MyLab", "my-lab", "a:b"] {
            assert!(check_origin(bad).is_err(), "{bad}");
        }
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00+00:00");
    }

    /// A campaign's boots: a LAVA boot's tests carry its job's log and device, a boot that
    /// did not measure is left out with a warning.
    #[test]
    fn a_campaign_s_boots_are_results_with_their_jobs() {
        let run = serde_json::to_value(crate::results::fixture::fixed_result()).unwrap();
        let job = json!({"lab": "https://lab.example/", "id": 42, "device": "qemu-01",
                         "url": "https://lab.example/scheduler/job/42", "worker": "w1"});
        let campaign = json!({"kind": "campaign", "boots": [
            {"arm": "on", "round": 1, "result": run, "job": job},
            {"arm": "off", "round": 1, "failure": "panic"},
        ]});
        let text = campaign.to_string();
        let (doc, warnings) = document(&[("c.json".into(), text)], "lab").unwrap();
        let tests = doc["tests"].as_array().unwrap();
        assert!(!tests.is_empty());
        for t in tests {
            assert_eq!(
                t["log_url"],
                "https://lab.example/scheduler/job/42/log_file/plain"
            );
            assert_eq!(
                (&t["misc"]["arm"], &t["misc"]["round"]),
                (&json!("on"), &json!(1))
            );
            assert_eq!(t["environment"]["misc"]["device"], "qemu-01");
        }
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("boot 2 (off round 1): did not measure"),
            "{warnings:?}"
        );
    }
}
