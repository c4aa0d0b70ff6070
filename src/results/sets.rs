//! Modelled L1 misses by cache set, per operation: what syscost's QEMU plugin counted in a
//! run's sample windows with its cache models (`campaign --cache-model`). The picture of the
//! syscall-latency post (a few L1 sets crowded by the audit rules' slab objects), for the real
//! kernel's objects.

use serde::{Deserialize, Serialize};

/// Misses of each set per operation, over the samples of every run of a result (user and
/// kernel together), for the modelled L1d and L1i.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmulatedSets {
    pub l1d: Vec<f64>,
    pub l1i: Vec<f64>,
}

impl EmulatedSets {
    /// The `n` sets of `misses` with the most misses, most first: (set, misses per op).
    pub fn crowded(misses: &[f64], n: usize) -> Vec<(usize, f64)> {
        let mut sets: Vec<(usize, f64)> = misses.iter().copied().enumerate().collect();
        sets.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        sets.truncate(n);
        sets
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_most_missed_sets_come_first() {
        let c = EmulatedSets::crowded(&[0.1, 3.0, 0.0, 3.0, 2.0], 3);
        assert_eq!(c, [(1, 3.0), (3, 3.0), (4, 2.0)]);
    }
}
