//! Progress on stderr for runs expected to last more than about two seconds: a bar on a
//! terminal, nothing otherwise. It is only ever updated between worker processes, never while
//! one is measuring.

use crate::runner::{Plan, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Show the bar once the whole command is projected to last longer than this.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub(crate) struct Bar {
    start: Instant,
    runs: u32,
    enabled: bool,
    bar: Option<ProgressBar>,
}

impl Bar {
    /// A bar for `plan` run `configs` times over (the configurations of `syscost ab`).
    pub(crate) fn new(plan: &Plan, configs: u32) -> Bar {
        let mut b = Bar {
            start: Instant::now(),
            runs: plan.runs.saturating_mul(configs),
            enabled: std::io::stderr().is_terminal(),
            bar: None,
        };
        // With calibration the length of a run is known up front.
        if plan.ops.is_none() {
            let per_run = plan
                .sample_time
                .saturating_mul(plan.samples.saturating_add(plan.warmup));
            if per_run.saturating_mul(plan.runs.saturating_mul(configs)) > SHOW_AFTER {
                b.show(0);
            }
        }
        b
    }

    fn show(&mut self, done: u64) {
        if !self.enabled || self.bar.is_some() {
            return;
        }
        let bar =
            ProgressBar::with_draw_target(Some(self.runs as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} runs, ETA {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_position(done);
        bar.set_message("measuring");
        self.bar = Some(bar);
    }

    pub(crate) fn update(&mut self, p: Progress) {
        match p {
            Progress::Calibrating => {
                if let Some(b) = &self.bar {
                    b.set_message("calibrating");
                }
            }
            Progress::Calibrated { .. } => {
                if let Some(b) = &self.bar {
                    b.set_message("measuring");
                }
            }
            Progress::RunFinished { index, of } => {
                let done = index as u64 + 1;
                let elapsed = self.start.elapsed();
                let projected = elapsed.mul_f64(of as f64 / done as f64);
                if done < of as u64 && projected > SHOW_AFTER {
                    self.show(done);
                }
                if let Some(b) = &self.bar {
                    // Adaptive runs (--until) lengthen the design as it goes.
                    b.set_length(of as u64);
                    b.set_position(done);
                }
            }
        }
    }

    pub(crate) fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
