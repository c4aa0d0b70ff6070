//! `syscost bisect step` (one build of a kernel tree, for `git bisect run`) and `syscost
//! bisect git` (git bisect driven by syscost). syscost never builds on its own initiative: it
//! runs the user's --build in the user's tree, and boots the image it leaves.

use super::common::{
    Common, boot_line, ends_equal, finish, metric_refused, other_said, step_status,
};
use crate::cli::boots::lava_lab;
use crate::cli::kept_run::{made, record_boot};
use crate::cli::*;
use crate::experiments::bisect::{self, Bisection, Found, Step, decide::Class};
use crate::experiments::boots::kept::RunKind;
use crate::experiments::boots::{Arm, BootRecord, LavaRun};
use anyhow::Context;
use serde::Deserialize;
use std::path::Path;
use std::process::Command as Process;

/// The exit status git bisect run reads from a step: 0 good, 1 bad, 125 skip, 128 and above
/// stop the bisection (the ends do not differ, or syscost failed: a plain error's 1 would read
/// as bad).
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub(crate) struct StepStatus(pub i32, pub String);

/// The status of a step that cannot go on.
const STOP: i32 = 128;
const SKIP: i32 = 125;

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

/// What the steps of one `git bisect run` share.
#[derive(Default, Serialize, Deserialize)]
struct StepState {
    id: String,
    seed: u64,
    /// What the ends' boots were of: each end's image and rules (path, size, modification
    /// time), the command line and the measuring command. A step of other ends starts anew.
    ends: Vec<String>,
    /// The ends' boots and the last round they took.
    end_boots: Vec<BootRecord>,
    end_rounds: u32,
    /// Every step so far: its commit and its evidence.
    steps: Vec<Step>,
    #[serde(default)]
    result: Option<Bisection>,
}

impl StepArgs {
    pub(super) fn run(self) -> Result<()> {
        match self.step() {
            Ok(0) => Ok(()),
            Ok(code) => Err(StepStatus(code, format!("exit {code}")).into()),
            Err(e) if e.is::<StepStatus>() || e.is::<crate::signals::Interrupted>() => Err(e),
            Err(e) => Err(StepStatus(STOP, format!("error: {e:#}; git bisect run stops")).into()),
        }
    }

    fn step(&self) -> Result<i32> {
        let state_path = match &self.state {
            Some(p) => p.clone(),
            None => git_dir()?.join("syscost-bisect.json"),
        };
        let ends = self.ends_key();
        let mut state = load(&state_path)?
            .filter(|s| s.ends == ends)
            .unwrap_or_else(|| {
                let seed = self
                    .common
                    .shared
                    .seed
                    .unwrap_or_else(crate::core::now_unix);
                StepState {
                    id: format!("{}-{seed}", crate::core::now_unix()),
                    seed,
                    ends,
                    ..StepState::default()
                }
            });
        let name = build_name().unwrap_or_else(|| "candidate".into());
        let image = match &self.build {
            Some(cmd) => match build_here(cmd, &self.image)? {
                Some(kept) => kept,
                None => return Ok(SKIP),
            },
            None => self.image.clone(),
        };
        if !image.is_file() {
            eprintln!("syscost: {name}: no image at {}: skipped", image.display());
            return Ok(SKIP);
        }
        let b = self.bisect(&name, &image, &state)?;
        finish(&b, &self.common)?;
        save_step(&mut state, &b);
        save(&state_path, &state)?;
        ends_equal(&b).map_err(|e| StepStatus(STOP, format!("{e:#}")))?;
        if let Some(said) = other_said(&b) {
            eprintln!("syscost: {said}");
        }
        Ok(step_status(&b))
    }

    fn ends_key(&self) -> Vec<String> {
        let file = |p: &Option<PathBuf>| match p.as_ref().map(|p| (p, std::fs::metadata(p))) {
            Some((p, Ok(m))) => format!("{} {} {:?}", p.display(), m.len(), m.modified().ok()),
            Some((p, Err(_))) => p.display().to_string(),
            None => String::new(),
        };
        vec![
            file(&Some(self.good_image.clone())),
            file(&self.good_audit_rules),
            file(&Some(self.bad_image.clone())),
            file(&self.bad_audit_rules),
            self.append.clone(),
            self.common.shared.measure.join(" "),
        ]
    }

    /// The candidate between the ends, the ends' boots taken from the state when it has them.
    fn bisect(&self, name: &str, image: &Path, state: &StepState) -> Result<Bisection> {
        let arm = |name: &str, kernel: &Path, rules: &Option<PathBuf>| Arm {
            name: name.into(),
            kernel: kernel.into(),
            append: self.append.clone(),
            rules: rules.clone(),
            ..Arm::default()
        };
        let builds = vec![
            arm("good", &self.good_image, &self.good_audit_rules),
            arm(name, image, &self.rules),
            arm("bad", &self.bad_image, &self.bad_audit_rules),
        ];
        let mut plan = self.common.plan(builds, 0, 2, state.seed)?;
        plan.id = state.id.clone();
        let lab = lava_lab(&mut plan.boot.backend)?;
        let made = made(&plan.boot.backend);
        let mut on_boot = |b: &BootRecord, _: &[BootRecord]| {
            eprintln!("syscost: {}", boot_line(b));
            let run = (RunKind::Bisection, state.id.as_str());
            record_boot(b, &self.common.shared.keep, run, &made);
        };
        let files = crate::boot::workdir()?;
        // One step a process: no state to keep its jobs in (a killed step is tried again).
        let lava = lab.map(|lab| LavaRun {
            lab,
            tag: format!("{} {}", RunKind::Bisection.tag(), plan.id),
            files: files.path().to_path_buf(),
            pending: Vec::new(),
            on_job: Box::new(|_| {}),
        });
        bisect::run(&plan, state.end_boots.clone(), lava, &mut on_boot)
            .map_err(|e| metric_refused(&e).unwrap_or(e))
    }
}

/// Keep the ends' boots (the first time) and this step's evidence.
fn save_step(state: &mut StepState, b: &Bisection) {
    if state.end_boots.is_empty() {
        state.end_rounds = b.end_rounds;
        state.end_boots = b
            .boots
            .iter()
            .filter(|x| x.round <= b.end_rounds)
            .cloned()
            .collect();
    }
    for s in &b.steps {
        state.steps.push(Step {
            number: state.steps.len() + 1,
            ..s.clone()
        });
    }
    state.result = Some(b.clone());
}

fn load(path: &Path) -> Result<Option<StepState>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(serde_json::from_str(&t).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn save(path: &Path, s: &StepState) -> Result<()> {
    crate::core::write_atomic(path, serde_json::to_string(s)?.as_bytes())
}

/// The commit checked out here built by the user's command `cmd`, leaving `image`: taken from
/// syscost's store of builds when it was built before, else built and kept there
/// (`kbuild::tree`); the image to boot, or `None` when it does not build.
fn build_here(cmd: &str, image: &Path) -> Result<Option<PathBuf>> {
    use crate::kbuild::tree::{Made, TreeBuild};
    let b = TreeBuild {
        dir: std::env::current_dir()?,
        commit: git(&["rev-parse", "HEAD"])?,
        command: cmd.to_string(),
        image: image.to_path_buf(),
    };
    let short = &b.commit[..b.commit.len().min(12)];
    if let Some(k) = b.kept()? {
        eprintln!(
            "syscost: {short} was built before by this command: booting its kept image {}",
            k.image.display()
        );
        return Ok(Some(k.image));
    }
    eprintln!("syscost: building {short}: {cmd}");
    match b.build()? {
        Made::Kept(k) | Made::Built(k) => Ok(Some(k.image)),
        Made::Failed(why) => {
            eprintln!(
                "syscost: --build: {why}: skipped, as git bisect skips a commit that does not \
                 build"
            );
            Ok(None)
        }
    }
}

/// Run `git bisect run` (`cmd`) to its end, dying with syscost (its steps share syscost's
/// process group, so a Ctrl-C reaches them as it did); what it printed.
fn run_git_bisect(cmd: &[&str]) -> Result<String> {
    use std::io::Read;
    let mut git = Process::new("git");
    git.args(cmd).stdout(std::process::Stdio::piped());
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

/// The current commit's short hash, when the current directory is a git tree.
fn build_name() -> Option<String> {
    git(&["rev-parse", "--short", "HEAD"]).ok()
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

/// Run git with `args` in the current directory; its trimmed stdout.
pub(super) fn git(args: &[&str]) -> Result<String> {
    let out = Process::new("git")
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
        let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
        let mut step = vec![
            exe.to_string_lossy().to_string(),
            "bisect".into(),
            "step".into(),
        ];
        step.extend(self.step_words(dir));
        let mut cmd: Vec<&str> = vec!["bisect", "run"];
        cmd.extend(step.iter().map(String::as_str));
        let said = run_git_bisect(&cmd)?;
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

    /// The words of `bisect step` after it: this command's own, the ends' files in `dir`.
    fn step_words(&self, dir: &Path) -> Vec<String> {
        let p = |f: &str| dir.join(f).to_string_lossy().to_string();
        let mut w = vec![
            "--good-image".into(),
            p("good.bzImage"),
            "--bad-image".into(),
            p("bad.bzImage"),
            "--image".into(),
            self.image.to_string_lossy().into(),
            "--build".into(),
            self.build.clone(),
            "--state".into(),
            p("state.json"),
        ];
        if !self.append.is_empty() {
            w.extend(["--append".into(), self.append.clone()]);
        }
        if let Some(r) = &self.rules {
            w.extend(["--audit-rules".into(), r.to_string_lossy().into()]);
            w.extend([
                "--good-audit-rules".into(),
                p("good.rules"),
                "--bad-audit-rules".into(),
                p("bad.rules"),
            ]);
        }
        let all: Vec<String> = std::env::args().collect();
        let after = all
            .iter()
            .position(|a| a == "git")
            .map_or(all.len(), |i| i + 1);
        w.extend(passed_on(&all[after..]));
        w
    }

    /// git's answer, and every step's evidence, the builds in the history's order.
    fn show(&self, said: &str, state: Option<StepState>) -> Result<()> {
        let Some((mut b, steps)) = state.and_then(|s| s.result.map(|r| (r, s.steps))) else {
            anyhow::bail!("git bisect run measured nothing: {}", said.trim());
        };
        let order = git(&[
            "rev-list",
            "--reverse",
            &format!("{}..{}", self.good, self.bad),
        ])?;
        let mut builds = vec![Arm {
            name: "good".into(),
            ..b.builds[0].clone()
        }];
        for hash in order.lines() {
            let name = steps
                .iter()
                .find(|s| hash.starts_with(&s.build))
                .map_or_else(
                    || hash[..hash.len().min(12)].to_string(),
                    |s| s.build.clone(),
                );
            builds.push(Arm {
                name,
                kernel: self.image.clone(),
                ..b.builds[1].clone()
            });
        }
        builds.last_mut().expect("bad is in good..bad").name = "bad".into();
        let index = |name: &str| builds.iter().position(|a| a.name == name).unwrap_or(0);
        b.steps = steps
            .into_iter()
            .map(|s| Step {
                index: index(&s.build),
                ..s
            })
            .collect();
        b.steps.sort_by_key(|s| s.number);
        b.found = found_of(said, &b.steps);
        if let Found::Range { .. } = b.found {
            let last = said.lines().rev().find(|l| !l.trim().is_empty());
            b.warnings
                .push(format!("git bisect run: {}", last.unwrap_or("").trim()));
        }
        (b.good, b.bad, b.builds) = (0, builds.len() - 1, builds);
        b.shape = None;
        finish(&b, &self.common)
    }
}

/// The words of `bisect git` that each step takes as given: all but its own options (the
/// ends, the build, the image, the command line and rules, which the step gets its own way)
/// and `-o` (the result is written once, by `bisect git`); the measuring command after `--`
/// whole.
fn passed_on(words: &[String]) -> Vec<String> {
    let own = [
        "--good",
        "--bad",
        "--build",
        "--image",
        "--append",
        "--audit-rules",
        "--output",
        "-o",
    ];
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let a = &words[i];
        if a == "--" {
            out.extend(words[i..].iter().cloned());
            break;
        }
        let flag = a.split('=').next().unwrap_or(a);
        let with_value = own.contains(&flag) && !a.contains('=');
        if !own.contains(&flag) {
            out.push(a.clone());
        }
        i += if with_value { 2 } else { 1 };
    }
    out
}

/// What git bisect run said it found: the first bad commit (named as the step that tried it),
/// or the commits it could be when skipped ones are left.
fn found_of(said: &str, steps: &[Step]) -> Found {
    let short = |hash: &str| {
        let named = steps.iter().find(|s| hash.starts_with(&s.build));
        named.map_or_else(
            || hash[..hash.len().min(12)].to_string(),
            |s| s.build.clone(),
        )
    };
    let first = said
        .lines()
        .find_map(|l| l.split_once(" is the first bad commit").map(|x| x.0.trim()));
    let last_good = steps
        .iter()
        .filter(|s| s.decision.class == Class::Good)
        .max_by_key(|s| s.index)
        .map_or("good".into(), |s| s.build.clone());
    match first {
        Some(hash) => Found::Build {
            last_good,
            first_bad: short(hash),
        },
        None => Found::Range {
            last_good,
            first_bad: "bad".into(),
            between: said
                .lines()
                .filter(|l| l.len() >= 40 && l.chars().take(40).all(|c| c.is_ascii_hexdigit()))
                .map(|l| short(&l[..40]))
                .collect(),
        },
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::bisect::decide::Decision;

    fn step(build: &str, index: usize, class: Class) -> Step {
        Step {
            number: index,
            build: build.into(),
            index,
            boots: 1,
            values: vec![1.0],
            rounds: 0,
            decision: Decision {
                class,
                position: None,
                p: None,
                bar: 0.0,
            },
            same_as: None,
        }
    }

    #[test]
    fn a_step_takes_the_options_bisect_git_does_not_handle_itself() {
        let words: Vec<String> = [
            "--good", "v1", "--bad=v2", "--accel", "tcg", "--build", "make", "-o", "r.json",
            "--seed", "3", "--", "run", "syscall", "-o", "x", "--image", "y",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            passed_on(&words),
            [
                "--accel", "tcg", "--seed", "3", "--", "run", "syscall", "-o", "x", "--image", "y"
            ]
        );
    }

    #[test]
    fn git_s_answer_is_read_as_the_steps_name_it() {
        let steps = [
            step("22b265c", 3, Class::Good),
            step("7339b75", 4, Class::Bad),
        ];
        let said = "running ...\n7339b75a35905c0c2e1c7e5f0a5e0e2a1b2c3d4e is the first bad commit\n\
                    commit 7339b75a35905c0c2e1c7e5f0a5e0e2a1b2c3d4e\n";
        match found_of(said, &steps) {
            Found::Build {
                last_good,
                first_bad,
            } => {
                assert_eq!(
                    (last_good.as_str(), first_bad.as_str()),
                    ("22b265c", "7339b75")
                )
            }
            f => panic!("{f:?}"),
        }
        // git's words when skipped commits are left next to the answer.
        let said = "There are only 'skip'ped commits left to test.\nThe first bad commit could be \
                    any of:\n22b265c0c2e1c7e5f0a5e0e2a1b2c3d4e5f6a7b8\n\
                    7339b75a35905c0c2e1c7e5f0a5e0e2a1b2c3d4e\nWe cannot bisect more!\n";
        match found_of(said, &steps) {
            Found::Range { between, .. } => assert_eq!(between, ["22b265c", "7339b75"]),
            f => panic!("{f:?}"),
        }
    }
}
