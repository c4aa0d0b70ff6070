//! Least squares of one variable on another: the audit sweep's cost per rule and the line under
//! a correlation's scatter plot.

use super::slope::ratio;
use super::{mean, t_critical};

/// A least-squares line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Line {
    pub slope: f64,
    /// 95% CI of the slope (Student t, n - 2 degrees of freedom).
    pub slope_ci95: (f64, f64),
    pub intercept: f64,
    pub r2: f64,
}

/// Least squares of `y` on `x` with the slope's 95% CI and R²; `None` for fewer than three
/// points or a constant `x`.
pub(crate) fn fit(x: &[f64], y: &[f64]) -> Option<Line> {
    let n = x.len();
    if n < 3 || n != y.len() {
        return None;
    }
    let (mx, my) = (mean(x), mean(y));
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let (slope, intercept) = whole_line(x, y).unwrap_or_else(|| (sxy / sxx, my - (sxy / sxx) * mx));
    let ssr: f64 = x
        .iter()
        .zip(y)
        .map(|(a, b)| (b - (intercept + slope * a)).powi(2))
        .sum();
    let sst: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    let r2 = if sst > 0.0 { 1.0 - ssr / sst } else { 1.0 };
    let se = (ssr / (n as f64 - 2.0) / sxx).sqrt();
    let t = t_critical(0.95, n as f64 - 2.0);
    Some(Line {
        slope,
        slope_ci95: (slope - t * se, slope + t * se),
        intercept,
        r2,
    })
}

/// The 95% confidence band of the mean response of the line `intercept + slope x` fitted to
/// the points (`x`, `y`), at each of `at`: (lower, upper), Student t with n - 2 degrees of
/// freedom. `None` for fewer than three points or a constant `x`.
pub(crate) fn mean_band(
    (intercept, slope): (f64, f64),
    x: &[f64],
    y: &[f64],
    at: &[f64],
) -> Option<Vec<(f64, f64)>> {
    let n = x.len() as f64;
    let mx = mean(x);
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    if x.len() < 3 || x.len() != y.len() || sxx == 0.0 {
        return None;
    }
    let ssr: f64 = (x.iter().zip(y))
        .map(|(a, b)| (b - (intercept + slope * a)).powi(2))
        .sum();
    let se = (ssr / (n - 2.0)).sqrt();
    let t = t_critical(0.95, n - 2.0);
    let band = at.iter().map(|a| {
        let fit = intercept + slope * a;
        let half = t * se * (1.0 / n + (a - mx).powi(2) / sxx).sqrt();
        (fit - half, fit + half)
    });
    Some(band.collect())
}

/// The slope and intercept in integers, when every x and y is a whole number (rule counts
/// and exact counts per operation): then a whole slope comes out whole, where the means'
/// rounding in floating point left 19.000000000000004 for 19 instructions a rule.
fn whole_line(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let int = |v: f64| (v.fract() == 0.0 && v.abs() < 1e12).then_some(v as i64 as i128);
    let (mut sx, mut sy, mut sxx, mut sxy) = (0i128, 0i128, 0i128, 0i128);
    for (a, b) in x.iter().zip(y) {
        let (a, b) = (int(*a)?, int(*b)?);
        (sx, sy, sxx, sxy) = (sx + a, sy + b, sxx + a * a, sxy.checked_add(a * b)?);
    }
    let n = x.len() as i128;
    let dxx = n.checked_mul(sxx)?.checked_sub(sx.checked_mul(sx)?)?;
    let dxy = n.checked_mul(sxy)?.checked_sub(sx.checked_mul(sy)?)?;
    // Too large for 128 bits (counts of 10^12 times thousands of runs): floating point then.
    let a = sy.checked_mul(dxx)?.checked_sub(dxy.checked_mul(sx)?)?;
    let b = n.checked_mul(dxx)?;
    (dxx > 0).then(|| (ratio(dxy, dxx), ratio(a, b)))
}

#[cfg(test)]
mod unit {
    use super::*;

    // scipy 1.17.1: with x = [0, 0, 16, 16, 32, 32], y = [10, 11, 18, 19, 26, 27], linregress
    // gives 10.5 + 0.5 x, the residuals' sum of squares is 1.5 and scipy.stats.t.ppf(0.975, 4)
    // = 2.7764451051977934: at x = 16 the band is 18.5 -+ t * sqrt(1.5 / 4) * sqrt(1/6) =
    // [17.80588872370055, 19.19411127629945], at x = 0 [9.402513708643646, 11.597486291356354].
    #[test]
    fn the_mean_response_band_is_student_s() {
        let x = [0.0, 0.0, 16.0, 16.0, 32.0, 32.0];
        let y = [10.0, 11.0, 18.0, 19.0, 26.0, 27.0];
        let l = fit(&x, &y).unwrap();
        let b = mean_band((l.intercept, l.slope), &x, &y, &[16.0, 0.0]).unwrap();
        let want = [
            (17.80588872370055, 19.19411127629945),
            (9.402513708643646, 11.597486291356354),
        ];
        for (got, want) in b.iter().zip(want) {
            let close = (got.0 - want.0).abs() < 1e-9 && (got.1 - want.1).abs() < 1e-9;
            assert!(close, "{b:?}");
        }
        assert!(mean_band((0.0, 1.0), &[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0], &[1.0]).is_none());
    }

    // SciPy 1.17: scipy.stats.linregress([0,0,16,16,32,32], [10,11,18,19,26,27]) -> slope 0.5,
    // intercept 10.5, stderr 0.019136638615493466, rvalue**2 0.9941747572815535.
    #[test]
    fn whole_counts_give_a_whole_slope() {
        // Twenty runs of four steps whose means do not divide: 19 a rule, exactly.
        let x: Vec<f64> = [0.0, 8.0, 16.0, 32.0].repeat(5);
        let y: Vec<f64> = x.iter().map(|r| 1386.0 + 19.0 * r).collect();
        let l = fit(&x, &y).unwrap();
        assert_eq!((l.slope, l.intercept), (19.0, 1386.0));
        assert!((l.r2 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn least_squares_matches_scipy() {
        let x = [0.0, 0.0, 16.0, 16.0, 32.0, 32.0];
        let y = [10.0, 11.0, 18.0, 19.0, 26.0, 27.0];
        let l = fit(&x, &y).unwrap();
        assert!((l.slope - 0.5).abs() < 1e-12);
        assert!((l.intercept - 10.5).abs() < 1e-12);
        assert!((l.r2 - 0.9941747572815535).abs() < 1e-9, "{}", l.r2);
        let (lo, hi) = l.slope_ci95;
        let half = t_critical(0.95, 4.0) * 0.019136638615493466;
        assert!((lo - (0.5 - half)).abs() < 1e-9 && (hi - (0.5 + half)).abs() < 1e-9);
    }
}
