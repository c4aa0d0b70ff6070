//! `syscost ab`: configurations given as `run` arguments, measured interleaved and compared.

use super::*;

pub(super) const AB_EXAMPLES: &str = "Examples:
  syscost ab --variant 'syscall --syscall getpid' --variant 'syscall --syscall getppid' -- --cpu 1 --runs 10
      both measured in alternating order (ABBA), then compared
  syscost ab --variant 'syscall' --variant 'syscall' --label A --label A2 -- --cpu 1
      an A/A check of this machine's noise";

pub(super) fn ab(
    variants: Vec<String>,
    labels: Vec<String>,
    save: Option<PathBuf>,
    opts: CompareArgs,
    shared: Vec<String>,
) -> Result<()> {
    if variants.len() < 2 {
        anyhow::bail!("ab needs at least two --variant configurations");
    }
    if !labels.is_empty() && labels.len() != variants.len() {
        anyhow::bail!(
            "give one --label per --variant ({} labels for {} variants), or none",
            labels.len(),
            variants.len()
        );
    }
    let options = compare::Options {
        configurations: true,
        ..opts.options()?
    };
    if let Some(o) = &opts.output {
        crate::core::check_writable(o)?;
    }
    if let Some(dir) = &save {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("--save {}: cannot create it: {e}", dir.display()))?;
    }
    let mut plans = Vec::new();
    // Where the comparison is recorded: the shared run options' (after --) history options.
    let mut keep = None;
    for v in &variants {
        let Some(mut words) = shlex::split(v) else {
            anyhow::bail!("--variant '{v}': unbalanced quotes");
        };
        words.extend(shared.iter().cloned());
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
    // What must match is checked before anything is measured.
    for (p, v) in plans.iter().zip(&variants).skip(1) {
        if p.subtract_overhead != plans[0].subtract_overhead {
            anyhow::bail!(
                "--variant '{v}': --subtract-overhead must be the same for every variant"
            );
        }
        if p.workload.op_name() != plans[0].workload.op_name() {
            anyhow::bail!(
                "--variant '{v}' counts {}, the first counts {}: per-op figures would not compare",
                crate::core::plural(p.workload.op_name()),
                crate::core::plural(plans[0].workload.op_name())
            );
        }
    }
    let labels = if labels.is_empty() {
        let workloads: Vec<WorkloadSpec> = plans.iter().map(|p| p.workload.clone()).collect();
        crate::experiments::ab::default_labels(&workloads, &variants)
    } else {
        labels
    };
    let mut bar = progress::Bar::new(&plans[0], plans.len() as u32);
    let c = crate::experiments::ab::run(&plans, &labels, &options, save.as_deref(), &mut |p| {
        bar.update(p)
    })?;
    bar.finish();
    show(&c, opts.format, &opts.output)?;
    if let Some(k) = &keep {
        super::history::record(&c, k);
    }
    opts.gate(&c)
}
