//! The boot schedule every way to boot shares: rounds that boot each arm once in a seeded
//! order, each boot (a slot: an arm in a round) tried until it measures, its retries are
//! spent, or it fails in the guest (which every boot would repeat). An arm whose boots fail in
//! the guest before any measured is stopped; the schedule ends when fewer than two arms are
//! left to compare.
//!
//! The schedule is a walk over the boots so far: what to boot next is a function of the plan
//! and the boots kept, so a run killed at any boot resumes with only what it lacks. A [`Boot`]
//! boots one arm once: QEMU, LAVA and the tests' fake wait for it; kexec's hands this machine
//! over to the arm's kernel, and the next process (started by its boot hook) records that
//! boot and walks the schedule again (`campaign::kexec`), once per reboot.

use super::record::{BootRecord, Outcome};
use anyhow::Result;

/// A way to boot a kernel: one try at one arm.
pub(crate) trait Boot {
    /// Boot arm `arm` (its index in the plan) for `round`, try `attempt` (0 first), and say
    /// how it ended. `Err` only for what ends this walk of the schedule: the host cannot boot
    /// at all, or (kexec) it is handed over to the try's kernel, whose process records it.
    fn boot(&mut self, arm: usize, round: u32, attempt: u32) -> Result<BootRecord>;

    /// How many tries it can have under way at once (LAVA jobs on a lab's devices); 1: one
    /// after another.
    fn in_flight(&self) -> usize {
        1
    }

    /// Boot `tries` (of different slots) at once, each handed to `done` as it ends; by
    /// default one after another.
    fn boot_all(&mut self, tries: &[Next], done: &mut dyn FnMut(BootRecord)) -> Result<()> {
        for t in tries {
            done(self.boot(t.arm, t.round, t.attempt)?);
        }
        Ok(())
    }
}

/// Where one slot (an arm in a round) stands, from its tries so far.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Slot {
    /// A try measured.
    Measured,
    /// Every try failed and the retries are spent.
    Spent,
    /// Its last try failed in the guest, which every boot would repeat: why.
    Repeats(String),
    /// Boot it, from this try on.
    Next(u32),
}

impl Slot {
    /// Where a slot stands after `tries` (its tries, in the order they ended).
    pub(crate) fn of(tries: &[&BootRecord], retries: u32) -> Slot {
        if tries.iter().any(|b| b.result().is_some()) {
            return Slot::Measured;
        }
        if let Some(Outcome::Failed {
            reason, failure, ..
        }) = tries.last().map(|b| &b.outcome)
            && failure.repeats()
        {
            return Slot::Repeats(reason.clone());
        }
        match tries.len() as u32 {
            n if n > retries => Slot::Spent,
            n => Slot::Next(n),
        }
    }
}

/// The tries of `arm` in `round` among `boots`, in the order they ended.
pub(crate) fn tries<'a>(boots: &'a [BootRecord], arm: &str, round: u32) -> Vec<&'a BootRecord> {
    boots
        .iter()
        .filter(|b| b.arm == arm && b.round == round)
        .collect()
}

/// Boot one slot until it ends, from the tries `boots` already holds; each new try is added
/// to `boots` and handed to `progress` as it ends. How the slot ended.
pub(crate) fn boot_slot(
    booter: &mut dyn Boot,
    (arm, name): (usize, &str),
    round: u32,
    retries: u32,
    boots: &mut Vec<BootRecord>,
    progress: &mut dyn FnMut(&BootRecord),
) -> Result<Slot> {
    loop {
        match Slot::of(&tries(boots, name, round), retries) {
            Slot::Next(attempt) => {
                let b = booter.boot(arm, round, attempt)?;
                boots.push(b);
                progress(boots.last().expect("just pushed"));
            }
            ended => return Ok(ended),
        }
    }
}

/// A campaign's rounds: per round, the arms (indices into `arms`) in the order they boot.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    pub arms: Vec<String>,
    pub order: Vec<Vec<usize>>,
    pub retries: u32,
}

/// The next try to boot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Next {
    pub arm: usize,
    pub round: u32,
    pub attempt: u32,
    /// The slot's place in the schedule, round after round (0 first).
    pub slot: usize,
}

/// Where the schedule stands after some boots.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Walk {
    /// The try to boot next; `None` when the schedule is over.
    pub next: Option<Next>,
    /// Per arm, why it was stopped (its boots fail in the guest), if it was.
    pub stopped: Vec<Option<String>>,
    /// The slots that ended (measured, spent or failed in the guest).
    pub done: usize,
}

impl Schedule {
    /// Every slot, in the order they boot: (slot, arm, round from 1).
    fn slots(&self) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
        let rounds = self.order.iter().enumerate();
        let each = rounds.flat_map(|(r, arms)| arms.iter().map(move |&a| (a, r as u32 + 1)));
        each.enumerate().map(|(s, (a, r))| (s, a, r))
    }

    /// The arm and the round (from 1) of slot `slot`, if the schedule has it.
    pub(crate) fn at(&self, slot: usize) -> Option<(usize, u32)> {
        self.slots().nth(slot).map(|(_, a, round)| (a, round))
    }

    /// The slot of arm `arm` in round `round` (from 1), if the schedule has it.
    pub(crate) fn slot_of(&self, arm: usize, round: u32) -> Option<usize> {
        self.slots()
            .find(|&(_, a, r)| a == arm && r == round)
            .map(|(s, ..)| s)
    }

    /// Per round, the arms' names in the order they boot.
    pub(crate) fn named_order(&self) -> Vec<Vec<String>> {
        let names = |r: &Vec<usize>| r.iter().map(|&a| self.arms[a].clone()).collect();
        self.order.iter().map(names).collect()
    }

    /// How many slots the schedule has.
    pub(crate) fn len(&self) -> usize {
        self.order.iter().map(Vec::len).sum()
    }

    /// Walk the schedule over `boots` (the boots so far, in any order): the first slot left
    /// to boot and from which try, with the arms stopped on the way.
    pub(crate) fn walk(&self, boots: &[BootRecord]) -> Walk {
        let (mut next, stopped, done) = self.walk_upto(boots, 1);
        Walk {
            next: next.pop(),
            stopped,
            done,
        }
    }

    /// The first `k` slots left to boot (in the schedule's order, each from its next try),
    /// the arms stopped on the way, and the slots that ended before the first of them.
    fn walk_upto(&self, boots: &[BootRecord], k: usize) -> (Vec<Next>, Vec<Option<String>>, usize) {
        let mut stopped: Vec<Option<String>> = vec![None; self.arms.len()];
        let (mut next, mut done) = (Vec::new(), 0);
        for (slot, a, round) in self.slots() {
            if stopped[a].is_some() {
                continue;
            }
            let name = &self.arms[a];
            let reason = match Slot::of(&tries(boots, name, round), self.retries) {
                Slot::Next(attempt) => {
                    next.push(Next {
                        arm: a,
                        round,
                        attempt,
                        slot,
                    });
                    if next.len() == k {
                        break;
                    }
                    continue;
                }
                Slot::Measured | Slot::Spent => None,
                Slot::Repeats(reason) => Some(reason),
            };
            done += usize::from(next.is_empty());
            let measured = |b: &BootRecord| &b.arm == name && b.result().is_some();
            if let Some(reason) = reason.filter(|_| !boots.iter().any(measured)) {
                stopped[a] = Some(reason);
                if too_few_left(&stopped) {
                    next.clear();
                    break;
                }
            }
        }
        (next, stopped, done)
    }

    /// Boot the whole schedule with `booter`, going on from `kept` (the boots of an
    /// interrupted run of the same schedule: none is booted again); `progress` hears of each
    /// new try as it ends. A booter with several tries in flight is given the next slots of
    /// the schedule at once. Every boot, the kept first, and the arms stopped.
    pub(crate) fn run(
        &self,
        booter: &mut dyn Boot,
        kept: &[BootRecord],
        progress: &mut dyn FnMut(&BootRecord),
    ) -> Result<(Vec<BootRecord>, Vec<Option<String>>)> {
        let mut boots = kept.to_vec();
        loop {
            let (ready, stopped, _) = self.walk_upto(&boots, booter.in_flight().max(1));
            if ready.is_empty() {
                return Ok((boots, stopped));
            }
            booter.boot_all(&ready, &mut |b| {
                boots.push(b);
                progress(boots.last().expect("just pushed"));
            })?;
        }
    }
}

/// Whether the arms not stopped are too few to go on: fewer than two of a comparison, none of
/// a campaign of one arm.
pub(crate) fn too_few_left(stopped: &[Option<String>]) -> bool {
    stopped.iter().filter(|s| s.is_none()).count() < stopped.len().min(2)
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::boot::outcome::Failure;
    use std::collections::HashMap;

    /// How the fake's tries of one slot end, in turn: measured, failed on the host, failed in
    /// the guest.
    #[derive(Clone, Copy, Debug)]
    enum Try {
        Ok,
        Host,
        Guest,
    }

    /// A way to boot that boots nothing: each slot's tries end as its script says (measured
    /// when the script is out), and it ends the schedule (as a SIGKILL would) at try `kill`.
    struct Fake {
        arms: Vec<String>,
        script: HashMap<(usize, u32), Vec<Try>>,
        booted: Vec<(usize, u32, u32)>,
        kill: Option<usize>,
        /// Tries it takes at once (and how many it was given at once, each time).
        parallel: usize,
        batches: Vec<usize>,
    }

    impl Fake {
        fn new(arms: usize) -> Fake {
            Fake {
                arms: (0..arms).map(|a| format!("arm{a}")).collect(),
                script: HashMap::new(),
                booted: Vec::new(),
                kill: None,
                parallel: 1,
                batches: Vec::new(),
            }
        }

        fn with(mut self, arm: usize, round: u32, tries: &[Try]) -> Fake {
            self.script.insert((arm, round), tries.to_vec());
            self
        }
    }

    impl Boot for Fake {
        fn in_flight(&self) -> usize {
            self.parallel
        }

        fn boot_all(&mut self, tries: &[Next], done: &mut dyn FnMut(BootRecord)) -> Result<()> {
            self.batches.push(tries.len());
            // They end in the reverse order they were given.
            let ended: Vec<BootRecord> = (tries.iter())
                .map(|t| self.boot(t.arm, t.round, t.attempt))
                .collect::<Result<_>>()?;
            ended.into_iter().rev().for_each(done);
            Ok(())
        }

        fn boot(&mut self, arm: usize, round: u32, attempt: u32) -> Result<BootRecord> {
            if self.kill == Some(self.booted.len()) {
                anyhow::bail!("killed");
            }
            self.booted.push((arm, round, attempt));
            let how = self.script.get(&(arm, round));
            let how = how.and_then(|t| t.get(attempt as usize)).copied();
            let outcome = match how.unwrap_or(Try::Ok) {
                Try::Ok => Outcome::Measured {
                    result: serde_json::json!({ "value": arm }),
                },
                Try::Host => Outcome::failed("Host".into(), Failure::NoResult),
                Try::Guest => Outcome::failed("Guest".into(), Failure::InGuest),
            };
            Ok(BootRecord {
                arm: self.arms[arm].clone(),
                round,
                attempt,
                seconds: 1.0,
                split: None,
                pinned: Vec::new(),
                job: None,
                outcome,
            })
        }
    }

    fn schedule(arms: usize, rounds: u32, retries: u32) -> Schedule {
        Schedule {
            arms: (0..arms).map(|a| format!("arm{a}")).collect(),
            order: super::super::plan::order(arms, rounds, 7),
            retries,
        }
    }

    fn slots(b: &[BootRecord]) -> Vec<(String, u32, u32)> {
        b.iter()
            .map(|b| (b.arm.clone(), b.round, b.attempt))
            .collect()
    }

    #[test]
    fn every_slot_boots_once_in_the_schedule_s_order() {
        let s = schedule(3, 4, 1);
        let mut fake = Fake::new(3);
        let (boots, stopped) = s.run(&mut fake, &[], &mut |_| {}).unwrap();
        let planned: Vec<(usize, u32, u32)> = (s.order.iter().enumerate())
            .flat_map(|(r, arms)| arms.iter().map(move |&a| (a, r as u32 + 1, 0)))
            .collect();
        assert_eq!(fake.booted, planned);
        assert_eq!(boots.len(), 12);
        assert!(stopped.iter().all(Option::is_none));
        assert_eq!(s.walk(&boots).done, s.len());
    }

    /// Tries in flight together: the same tries as one at a time, several at once, each slot
    /// still once, retries and stops as before.
    #[test]
    fn tries_in_flight_together_boot_what_one_at_a_time_boots() {
        let s = schedule(3, 4, 1);
        let script = |f: Fake| {
            f.with(2, 1, &[Try::Host, Try::Ok])
                .with(1, 3, &[Try::Host, Try::Host])
                .with(0, 2, &[Try::Guest])
        };
        let (one, one_stopped) = s.run(&mut script(Fake::new(3)), &[], &mut |_| {}).unwrap();
        let mut fake = script(Fake::new(3));
        fake.parallel = 4;
        let (many, stopped) = s.run(&mut fake, &[], &mut |_| {}).unwrap();
        let sorted = |b: &[BootRecord]| {
            let mut v = slots(b);
            v.sort();
            v
        };
        assert_eq!(sorted(&many), sorted(&one));
        assert_eq!(stopped, one_stopped);
        assert!(fake.batches.iter().all(|&n| n <= 4));
        assert_eq!(fake.batches[0], 4, "the first four slots at once");
        assert!(fake.batches.len() < one.len(), "{:?}", fake.batches);
    }

    #[test]
    fn a_boot_that_fails_on_the_host_is_retried_until_its_retries_are_spent() {
        let s = schedule(2, 2, 2);
        let mut fake = Fake::new(2).with(0, 1, &[Try::Host, Try::Ok]).with(
            1,
            2,
            &[Try::Host, Try::Host, Try::Host, Try::Ok],
        );
        let (boots, stopped) = s.run(&mut fake, &[], &mut |_| {}).unwrap();
        let of = |a: usize, r: u32| {
            fake.booted
                .iter()
                .filter(move |&&(x, y, _)| (x, y) == (a, r))
        };
        assert_eq!(of(0, 1).count(), 2, "measured on its first retry");
        assert_eq!(of(1, 2).count(), 3, "its two retries spent, no fourth try");
        assert_eq!(of(1, 2).map(|t| t.2).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(boots.len(), 2 + 1 + 1 + 3);
        assert!(
            stopped.iter().all(Option::is_none),
            "host failures stop no arm"
        );
    }

    #[test]
    fn an_arm_failing_in_the_guest_is_stopped_and_the_others_go_on() {
        let s = schedule(3, 3, 2);
        let mut fake = Fake::new(3).with(1, 1, &[Try::Guest]);
        let (_, stopped) = s.run(&mut fake, &[], &mut |_| {}).unwrap();
        assert_eq!(stopped[1].as_deref(), Some("Guest"));
        assert_eq!(
            fake.booted.iter().filter(|t| t.0 == 1).count(),
            1,
            "not retried, not booted again"
        );
        assert_eq!(fake.booted.iter().filter(|t| t.0 != 1).count(), 6);
    }

    #[test]
    fn a_guest_failure_after_a_measured_boot_is_that_slot_s_alone() {
        let s = schedule(2, 3, 1);
        let mut fake = Fake::new(2).with(0, 2, &[Try::Guest]);
        let (boots, stopped) = s.run(&mut fake, &[], &mut |_| {}).unwrap();
        assert!(stopped.iter().all(Option::is_none));
        assert_eq!(boots.len(), 6);
    }

    #[test]
    fn the_schedule_stops_when_fewer_than_two_arms_are_left() {
        let s = schedule(2, 4, 1);
        let first = s.order[0][0];
        let mut fake = Fake::new(2).with(first, 1, &[Try::Guest]);
        let (boots, stopped) = s.run(&mut fake, &[], &mut |_| {}).unwrap();
        assert_eq!(boots.len(), 1, "{:?}", slots(&boots));
        assert!(stopped[first].is_some() && too_few_left(&stopped));
        // One arm alone goes on until it is stopped itself.
        let one = schedule(1, 3, 0);
        let (boots, _) = one.run(&mut Fake::new(1), &[], &mut |_| {}).unwrap();
        assert_eq!(boots.len(), 3);
    }

    #[test]
    fn a_killed_run_resumes_with_only_the_tries_it_lacks() {
        let s = schedule(3, 3, 1);
        let script = |f: Fake| {
            f.with(2, 1, &[Try::Host, Try::Ok])
                .with(0, 3, &[Try::Guest])
        };
        let (whole, _) = s.run(&mut script(Fake::new(3)), &[], &mut |_| {}).unwrap();
        for kill in 0..whole.len() {
            let mut first = script(Fake::new(3));
            first.kill = Some(kill);
            let mut kept = Vec::new();
            let killed = s.run(&mut first, &[], &mut |b| kept.push(b.clone()));
            assert!(killed.is_err());
            assert_eq!(kept.len(), kill);
            let mut second = script(Fake::new(3));
            // The second run's fake ends each try as the first would have at that slot.
            let (boots, _) = s.run(&mut second, &kept, &mut |_| {}).unwrap();
            assert_eq!(slots(&boots), slots(&whole), "killed at try {kill}");
            assert_eq!(second.booted.len(), whole.len() - kill, "killed at {kill}");
        }
    }

    /// A resumed slot goes on from the try after its kept ones, and nothing they finished is
    /// booted again.
    #[test]
    fn kept_tries_say_what_is_left_to_boot() {
        let mut fake = Fake::new(2)
            .with(0, 1, &[Try::Host, Try::Ok])
            .with(1, 1, &[Try::Host, Try::Host])
            .with(0, 2, &[Try::Guest])
            .with(1, 2, &[Try::Host, Try::Host, Try::Host]);
        let kept: Vec<BootRecord> = [(0, 1, 0), (0, 1, 1), (1, 1, 0), (0, 2, 0), (1, 2, 0)]
            .iter()
            .chain(&[(1, 2, 1)])
            .map(|&(a, r, t)| fake.boot(a, r, t).unwrap())
            .collect();
        let slot =
            |arm: &str, round: u32, retries: u32| Slot::of(&tries(&kept, arm, round), retries);
        assert_eq!(slot("arm0", 1, 1), Slot::Measured, "measured on its retry");
        assert_eq!(slot("arm1", 1, 1), Slot::Next(1), "killed before its retry");
        assert_eq!(slot("arm0", 2, 1), Slot::Repeats("Guest".into()));
        assert_eq!(slot("arm1", 2, 1), Slot::Spent, "its tries are spent");
        assert_eq!(slot("arm1", 2, 2), Slot::Next(2));
        assert_eq!(slot("arm0", 3, 1), Slot::Next(0), "not begun");
    }
}
