//! Stage 1 of a comparison: refuse what cannot be compared, resolve `--time auto`, flag (and
//! with `--drop-perturbed` drop) perturbed units, and keep `--best-of`'s units apart from the
//! units every test is taken on.

use super::variant::Purpose;
use super::{Options, Variant, check_comparable};
use crate::core::input::{Opt, spelled};
use crate::results::validity;
use crate::stats::registry::TestKind;
use anyhow::{Result, bail};

/// The variants ready to estimate.
pub(super) struct Prepared {
    /// The options, with `--time auto` resolved.
    pub opts: Options,
    /// What the tables and the ranking show (`--best-of` applied).
    pub shown: Vec<Variant>,
    /// What every delta, interval and test is taken on (all units kept).
    pub tested: Vec<Variant>,
    pub warnings: Vec<String>,
}

pub(super) fn prepare(mut variants: Vec<Variant>, opts: &Options) -> Result<Prepared> {
    if variants.len() < 2 {
        bail!("compare needs at least two results: a baseline and one to compare with it");
    }
    if opts.test == TestKind::SignedRank && !opts.paired {
        return Err(crate::refused!(
            Opt::Test,
            " signed-rank compares paired rounds (ab); these results are compared unpaired: use ",
            Opt::Test,
            " mann-whitney (the default) or welch"
        ));
    }
    let mut warnings =
        check_comparable(&variants, opts.force, opts.configurations, Purpose::Compare)?;
    let mut opts = opts.clone();
    if let Some(why) = auto_time(&variants, &opts) {
        warnings.push(why);
        opts.primary = "task-clock".into();
    }
    for v in variants.iter_mut() {
        flag_perturbed(v, &opts);
        // The headline first: every table and verdict list leads with the primary metric.
        v.metrics.sort_by_key(|m| m.name != opts.primary);
    }
    let tested = variants.clone();
    for v in variants.iter_mut() {
        best_of(v, &opts);
    }
    require_primary(&variants, &opts.primary)?;
    Ok(Prepared {
        opts,
        shown: variants,
        tested,
        warnings,
    })
}

/// Every variant must have values of the primary metric; say which does not, and what it has.
fn require_primary(variants: &[Variant], primary: &str) -> Result<()> {
    let base = &variants[0];
    if base.metric(primary).is_none() {
        let names: Vec<&str> = base
            .metrics
            .iter()
            .filter(|m| m.summary.is_some())
            .map(|m| m.name.as_str())
            .collect();
        let why = base
            .metrics
            .iter()
            .find(|m| m.name == primary)
            .map(|m| {
                let reason = m.reason.as_deref().or(m.status.as_deref());
                format!(
                    "its '{primary}' has no values ({})",
                    reason.unwrap_or("not counted")
                )
            })
            .unwrap_or_else(|| format!("it has no metric '{primary}'"));
        bail!(
            "{}: {why}; metrics with values: {}",
            base.label,
            names.join(", ")
        );
    }
    if let Some(v) = variants
        .iter()
        .skip(1)
        .find(|v| v.metric(primary).is_none())
    {
        bail!(
            "{}: it has no values of '{primary}' to compare with the baseline's{}",
            v.label,
            if v.metrics.is_empty() {
                " (it has no metrics at all)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Flag perturbed units (always) and drop them with --drop-perturbed.
fn flag_perturbed(v: &mut Variant, opts: &Options) {
    let floor = v.ops_per_sample.map(|o| 1.0 / o).unwrap_or(0.0);
    v.perturbed = validity::find(&v.metrics, opts.perturbed_pct, floor);
    if opts.drop_perturbed {
        let drop: Vec<u32> = v.perturbed.iter().map(|p| p.unit).collect();
        drop_units(v, drop);
    }
}

/// Apply --best-of K: keep the K best units of the primary metric, for the tables and the
/// ranking only. The best K of a sample are order statistics, not a random sample: tests on them
/// give p-values that are too small (an A/A pair was called in 14% of trials), so every delta,
/// interval and test is taken on all units.
fn best_of(v: &mut Variant, opts: &Options) {
    let Some(k) = opts.best_of else { return };
    let Some(m) = v.metric(&opts.primary) else {
        return;
    };
    let mut pairs: Vec<(f64, u32)> = m
        .values
        .iter()
        .zip(&m.units)
        .map(|(x, u)| (*x, *u))
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let drop = pairs.iter().skip(k).map(|(_, u)| *u).collect();
    drop_units(v, drop);
}

fn drop_units(v: &mut Variant, mut drop: Vec<u32>) {
    drop.sort();
    drop.dedup();
    if !drop.is_empty() {
        validity::retain_units(&mut v.metrics, |u| !drop.contains(&u));
    }
    v.dropped.extend(drop);
    v.dropped.sort();
    v.dropped.dedup();
}

/// `--time auto`: decide on task-clock instead of wall time when some variant's workers were
/// off the CPU (CPUs utilized below 0.98: a neighbour took it) though no variant's loop waits
/// by nature (a round trip, a fork: its waits are the operation) and none is a command whose
/// task-clock sums several processes; every variant must have task-clock. Returns the warning
/// that says so, or `None` to keep the primary metric.
pub(super) fn auto_time(variants: &[Variant], opts: &Options) -> Option<String> {
    if !opts.time_auto || opts.primary != "time" {
        return None;
    }
    let calm_by_nature = variants.iter().all(|v| {
        v.workload
            .known()
            .is_some_and(|w| w.waits().is_none() && w.name() != "exec")
    });
    if !calm_by_nature || variants.iter().any(|v| v.metric("task-clock").is_none()) {
        return None;
    }
    let off: Vec<String> = variants
        .iter()
        .filter_map(|v| {
            let u = v.metric("CPUs-utilized")?.summary.as_ref()?.median;
            (u < 0.98).then(|| format!("{} {:.0}%", v.label, 100.0 * (1.0 - u)))
        })
        .collect();
    if off.is_empty() {
        return None;
    }
    let said = crate::said!(
        Opt::Time,
        format!(
            " auto decided on task-clock, the workers' own time on the CPU, not wall time: \
             they were off the CPU for part of the wall time ({}), though their loop does not \
             wait: a neighbour took the CPU. ",
            off.join(", ")
        ),
        Opt::Time,
        " wall decides on wall time"
    );
    Some(said.spell(spelled))
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::compare::tests::variant;

    #[test]
    fn best_of_shows_the_best_units_and_tests_them_all() {
        let opts = Options {
            best_of: Some(2),
            ..Options::default()
        };
        let p = prepare(
            vec![
                variant("a", &[3.0, 1.0, 2.0]),
                variant("b", &[5.0, 4.0, 6.0]),
            ],
            &opts,
        )
        .unwrap();
        assert_eq!(p.shown[0].metric("time").unwrap().values, vec![1.0, 2.0]);
        assert_eq!(p.shown[1].dropped, vec![2]);
        assert_eq!(p.tested[0].metric("time").unwrap().values.len(), 3);
    }

    #[test]
    fn the_primary_metric_leads() {
        let with_count = |label: &str| {
            let mut v = variant(label, &[1.0, 2.0]);
            v.metrics.push(crate::results::Metric::of_values(
                "instructions (emulated)",
                "/call",
                crate::results::MetricKind::Emulated,
                "boot",
                vec![315.0, 315.1],
                None,
            ));
            v
        };
        let opts = Options {
            primary: "instructions (emulated)".into(),
            ..Options::default()
        };
        let p = prepare(vec![with_count("a"), with_count("b")], &opts).unwrap();
        for v in p.shown.iter().chain(&p.tested) {
            let names: Vec<&str> = v.metrics.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["instructions (emulated)", "time"]);
        }
    }

    #[test]
    fn a_baseline_without_the_primary_metric_is_named_with_what_it_has() {
        let opts = Options {
            primary: "cycles".into(),
            ..Options::default()
        };
        let Err(e) = prepare(
            vec![variant("a", &[1.0, 2.0]), variant("b", &[1.0, 2.0])],
            &opts,
        ) else {
            panic!("a primary metric nobody has was accepted");
        };
        let e = e.to_string();
        assert!(
            e.contains("a: it has no metric 'cycles'; metrics with values: time"),
            "{e}"
        );
    }

    #[test]
    fn one_result_or_an_unpaired_signed_rank_is_refused() {
        assert!(prepare(vec![variant("a", &[1.0])], &Options::default()).is_err());
        let opts = Options {
            test: TestKind::SignedRank,
            ..Options::default()
        };
        let two = vec![variant("a", &[1.0, 2.0]), variant("b", &[1.0, 2.0])];
        assert!(prepare(two, &opts).is_err());
    }
}
