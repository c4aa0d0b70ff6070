//! A kernel tree's build at one commit, by the user's own command (what `bisect git` and
//! `bisect step --build` boot), kept in the same store as syscost's own builds: by a content
//! hash of the commit, the tree's `.config` as the build found it, the command and the image
//! path it leaves. A commit built once, by a bisection or another, is booted again from the
//! store without building. What the key cannot see (the environment, files git does not
//! track but `.config`) is the command's to keep the same.

use super::{Built, make};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A build of the tree at `dir`, checked out at `commit`, by `command` (run by sh there),
/// leaving its bzImage at `image` (relative to `dir`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreeBuild {
    pub dir: PathBuf,
    /// The full hash of the commit checked out.
    pub commit: String,
    pub command: String,
    pub image: PathBuf,
}

/// What came of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Made {
    /// Found in the store: built before.
    Kept(Built),
    /// Built now, and kept.
    Built(Built),
    /// The command failed (as a commit that does not build), or left no image.
    Failed(String),
}

impl TreeBuild {
    /// The content hash it is kept by.
    pub(crate) fn key(&self) -> String {
        let config = std::fs::read(self.dir.join(".config"))
            .map(|c| crate::core::sha256_hex(&c))
            .unwrap_or_else(|_| "none".into());
        let text = format!(
            "syscost tree build 1\ncommit {}\nconfig {config}\ncommand {}\nimage {}\n",
            self.commit,
            self.command,
            self.image.display()
        );
        format!("tree-{}", &crate::core::sha256_hex(text.as_bytes())[..16])
    }

    /// Its build in the store, if it was made before.
    pub(crate) fn kept(&self) -> Result<Option<Built>> {
        Ok(super::made(&super::cache_dir()?, &self.key(), &self.commit))
    }

    /// Its image from the store, else built now by its command (its output on stderr) and
    /// kept. One build at a time per store, as syscost's own.
    pub(crate) fn build(&self) -> Result<Made> {
        self.build_in(&super::cache_dir()?)
    }

    /// [`TreeBuild::build`], kept under `root`.
    pub(crate) fn build_in(&self, root: &Path) -> Result<Made> {
        let key = self.key();
        if let Some(b) = super::made(root, &key, &self.commit) {
            return Ok(Made::Kept(b));
        }
        std::fs::create_dir_all(root)
            .with_context(|| format!("cannot create the kernel cache {}", root.display()))?;
        let _lock = make::Lock::take(root)?;
        if let Some(b) = super::made(root, &key, &self.commit) {
            return Ok(Made::Kept(b));
        }
        make::remove_leftovers(root)?;
        let started = Instant::now();
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(&self.command)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(std::io::stderr()));
        let mut child =
            crate::signals::Guarded::spawn(&mut sh, true).context("cannot run sh for the build")?;
        let status = (child.wait(Duration::from_millis(100), None, &mut |_| {})?)
            .map_err(|s| s.into_error(|| anyhow::anyhow!("the build stopped")))?;
        if !status.success() {
            return Ok(Made::Failed(format!("the build command failed ({status})")));
        }
        let image = self.dir.join(&self.image);
        if !image.is_file() {
            let why = format!("the build left no image at {}", self.image.display());
            return Ok(Made::Failed(why));
        }
        let seconds = started.elapsed().as_secs_f64();
        let b = make::keep(root, &key, (&self.commit, Vec::new()), &image, seconds)?;
        Ok(Made::Built(b))
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// A commit built once is taken from the store the next time, its command not run
    /// again; another commit, another command or another .config is built anew.
    #[test]
    fn a_commit_built_once_is_booted_from_the_store() {
        let tmp = tempfile::tempdir().unwrap();
        let (tree, store) = (tmp.path().join("tree"), tmp.path().join("store"));
        std::fs::create_dir(&tree).unwrap();
        git(&tree, &["init", "-q"]);
        std::fs::write(tree.join("Makefile"), "one").unwrap();
        git(&tree, &["add", "-A"]);
        git(&tree, &["commit", "-q", "-m", "one"]);
        let b = TreeBuild {
            dir: tree.clone(),
            commit: git(&tree, &["rev-parse", "HEAD"]),
            command: "mkdir -p out && cat Makefile > out/bzImage && echo run >> ../runs".into(),
            image: "out/bzImage".into(),
        };
        let runs = || {
            std::fs::read_to_string(tmp.path().join("runs"))
                .unwrap()
                .lines()
                .count()
        };
        let Made::Built(first) = b.build_in(&store).unwrap() else {
            panic!("not built")
        };
        let Made::Kept(again) = b.build_in(&store).unwrap() else {
            panic!("not taken from the store")
        };
        assert_eq!((runs(), &again.image), (1, &first.image));
        assert_eq!(std::fs::read_to_string(&again.image).unwrap(), "one");
        std::fs::write(tree.join(".config"), "CONFIG_X=y").unwrap();
        assert!(matches!(b.build_in(&store).unwrap(), Made::Built(_)));
        let other = TreeBuild {
            command: format!("{} && true", b.command),
            ..b.clone()
        };
        assert!(matches!(other.build_in(&store).unwrap(), Made::Built(_)));
        assert_eq!(runs(), 3);
        let fails = TreeBuild {
            command: "exit 3".into(),
            ..b.clone()
        };
        let Made::Failed(why) = fails.build_in(&store).unwrap() else {
            panic!("a failed build")
        };
        assert!(why.contains("exit status: 3"), "{why}");
    }
}
