//! A boot's emulated counts joined to its result: the windows syscost's TCG plugin counted
//! (`counters::emulated`), one per batch of the measurement in the order the batches ran, become
//! two events of the result, `instructions:u (emulated)` and `instructions:k (emulated)`, with
//! a count in every sample, so every per-op metric, comparison and table takes them as it
//! takes perf's. Joined only when the windows match the batches one to one (their number, and
//! each run's windows named by consecutive slots); otherwise the result says why and keeps
//! none.

use crate::counters::emulated::Window;
use crate::counters::{EventStatus, RawCount, events::EventSpec};
use crate::results::{EventRecord, RunResult};

/// The events the plugin's counts become, user then kernel.
pub const EVENTS: [&str; 2] = ["instructions:u (emulated)", "instructions:k (emulated)"];

/// Join `windows` to the boot's `result` (a run's; other kinds are left as they are).
pub fn join(result: &mut serde_json::Value, windows: &[Window]) {
    if result.get("kind").and_then(|k| k.as_str()) != Some("run") {
        return;
    }
    let joined = serde_json::from_value::<RunResult>(result.clone())
        .map_err(|e| e.to_string())
        .and_then(|mut r| joined(&mut r, windows).map(|()| r));
    match joined {
        Ok(r) => *result = serde_json::to_value(&r).expect("results serialise"),
        Err(why) => {
            if let Some(w) = result.get_mut("warnings").and_then(|w| w.as_array_mut()) {
                w.push(format!("no emulated counts: {why}").into());
            }
        }
    }
}

fn joined(r: &mut RunResult, windows: &[Window]) -> Result<(), String> {
    let batches: usize = r
        .runs
        .iter()
        .map(|run| run.warmup.len() + run.samples.len() + run.overhead.len())
        .sum();
    if windows.len() != batches {
        return Err(format!(
            "the plugin counted {} windows for {batches} batches",
            windows.len()
        ));
    }
    let mut next = windows.iter();
    for run in &mut r.runs {
        let mut first: Option<u64> = None;
        let batches = run
            .warmup
            .iter_mut()
            .chain(&mut run.samples)
            .chain(&mut run.overhead);
        for (k, sample) in batches.enumerate() {
            let w = next.next().expect("as many windows as batches");
            let base = *first.get_or_insert(w.name);
            if w.name.wrapping_sub(base) != k as u64 {
                return Err(format!(
                    "run {}: batch {k}'s window is out of order",
                    run.index
                ));
            }
            let count = |value| {
                Some(RawCount {
                    value,
                    enabled: 1,
                    running: 1,
                })
            };
            sample.counts.extend([count(w.user), count(w.kernel)]);
        }
    }
    let group = r.events.iter().map(|e| e.group + 1).max().unwrap_or(0);
    for (name, kernel) in EVENTS.iter().zip([false, true]) {
        r.events.push(EventRecord {
            spec: EventSpec {
                name: name.to_string(),
                type_: u32::MAX,
                config: 0,
                exclude_user: kernel,
                exclude_kernel: !kernel,
            },
            group,
            status: EventStatus::Counting,
        });
    }
    r.recompute();
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::results::fixture::fixed_result;

    /// One window per batch of `r`, named by consecutive slots in each run, with `kernel`
    /// instructions per operation.
    fn windows_of(r: &RunResult, kernel: u64) -> Vec<Window> {
        let mut out = Vec::new();
        for run in &r.runs {
            let all = run.warmup.iter().chain(&run.samples).chain(&run.overhead);
            for (k, s) in all.enumerate() {
                out.push(Window {
                    name: 0x1000 * (run.index as u64 + 1) + k as u64,
                    user: 16 * s.ops,
                    kernel: kernel * s.ops,
                });
            }
        }
        out
    }

    #[test]
    fn windows_become_two_events_with_a_metric_per_operation() {
        let r = fixed_result();
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows_of(&r, 305));
        let joined: RunResult = serde_json::from_value(v).unwrap();
        let metric = |name: &str| joined.metrics.iter().find(|m| m.name == name).unwrap();
        assert_eq!(metric(EVENTS[0]).summary.as_ref().unwrap().median, 16.0);
        assert_eq!(metric(EVENTS[1]).summary.as_ref().unwrap().median, 305.0);
        assert_eq!(joined.events.len(), r.events.len() + 2);
    }

    #[test]
    fn windows_that_do_not_match_the_batches_are_refused_with_a_warning() {
        let r = fixed_result();
        let mut fewer = serde_json::to_value(&r).unwrap();
        let mut w = windows_of(&r, 305);
        w.pop();
        join(&mut fewer, &w);
        assert!(
            fewer["warnings"].to_string().contains("windows for"),
            "{}",
            fewer["warnings"]
        );
        let mut swapped = serde_json::to_value(&r).unwrap();
        let mut w = windows_of(&r, 305);
        w.swap(0, 1);
        join(&mut swapped, &w);
        assert!(swapped["warnings"].to_string().contains("out of order"));
        let untouched: RunResult = serde_json::from_value(swapped).unwrap();
        assert_eq!(untouched.events.len(), r.events.len(), "no counts joined");
    }
}
