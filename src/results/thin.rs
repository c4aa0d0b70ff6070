//! Reading a run result's raw samples under a budget.
//!
//! A run result keeps every raw sample (a million samples with ten events is 300 MB of JSON),
//! but `show` prints nothing that depends on them (its figures come from the per-run values
//! of `metrics`, summarised again on read) and `report` draws them only as dots, where a few
//! thousand per run say as much as a million. Decoding them all took 1.25 GB for `show`. So a
//! reader can ask, for the duration of one decode, to keep at most `budget` samples of each
//! list (evenly spaced, the first always kept) and skip the rest as they stream past.
//!
//! Why a thread-local setting and not a parameter: the samples sit three derived types deep
//! (result, runs, run), and serde's derive passes no state down; a `DeserializeSeed` chain
//! would mean hand-writing those types' deserialisers. The setting is scoped by [`with_budget`]
//! and reset on every exit from it, so no other decode on the thread sees it.

use super::Sample;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use std::cell::Cell;

thread_local! {
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
    static KEPT: Cell<u64> = const { Cell::new(0) };
    static SEEN: Cell<u64> = const { Cell::new(0) };
}

/// How many samples a budgeted decode kept of how many it read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thinning {
    pub kept: u64,
    pub total: u64,
}

impl Thinning {
    /// Whether any sample was left out.
    pub(crate) fn dropped_any(&self) -> bool {
        self.kept < self.total
    }
}

/// Resets the setting when the scope ends, however it ends.
struct Scope;

impl Drop for Scope {
    fn drop(&mut self) {
        BUDGET.set(None);
    }
}

/// Run `decode` keeping at most `budget` samples of each sample list it meets (0: none), and
/// say how many were kept of how many.
pub(crate) fn with_budget<T>(budget: usize, decode: impl FnOnce() -> T) -> (T, Thinning) {
    KEPT.set(0);
    SEEN.set(0);
    BUDGET.set(Some(budget));
    let scope = Scope;
    let value = decode();
    drop(scope);
    let thinning = Thinning {
        kept: KEPT.get(),
        total: SEEN.get(),
    };
    (value, thinning)
}

/// `deserialize_with` for a run's measured samples: all of them, or a budget's worth, counted
/// in the [`Thinning`].
pub(crate) fn samples<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Sample>, D::Error> {
    d.deserialize_seq(SamplesVisitor::<true>)
}

/// `deserialize_with` for a run's other sample lists (warm-up, overhead): the same budget, not
/// counted (the [`Thinning`] describes the measured samples the charts draw).
pub(crate) fn other_samples<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Sample>, D::Error> {
    d.deserialize_seq(SamplesVisitor::<false>)
}

struct SamplesVisitor<const COUNTED: bool>;

impl<'de, const COUNTED: bool> Visitor<'de> for SamplesVisitor<COUNTED> {
    type Value = Vec<Sample>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of samples")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Sample>, A::Error> {
        let Some(budget) = BUDGET.get() else {
            let mut all = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(s) = seq.next_element()? {
                all.push(s);
            }
            return Ok(all);
        };
        // Keep every `stride`-th sample; when twice the budget is kept, keep every other one
        // of those and double the stride. The length is not known while streaming, and this
        // ends with between `budget` and `2 * budget` evenly spaced samples (all of a shorter
        // list).
        let (mut kept, mut stride, mut index) = (Vec::new(), 1u64, 0u64);
        loop {
            if budget > 0 && index.is_multiple_of(stride) {
                match seq.next_element::<Sample>()? {
                    Some(s) => kept.push(s),
                    None => break,
                }
                if kept.len() >= 2 * budget {
                    let mut i = 0;
                    kept.retain(|_| {
                        i += 1;
                        i % 2 == 1
                    });
                    stride *= 2;
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            index += 1;
        }
        if COUNTED {
            KEPT.set(KEPT.get() + kept.len() as u64);
            SEEN.set(SEEN.get() + index);
        }
        Ok(kept)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn list(n: u64) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| format!("{{\"ops\":{i},\"wall_ns\":1,\"counts\":[]}}"))
            .collect();
        format!("[{}]", items.join(","))
    }

    fn decode(text: &str) -> Vec<u64> {
        let mut de = serde_json::Deserializer::from_str(text);
        samples(&mut de).unwrap().iter().map(|s| s.ops).collect()
    }

    #[test]
    fn without_a_budget_every_sample_is_kept() {
        assert_eq!(decode(&list(5)), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_budget_keeps_evenly_spaced_samples() {
        let (ops, t) = with_budget(4, || decode(&list(100)));
        // Fewer than twice the budget, evenly spaced: here every 16th.
        assert_eq!(ops, vec![0, 16, 32, 48, 64, 80, 96]);
        assert_eq!(
            t,
            Thinning {
                kept: 7,
                total: 100
            }
        );
        assert!(t.dropped_any());
        let (ops, t) = with_budget(4, || decode(&list(3)));
        assert_eq!((ops, t.dropped_any()), (vec![0, 1, 2], false));
        let (ops, t) = with_budget(0, || decode(&list(50)));
        assert_eq!((ops.len(), t), (0, Thinning { kept: 0, total: 50 }));
        // The setting ends with its scope.
        assert_eq!(decode(&list(10)).len(), 10);
    }

    #[test]
    fn a_damaged_sample_is_still_an_error_when_kept() {
        let bad = "[{\"ops\":1,\"wall_ns\":1,\"counts\":[]},{\"ops\":\"x\"}]";
        let mut de = serde_json::Deserializer::from_str(bad);
        assert!(samples(&mut de).is_err());
        // Scope reset after an error, too.
        let _ = with_budget(1, || {
            let mut de = serde_json::Deserializer::from_str(bad);
            samples(&mut de).is_err()
        });
        assert_eq!(BUDGET.get(), None);
    }
}
