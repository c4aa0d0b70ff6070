//! Exact counts compared: the range rule for figures that do not vary with the host (an
//! emulator's instruction counts, the interrupts in their windows left out). Such a count
//! moves between boots only by what the measured work itself does differently, so a
//! significance test has nothing to model: two boots per arm tell their boot-to-boot range, and a change is
//! a difference that every pair of boots shows, larger than either arm's own range and than the
//! counting's resolution. Nothing here is a p-value; the decision is on the interval of every
//! cross-boot change (`Interval`), as the other tests' decisions are on theirs.

use super::Interval;

/// Boots per arm the rule needs: two give an arm's boot-to-boot range.
pub(crate) const MIN_BOOTS: usize = 2;

/// The evidence of the range rule for one figure of two arms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RangeRule {
    /// The change of the means, percent of the baseline's.
    pub delta_pct: f64,
    /// The smallest and the largest change between a boot of the baseline and a boot of the
    /// other arm, percent of that baseline boot.
    pub cross: Interval,
    /// The larger of the two arms' boot-to-boot ranges, percent of their means.
    pub own_range_pct: f64,
    /// The resolution below which counts are taken as equal, percent.
    pub floor_pct: f64,
}

impl RangeRule {
    /// The two arms differ: every cross-boot change is beyond both the arms' own range and the
    /// resolution, on the same side of zero.
    pub(crate) fn apart(&self) -> bool {
        let bar = self.bar_pct();
        self.cross.lo > bar || self.cross.hi < -bar
    }

    /// Every cross-boot change is within the resolution.
    pub(crate) fn equal(&self) -> bool {
        self.cross.inside(self.floor_pct)
    }

    /// What a change must exceed: the larger of the arms' own range and the resolution.
    pub(crate) fn bar_pct(&self) -> f64 {
        self.own_range_pct.max(self.floor_pct)
    }
}

/// The range rule for `base` against `other` (one value per boot), with `floor_pct` the
/// resolution. `None` when either arm has fewer than two boots (no range to compare with) or
/// the baseline is not positive.
pub(crate) fn range_rule(base: &[f64], other: &[f64], floor_pct: f64) -> Option<RangeRule> {
    if base.len() < MIN_BOOTS
        || other.len() < MIN_BOOTS
        || base.iter().any(|&a| a <= 0.0 || a.is_nan())
    {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let range_pct = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        100.0 * (hi - lo) / mean(v).abs()
    };
    let changes = base
        .iter()
        .flat_map(|a| other.iter().map(move |b| 100.0 * (b - a) / a));
    let cross = changes.fold(Interval::new(f64::MAX, f64::MIN), |i, c| {
        Interval::new(i.lo.min(c), i.hi.max(c))
    });
    Some(RangeRule {
        delta_pct: 100.0 * (mean(other) - mean(base)) / mean(base),
        cross,
        own_range_pct: range_pct(base).max(range_pct(other)),
        floor_pct,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_one_percent_change_with_two_boots_each_is_apart() {
        // Kernel instructions per getpid as two boots of each arm count them.
        let r = range_rule(&[305.80, 305.74], &[308.86, 308.81], 0.1).unwrap();
        assert!(r.apart(), "{r:?}");
        assert!(!r.equal());
        assert!((r.delta_pct - 1.0).abs() < 0.02, "{r:?}");
        // Every pair: the smallest change is 308.81 against 305.80.
        assert!((r.cross.lo - 100.0 * (308.81 - 305.80) / 305.80).abs() < 1e-12);
    }

    #[test]
    fn boots_of_one_kernel_are_equal_never_apart() {
        let r = range_rule(&[305.80, 305.74], &[305.87, 305.79], 0.1).unwrap();
        assert!(!r.apart() && r.equal(), "{r:?}");
    }

    #[test]
    fn a_difference_inside_an_arm_s_own_range_is_not_a_change() {
        // Apart by 0.5%, but one arm's boots disagree by 2%: no change called.
        let r = range_rule(&[100.0, 102.0], &[103.0, 103.1], 0.1).unwrap();
        assert!(r.cross.lo > 0.0);
        assert!(!r.apart() && !r.equal(), "{r:?}");
        assert!((r.own_range_pct - 200.0 / 101.0).abs() < 1e-9);
    }

    #[test]
    fn one_boot_has_no_range() {
        assert_eq!(range_rule(&[305.8], &[308.8, 308.9], 0.1), None);
        assert_eq!(range_rule(&[0.0, 0.0], &[1.0, 1.0], 0.1), None);
    }
}
