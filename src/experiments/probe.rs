//! `syscost probe --target PATH:SYMBOL -- COMMAND...`: what a uprobe on any program's function
//! costs a real workload (the uprobe thread's Redis case). COMMAND runs `--runs` times without the probe
//! and `--runs` times with it, interleaved (A B B A ...); its wall time is compared, and the
//! probe's hits per run and per second are reported.

use crate::compare::{self, Variant};
use crate::core::input::Opt;
use crate::core::{Envelope, Kind};
use crate::probes::{ProbeKind, Scope, Uprobe, elf};
use crate::results::{Metric, MetricKind};
use crate::runner::interleave;
use crate::workloads::RecordedWorkload;
use crate::workloads::capture::Captor;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// What to do.
#[derive(Clone, Debug)]
pub(crate) struct ProbeCommand {
    pub path: PathBuf,
    pub symbol: String,
    pub kind: ProbeKind,
    pub bpf: bool,
    pub runs: u32,
    pub command: Vec<String>,
    /// Figures the command prints, recorded per run (`--capture`).
    pub captures: Vec<crate::workloads::capture::Capture>,
}

/// A `syscost probe` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ProbeResult {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub target: String,
    pub offset: u64,
    pub probe: ProbeKind,
    pub bpf: bool,
    pub command: Vec<String>,
    /// Wall seconds per run, without and with the probe, in run order.
    pub unprobed_s: Vec<f64>,
    pub probed_s: Vec<f64>,
    pub hits: Vec<u64>,
    pub comparison: compare::Comparison,
    /// The machine and kernel it ran on (results before it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<crate::environment::Environment>,
    /// Whether each run, in the order they ran, had the probe attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probed_runs: Vec<bool>,
    /// In a campaign guest counting under the emulator: the instructions of each run's window
    /// (the command's whole run, every task in it), without and with the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated: Option<ProbeCounts>,
}

/// The instructions `[user, kernel]` of each run's window, without and with the probe, in
/// run order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProbeCounts {
    pub unprobed: Vec<[u64; 2]>,
    pub probed: Vec<[u64; 2]>,
}

impl ProbeCounts {
    /// The instructions each hit added, user and kernel: the median over the probed runs of
    /// what the run counted beyond the median unprobed run, over its own hits (`hits`, one per
    /// probed run: a command's calls of the probed function may vary from run to run).
    pub(crate) fn per_hit(&self, hits: &[u64]) -> Option<[f64; 2]> {
        use crate::stats::median;
        if self.unprobed.is_empty() || hits.len() != self.probed.len() || hits.contains(&0) {
            return None;
        }
        Some([0, 1].map(|i| {
            let base = median(
                &self
                    .unprobed
                    .iter()
                    .map(|c| c[i] as f64)
                    .collect::<Vec<_>>(),
            );
            let each: Vec<f64> = self
                .probed
                .iter()
                .zip(hits)
                .map(|(c, &h)| (c[i] as f64 - base) / h as f64)
                .collect();
            median(&each)
        }))
    }
}

impl ProbeResult {
    /// What one boot's probe comes to when boots are compared (a campaign's): the time each
    /// hit added (the median probed run's wall time less the median unprobed one's, over the
    /// median hits per run) and the hits per run.
    pub(crate) fn per_boot_metrics(&self) -> Vec<Metric> {
        use crate::stats::median;
        let hits: Vec<f64> = self.hits.iter().map(|&h| h as f64).collect();
        let per_run = median(&hits);
        let mut out = vec![Metric::of_values(
            "hits",
            "/run",
            MetricKind::Workload,
            "boot",
            vec![per_run],
            None,
        )];
        if let Some([user, kernel]) = self.emulated.as_ref().and_then(|e| e.per_hit(&self.hits)) {
            for (name, v) in [
                ("instructions:u (emulated)", user),
                ("instructions:k (emulated)", kernel),
                ("instructions (emulated)", user + kernel),
            ] {
                let m =
                    Metric::of_values(name, "/hit", MetricKind::Emulated, "boot", vec![v], None);
                out.push(m);
            }
        }
        if per_run > 0.0 {
            let added = median(&self.probed_s) - median(&self.unprobed_s);
            let ns = vec![added * 1e9 / per_run];
            out.insert(
                0,
                Metric::of_values("time", "ns/hit", MetricKind::Time, "boot", ns, None),
            );
        }
        out
    }
}

/// All probes for one target: system-wide, one event per CPU (a BPF program runs on every hit
/// whatever the CPU, so with --bpf one event suffices and counts through its map).
struct Probes(Vec<Uprobe>);

impl Probes {
    fn attach(p: &ProbeCommand, offset: u64) -> Result<Probes> {
        let cpus: Vec<usize> = if p.bpf {
            vec![
                crate::core::cpus::allowed_cpus()?
                    .iter()
                    .next()
                    .unwrap_or(0),
            ]
        } else {
            let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
                .context("cannot read the online CPUs")?;
            crate::core::CpuList::parse(online.trim())
                .map_err(anyhow::Error::msg)?
                .iter()
                .collect()
        };
        let mut v = Vec::new();
        for c in cpus {
            v.push(Uprobe::attach(
                &p.path,
                offset,
                p.kind,
                p.bpf,
                Scope::Cpu(c),
            )?);
        }
        Ok(Probes(v))
    }

    fn hits(&mut self) -> Result<u64> {
        self.0.iter_mut().map(|u| u.hits()).sum()
    }
}

/// What a failed command said last on its stderr (its last 3 lines), to follow its status.
fn said(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = &lines[lines.len().saturating_sub(3)..];
    if last.is_empty() {
        String::new()
    } else {
        format!(" (it said: {})", last.join(" / "))
    }
}

/// One run of the command: its wall seconds, and the figures captured from its output.
/// `mark`: the run's position, when its window is marked for the emulator's counting (the
/// command itself is not told to mark its own).
fn run_once(
    cmd: &[String],
    captor: &Captor,
    mark: Option<usize>,
) -> Result<(f64, Vec<(String, f64)>)> {
    use crate::counters::emulated;
    crate::signals::check()?;
    let t = Instant::now();
    let mut command = Command::new(&cmd[0]);
    command
        .args(&cmd[1..])
        .env_remove(emulated::MARK_ENV)
        .stdin(Stdio::null())
        .stdout(if captor.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stderr(Stdio::piped());
    if let Some(k) = mark {
        emulated::begin(k);
    }
    // Guarded: it dies with syscost. Its start is then a fork, not a vfork (the death signal
    // is set between fork and exec): the same in every arm, so it cancels in the difference
    // the probe's cost is read from.
    let out = crate::signals::Guarded::spawn(&mut command, false).and_then(|g| g.output());
    if let Some(k) = mark {
        emulated::end(k);
    }
    let out = out.with_context(|| format!("cannot run `{}`", cmd[0]))?;
    let s = t.elapsed().as_secs_f64();
    crate::signals::check()?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}{}",
            cmd.join(" "),
            out.status,
            said(&out.stderr)
        );
    }
    let captured = if captor.is_empty() {
        Vec::new()
    } else {
        captor.apply(&String::from_utf8_lossy(&out.stdout))?
    };
    Ok((s, captured))
}

/// Captured figures of the runs of one arm, as metrics (the first capture's order kept).
fn captured_metrics(runs: &[Vec<(String, f64)>]) -> Vec<Metric> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .map(|(name, _)| {
            let values = runs
                .iter()
                .filter_map(|r| r.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
                .collect();
            Metric::of_values(
                name,
                "as printed",
                MetricKind::Workload,
                "run",
                values,
                None,
            )
        })
        .collect()
}

fn variant(label: &str, wall: &[f64], captured: &[Vec<(String, f64)>]) -> Variant {
    Variant {
        label: label.into(),
        source: "ab".into(),
        unit: "run".into(),
        // A probed command is not a registered workload.
        workload: RecordedWorkload::Foreign(serde_json::json!({"workload": "probe"})),
        op_name: "run".into(),
        subtract_overhead: false,
        created_unix: 0,
        kernel: None,
        host: None,
        ops_per_sample: None,
        metrics: std::iter::once(Metric::of_values(
            "time",
            "ms/run",
            MetricKind::Time,
            "run",
            wall.iter().map(|s| s * 1e3).collect(),
            None,
        ))
        .chain(captured_metrics(captured))
        .collect(),
        perturbed: Vec::new(),
        dropped: Vec::new(),
        warnings: Vec::new(),
        profile: None,
        round_changes: Vec::new(),
    }
}

/// Run it.
pub(crate) fn run(p: &ProbeCommand) -> Result<ProbeResult> {
    if p.kind == ProbeKind::None {
        return Err(crate::refused!(
            Opt::Probe,
            " none measures nothing here: use uprobe or uretprobe"
        ));
    }
    super::ab::decidable(
        crate::core::input::Opt::Runs,
        p.runs as usize,
        1,
        compare::Options::default().alpha,
    )?;
    if p.command.is_empty() {
        bail!("give the command to run after --");
    }
    let offset = elf::symbol_offset(&p.path, &p.symbol)?;
    // Fail early (privileges, bad offset) before any run.
    drop(Probes::attach(p, offset)?);
    let captor = Captor::new(&p.captures)?;
    let (mut without, mut with, mut hits) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cap_without, mut cap_with) = (Vec::new(), Vec::new());
    let mut probed_runs = Vec::new();
    let marking = crate::counters::emulated::marking();
    // The runs are the measurement's span.
    let _span = marking.then(crate::counters::emulated::Span::open);
    // Arm 0 runs the command unprobed, arm 1 with the probe attached.
    interleave(p.runs, 2, |_, arm| {
        let mark = marking.then_some(probed_runs.len());
        probed_runs.push(arm == 1);
        if arm == 1 {
            let mut probes = Probes::attach(p, offset)?;
            let before = probes.hits()?;
            let (s, c) = run_once(&p.command, &captor, mark)?;
            with.push(s);
            cap_with.push(c);
            hits.push(probes.hits()? - before);
        } else {
            let (s, c) = run_once(&p.command, &captor, mark)?;
            without.push(s);
            cap_without.push(c);
        }
        Ok(())
    })?;
    let opts = compare::Options {
        configurations: true,
        paired: true,
        test: crate::stats::registry::TestKind::SignedRank,
        ..compare::Options::default()
    };
    let comparison = compare::compare(
        vec![
            variant("unprobed", &without, &cap_without),
            variant("probed", &with, &cap_with),
        ],
        &opts,
    )?;
    Ok(ProbeResult {
        envelope: Envelope::new(Kind::Probe),
        target: format!("{}:{}", p.path.display(), p.symbol),
        offset,
        probe: p.kind,
        bpf: p.bpf,
        command: p.command.clone(),
        unprobed_s: without,
        probed_s: with,
        hits,
        comparison,
        environment: Some(crate::environment::Environment::collect()),
        probed_runs,
        emulated: None,
    })
}

#[cfg(test)]
mod emulated_unit {
    use super::*;

    /// Two probed runs made more calls than the others: each run's excess is over its own
    /// hits.
    #[test]
    fn instructions_per_hit_are_each_probed_run_s_excess_over_its_hits() {
        let counts = ProbeCounts {
            unprobed: vec![[10, 1_000], [10, 1_100], [10, 900]],
            probed: vec![[10, 3_000], [10, 5_000], [10, 3_000]],
        };
        assert_eq!(counts.per_hit(&[1, 2, 1]), Some([0.0, 2_000.0]));
        assert_eq!(
            counts.per_hit(&[1, 0, 1]),
            None,
            "a run the probe never hit"
        );
        assert_eq!(counts.per_hit(&[1, 2]), None, "a hit count per probed run");
    }
}

#[cfg(test)]
mod unit {
    use super::said;

    #[test]
    fn a_failed_command_s_last_words_follow_its_status() {
        assert_eq!(said(b""), "");
        assert_eq!(said(b"\n  \n"), "");
        assert_eq!(
            said(b"a\nb\n\nc\nsyscost: error: no sample\n"),
            " (it said: b / c / syscost: error: no sample)"
        );
    }
}
