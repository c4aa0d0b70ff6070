//! What a paper's text claims beyond its tables, each put to a test that can fail: the claim in
//! the paper's own words, where it is, and a test over syscost's figures (one file per kind of
//! test, and a line in [`Test::check`]). A test decides on its statistic and says so: a claim
//! agrees or disagrees, or is inconclusive with the figure that could not decide, or not
//! measured with what was missing; none is a pass by default.

pub(crate) mod aligned;
pub(crate) mod capacity;
pub(crate) mod correlates;
pub(crate) mod exceeds;
pub(crate) mod least;
pub(crate) mod profiled;
pub(crate) mod ranks;
pub(crate) mod ratio;
pub(crate) mod rises;
pub(crate) mod shares;
pub(crate) mod steeper;

use super::Figures;
use super::paper::Paper;
use serde::{Deserialize, Serialize};

/// One claim of the paper's text.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Claim {
    pub id: String,
    /// The paper's own words.
    pub quote: String,
    /// Where they are in the document.
    pub source: String,
    pub test: Test,
}

/// A claim's test, by kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum Test {
    Aligned(aligned::Aligned),
    Capacity(capacity::Capacity),
    Correlates(correlates::Correlates),
    Exceeds(exceeds::Exceeds),
    Least(least::Least),
    Profiled(profiled::Profiled),
    Ranks(ranks::Ranks),
    Ratio(ratio::Ratio),
    Rises(rises::Rises),
    Shares(shares::Shares),
    Steeper(steeper::Steeper),
}

impl Test {
    /// The registry of claim tests: one line each.
    fn check(&self) -> &dyn Check {
        match self {
            Test::Aligned(t) => t,
            Test::Capacity(t) => t,
            Test::Correlates(t) => t,
            Test::Exceeds(t) => t,
            Test::Least(t) => t,
            Test::Profiled(t) => t,
            Test::Ranks(t) => t,
            Test::Ratio(t) => t,
            Test::Rises(t) => t,
            Test::Shares(t) => t,
            Test::Steeper(t) => t,
        }
    }

    /// Whether its test reads the builds' function alignment (from their vmlinux).
    pub(crate) fn needs_alignment(&self) -> bool {
        matches!(self, Test::Aligned(_) | Test::Least(_) | Test::Ranks(_))
    }
}

/// A kind of test of a claim.
pub(crate) trait Check {
    /// What is tested and how it decides, in words.
    fn rule(&self) -> String;
    /// What syscost found in `f` and the verdict, with a table of its own where it shows one
    /// (`p`: the paper, for its figures).
    fn run(&self, p: &Paper, f: &Figures) -> Outcome;
}

/// What a claim's test found.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    pub found: String,
    pub verdict: Option<Verdict>,
    pub detail: Option<Detail>,
}

impl Outcome {
    pub(crate) fn of(found: String, verdict: Verdict) -> Outcome {
        Outcome {
            found,
            verdict: Some(verdict),
            detail: None,
        }
    }

    /// Nothing syscost measured holds what the test needs: `why`.
    pub(crate) fn missing(why: String) -> Outcome {
        Outcome::of(String::new(), Verdict::NotMeasured(why))
    }

    /// Two arms' figures are needed, a boot each at least.
    pub(crate) fn two_arms_missing(arm: &str, over: &str, metrics: &[String]) -> Outcome {
        Outcome::missing(format!(
            "{arm} and {over} need a boot each with {}",
            metrics.join(" + ")
        ))
    }
}

/// A claim's own table: a row per arm, each cell as shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Detail {
    pub title: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A claim put to syscost's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tested {
    pub id: String,
    pub quote: String,
    pub source: String,
    /// The test and how it decides.
    pub rule: String,
    /// What syscost found.
    pub found: String,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
}

/// How a claim fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "is", content = "why")]
pub(crate) enum Verdict {
    Agrees,
    Disagrees,
    /// The test ran on syscost's figures and could not decide: why.
    Inconclusive(String),
    /// syscost measured nothing the test needs: what is missing.
    NotMeasured(String),
}

impl Verdict {
    /// In a word or two, then why where there is a why.
    pub(crate) fn said(&self) -> String {
        match self {
            Verdict::Agrees => "agrees".into(),
            Verdict::Disagrees => "disagrees".into(),
            Verdict::Inconclusive(why) => format!("inconclusive: {why}"),
            Verdict::NotMeasured(why) => format!("not measured: {why}"),
        }
    }

    /// A test at `alpha` of a statistic whose sign the claim names: agrees when `p` is below it
    /// the claim's way (`sign` > 0), disagrees when it is below it the other way, and is
    /// inconclusive otherwise, saying `what`.
    pub(crate) fn of_test(sign: f64, p: f64, alpha: f64, what: &str) -> Verdict {
        match (p < alpha, sign > 0.0) {
            (true, true) => Verdict::Agrees,
            (true, false) => Verdict::Disagrees,
            (false, _) => Verdict::Inconclusive(format!(
                "{what}: p {} is not below {alpha}",
                crate::core::num::fmt_p(p)
            )),
        }
    }
}

/// A correlation's outcome: `what` (`r`, `rho`) at `value` with its p over `n` `units`, `more`
/// after them, agreeing when positive at [`ALPHA`].
pub(crate) fn correlated(what: &str, (value, p): (f64, f64), n: usize, units: &str) -> Outcome {
    let found = format!(
        "{what} {value:.2} (p {}) over {n} {units}",
        crate::core::num::fmt_p(p)
    );
    let said = format!("{what} {value:.2}");
    Outcome::of(found, Verdict::of_test(value, p, ALPHA, &said))
}

/// The level every claim's test decides at.
pub(crate) const ALPHA: f64 = 0.05;

/// A build named for an alignment is taken to be so aligned when at least this share of the
/// functions gcc aligns at all start on its boundary: gcc leaves the ones it takes for cold as
/// they fall (7.6% of the vanilla 6.1's here), in every build, so those it aligns at all are
/// the most any build read puts on 16 bytes.
pub(crate) const TOOK: f64 = 0.95;

/// Two arms' figures as a ratio: the ratio of their medians over boots, and the range of the
/// ratio of every boot of one to every boot of the other (what the boots resolve: a range that
/// excludes 1 is a difference every pairing of their boots shows). `None` when either has no
/// boot or a zero.
pub(crate) fn cross_ratio(arm: &[f64], over: &[f64]) -> Option<(f64, (f64, f64))> {
    if arm.is_empty() || over.is_empty() || over.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let ratios = arm.iter().flat_map(|a| over.iter().map(move |o| a / o));
    let lo = ratios.clone().fold(f64::INFINITY, f64::min);
    let hi = ratios.fold(f64::NEG_INFINITY, f64::max);
    let m = crate::stats::median(over);
    (m > 0.0).then(|| (crate::stats::median(arm) / m, (lo, hi)))
}

/// A ratio with its range, as the claims show it: `x1.153 [1.151, 1.155]`.
pub(crate) fn ratio_said(r: f64, (lo, hi): (f64, f64)) -> String {
    format!("x{r:.3} [{lo:.3}, {hi:.3}]")
}

/// The share of a build's functions gcc aligns at all: the most any build read puts on 16 bytes.
pub(crate) fn aligned_at_all(f: &Figures) -> f64 {
    (f.alignments.iter())
        .map(|(_, a)| a.share(16))
        .fold(0.0, f64::max)
}

/// One build of a series compared by a claim: its arm, the boundary it is named for (none: an
/// -Os build), and the paper's figure for it (`TABLE / ROW / COLUMN`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Build {
    pub arm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
}

impl Build {
    /// Why the build is not what its name says, when its functions are read and too few start
    /// on its boundary: `a512: 71% of functions on 512 bytes`.
    pub(crate) fn not_aligned(&self, f: &Figures) -> Option<String> {
        let bytes = self.bytes?;
        let a = &f.alignments.iter().find(|(a, _)| *a == self.arm)?.1;
        let share = a.share(bytes);
        let at_all = aligned_at_all(f);
        (share < TOOK * at_all).then(|| {
            format!(
                "{}: {:.1}% of functions on {bytes} bytes, of the {:.1}% gcc aligns",
                self.arm,
                100.0 * share,
                100.0 * at_all
            )
        })
    }

    /// The share of the build's functions on its boundary, as a cell (`-` when not read).
    pub(crate) fn share_said(&self, f: &Figures) -> String {
        let a = f.alignments.iter().find(|(a, _)| *a == self.arm);
        match (a, self.bytes) {
            (Some((_, a)), Some(b)) => format!("{:.1}%", 100.0 * a.share(b)),
            _ => "-".into(),
        }
    }
}

/// Each of the paper's claims put to `f`.
pub(crate) fn tested(p: &Paper, f: &Figures) -> Vec<Tested> {
    p.claims
        .iter()
        .map(|c| {
            let check = c.test.check();
            let o = check.run(p, f);
            Tested {
                id: c.id.clone(),
                quote: c.quote.clone(),
                source: c.source.clone(),
                rule: check.rule(),
                found: o.found,
                verdict: o
                    .verdict
                    .unwrap_or_else(|| Verdict::NotMeasured("no verdict".into())),
                detail: o.detail,
            }
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_ratio_s_range_is_every_boot_over_every_boot() {
        let (r, (lo, hi)) = cross_ratio(&[110.0, 120.0], &[100.0, 105.0]).unwrap();
        assert!((r - 115.0 / 102.5).abs() < 1e-12);
        assert!((lo - 110.0 / 105.0).abs() < 1e-12 && (hi - 1.2).abs() < 1e-12);
        assert_eq!(cross_ratio(&[1.0], &[]), None);
        assert_eq!(cross_ratio(&[1.0], &[0.0]), None);
    }

    #[test]
    fn a_test_agrees_only_below_alpha_and_the_claim_s_way() {
        assert_eq!(Verdict::of_test(0.5, 0.01, ALPHA, "r"), Verdict::Agrees);
        assert_eq!(Verdict::of_test(-0.5, 0.01, ALPHA, "r"), Verdict::Disagrees);
        let v = Verdict::of_test(0.5, 0.2, ALPHA, "r 0.12");
        assert!(
            v.said()
                .starts_with("inconclusive: r 0.12: p 0.2000 is not below 0.05"),
            "{v:?}"
        );
    }
}
