//! One way from a plan to its booter, for campaigns and bisections alike: QEMU here, a LAVA
//! lab's jobs with what the lab needs ([`LavaRun`]: the lab, its token, the kept jobs), or
//! this machine by kexec with what it needs ([`KexecHost`]: the campaign's ID and this
//! machine's own command line). What each backend needs beside the plan is opened by its
//! command ([`Opened`]) and handed in here; every booter is a [`Boot`].

use super::kexec::{KexecBooter, KexecHost};
use super::schedule::{Boot, Next};
use super::{ArmEntry, Backend, BootPlan, BootRecord, Booter, LavaBooter, LavaRun};
use crate::core::input::{Opt, spelled};
use anyhow::{Result, bail};

/// A started booter of any kind.
pub(crate) enum Started<'p> {
    Qemu(Box<Booter<'p>>),
    Lava(Box<LavaBooter<'p>>),
    Kexec(Box<KexecBooter<'p>>),
}

/// What a plan's backend needs beside the plan, opened for this run: nothing for QEMU, the
/// lab for LAVA, this machine's boot for kexec.
pub(crate) enum Opened<'p> {
    Nothing,
    Lava(LavaRun<'p>),
    Kexec(KexecHost),
}

impl<'p> From<Option<LavaRun<'p>>> for Opened<'p> {
    fn from(lava: Option<LavaRun<'p>>) -> Opened<'p> {
        lava.map_or(Opened::Nothing, Opened::Lava)
    }
}

/// The booter `plan`'s backend asks for, started with what was `opened` for it (which must
/// be that backend's).
pub(crate) fn start<'p>(
    plan: &'p BootPlan,
    rules: &[(String, String)],
    opened: Opened<'p>,
) -> Result<Started<'p>> {
    Ok(match (&plan.backend, opened) {
        (Backend::Qemu(_), Opened::Nothing) => Started::Qemu(Box::new(Booter::start(plan, rules)?)),
        (Backend::Lava(target), Opened::Lava(run)) => {
            Started::Lava(Box::new(LavaBooter::start(plan, target, run, rules)?))
        }
        (Backend::Kexec, Opened::Kexec(host)) => {
            Started::Kexec(Box::new(KexecBooter::start(plan, host)))
        }
        (Backend::Lava(_), _) => bail!("a LAVA plan's boots need its lab and token"),
        (Backend::Kexec, _) => bail!(
            "kexec boots need this machine's campaign (its ID and command line): a kexec \
             campaign starts with `campaign {} kexec`, and a bisection does not boot by kexec",
            spelled(Opt::Via)
        ),
        (Backend::Qemu(_), _) => bail!("a QEMU plan's boots take nothing opened for another"),
    })
}

/// A LAVA plan's lab with its token (read from the environment or the token file, never
/// kept), the device its jobs stay on chosen ([`super::pin::place`]); `None` for the other
/// backends, which need nothing opened.
pub(crate) fn open_lab(backend: &mut Backend) -> Result<Option<crate::boot::lava::Lab>> {
    let Backend::Lava(t) = backend else {
        return Ok(None);
    };
    let lab = crate::boot::lava::Lab::new(
        &t.lab,
        crate::boot::lava::Token::read(t.token_file.as_deref())?,
    )?;
    super::pin::place(t, &lab)?;
    Ok(Some(lab))
}

impl Started<'_> {
    /// How each arm's kernel was started, for the arms booted so far.
    pub(crate) fn entries(&self) -> Vec<ArmEntry> {
        match self {
            Started::Qemu(b) => b.entries(),
            Started::Lava(b) => b.entries(),
            // kexec loads the image itself: no entry to choose.
            Started::Kexec(_) => Vec::new(),
        }
    }

    fn inner(&mut self) -> &mut dyn Boot {
        match self {
            Started::Qemu(b) => b.as_mut(),
            Started::Lava(b) => b.as_mut(),
            Started::Kexec(b) => b.as_mut(),
        }
    }
}

impl Boot for Started<'_> {
    fn boot(&mut self, arm: usize, round: u32, attempt: u32) -> Result<BootRecord> {
        self.inner().boot(arm, round, attempt)
    }

    fn in_flight(&self) -> usize {
        match self {
            Started::Qemu(b) => b.in_flight(),
            Started::Lava(b) => b.in_flight(),
            Started::Kexec(b) => b.in_flight(),
        }
    }

    fn boot_all(&mut self, tries: &[Next], done: &mut dyn FnMut(BootRecord)) -> Result<()> {
        self.inner().boot_all(tries, done)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A plan reaches no booter it is not: kexec needs this machine's campaign, and a LAVA
    /// plan its lab.
    #[test]
    fn a_plan_reaches_only_its_own_booter() {
        let mut plan = BootPlan::bare(Backend::Kexec);
        let refused = |p: &BootPlan| start(p, &[], Opened::Nothing).err().unwrap().to_string();
        assert!(refused(&plan).contains("need this machine's campaign"));
        let host = KexecHost {
            id: "1-1".into(),
            cmdline: String::new(),
            schedule: super::super::schedule::Schedule {
                arms: Vec::new(),
                order: Vec::new(),
                retries: 0,
            },
        };
        assert!(matches!(
            start(&plan, &[], Opened::Kexec(host)),
            Ok(Started::Kexec(_))
        ));
        let lava = super::super::lava::unit::target(crate::boot::lava::BootMethod::Qemu, None);
        plan.backend = Backend::Lava(Box::new(lava));
        assert!(refused(&plan).contains("need its lab and token"));
    }
}
