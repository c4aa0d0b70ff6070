//! `syscost ab`: two or more configurations measured interleaved (A B, B A, ...), each run in a
//! fresh worker, then compared as configurations (their parameters differ on purpose).

use crate::compare::{self, Comparison, Variant};
use crate::results::metrics::Estimator;
use crate::results::{Grain, slots};
use crate::runner::{self, Plan, Progress};
use crate::workloads::WorkloadSpec;
use anyhow::{Result, bail};
use std::path::Path;

/// The file name a variant's result is saved under in `--save DIR`.
pub fn file_name(label: &str) -> String {
    let name: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{name}.json")
}

/// Labels for variants given without `--label`: what tells them apart, short enough for a
/// table in a mail. The workload parameters that differ between the variants (defaults
/// included), e.g. `getpid`, `getppid` for `syscall` and `syscall --syscall getppid`, or
/// `files=4`, `files=8`; a workload's own main parameter (the syscall of `syscall`) is given by
/// its value alone. Variants whose workloads are alike (they differ in run options, or not at
/// all) keep their `--variant` text. Repeated labels get `#2`, `#3`, so each is unique (they
/// name the `--save` files).
pub fn default_labels(workloads: &[WorkloadSpec], variants: &[String]) -> Vec<String> {
    let params: Vec<Vec<(String, String)>> = workloads
        .iter()
        .map(|w| match serde_json::to_value(w) {
            Ok(serde_json::Value::Object(m)) => m
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (k, v)
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    // A parameter that is null (not applicable: the slab shape of a non-slab placement)
    // tells nothing apart by itself: it differs when two variants give it different values.
    // Between different workloads, each one's own parameters are part of its name too.
    let mut names: Vec<Option<&String>> = params
        .iter()
        .map(|ps| ps.iter().find(|(k, _)| k == "workload").map(|(_, v)| v))
        .collect();
    names.dedup();
    let mixed = names.len() > 1;
    let mut differing: Vec<&str> = Vec::new();
    for (k, _) in params.iter().flatten() {
        let present: Vec<Option<&String>> = params
            .iter()
            .map(|ps| ps.iter().find(|(k2, _)| k2 == k).map(|(_, v)| v))
            .collect();
        let mut values: Vec<&String> = present.iter().flatten().copied().collect();
        values.retain(|v| *v != "null");
        values.dedup();
        let partial = mixed && present.iter().any(Option::is_none);
        if (values.len() > 1 || partial) && !differing.contains(&k.as_str()) {
            differing.push(k);
        }
    }
    // The workload's name first, then its parameters.
    differing.sort_by_key(|k| *k != "workload");
    let mut labels: Vec<String> = params
        .iter()
        .zip(variants)
        .map(|(ps, text)| {
            let workload = ps.iter().find(|(k, _)| k == "workload").map(|(_, v)| v);
            let parts: Vec<String> = differing
                .iter()
                .filter_map(|k| {
                    let (_, v) = ps.iter().find(|(k2, v2)| k2 == k && v2 != "null")?;
                    Some(if *k == "workload" || Some(&k.to_string()) == workload {
                        v.clone()
                    } else {
                        format!("{k}={v}")
                    })
                })
                .collect();
            if parts.is_empty() {
                text.trim().to_string()
            } else {
                parts.join(" ")
            }
        })
        .collect();
    for i in 1..labels.len() {
        let repeats = labels[..i].iter().filter(|l| **l == labels[i]).count();
        if repeats > 0 {
            labels[i] = format!("{}#{}", labels[i], repeats + 1);
        }
    }
    labels
}

/// What must match between the arms of an ab run, checked before anything is measured: the
/// overhead subtraction, and what one operation is.
pub fn check_arms(plans: &[Plan], variants: &[String]) -> Result<()> {
    for (p, v) in plans.iter().zip(variants).skip(1) {
        if p.subtract_overhead != plans[0].subtract_overhead {
            bail!("--variant '{v}': --subtract-overhead must be the same for every variant");
        }
        if p.workload.op_name() != plans[0].workload.op_name() {
            bail!(
                "--variant '{v}' counts {}, the first counts {}: per-op figures would not compare",
                crate::core::plural(p.workload.op_name()),
                crate::core::plural(plans[0].workload.op_name())
            );
        }
    }
    Ok(())
}

/// Refuse, before anything is measured, a number of rounds whose paired test can never reach
/// `alpha` over `comparisons` variants (Holm multiplies the smallest p by their number).
pub fn decidable(rounds: usize, comparisons: usize, alpha: f64) -> Result<()> {
    let need = crate::stats::paired::pairs_to_decide(alpha, comparisons);
    if rounds < need {
        let smallest =
            compare::smallest_p(crate::stats::paired::min_signed_rank_p(rounds), comparisons);
        bail!(
            "--runs {rounds}: with {rounds} rounds the paired test's smallest possible p is \
             {smallest}, above alpha {alpha}, so no change could ever be decided; use --runs \
             {need} or more"
        );
    }
    Ok(())
}

/// Measure `plans` interleaved at `grain` and compare them, the first as the baseline. With
/// `save`, each variant's full result is also written there.
pub fn run(
    plans: &[Plan],
    labels: &[String],
    grain: Grain,
    options: &compare::Options,
    save: Option<&Path>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Comparison> {
    if plans.len() < 2 || labels.len() != plans.len() {
        bail!("ab needs two or more configurations, each with a label");
    }
    let rounds = plans.iter().map(|p| p.runs).min().unwrap_or(0);
    decidable(rounds as usize, plans.len() - 1, options.alpha)?;
    let results = runner::run_interleaved(plans, grain, progress)?;
    // What was done: runs alternate instead where the plans cannot take turns by sample.
    let grain = results[0].options.interleaved.unwrap_or(Grain::Runs);
    let mut variants = Vec::new();
    for (r, label) in results.iter().zip(labels) {
        if let Some(dir) = save {
            r.save(&dir.join(file_name(label)))?;
        }
        let mut v = Variant::from_run(label, "ab", r);
        v.round_changes = slots::round_changes(&results[0], r);
        variants.push(v);
    }
    let mut c = compare::compare(
        variants,
        &compare::Options {
            configurations: true,
            paired: true,
            grain: Some(grain),
            ..options.clone()
        },
    )?;
    if let Some(p) = plans.first()
        && p.estimator == Estimator::Min
    {
        c.analysis.push_str(&format!(
            "; each run's value is its fastest of {} samples (the floor: a change that only \
             adds occasional slow operations does not move it)",
            p.samples
        ));
    }
    Ok(c)
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::workloads::{audit_replica, spin, syscall};

    fn labels(workloads: &[WorkloadSpec]) -> Vec<String> {
        let texts: Vec<String> = (0..workloads.len()).map(|i| format!("v{i}")).collect();
        default_labels(workloads, &texts)
    }

    fn sys(name: &str) -> WorkloadSpec {
        WorkloadSpec::Syscall(syscall::Params {
            syscall: name.into(),
        })
    }

    fn spin(iterations: u64) -> WorkloadSpec {
        WorkloadSpec::Spin(spin::Params { iterations })
    }

    #[test]
    fn default_labels_name_what_differs() {
        assert_eq!(
            labels(&[sys("getpid"), sys("getppid"), sys("gettid")]),
            ["getpid", "getppid", "gettid"]
        );
        assert_eq!(
            labels(&[spin(1000), spin(1020)]),
            ["iterations=1000", "iterations=1020"]
        );
        assert_eq!(
            labels(&[sys("getpid"), spin(1000)]),
            ["syscall getpid", "spin iterations=1000"]
        );
        // Parameters that apply to one variant only (null elsewhere) do not label it.
        let replica = |placement: &str, pages: audit_replica::Pages| {
            let slab = placement == "slab";
            WorkloadSpec::AuditReplica(audit_replica::Params {
                rules: 37,
                matching: 5,
                variant: audit_replica::Variant::Baseline,
                placement: placement.parse().unwrap(),
                pages,
                slab_objects: slab.then_some(16),
                slab_order: slab.then_some(1),
                slab_fill: slab.then_some(47),
                major: 39,
            })
        };
        assert_eq!(
            labels(&[
                replica("random", audit_replica::Pages::Small),
                replica("slab", audit_replica::Pages::Huge),
            ]),
            ["pages=4k placement=random", "pages=huge placement=slab"]
        );
        // Alike workloads keep their --variant text, made unique.
        let texts = vec!["syscall".to_string(), "syscall".to_string()];
        assert_eq!(
            default_labels(&[sys("getpid"), sys("getpid")], &texts),
            ["syscall", "syscall#2"]
        );
    }

    #[test]
    fn labels_become_safe_file_names() {
        assert_eq!(
            super::file_name("syscall --syscall getpid"),
            "syscall_--syscall_getpid.json"
        );
        assert_eq!(super::file_name("a/b"), "a_b.json");
    }
}
