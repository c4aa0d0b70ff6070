//! A fresh placement of a guest's audit rule entries before each run: the syscall-latency
//! post's misses follow where the exit rules' entries land in the L1d sets, and one boot is
//! one such placement. When a campaign places anew per run (`--placement run`), the guest
//! hands its measurement the rules it loaded ([`Anew`], in [`ENV`]); before each run the
//! runner deletes them and adds them back in the same order, each after fillers drawn by a
//! generator seeded for the run, and records where the entries landed beside the run's
//! figures. Every run is then a placement of its own, its worker a fresh process as before:
//! one boot measures as many placements as it has runs.
//!
//! Only a guest that is thrown away does this (its rules are the arm's, loaded by syscost's
//! init): nothing on a host is reloaded.

use super::AuditSocket;
use super::addresses::{Anewed, Placement};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Where a guest's measurement finds the rules to place anew before each run.
pub(crate) const ENV: &str = "SYSCOST_PLACE_PER_RUN";

/// What a placement anew reloads: the rules as the kernel took them, in order, and the seed
/// its fillers are drawn from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Anew {
    pub rules: Vec<Vec<u8>>,
    /// Run `i` draws its fillers from `seed + i`, the same in every boot of every arm: two
    /// arms' runs of one index are placed alike (paired run by run).
    pub seed: u64,
}

impl Anew {
    /// The rules this process is to place anew, when its parent (a guest's init) said so;
    /// an error when what it said cannot be read.
    pub(crate) fn given() -> Result<Option<Anew>> {
        let Ok(text) = std::env::var(ENV) else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{ENV} does not hold the rules to place anew"))
    }

    /// Delete the rules (each deletion waits for the kernel: 12 ms a rule, natively as under
    /// the emulator) and add them back, each after 0 to [`MAX_BEFORE`] fillers drawn from the
    /// run's seed: each entry then takes a seeded later slot of what the slab hands out.
    pub(crate) fn place(&self, run: u32) -> Result<Placement> {
        use rand::{RngExt, SeedableRng};
        let started = std::time::Instant::now();
        let mut sock = AuditSocket::open()?;
        for r in self.rules.iter().rev() {
            sock.del_rule(r)
                .context("placing the rules anew: deleting one")?;
        }
        let seed = self.seed.wrapping_add(run as u64);
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let mut fillers = 0;
        for r in &self.rules {
            for _ in 0..rng.random_range(0..=MAX_BEFORE) {
                sock.add_rule(&filler(run, fillers))
                    .context("placing the rules anew: adding a filler")?;
                fillers += 1;
            }
            sock.add_rule(r)
                .context("placing the rules anew: adding one back")?;
        }
        let mut placement = Placement::here();
        placement.anew = Some(Anewed {
            run,
            seed,
            fillers,
            seconds: started.elapsed().as_secs_f64(),
        });
        Ok(placement)
    }
}

/// The most fillers added before a rule when placing anew.
pub(crate) const MAX_BEFORE: u32 = 3;

/// Filler `i` of run `run`: a rule of the user-message list (walked only for messages user
/// space sends to audit, never by a system call or a fork), failing on a pid no task has,
/// distinct from every other (the kernel refuses a duplicate). It holds a slot of the slab the
/// rules' entries come from, and is left in the guest, which is thrown away.
fn filler(run: u32, i: u32) -> Vec<u8> {
    use super::rules::{ACTION_ALWAYS, FIELD_PID, FILTER_USER};
    let pid = super::session::IMPOSSIBLE_PID - (1 << 20) - (run % 1024) * 1024 - i % 1024;
    super::rules::encode(
        FILTER_USER,
        ACTION_ALWAYS,
        &[],
        &[(FIELD_PID, pid)],
        "syscost-placement",
    )
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn what_a_guest_hands_its_measurement_reads_back() {
        let a = Anew {
            rules: vec![vec![1, 2, 3], vec![4]],
            seed: 7,
        };
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Anew>(&text).unwrap(), a);
    }

    #[test]
    fn fillers_are_distinct_user_list_rules_no_task_matches() {
        use super::super::rules::{FIELD_PID, FILTER_USER, Rule};
        let mut seen = std::collections::HashSet::new();
        for run in [0, 1, 1023] {
            for i in 0..(MAX_BEFORE * 64) {
                let f = filler(run, i);
                let r = Rule::decode(&f).unwrap();
                assert_eq!(r.list, FILTER_USER, "never walked by a system call");
                let pid = r.fields().iter().find(|f| f.0 == FIELD_PID).unwrap().2;
                assert!(pid > 1 << 22, "above PID_MAX_LIMIT: {pid}");
                assert!(seen.insert(f), "run {run} filler {i} repeats another");
            }
        }
    }
}
