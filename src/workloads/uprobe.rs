//! Uprobe and uretprobe trigger throughput (the uprobe thread, like the BPF selftests bench's
//! trig-uprobe-* benchmarks): producers call a target whose first instruction is a nop, a push
//! or a ret, with a probe on it (or none: the baseline), optionally running a minimal BPF
//! program; one operation is one call. The probe's own hit count is checked against the number
//! of calls at the end of every run: a call the probe missed fails the run (see [`check_hits`]).

use super::{Spec, Workload};
use crate::probes::targets::Insn;
use crate::probes::{ProbeKind, Scope, Uprobe};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

/// Options of `syscost run uprobe`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// The probe: uprobe, uretprobe, or none (the same loop unprobed).
    #[arg(long, value_enum, default_value_t = ProbeKind::Uprobe)]
    pub probe: ProbeKind,
    /// The instruction the probe sits on.
    #[arg(long, value_enum, default_value_t = Insn::Nop)]
    pub insn: Insn,
    /// Attach a minimal BPF program (return 0) to the probe, as the 2024 uprobe insn_slot thread's numbers were taken.
    #[arg(long)]
    pub bpf: bool,
    /// Producer threads of this run (the first of --threads; a sweep sets each count).
    #[arg(skip = 1u32)]
    pub threads: u32,
    /// Producer threads, each pinned to a CPU of the allowed set: a number, or a list
    /// (1-4, 1,2,4) for a sweep printed as the table of the 2024 uprobe insn_slot scalability thread.
    #[arg(long = "threads", default_value = "1", value_name = "N|LIST")]
    #[serde(skip)]
    pub thread_counts: String,
    /// Allow more producer threads than CPUs.
    #[arg(long)]
    #[serde(skip)]
    pub oversubscribe: bool,
}

/// Thread counts: `2`, `1-4`, `1,2,4`.
pub(crate) fn parse_threads(s: &str) -> Result<Vec<u32>> {
    let list = crate::core::CpuList::parse(s).map_err(|_| {
        anyhow::anyhow!("--threads '{s}': give a count like 2 or a list like 1-4 or 1,2,4")
    })?;
    if list.0.contains(&0) {
        bail!("--threads counts start at 1");
    }
    Ok(list.iter().map(|t| t as u32).collect())
}

impl Spec for Params {
    const NAME: &'static str = "uprobe";
    const OP_NAME: &'static str = "call";
    const ABOUT: &'static str = "Uprobe/uretprobe trigger throughput on a nop, push or ret (as in the 2024 LKML thread on uprobe insn_slot scalability): M/s, M/s per CPU, ns per hit, hits checked against calls. A --threads list sweeps thread counts";
    const EXAMPLES: &'static str = "Examples:
  syscost run uprobe --probe uprobe --insn nop --cpu 1
  syscost run uprobe --probe uretprobe --insn push --bpf --threads 1-2
      the uprobe scalability thread's table: total M/s +- stddev and M/s per CPU per thread count
  syscost ab --variant 'uprobe --probe none' --variant 'uprobe --probe uprobe' -- --cpu 1
      the probe's cost against the same loop unprobed
Needs CAP_PERFMON (root) or perf_event_paranoid <= 1; --bpf needs CAP_BPF too.";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(UprobeLoop::new(self)?))
    }

    fn describe(&self) -> String {
        format!("{} ({} producer thread(s))", self.case(), self.threads)
    }

    fn threads(&self) -> Option<u32> {
        Some(self.threads)
    }

    fn not_paced(&self) -> Option<&'static str> {
        // Both runs' probes would sit on the one uprobe of the same instruction (an inode and
        // offset), so every hit would walk the other run's consumer too.
        (self.probe != ProbeKind::None)
            .then_some("their uprobes on the same instruction would share one uprobe's consumers")
    }

    /// A run uses the first count of --threads (a sweep sets each count in turn).
    fn complete_command_line(&mut self) -> Result<()> {
        self.threads = parse_threads(&self.thread_counts)?[0];
        Ok(())
    }
}

impl Params {
    /// The uprobe thread's name for the case: `uprobe-nop`, `uretprobe-push`, ...
    pub(crate) fn case(&self) -> String {
        let probe = match self.probe {
            ProbeKind::None => "unprobed",
            ProbeKind::Uprobe => "uprobe",
            ProbeKind::Uretprobe => "uretprobe",
        };
        let insn = format!("{:?}", self.insn).to_lowercase();
        format!("{probe}-{insn}{}", if self.bpf { "+bpf" } else { "" })
    }

}

struct Producers {
    handles: Vec<JoinHandle<()>>,
    start: Arc<Barrier>,
    each: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

pub(crate) struct UprobeLoop {
    params: Params,
    probe: Option<Uprobe>,
    calls: u64,
    hits: Option<u64>,
    producers: Option<Producers>,
    cpus: Vec<usize>,
    /// Batches run, and the first after which the probe had counted fewer hits than calls:
    /// (batch, calls, hits), read between batches, outside the timed region.
    batches: usize,
    short: Option<(usize, u64, u64)>,
}

impl UprobeLoop {
    pub(crate) fn new(p: &Params) -> Result<UprobeLoop> {
        if p.threads == 0 {
            bail!("--threads must be at least 1");
        }
        if p.bpf && p.probe == ProbeKind::None {
            bail!("--bpf needs a probe to attach to: drop it or use --probe uprobe|uretprobe");
        }
        Ok(UprobeLoop {
            params: p.clone(),
            probe: None,
            calls: 0,
            hits: None,
            producers: None,
            cpus: Vec::new(),
            batches: 0,
            short: None,
        })
    }

    fn call(insn: Insn, n: u64) {
        let f = insn.function();
        for _ in 0..n {
            // SAFETY: the target is a leaf function of ours that touches nothing.
            unsafe { f() };
        }
    }

    /// Start the producer threads, each pinned to one CPU of the worker's set (after the probe
    /// exists, so they inherit it).
    fn spawn(&mut self) -> Result<()> {
        let t = self.params.threads as usize;
        let start = Arc::new(Barrier::new(t + 1));
        let each = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for i in 0..t {
            let (start, each, stop) = (start.clone(), each.clone(), stop.clone());
            let cpu = self.cpus[i % self.cpus.len()];
            let insn = self.params.insn;
            handles.push(
                std::thread::Builder::new()
                    .name(format!("producer-{i}"))
                    .spawn(move || {
                        let _ = crate::core::cpus::set_affinity(&crate::core::CpuList(
                            [cpu].into_iter().collect(),
                        ));
                        loop {
                            start.wait();
                            if stop.load(Ordering::Acquire) {
                                return;
                            }
                            UprobeLoop::call(insn, each.load(Ordering::Acquire));
                            start.wait();
                        }
                    })?,
            );
        }
        self.producers = Some(Producers {
            handles,
            start,
            each,
            stop,
        });
        Ok(())
    }
}

impl Workload for UprobeLoop {
    fn setup(&mut self) -> Result<()> {
        self.cpus = crate::core::cpus::allowed_cpus()?.iter().collect();
        if self.params.probe != ProbeKind::None {
            let (exe, offset) = self.params.insn.location()?;
            self.probe = Some(Uprobe::attach(
                &exe,
                offset,
                self.params.probe,
                self.params.bpf,
                Scope::ThisProcess,
            )?);
        }
        // One call: the probe must see it.
        Self::call(self.params.insn, 1);
        self.calls += 1;
        if let Some(p) = self.probe.as_mut()
            && p.hits()? == 0
        {
            bail!("the uprobe did not fire on a call of its target: probe misplaced?");
        }
        Ok(())
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let t = self.params.threads as u64;
        if t == 1 {
            // One producer: the measured thread itself, so its counters see every call.
            Self::call(self.params.insn, ops);
            self.calls += ops;
            return Ok(());
        }
        if self.producers.is_none() {
            self.spawn()?;
        }
        let p = self.producers.as_ref().expect("spawned");
        let each = ops.div_ceil(t);
        p.each.store(each, Ordering::Release);
        p.start.wait();
        p.start.wait();
        self.calls += each * t;
        Ok(())
    }

    fn after_batch(&mut self) -> Result<()> {
        self.batches += 1;
        if let (None, Some(p)) = (self.short, self.probe.as_mut()) {
            let hits = p.hits()?;
            if hits < self.calls {
                self.short = Some((self.batches, self.calls, hits));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if let Some(p) = self.producers.take() {
            p.stop.store(true, Ordering::Release);
            p.start.wait();
            for h in p.handles {
                let _ = h.join();
            }
        }
        if let Some(probe) = self.probe.as_mut() {
            let hits = probe.hits()?;
            check_hits(hits, self.calls, self.params.insn.symbol()).map_err(|e| {
                match self.short {
                    Some((batch, calls, hits)) => e.context(format!(
                        "{} thread(s): the first batch after which it fell short was {batch} of \
                         {}, {hits} hits for {calls} calls",
                        self.params.threads, self.batches
                    )),
                    None => e,
                }
            })?;
            self.hits = Some(hits);
        }
        Ok(())
    }

    fn run_metrics(&self) -> Vec<(String, f64)> {
        let mut m = vec![("calls".to_string(), self.calls as f64)];
        if let Some(h) = self.hits {
            m.push(("probe-hits".into(), h as f64));
        }
        m
    }

    fn notes(&self) -> Vec<String> {
        let mut n = vec![format!(
            "{}: {} producer thread(s) on CPUs {:?}; probe hits checked against calls",
            self.params.case(),
            self.params.threads,
            self.cpus
        )];
        if let Some(extra) = self.hits.map(|h| h.saturating_sub(self.calls)).filter(|&e| e > 0) {
            n.push(format!(
                "the probe fired {extra} time(s) more than the {} calls: the kernel ran its \
                 handlers again where it restarted the probed instruction, and the time per call \
                 includes them",
                self.calls
            ));
        }
        if self.params.threads > 1 {
            n.push(
                "with several producers the counters cover the coordinating thread only; time, \
                 throughput and hits cover every producer"
                    .into(),
            );
        }
        n
    }

    fn teardown(&mut self) -> Result<()> {
        let r = self.finish();
        self.probe = None;
        r
    }
}

/// At most this share of extra hits is taken as the kernel's restarts (one in ten thousand).
const RESTARTS_PER_CALL: f64 = 1e-4;

/// Hits against calls. Each call must fire the probe, or the run measured unprobed calls.
/// The kernel may run a probe's handlers twice for one call: handle_swbp runs them before it
/// sets up the single-step, and restarts the instruction at the breakpoint when that step
/// cannot be taken or is interrupted. A few such extra hits (seen in a TCG guest: 16386 for
/// 16385 calls) add a negligible cost per call and are noted; more than one in ten thousand
/// means something else fires the probe, and fails the run.
fn check_hits(hits: u64, calls: u64, symbol: &str) -> Result<()> {
    let most = calls + 1 + (calls as f64 * RESTARTS_PER_CALL) as u64;
    if hits < calls || hits > most {
        bail!(
            "the probe counted {hits} hits for {calls} calls of {symbol}: the measurement is not \
             what it claims{}",
            if hits < calls {
                " (calls ran unprobed)"
            } else {
                " (something else fires the probe)"
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_must_fire_the_probe_and_a_restart_or_two_is_allowed() {
        assert!(check_hits(16385, 16385, "f").is_ok());
        assert!(check_hits(16386, 16385, "f").is_ok());
        let missed = check_hits(16384, 16385, "f").unwrap_err().to_string();
        assert!(missed.contains("16384 hits for 16385 calls of f"), "{missed}");
        assert!(missed.contains("unprobed"), "{missed}");
        // one in ten thousand, plus one: 3 for 20000 calls, 4 is too many
        assert!(check_hits(20_003, 20_000, "f").is_ok());
        let many = check_hits(20_004, 20_000, "f").unwrap_err().to_string();
        assert!(many.contains("something else"), "{many}");
        assert!(check_hits(1, 1, "f").is_ok() && check_hits(2, 1, "f").is_ok());
        assert!(check_hits(3, 1, "f").is_err());
    }
}
