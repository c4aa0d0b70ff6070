//! Stage 6 of a comparison: the warnings a reader needs beside the numbers, and the words of
//! the result (which test, what was analysed, which correction).

use super::estimate::Estimated;
use super::prepare::Prepared;
use super::{BootstrapInfo, Comparison, Options, Rank, Variant, profile_diff};
use crate::core::input::{Opt, spelled};
use crate::core::{Envelope, Kind};
use crate::results::Grain;

pub(super) fn comparison(p: Prepared, est: Estimated, ranking: Vec<Rank>) -> Comparison {
    let opts = &p.opts;
    let mut warnings = p.warnings;
    warnings.extend(analysis_warnings(&est, &p.shown, &p.tested, opts));
    let test = opts.test.test();
    Comparison {
        envelope: Envelope::new(Kind::Compare),
        test: if opts.paired {
            test.name_paired().into()
        } else {
            test.name_unpaired().into()
        },
        analysis: analysis(&p.shown, &p.tested, opts) + &exact_analysis(&est, opts),
        pairing: Some(match opts.paired {
            true => super::Pairing::Paired,
            false => super::Pairing::Unpaired,
        }),
        alpha: opts.alpha,
        noise_threshold_pct: opts.noise_pct,
        bootstrap: BootstrapInfo {
            resamples: opts.resamples,
            seed: opts.seed,
            generator: "PCG64 (rand_pcg)".into(),
            confidence: 1.0 - opts.alpha,
        },
        correction: format!(
            "Holm-Bonferroni, in two families: the primary metric ({}) across variants, and \
             all other metrics across variants",
            opts.primary
        ),
        primary_metric: opts.primary.clone(),
        profile_diff: profile_diff(&p.shown),
        variants: p.shown,
        deltas: est.deltas,
        ranking,
        warnings,
    }
}

/// What was analysed, in words.
fn analysis(shown: &[Variant], tested: &[Variant], opts: &Options) -> String {
    if !opts.paired {
        return format!(
            "unpaired: the {}s of each side compared as independent samples",
            shown[0].unit
        );
    }
    let by_slot = tested.iter().any(|v| !v.round_changes.is_empty());
    match opts.grain {
        Some(Grain::Samples) if by_slot => {
            "paired by round, slot by slot: the round's runs took turns sample by sample, and \
             each round's change B/A is the median over its slots of B's sample against A's, \
             taken next to it (the machine's moment cancels)"
        }
        Some(Grain::Samples) => {
            "paired by round: each round's change B/A (the round's runs took turns sample by \
             sample, so they share the machine's drift)"
        }
        _ => {
            "paired by round: each round's change B/A (runs seconds apart share the machine's \
             drift)"
        }
    }
    .into()
}

/// The words for emulated counts, when some were compared: their rule, not the test.
fn exact_analysis(est: &Estimated, opts: &Options) -> String {
    if est.exact.iter().all(Option::is_none) {
        return String::new();
    }
    format!(
        "; emulated counts by the range rule: a change when every boot of one side is apart \
         from every boot of the other by more than either side's own range and {}%, the \
         interval the range of those cross-boot changes",
        opts.exact_floor_pct
    )
}

/// The warnings of the analysis itself, in the order a reader meets them.
fn analysis_warnings(
    est: &Estimated,
    shown: &[Variant],
    tested: &[Variant],
    opts: &Options,
) -> Vec<String> {
    let mut w = Vec::new();
    if !est.unpaired_fallback.is_empty() {
        w.push(format!(
            "analysed unpaired, as the rounds could not be paired: {}",
            est.unpaired_fallback.join(", ")
        ));
    }
    if opts.samples_as_units && shown.iter().any(|v| v.unit == "sample") {
        w.push(
            crate::said!(
                Opt::SamplesAsUnits,
                ": the samples of one run share one process, one placement in memory and one \
                 moment of the machine; they are not independent, so p-values and intervals are \
                 too optimistic"
            )
            .spell(spelled),
        );
    }
    w.extend(preemption_warnings(tested, &opts.primary));
    if let Some(k) = opts.best_of {
        w.push(
            crate::said!(
                Opt::BestOf,
                format!(
                    " {k}: the tables and the ranking show each variant's best runs; every \
                     delta, interval and test uses all runs (the best runs are order \
                     statistics, not a sample)"
                )
            )
            .spell(spelled),
        );
    }
    for v in shown {
        if !v.perturbed.is_empty() && !opts.drop_perturbed {
            w.push(format!(
                "{}: {} perturbed {}(s) kept ({} leaves them out)",
                v.label,
                v.perturbed.len(),
                v.unit,
                spelled(Opt::DropPerturbed)
            ));
        }
    }
    w
}

/// Warn when the workers spent part of their wall time off the CPU (CPUs utilized, task-clock
/// over wall time, below 0.98): a neighbour stole the CPU, or the loop waits. Wall time then
/// measures the waits too; task-clock does not.
pub(super) fn preemption_warnings(variants: &[Variant], primary: &str) -> Vec<String> {
    let mut out = Vec::new();
    for v in variants {
        let Some(u) = v
            .metric("CPUs-utilized")
            .and_then(|m| m.summary.as_ref())
            .map(|s| s.median)
        else {
            continue;
        };
        if u < 0.98 {
            out.push(format!(
                "{}: CPUs utilized {u:.2}: the worker was off the CPU {:.0}% of the wall time \
                 (preempted by a neighbour, or the loop waits){}",
                v.label,
                100.0 * (1.0 - u),
                if primary == "time" {
                    crate::said!(
                        "; wall-time verdicts may be contaminated: ",
                        Opt::Time,
                        " cpu decides on task-clock"
                    )
                    .spell(spelled)
                } else {
                    String::new()
                }
            ));
        }
    }
    if primary == "task-clock" && variants.iter().any(|v| v.workload.name() == Some("exec")) {
        out.push(
            "task-clock of an exec workload sums every process of the command: on-CPU time \
             of work that ran in parallel adds up"
                .into(),
        );
    }
    out
}
