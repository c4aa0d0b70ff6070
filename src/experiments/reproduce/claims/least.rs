//! Which build is the least of a figure (the RFC: "The optimal I$ miss rate is at 64 bytes"),
//! and with what probability another is, from the boots: over every way of picking one boot
//! of each build (a sample of them, seeded, when there are more than [`PICKS`]), the share in
//! which each build is the least.

use super::{Build, Check, Detail, Outcome, Verdict};
use crate::core::num::fmt_num;
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Least {
    pub builds: Vec<Build>,
    pub metrics: Vec<String>,
    /// The build the paper finds the least.
    pub expected: String,
}

/// The most picks enumerated; beyond, this many are drawn.
pub(crate) const PICKS: usize = 200_000;

/// The share of picks a build must be the least in for the claim to be decided.
pub(crate) const DECIDED: f64 = 0.95;

impl Check for Least {
    fn rule(&self) -> String {
        format!(
            "the build with the least {} among {}: agrees when {} is the least in at least \
             {:.0}% of the ways to pick one boot of each build, disagrees when another is",
            self.metrics.join(" + "),
            self.builds.len(),
            self.expected,
            100.0 * DECIDED
        )
    }

    fn run(&self, p: &Paper, f: &Figures) -> Outcome {
        let boots: Vec<(&Build, Vec<f64>)> = (self.builds.iter())
            .map(|b| (b, f.per_boot(&b.arm, &self.metrics)))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        if boots.len() < 2 || !boots.iter().any(|(b, _)| b.arm == self.expected) {
            return Outcome::missing(format!(
                "{} of {} builds measured, {} among them or not",
                boots.len(),
                self.builds.len(),
                self.expected
            ));
        }
        let values: Vec<Vec<f64>> = boots.iter().map(|(_, v)| v.clone()).collect();
        let least = least_shares(&values);
        let share = |arm: &str| {
            let i = boots.iter().position(|(b, _)| b.arm == arm);
            i.map_or(0.0, |i| least[i])
        };
        let mut ranked: Vec<(usize, f64)> = least.iter().copied().enumerate().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let said: Vec<String> = (ranked.iter().filter(|x| x.1 > 0.0).take(3))
            .map(|(i, s)| format!("{} in {:.1}%", boots[*i].0.arm, 100.0 * s))
            .collect();
        let found = format!("the least of the picks: {}", said.join(", "));
        let mine = share(&self.expected);
        let verdict = if mine >= DECIDED {
            Verdict::Agrees
        } else if mine <= 1.0 - DECIDED {
            Verdict::Disagrees
        } else {
            Verdict::Inconclusive(format!(
                "{} is the least in {:.1}% of the picks",
                self.expected,
                100.0 * mine
            ))
        };
        Outcome {
            detail: Some(detail(p, f, &boots, &least, &self.metrics)),
            ..Outcome::of(found, verdict)
        }
    }
}

/// For builds whose boots are `values`, the share of picks (one boot of each) in which each is
/// the least (ties shared).
pub(crate) fn least_shares(values: &[Vec<f64>]) -> Vec<f64> {
    let total: f64 = values.iter().map(|v| v.len() as f64).product();
    let mut wins = vec![0.0; values.len()];
    let mut count = |pick: &[usize]| {
        let at: Vec<f64> = pick.iter().zip(values).map(|(&i, v)| v[i]).collect();
        let m = at.iter().copied().fold(f64::INFINITY, f64::min);
        let tied = at.iter().filter(|&&x| x == m).count() as f64;
        for (w, x) in wins.iter_mut().zip(&at) {
            *w += f64::from(u8::from(*x == m)) / tied;
        }
    };
    if total <= PICKS as f64 {
        let mut pick = vec![0usize; values.len()];
        loop {
            count(&pick);
            let Some(k) = (0..pick.len()).find(|&k| pick[k] + 1 < values[k].len()) else {
                break;
            };
            pick[k] += 1;
            pick[..k].iter_mut().for_each(|x| *x = 0);
        }
        return wins.iter().map(|w| w / total).collect();
    }
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
    for _ in 0..PICKS {
        let pick: Vec<usize> = values
            .iter()
            .map(|v| rng.random_range(0..v.len()))
            .collect();
        count(&pick);
    }
    wins.iter().map(|w| w / PICKS as f64).collect()
}

/// The builds ranked by their median, with the paper's figure and rank beside.
fn detail(
    p: &Paper,
    f: &Figures,
    boots: &[(&Build, Vec<f64>)],
    least: &[f64],
    metrics: &[String],
) -> Detail {
    let medians: Vec<f64> = boots.iter().map(|(_, v)| crate::stats::median(v)).collect();
    let paper: Vec<Option<f64>> = (boots.iter())
        .map(|(b, _)| {
            b.paper
                .as_deref()
                .and_then(|at| p.cell_at(at))
                .map(|(t, c)| t.value(c))
        })
        .collect();
    let rank = |of: &[Option<f64>], i: usize| -> String {
        let Some(v) = of[i] else { return "-".into() };
        (1 + of.iter().flatten().filter(|&&x| x < v).count()).to_string()
    };
    let ours: Vec<Option<f64>> = medians.iter().copied().map(Some).collect();
    let mut order: Vec<usize> = (0..boots.len()).collect();
    order.sort_by(|&a, &b| medians[a].total_cmp(&medians[b]));
    let rows = (order.iter())
        .map(|&i| {
            let (b, v) = &boots[i];
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            vec![
                b.arm.clone(),
                b.share_said(f),
                fmt_num(medians[i]),
                format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
                rank(&ours, i),
                format!("{:.1}%", 100.0 * least[i]),
                paper[i].map_or("-".into(), fmt_num),
                rank(&paper, i),
                b.not_aligned(f)
                    .map_or(String::new(), |_| "did not take".into()),
            ]
        })
        .collect();
    Detail {
        title: format!(
            "The builds ranked by {} per operation (the median of their boots)",
            metrics.join(" + ")
        ),
        head: [
            "build",
            "on its boundary",
            "syscost",
            "boots",
            "rank",
            "least in",
            "paper",
            "paper's rank",
            "alignment",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![
            "least in: the share of the ways to pick one boot of each build in which the \
             build is the least"
                .into(),
        ],
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn each_build_is_the_least_in_a_share_of_the_picks() {
        // A below B in every pick; C below B in one pick of two (its boots 1 and 9).
        let s = least_shares(&[vec![2.0, 3.0], vec![4.0, 5.0], vec![1.0, 9.0]]);
        assert_eq!(s, [0.5, 0.0, 0.5]);
        let tie = least_shares(&[vec![1.0], vec![1.0]]);
        assert_eq!(tie, [0.5, 0.5]);
        // 11 builds of 4 boots: 4^11 picks are more than are enumerated: drawn, seeded.
        let many: Vec<Vec<f64>> = (0..11)
            .map(|b| (0..4).map(|k| f64::from(b * 10 + k)).collect())
            .collect();
        let s = least_shares(&many);
        assert_eq!(s[0], 1.0);
        assert_eq!(least_shares(&many), s, "the same draws every time");
    }
}
