//! `syscost reproduce`: parse, run the investigation's campaign, show its tables beside the
//! paper's, and write them (JSON and a report page) to -o DIR.

use super::boots::{Checker, boot_line};
use super::kept_run::{drop_run, standing};
use super::named::Named;
use super::*;
use crate::experiments::boots::BootRecord;
use crate::experiments::boots::kept::RunKind;
use crate::experiments::boots::life::{self, Keep, Start};
use crate::experiments::boots::saved::{self, Saved};
use crate::experiments::campaign::Campaign;
use crate::experiments::reproduce::kept::{ReproducePlan, Reproducing};
use crate::experiments::reproduce::{self, Investigation};
use crate::kbuild;
use anyhow::Context as _;
use serde::{Deserialize, Serialize};

pub(super) const REPRODUCE_EXAMPLES: &str = "Examples:
  syscost reproduce --list
      each investigation: what it repeats, what it needs and what it costs
  syscost reproduce audit-series --build -o audit-series
      the 2022 audit syscall-exit series on its own code: Debian's linux-source-6.1 built
      as it is and with the series' patches 1, 1-2 and 1-3 (once per machine, kept in
      ~/.cache/syscost), each booted under TCG with 42 exit rules of the series' shape and
      swept over 0, 21 and 42 rules; each patch's exact change per getpid and per turn of
      the rule walk beside the series' figures, cell by cell, in audit-series/
  syscost reproduce syscall-latency --build --kernels target/kernels/boot
      the syscall-latency post: Debian's 6.1 for UEK5, the 6.1 source built before and
      after the fixes for UEK6 and its patched column, 37 rules in an aged slab, 6 boots
      each; each boot's entries' cacheline-spread and crowded sets beside its misses
  syscost reproduce alignment-rfc --build --only a16,a64
      the 2015 function-alignment RFC: the 6.1 source built with -falign-functions=16 and
      =64, the VFS-mix loop under a model of the RFC's Xeon; misses and text size as ratios
      over the 16-byte build, instructions exact
  syscost reproduce uprobe-thread --kernels target/kernels/boot
      the 2024 uprobe thread: uprobe and uretprobe on a nop and a ret, each an arm of
      Debian's 6.12 (and 6.1), counted exactly on one vCPU: instructions a hit, the single
      step's functions and the atomics, each claim tested; its x86-64 table as ratios
Every cell is classed by how it is scored: exact (a count of the code the paper changed, or
its change, within a stated band), modelled (the cache model of the paper's CPU: the paper's
figure within the middle 80% of the boots, unless that range holds another arm's figure for
the row too), ratio (a count's ratio, within 10% where that tells it from 1), direction (the
two arms' boots differ the paper's way, Mann-Whitney p < 0.05); a measured cell whose test
could not fail or decide is said so and not scored. Shown, never scored: a stand-in's
totals, time under TCG, a figure printed twice, a misprint, or not reproducible here (cycles,
branch misses). Boots
are not kept in the history; the campaign command it ran is printed, to run again or change.
Each boot is kept as it ends: a reproduction stopped (killed, a failed boot, a power cut) goes
on with `syscost reproduce resume`, booting only what it lacks; `reproduce status` lists the
kept ones, `reproduce abort` drops one.
syscost show DIR/NAME.json scores a saved reproduction again with the current tables.";

/// What to do with a reproduction in progress.
#[derive(Subcommand, Debug)]
pub enum ReproduceAction {
    /// Every reproduction kept (running or stopped), with its boots so far.
    Status(ReproduceKept),
    /// Drop a stopped reproduction's kept boots (ID, or the only one kept).
    Abort(ReproduceOne),
    /// Go on with a stopped reproduction (ID, or the only one kept): boot only what it lacks,
    /// with the options it was started with, then score, show and write it as if it had not
    /// stopped.
    Resume(ReproduceOne),
}

/// Where reproductions keep their boots.
#[derive(Args, Debug, Default)]
pub struct ReproduceKept {
    /// The directory reproductions keep their boots in, a state file each [default:
    /// $XDG_STATE_HOME/syscost/reproductions, else ~/.local/state/syscost/reproductions].
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

impl ReproduceKept {
    fn dir(&self) -> Result<PathBuf> {
        match &self.state {
            Some(d) => Ok(d.clone()),
            None => saved::default_dir(RunKind::Reproduction),
        }
    }
}

/// One kept reproduction.
#[derive(Args, Debug)]
pub struct ReproduceOne {
    /// The reproduction's id (as `reproduce status` lists them) [default: the only one kept].
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub kept: ReproduceKept,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReproduceArgs {
    #[command(subcommand)]
    pub action: Option<ReproduceAction>,
    /// The investigation: audit-series, syscall-latency, alignment-rfc or uprobe-thread.
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    /// List the investigations: what each repeats, needs and costs.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
    /// The directory holding Debian's kernel images (vmlinuz-VERSION) for the arms that boot
    /// one, each the newest of its series there (syscall-latency's UEK5, uprobe-thread's
    /// arms); the other arms boot syscost's own builds (--build).
    #[arg(long, value_name = "DIR", default_value = "/boot")]
    pub kernels: PathBuf,
    /// An arm's kernel instead of the one --kernels finds or syscost built: NAME=KERNEL (a
    /// bzImage).
    #[arg(long = "arm", value_name = "NAME=KERNEL")]
    pub arms: Vec<Named<PathBuf>>,
    /// Build the kernels the investigation compares that are not built yet (audit-series: Debian's
    /// linux-source-6.1 and the series' patches 1, 1-2 and 1-3; alignment-rfc: its 11
    /// alignments), kept in $SYSCOST_CACHE, else $XDG_CACHE_HOME/syscost, else
    /// ~/.cache/syscost, by a hash of source, changes and configuration. Without it, only
    /// builds already made boot.
    #[arg(long)]
    pub build: bool,
    /// Boot only these arms (comma-separated): a part of the investigation, whose other cells
    /// are then not measured.
    #[arg(long, value_name = "ARMS", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Boots per arm [default: the investigation's: 2, which let exact counts show their
    /// boot-to-boot range; audit-series and syscall-latency 6, whose modelled misses are
    /// scored against the middle 80% of the boots' placements and whose misses' direction, a
    /// rank test of two arms' boots, needs 4 or more a side]. 1 for a quick look.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub boots: Option<u32>,
    /// Runs of the measurement in each boot, each a fresh worker process [default: the
    /// investigation's: 3; audit-series and syscall-latency 8, each run with its rule entries
    /// placed anew (campaign --placement run), so 6 boots are 48 placements an arm].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: Option<u32>,
    /// Samples of each run [default: run's: counted exactly, two windows each of 1, 2 and 4
    /// times its base].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub samples: Option<u32>,
    /// Each sample's length, e.g. 50ms [default: run's: counted exactly, windows are sized by
    /// count, not time].
    #[arg(long, value_name = "DURATION")]
    pub sample_time: Option<String>,
    /// The order of the boots is seeded by this number [default: from the clock].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write NAME.json (the paper's cells, syscost's, and the campaign with every boot),
    /// NAME.html (its report page) and the rule set it loaded into DIR.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub kept: ReproduceKept,
}

/// What a kept reproduction shows and writes, kept with it so that a resume parses no command
/// line again (-o made absolute: a resume started elsewhere writes where it was told to).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Shown {
    format: Format,
    output: Option<PathBuf>,
}

impl ReproduceArgs {
    pub(super) fn run(self) -> Result<()> {
        match &self.action {
            Some(ReproduceAction::Status(k)) => return status(k),
            Some(ReproduceAction::Abort(k)) => return abort(k),
            Some(ReproduceAction::Resume(k)) => return resume(k),
            None => {}
        }
        let Some(name) = self.name.as_deref().filter(|_| !self.list) else {
            return list();
        };
        let inv = reproduce::named(name).map_err(anyhow::Error::msg)?;
        inv.paper().map_err(anyhow::Error::msg)?;
        let given = self.given(inv)?;
        let mut building = Building::default();
        let mut progress = |p| building.hear(p);
        let build = self
            .build
            .then_some(&mut progress as &mut dyn FnMut(kbuild::Progress));
        let kernels = inv.kernels(&self.kernels, &given, &self.only, build)?;
        building.done();
        if let Some(d) = &self.output {
            std::fs::create_dir_all(d)
                .with_context(|| format!("cannot create -o {}", d.display()))?;
            for (file, text) in inv.rules {
                crate::core::write_atomic(&d.join(file), text.as_bytes())?;
            }
        }
        let dir = self.kept.dir()?;
        let seed = self.seed.unwrap_or_else(crate::core::now_unix);
        let id = format!("{}-{seed}", crate::core::now_unix());
        // Its status is rendered from its plan: no command line is kept.
        let mut run = Saved::<ReproducePlan>::new(&dir, id, seed)?;
        // The arms read the rule sets from the run's own files (written there as it starts).
        let rules_dir = crate::experiments::boots::kept::files_of(&run.path());
        let settings = reproduce::campaign::Settings {
            boots: self.boots,
            runs: self.runs,
            samples: self.samples,
            sample_time: self.sample_time.clone(),
            seed: Some(seed),
        };
        let ask = (inv.campaign(&kernels, &rules_dir, &settings)).map_err(anyhow::Error::msg)?;
        run.kept.plan = Some(ReproducePlan {
            investigation: inv.name.into(),
            campaign: ask.plan(ask.boots.seed(), &Checker("campaign"))?,
            command: super::rerun::campaign(&ask),
        });
        let shown = Shown {
            format: self.format,
            output: self
                .output
                .as_deref()
                .map(std::path::absolute)
                .transpose()?,
        };
        run.kept.shown = serde_json::to_value(&shown)?;
        reproduce_kept(run, Start::New)
    }

    /// The arms given a kernel of their own (--arm), each checked to be one of `inv`'s, as
    /// --only's are.
    fn given(&self, inv: &Investigation) -> Result<Vec<(String, PathBuf)>> {
        let names = || {
            let n: Vec<&str> = inv.arms.iter().map(|x| x.name).collect();
            n.join(", ")
        };
        let mut given = Vec::new();
        for Named { name, value } in &self.arms {
            if !inv.arms.iter().any(|x| x.name == name) {
                anyhow::bail!("--arm {name}: {} has the arms {}", inv.name, names());
            }
            given.push((name.clone(), value.clone()));
        }
        for n in &self.only {
            if !inv.arms.iter().any(|x| x.name == n) {
                anyhow::bail!("--only {n}: {} has the arms {}", inv.name, names());
            }
        }
        Ok(given)
    }
}

/// Run (or go on with) the reproduction `run`, kept in `dir` (its life: [`life::live`]).
fn reproduce_kept(run: Saved<ReproducePlan>, start: Start) -> Result<()> {
    let shown: Shown = serde_json::from_value(run.kept.shown.clone())
        .context("the reproduction's kept state has no output options")?;
    let plan = run
        .kept
        .plan
        .as_ref()
        .context("the kept reproduction has no plan")?;
    let inv = plan.investigation()?;
    let mut watch = Watching {
        inv,
        paper: inv.paper().map_err(anyhow::Error::msg)?,
        shown,
        started: std::time::Instant::now(),
        before: run.kept.boots.iter().map(|b| b.seconds).sum(),
    };
    life::live(run, start, &mut Reproducing, &mut watch)?;
    Ok(())
}

/// What a reproduction says and shows at each point of its life.
struct Watching {
    inv: &'static Investigation,
    paper: reproduce::paper::Paper,
    shown: Shown,
    started: std::time::Instant,
    /// The seconds of the boots kept by the processes before this one.
    before: f64,
}

impl life::Watch<Saved<ReproducePlan>, Campaign> for Watching {
    fn started(&mut self, run: &Saved<ReproducePlan>, plan: &ReproducePlan) {
        let path = run.path();
        eprintln!(
            "syscost: reproducing {}: {}; its boots are kept in {} as each ends",
            self.paper.title,
            shown(&plan.command),
            path.display()
        );
    }

    fn booted(&mut self, _: &str, b: &BootRecord) {
        eprintln!("syscost: {}", boot_line(b));
    }

    fn finish(&mut self, run: &Saved<ReproducePlan>, c: &mut Campaign) -> Result<()> {
        let plan = run
            .kept
            .plan
            .as_ref()
            .expect("a finished run keeps its plan");
        c.id = run.kept.id.clone();
        let l1d = self.inv.l1d().map_err(anyhow::Error::msg)?;
        let seconds = self.before + self.started.elapsed().as_secs_f64();
        let command = plan.command.clone();
        let r = reproduce::compare(
            &self.paper,
            self.inv.series,
            c.clone(),
            l1d,
            command,
            seconds,
        );
        write(&self.shown, self.inv, &r)?;
        if self.shown.format == Format::Json {
            out(format!("{}\n", json::to_json(&r)))
        } else {
            out(r.text(self.shown.format))
        }
    }
}

/// `reproduce resume`: the reproduction `k` names, or the only one kept.
fn resume(k: &ReproduceOne) -> Result<()> {
    let dir = k.kept.dir()?;
    let Some(mut s) = saved::pick::<ReproducePlan>(&dir, k.id.as_deref())? else {
        anyhow::bail!(
            "no reproduction kept in {}: nothing to resume",
            dir.display()
        );
    };
    s.take_over()?;
    reproduce_kept(s, Start::Resumed)
}

/// `reproduce status`: every kept reproduction and where it stands.
fn status(k: &ReproduceKept) -> Result<()> {
    let dir = k.dir()?;
    let all = saved::list::<ReproducePlan>(&dir)?;
    if all.is_empty() {
        outln!("no reproduction kept in {}", dir.display());
    }
    for s in &all {
        let state = match s.running() {
            true => format!("running (process {})", s.owner.0),
            false => "stopped".into(),
        };
        let Some(plan) = &s.kept.plan else { continue };
        outln!(
            "reproduction {} ({state}) of {}, {} arm(s) x {} boot(s): {}",
            s.kept.id,
            plan.investigation,
            plan.campaign.boot.arms.len(),
            plan.campaign.rounds,
            shown(&plan.command)
        );
        for line in standing(s) {
            outln!("  {line}");
        }
    }
    if all.iter().any(|s| !s.running()) {
        outln!(
            "`syscost reproduce resume ID` goes on with one; `syscost reproduce abort ID` drops it"
        );
    }
    Ok(())
}

/// `reproduce abort`: drop a stopped reproduction's boots.
fn abort(k: &ReproduceOne) -> Result<()> {
    let dir = k.kept.dir()?;
    let Some(s) = saved::pick::<ReproducePlan>(&dir, k.id.as_deref())? else {
        outln!(
            "no reproduction kept in {}: nothing to abort",
            dir.display()
        );
        return Ok(());
    };
    s.refuse_running("abort")?;
    drop_run(&s, &s.path())
}

/// Write the reproduction `r` to -o DIR, when given: its JSON and its report page.
fn write(shown: &Shown, inv: &Investigation, r: &reproduce::Reproduction) -> Result<()> {
    let Some(dir) = &shown.output else {
        return Ok(());
    };
    let json = json::to_json(r);
    write_file(
        &dir.join(format!("{}.json", inv.name)),
        format!("{json}\n").as_bytes(),
    )?;
    let loaded = report::loaded::parse(inv.name, &json)
        .map_err(|e| anyhow::anyhow!("the reproduction does not read back: {e}"))?;
    let page = report::html::page(&[(format!("{}.json", inv.name), loaded)]);
    write_file(&dir.join(format!("{}.html", inv.name)), page.as_bytes())
}

/// A build's progress on stderr: its stages as lines, and while make compiles, a bar on a
/// terminal, else a line a minute.
#[derive(Default)]
struct Building {
    bar: Option<indicatif::ProgressBar>,
    said: Option<std::time::Duration>,
}

/// How often a build's progress is said on a stderr that is not a terminal.
const SAID_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl Building {
    fn hear(&mut self, p: kbuild::Progress) {
        use std::io::IsTerminal;
        let kbuild::Progress::Compiling {
            name,
            done,
            total,
            elapsed,
        } = p
        else {
            self.done();
            return building_line(p);
        };
        if !std::io::stderr().is_terminal() {
            let due = self.said.unwrap_or_default() + SAID_EVERY;
            if done > 0 && elapsed >= due {
                self.said = Some(elapsed);
                eprintln!("syscost: {}", compiled(&name, done, total, elapsed));
            }
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total.unwrap_or(0) as u64);
            let template = match total {
                Some(_) => "{msg} [{bar:30}] {pos}/{len} objects, {eta} left",
                None => {
                    "{msg} {pos} objects compiled, {elapsed} (no total yet: the first build of \
                         this configuration)"
                }
            };
            b.set_style(
                indicatif::ProgressStyle::with_template(template)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            b.set_message(format!("syscost: building {name}"));
            b
        });
        bar.set_position(done as u64);
    }

    /// The bar, if one shows, cleared.
    fn done(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        self.said = None;
    }
}

/// `building NAME: 640 of 1,205 objects (53%) in 1m 50s, about 1m 35s left`.
fn compiled(name: &str, done: usize, total: Option<usize>, elapsed: std::time::Duration) -> String {
    let took = humantime::format_duration(std::time::Duration::from_secs(elapsed.as_secs()));
    match total {
        Some(t) if done > 0 && t > done => {
            let left = elapsed.mul_f64((t - done) as f64 / done as f64);
            let left = humantime::format_duration(std::time::Duration::from_secs(left.as_secs()));
            format!(
                "building {name}: {done} of {t} objects ({:.0}%) in {took}, about {left} left",
                100.0 * done as f64 / t as f64
            )
        }
        Some(t) => format!("building {name}: {done} of {t} objects in {took}"),
        None => format!(
            "building {name}: {done} objects compiled in {took} (the first build of this \
             configuration here: no total yet)"
        ),
    }
}

/// A build's stage, on stderr.
fn building_line(p: kbuild::Progress) {
    use kbuild::Progress;
    match p {
        Progress::Cached(b) => eprintln!(
            "syscost: build {} is made ({}, built in {:.0} s)",
            b.name,
            b.image.display(),
            b.seconds
        ),
        Progress::Unpacking => eprintln!("syscost: unpacking the kernel source (once)"),
        Progress::Starting {
            name,
            from_base: false,
        } => eprintln!(
            "syscost: building {name}: the whole source tree compiles, once per machine \
             (minutes: 2 to 4 on 2 CPUs)"
        ),
        Progress::Starting {
            name,
            from_base: true,
        } => eprintln!(
            "syscost: building {name} on its base's objects: only what it changes compiles"
        ),
        Progress::Built(b) => eprintln!(
            "syscost: built {} in {:.0} s: {}",
            b.name,
            b.seconds,
            b.image.display()
        ),
        Progress::Compiling { .. } => {}
    }
}

/// `syscost` and the words of `command`, quoted for a shell.
fn shown(command: &[String]) -> String {
    let words = std::iter::once("syscost").chain(command.iter().map(String::as_str));
    shlex::try_join(words).unwrap_or_default()
}

/// `reproduce --list`: each investigation, what it repeats and what it needs.
fn list() -> Result<()> {
    let width = reproduce::ALL
        .iter()
        .map(|i| i.name.len())
        .max()
        .unwrap_or(0)
        + 2;
    for i in reproduce::ALL {
        outln!("{:width$}{}", i.name, i.about);
        outln!("{:width$}needs: {}", "", i.needs);
    }
    Ok(())
}
