//! Functions a path runs and another does not, by the emulated profile's exact counts (the
//! uprobe thread: "it's mostly xol_take_insn_slot() and xol_free_insn_slot()", the single
//! step's slot, which a ret's uprobe takes and a nop's, emulated, does not), in kernel
//! instructions or in atomic read-modify-writes ("the atomic operations on area->bitmap and
//! area->slot_count"); or lines taken from other vCPUs in them, where two producers contend
//! and one does not ("the intensive cacheline bouncing between CPUs"). Agrees when every boot
//! of the arm makes them (at least one instruction or atomic a operation; any line) and no
//! boot of the other makes any; disagrees when no boot of the arm makes any.

use super::{Check, Detail, Outcome, Verdict};
use crate::core::num::fmt_num;
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use crate::results::functions::EmulatedFunctions;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Profiled {
    pub arm: String,
    /// The arm that must not run them.
    pub without: String,
    /// The functions, by the start of their names (an inlined one is counted in its caller:
    /// `xol_` finds the slot's functions the compiler kept).
    pub functions: Vec<String>,
    pub of: Of,
}

/// What the profile counts of the functions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Of {
    Instructions,
    Atomics,
    LinesMoved,
}

impl Of {
    fn word(self) -> &'static str {
        match self {
            Of::Instructions => "kernel instructions",
            Of::Atomics => "atomic read-modify-writes",
            Of::LinesMoved => "cache lines taken from other vCPUs",
        }
    }

    /// Whether `v` a operation is the functions making this: one instruction or atomic at
    /// least (the counts are exact; a function another task's work put in a window is off the
    /// count's line), or any line taken from another vCPU. How many lines move follows how
    /// the host runs the vCPUs' threads, not the path: two threads on a ret took 0.09 to 2.5
    /// lines a hit in xol_* over runs of one reproduction here, one thread none in any.
    fn makes(self, v: f64) -> bool {
        match self {
            Of::Instructions | Of::Atomics => v >= 1.0,
            Of::LinesMoved => v > 0.0,
        }
    }

    /// [`Of::makes`] in words.
    fn least(self) -> &'static str {
        match self {
            Of::Instructions | Of::Atomics => "at least 1 a operation",
            Of::LinesMoved => "any",
        }
    }

    /// The functions of `f` whose names start with one of `prefixes`: each, and how many of
    /// this it makes per operation; the total too.
    fn of<'a>(self, f: &'a EmulatedFunctions, prefixes: &[String]) -> Option<Vec<(&'a str, f64)>> {
        let all: Vec<(&str, f64)> = match self {
            Of::Instructions => (f.functions.iter())
                .map(|x| (x.name.as_str(), x.per_op))
                .collect(),
            Of::Atomics => f.atomics.as_ref()?.by_function(),
            Of::LinesMoved => f.moved.as_ref()?.by_function(),
        };
        let total = match self {
            Of::Instructions => f.total_per_op,
            Of::Atomics => f.atomics.as_ref()?.total_per_op,
            Of::LinesMoved => f.moved.as_ref()?.total_per_op,
        };
        let mut out: Vec<(&str, f64)> = (all.into_iter())
            .filter(|(n, _)| prefixes.iter().any(|p| n.starts_with(p.as_str())))
            .collect();
        out.push(("(all)", total));
        Some(out)
    }
}

impl Check for Profiled {
    fn rule(&self) -> String {
        format!(
            "the {} of {} in the emulated profile: agrees when every boot of {} makes at \
             {} in them and no boot of {} makes any, disagrees when no \
             boot of {} does",
            self.of.word(),
            self.named(),
            self.arm,
            self.of.least(),
            self.without,
            self.arm
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let arm = self.per_boot(f, &self.arm);
        let without = self.per_boot(f, &self.without);
        if arm.is_empty() || without.is_empty() {
            return Outcome::missing(format!(
                "{} and {} need a boot each with the emulated profile's {}",
                self.arm,
                self.without,
                self.of.word()
            ));
        }
        let sum = |b: &Vec<(&str, f64)>| b.iter().filter(|x| x.0 != "(all)").map(|x| x.1).sum();
        let ours: Vec<f64> = arm.iter().map(sum).collect();
        let theirs: Vec<f64> = without.iter().map(sum).collect();
        let makes = |v: &f64| self.of.makes(*v);
        let verdict = if ours.iter().all(makes) && theirs.iter().all(|&v| v == 0.0) {
            Verdict::Agrees
        } else if ours.iter().all(|&v| v == 0.0) {
            Verdict::Disagrees
        } else {
            Verdict::Inconclusive(format!(
                "{} makes {} in its boots and {} makes {}",
                self.arm,
                spread(&ours),
                self.without,
                spread(&theirs)
            ))
        };
        let found = format!(
            "{}: {} of {} a operation in {}; {}: {}",
            self.arm,
            spread(&ours),
            spread(&arm.iter().map(|b| total(b)).collect::<Vec<_>>()),
            self.named(),
            self.without,
            spread(&theirs)
        );
        Outcome {
            detail: Some(self.detail(&arm, &without)),
            ..Outcome::of(found, verdict)
        }
    }
}

impl Profiled {
    fn named(&self) -> String {
        let names: Vec<String> = self.functions.iter().map(|p| format!("{p}*")).collect();
        names.join(", ")
    }

    /// Each boot of `arm`: its functions' counts, and its total.
    fn per_boot<'a>(&self, f: &'a Figures, arm: &str) -> Vec<Vec<(&'a str, f64)>> {
        (f.boots.iter())
            .filter(|(b, _)| b.arm == arm)
            .filter_map(|(_, d)| self.of.of(d.functions.as_ref()?, &self.functions))
            .collect()
    }

    /// A row per function of either arm and the total: its counts in each arm's boots.
    fn detail(&self, arm: &[Vec<(&str, f64)>], without: &[Vec<(&str, f64)>]) -> Detail {
        let mut names: Vec<&str> = (arm.iter().chain(without))
            .flatten()
            .map(|x| x.0)
            .filter(|n| *n != "(all)")
            .collect();
        names.sort_unstable();
        names.dedup();
        names.push("(all)");
        let cell = |boots: &[Vec<(&str, f64)>], name: &str| {
            let v: Vec<f64> = (boots.iter())
                .map(|b| b.iter().find(|x| x.0 == name).map_or(0.0, |x| x.1))
                .collect();
            spread(&v)
        };
        Detail {
            title: format!(
                "The {} per operation of {} (each arm's boots)",
                self.of.word(),
                self.named()
            ),
            head: vec!["function".into(), self.arm.clone(), self.without.clone()],
            rows: (names.iter())
                .map(|n| vec![n.to_string(), cell(arm, n), cell(without, n)])
                .collect(),
            notes: Vec::new(),
        }
    }
}

fn total(b: &[(&str, f64)]) -> f64 {
    b.iter().find(|x| x.0 == "(all)").map_or(0.0, |x| x.1)
}

/// One figure when the boots agree, else their range.
fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match (v.is_empty(), lo == hi) {
        (true, _) => "-".into(),
        (false, true) => fmt_num(lo),
        (false, false) => format!("{} to {}", fmt_num(lo), fmt_num(hi)),
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::results::functions::{AtomicSite, EmulatedAtomics, FunctionCount};

    fn profile(functions: &[(&str, f64)], atomics: &[(&str, f64)]) -> EmulatedFunctions {
        let site = |(name, n): &(&str, f64)| AtomicSite {
            site: format!("{name}+0x10"),
            function: name.to_string(),
            per_op: *n,
            memory: "allocated".into(),
        };
        EmulatedFunctions {
            total_per_op: functions.iter().map(|f| f.1).sum(),
            functions: (functions.iter())
                .map(|(name, per_op)| FunctionCount {
                    name: name.to_string(),
                    per_op: *per_op,
                })
                .collect(),
            unnamed_per_op: 0.0,
            atomics: Some(EmulatedAtomics {
                total_per_op: atomics.iter().map(|a| a.1).sum(),
                sites: atomics.iter().map(site).collect(),
            }),
            moved: None,
        }
    }

    /// A ret's uprobe frees its slot (xol_free_insn_slot: 2 atomics a hit, the slot bitmap's
    /// and the slot count's); a nop's, emulated, takes no slot.
    #[test]
    fn functions_are_found_by_prefix_in_instructions_and_atomics() {
        let ret = profile(
            &[("xol_free_insn_slot", 40.0), ("mtree_load", 145.0)],
            &[("xol_free_insn_slot", 2.0), ("down_read", 1.0)],
        );
        let prefixes = ["xol_".to_string()];
        let got = Of::Atomics.of(&ret, &prefixes).unwrap();
        assert_eq!(got, [("xol_free_insn_slot", 2.0), ("(all)", 3.0)]);
        let got = Of::Instructions.of(&ret, &prefixes).unwrap();
        assert_eq!(got, [("xol_free_insn_slot", 40.0), ("(all)", 185.0)]);
        let mut no_atomics = ret.clone();
        no_atomics.atomics = None;
        assert_eq!(Of::Atomics.of(&no_atomics, &prefixes), None);
        assert_eq!(
            Of::LinesMoved.of(&ret, &prefixes),
            None,
            "one vCPU moves none"
        );
        let mut two = ret.clone();
        two.moved = two.atomics.clone().map(|mut m| {
            m.sites[0].per_op = 0.59;
            m.total_per_op = 1.59;
            m
        });
        let got = Of::LinesMoved.of(&two, &prefixes).unwrap();
        assert_eq!(got, [("xol_free_insn_slot", 0.59), ("(all)", 1.59)]);
        assert!(Of::LinesMoved.makes(0.003) && !Of::LinesMoved.makes(0.0));
        assert!(Of::Atomics.makes(1.0) && !Of::Atomics.makes(0.5));
        assert_eq!(spread(&[2.0, 2.0]), "2.00");
        assert_eq!(spread(&[1.0, 2.0]), "1.00 to 2.00");
        assert_eq!(spread(&[]), "-");
    }
}
