//! Stage 3 of a comparison: Holm-Bonferroni over two families, the primary metric across
//! variants and every other metric across variants.

use super::Delta;
use crate::stats::significance::holm;

/// Set each tested delta's `p_adjusted`; returns each delta's family size (0 when untested).
pub(super) fn holm_families(deltas: &mut [Delta], primary: &str) -> Vec<usize> {
    let mut family_size = vec![0usize; deltas.len()];
    for is_primary in [true, false] {
        let idx: Vec<usize> = deltas
            .iter()
            .enumerate()
            .filter(|(_, d)| (d.metric == primary) == is_primary && d.p.is_some())
            .map(|(i, _)| i)
            .collect();
        let ps: Vec<f64> = idx.iter().filter_map(|&i| deltas[i].p).collect();
        for (i, adj) in idx.iter().zip(holm(&ps)) {
            deltas[*i].p_adjusted = Some(adj);
            family_size[*i] = idx.len();
        }
    }
    family_size
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::compare::Decision;

    fn delta(metric: &str, variant: usize, p: Option<f64>) -> Delta {
        Delta {
            metric: metric.into(),
            unit: String::new(),
            variant,
            base_median: 1.0,
            base_mean: 1.0,
            median: 1.0,
            mean: 1.0,
            delta_pct: None,
            ci_pct: None,
            ci_equivalence_pct: None,
            n: 6,
            p,
            p_adjusted: None,
            effect_sigma: None,
            base_pstdev_pct: 0.0,
            decision: Decision::NoTest,
            verdict: String::new(),
        }
    }

    // statsmodels.stats.multitest.multipletests([0.01, 0.04], method="holm")[1] == [0.02, 0.04]
    #[test]
    fn the_primary_metric_is_a_family_of_its_own() {
        let mut d = vec![
            delta("time", 1, Some(0.01)),
            delta("page-faults", 1, Some(0.5)),
            delta("time", 2, Some(0.04)),
            delta("page-faults", 2, None),
        ];
        let sizes = holm_families(&mut d, "time");
        assert_eq!(sizes, vec![2, 1, 2, 0]);
        assert_eq!(d[0].p_adjusted, Some(0.02));
        assert_eq!(d[2].p_adjusted, Some(0.04));
        assert_eq!(d[1].p_adjusted, Some(0.5), "alone in its family");
        assert_eq!(d[3].p_adjusted, None);
    }
}
