//! Reading the result files that compare, merge and correlate take.

use super::*;

pub(super) const COMPARE_EXAMPLES: &str = "Examples:
  syscost compare before.json after.json
      per-metric deltas, 95% bootstrap CIs, Mann-Whitney p-values, verdicts
  syscost compare base.json p1.json p2.json p3.json --metric time --format lkml
      three patches ranked against the baseline, as plain text for a cover letter
  syscost compare a.json b.json --test welch --drop-perturbed --format csv";

/// Read result files, in parallel (parsing large files is CPU-bound), keeping their order.
pub(super) fn load_views(files: &[PathBuf]) -> Result<Vec<ResultView>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len())
        .max(1);
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|c| {
                scope.spawn(move || {
                    c.iter()
                        .map(|f| ResultView::load(f).map_err(anyhow::Error::from))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a reader thread panicked"))
            .collect()
    })
}
