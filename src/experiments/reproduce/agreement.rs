//! When syscost's figure agrees with a paper's, by the cell's error model (its class: an exact
//! count within its band, a modelled figure within the 10-90% range of its boots, a ratio within
//! 10% where that tells it from 1, a direction by a rank test of the two arms' boots), each
//! widened by the rounding of the figure as printed (`~0` is anything under 0.5); and how many
//! cells of each class do. Every scored cell's test can fail: a modelled cell whose range also
//! holds another arm's figure for the same row, a `~0` no arm's boots could have missed, and a
//! direction too few boots could show are measured but not scored, each with its reason. Cells
//! without an error model (a stand-in's totals, time under TCG, a repeat, a misprint) are never
//! scored.

use super::paper::Class;
pub(crate) use super::units::modelled_range;
use crate::core::num::fmt_num;
use crate::stats::rank_tests::min_mann_whitney_p;
use crate::stats::significance::mann_whitney;
use serde::{Deserialize, Serialize};

/// What an exact count may stray from a whole one: it is shown to two decimals.
const EXACT_SLACK: f64 = 0.005;

/// A ratio agrees within 10%; one within 10% of 1 is scored only where every pairing of the
/// two arms' boots puts syscost's ratio on the paper's side of 1.
pub(crate) const RATIO_TOLERANCE: f64 = 0.10;

/// A direction agrees when the two arms' boots differ the paper's way at this level
/// (Mann-Whitney U, two-sided, boots as units).
pub(crate) const DIRECTION_ALPHA: f64 = 0.05;

/// Half a unit of the last digit `written` prints (`2.39`: 0.005; `~0`: 0.5): a figure within
/// it of the paper's cannot be told apart from it.
pub(crate) fn rounding(written: &str) -> f64 {
    let number: String = super::paper::figure_text(written)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    0.5 * 10f64.powi(-(decimals as i32))
}

/// What a scored cell is compared by: its class, its band, and the paper's printed rounding
/// (`slack`, in the same unit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Model {
    pub class: Class,
    /// An exact cell's band (the wider of its absolute band and its share of the paper's).
    pub band: f64,
    pub slack: f64,
}

/// What syscost measured for one cell, beyond its median.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Evidence<'a> {
    /// The cell's figure in each boot (a change's: each boot less the base arm's median).
    pub boots: &'a [f64],
    /// A direction cell's two arms, each boot's own figure: the arm and the arm it is compared
    /// with.
    pub arms: (&'a [f64], &'a [f64]),
    /// The paper's figures for the same row in the table's other arms.
    pub rivals: &'a [f64],
    /// Every boot figure the other arms of the row measured.
    pub rivals_boots: &'a [f64],
    /// A direction cell's placements paired run by run (the arm's run less the compared arm's
    /// run of the same round and index), where both placed their entries anew each run.
    pub pairs: &'a [f64],
    /// A modelled cell's figures in the paper's unit (none: the boots, one by one).
    pub summary: Option<&'a super::units::Summarised>,
    /// Why the paper's own figures do not establish a direction cell's direction, when they
    /// do not.
    pub unestablished: Option<&'a str>,
    /// A ratio cell's range over every pairing of its arm's boots with its denominator's.
    pub ratio_range: Option<(f64, f64)>,
}

/// A measured cell's score.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Score {
    Agrees,
    Disagrees,
    /// Measured, but its test could not have failed, or could not decide: why.
    Unscored(String),
    /// Its class has no error model.
    NoModel,
}

impl Score {
    pub(crate) fn agrees(&self) -> Option<bool> {
        match self {
            Score::Agrees => Some(true),
            Score::Disagrees => Some(false),
            _ => None,
        }
    }

    pub(crate) fn unscored(&self) -> Option<String> {
        match self {
            Score::Unscored(why) => Some(why.clone()),
            _ => None,
        }
    }

    fn of(agrees: bool) -> Score {
        if agrees {
            Score::Agrees
        } else {
            Score::Disagrees
        }
    }
}

/// Whether syscost's figure (`ours`, the median boot; `e`, what else it measured) agrees with
/// `paper` under `m`.
pub(crate) fn score(m: Model, paper: f64, ours: f64, e: &Evidence) -> Score {
    match m.class {
        // An exact count is whole: a few thousandths of rounding aside, it is in its band or not.
        Class::Exact => Score::of((ours - paper).abs() <= m.band.max(m.slack) + EXACT_SLACK),
        Class::Modelled => modelled(m, paper, e),
        Class::Ratio => ratio(m, paper, ours, e),
        Class::Direction if let Some(why) = e.unestablished => Score::Unscored(why.to_string()),
        Class::Direction if !e.pairs.is_empty() => paired_direction(paper, e.pairs),
        Class::Direction => direction(paper, e.arms),
        _ => Score::NoModel,
    }
}

/// A ratio: agrees within 10% of the paper's where every pairing of the two arms' boots puts
/// syscost's on the paper's side of 1, disagrees where they put it on the other side or
/// outside the band; where they span 1, a ratio within 10% of 1 is not scored (a null result
/// cannot be told from it), and one beyond disagrees unless the boots span it too. So a null
/// result never agrees with an effect, and a difference the boots resolve is a result.
fn ratio(m: Model, paper: f64, ours: f64, e: &Evidence) -> Score {
    let near = (paper - 1.0).abs() <= RATIO_TOLERANCE;
    if (paper - 1.0).abs() <= m.slack {
        return Score::Unscored("the paper's ratio is 1, which a null result gives".into());
    }
    let within = (ours - paper).abs() <= (RATIO_TOLERANCE * paper.abs()).max(m.slack);
    let Some((lo, hi)) = e.ratio_range else {
        // No boots' range (an arm without boots of its own): the band alone, beyond 1's.
        return if near {
            Score::NoModel
        } else {
            Score::of(within)
        };
    };
    if lo > 1.0 || hi < 1.0 {
        let same_side = (lo - 1.0).signum() == (paper - 1.0).signum();
        return Score::of(same_side && within);
    }
    let spans = format!(
        "the boots' ratios span 1 ({} to {})",
        fmt_num(lo),
        fmt_num(hi)
    );
    match (near, lo <= paper && paper <= hi) {
        (true, _) => Score::Unscored(format!(
            "within 10% of 1, and {spans}: no difference they resolve"
        )),
        (false, true) => Score::Unscored(format!("{spans} and the paper's ratio")),
        (false, false) => Score::Disagrees,
    }
}

fn modelled(m: Model, paper: f64, e: &Evidence) -> Score {
    let range = match e.summary {
        Some(s) => s.range().map(|r| r.0),
        None => modelled_range(e.boots),
    };
    let Some((lo, hi)) = range else {
        return Score::NoModel;
    };
    let inside = |v: f64| lo - m.slack <= v && v <= hi + m.slack;
    // A `~0`: only a model that showed the row's figure above it in some arm could have
    // failed it.
    if paper == 0.0 && !e.rivals_boots.iter().any(|&v| v > m.slack) {
        return Score::Unscored(format!(
            "no arm's boots reached {}: the model could not have missed a ~0",
            fmt_num(m.slack)
        ));
    }
    if !inside(paper) {
        return Score::Disagrees;
    }
    match e
        .rivals
        .iter()
        .find(|&&r| (r - paper).abs() > m.slack && inside(r))
    {
        Some(r) => Score::Unscored(format!(
            "cannot tell the arms apart: another arm's {} lies in this range too",
            fmt_num(*r)
        )),
        None => Score::Agrees,
    }
}

/// A change's direction: the arm's boots against the other arm's by Mann-Whitney U; agrees
/// when they differ at [`DIRECTION_ALPHA`] the paper's way, is not scored when so few boots
/// cannot reach it.
fn direction(paper: f64, (arm, base): (&[f64], &[f64])) -> Score {
    if arm.is_empty() || base.is_empty() {
        return Score::NoModel;
    }
    let least = min_mann_whitney_p(arm.len(), base.len());
    if least >= DIRECTION_ALPHA {
        return Score::Unscored(format!(
            "{} and {} boots cannot decide: the least p they can give is {}",
            arm.len(),
            base.len(),
            fmt_num(least)
        ));
    }
    let p = mann_whitney(arm, base).map_or(1.0, |t| t.p);
    let shift = crate::stats::median(arm) - crate::stats::median(base);
    Score::of(p < DIRECTION_ALPHA && shift * paper > 0.0)
}

/// A direction over placements paired run by run: the signed-rank test of their differences
/// (zeros dropped, as scipy's `wilcoxon` does by default), agreeing when p < 0.05 and the
/// ranks lean the paper's way.
fn paired_direction(paper: f64, pairs: &[f64]) -> Score {
    let moved = pairs.iter().filter(|d| **d != 0.0).count();
    let least = crate::stats::paired::min_signed_rank_p(moved);
    if least >= DIRECTION_ALPHA {
        return Score::Unscored(format!(
            "{} pairs of placements, {moved} that differ, cannot decide: the least p they \
             can give is {}",
            pairs.len(),
            fmt_num(least)
        ));
    }
    let Some(t) = crate::stats::paired::signed_rank(pairs) else {
        return Score::Disagrees;
    };
    // W+ against its mean under no shift: above it, the arm's placements miss more.
    let lean = t.statistic - (moved * (moved + 1)) as f64 / 4.0;
    Score::of(t.p < DIRECTION_ALPHA && lean * paper > 0.0)
}

/// Whether the paper's own figures establish the direction of the change between them: the
/// arm's figure and the one it is compared with, each with its standard error (perf's `( +- X% )`
/// is the standard error of its runs' mean), by the z of their difference, two-sided at
/// [`DIRECTION_ALPHA`]. `Err`: why not, with the change and its standard error.
pub(crate) fn established((a, se_a): (f64, f64), (b, se_b): (f64, f64)) -> Result<(), String> {
    use statrs::distribution::{ContinuousCDF, Normal};
    let (d, se) = (a - b, (se_a * se_a + se_b * se_b).sqrt());
    let z = d / se;
    let p = 2.0 * Normal::standard().cdf(-z.abs());
    if se > 0.0 && p < DIRECTION_ALPHA {
        return Ok(());
    }
    Err(format!(
        "the paper's own spreads do not establish a direction: {} ± {} (z {z:.2}, p {}); shown",
        fmt_num(d),
        fmt_num(se),
        crate::core::num::fmt_p(p)
    ))
}

/// How the cells of one class fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassSummary {
    pub class: Class,
    pub cells: usize,
    /// Cells syscost measured a figure for.
    pub measured: usize,
    pub agree: usize,
    /// Measured cells it scores (a ratio too close to 1 to tell from it is not).
    #[serde(default)]
    pub scored: usize,
}

/// One cell as the summary counts it: its class, whether syscost measured it, and whether it
/// agrees (`None`: not scored).
pub(crate) type Counted = (Class, bool, Option<bool>);

/// Per class, from each cell's class, measurement and agreement.
pub(crate) fn summarise(cells: &[Counted]) -> Vec<ClassSummary> {
    Class::ALL
        .iter()
        .map(|&class| {
            let of: Vec<(bool, Option<bool>)> = cells
                .iter()
                .filter(|(c, _, _)| *c == class)
                .map(|(_, m, a)| (*m, *a))
                .collect();
            ClassSummary {
                class,
                cells: of.len(),
                measured: of.iter().filter(|(m, _)| *m).count(),
                scored: of.iter().filter(|(_, a)| a.is_some()).count(),
                agree: of.iter().filter(|(_, a)| *a == Some(true)).count(),
            }
        })
        .filter(|s| s.cells > 0)
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    fn model(class: Class, band: f64, slack: f64) -> Model {
        Model { class, band, slack }
    }

    fn one(v: f64) -> [f64; 1] {
        [v]
    }

    fn agrees(m: Model, paper: f64, ours: f64) -> Option<bool> {
        let boots = one(ours);
        let e = Evidence {
            boots: &boots,
            ..Evidence::default()
        };
        score(m, paper, ours, &e).agrees()
    }

    #[test]
    fn exact_counts_and_ratios_agree_by_their_bands() {
        let exact = model(Class::Exact, 1.0, 0.5);
        assert_eq!(agrees(exact, 20.0, 19.0), Some(true), "the edge");
        assert_eq!(agrees(exact, 20.0, 18.99), Some(false));
        assert_eq!(agrees(exact, -8.0, -7.1), Some(true));
        assert_eq!(agrees(exact, -8.0, -6.9), Some(false));
        for class in [
            Class::Shown,
            Class::Time,
            Class::Repeat,
            Class::Misprint,
            Class::NotReproducible,
        ] {
            assert_eq!(agrees(model(class, 1e9, 1e9), 1.0, 1.0), None, "{class:?}");
        }
        assert_eq!(rounding("2.39"), 0.005);
        assert_eq!(rounding("4,174,224,305"), 0.5);
        assert_eq!(rounding("~6.6*"), 0.05);
    }

    /// Ten boots' misses: 0.1 to 1.0 and one placement that crowded a set (12.0).
    const BOOTS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 12.0];

    fn modelled(paper: f64, boots: &[f64], rivals: &[f64], rivals_boots: &[f64]) -> Score {
        let m = model(Class::Modelled, 0.0, 0.05);
        let e = Evidence {
            boots,
            rivals,
            rivals_boots,
            ..Evidence::default()
        };
        score(m, paper, crate::stats::median(boots), &e)
    }

    #[test]
    fn a_modelled_figure_outside_the_middle_of_the_placements_fails() {
        // numpy.quantile(BOOTS, [0.1, 0.9]) == [0.19, 2.01]
        let (lo, hi) = modelled_range(&BOOTS).unwrap();
        assert!(
            (lo - 0.19).abs() < 1e-12 && (hi - 2.01).abs() < 1e-12,
            "{lo} {hi}"
        );
        assert_eq!(modelled(0.4, &BOOTS, &[], &[]), Score::Agrees);
        // Inside [min, max], which the old rule took: outside the middle 80%.
        assert_eq!(modelled(8.6, &BOOTS, &[], &[]), Score::Disagrees);
        assert_eq!(modelled(0.1, &BOOTS, &[], &[]), Score::Disagrees);
    }

    #[test]
    fn a_range_that_holds_the_other_arm_s_figure_too_is_not_agreement() {
        let wide = [0.05, 0.1, 1.0, 3.0, 6.0, 9.0, 12.0, 15.6];
        // The other arm's 8.6 lies in this arm's range as well as the paper's 0.4: swapping
        // the arms' labels would pass too.
        let s = modelled(0.4, &wide, &[8.6], &[]);
        let why = s.unscored().expect("not scored");
        assert!(
            why.contains("cannot tell the arms apart") && why.contains("8.6"),
            "{why}"
        );
        assert_eq!(s.agrees(), None);
        // A rival equal to the paper's figure within its rounding tells nothing apart.
        assert_eq!(modelled(0.4, &BOOTS, &[0.42], &[]), Score::Agrees);
        assert_eq!(modelled(0.4, &BOOTS, &[8.6], &[]), Score::Agrees);
    }

    #[test]
    fn a_near_zero_is_scored_only_where_some_arm_showed_more() {
        let zero = model(Class::Modelled, 0.0, rounding("~0"));
        let quiet = [0.0, 0.01, 0.02];
        let e = |rivals_boots| Evidence {
            boots: &quiet,
            rivals: &[6.6],
            rivals_boots,
            ..Evidence::default()
        };
        let nothing_anywhere = score(zero, 0.0, 0.01, &e(&[0.1, 0.2]));
        assert!(
            nothing_anywhere
                .unscored()
                .unwrap()
                .contains("could not have missed")
        );
        assert_eq!(score(zero, 0.0, 0.01, &e(&[3.0, 7.0])), Score::Agrees);
        // Under 0.5 only in the lowest tenth of the placements.
        let noisy = [0.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let e = Evidence {
            boots: &noisy,
            rivals_boots: &[7.0],
            ..Evidence::default()
        };
        assert_eq!(score(zero, 0.0, 1.0, &e), Score::Disagrees);
    }

    fn direction(paper: f64, arm: &[f64], base: &[f64]) -> Score {
        let e = Evidence {
            arms: (arm, base),
            ..Evidence::default()
        };
        score(model(Class::Direction, 0.0, 0.0), paper, 0.0, &e)
    }

    #[test]
    fn a_direction_is_decided_by_the_arms_boots_and_can_fail() {
        let before = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        let fell = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        // scipy 1.17.1: mannwhitneyu(fell, before).pvalue == 0.0021645021645021645
        assert_eq!(direction(-2.2, &fell, &before), Score::Agrees);
        assert_eq!(
            direction(2.2, &fell, &before),
            Score::Disagrees,
            "the other way"
        );
        // Most boots fell, one rose far: the medians moved, the ranks do not decide.
        let mixed = [1.0, 2.0, 3.0, 4.0, 13.0, 15.0];
        // scipy 1.17.1: mannwhitneyu(mixed, before).pvalue == 0.3939393939393939
        assert!((mann_whitney(&mixed, &before).unwrap().p - 0.3939393939393939).abs() < 1e-12);
        assert_eq!(direction(-2.2, &mixed, &before), Score::Disagrees);
        let two = direction(-2.2, &fell[..2], &before[..2]);
        assert!(two.unscored().unwrap().contains("cannot decide"), "{two:?}");
    }

    fn paired(paper: f64, pairs: &[f64]) -> Score {
        let e = Evidence {
            arms: (&[1.0], &[1.0]),
            pairs,
            ..Evidence::default()
        };
        score(model(Class::Direction, 0.0, 0.0), paper, 0.0, &e)
    }

    #[test]
    fn a_direction_over_placements_paired_run_by_run_can_fail() {
        // Six placements fell, two landed alike (dropped, as scipy's wilcoxon does).
        let fell = [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, 0.0, 0.0];
        // Zeros dropped, every sign flip of the rest (stats::paired): scipy 1.17.1's
        // wilcoxon(fell).pvalue == 0.03125 (method="auto")
        let t = crate::stats::paired::signed_rank(&fell).unwrap();
        assert!((t.p - 0.03125).abs() < 1e-12, "{t:?}");
        assert_eq!(paired(-2.22, &fell), Score::Agrees);
        assert_eq!(paired(2.22, &fell), Score::Disagrees, "the other way");
        // Tied misses (whole counts), one that rose: 12 pairs, every sign flip.
        let tied = [
            -9.0, -8.0, 0.0, 0.0, 0.0, -8.0, -9.0, 7.0, -8.0, 0.0, -9.0, -8.0,
        ];
        // scipy 1.17.1: wilcoxon(tied).pvalue == 0.015625 (method="auto")
        let t = crate::stats::paired::signed_rank(&tied).unwrap();
        assert!((t.p - 0.015625).abs() < 1e-12, "{t:?}");
        assert_eq!(paired(-2.22, &tied), Score::Agrees);
        // Five placements that differ can give no p below 2 / 2^5: not scored, said why.
        let five = paired(-2.22, &fell[1..]);
        assert!(
            five.unscored().unwrap().contains("5 that differ"),
            "{five:?}"
        );
    }

    // The post's final table: L1-dcache-load-misses 7.99 ( +- 70.71% ) before, 5.77
    // ( +- 84.57% ) patched: -2.22 ± 7.47, z -0.30; scipy 1.17.1:
    // 2 * norm.cdf(-abs(-2.22 / hypot(7.99 * 0.7071, 5.77 * 0.8457))) == 0.7661...
    // The series' perf stat: 66,407,857 ( +- 1.50% ) to 63,612,108 ( +- 0.50% ) over 10^7
    // calls: z -2.67, p 0.0076.
    #[test]
    fn a_direction_is_scored_only_where_the_paper_s_spreads_establish_it() {
        // perf's spreads as printed (70.71%: the post's, not 1/sqrt(2)).
        let (before, patched) = (70.71 / 100.0, 84.57 / 100.0);
        let post = established((5.77, 5.77 * patched), (7.99, 7.99 * before));
        let why = post.unwrap_err();
        assert!(
            why.contains("-2.22 ± 7.47") && why.contains("z -0.30"),
            "{why}"
        );
        let series = established(
            (6.3612108, 6.3612108 * 0.005),
            (6.6407857, 6.6407857 * 0.015),
        );
        assert_eq!(series, Ok(()));
        let e = Evidence {
            arms: (&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]),
            unestablished: Some(&why),
            ..Evidence::default()
        };
        let s = score(model(Class::Direction, 0.0, 0.0), -2.22, 0.0, &e);
        assert_eq!(
            s,
            Score::Unscored(why),
            "shown with its reason, not scored 'no'"
        );
    }

    #[test]
    fn a_null_ratio_never_agrees_with_an_effect() {
        let ratio = model(Class::Ratio, 0.0, 0.0);
        // The RFC's 64-byte build: 8% fewer misses; 10% cannot tell that from no change
        // unless the boots resolve a difference from 1.
        assert_eq!(agrees(ratio, 0.92, 1.0), None);
        assert_eq!(agrees(ratio, 1.0, 1.0), None, "sizes at 1 by construction");
        let near = |paper: f64, ours: f64, range: (f64, f64)| {
            let e = Evidence {
                ratio_range: Some(range),
                ..Evidence::default()
            };
            score(ratio, paper, ours, &e)
        };
        // x0.914 over boots of 0.913 and 0.914 against the RFC's x0.918: resolved, agrees.
        assert_eq!(near(0.918, 0.914, (0.913, 0.914)), Score::Agrees);
        // The other side of 1, resolved: disagrees.
        assert_eq!(near(0.918, 1.02, (1.01, 1.03)), Score::Disagrees);
        let open = near(0.918, 0.99, (0.97, 1.01));
        assert!(open.unscored().unwrap().contains("span 1"), "{open:?}");
        // The series' x2.94: a null result does not agree, a close one does.
        assert_eq!(agrees(ratio, 2.94, 1.0), Some(false));
        assert_eq!(agrees(ratio, 2.94, 3.2), Some(true));
        // The RFC's 256-byte build on AMD: x1.104; a tight null result, 1.0 within 10% of it,
        // does not agree (the rule before: within 10%, it did).
        assert_eq!(near(1.104, 1.0, (0.999, 1.001)), Score::Disagrees);
        let wide = near(1.104, 1.0, (0.9, 1.2));
        assert!(
            wide.unscored().unwrap().contains("and the paper's ratio"),
            "{wide:?}"
        );
        assert_eq!(near(1.104, 1.08, (1.07, 1.09)), Score::Agrees);
    }

    #[test]
    fn classes_are_counted_apart() {
        let cells = [
            (Class::Exact, true, Some(true)),
            (Class::Exact, true, Some(false)),
            (Class::Exact, false, None),
            (Class::Ratio, true, None),
            (Class::NotReproducible, false, None),
        ];
        let s = summarise(&cells);
        assert_eq!(s.len(), 3, "classes without cells are left out");
        assert_eq!(
            (s[0].cells, s[0].measured, s[0].scored, s[0].agree),
            (3, 2, 2, 1)
        );
        assert_eq!(
            (s[1].class, s[1].measured, s[1].scored),
            (Class::Ratio, 1, 0)
        );
        assert_eq!((s[2].class, s[2].measured), (Class::NotReproducible, 0));
    }
}
