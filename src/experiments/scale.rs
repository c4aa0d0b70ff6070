//! Thread-count sweeps of a throughput workload (the uprobe thread's tables: total M/s ± stddev and
//! M/s per CPU, one row per CPU count).

use crate::core::{Envelope, Kind};
use crate::results::RunResult;
use serde::{Deserialize, Serialize};

/// One thread count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub threads: u32,
    /// Mean total throughput over runs, M/s.
    pub mean: f64,
    /// Sample standard deviation over runs, M/s.
    pub stdev: f64,
    pub per_cpu: f64,
    pub runs: usize,
}

/// A `--threads LIST` sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scale {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub case: String,
    pub rows: Vec<Row>,
    /// Every thread count's full result.
    pub results: Vec<RunResult>,
}

impl Scale {
    /// A `--threads` sweep of a throughput workload (uprobe).
    pub fn new(case: &str, results: Vec<RunResult>) -> Scale {
        Scale::of(case, results, |r| r.workload.threads(), "throughput")
    }

    /// A `--copies` sweep: copies against total throughput (M ops/s).
    pub fn of_copies(case: &str, results: Vec<RunResult>) -> Scale {
        Scale::of(
            case,
            results,
            |r| Some(r.options.copies),
            "total-throughput",
        )
    }

    fn of(
        case: &str,
        results: Vec<RunResult>,
        count: impl Fn(&RunResult) -> Option<u32>,
        metric: &str,
    ) -> Scale {
        let rows = results
            .iter()
            .filter_map(|r| {
                let t = count(r)?;
                let m = r.metrics.iter().find(|m| m.name == metric)?;
                let s = m.summary.as_ref()?;
                Some(Row {
                    threads: t,
                    mean: s.mean,
                    stdev: s.stdev,
                    per_cpu: s.mean / t as f64,
                    runs: s.n,
                })
            })
            .collect();
        Scale {
            envelope: Envelope::new(Kind::Scale),
            case: case.into(),
            rows,
            results,
        }
    }
}
