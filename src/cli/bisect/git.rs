//! `syscost bisect step` (one build of a kernel tree, for `git bisect run`) and `syscost
//! bisect git` (git bisect driven by syscost). syscost never builds on its own initiative: it
//! runs the user's --build in the user's tree, and boots the image it leaves.

use super::common::{Common, finish, git};
use super::step::{End, StepPlan, StepState, build_here, load};
use crate::cli::kept_run::Shown;
use crate::cli::*;
use crate::experiments::boots::Arm;
use anyhow::Context;
use std::path::Path;
use std::process::Command as Process;

#[derive(Args, Debug)]
pub struct StepArgs {
    /// The good end's kernel image (built before, kept outside the tree).
    #[arg(long, value_name = "FILE", required = true)]
    pub good_image: PathBuf,
    /// The bad end's kernel image.
    #[arg(long, value_name = "FILE", required = true)]
    pub bad_image: PathBuf,
    /// The image the build leaves, e.g. arch/x86/boot/bzImage.
    #[arg(long, value_name = "PATH", default_value = "arch/x86/boot/bzImage")]
    pub image: PathBuf,
    /// The build command, run by sh in the current directory before booting: a failure is a
    /// skip (125), as for a commit that does not build.
    #[arg(long, value_name = "COMMAND")]
    pub build: Option<String>,
    /// Kernel command-line additions of every build, the ends' too.
    #[arg(long, value_name = "ARGS", default_value = "")]
    pub append: String,
    /// Audit rules set up before measuring, a file of the tree read after each build (the
    /// audit state as the tree has it).
    #[arg(long = "audit-rules", value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// The good end's rules file [default: none].
    #[arg(long, value_name = "FILE")]
    pub good_audit_rules: Option<PathBuf>,
    /// The bad end's rules file [default: none].
    #[arg(long, value_name = "FILE")]
    pub bad_audit_rules: Option<PathBuf>,
    /// Where the ends' boots and each step are kept between steps [default:
    /// GIT_DIR/syscost-bisect.json].
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

impl StepArgs {
    pub(super) fn run(self) -> Result<()> {
        self.plan()?.run()
    }

    /// The step the flags ask for, typed.
    fn plan(&self) -> Result<StepPlan> {
        let state = match &self.state {
            Some(p) => p.clone(),
            None => git_dir()?.join("syscost-bisect.json"),
        };
        let end = |image: &PathBuf, rules: &Option<PathBuf>| End {
            image: image.clone(),
            rules: rules.clone(),
        };
        let ends = [
            end(&self.good_image, &self.good_audit_rules),
            end(&self.bad_image, &self.bad_audit_rules),
        ];
        let candidate = (self.image.as_path(), self.append.as_str(), &self.rules);
        let shown = Shown::of(&self.common.shared)?;
        step_plan(
            &self.common,
            (ends, candidate),
            (self.build.clone(), state),
            shown,
        )
    }
}

/// A step of `common`'s bisection of the candidate (its image, command line and rules)
/// between `ends`, built by `build`, its shared state in `state`.
fn step_plan(
    common: &Common,
    (ends, candidate): ([End; 2], (&Path, &str, &Option<PathBuf>)),
    (build, state): (Option<String>, PathBuf),
    shown: Shown,
) -> Result<StepPlan> {
    let seed = (common.shared.seed).unwrap_or_else(crate::core::now_unix);
    let plan = common.plan(step_builds(&ends, candidate), 0, 2, seed)?;
    Ok(StepPlan {
        ends,
        build,
        state,
        plan,
        shown,
    })
}

/// The ends and the candidate (named and booted by each step) a step bisects.
fn step_builds(
    ends: &[End; 2],
    (image, append, rules): (&Path, &str, &Option<PathBuf>),
) -> Vec<Arm> {
    let arm = |name: &str, kernel: &Path, rules: &Option<PathBuf>| Arm {
        name: name.into(),
        kernel: kernel.into(),
        append: append.to_string(),
        rules: rules.clone(),
        ..Arm::default()
    };
    vec![
        arm("good", &ends[0].image, &ends[0].rules),
        arm("candidate", image, rules),
        arm("bad", &ends[1].image, &ends[1].rules),
    ]
}

/// Run `git bisect run` of `syscost bisect step-plan PLAN` (`exe` is syscost) to its end,
/// dying with syscost (its steps share syscost's process group, so a Ctrl-C reaches them as
/// it did); what it printed.
fn run_git_bisect(exe: &Path, plan: &Path) -> Result<String> {
    use std::io::Read;
    let mut git = Process::new("git");
    git.args(["bisect", "run"])
        .arg(exe)
        .args(["bisect", "step-plan"])
        .arg(plan)
        .stdout(std::process::Stdio::piped());
    let mut child = crate::signals::Guarded::spawn(&mut git, false).context("cannot run git")?;
    let mut out = child.child().stdout.take().context("git's output")?;
    let reader = std::thread::spawn(move || {
        let mut said = String::new();
        let _ = out.read_to_string(&mut said);
        said
    });
    let waited = child.wait(std::time::Duration::from_millis(100), None, &mut |_| {})?;
    let said = reader.join().unwrap_or_default();
    waited.map_err(|s| s.into_error(|| anyhow::anyhow!("git bisect run stopped")))?;
    Ok(said)
}

fn git_dir() -> Result<PathBuf> {
    git(&["rev-parse", "--absolute-git-dir"])
        .map(PathBuf::from)
        .context("not in a git tree: give --state FILE")
}

/// Whether the current directory is in a git work tree (an error: git cannot run).
fn in_git_tree() -> Result<bool> {
    let st = Process::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("cannot run git (Debian: apt-get install git)")?;
    Ok(st.success())
}

#[derive(Args, Debug)]
pub struct GitArgs {
    /// The good commit (the figure as it was).
    #[arg(long, value_name = "REV", required = true)]
    pub good: String,
    /// The bad commit (as it became).
    #[arg(long, value_name = "REV", required = true)]
    pub bad: String,
    /// The build command, run by sh in the tree at each commit tried (and at the ends).
    #[arg(long, value_name = "COMMAND", required = true)]
    pub build: String,
    /// The image the build leaves.
    #[arg(long, value_name = "PATH", default_value = "arch/x86/boot/bzImage")]
    pub image: PathBuf,
    /// Kernel command-line additions of every build.
    #[arg(long, value_name = "ARGS", default_value = "")]
    pub append: String,
    /// Audit rules set up before measuring, a file of the tree read after each build.
    #[arg(long = "audit-rules", value_name = "FILE")]
    pub rules: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

impl GitArgs {
    pub(super) fn run(mut self) -> Result<()> {
        if !in_git_tree()? {
            let here = std::env::current_dir().map_or("?".into(), |d| d.display().to_string());
            anyhow::bail!(
                "{here} is not in a git tree: run bisect git in the kernel tree to bisect (or \
                 bisect --builds over images built before)"
            );
        }
        // The ends as commits: HEAD~6 would name another commit once git bisect moves HEAD.
        for rev in [&mut self.good, &mut self.bad] {
            *rev = git(&[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{rev}^{{commit}}"),
            ])
            .map_err(|e| anyhow::anyhow!("{rev} is not a commit of this tree ({e})"))?;
        }
        if !git(&["status", "--porcelain", "--untracked-files=no"])?.is_empty() {
            anyhow::bail!(
                "the tree has changes: commit or stash them first (git bisect checks out other commits)"
            );
        }
        let dir = git_dir()?.join("syscost-bisect");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let result = self.bisect(&dir);
        let _ = git(&["bisect", "reset"]);
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    fn bisect(&self, dir: &Path) -> Result<()> {
        let start = git(&["rev-parse", "--abbrev-ref", "HEAD"])?;
        let ends = [("good", &self.good), ("bad", &self.bad)];
        for (word, rev) in ends {
            self.build_end(word, rev, dir).inspect_err(|_| {
                let _ = git(&["checkout", "-q", &start]);
            })?;
        }
        git(&["checkout", "-q", &start])?;
        git(&["bisect", "start", &self.bad, &self.good])?;
        let plan = dir.join("step.json");
        crate::core::write_atomic(&plan, &serde_json::to_vec(&self.step_plan(dir)?)?)?;
        let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
        let said = run_git_bisect(&exe, &plan)?;
        let state: Option<StepState> = load(&dir.join("state.json"))?;
        self.show(&said, state)
    }

    /// Check out `rev`, build it (or take it from the store) and keep its image (and rules
    /// file) as the `word` end.
    fn build_end(&self, word: &str, rev: &str, dir: &Path) -> Result<()> {
        git(&["checkout", "-q", rev])?;
        let Some(image) = build_here(&self.build, &self.image)? else {
            anyhow::bail!("the {word} end, {rev}, does not build: nothing to compare with");
        };
        std::fs::copy(&image, dir.join(format!("{word}.bzImage")))
            .with_context(|| format!("the {word} end, {rev}: cannot copy {}", image.display()))?;
        if let Some(r) = &self.rules {
            std::fs::copy(r, dir.join(format!("{word}.rules")))
                .with_context(|| format!("the {word} end, {rev}: no {}", r.display()))?;
        }
        Ok(())
    }

    /// What each step of the bisection is: the ends' files in `dir`, each commit built by
    /// --build and booted between them, its result shown but not written (the bisection's is
    /// written once, here).
    fn step_plan(&self, dir: &Path) -> Result<StepPlan> {
        let end = |word: &str| End {
            image: dir.join(format!("{word}.bzImage")),
            rules: self
                .rules
                .as_ref()
                .map(|_| dir.join(format!("{word}.rules"))),
        };
        let ends = [end("good"), end("bad")];
        let mut shown = Shown::of(&self.common.shared)?;
        shown.output = None;
        let candidate = (self.image.as_path(), self.append.as_str(), &self.rules);
        let (build, state) = (Some(self.build.clone()), dir.join("state.json"));
        step_plan(&self.common, (ends, candidate), (build, state), shown)
    }

    /// git's answer, and every step's evidence, the builds in the history's order.
    fn show(&self, said: &str, state: Option<StepState>) -> Result<()> {
        let Some((b, steps)) = state.and_then(|s| s.result.map(|r| (r, s.steps))) else {
            anyhow::bail!("git bisect run measured nothing: {}", said.trim());
        };
        let order = git(&[
            "rev-list",
            "--reverse",
            &format!("{}..{}", self.good, self.bad),
        ])?;
        let b = b.of_git(steps, &order, &self.image, said);
        finish(&b, &self.common)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// bisect git hands each step its plan: the ends' files, the build, the candidate's
    /// image, command line and rules, and the measurement, read back as written.
    #[test]
    fn each_step_is_handed_the_plan_bisect_git_made() {
        use clap::Parser;
        let line = "syscost bisect git --good HEAD~3 --bad HEAD --build make --image out/bz \
                    --append audit=1 --audit-rules audit.rules --accel tcg --emulated-counters \
                    --seed 3 --tag t=1 -o x.json -- run syscall --runs 2";
        let cli = crate::cli::Cli::try_parse_from(line.split_whitespace()).unwrap();
        let crate::cli::Command::Bisect(b) = cli.command else {
            panic!("not a bisection")
        };
        let Some(super::super::BisectAction::Git(g)) = b.action else {
            panic!("not bisect git")
        };
        let dir = tempfile::tempdir().unwrap();
        let plan = g.step_plan(dir.path()).unwrap();
        let file = dir.path().join("step.json");
        std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
        let read = StepPlan::load(&file).unwrap();
        let json = |p: &StepPlan| serde_json::to_value(p).unwrap();
        assert_eq!(json(&read), json(&plan));
        assert_eq!(read.ends[0].image, dir.path().join("good.bzImage"));
        assert_eq!(read.ends[1].rules, Some(dir.path().join("bad.rules")));
        assert_eq!(read.build.as_deref(), Some("make"));
        let c = &read.plan.boot.arms[1];
        assert_eq!(
            (c.kernel.as_path(), c.append.as_str()),
            (Path::new("out/bz"), "audit=1")
        );
        assert_eq!(c.rules.as_deref(), Some(Path::new("audit.rules")));
        assert_eq!(read.plan.boot.measure, ["run", "syscall", "--runs", "2"]);
        assert_eq!(read.plan.boot.seed, 3);
        assert_eq!(
            read.shown.output, None,
            "the bisection's result is written once"
        );
        assert_eq!(read.shown.keep.tags, ["t=1"]);
    }
}
