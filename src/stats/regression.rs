//! Least squares of one variable on another: the audit sweep's cost per rule and the line under
//! a correlation's scatter plot.

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
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
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

#[cfg(test)]
mod unit {
    use super::*;

    // SciPy 1.17: scipy.stats.linregress([0,0,16,16,32,32], [10,11,18,19,26,27]) -> slope 0.5,
    // intercept 10.5, stderr 0.019136638615493466, rvalue**2 0.9941747572815535.
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
