//! Thread-count sweeps of a throughput workload (the uprobe thread's tables: total M/s ± stddev and
//! M/s per CPU, one row per CPU count).

use crate::core::{Envelope, Kind};
use crate::results::RunResult;
use serde::{Deserialize, Serialize};

/// One thread count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Row {
    pub threads: u32,
    /// Mean total throughput over runs, M/s.
    pub mean: f64,
    /// Sample standard deviation over runs, M/s.
    pub stdev: f64,
    pub per_cpu: f64,
    pub runs: usize,
}

/// A sweep's figure `name` at `threads` threads, as a campaign's boot of it names it.
pub(crate) fn threads_metric(name: &str, threads: u32) -> String {
    format!("{name} ({threads} threads)")
}

/// A `--threads LIST` sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Scale {
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
    pub(crate) fn new(case: &str, results: Vec<RunResult>) -> Scale {
        Scale::of(case, results, |r| r.workload.threads(), "throughput")
    }

    /// A `--copies` sweep: copies against total throughput (M ops/s).
    pub(crate) fn of_copies(case: &str, results: Vec<RunResult>) -> Scale {
        Scale::of(
            case,
            results,
            |r| Some(r.options.copies),
            "total-throughput",
        )
    }

    /// Every thread count's figures as one boot's: the first count's under their own names,
    /// then each count's as `NAME (N threads)` (a campaign's boot of a sweep).
    pub(crate) fn per_boot_metrics(&self) -> Vec<crate::results::Metric> {
        let counted = self
            .results
            .iter()
            .filter_map(|r| Some((r.workload.threads()?, r)));
        let mut out = Vec::new();
        for (i, (t, r)) in counted.enumerate() {
            for m in &r.metrics {
                if i == 0 {
                    out.push(m.clone());
                }
                out.push(crate::results::Metric {
                    name: threads_metric(&m.name, t),
                    ..m.clone()
                });
            }
        }
        out
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

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_boot_of_a_sweep_names_each_thread_count_s_figures() {
        let text = include_str!("testdata/uprobe-scale.json");
        let s: Scale = serde_json::from_str(text).unwrap();
        let m = s.per_boot_metrics();
        let value = |name: &str| {
            let found = m.iter().find(|x| x.name == name);
            found.unwrap_or_else(|| panic!("no {name}")).values.clone()
        };
        assert_eq!(value("throughput"), value("throughput (1 threads)"));
        assert_ne!(
            value("throughput (1 threads)"),
            value("throughput (2 threads)")
        );
        assert_eq!(threads_metric("time", 2), "time (2 threads)");
    }
}
