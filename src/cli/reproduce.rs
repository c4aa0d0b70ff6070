//! `syscost reproduce`: parse, run the investigation's campaign, show its tables beside the
//! paper's, and write them (JSON and a report page) to -o DIR.

use super::boots::{Checker, boot_line};
use super::campaign::name_value;
use super::*;
use crate::experiments::reproduce::{self, Investigation};
use crate::kbuild;
use anyhow::Context as _;

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
syscost show DIR/NAME.json scores a saved reproduction again with the current tables.";

#[derive(Args, Debug)]
pub struct ReproduceArgs {
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
    pub arms: Vec<String>,
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
}

impl ReproduceArgs {
    pub(super) fn run(self) -> Result<()> {
        let Some(name) = self.name.as_deref().filter(|_| !self.list) else {
            return list();
        };
        let inv = reproduce::named(name).map_err(anyhow::Error::msg)?;
        let paper = inv.paper().map_err(anyhow::Error::msg)?;
        let mut given = Vec::new();
        for a in &self.arms {
            let (n, k) = name_value("--arm", a)?;
            if !inv.arms.iter().any(|x| x.name == n) {
                let names: Vec<&str> = inv.arms.iter().map(|x| x.name).collect();
                anyhow::bail!("--arm {n}: {name} has the arms {}", names.join(", "));
            }
            given.push((n.to_string(), PathBuf::from(k)));
        }
        for n in &self.only {
            if !inv.arms.iter().any(|x| x.name == n) {
                let names: Vec<&str> = inv.arms.iter().map(|x| x.name).collect();
                anyhow::bail!("--only {n}: {name} has the arms {}", names.join(", "));
            }
        }
        let mut building = Building::default();
        let mut progress = |p| building.hear(p);
        let build = self
            .build
            .then_some(&mut progress as &mut dyn FnMut(kbuild::Progress));
        let kernels = inv.kernels(&self.kernels, &given, &self.only, build)?;
        building.done();
        // Without -o, the rules go to a directory of this process's, removed when it ends.
        let scratch;
        let rules_dir = match &self.output {
            Some(d) => {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("cannot create -o {}", d.display()))?;
                d.clone()
            }
            None => {
                scratch = crate::boot::workdir()?;
                scratch.path().to_path_buf()
            }
        };
        for (file, text) in inv.rules {
            crate::core::write_atomic(&rules_dir.join(file), text.as_bytes())?;
        }
        let settings = reproduce::campaign::Settings {
            boots: self.boots,
            runs: self.runs,
            samples: self.samples,
            sample_time: self.sample_time.clone(),
            seed: self.seed,
        };
        let ask = (inv.campaign(&kernels, &rules_dir, &settings)).map_err(anyhow::Error::msg)?;
        let plan = ask.plan(ask.boots.seed(), &Checker("campaign"))?;
        let command = super::rerun::campaign(&ask);
        eprintln!("syscost: reproducing {}: {}", paper.title, shown(&command));
        let started = std::time::Instant::now();
        let c = campaign::run_plan(&plan, &mut |b| eprintln!("syscost: {}", boot_line(b)))?;
        let l1d = inv.l1d().map_err(anyhow::Error::msg)?;
        let seconds = started.elapsed().as_secs_f64();
        let r = reproduce::compare(&paper, inv.series, c, l1d, command, seconds);
        self.write(inv, &r)?;
        if self.format == Format::Json {
            out(format!("{}\n", json::to_json(&r)))
        } else {
            out(r.text(self.format))
        }
    }

    fn write(&self, inv: &Investigation, r: &reproduce::Reproduction) -> Result<()> {
        let Some(dir) = &self.output else {
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
