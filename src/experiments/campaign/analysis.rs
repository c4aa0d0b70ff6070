//! A campaign's figures and verdicts from its boots: each arm's figure per good boot, its
//! counters, and the arms compared with boots as units, paired by round.

use super::{
    ArmFigures, BootFigure, Campaign, CampaignPlan, CounterFigure, MIN_BOOTS, MIN_EXACT_BOOTS,
};
use crate::compare::trend::{self, Trend};
use crate::compare::{self, Comparison, groups};
use crate::core::{Envelope, Kind};
use crate::experiments::boots::record::Decoded;
use crate::experiments::boots::{Arm, BootRecord};
use crate::results::functions::EmulatedFunctions;
use crate::results::sets::EmulatedSets;
use crate::results::view::ResultView;
use crate::stats::Summary;
use anyhow::Result;

/// The figures per arm and the comparison of the arms, from the boots.
pub(crate) fn analyse(
    plan: &CampaignPlan,
    order: Vec<Vec<String>>,
    boots: Vec<BootRecord>,
) -> Result<Campaign> {
    let mut warnings = Vec::new();
    let views = good_views(plan, &boots, &mut warnings);
    let metric = plan.options.primary.clone();
    let figures: Vec<ArmFigures> = plan
        .boot
        .arms
        .iter()
        .zip(&views)
        .map(|(a, v)| figures_of(a, v, &boots, plan.rounds, &metric))
        .collect();
    let unit = views
        .iter()
        .flatten()
        .find_map(|(_, d)| d.view.metric(&metric).map(|m| m.unit.clone()))
        .unwrap_or_default();
    let boot_figure = views
        .iter()
        .flatten()
        .next()
        .map_or(BootFigure::RunMedian, |(_, d)| BootFigure::of(d.view.kind));
    let (comparison, steps) = compare_arms(plan, &views, &mut warnings)?;
    let names: Vec<&str> = plan.boot.arms.iter().map(|a| a.name.as_str()).collect();
    let placed = match plan.boot.placement {
        crate::experiments::boots::PlaceEach::Run => {
            super::placed::deltas(&names, &views, plan.options.alpha)
        }
        crate::experiments::boots::PlaceEach::Boot => Vec::new(),
    };
    let created_unix = crate::core::now_unix();
    let complete = figures
        .iter()
        .all(|f| f.failed_boots == 0 && f.unbooted == 0);
    Ok(Campaign {
        envelope: Envelope::new(Kind::Campaign),
        id: format!("{created_unix}-{}", plan.boot.seed),
        created_unix,
        via: plan.boot.backend.name().into(),
        machine: plan.boot.backend.machine().cloned(),
        lava: match &plan.boot.backend {
            crate::experiments::boots::Backend::Lava(t) => Some((**t).clone()),
            _ => None,
        },
        host: Some(crate::environment::Environment::collect()),
        arms: plan.boot.arms.clone(),
        entries: Vec::new(),
        measure: plan.boot.measure.clone(),
        placement: plan.boot.placement,
        seed: plan.boot.seed,
        order,
        boots,
        metric,
        unit,
        boot_figure,
        figures,
        comparison,
        steps,
        placed,
        alpha: plan.options.alpha,
        complete,
        warnings,
    })
}

/// Per arm, its good boots decoded, with their round, in round order. A result that cannot be
/// read is kept whole but gives no figure.
fn good_views(
    plan: &CampaignPlan,
    boots: &[BootRecord],
    warnings: &mut Vec<String>,
) -> Vec<Vec<(u32, Decoded)>> {
    let mut out: Vec<Vec<(u32, Decoded)>> = vec![Vec::new(); plan.boot.arms.len()];
    for b in boots {
        let arm = plan.boot.arms.iter().position(|a| a.name == b.arm);
        let (Some(decoded), Some(i)) = (b.decoded(), arm) else {
            continue;
        };
        match decoded {
            Ok(d) => out[i].push((b.round, d)),
            Err(e) => warnings.push(format!(
                "{} round {}: kept whole, not compared ({e})",
                b.arm, b.round
            )),
        }
    }
    out
}

fn figures_of(
    arm: &Arm,
    views: &[(u32, Decoded)],
    boots: &[BootRecord],
    rounds: u32,
    metric: &str,
) -> ArmFigures {
    let values: Vec<f64> = views
        .iter()
        .filter_map(|(_, d)| d.figure(metric).ok().map(|(v, _)| v))
        .collect();
    let mut releases: Vec<String> = views
        .iter()
        .filter_map(|(_, d)| d.view.environment.kernel_release.clone())
        .collect();
    releases.sort();
    releases.dedup();
    let made = BootsMade::of(&arm.name, boots, rounds);
    ArmFigures {
        arm: arm.name.clone(),
        releases,
        good_boots: made.good,
        failed_boots: made.failed,
        unbooted: made.never,
        summary: Summary::of(&values),
        values,
        counters: counters_of(views, metric),
        sets: sets_of(views),
        functions: EmulatedFunctions::median(
            &views
                .iter()
                .filter_map(|(_, d)| d.functions.clone())
                .collect::<Vec<_>>(),
        ),
    }
}

/// What became of an arm's rounds: booted and measured, booted (every try) and failed, or
/// never booted (the campaign stopped first).
#[derive(Debug, PartialEq)]
struct BootsMade {
    good: usize,
    failed: usize,
    never: usize,
}

impl BootsMade {
    fn of(arm: &str, boots: &[BootRecord], rounds: u32) -> BootsMade {
        use std::collections::BTreeSet;
        let of_arm = || boots.iter().filter(|b| b.arm == arm);
        let tried: BTreeSet<u32> = of_arm().map(|b| b.round).collect();
        let good: BTreeSet<u32> = (of_arm().filter(|b| b.result().is_some()))
            .map(|b| b.round)
            .collect();
        let failed = tried.difference(&good).count();
        BootsMade {
            good: good.len(),
            failed,
            never: (rounds as usize).saturating_sub(good.len() + failed),
        }
    }
}

/// The arm's median boot's modelled misses by set (each boot's its median run's): their sum
/// is the arm's figure in the counters table.
fn sets_of(views: &[(u32, Decoded)]) -> Option<EmulatedSets> {
    let per_boot: Vec<&EmulatedSets> = views.iter().filter_map(|(_, d)| d.sets.as_ref()).collect();
    EmulatedSets::median(&per_boot)
}

/// Every metric of the boots' results but `primary` (and the time, when the primary is a
/// time too), in the order they first appear, each the median over the boots that counted it
/// of their medians.
fn counters_of(views: &[(u32, Decoded)], primary: &str) -> Vec<CounterFigure> {
    use crate::results::MetricKind;
    let mut out: Vec<CounterFigure> = Vec::new();
    let mut per_boot: Vec<Vec<f64>> = Vec::new();
    let metrics = views.iter().flat_map(|(_, d)| &d.view.metrics);
    let timed = views
        .iter()
        .flat_map(|(_, d)| d.view.metric(primary))
        .any(|m| m.kind == MetricKind::Time);
    for m in metrics.filter(|m| m.name != primary && !(timed && m.kind == MetricKind::Time)) {
        let i = match out.iter().position(|c| c.name == m.name) {
            Some(i) => i,
            None => {
                out.push(CounterFigure {
                    name: m.name.clone(),
                    unit: m.unit.clone(),
                    boots: 0,
                    median: None,
                    status: m.status.clone(),
                    reason: m.reason.clone(),
                });
                per_boot.push(Vec::new());
                out.len() - 1
            }
        };
        if !m.values.is_empty() {
            per_boot[i].push(crate::stats::median(&m.values));
        }
    }
    for (c, values) in out.iter_mut().zip(per_boot) {
        c.boots = values.len();
        if !values.is_empty() {
            c.median = Some(crate::stats::median(&values));
            (c.status, c.reason) = (None, None);
        }
    }
    out
}

/// Each arm with 3 good boots or more (2 when the compared metric is an exact emulated count)
/// against the first, paired by round over the rounds in which all of them were measured; with
/// `--steps`, each also against the one before it.
fn compare_arms(
    plan: &CampaignPlan,
    views: &[Vec<(u32, Decoded)>],
    warnings: &mut Vec<String>,
) -> Result<(Option<Comparison>, Option<Trend>)> {
    let primary = views
        .iter()
        .flatten()
        .find_map(|(_, d)| d.view.metric(&plan.options.primary));
    let exact = primary.is_some_and(crate::results::Metric::is_exact_count);
    let least = if exact { MIN_EXACT_BOOTS } else { MIN_BOOTS };
    let (arms, short): (Vec<usize>, Vec<usize>) =
        (0..views.len()).partition(|&i| views[i].len() >= least);
    for &i in &short {
        warnings.push(format!(
            "{}: {} good boot(s), fewer than {least}: its figures are shown, no verdict",
            plan.boot.arms[i].name,
            views[i].len()
        ));
    }
    if arms.len() < 2 || arms[0] != 0 {
        return Ok((None, None));
    }
    let rounds: Vec<u32> = views[0]
        .iter()
        .map(|(r, _)| *r)
        .filter(|r| arms.iter().all(|&i| views[i].iter().any(|(x, _)| x == r)))
        .collect();
    let mut variants = Vec::new();
    for &i in &arms {
        let in_rounds: Vec<&ResultView> = views[i]
            .iter()
            .filter(|(r, _)| rounds.contains(r))
            .map(|(_, d)| &d.view)
            .collect();
        let (v, w) = groups::boots_in_order(&plan.boot.arms[i].name, &in_rounds)?;
        warnings.extend(w);
        variants.push(v);
    }
    let options = compare::Options {
        configurations: true,
        paired: true,
        ..plan.options.clone()
    };
    let steps = plan.steps.then(|| variants.clone());
    // The boots are kept whatever the comparison says: one it refuses is a warning.
    let comparison = compare::compare(variants, &options)
        .map_err(|e| warnings.push(format!("no comparison: {e:#}")))
        .ok();
    let steps = steps.and_then(|v| {
        trend::trend(v, "arm", &options)
            .map_err(|e| warnings.push(format!("no step table: {e:#}")))
            .ok()
    });
    Ok((comparison, steps))
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::boots::Outcome;

    fn boot(arm: &str, round: u32, attempt: u32, good: bool) -> BootRecord {
        let outcome = match good {
            true => Outcome::Measured {
                result: serde_json::json!({}),
            },
            false => Outcome::failed("no result".into(), Default::default()),
        };
        BootRecord {
            arm: arm.into(),
            round,
            attempt,
            seconds: 1.0,
            split: None,
            pinned: Vec::new(),
            job: None,
            outcome,
        }
    }

    /// A campaign that stopped after b's first boot failed: a made no boot that failed, and
    /// the rounds nobody booted are not called failed.
    #[test]
    fn a_stopped_campaign_counts_the_boots_it_never_made_apart() {
        let boots = [
            boot("a", 1, 0, true),
            boot("b", 1, 0, false),
            boot("b", 1, 1, false),
        ];
        let made = |arm| BootsMade::of(arm, &boots, 6);
        assert_eq!(
            made("a"),
            BootsMade {
                good: 1,
                failed: 0,
                never: 5
            }
        );
        assert_eq!(
            made("b"),
            BootsMade {
                good: 0,
                failed: 1,
                never: 5
            }
        );
        // A round measured at its retry is good, not failed.
        let retried = [boot("a", 1, 0, false), boot("a", 1, 1, true)];
        let made = BootsMade::of("a", &retried, 1);
        assert_eq!(
            made,
            BootsMade {
                good: 1,
                failed: 0,
                never: 0
            }
        );
    }
}
