//! Any command as a workload: each sample runs the command once, counters follow the whole
//! process tree (inherited), and every figure is divided by the operation count the user says
//! one run of the command performs (`--ops`), like `perf stat` with syscost's statistics.

use super::{Spec, Workload};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::process::{Command, Stdio};

/// Options of `syscost run exec`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// Record a figure the command prints about itself: NAME=REGEX, the regex's first group
    /// the number (e.g. rps='([0-9.,]+) requests per second'). Repeatable; a regex that
    /// matches nothing fails the run and shows the output's last lines.
    #[arg(long = "capture", value_name = "NAME=REGEX")]
    #[serde(default)]
    pub captures: Vec<super::capture::Capture>,
    /// The command and its arguments (after --). Its standard output is discarded, or read for
    /// --capture.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl Spec for Params {
    const NAME: &'static str = "exec";
    const OP_NAME: &'static str = "op";
    const ABOUT: &'static str = "Any command as the workload: counters for its whole process tree, divided by --ops, the number of operations one run of the command performs (required)";
    const EXAMPLES: &'static str = "Examples:
  syscost run exec --ops 100000 -- ./my-bench 100000
      per-operation counters of a whole command (and its children), 5 runs
  syscost run exec --ops 1 --runs 10 -- make -C tools -j2
      one build as one operation
  syscost run exec --ops 100000 --capture rps='([0-9.,]+) requests per second' -- \\
      redis-benchmark -q -t set -n 100000
      the server benchmark's own requests/s recorded per run beside the counters";
    const OPS_REQUIRED: Option<&'static str> = Some("exec needs --ops N: the number of operations one run of the command performs (use --ops 1 to time whole runs)");

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(Exec::new(self)?))
    }

    fn describe(&self) -> String {
        format!("exec `{}`", self.command.join(" "))
    }

    fn inherit(&self) -> bool {
        true
    }
}

pub(crate) struct Exec {
    command: Vec<String>,
    captor: super::capture::Captor,
    /// Each capture's values, one per run of the command.
    captured: std::collections::BTreeMap<String, Vec<f64>>,
    /// Operations one run of the command performs (the batch size, fixed by --ops).
    per_run: Option<u64>,
}

impl Exec {
    pub(crate) fn new(p: &Params) -> Result<Exec> {
        if p.command.is_empty() {
            bail!("exec needs a command after --, e.g. syscost run exec --ops 1000 -- ./bench");
        }
        Ok(Exec {
            command: p.command.clone(),
            captor: super::capture::Captor::new(&p.captures)?,
            captured: Default::default(),
            per_run: None,
        })
    }

    fn once(&mut self) -> Result<()> {
        if !self.captor.is_empty() {
            let out = Command::new(&self.command[0])
                .args(&self.command[1..])
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()
                .with_context(|| format!("cannot run `{}`", self.command[0]))?;
            if !out.status.success() {
                bail!("`{}` failed: {}", self.command.join(" "), out.status);
            }
            for (name, v) in self.captor.apply(&String::from_utf8_lossy(&out.stdout))? {
                self.captured.entry(name).or_default().push(v);
            }
            return Ok(());
        }
        let status = Command::new(&self.command[0])
            .args(&self.command[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .with_context(|| format!("cannot run `{}`", self.command[0]))?;
        if !status.success() {
            bail!("`{}` failed: {status}", self.command.join(" "));
        }
        Ok(())
    }
}

impl Workload for Exec {
    /// Each capture's mean over the runs of the command in this run.
    fn run_metrics(&self) -> Vec<(String, f64)> {
        self.captured
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.iter().sum::<f64>() / v.len() as f64))
            .collect()
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        // The runner gives exec batches of --ops operations: one run of the command each.
        let per_run = *self.per_run.get_or_insert(ops);
        for _ in 0..(ops / per_run).max(1) {
            self.once()?;
        }
        Ok(())
    }
}
