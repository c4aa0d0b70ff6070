//! `syscost ab`: two or more configurations measured interleaved (A B, B A, ...), each run in a
//! fresh worker, then compared as configurations (their parameters differ on purpose).

use crate::compare::{self, Comparison, Variant};
use crate::core::input::Opt;
use crate::results::metrics::Estimator;
use crate::results::{Grain, slots};
use crate::runner::{self, Plan, Progress};
use crate::workloads::WorkloadSpec;
use anyhow::Result;
use std::path::PathBuf;

/// The file name a variant's result is saved under in `--save DIR`.
pub(crate) fn file_name(label: &str) -> String {
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
pub(crate) fn default_labels(workloads: &[WorkloadSpec], variants: &[String]) -> Vec<String> {
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
fn check_arms(plans: &[Plan], variants: &[String]) -> Result<()> {
    for (p, v) in plans.iter().zip(variants).skip(1) {
        if p.subtract_overhead != plans[0].subtract_overhead {
            return Err(crate::refused!(
                Opt::Variant,
                format!(" '{v}': "),
                Opt::SubtractOverhead,
                " must be the same for every variant"
            ));
        }
        if p.workload.op_name() != plans[0].workload.op_name() {
            return Err(crate::refused!(
                Opt::Variant,
                format!(
                    " '{v}' counts {}, the first counts {}: per-op figures would not compare",
                    crate::core::plural(p.workload.op_name()),
                    crate::core::plural(plans[0].workload.op_name())
                )
            ));
        }
    }
    Ok(())
}

/// Refuse, before anything is measured, a number of rounds whose paired test can never reach
/// `alpha` over `comparisons` variants (Holm multiplies the smallest p by their number);
/// `flag` is the option that sets the rounds (`--runs`, `--boots`).
pub(crate) fn decidable(opt: Opt, rounds: usize, comparisons: usize, alpha: f64) -> Result<()> {
    let need = crate::stats::paired::pairs_to_decide(alpha, comparisons);
    if rounds < need {
        let smallest =
            compare::smallest_p(crate::stats::paired::min_signed_rank_p(rounds), comparisons);
        return Err(crate::refused!(
            opt,
            format!(
                " {rounds}: with {rounds} rounds the paired test's smallest possible p is \
                 {smallest}, above alpha {alpha}, so no change could ever be decided; use "
            ),
            opt,
            format!(" {need} or more")
        ));
    }
    Ok(())
}

/// ab's rounds when no arm chooses `--runs`: enough for the paired test to decide (it needs 6
/// rounds to reach p < 0.05 at all, 7 for three variants) with room for a dropped round or two.
pub(crate) const AB_ROUNDS: u32 = 10;

/// One configuration of an ab run: its plan as `syscost run` would measure it, the text it was
/// given as (for labels and messages), and what of its design the command line chose.
pub(crate) struct Arm {
    pub plan: Plan,
    pub text: String,
    pub chosen: Chosen,
}

/// What the command line chose of an arm's design; ab's defaults fill the rest for every arm.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Chosen {
    /// The estimator, the samples, their time or the operations per sample.
    pub sampling: bool,
    /// The number of runs (rounds).
    pub runs: bool,
}

/// An ab run ready to measure: its plans with ab's defaults applied and checked, one label each.
pub(crate) struct AbRequest {
    pub plans: Vec<Plan>,
    pub labels: Vec<String>,
    pub grain: Grain,
    pub options: compare::Options,
    /// Where each arm's full result is also written.
    pub save: Option<PathBuf>,
}

impl AbRequest {
    /// Check the arms and the labels (`labels` empty: named by what differs), apply ab's
    /// defaults where no arm chose (see [`with_defaults`]) and validate each plan once.
    pub(crate) fn new(
        arms: Vec<Arm>,
        labels: Vec<String>,
        grain: Grain,
        options: &compare::Options,
        save: Option<PathBuf>,
    ) -> Result<AbRequest> {
        check_labels(arms.len(), &labels)?;
        let texts: Vec<String> = arms.iter().map(|a| a.text.clone()).collect();
        let plans = with_defaults(arms);
        check_arms(&plans, &texts)?;
        for p in &plans {
            runner::validate(p)?;
        }
        let labels = if labels.is_empty() {
            let workloads: Vec<WorkloadSpec> = plans.iter().map(|p| p.workload.clone()).collect();
            default_labels(&workloads, &texts)
        } else {
            labels
        };
        Ok(AbRequest {
            plans,
            labels,
            grain,
            options: compare::Options {
                configurations: true,
                ..options.clone()
            },
            save,
        })
    }
}

/// ab's design where no arm chooses: the floor ([`runner::FLOOR_DESIGN`]: each run's fastest of
/// 100 samples of 10 ms) and [`AB_ROUNDS`] rounds. Measured on this project's VM while the host
/// was busy, the floor called a constructed +2% change in 10 of 10 tries and an A/A pair in 0
/// of 20, where 10 samples of 100 ms called the +2% in 2 of 10. An arm that runs a command
/// chooses its operations (`--ops`), so no arm then gets the floor: 100 executions per run
/// could take minutes. The arms must share a design, so one arm's choice holds for all.
pub(crate) fn with_defaults(arms: Vec<Arm>) -> Vec<Plan> {
    let sampling = arms.iter().any(|a| a.chosen.sampling);
    let runs = arms.iter().any(|a| a.chosen.runs);
    arms.into_iter()
        .map(|a| {
            let mut p = a.plan;
            if !sampling {
                (p.estimator, p.samples, p.sample_time) = runner::FLOOR_DESIGN;
            }
            if !runs {
                p.runs = AB_ROUNDS;
            }
            p
        })
        .collect()
}

/// Two arms or more, and one distinct label each or none.
fn check_labels(arms: usize, labels: &[String]) -> Result<()> {
    if arms < 2 {
        return Err(crate::refused!(
            "ab needs at least two ",
            Opt::Variant,
            " configurations"
        ));
    }
    if let Some(twice) = labels
        .iter()
        .enumerate()
        .find_map(|(i, l)| labels[..i].contains(l).then_some(l))
    {
        return Err(crate::refused!(
            Opt::Label,
            format!(" '{twice}' is given twice: each variant needs its own (they name the rows "),
            "and the ",
            Opt::Save,
            " files)"
        ));
    }
    if !labels.is_empty() && labels.len() != arms {
        return Err(crate::refused!(
            "give one ",
            Opt::Label,
            " per ",
            Opt::Variant,
            format!(" ({} labels for {arms} variants), or none", labels.len())
        ));
    }
    Ok(())
}

/// Measure the request's plans interleaved at its grain and compare them, the first as the
/// baseline. With `save`, each variant's full result is also written there.
pub(crate) fn run(req: &AbRequest, progress: &mut dyn FnMut(Progress)) -> Result<Comparison> {
    let (plans, labels, options) = (&req.plans, &req.labels, &req.options);
    let rounds = plans.iter().map(|p| p.runs).min().unwrap_or(0);
    decidable(Opt::Runs, rounds as usize, plans.len() - 1, options.alpha)?;
    let results = runner::run_interleaved(plans, req.grain, progress)?;
    // What was done: runs alternate instead where the plans cannot take turns by sample.
    let grain = results[0].options.interleaved.unwrap_or(Grain::Runs);
    let mut variants = Vec::new();
    for (r, label) in results.iter().zip(labels) {
        if let Some(dir) = &req.save {
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

    fn arm(syscall: &str, chosen: Chosen) -> Arm {
        Arm {
            plan: crate::runner::interleave::unit::plan(syscall, 5),
            text: syscall.into(),
            chosen,
        }
    }

    #[test]
    fn the_floor_and_ten_rounds_unless_an_arm_chooses() {
        let none = Chosen::default();
        let plans = with_defaults(vec![arm("getpid", none), arm("getppid", none)]);
        for p in &plans {
            assert_eq!(
                (p.estimator, p.samples, p.sample_time),
                runner::FLOOR_DESIGN
            );
            assert_eq!(p.runs, AB_ROUNDS);
        }
        let sampling = Chosen {
            sampling: true,
            runs: false,
        };
        let plans = with_defaults(vec![arm("getpid", none), arm("getppid", sampling)]);
        for p in &plans {
            assert_eq!(p.samples, 3, "one arm's choice holds for every arm");
            assert_eq!(p.runs, AB_ROUNDS);
        }
        let runs = Chosen {
            sampling: false,
            runs: true,
        };
        let plans = with_defaults(vec![arm("getpid", runs), arm("getppid", none)]);
        assert!(plans.iter().all(|p| p.runs == 5 && p.samples == 100));
    }

    #[test]
    fn labels_are_checked_before_anything_runs() {
        assert!(check_labels(1, &[]).is_err());
        assert!(check_labels(2, &["a".into(), "a".into()]).is_err());
        assert!(check_labels(3, &["a".into(), "b".into()]).is_err());
        assert!(check_labels(2, &[]).is_ok());
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
