//! How the profile moved between variants: the functions whose share of the samples grew and
//! shrank most.

use super::Variant;
use serde::{Deserialize, Serialize};

/// How one function's share of the profile changed from the baseline to a variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionDelta {
    pub variant: usize,
    pub name: String,
    pub space: String,
    pub base_self_pct: f64,
    pub self_pct: f64,
    pub base_total_pct: f64,
    pub total_pct: f64,
    /// Change of the total share, in percentage points.
    pub delta_total_pp: f64,
}

/// The functions whose total share grew and shrank most (10 each way per variant).
pub(crate) fn profile_diff(variants: &[Variant]) -> Vec<FunctionDelta> {
    let Some(base) = variants.first().and_then(|v| v.profile.as_ref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (vi, v) in variants.iter().enumerate().skip(1) {
        let Some(p) = &v.profile else { continue };
        let mut names: Vec<(&str, &str)> = base
            .functions
            .iter()
            .chain(&p.functions)
            .map(|f| (f.name.as_str(), f.space.as_str()))
            .collect();
        names.sort();
        names.dedup();
        let share = |prof: &crate::profile::Profile, n: &str, s: &str| {
            prof.functions
                .iter()
                .find(|f| f.name == n && f.space == s)
                .map(|f| (f.self_pct, f.total_pct))
                .unwrap_or((0.0, 0.0))
        };
        let mut deltas: Vec<FunctionDelta> = names
            .into_iter()
            .map(|(n, s)| {
                let (bs, bt) = share(base, n, s);
                let (os, ot) = share(p, n, s);
                FunctionDelta {
                    variant: vi,
                    name: n.to_string(),
                    space: s.to_string(),
                    base_self_pct: bs,
                    self_pct: os,
                    base_total_pct: bt,
                    total_pct: ot,
                    delta_total_pp: ot - bt,
                }
            })
            .collect();
        deltas.sort_by(|a, b| {
            b.delta_total_pp
                .total_cmp(&a.delta_total_pp)
                .then(a.name.cmp(&b.name))
        });
        let grown: Vec<FunctionDelta> = deltas
            .iter()
            .filter(|d| d.delta_total_pp > 0.0)
            .take(10)
            .cloned()
            .collect();
        let shrunk: Vec<FunctionDelta> = deltas
            .iter()
            .rev()
            .filter(|d| d.delta_total_pp < 0.0)
            .take(10)
            .cloned()
            .collect();
        out.extend(grown);
        out.extend(shrunk);
    }
    out
}
