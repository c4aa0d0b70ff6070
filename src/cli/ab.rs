//! `syscost ab`: configurations given as `run` arguments, measured interleaved and compared.

use super::*;
use crate::experiments::ab::{AbRequest, Arm};

pub(super) const AB_EXAMPLES: &str = "Examples:
  syscost ab --variant 'syscall --syscall getpid' --variant 'syscall --syscall getppid' -- --cpu 1 --runs 10
      both measured in alternating order (ABBA), then compared; the two runs of a round take
      turns sample by sample
  syscost ab --interleave runs --variant 'syscall' --variant 'syscall --syscall getppid' -- --cpu 1
      one run after the other instead: the runs of a pair are then seconds apart
  syscost ab --variant 'syscall' --variant 'syscall' --label A --label A2 -- --cpu 1
      an A/A check of this machine's noise
  syscost ab --variant 'syscall' --variant 'syscall --syscall getppid' -- --samples 10 --sample-time 100ms --estimator median
      each run's median of 10 samples of 100 ms instead of ab's default floor (the fastest of
      100 samples of 10 ms, used unless --estimator, --samples, --sample-time or --ops is
      given, or a variant runs a command with exec): it sees a change that only adds
      occasional slow operations, which the floor does not";

/// A variant's words with `added` (the shared options) put among its own
/// options: before its `--`, if it has one (the command of an `exec` variant), so that they are
/// not taken for the command's arguments.
fn before_the_command(own: Vec<String>, added: &[String]) -> Vec<String> {
    let split = own.iter().position(|w| w == "--").unwrap_or(own.len());
    let mut words = own[..split].to_vec();
    words.extend(added.iter().cloned());
    words.extend(own[split..].iter().cloned());
    words
}

pub(super) fn ab(
    variants: Vec<String>,
    labels: Vec<String>,
    save: Option<PathBuf>,
    grain: crate::results::Grain,
    opts: CompareArgs,
    shared: Vec<String>,
) -> Result<()> {
    let options = opts.paired_options()?;
    if let Some(o) = &opts.output {
        crate::core::check_writable(o)?;
    }
    if let Some(dir) = &save {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("--save {}: cannot create it: {e}", dir.display()))?;
    }
    let (arms, keep) = variant_arms(&variants, &shared)?;
    let req = AbRequest::new(arms, labels, grain, &options, save)?;
    let mut bar = progress::Bar::new(&req.plans[0], req.plans.len() as u32);
    let c = crate::experiments::ab::run(&req, &mut |p| bar.update(p))?;
    bar.finish();
    show(&c, opts.format, &opts.output)?;
    if let Some(k) = &keep {
        super::history::record(&c, k);
    }
    opts.gate(&c)
}

/// Each variant parsed as a `syscost run` with the shared options, and where the comparison is
/// recorded: the shared run options' (after --) history options.
fn variant_arms(
    variants: &[String],
    shared: &[String],
) -> Result<(Vec<Arm>, Option<super::args::HistoryOpts>)> {
    let mut arms = Vec::new();
    let mut keep = None;
    for v in variants {
        let Some(own) = shlex::split(v) else {
            anyhow::bail!("--variant '{v}': unbalanced quotes");
        };
        let words = before_the_command(own, shared);
        let line = VariantLine::try_parse_from(&words).map_err(|e| {
            if let Some(hint) = super::args::owner_hint(&e, &["ab"]) {
                return anyhow::anyhow!("{hint} (the options after -- go to every variant)");
            }
            anyhow::anyhow!(
                "--variant '{v}' (with the shared options {:?}) is not a valid `syscost run`: {}",
                shared,
                e.render().to_string().trim()
            )
        })?;
        let (workload, args) = line.run.into_parts()?;
        if args.output.is_some() {
            anyhow::bail!(
                "--variant '{v}': -o inside a variant (or after --) is not used by ab; give ab's \
                 own -o for the comparison, and --save DIR for each variant's result"
            );
        }
        if args.json || args.format != Format::Table {
            anyhow::bail!(
                "--variant '{v}': --format or --json inside a variant (or after --) is not used \
                 by ab; put it before --, among ab's own options"
            );
        }
        keep.get_or_insert_with(|| args.keep.clone());
        arms.push(Arm {
            plan: super::run::unchecked_plan_of(workload, &args)?,
            text: v.clone(),
            chosen: args.chosen(),
        });
    }
    Ok((arms, keep))
}

#[cfg(test)]
mod unit {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn shared_options_go_before_a_variant_s_command() {
        assert_eq!(
            before_the_command(words("exec --ops 1 -- sh -c x"), &words("--runs 6")),
            words("exec --ops 1 --runs 6 -- sh -c x")
        );
        assert_eq!(
            before_the_command(words("syscall"), &words("--runs 6")),
            words("syscall --runs 6")
        );
    }

    #[test]
    fn the_floor_s_options_and_values_agree() {
        let (estimator, samples, time) = runner::FLOOR_DESIGN;
        assert_eq!(
            runner::floor_options(),
            format!(
                "--estimator {} --sample-time {} --samples {samples}",
                format!("{estimator:?}").to_lowercase(),
                humantime::format_duration(time)
            )
        );
    }
}
