//! Paced rounds ([`Grain::Samples`](crate::results::Grain)): the runs of one round, one fresh
//! worker per arm, are alive together and take turns sample by sample (A B, B A, ...), so a
//! drift of the machine's speed slower than one sample falls on every arm of the round alike.
//! Only one worker measures at a time: the others wait, blocked on their pipe, off the CPU.
//!
//! Each worker is still a run of its own (its own process, placement in memory, counters):
//! runs stay the units; pacing only makes the two runs of a pair share the machine's moment.

use super::interleave::round_order;
use super::worker::{Reply, Request};
use super::{Plan, measuring, request, start_worker};
use crate::counters::EventStatus;
use crate::results::RunRecord;
use crate::signals;
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout};

/// The order in which slot `slot` (warm-up and measured samples counted together) of round
/// `round` visits `n` arms: alternating from slot to slot and, at the first slot, from round to
/// round.
pub(crate) fn slot_order(round: u32, slot: u32, n: usize) -> Vec<usize> {
    round_order(round.wrapping_add(slot), n)
}

/// One worker of a paced round.
struct Live {
    child: signals::Guarded,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
}

impl Live {
    fn start(req: &Request) -> Result<Live> {
        let (mut child, line) = start_worker(req)?;
        let pipes = child.child();
        let (Some(stdin), Some(out)) = (pipes.stdin.take(), pipes.stdout.take()) else {
            unreachable!("both pipes were asked for");
        };
        let mut live = Live {
            child,
            stdin: Some(stdin),
            out: BufReader::new(out),
        };
        live.send(&line)?;
        Ok(live)
    }

    fn send(&mut self, line: &[u8]) -> Result<()> {
        let stdin = self.stdin.as_mut().expect("open until dropped");
        if stdin.write_all(line).and_then(|_| stdin.flush()).is_err() {
            // It is gone: what it said last tells why.
            signals::check()?;
            let said = self.hear()?;
            bail!("the worker stopped listening after {said:?}");
        }
        Ok(())
    }

    /// The worker's next line.
    fn hear(&mut self) -> Result<Reply> {
        let mut line = String::new();
        let n = self.out.read_line(&mut line);
        signals::check()?;
        match n {
            Ok(0) | Err(_) => {
                let status = self.child.wait_end().context("waiting for the worker")?;
                bail!("the worker process died ({status}) without a reply")
            }
            Ok(_) => match serde_json::from_str(line.trim()) {
                Ok(Reply::Failed { message }) => bail!("{message}"),
                Ok(r) => Ok(r),
                Err(_) => bail!("the worker said something unexpected: {}", line.trim()),
            },
        }
    }

    fn expect(&mut self, what: &str, ok: impl Fn(&Reply) -> bool) -> Result<()> {
        match self.hear()? {
            r if ok(&r) => Ok(()),
            other => bail!("the worker answered {other:?} where {what} was due"),
        }
    }

    /// Time one sample.
    fn sample(&mut self) -> Result<()> {
        self.send(b"go\n")?;
        self.expect("a sample", |r| matches!(r, Reply::Sampled))
    }

    /// Let it finish (its overhead samples run now, alone) and take its run.
    fn finish(mut self) -> Result<(RunRecord, Vec<EventStatus>)> {
        self.send(b"go\n")?;
        match self.hear()? {
            Reply::Measured { run, statuses, .. } => {
                self.stdin = None;
                self.child.wait_end().context("waiting for the worker")?;
                Ok((*run, statuses))
            }
            other => bail!("unexpected reply from a paced worker: {other:?}"),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Its pipe closes: a worker waiting for its word stops, tears down and exits.
        self.stdin = None;
        let _ = self.child.wait_end();
    }
}

/// One run of each arm, alive together, their samples alternating (see [`slot_order`]);
/// `index` numbers the round. Returns the runs in the arms' order.
pub(crate) fn measure(
    arms: &[(&Plan, u64)],
    index: u32,
) -> Result<Vec<(RunRecord, Vec<EventStatus>)>> {
    let slots: Vec<u32> = arms.iter().map(|(p, _)| p.warmup + p.samples).collect();
    // Started in the round's order, as run-by-run rounds would start them.
    let mut started: Vec<(usize, Live)> = Vec::with_capacity(arms.len());
    for k in round_order(index, arms.len()) {
        let (plan, ops) = arms[k];
        if plan.pre.is_some() {
            bail!(crate::refused!(
                "a paced round cannot run ",
                crate::core::input::Opt::Pre,
                " before each run"
            ));
        }
        let live = Live::start(&request(plan, measuring(plan, ops, index, true)))?;
        started.push((k, live));
    }
    started.sort_by_key(|(k, _)| *k);
    let mut live: Vec<Live> = started.into_iter().map(|(_, l)| l).collect();
    for l in live.iter_mut() {
        l.expect("readiness", |r| matches!(r, Reply::Ready))?;
    }
    let last = slots.iter().copied().max().unwrap_or(0);
    for slot in 0..last {
        for k in slot_order(index, slot, arms.len()) {
            if slot < slots[k] {
                live[k].sample()?;
            }
        }
    }
    live.into_iter().map(Live::finish).collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn slots_alternate_within_and_across_rounds() {
        let order =
            |round| -> Vec<usize> { (0..4).flat_map(|slot| slot_order(round, slot, 2)).collect() };
        assert_eq!(order(0), [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(order(1), [1, 0, 0, 1, 1, 0, 0, 1]);
        assert_eq!(slot_order(2, 1, 3), [2, 1, 0]);
    }
}
