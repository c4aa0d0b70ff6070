//! Which significance test a comparison uses ([`TestKind`]), and the registry of their
//! implementations: one line per family of tests. The trait they implement is in
//! [`super::significance`], which the families import; this file imports the families.

use super::significance::SignificanceTest;
use serde::{Deserialize, Serialize};

/// Which significance test to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Mann-Whitney U (rank-based; no normality assumed): unpaired runs or boots.
    MannWhitney,
    /// Wilcoxon signed-rank on the per-round changes (rank-based), with the Hodges-Lehmann
    /// interval: paired rounds (ab, probe).
    SignedRank,
    /// Welch's unequal-variance t-test.
    Welch,
    /// Student's t: Welch's unpaired, the paired t on per-round log ratios when interleaved.
    T,
}

impl TestKind {
    /// The test's implementation: the registry of statistical tests, one line each.
    pub(crate) fn test(self) -> &'static dyn SignificanceTest {
        match self {
            TestKind::MannWhitney | TestKind::SignedRank => &super::rank_tests::RANKS,
            TestKind::Welch | TestKind::T => &super::t_tests::T,
        }
    }
}
