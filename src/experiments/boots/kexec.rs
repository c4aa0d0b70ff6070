//! This machine as a way to boot: a try is this machine rebooted into the arm's kernel by
//! kexec. Its [`Boot::boot`] loads the kernel with the try's marks on its command line and
//! hands the machine over ([`Handover`]): the try's record is made by the next process, the one
//! the boot hook starts on that kernel (`campaign::kexec` walks the same schedule there). A
//! kernel that cannot be loaded is that try's failure, recorded at once and tried again as the
//! schedule's retries say, as a QEMU boot that fails is.

use super::schedule::{Boot, Schedule};
use super::{Arm, BootPlan, BootRecord, Outcome};
use crate::boot::kexec::{self as kx, Target};
use crate::boot::outcome::Failure;
use anyhow::{Context, Result};

/// Kernel command-line words that mark a campaign's boot: which campaign, which slot.
pub(crate) const CAMPAIGN_PARAM: &str = "syscost.campaign";
pub(crate) const BOOT_PARAM: &str = "syscost.boot";

/// What a kexec boot needs beside the plan, which its own implementation keeps: the
/// campaign's ID, this machine's kernel command line (as its boot loader gave it, without
/// syscost's marks), and the schedule that numbers the slots.
#[derive(Clone, Debug)]
pub(crate) struct KexecHost {
    pub id: String,
    pub cmdline: String,
    pub schedule: Schedule,
}

/// A try's kernel is loaded: this machine is to reboot into it, and the next process records
/// the try. Not a failure: it ends this process's walk of the schedule.
#[derive(Debug, thiserror::Error)]
#[error("rebooting into arm {arm} (round {round}) by kexec")]
pub(crate) struct Handover {
    pub arm: String,
    pub round: u32,
    pub slot: usize,
    pub attempt: u32,
}

/// Boots a plan's arms on this machine by kexec.
pub(crate) struct KexecBooter<'p> {
    plan: &'p BootPlan,
    host: KexecHost,
}

impl<'p> KexecBooter<'p> {
    pub(crate) fn start(plan: &'p BootPlan, host: KexecHost) -> KexecBooter<'p> {
        KexecBooter { plan, host }
    }
}

impl KexecHost {
    /// The whole command line of a slot's try of `arm`: this machine's, the arm's additions,
    /// the marks.
    pub(crate) fn cmdline_of(&self, arm: &Arm, slot: usize, attempt: u32) -> String {
        let marks = format!("{CAMPAIGN_PARAM}={} {BOOT_PARAM}={slot}.{attempt}", self.id);
        [self.cmdline.as_str(), arm.append.as_str(), &marks]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Boot for KexecBooter<'_> {
    fn boot(&mut self, arm: usize, round: u32, attempt: u32) -> Result<BootRecord> {
        let slot = (self.host.schedule)
            .slot_of(arm, round)
            .context("a try the schedule does not have")?;
        let a = &self.plan.arms[arm];
        let cmdline = self.host.cmdline_of(a, slot, attempt);
        let target = Target {
            kernel: &a.kernel,
            initrd: a.initrd.as_deref(),
            cmdline: &cmdline,
        };
        match kx::load(&target) {
            Ok(()) => Err(Handover {
                arm: a.name.clone(),
                round,
                slot,
                attempt,
            }
            .into()),
            Err(e) => Ok(BootRecord::try_of(
                &a.name,
                (round, attempt),
                0.0,
                Outcome::failed(format!("{e:#}"), Failure::NotLoaded),
            )),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::boots::Backend;

    /// A kernel this machine cannot load is the try's failure, recorded at once; the schedule
    /// numbers the slot the marks name.
    #[test]
    fn a_kernel_that_cannot_be_loaded_is_the_try_s_failure() {
        let arm = |name: &str| Arm {
            name: name.into(),
            kernel: "/nonexistent/vmlinuz".into(),
            append: "audit=1".into(),
            ..Arm::default()
        };
        let mut plan = BootPlan::bare(Backend::Kexec);
        plan.arms = vec![arm("a"), arm("b")];
        let host = KexecHost {
            id: "7-1".into(),
            cmdline: "root=/dev/sda1 ro".into(),
            schedule: Schedule {
                arms: vec!["a".into(), "b".into()],
                order: vec![vec![1, 0], vec![0, 1]],
                retries: 1,
            },
        };
        assert_eq!(
            host.cmdline_of(&plan.arms[0], 3, 1),
            "root=/dev/sda1 ro audit=1 syscost.campaign=7-1 syscost.boot=3.1"
        );
        let mut booter = KexecBooter::start(&plan, host);
        let b = booter.boot(0, 2, 0).unwrap();
        assert_eq!((b.arm.as_str(), b.round, b.attempt), ("a", 2, 0));
        assert!(
            matches!(&b.outcome, Outcome::Failed { failure: Failure::NotLoaded, reason, .. }
                if reason.contains("cannot open the kernel")),
            "{b:?}"
        );
        assert!(booter.boot(0, 3, 0).is_err(), "no third round");
    }
}
