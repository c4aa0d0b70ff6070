//! Calibration of syscost's verdicts on synthetic results with a known truth: `cargo bench
//! --bench verdicts` (about a minute). Each trial draws 10 runs (rounds) per arm: per-run noise
//! of 1% (normal, lognormal or Student t with 3 degrees of freedom, scaled to 1%), optionally a
//! drift of 3% shared by the two arms of a round, and a true shift of 0, 1, 2 or 5%. Printed
//! per analysis (unpaired `compare`, paired `ab`): how often a change is called (the A/A
//! false-positive rate at 0%, the power otherwise) and how often the interval covers the true
//! shift. The table is in the book (docs/src/benchmarks.md).

use rand::{RngExt, SeedableRng};
use syscost::compare::{self, Decision, Options, Variant};

const ROUNDS: usize = 10;

#[derive(Clone, Copy, Debug)]
enum Noise {
    Normal,
    Lognormal,
    T3,
}

fn normal(rng: &mut rand_pcg::Pcg64) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// One draw of relative noise with a standard deviation of `sd`.
fn noise(rng: &mut rand_pcg::Pcg64, kind: Noise, sd: f64) -> f64 {
    match kind {
        Noise::Normal => 1.0 + sd * normal(rng),
        Noise::Lognormal => (sd * normal(rng)).exp(),
        Noise::T3 => {
            // t3 = Z / sqrt(chi2_3 / 3), whose variance is 3: scaled to sd.
            let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
            1.0 + sd * normal(rng) / (chi2 / 3.0).sqrt() / 3f64.sqrt()
        }
    }
}

struct Tally {
    called: usize,
    covered: usize,
    trials: usize,
}

fn run(kind: Noise, drift: f64, shift: f64, paired: bool, trials: usize, seed: u64) -> Tally {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let opts = Options {
        resamples: 2000,
        paired,
        configurations: true,
        ..Options::default()
    };
    let mut t = Tally {
        called: 0,
        covered: 0,
        trials,
    };
    for _ in 0..trials {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let round = 100.0 * (1.0 + drift * normal(&mut rng));
            a.push(round * noise(&mut rng, kind, 0.01));
            b.push(round * (1.0 + shift) * noise(&mut rng, kind, 0.01));
        }
        let c = compare::compare(
            vec![Variant::of_times("a", &a), Variant::of_times("b", &b)],
            &opts,
        )
        .unwrap();
        let d = &c.deltas[0];
        if d.decision.is_change() && (shift == 0.0 || d.decision == Decision::Slower) {
            t.called += 1;
        }
        if d.ci_pct
            .is_some_and(|c| c.lo <= 100.0 * shift && 100.0 * shift <= c.hi)
        {
            t.covered += 1;
        }
    }
    t
}

fn main() {
    // `cargo bench` passes --bench; nothing else is taken.
    println!(
        "| noise | drift | analysis | A/A called | 1% called | 2% called | 5% called | CI coverage |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    let mut seed = 1;
    for kind in [Noise::Normal, Noise::Lognormal, Noise::T3] {
        for drift in [0.0, 0.03] {
            for paired in [false, true] {
                let mut cells = Vec::new();
                let mut coverage = (0, 0);
                for (shift, trials) in [(0.0, 1000), (0.01, 300), (0.02, 300), (0.05, 300)] {
                    seed += 1;
                    let t = run(kind, drift, shift, paired, trials, seed);
                    cells.push(format!("{:.1}%", 100.0 * t.called as f64 / t.trials as f64));
                    coverage.0 += t.covered;
                    coverage.1 += t.trials;
                }
                println!(
                    "| {kind:?} 1% | {:.0}% | {} | {} | {:.1}% |",
                    100.0 * drift,
                    if paired {
                        "paired (ab)"
                    } else {
                        "unpaired (compare)"
                    },
                    cells.join(" | "),
                    100.0 * coverage.0 as f64 / coverage.1 as f64
                );
            }
        }
    }
}
