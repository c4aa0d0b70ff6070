//! Stage 5 of a comparison: with more than two variants, their ranking by the primary metric's
//! median (as the alignment RFC ranked its builds).

use super::{Rank, Variant};

pub(super) fn rank(shown: &[Variant], primary: &str) -> Vec<Rank> {
    if shown.len() <= 2 {
        return Vec::new();
    }
    let median = |v: &Variant| Some(v.metric(primary)?.summary.as_ref()?.median);
    let Some(base) = median(&shown[0]) else {
        return Vec::new();
    };
    let mut r: Vec<(usize, f64)> = shown
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((i, median(v)?)))
        .collect();
    r.sort_by(|a, b| a.1.total_cmp(&b.1));
    r.into_iter()
        .enumerate()
        .map(|(rank, (i, med))| Rank {
            rank: rank + 1,
            variant: i,
            label: shown[i].label.clone(),
            median: med,
            delta_pct: 100.0 * (med - base) / base,
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::compare::tests::variant;

    #[test]
    fn many_variants_rank_by_median_and_two_do_not() {
        let v = [
            variant("base", &[10.0, 10.0]),
            variant("slow", &[12.0, 12.0]),
            variant("fast", &[9.0, 9.0]),
        ];
        let r = rank(&v, "time");
        let order: Vec<&str> = r.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(order, ["fast", "base", "slow"]);
        assert!((r[2].delta_pct - 20.0).abs() < 1e-9);
        assert!(rank(&v[..2], "time").is_empty());
    }
}
