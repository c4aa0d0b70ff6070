//! What every bisection takes (how it boots, what it measures, how sure it must be), and how
//! a bisection's result is shown and its boots recorded: shared by the list mode and the git
//! steps.

use crate::cli::boots::{BootsOpts, Checker, Via};
use crate::cli::*;
use crate::experiments::bisect::{BisectPlan, Bisection, decide::Class};
use crate::experiments::boots::{Arm, BootRecord};
use anyhow::Context as _;

/// Where a bisection's boots happen (a kexec bisection would reboot this machine per step).
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum BisectVia {
    Qemu,
    Lava,
}

impl BisectVia {
    fn via(self) -> Via {
        match self {
            BisectVia::Qemu => Via::Qemu,
            BisectVia::Lava => Via::Lava,
        }
    }
}

/// What every bisection takes: how it boots, what it measures, how sure it must be.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Where each boot happens: qemu (a virtual machine per boot, here) or lava (a job per
    /// boot on a LAVA lab's qemu devices, whose exact counts come back alike from any of
    /// them, or on one of its x86 boards with --lava-boot ipxe; --lava-url and a token).
    #[arg(long, value_enum, default_value_t = BisectVia::Qemu)]
    pub via: BisectVia,
    #[command(flatten)]
    pub shared: BootsOpts,
    /// The chance that the bisection names a wrong build, at most, shared over its steps
    /// (log2 of the builds between the ends) and each step's looks (timed figures).
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub error_bound: f64,
    /// The most rounds (each: the good end, the build, the bad end, in a shuffled order) a
    /// timed step takes before it calls the build undecided; also the ends' check's.
    #[arg(long, default_value_t = 6, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=100))]
    pub step_rounds: u32,
}

impl Common {
    /// The plan of a bisection of `builds` between `good` and `bad`.
    pub(super) fn plan(
        &self,
        builds: Vec<Arm>,
        good: usize,
        bad: usize,
        seed: u64,
    ) -> Result<BisectPlan> {
        if !(self.error_bound > 0.0 && self.error_bound < 1.0) {
            anyhow::bail!("--error-bound must be between 0 and 1 (exclusive), e.g. 0.05");
        }
        BisectPlan::new(
            &self.shared.ask(self.via.via())?,
            (builds, good, bad),
            (self.error_bound, self.step_rounds as usize),
            seed,
            &Checker("bisect"),
        )
    }
}

/// A figure no boot gives (`bisect::NoSuchFigure`), said with the option that chose it;
/// `None` for any other error.
pub(super) fn metric_refused(e: &anyhow::Error) -> Option<anyhow::Error> {
    e.is::<crate::experiments::bisect::NoSuchFigure>()
        .then(|| anyhow::anyhow!("{e}: give --metric one of those"))
}

/// Show the bisection and write it to -o.
pub(super) fn finish(b: &Bisection, c: &Common) -> Result<()> {
    show(b, c.shared.format, &c.shared.output)
}

/// The ends that do not differ (or too little to place a build between them) end the command
/// with an error after the table.
pub(super) fn ends_equal(b: &Bisection) -> Result<()> {
    if b.found.unsearched() {
        anyhow::bail!("{}", b.headline());
    }
    Ok(())
}

/// One line per boot as it ends.
pub(super) fn boot_line(b: &BootRecord) -> String {
    crate::cli::boots::boot_line(b)
}

/// The exit status `git bisect run` reads from a step. A build whose exact count is neither
/// end's answers by the end it lies nearer (git bisect follows one step; the list form,
/// `syscost bisect --builds`, finds each).
pub(super) fn step_status(b: &Bisection) -> i32 {
    let step = b.steps.first();
    match (
        &b.found,
        step.map(|s| (&s.decision.class, s.decision.position)),
    ) {
        (found, _) if found.unsearched() => 128,
        (_, Some((Class::Good, _))) => 0,
        (_, Some((Class::Bad, _))) => 1,
        (_, Some((Class::Other, Some(at)))) => i32::from(at > 0.5),
        _ => 125,
    }
}

/// What a step whose build counts neither end's figure tells git bisect, said on stderr.
pub(super) fn other_said(b: &Bisection) -> Option<String> {
    let s = b
        .steps
        .first()
        .filter(|s| s.decision.class == Class::Other)?;
    Some(format!(
        "{}: its count ({}) is neither end's: the figure moves in more than one step, and git \
         bisect follows one, so this step answers {} (the end it lies nearer); `syscost bisect \
         --builds` over the commits' images finds each step",
        s.build,
        s.values
            .first()
            .map_or("-".into(), |v| crate::core::fmt_num(*v)),
        if step_status(b) == 1 { "bad" } else { "good" }
    ))
}

/// Run git with `args` in the current directory; its trimmed stdout.
pub(super) fn git(args: &[&str]) -> Result<String> {
    let out = std::process::Command::new("git")
        .args(args)
        .stderr(std::process::Stdio::piped())
        .output()
        .context("cannot run git (Debian: apt-get install git)")?;
    if !out.status.success() {
        anyhow::bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
