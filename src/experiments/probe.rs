//! `syscost probe --target PATH:SYMBOL -- COMMAND...`: what a uprobe on any program's function
//! costs a real workload (seed 002's Redis case). COMMAND runs `--runs` times without the probe
//! and `--runs` times with it, interleaved (A B B A ...); its wall time is compared, and the
//! probe's hits per run and per second are reported.

use crate::compare::{self, Variant};
use crate::core::{Envelope, Kind};
use crate::probes::{ProbeKind, Scope, Uprobe, elf};
use crate::results::{Metric, MetricKind};
use crate::runner::interleave;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// What to do.
#[derive(Clone, Debug)]
pub struct ProbeCommand {
    pub path: PathBuf,
    pub symbol: String,
    pub kind: ProbeKind,
    pub bpf: bool,
    pub runs: u32,
    pub command: Vec<String>,
}

/// A `syscost probe` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProbeResult {
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

fn run_once(cmd: &[String]) -> Result<f64> {
    crate::signals::check()?;
    let t = Instant::now();
    let status = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("cannot run `{}`", cmd[0]))?;
    let s = t.elapsed().as_secs_f64();
    crate::signals::check()?;
    if !status.success() {
        bail!("`{}` failed: {status}", cmd.join(" "));
    }
    Ok(s)
}

fn variant(label: &str, wall: &[f64]) -> Variant {
    Variant {
        label: label.into(),
        source: "ab".into(),
        unit: "run".into(),
        workload: serde_json::json!({"workload": "probe"}),
        op_name: "run".into(),
        subtract_overhead: false,
        created_unix: 0,
        kernel: None,
        host: None,
        ops_per_sample: None,
        metrics: vec![Metric::of_values(
            "time",
            "ms/run",
            MetricKind::Time,
            "run",
            wall.iter().map(|s| s * 1e3).collect(),
            None,
        )],
        perturbed: Vec::new(),
        dropped: Vec::new(),
        warnings: Vec::new(),
        profile: None,
    }
}

/// Run it.
pub fn run(p: &ProbeCommand) -> Result<ProbeResult> {
    if p.kind == ProbeKind::None {
        bail!("--probe none measures nothing here: use uprobe or uretprobe");
    }
    if p.runs < 2 {
        bail!("--runs must be at least 2 for a comparison");
    }
    if p.command.is_empty() {
        bail!("give the command to run after --");
    }
    let offset = elf::symbol_offset(&p.path, &p.symbol)?;
    // Fail early (privileges, bad offset) before any run.
    drop(Probes::attach(p, offset)?);
    let (mut without, mut with, mut hits) = (Vec::new(), Vec::new(), Vec::new());
    // Arm 0 runs the command unprobed, arm 1 with the probe attached.
    interleave(p.runs, 2, |_, arm| {
        if arm == 1 {
            let mut probes = Probes::attach(p, offset)?;
            let before = probes.hits()?;
            with.push(run_once(&p.command)?);
            hits.push(probes.hits()? - before);
        } else {
            without.push(run_once(&p.command)?);
        }
        Ok(())
    })?;
    let opts = compare::Options {
        configurations: true,
        paired: true,
        ..compare::Options::default()
    };
    let comparison = compare::compare(
        vec![variant("unprobed", &without), variant("probed", &with)],
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
    })
}
