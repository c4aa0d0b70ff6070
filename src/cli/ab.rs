//! `syscost ab`: configurations given as `run` arguments, measured interleaved and compared.

use super::*;

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

/// ab's design when the command line does not choose one: the floor (`runner::FLOOR`).
/// Measured on this project's VM while the host was busy, it called a constructed +2% change
/// in 10 of 10 tries and an A/A pair in 0 of 20, where 10 samples of 100 ms called the +2% in 2
/// of 10. These options, unless the words already choose the samples (`--estimator`,
/// `--samples`, `--sample-time` or `--ops`, in a variant or after --).
fn floor_unless_chosen(words: &[String]) -> Vec<String> {
    let chosen = words.iter().any(|w| {
        ["--estimator", "--samples", "--sample-time", "--ops"]
            .iter()
            .any(|f| w == f || w.starts_with(&format!("{f}=")))
    });
    if chosen {
        return Vec::new();
    }
    runner::FLOOR
        .iter()
        .flat_map(|(f, v)| [f.to_string(), v.to_string()])
        .collect()
}

/// ab's rounds when neither a variant nor the shared options give `--runs`: enough for the
/// paired test to decide (it needs 6 rounds to reach p < 0.05 at all, 7 for three variants)
/// with room for a dropped round or two.
pub(super) const AB_ROUNDS: u32 = 10;

/// `--runs AB_ROUNDS`, unless the words already give the runs.
fn rounds_unless_chosen(words: &[String]) -> Vec<String> {
    let chosen = words
        .iter()
        .any(|w| w == "--runs" || w.starts_with("--runs=") || w.starts_with("-r"));
    if chosen {
        return Vec::new();
    }
    vec!["--runs".into(), AB_ROUNDS.to_string()]
}

/// A variant's words with `added` (the shared options and ab's defaults) put among its own
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
    check_labels(&variants, &labels)?;
    let options = compare::Options {
        configurations: true,
        ..opts.paired_options()?
    };
    if let Some(o) = &opts.output {
        crate::core::check_writable(o)?;
    }
    if let Some(dir) = &save {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("--save {}: cannot create it: {e}", dir.display()))?;
    }
    let (plans, keep) = variant_plans(&variants, &shared)?;
    crate::experiments::ab::check_arms(&plans, &variants)?;
    let labels = if labels.is_empty() {
        let workloads: Vec<WorkloadSpec> = plans.iter().map(|p| p.workload.clone()).collect();
        crate::experiments::ab::default_labels(&workloads, &variants)
    } else {
        labels
    };
    let mut bar = progress::Bar::new(&plans[0], plans.len() as u32);
    let c = crate::experiments::ab::run(
        &plans,
        &labels,
        grain,
        &options,
        save.as_deref(),
        &mut |p| bar.update(p),
    )?;
    bar.finish();
    show(&c, opts.format, &opts.output)?;
    if let Some(k) = &keep {
        super::history::record(&c, k);
    }
    opts.gate(&c)
}

/// Two variants or more, and one distinct label each or none.
fn check_labels(variants: &[String], labels: &[String]) -> Result<()> {
    if variants.len() < 2 {
        anyhow::bail!("ab needs at least two --variant configurations");
    }
    if let Some(twice) = labels
        .iter()
        .enumerate()
        .find_map(|(i, l)| labels[..i].contains(l).then_some(l))
    {
        anyhow::bail!(
            "--label '{twice}' is given twice: each variant needs its own (they name the rows \
             and the --save files)"
        );
    }
    if !labels.is_empty() && labels.len() != variants.len() {
        anyhow::bail!(
            "give one --label per --variant ({} labels for {} variants), or none",
            labels.len(),
            variants.len()
        );
    }
    Ok(())
}

/// ab's defaults where no variant's words (nor the shared ones) choose: the floor design
/// (unless a variant is a command, whose samples are whole executions: 100 of them per run
/// could take minutes) and 10 rounds.
fn ab_defaults(variants: &[String], shared: &[String]) -> Vec<String> {
    let mut every: Vec<String> = shared.to_vec();
    let mut commands = false;
    for v in variants {
        let words = shlex::split(v).unwrap_or_default();
        commands |= words.first().is_some_and(|w| w == "exec");
        // An `exec` variant's command (after its --) chooses nothing of syscost's.
        every.extend(words.into_iter().take_while(|w| w != "--"));
    }
    let mut defaults = if commands {
        Vec::new()
    } else {
        floor_unless_chosen(&every)
    };
    defaults.extend(rounds_unless_chosen(&every));
    defaults
}

/// Each variant parsed as a `syscost run` with the shared options and ab's defaults, and where
/// the comparison is recorded: the shared run options' (after --) history options.
fn variant_plans(
    variants: &[String],
    shared: &[String],
) -> Result<(Vec<Plan>, Option<super::args::HistoryOpts>)> {
    let defaults = ab_defaults(variants, shared);
    let mut plans = Vec::new();
    let mut keep = None;
    for v in variants {
        let Some(own) = shlex::split(v) else {
            anyhow::bail!("--variant '{v}': unbalanced quotes");
        };
        let added: Vec<String> = shared.iter().chain(&defaults).cloned().collect();
        let words = before_the_command(own, &added);
        let line = VariantLine::try_parse_from(&words).map_err(|e| {
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
        plans.push(plan_of(workload, &args)?);
    }
    Ok((plans, keep))
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
    fn ten_rounds_are_the_default_unless_the_runs_are_chosen() {
        assert_eq!(
            rounds_unless_chosen(&words("syscall --cpu 1")),
            words("--runs 10")
        );
        for chosen in [
            "syscall --runs 6",
            "syscall --runs=8",
            "syscall -r 7",
            "syscall -r7",
        ] {
            assert!(rounds_unless_chosen(&words(chosen)).is_empty(), "{chosen}");
        }
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

    #[test]
    fn the_floor_is_the_default_unless_the_samples_are_chosen() {
        assert_eq!(
            floor_unless_chosen(&words("syscall --cpu 1 --runs 10")),
            words("--estimator min --sample-time 10ms --samples 100")
        );
        for chosen in [
            "syscall --estimator median",
            "syscall --samples=20",
            "spin --sample-time 50ms",
            "syscall --ops 1000",
        ] {
            assert!(floor_unless_chosen(&words(chosen)).is_empty(), "{chosen}");
        }
    }
}
