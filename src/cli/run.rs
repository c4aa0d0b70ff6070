//! `syscost run NAME`: one subcommand per registered workload; thread sweeps of uprobe.

use super::*;

macro_rules! run_command {
    ($($variant:ident($module:ident)),* $(,)?) => {
        /// `syscost run NAME`: one subcommand per workload of the registry
        /// (`workloads::with_workloads!`), its options from the workload's `Params`.
        #[derive(Subcommand, Debug)]
        pub enum RunCommand {
            $(
                #[command(
                    name = <workloads::$module::Params as Spec>::NAME,
                    about = <workloads::$module::Params as Spec>::ABOUT,
                    after_help = <workloads::$module::Params as Spec>::EXAMPLES
                )]
                $variant {
                    #[command(flatten)]
                    params: workloads::$module::Params,
                    #[command(flatten)]
                    common: RunArgs,
                },
            )*
        }

        impl RunCommand {
            pub(super) fn into_parts(self) -> Result<(WorkloadSpec, RunArgs)> {
                Ok(match self {
                    $(RunCommand::$variant { mut params, common } => {
                        params.complete_command_line()?;
                        (WorkloadSpec::$variant(params), common)
                    })*
                })
            }
        }
    };
}
workloads::with_workloads!(run_command);

/// Parses one `--variant` of `syscost ab` as the arguments of `syscost run`.
#[derive(Parser, Debug)]
#[command(name = "variant", no_binary_name = true)]
pub(super) struct VariantLine {
    #[command(subcommand)]
    pub(super) run: RunCommand,
}

/// `syscost run`'s runs when `--runs` is not given.
const RUNS: u32 = 5;

/// The plan of `syscost run` with these arguments, validated.
pub(super) fn plan_of(workload: WorkloadSpec, args: &RunArgs) -> Result<Plan> {
    let plan = unchecked_plan_of(workload, args)?;
    runner::validate(&plan)?;
    Ok(plan)
}

/// The plan before [`runner::validate`]: ab applies its defaults first.
pub(super) fn unchecked_plan_of(workload: WorkloadSpec, args: &RunArgs) -> Result<Plan> {
    // A bad --tag is refused before anything is measured.
    args.keep.parsed_tags()?;
    if let Some(why) = workload.ops_required()
        && args.ops.is_none()
    {
        anyhow::bail!("{why}");
    }
    let events: EventList = if args.events.iter().any(|e| e == "none") {
        if args.events.len() > 1 {
            anyhow::bail!("-e none counts nothing: give it alone, without other events");
        }
        EventList { groups: Vec::new() }
    } else if args.events.is_empty() && workload.counting_perturbs().is_some() {
        EventList { groups: Vec::new() }
    } else if args.events.is_empty() {
        match workload.extra_events() {
            "" => counters::default_events(),
            extra => counters::parse_event_list(&[counters::events::DEFAULT_EVENTS, extra])?,
        }
    } else {
        counters::parse_event_list(&args.events)?
    };
    let until = args.until.map(|pct| runner::Until {
        pct,
        max_time: args.max_time,
        max_runs: 1000,
    });
    let counts = match &args.copies {
        Some(c) => super::args::copy_counts(c)?,
        None => Vec::new(),
    };
    if counts.iter().any(|&c| c > 1)
        && args.copy_mode == crate::workloads::CopyMode::Thread
        && let Some(why) = workload.not_as_threads()
    {
        anyhow::bail!(
            "--mode thread: {} cannot run as threads of one process ({why}); use --mode process",
            workload.describe()
        );
    }
    if !counts.is_empty() && workload.threads().is_some_and(|t| t > 1) {
        anyhow::bail!(
            "--copies: {} with --threads above 1 runs its own producer threads; give one \
             producer a copy (--threads 1) or sweep the threads without --copies",
            workload.name()
        );
    }
    let sizing = runner::Sizing::here(args.sample_time.is_some());
    let (estimator, samples, sample_time) = args.design(workload.ops_required().is_some(), sizing);
    let plan = Plan {
        copies: counts.first().copied(),
        copy_mode: args.copy_mode,
        until,
        estimator,
        workload,
        events,
        cpus: args.cpu.clone(),
        fifo: args.fifo,
        runs: args.runs.unwrap_or(RUNS),
        samples,
        warmup: args.warmup,
        sample_time,
        ops: args.ops,
        sizing,
        overhead_samples: args.overhead_samples,
        subtract_overhead: args.subtract_overhead,
        pre: args.pre.clone(),
        profile: args.profile,
        audit_rules: args.audit_rules_set()?,
    };
    Ok(plan)
}

pub(super) fn run_workload(workload: WorkloadSpec, args: RunArgs) -> Result<()> {
    if args.list_events {
        for name in counters::events::known_event_names() {
            outln!("{name}");
        }
        return Ok(());
    }
    if let Some(path) = &args.output {
        crate::core::check_writable(path)?;
    }
    let plan = plan_of(workload, &args)?;
    let counts = match &args.copies {
        Some(c) => super::args::copy_counts(c)?,
        None => Vec::new(),
    };
    if counts.len() > 1 {
        return copies_sweep(plan, &counts, &args);
    }
    let mut bar = progress::Bar::new(&plan, 1);
    let mut result: RunResult = runner::run(&plan, &mut |p| bar.update(p))?;
    bar.finish();
    result.check_perturbed(10.0, args.drop_perturbed);
    if let Some(path) = &args.output {
        result.save(path)?;
    }
    show(&result, args.format(), &None)?;
    if let Some(path) = &args.output {
        eprintln!("syscost: result written to {}", path.display());
    }
    super::history::record(&result, &args.keep);
    Ok(())
}

/// `--copies LIST`: every count interleaved in rounds, then will-it-scale's table.
fn copies_sweep(plan: Plan, counts: &[u32], args: &RunArgs) -> Result<()> {
    let plans: Vec<Plan> = counts
        .iter()
        .map(|&c| Plan {
            copies: Some(c),
            ..plan.clone()
        })
        .collect();
    let mut bar = progress::Bar::new(&plans[0], plans.len() as u32);
    let results =
        runner::run_interleaved(&plans, crate::results::Grain::Runs, &mut |p| bar.update(p))?;
    bar.finish();
    let case = format!(
        "{} ({})",
        plan.workload.describe(),
        match plan.copy_mode {
            crate::workloads::CopyMode::Process => "processes",
            crate::workloads::CopyMode::Thread => "threads",
        }
    );
    let scale = crate::experiments::scale::Scale::of_copies(&case, results);
    show(&scale, args.format(), &args.output)?;
    super::history::record(&scale, &args.keep);
    Ok(())
}

pub(super) fn uprobe_run(params: uprobe::Params, common: RunArgs) -> Result<()> {
    let counts = uprobe::parse_threads(&params.thread_counts)?;
    let oversubscribe = params.oversubscribe;
    let cpus = match &common.cpu {
        Some(c) => c.len(),
        None => crate::core::cpus::allowed_cpus()?.len(),
    };
    if let Some(&max) = counts.iter().max()
        && max as usize > cpus
        && !oversubscribe
    {
        anyhow::bail!(
            "--threads {max} is more than the {cpus} CPU(s) the producers may use: pass \
             --oversubscribe to share CPUs, or give --cpu more CPUs"
        );
    }
    if counts.len() == 1 {
        let mut p = params;
        p.threads = counts[0];
        return run_workload(WorkloadSpec::Uprobe(p), common);
    }
    if let Some(path) = &common.output {
        crate::core::check_writable(path)?;
    }
    let mut plans = Vec::new();
    for &t in &counts {
        let mut p = params.clone();
        p.threads = t;
        plans.push(plan_of(WorkloadSpec::Uprobe(p), &common)?);
    }
    let mut bar = progress::Bar::new(&plans[0], plans.len() as u32);
    let results =
        runner::run_interleaved(&plans, crate::results::Grain::Runs, &mut |p| bar.update(p))?;
    bar.finish();
    let scale = crate::experiments::scale::Scale::new(&params.case(), results);
    show(&scale, common.format(), &common.output)?;
    super::history::record(&scale, &common.keep);
    Ok(())
}
