//! Pearson and Spearman correlation with two-sided p-values (Student's t with n - 2 degrees of
//! freedom, as scipy's pearsonr and spearmanr report them).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Correlation {
    pub n: usize,
    pub pearson_r: f64,
    pub pearson_p: f64,
    pub spearman_rho: f64,
    pub spearman_p: f64,
}

fn r_of(x: &[f64], y: &[f64]) -> Option<f64> {
    let (mx, my) = (super::mean(x), super::mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let r = sxy / (sxx * syy).sqrt();
    // Values near f64's range overflow the sums: no usable r.
    r.is_finite().then(|| r.clamp(-1.0, 1.0))
}

fn p_of(r: f64, n: usize) -> f64 {
    p_df(r, (n - 2) as f64)
}

fn p_df(r: f64, df: f64) -> f64 {
    if r.abs() >= 1.0 {
        return 0.0;
    }
    let t = r * (df / (1.0 - r * r)).sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).expect("positive degrees of freedom");
    (2.0 * dist.sf(t.abs())).min(1.0)
}

/// Correlate paired values. `None` for fewer than three pairs, unequal lengths, or a constant
/// series (r undefined).
pub(crate) fn correlate(x: &[f64], y: &[f64]) -> Option<Correlation> {
    if x.len() != y.len() || x.len() < 3 {
        return None;
    }
    let r = r_of(x, y)?;
    let rho = r_of(
        &super::significance::ranks(x).0,
        &super::significance::ranks(y).0,
    )?;
    Some(Correlation {
        n: x.len(),
        pearson_r: r,
        pearson_p: p_of(r, x.len()),
        spearman_rho: rho,
        spearman_p: p_of(rho, x.len()),
    })
}

/// Correlate within groups (files): each group's values are centred on the group's mean
/// (Spearman: its ranks within the group on their mean), which is the partial correlation
/// controlling for the group, and the p-values lose one degree of freedom per group beyond the
/// first (Student's t with n - 1 - k). Pooling groups whose means differ makes a correlation of
/// the group means, not of the runs: two files with independent x and y within each gave
/// p < 0.05 in 100 of 100 trials pooled.
pub(crate) fn correlate_within(x: &[f64], y: &[f64], group: &[usize]) -> Option<Correlation> {
    let n = x.len();
    if y.len() != n || group.len() != n {
        return None;
    }
    let mut ids: Vec<usize> = group.to_vec();
    ids.sort();
    ids.dedup();
    let k = ids.len();
    if n < k + 2 {
        return None;
    }
    let centred = |v: &[f64], ranked: bool| -> Vec<f64> {
        let mut out = vec![0.0; n];
        for g in &ids {
            let idx: Vec<usize> = (0..n).filter(|&i| group[i] == *g).collect();
            let vals: Vec<f64> = idx.iter().map(|&i| v[i]).collect();
            let vals = if ranked {
                super::significance::ranks(&vals).0
            } else {
                vals
            };
            let m = super::mean(&vals);
            for (i, val) in idx.iter().zip(vals) {
                out[*i] = val - m;
            }
        }
        out
    };
    let r = r_of(&centred(x, false), &centred(y, false))?;
    let rho = r_of(&centred(x, true), &centred(y, true))?;
    let df = (n - 1 - k) as f64;
    Some(Correlation {
        n,
        pearson_r: r,
        pearson_p: p_df(r, df),
        spearman_rho: rho,
        spearman_p: p_df(rho, df),
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    // Reference values: Python 3.11, SciPy 1.17.1:
    //   x = [1.0, 2.1, 2.9, 4.2, 5.1, 5.8]; y = [2.0, 3.9, 6.5, 7.7, 10.4, 11.0]
    //   stats.pearsonr(x, y)  -> r=0.9900217324076189, p=0.0001488519889995521
    //   stats.spearmanr(x, y) -> rho=1.0, p=0.0
    //   x2 = [1, 2, 3, 4, 5, 6, 7]; y2 = [3, 1, 4, 1, 5, 9, 2]
    //   stats.pearsonr(x2, y2)  -> r=0.38302295861520796, p=0.3963884814333045
    //   stats.spearmanr(x2, y2) -> rho=0.3243374865704013, p=0.477885479739931
    #[test]
    fn matches_scipy() {
        let c = correlate(
            &[1.0, 2.1, 2.9, 4.2, 5.1, 5.8],
            &[2.0, 3.9, 6.5, 7.7, 10.4, 11.0],
        )
        .unwrap();
        assert!(close(c.pearson_r, 0.9900217324076189, 1e-12));
        assert!(
            close(c.pearson_p, 0.0001488519889995521, 1e-6),
            "{}",
            c.pearson_p
        );
        assert_eq!(c.spearman_rho, 1.0);
        assert_eq!(c.spearman_p, 0.0);
        let x2 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        let y2 = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0];
        let c = correlate(&x2, &y2).unwrap();
        assert!(close(c.pearson_r, 0.38302295861520796, 1e-12));
        assert!(close(c.pearson_p, 0.3963884814333045, 1e-6));
        assert!(close(c.spearman_rho, 0.3243374865704013, 1e-12));
        assert!(close(c.spearman_p, 0.477885479739931, 1e-6));
    }

    #[test]
    fn degenerate_inputs() {
        assert!(correlate(&[1.0, 2.0], &[1.0, 2.0]).is_none());
        assert!(correlate(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]).is_none());
        assert!(correlate(&[1.0, 2.0, 3.0], &[1.0, 2.0]).is_none());
    }

    // x = [1, 2, 3, 4, 11, 12.5, 13, 14, 15.5], y = [2.1, 1.9, 3.2, 3.9, 20, 21.5, 20.9, 23,
    // 22.8], groups [0 x4, 1 x5]. scipy 1.17.1: pooled, pearsonr = 0.9874375715170502. Within:
    // the Pearson r of the residuals of x and y on the group dummies (numpy lstsq, then
    // scipy.stats.pearsonr) = 0.89894110224807; its p with n - 1 - k = 6 degrees of freedom,
    // 2 * scipy.stats.t.sf(t, 6) = 0.00238864527259728; Spearman of centred within-group ranks
    // 0.8 with p 0.017120000000000017.
    #[test]
    fn within_groups_is_the_partial_correlation() {
        let x = [1.0, 2.0, 3.0, 4.0, 11.0, 12.5, 13.0, 14.0, 15.5];
        let y = [2.1, 1.9, 3.2, 3.9, 20.0, 21.5, 20.9, 23.0, 22.8];
        let g = [0, 0, 0, 0, 1, 1, 1, 1, 1];
        assert!((correlate(&x, &y).unwrap().pearson_r - 0.9874375715170502).abs() < 1e-12);
        let c = correlate_within(&x, &y, &g).unwrap();
        assert!(close(c.pearson_r, 0.89894110224807, 1e-10), "{c:?}");
        assert!(close(c.pearson_p, 0.00238864527259728, 1e-6), "{c:?}");
        assert!(close(c.spearman_rho, 0.8, 1e-12), "{c:?}");
        assert!(close(c.spearman_p, 0.017120000000000017, 1e-6), "{c:?}");
        // Three points in two groups leave no degree of freedom.
        assert!(correlate_within(&x[2..5], &y[2..5], &g[2..5]).is_none());
    }
}
