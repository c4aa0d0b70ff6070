//! Modelled L1 misses by cache set, per operation: what syscost's QEMU plugin counted in a
//! run's sample windows with its cache models (`campaign --cache-model`). The picture of the
//! syscall-latency post (a few L1 sets crowded by the audit rules' slab objects), for the real
//! kernel's objects.

use serde::{Deserialize, Serialize};

/// Misses of each set per operation (user and kernel together): load misses for the modelled
/// L1d (they add up to `L1-dcache-load-misses`), misses for the L1i (`L1-icache-load-misses`):
/// a run's pooled over its sample windows; a result's and an arm's the median one (see
/// [`EmulatedSets::median`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmulatedSets {
    pub l1d: Vec<f64>,
    pub l1i: Vec<f64>,
}

impl EmulatedSets {
    /// The `n` sets of `misses` with the most misses, most first: (set, misses per op).
    pub(crate) fn crowded(misses: &[f64], n: usize) -> Vec<(usize, f64)> {
        let mut sets: Vec<(usize, f64)> = misses.iter().copied().enumerate().collect();
        sets.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        sets.truncate(n);
        sets
    }

    /// The median of several (a result's runs, an arm's boots) for each cache: the one whose
    /// misses add up to the median total, or with an even count the mean of the two middle
    /// ones. Its sets add up to the median of the totals, the figure the counters table
    /// gives, and they show one real placement rather than each set's median from
    /// different runs. A median taken set by set does neither: a placement that crowds set
    /// 0 in one run and set 48 in another would show neither set crowded.
    pub(crate) fn median<S: std::borrow::Borrow<EmulatedSets>>(all: &[S]) -> Option<EmulatedSets> {
        let all = all.iter().map(S::borrow);
        (all.len() > 0).then(|| EmulatedSets {
            l1d: middle(all.clone().map(|s| &s.l1d).collect()),
            l1i: middle(all.map(|s| &s.l1i).collect()),
        })
    }

    /// Total misses per operation.
    pub(crate) fn total(misses: &[f64]) -> f64 {
        misses.iter().sum()
    }
}

/// An L1d line whose loads missed in a run's sample windows (the emulator's model), and its
/// misses per operation: whose object the misses were in, once the guest's objects are known.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissedLine {
    /// The line's virtual address, hexadecimal (`0xffff...`: beyond a double's exact
    /// integers).
    pub line: String,
    pub per_op: f64,
}

impl MissedLine {
    /// As many lines as a run keeps, the most missed (the plugin lists 32 per window).
    pub(crate) const LISTED: usize = 32;

    pub(crate) fn new(line: u64, per_op: f64) -> MissedLine {
        MissedLine {
            line: format!("{line:#x}"),
            per_op,
        }
    }

    /// The line's address, if it parses.
    pub(crate) fn address(&self) -> Option<u64> {
        crate::core::num::parse_hex(&self.line)
    }
}

/// The vector of median total among `all` (not empty), or the mean of the two middle ones.
fn middle(mut all: Vec<&Vec<f64>>) -> Vec<f64> {
    all.sort_by(|a, b| EmulatedSets::total(a).total_cmp(&EmulatedSets::total(b)));
    let n = all.len();
    if n % 2 == 1 {
        return all[n / 2].clone();
    }
    let (a, b) = (all[n / 2 - 1], all[n / 2]);
    let len = a.len().max(b.len());
    let at = |v: &Vec<f64>, i: usize| v.get(i).copied().unwrap_or(0.0);
    (0..len).map(|i| (at(a, i) + at(b, i)) / 2.0).collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_most_missed_sets_come_first() {
        let c = EmulatedSets::crowded(&[0.1, 3.0, 0.0, 3.0, 2.0], 3);
        assert_eq!(c, [(1, 3.0), (3, 3.0), (4, 2.0)]);
    }

    fn sets(l1d: &[f64]) -> EmulatedSets {
        EmulatedSets {
            l1d: l1d.to_vec(),
            l1i: vec![0.0; l1d.len()],
        }
    }

    /// Runs of one boot that miss in different sets (the per-process placement of the
    /// syscall-latency reproduction): the median is one of them, whose total is the median
    /// of the totals; set by set, every set's median would be 0.
    #[test]
    fn the_median_is_the_run_of_median_total_not_a_median_per_set() {
        let runs = [
            sets(&[9.0, 0.0, 0.0]),
            sets(&[0.0, 0.0, 0.1]),
            sets(&[0.0, 4.0, 0.0]),
        ];
        let m = EmulatedSets::median(&runs).unwrap();
        assert_eq!(m.l1d, [0.0, 4.0, 0.0]);
        let totals: Vec<f64> = runs.iter().map(|r| EmulatedSets::total(&r.l1d)).collect();
        assert_eq!(EmulatedSets::total(&m.l1d), crate::stats::median(&totals));
    }

    #[test]
    fn with_an_even_count_the_two_middle_ones_are_averaged_as_the_median_of_totals_is() {
        let runs = [
            sets(&[1.0, 0.0]),
            sets(&[0.0, 3.0]),
            sets(&[8.0, 0.0]),
            sets(&[0.0, 0.5]),
        ];
        let m = EmulatedSets::median(&runs).unwrap();
        assert_eq!(m.l1d, [0.5, 1.5]);
        let totals: Vec<f64> = runs.iter().map(|r| EmulatedSets::total(&r.l1d)).collect();
        assert_eq!(EmulatedSets::total(&m.l1d), crate::stats::median(&totals));
        assert_eq!(EmulatedSets::median::<EmulatedSets>(&[]), None);
    }
}
