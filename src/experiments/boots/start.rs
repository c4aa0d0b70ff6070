//! One way from a plan to its booter, for campaigns and bisections alike: QEMU here, or a LAVA
//! lab's jobs with what the lab needs ([`LavaRun`]: the lab, its token, the kept jobs). A
//! kexec plan has no booter: its boots are this machine's reboots, each recorded by the next
//! process (`campaign::kexec`), so it is refused here, where every booted plan passes.

use super::schedule::{Boot, Next};
use super::{ArmEntry, Backend, BootPlan, BootRecord, Booter, LavaBooter, LavaRun};
use anyhow::{Result, bail};

/// A started booter of either kind.
pub(crate) enum Started<'p> {
    Qemu(Box<Booter<'p>>),
    Lava(Box<LavaBooter<'p>>),
}

/// The booter `plan`'s backend asks for, started; `lava` must be given for a LAVA plan (the
/// lab and the token, which the plan does not keep) and only then.
pub(crate) fn start<'p>(
    plan: &'p BootPlan,
    rules: &[(String, String)],
    lava: Option<LavaRun<'p>>,
) -> Result<Started<'p>> {
    Ok(match (&plan.backend, lava) {
        (Backend::Qemu(_), None) => Started::Qemu(Box::new(Booter::start(plan, rules)?)),
        (Backend::Lava(target), Some(run)) => {
            Started::Lava(Box::new(LavaBooter::start(plan, target, run, rules)?))
        }
        (Backend::Lava(_), None) => bail!("a LAVA plan's boots need its lab and token"),
        (Backend::Qemu(_), Some(_)) => bail!("a QEMU plan's boots take no LAVA lab"),
        (Backend::Kexec, _) => bail!(
            "kexec boots are this machine's reboots, each recorded by the next process: a kexec \
             campaign runs through campaign::kexec, and a bisection does not boot by kexec"
        ),
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
        }
    }

    fn inner(&mut self) -> &mut dyn Boot {
        match self {
            Started::Qemu(b) => b.as_mut(),
            Started::Lava(b) => b.as_mut(),
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
        }
    }

    fn boot_all(&mut self, tries: &[Next], done: &mut dyn FnMut(BootRecord)) -> Result<()> {
        self.inner().boot_all(tries, done)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A plan reaches no booter it is not: kexec has none, and a LAVA plan needs its lab.
    #[test]
    fn a_plan_reaches_only_its_own_booter() {
        let mut plan = BootPlan::bare(Backend::Kexec);
        let refused = |p: &BootPlan| start(p, &[], None).err().unwrap().to_string();
        assert!(refused(&plan).contains("this machine's reboots"));
        let lava = super::super::lava::unit::target(crate::boot::lava::BootMethod::Qemu, None);
        plan.backend = Backend::Lava(Box::new(lava));
        assert!(refused(&plan).contains("need its lab and token"));
    }
}
