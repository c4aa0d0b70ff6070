//! What booting needs, whatever boots: the arms (kernels, their command lines, their audit
//! rules), the measuring command, where the boots happen, and the order of rounds.

use crate::boot::qemu::Machine;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One arm: a kernel, what its command line adds, and the audit rules set up before measuring.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    pub name: String,
    pub kernel: PathBuf,
    pub append: String,
    pub rules: Option<PathBuf>,
    /// The initramfs a kexec boot of this kernel starts with (QEMU boots get syscost's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrd: Option<PathBuf>,
}

/// Where the boots happen.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Each boot a QEMU virtual machine.
    Qemu(Machine),
    /// This machine, rebooted into each arm by kexec.
    Kexec,
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Qemu(_) => "qemu",
            Backend::Kexec => "kexec",
        }
    }

    pub fn machine(&self) -> Option<&Machine> {
        match self {
            Backend::Qemu(m) => Some(m),
            Backend::Kexec => None,
        }
    }
}

/// What every boot of a campaign or a bisection shares: the arms, the measuring command run
/// inside each boot, where the boots happen and how a failed boot is retried.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BootPlan {
    pub arms: Vec<Arm>,
    pub seed: u64,
    /// The syscost measuring command run inside every boot (`run syscall ...`).
    pub measure: Vec<String>,
    pub backend: Backend,
    /// Boots retried after a failure, per boot.
    pub retries: u32,
    /// Host files the measurement needs in the guest, at the same paths.
    pub guest_files: Vec<PathBuf>,
    /// Files the measuring command opens in the guest (a probe's target and program): each
    /// must be in the initramfs, or every boot fails.
    pub needs: Vec<Needed>,
    /// Each guest waits up to this long for its boot's own work to end before it measures
    /// (`boot::settle`); `None`: it measures at once.
    pub settle: Option<std::time::Duration>,
    /// What a rules file's line that cannot be set up does: stop before anything boots (or,
    /// in the guest, fail the arm's boot), or be left out with a warning.
    pub rules_errors: crate::audit::rules_file::OnError,
}

/// A file the measuring command needs in the guest, and what in the command names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Needed {
    pub what: String,
    pub path: PathBuf,
}

/// Rounds of arm indices, each a shuffle of every arm by a generator seeded with `seed`.
pub fn order(arms: usize, rounds: u32, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    (0..rounds)
        .map(|_| {
            let mut r: Vec<usize> = (0..arms).collect();
            r.shuffle(&mut rng);
            r
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_round_boots_every_arm_once_in_a_seeded_shuffle() {
        let o = order(4, 12, 7);
        assert_eq!(o.len(), 12);
        for r in &o {
            let mut s = r.clone();
            s.sort();
            assert_eq!(s, [0, 1, 2, 3]);
        }
        assert_eq!(o, order(4, 12, 7), "the seed repeats the order");
        assert_ne!(o, order(4, 12, 8));
        assert!(o.iter().any(|r| r != &o[0]), "rounds are shuffled anew");
    }
}
