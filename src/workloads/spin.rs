//! A busy loop of a chosen length: each operation is `--iterations` dependent integer steps in
//! user space, no system call. A known, tunable amount of work, to construct a change of known
//! size (`spin --iterations 1000` against `--iterations 1020` is +2%) and check that `ab` calls
//! it, or to occupy a CPU beside another measurement.

use super::{Spec, Workload};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// Options of `syscost run spin`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// Dependent steps per operation (a multiply and an add each, about a nanosecond).
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub iterations: u64,
}

impl Spec for Params {
    const NAME: &'static str = "spin";
    const OP_NAME: &'static str = "op";
    const ABOUT: &'static str = "A busy loop of --iterations dependent steps per operation: a \
        known amount of work, to construct a change of known size";
    const EXAMPLES: &'static str = "Examples:
  syscost ab --variant 'spin --iterations 1000' --variant 'spin --iterations 1020' -- --cpu 1
      a constructed +2% change: does this machine's noise let ab call it?";

    fn build(&self) -> Result<Box<dyn Workload>> {
        if self.iterations == 0 || self.iterations > 1_000_000_000 {
            bail!("--iterations must be from 1 to 1,000,000,000");
        }
        Ok(Box::new(Spin {
            iterations: self.iterations,
        }))
    }

    fn describe(&self) -> String {
        format!("spin {} iterations", self.iterations)
    }
}

pub(crate) struct Spin {
    iterations: u64,
}

impl Workload for Spin {
    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let mut x = std::hint::black_box(1u64);
        for _ in 0..ops {
            for _ in 0..self.iterations {
                // A dependency chain the compiler cannot shorten or vectorise.
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        std::hint::black_box(x);
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_work_scales_with_the_iterations() {
        let time = |n: u64| {
            let mut w = Params { iterations: n }.build().unwrap();
            w.run_batch(10).unwrap();
            let t = std::time::Instant::now();
            w.run_batch(200).unwrap();
            t.elapsed().as_secs_f64()
        };
        // Ratios measured in one run, best of three against this machine's noise.
        let ratio = (0..3)
            .map(|_| time(20_000) / time(2_000))
            .fold(0.0f64, f64::max);
        assert!(ratio > 4.0, "ten times the iterations took {ratio:.1}x the time");
        assert!(Params { iterations: 0 }.build().is_err());
    }
}
