//! One boot as it ended: the record every way to boot returns, kept as the boot ends (in the
//! history and in a campaign's or a bisection's state), and the one way to ask a boot for a
//! figure.

use crate::audit::load::ArmAudit;
use crate::boot::guest::GuestClock;
use crate::boot::outcome::{Failure, Pinned};
use crate::core::Kind;
use crate::results::functions::EmulatedFunctions;
use crate::results::sets::EmulatedSets;
use crate::results::view::ResultView;
use serde::{Deserialize, Serialize};

/// How one boot ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub(crate) enum Outcome {
    /// The measurement's whole result.
    Measured { result: serde_json::Value },
    /// Why there is none, in words and in kind, and the console's last lines.
    Failed {
        reason: String,
        console: Vec<String>,
        /// Read from `in_guest: true` too, as records before the kinds had it.
        #[serde(default, alias = "in_guest", deserialize_with = "failure_or_flag")]
        failure: Failure,
    },
}

impl Outcome {
    /// A failure of `failure`'s kind, with no console kept.
    pub(crate) fn failed(reason: String, failure: Failure) -> Outcome {
        Outcome::Failed {
            reason,
            console: Vec::new(),
            failure,
        }
    }
}

/// A failure's kind, or the flag older records had: whether the guest reported it.
fn failure_or_flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Failure, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Kind(Failure),
        InGuest(bool),
    }
    Ok(match Either::deserialize(d)? {
        Either::Kind(f) => f,
        Either::InGuest(true) => Failure::InGuest,
        Either::InGuest(false) => Failure::NoResult,
    })
}

/// One boot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BootRecord {
    pub arm: String,
    pub round: u32,
    /// 0 for the first try, 1 for the first retry.
    pub attempt: u32,
    /// From starting QEMU (a LAVA boot: submitting its job) to its end.
    pub seconds: f64,
    /// Where those seconds went, when the guest sent its clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<BootSplit>,
    /// Its vCPUs pinned to host CPUs (`--host-cpus`), and where their threads were seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<Pinned>,
    /// The lab's job it ran as (a LAVA boot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<crate::boot::lava::LabJob>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Where a QEMU boot's seconds went, read from the guest's clock: its kernel's boot up to
/// the init, syscost's init around the measurement (mounts, the arm's state, sending), the
/// measurement, and what lies outside the guest's clock (QEMU's start, the firmware, loading
/// and decompressing the kernel and the initramfs, powering off, reading the result; for a
/// LAVA boot also the lab's queue, the job's start and its download).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BootSplit {
    pub kernel: f64,
    pub init: f64,
    /// The wait for the boot's own work to end (`--settle`), 0 without one.
    #[serde(default)]
    pub settle: f64,
    pub measurement: f64,
    pub outside: f64,
}

impl BootSplit {
    /// The split of a boot of `seconds` whose guest sent `clock`.
    pub(crate) fn of(clock: &GuestClock, seconds: f64) -> BootSplit {
        // A guest that did not wait sent no settle_from.
        let settle_from = if clock.settle_from > 0.0 {
            clock.settle_from
        } else {
            clock.measure_from
        };
        BootSplit {
            kernel: clock.init,
            init: (settle_from - clock.init) + (clock.sent - clock.measure_to),
            settle: clock.measure_from - settle_from,
            measurement: clock.measure_to - clock.measure_from,
            outside: seconds - clock.sent,
        }
    }

    /// The mean split over `boots` (the parts of a mean add up to the mean boot).
    pub(crate) fn mean<'a>(boots: impl IntoIterator<Item = &'a BootSplit>) -> Option<BootSplit> {
        let all: Vec<&BootSplit> = boots.into_iter().collect();
        let n = all.len() as f64;
        let mean = |f: fn(&BootSplit) -> f64| all.iter().map(|s| f(s)).sum::<f64>() / n;
        (!all.is_empty()).then(|| BootSplit {
            kernel: mean(|s| s.kernel),
            init: mean(|s| s.init),
            settle: mean(|s| s.settle),
            measurement: mean(|s| s.measurement),
            outside: mean(|s| s.outside),
        })
    }
}

/// `kernel 0.9 s + init 0.05 s + measurement 1.6 s + outside 0.8 s`.
impl std::fmt::Display for BootSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kernel {:.1} s + init {:.2} s", self.kernel, self.init)?;
        if self.settle > 0.0 {
            write!(f, " + settling {:.2} s", self.settle)?;
        }
        write!(
            f,
            " + measurement {:.1} s + outside {:.1} s",
            self.measurement, self.outside
        )
    }
}

impl BootRecord {
    /// Try `attempt` of `arm`'s boot in `round`, `seconds` long, ended as `outcome`, with no
    /// guest clock, pinning or job (this machine's own boots, by kexec).
    pub(crate) fn try_of(
        arm: &str,
        (round, attempt): (u32, u32),
        seconds: f64,
        outcome: Outcome,
    ) -> BootRecord {
        BootRecord {
            arm: arm.into(),
            round,
            attempt,
            seconds,
            split: None,
            pinned: Vec::new(),
            job: None,
            outcome,
        }
    }

    /// The first try of `arm`'s boot in round 1, ended as `outcome`, one second long.
    #[cfg(test)]
    pub(crate) fn of(arm: &str, outcome: Outcome) -> BootRecord {
        BootRecord::try_of(arm, (1, 0), 1.0, outcome)
    }

    /// Its result as the guest sent it (with its emulated counts joined), if it measured.
    pub(crate) fn result(&self) -> Option<&serde_json::Value> {
        match &self.outcome {
            Outcome::Measured { result } => Some(result),
            Outcome::Failed { .. } => None,
        }
    }

    /// Its result decoded once, by its kind (see [`Decoded`]); `None`: it did not measure;
    /// `Err`: its result cannot be read, and why.
    pub(crate) fn decoded(&self) -> Option<Result<Decoded, String>> {
        self.result().map(|r| Decoded::of(&self.name(), r))
    }

    /// Why it failed, if it did.
    pub(crate) fn failure_reason(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Failed { reason, .. } => Some(reason),
            Outcome::Measured { .. } => None,
        }
    }

    /// How messages name it: `ARM round N`.
    fn name(&self) -> String {
        format!("{} round {}", self.arm, self.round)
    }

    /// Its value of `metric` (the median of its samples or runs, as a campaign takes each
    /// boot's value) and its unit; `Err` says why there is none. The one way to ask a boot
    /// for a figure.
    pub(crate) fn figure(&self, metric: &str) -> Result<(f64, String), String> {
        match &self.outcome {
            Outcome::Failed { reason, .. } => Err(reason.clone()),
            Outcome::Measured { result } => Decoded::of(&self.name(), result)?.figure(metric),
        }
    }
}

/// A measured boot's result, decoded by its kind: its figures as a view (a run's or a merged
/// result's metrics, an audit sweep's cost per rule, a probe's cost per hit) and what a
/// run's emulated counts add (misses by cache set, kernel instructions by function).
#[derive(Clone, Debug)]
pub(crate) struct Decoded {
    pub view: ResultView,
    pub sets: Option<EmulatedSets>,
    pub functions: Option<EmulatedFunctions>,
}

impl Decoded {
    /// `result` decoded, named `name` in messages.
    pub(crate) fn of(name: &str, result: &serde_json::Value) -> Result<Decoded, String> {
        Ok(Decoded {
            view: view_of(name, result)?,
            sets: field_of(result, "emulated_sets"),
            functions: field_of(result, "emulated_functions"),
        })
    }

    /// Its value of `metric`, the median of its values, and its unit.
    pub(crate) fn figure(&self, metric: &str) -> Result<(f64, String), String> {
        match self.view.metric(metric).filter(|m| !m.values.is_empty()) {
            Some(m) => Ok((crate::stats::median(&m.values), m.unit.clone())),
            None => {
                let names: Vec<&str> = self.view.metrics.iter().map(|m| m.name.as_str()).collect();
                Err(format!(
                    "its result has no figure {metric} (it has: {})",
                    names.join(", ")
                ))
            }
        }
    }
}

/// Per arm with rules, in the order of its first boot, each different audit state its
/// measured boots ran under (one, unless a boot differed): what a table says of them.
pub(crate) fn audit_by_arm(boots: &[BootRecord]) -> Vec<(String, Vec<ArmAudit>)> {
    let mut out: Vec<(String, Vec<ArmAudit>)> = Vec::new();
    for b in boots {
        let Some(a) = b
            .result()
            .and_then(|r| field_of::<ArmAudit>(r, crate::boot::ARM_AUDIT_FIELD))
        else {
            continue;
        };
        let at = match out.iter().position(|(arm, _)| *arm == b.arm) {
            Some(i) => i,
            None => {
                out.push((b.arm.clone(), Vec::new()));
                out.len() - 1
            }
        };
        if !out[at].1.contains(&a) {
            out[at].1.push(a);
        }
    }
    out
}

/// How the boots' counted windows were sized, when by count: the first such boot's line, e.g.
/// "windows of 256, 512 and 1,024 calls in turn (the workload's base)" (a run's, or an audit
/// sweep's first step's).
pub(crate) fn count_sizing(boots: &[BootRecord]) -> Option<String> {
    boots.iter().filter_map(|b| b.result()).find_map(|r| {
        let run = r
            .get("steps")
            .and_then(|s| s.get(0)?.get("result"))
            .unwrap_or(r);
        let o: crate::results::RunOptions = field_of(run, "options")?;
        let op = crate::core::plural(run.get("op_name")?.as_str()?);
        let sizes: Vec<String> = (o.sizes.iter())
            .map(|k| crate::core::num::group_thousands(&(k * o.ops_per_sample).to_string()))
            .collect();
        let (last, rest) = sizes.split_last()?;
        use crate::core::input::{Opt, spelled};
        let base = match (o.workload_base, o.calibrated) {
            (true, _) => "the workload's base".to_string(),
            (false, true) => "a base calibrated to the sample time given".to_string(),
            (false, false) => format!("a base given by {}", spelled(Opt::Ops)),
        };
        Some(format!(
            "windows of {} and {last} {op} in turn ({base})",
            rest.join(", ")
        ))
    })
}

/// A result's `field` read as a `T`, when it has one that reads so.
fn field_of<T: serde::de::DeserializeOwned>(result: &serde_json::Value, field: &str) -> Option<T> {
    serde_json::from_value(result.get(field)?.clone()).ok()
}

/// A boot's result as a view of its figures: a run or merged result as it is, an audit
/// sweep by its cost per rule, a probe by its cost per hit.
fn view_of(name: &str, result: &serde_json::Value) -> Result<ResultView, String> {
    use crate::experiments::{audit_sweep::Sweep, probe::ProbeResult};
    use crate::results::view::EnvSummary;
    use crate::workloads::RecordedWorkload;
    let kind = result
        .get("kind")
        .cloned()
        .map(serde_json::from_value::<Kind>);
    let env = |e: Option<&serde_json::Value>| -> EnvSummary {
        e.and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default()
    };
    match kind {
        Some(Ok(Kind::AuditSweep)) => {
            let s: Sweep = serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
            let environment = env(result.pointer("/steps/0/result/environment"));
            let workload = RecordedWorkload::Known(s.workload.clone());
            let metrics = s.per_boot_metrics();
            Ok(ResultView::of_figures(
                name,
                Kind::AuditSweep,
                s.created_unix,
                workload,
                environment,
                metrics,
            ))
        }
        Some(Ok(Kind::Probe)) => {
            let p: ProbeResult =
                serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
            let workload = RecordedWorkload::Foreign(serde_json::json!({ "probe": p.target }));
            let created = crate::core::now_unix();
            Ok(ResultView::of_figures(
                name,
                Kind::Probe,
                created,
                workload,
                env(result.get("environment")),
                p.per_boot_metrics(),
            ))
        }
        Some(Ok(Kind::Scale)) => {
            let s: crate::experiments::scale::Scale =
                serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
            let first = s.results.first().ok_or("a sweep without results")?;
            Ok(ResultView::of_figures(
                name,
                Kind::Scale,
                first.created_unix,
                RecordedWorkload::Foreign(serde_json::json!({ "sweep": s.case })),
                env(result.pointer("/results/0/environment")),
                s.per_boot_metrics(),
            ))
        }
        _ => ResultView::from_text(name, &result.to_string()).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_boot_s_time_splits_with_its_wait_for_the_boot_work() {
        let clock = GuestClock {
            init: 2.0,
            settle_from: 2.1,
            measure_from: 2.6,
            measure_to: 4.0,
            sent: 4.2,
        };
        let s = BootSplit::of(&clock, 5.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(s.init, 0.3) && close(s.settle, 0.5) && close(s.measurement, 1.4));
        let parts = s.kernel + s.init + s.settle + s.measurement + s.outside;
        assert!(close(parts, 5.0), "{s}");
        assert!(s.to_string().contains("+ settling 0.50 s +"), "{s}");
        let at_once = BootSplit::of(
            &GuestClock {
                settle_from: 0.0,
                ..clock
            },
            5.0,
        );
        assert!(close(at_once.init, 0.8) && at_once.settle == 0.0);
        assert!(!at_once.to_string().contains("settling"), "{at_once}");
    }

    /// A failure's kind is kept by name, and records written before the kinds (a flag saying
    /// whether the guest reported it) still read as the kind they meant.
    #[test]
    fn a_failure_reads_back_as_its_kind_and_old_records_as_theirs() {
        let boot = |outcome: Outcome| BootRecord::of("a", outcome);
        let back = |text: &str| match serde_json::from_str::<BootRecord>(text).unwrap().outcome {
            Outcome::Failed { failure, .. } => failure,
            Outcome::Measured { .. } => panic!("{text}"),
        };
        for f in [
            Failure::InGuest,
            Failure::Panicked,
            Failure::TimedOut,
            Failure::NoResult,
            Failure::NotLoaded,
            Failure::OtherKernel,
        ] {
            let text = serde_json::to_string(&boot(Outcome::failed("why".into(), f))).unwrap();
            assert_eq!(back(&text), f, "{text}");
        }
        let old = r#"{"arm":"a","round":1,"attempt":0,"seconds":1.0,"outcome":"failed","reason":"r","console":[]"#;
        assert_eq!(
            back(&format!("{old},\"in_guest\":true}}")),
            Failure::InGuest
        );
        assert_eq!(back(&format!("{old}}}")), Failure::NoResult);
    }
}
