//! Stage 4 of a comparison: each delta's decision and its sentence. A delta of one process's
//! samples gets no verdict; one whose test can never reach alpha with its units (after Holm)
//! says how many it needs; the rest are decided on their intervals (see `decision`).

use super::decision::{self, Evidence};
use super::estimate::{Estimated, Exact, Limit};
use super::{Decision, Options, Variant, lower_is_better};
use crate::core::input::{Opt, spelled};
use crate::stats::paired;
use crate::stats::rank_tests::min_mann_whitney_p;

pub(super) fn decide(est: &mut Estimated, families: &[usize], tested: &[Variant], opts: &Options) {
    for (k, d) in est.deltas.iter_mut().enumerate() {
        let one_run = [&tested[0], &tested[d.variant]]
            .iter()
            .any(|x| x.unit == "sample" || x.n(&d.metric) < 2 && x.unit == "run");
        let family = families[k].max(1);
        let (decision, verdict) = if let Some(exact) = est.exact[k] {
            decide_exact(exact, &d.metric, &tested[0].unit)
        } else if one_run && !opts.samples_as_units {
            (
                Decision::NoVerdict,
                crate::said!(
                    "no verdict: one run (its samples share one process; use ",
                    Opt::Runs,
                    " 5 or more)"
                )
                .spell(spelled),
            )
        } else if let Some(limit) = est.limits[k]
            && limit.min_p * family as f64 >= opts.alpha
        {
            // With 5 rounds the signed-rank test cannot go below p = 0.0625, with 3 runs against
            // 3 Mann-Whitney not below 0.1; Holm multiplies the smallest p by the family's size.
            (
                Decision::TooFewUnits,
                cannot_decide(limit, family, opts, &tested[0].unit),
            )
        } else {
            let evidence = Evidence {
                ci: d.ci_pct,
                ci_equivalence: d.ci_equivalence_pct,
                delta: d.delta_pct,
                p_adjusted: d.p_adjusted,
                alpha: opts.alpha,
                threshold: opts.noise_pct,
                n: d.n,
                paired: opts.paired,
            };
            decision::decide(&evidence, lower_is_better(&d.metric))
        };
        d.decision = decision;
        d.verdict = verdict;
    }
}

/// An emulated count's decision by the range rule (`stats::exact`), and its sentence.
/// `unit`: what one value of the arms is (`boot`, `run`), as the sentences name it.
fn decide_exact(exact: Exact, metric: &str, unit: &str) -> (Decision, String) {
    let r = match exact {
        Exact::Rule(r) => r,
        Exact::ZeroBase => {
            return (
                Decision::NoTest,
                format!("no test (a baseline {unit} counts none: no percentage)"),
            );
        }
        Exact::TooFew { units } => {
            return (
                Decision::TooFewUnits,
                format!(
                    "cannot decide with {units} {unit}(s) in an arm: exact counts need 2 per \
                     arm, for their {unit}-to-{unit} range"
                ),
            );
        }
    };
    if r.apart() {
        let d = Decision::of_change(lower_is_better(metric), r.delta_pct > 0.0);
        return (
            d,
            format!(
                "{} (exact: every {unit} apart by > {:.2}%)",
                d.name(),
                r.bar_pct()
            ),
        );
    }
    if r.equal() {
        return (
            Decision::Equivalent,
            format!("equivalent (exact: every {unit} within ±{}%)", r.floor_pct),
        );
    }
    (
        Decision::Inconclusive,
        format!(
            "inconclusive (exact: apart by less than the arms' own range, {:.2}%)",
            r.own_range_pct
        ),
    )
}

/// The verdict of a comparison whose test can never reach alpha with its units: how many it
/// had (`unit`: what one is, `run` or `boot`), the smallest p it could give, and how many it
/// needs.
fn cannot_decide(limit: Limit, family: usize, opts: &Options, unit: &str) -> String {
    let p = smallest_p(limit.min_p, family);
    let (a, b) = limit.sizes;
    if opts.paired {
        let need = paired::pairs_to_decide(opts.alpha, family);
        format!(
            "cannot decide with {a} rounds: the smallest possible p is {p} > alpha {}; use \
             {need} or more",
            opts.alpha
        )
    } else {
        let need = (2..=200)
            .find(|&n| min_mann_whitney_p(n, n) * (family as f64) < opts.alpha)
            .unwrap_or(200);
        format!(
            "cannot decide with {a} and {b} {unit}s: the smallest possible p is {p} > alpha {}; \
             use {need} or more each",
            opts.alpha
        )
    }
}

/// A rank test's smallest possible p after Holm over `family` comparisons, as messages say it:
/// `0.0625`, or `0.1250 after Holm over 2 comparisons`.
pub(crate) fn smallest_p(min_p: f64, family: usize) -> String {
    let p = crate::core::fmt_p((min_p * family.max(1) as f64).min(1.0));
    if family > 1 {
        format!("{p} after Holm over {family} comparisons")
    } else {
        p
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn exact_counts_are_decided_by_the_range_rule() {
        use crate::stats::exact::range_rule;
        let rule = |a: &[f64], b: &[f64]| Exact::Rule(range_rule(a, b, 0.1).unwrap());
        let m = "instructions:k (emulated)";
        let (d, s) = decide_exact(rule(&[305.80, 305.74], &[308.86, 308.81]), m, "boot");
        assert_eq!(d, Decision::Higher, "{s}");
        let (d, s) = decide_exact(rule(&[305.80, 305.74], &[305.87, 305.79]), m, "boot");
        assert_eq!(d, Decision::Equivalent, "{s}");
        let (d, s) = decide_exact(rule(&[100.0, 102.0], &[103.0, 103.1]), m, "boot");
        assert_eq!(d, Decision::Inconclusive, "{s}");
        assert!(s.contains("1.98%"), "{s}");
        assert_eq!(decide_exact(Exact::ZeroBase, m, "boot").0, Decision::NoTest);
        let (d, s) = decide_exact(Exact::TooFew { units: 1 }, m, "boot");
        assert_eq!(d, Decision::TooFewUnits);
        assert!(s.contains("need 2 per arm"), "{s}");
    }

    #[test]
    fn too_few_units_say_how_many_would_do() {
        let paired = Options {
            paired: true,
            ..Options::default()
        };
        let five = Limit {
            min_p: paired::min_signed_rank_p(5),
            sizes: (5, 5),
        };
        assert_eq!(
            cannot_decide(five, 1, &paired, "run"),
            "cannot decide with 5 rounds: the smallest possible p is 0.0625 > alpha 0.05; use 6 \
             or more"
        );
        let three = Limit {
            min_p: min_mann_whitney_p(3, 3),
            sizes: (3, 3),
        };
        let said = cannot_decide(three, 2, &Options::default(), "run");
        assert!(
            said.starts_with("cannot decide with 3 and 3 runs"),
            "{said}"
        );
        // Groups of boots (history compare --by kernel) count boots.
        let boots = cannot_decide(three, 1, &Options::default(), "boot");
        assert!(
            boots.starts_with("cannot decide with 3 and 3 boots"),
            "{boots}"
        );
        assert!(said.contains("after Holm over 2 comparisons"), "{said}");
        assert!(said.ends_with("use 5 or more each"), "{said}");
    }
}
