//! Kernels syscost builds itself: a Debian source package, a list of published changes applied
//! in order, and one small configuration ([`config`]), built once and kept under the user's
//! cache directory by a content hash of all three, so a second run and a second clone of the
//! project build nothing. A build with changes starts from its base's object tree (the same
//! source, configuration and flags without the changes), so only what the changes touch is
//! compiled again: minutes for the base, about a minute for each change of one file.
//!
//! A kernel tree's build at a commit, by the user's own command, is kept in the same store
//! by its own key ([`tree`]).
//!
//! Written here rather than with a crate: the build is Kbuild's (make, gcc, the source's own
//! scripts/config) and GNU patch's; what is syscost's is the cache, its key and its cleanup.

pub(crate) mod alignment;
pub(crate) mod config;
mod make;
pub(crate) mod tree;

use anyhow::{Context, Result, bail};
use config::Optimize;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A kernel source a build starts from: a Debian package's tarball.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Source {
    pub package: &'static str,
    /// Where the package puts its tarball.
    pub tarball: &'static str,
    /// The directory the tarball unpacks into.
    pub top: &'static str,
}

/// Debian 12's linux-source-6.1: the audit code before the 2022 audit syscall-exit series.
pub(crate) const LINUX_SOURCE_61: Source = Source {
    package: "linux-source-6.1",
    tarball: "/usr/src/linux-source-6.1.tar.xz",
    top: "linux-source-6.1",
};

/// The Debian packages a build needs besides the source: the compiler's and Kbuild's tools.
pub(crate) const TOOLS: &[&str] = &["gcc", "make", "flex", "bison", "libelf-dev", "bc", "patch"];

/// A published change, as a unified diff of the source tree (`patch -p1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    pub name: &'static str,
    pub diff: &'static str,
}

/// What to build: a source, the changes applied to it in order, and how to compile it. A
/// constant, so that the builds an investigation compares are written as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Recipe {
    /// What the build is called in progress and errors ("patch1-2").
    pub name: &'static str,
    pub source: Source,
    pub changes: &'static [Change],
    pub optimize: Optimize,
    /// Added last to gcc's command line (`-falign-functions=64`), so it overrides the
    /// kernel's own flags.
    pub kcflags: &'static str,
}

/// A build made, or found in the cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Built {
    pub name: String,
    /// The bzImage to boot.
    pub image: PathBuf,
    /// The content hash it is kept by.
    pub key: String,
    /// The changes it holds, in order.
    pub changes: Vec<String>,
    /// How long its build took when it was made.
    pub seconds: f64,
}

/// How far a build has come, for a progress line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Progress {
    Cached(Built),
    Unpacking,
    /// A build begins: its name, and whether it starts from its base's objects.
    Starting {
        name: String,
        from_base: bool,
    },
    /// make has compiled `done` objects of `total` (known from an earlier build of the same
    /// source and configuration) in `elapsed`.
    Compiling {
        name: String,
        done: usize,
        total: Option<usize>,
        elapsed: std::time::Duration,
    },
    Built(Built),
}

/// Where builds are kept: `$SYSCOST_CACHE`, else `$XDG_CACHE_HOME/syscost`, else
/// `~/.cache/syscost`, each with `kernels/` under it.
pub(crate) fn cache_dir() -> Result<PathBuf> {
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    };
    use crate::core::places::{Kept, syscost_dir};
    let base = match var("SYSCOST_CACHE").or_else(|| syscost_dir(Kept::Cache)) {
        Some(d) => d,
        None => bail!("no cache directory for kernel builds: set SYSCOST_CACHE or HOME"),
    };
    Ok(base.join("kernels"))
}

impl Recipe {
    /// The same source, configuration and flags without the changes: the tree a build with
    /// changes starts from (its progress is said as "the base of" this one's name).
    pub(crate) fn base(&self) -> Recipe {
        Recipe {
            changes: &[],
            ..*self
        }
    }

    /// The content hash it is kept by: the source tarball's bytes, the changes' text, the
    /// configuration and the flags (never its name, so two names of one build share it).
    pub(crate) fn key(&self, tarball_sha256: &str) -> String {
        let mut text = format!(
            "syscost kernel build 1\nsource {tarball_sha256}\noptimize {:?}\nkcflags {}\nconfig {}\n",
            self.optimize,
            self.kcflags,
            config::script_args(self.optimize).join(" ")
        );
        for c in self.changes {
            text.push_str(&format!("change {}\n{}\n", c.name, c.diff));
        }
        crate::core::sha256_hex(text.as_bytes())[..16].to_string()
    }
}

/// The build of `recipe`, made now or found made; `progress` hears each stage.
pub(crate) fn build(recipe: &Recipe, progress: &mut dyn FnMut(Progress)) -> Result<Built> {
    let root = cache_dir()?;
    build_in(&root, recipe, progress)
}

/// The build of `recipe` when it is in the cache, without building it.
pub(crate) fn find(recipe: &Recipe) -> Result<Option<Built>> {
    let root = cache_dir()?;
    if !Path::new(recipe.source.tarball).is_file() {
        return Ok(None);
    }
    let key = recipe.key(&tarball_sha256(recipe.source)?);
    Ok(made(&root, &key, recipe.name))
}

/// [`build`], kept under `root`.
pub(crate) fn build_in(
    root: &Path,
    recipe: &Recipe,
    progress: &mut dyn FnMut(Progress),
) -> Result<Built> {
    let tarball = Path::new(recipe.source.tarball);
    let sha = tarball_sha256(recipe.source)?;
    let key = recipe.key(&sha);
    if let Some(b) = made(root, &key, recipe.name) {
        progress(Progress::Cached(b.clone()));
        return Ok(b);
    }
    std::fs::create_dir_all(root)
        .with_context(|| format!("cannot create the kernel cache {}", root.display()))?;
    let _lock = make::Lock::take(root)?;
    // Another syscost may have made it while this one waited for the lock.
    if let Some(b) = made(root, &key, recipe.name) {
        progress(Progress::Cached(b.clone()));
        return Ok(b);
    }
    make::remove_leftovers(root)?;
    let pristine = make::unpacked(root, recipe.source, tarball, &sha, progress)?;
    let base = recipe.base();
    let base_tree = root.join("trees").join(base.key(&sha));
    if !recipe.changes.is_empty() && !base_tree.join("done").is_file() {
        // The base's tree is made again even when its bzImage is kept.
        let of = |name: String| format!("the base of {name}");
        let mut said = |p: Progress| {
            progress(match p {
                Progress::Starting { name, from_base } => Progress::Starting {
                    name: of(name),
                    from_base,
                },
                Progress::Built(b) => Progress::Built(Built {
                    name: of(b.name),
                    ..b
                }),
                p => p,
            })
        };
        let b = make::compile(
            root,
            &base,
            &base.key(&sha),
            &pristine,
            &base_tree,
            &mut said,
        )?;
        said(Progress::Built(b));
    }
    let b = make::compile(root, recipe, &key, &pristine, &base_tree, progress)?;
    progress(Progress::Built(b.clone()));
    Ok(b)
}

/// The build kept as `key`, if it is whole, called `name`.
fn made(root: &Path, key: &str, name: &str) -> Option<Built> {
    let dir = root.join(key);
    let text = std::fs::read_to_string(dir.join("build.json")).ok()?;
    let mut b: Built = serde_json::from_str(&text).ok()?;
    dir.join("bzImage").is_file().then_some(())?;
    b.image = dir.join("bzImage");
    b.name = name.to_string();
    Some(b)
}

/// The source package's tarball's SHA-256 (read once per process), or what to install when it
/// is missing.
fn tarball_sha256(s: Source) -> Result<String> {
    static KNOWN: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, sha)) = known.iter().find(|(t, _)| *t == s.tarball) {
        return Ok(sha.clone());
    }
    let bytes = std::fs::read(s.tarball).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {} ({e}): syscost builds kernels from Debian's {} package; install it \
             and the build tools with: apt-get install {} {}",
            s.tarball,
            s.package,
            s.package,
            TOOLS.join(" ")
        )
    })?;
    let sha = crate::core::sha256_hex(&bytes);
    known.push((s.tarball, sha.clone()));
    Ok(sha)
}

#[cfg(test)]
mod unit {
    use super::*;

    fn recipe(changes: &'static [Change]) -> Recipe {
        Recipe {
            name: "x",
            source: LINUX_SOURCE_61,
            changes,
            optimize: Optimize::Performance,
            kcflags: "",
        }
    }

    #[test]
    fn a_build_is_kept_by_what_it_is_made_of_never_by_its_name() {
        const C: &[Change] = &[Change {
            name: "1",
            diff: "--- a/x\n+++ b/x\n",
        }];
        let a = recipe(C);
        let mut renamed = a;
        renamed.name = "y";
        assert_eq!(a.key("s"), renamed.key("s"));
        assert_ne!(a.key("s"), a.base().key("s"), "the change is in the key");
        assert_ne!(a.key("s"), a.key("t"), "the source is in the key");
        let mut flags = a;
        flags.kcflags = "-falign-functions=64";
        assert_ne!(a.key("s"), flags.key("s"));
        let mut size = a;
        size.optimize = Optimize::Size;
        assert_ne!(a.key("s"), size.key("s"));
        assert_eq!(a.base().changes, []);
    }

    #[test]
    fn the_cache_follows_the_user_s_directories() {
        // The variables are read, not set: a test must not change the process's environment.
        let d = cache_dir().unwrap();
        assert!(d.ends_with("kernels"), "{}", d.display());
    }
}
