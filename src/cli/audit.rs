//! `syscost audit`: status, the rule sweep, the residue, cleanup.

use super::*;

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Enabled/locked, rules per filter list, backlog and lost (what auditctl -s shows).
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure a syscall with audit off, on, and with each number of exit rules.
    #[command(after_help = SWEEP_HELP)]
    Sweep {
        /// Rule counts of the audit-on steps, strictly increasing: 0,16,32,48 or 0-48:16.
        #[arg(
            long,
            default_value = "0,16,32,48",
            value_name = "COUNTS",
            allow_hyphen_values = true
        )]
        rules: String,
        /// How many of the rules name the benchmarked syscall but fail on a field (they reach
        /// audit_filter_rules, like 5 of the 42 production rules of the 2022 audit syscall-exit latency series, for getpid).
        #[arg(long, default_value_t = 0, value_name = "K")]
        matching: u32,
        /// The benchmark (only syscall for now).
        #[arg(long, value_enum, default_value_t = SweepBench::Syscall)]
        bench: SweepBench,
        /// Leave out the "audit off, no task rule" step.
        #[arg(long)]
        no_residue_step: bool,
        /// Sweep any workload instead of --syscall: the arguments of `syscost run`, quoted
        /// (e.g. 'file --op open-close --dir /dev/shm', or 'exec -- ./bench.sh' with the
        /// sweep's own --ops).
        /// --matching rules then name the system calls that workload makes.
        #[arg(long, value_name = "ARGS", conflicts_with = "syscall")]
        workload: Option<String>,
        #[command(flatten)]
        params: syscall::Params,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Measure the residue: a syscall with audit off, with and without a never,task rule
    /// (never enables audit itself).
    Residue {
        #[command(flatten)]
        params: syscall::Params,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Remove audit rules and restore the enabled flag left by a syscost that was killed.
    Cleanup,
    /// Print the addresses of the kernel's audit syscall-exit rule entries, one per line, for
    /// `syscost cachesets --addresses` (needs CONFIG_KALLSYMS_ALL, /proc/kcore and root; says
    /// which is missing).
    #[command(after_help = ADDRESSES_HELP)]
    Addresses {
        /// Write the list to FILE (atomically) instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub(super) const ADDRESSES_HELP: &str = "The kernel keeps each rule as a struct audit_entry from \
kmalloc-512 on audit_filter_list[AUDIT_FILTER_EXIT]; syscost finds the list head in /proc/kallsyms \
and walks it through /proc/kcore, reading only. The 2023 'Syscall latency' post on audit rules did this with drgn.

Examples:
  syscost audit addresses -o rules.txt && syscost cachesets --addresses rules.txt --size 408";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepBench {
    Syscall,
}

pub(super) const SWEEP_HELP: &str = "How it measures:
  Steps: audit off with a never,task rule (the baseline: workers get no audit context, as on a
  kernel where audit was never enabled), audit off without it (the per-task work a kernel keeps
  once audit has been enabled in this boot), then audit on with each rule count. Every round
  runs every step once, in alternating order; the per-rule cost is a least-squares slope over
  every run of the audit-on steps, with its 95% CI and R².

Your own rules (--audit-rules FILE, any file auditctl -R reads): the audit-on steps hold the
  file's first 0, 1, ..., n rules in its order, plus one with rules 2-n; each rule's cost is the
  step with it against the step without it, paired by round (the first rule's on top of the
  others, so that the filters starting to run are a line of their own). The rules are ranked,
  costliest first, each named by how the kernel walks it (at every syscall, at the measured
  syscall, a mask test only, a watch, another list), with the cheaper rewrite auditctl allows;
  and the whole set is costed against audit on without rules and against audit off. A sweep of
  n rules takes n+4 steps per round. Under `campaign --emulated-counters` each rule's cost is
  exact, in kernel instructions.

State: needs root (CAP_AUDIT_CONTROL). Each rule syscost adds is keyed syscost-<pid>-...; only
those are removed, and the enabled flag is restored, on every exit path. Locked audit
(enabled=2) is refused before anything changes. After a SIGKILL, the next audit command (or
`syscost audit cleanup`) removes the leftovers. Enabling audit has one effect that cannot be
undone until reboot: new processes keep per-task audit work (the residue step measures it).

Examples:
  syscost audit sweep --rules 0,16,32,48 --cpu 1
  syscost audit sweep --rules 0-64:8 --matching 5 --syscall getpid --runs 10 -o sweep.json
  syscost audit sweep --audit-rules /etc/audit/rules.d/audit.rules --cpu 1 --runs 6";

pub(super) fn show_sweep(
    sweep: &crate::experiments::audit_sweep::Sweep,
    common: &RunArgs,
) -> Result<()> {
    show(sweep, common.format(), &common.output)?;
    super::history::record(sweep, &common.keep);
    Ok(())
}

/// `audit sweep --workload ARGS`: a workload and its own options; run options belong to the
/// sweep itself, so one given inside is refused rather than silently ignored.
fn sweep_workload(text: &str) -> Result<WorkloadSpec> {
    let Some(words) = shlex::split(text) else {
        anyhow::bail!("--workload '{text}': unbalanced quotes");
    };
    let parse = |words: &[String]| {
        VariantLine::try_parse_from(words).map_err(|e| {
            anyhow::anyhow!(
                "--workload '{text}' is not a valid `syscost run` workload: {}",
                e.render().to_string().trim()
            )
        })
    };
    let line = parse(&words)?;
    // The run options' defaults, from a workload that needs no arguments of its own.
    let bare = parse(&["syscall".to_string()])?;
    let (spec, args) = line.run.into_parts()?;
    let (_, defaults) = bare.run.into_parts()?;
    if args != defaults {
        anyhow::bail!(
            "--workload '{text}': give the workload and its own options only; run options \
             (--runs, --cpu, -e, --ops, ...) go to `audit sweep` itself"
        );
    }
    if spec.threads().is_some() {
        anyhow::bail!(
            "--workload: {} is not swept by audit (it has its own threads)",
            spec.name()
        );
    }
    Ok(spec)
}

/// `audit status`: the kernel's audit state, after removing what a killed syscost left.
fn status(json: bool) -> Result<()> {
    let mut sock = crate::audit::AuditSocket::open()?;
    for n in crate::audit::session::cleanup_leftovers(&mut sock)? {
        eprintln!("syscost: {n}");
    }
    let s = sock.status()?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    let lists: Vec<String> = s.rules.iter().map(|(l, n)| format!("{l} {n}")).collect();
    let lists = if lists.is_empty() {
        String::new()
    } else {
        format!(" ({})", lists.join(", "))
    };
    let locked = if s.locked() {
        " (locked until reboot)"
    } else {
        ""
    };
    outln!(
        "enabled {}{locked}\nfailure {}\npid {}\nrate_limit {}\nbacklog_limit {}\nlost {}\n\
         backlog {}\nrules {}{lists}",
        s.enabled,
        s.failure,
        s.pid,
        s.rate_limit,
        s.backlog_limit,
        s.lost,
        s.backlog,
        s.rule_count()
    );
    Ok(())
}

/// `audit addresses`: where the exit rules' entries sit in memory, in list order.
fn addresses(output: &Option<std::path::PathBuf>) -> Result<()> {
    if let Some(o) = output {
        crate::core::check_writable(o)?;
    }
    let addrs = crate::audit::addresses::exit_rule_addresses()?;
    let mut text = format!(
        "# {} audit syscall-exit rule entries (struct audit_entry, kmalloc-512), in list order\n",
        addrs.len()
    );
    for a in &addrs {
        text.push_str(&format!("{a:#x}\n"));
    }
    file_or_stdout(&text, output)
}

pub(super) fn audit_command(cmd: AuditCommand) -> Result<()> {
    use crate::audit;
    match cmd {
        AuditCommand::Status { json } => status(json),
        AuditCommand::Addresses { output } => addresses(&output),
        AuditCommand::Cleanup => {
            let mut sock = audit::AuditSocket::open()?;
            let notes = audit::session::cleanup_leftovers(&mut sock)?;
            if notes.is_empty() {
                outln!("nothing to clean up: no audit rules or state left by a killed syscost");
            }
            for n in notes {
                outln!("{n}");
            }
            Ok(())
        }
        AuditCommand::Residue { params, common } => {
            let plan = plan_of(WorkloadSpec::Syscall(params), &common)?;
            let sp = crate::experiments::audit_sweep::SweepPlan {
                plan,
                rules: Vec::new(),
                matching: 0,
                residue_step: true,
            };
            let mut bar = progress::Bar::new(&sp.plan, 2);
            let sweep = crate::experiments::audit_sweep::run(&sp, &mut |p| bar.update(p))?;
            bar.finish();
            show_sweep(&sweep, &common)
        }
        AuditCommand::Sweep {
            rules,
            matching,
            bench: _,
            no_residue_step,
            workload,
            params,
            common,
        } => {
            let counts = crate::experiments::audit_sweep::parse_rule_counts(&rules)?;
            if let Some(path) = &common.output {
                crate::core::check_writable(path)?;
            }
            let spec = match &workload {
                Some(w) => sweep_workload(w)?,
                None => WorkloadSpec::Syscall(params),
            };
            let plan = plan_of(spec, &common)?;
            let sp = crate::experiments::audit_sweep::SweepPlan {
                plan,
                rules: counts,
                matching,
                residue_step: !no_residue_step,
            };
            let steps = sp.rules.len() as u32 + 1 + u32::from(sp.residue_step);
            let mut bar = progress::Bar::new(&sp.plan, steps);
            let sweep = crate::experiments::audit_sweep::run(&sp, &mut |p| bar.update(p))?;
            bar.finish();
            show_sweep(&sweep, &common)
        }
    }
}
