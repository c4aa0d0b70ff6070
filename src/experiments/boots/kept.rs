//! Where boots are kept between processes: the state of a campaign or a bisection that a
//! kill, a power cut or a failed analysis must not lose, in a directory only its owner reads
//! (a kept command line may name a history URL with a password).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// Where syscost keeps the state of what it runs across processes (campaigns, bisections):
/// `$XDG_STATE_HOME/syscost`, else `~/.local/state/syscost`; `flag` names the option that
/// picks another place.
pub fn state_home(flag: &str) -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|p| !p.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".local/state"),
            None => bail!("no HOME to keep the boots under: give {flag}"),
        },
    };
    Ok(base.join("syscost"))
}

/// Refuse, before any boot, a state directory the boots cannot be kept in; `flag` names the
/// option that picks another (`--state DIR`).
pub fn check_dir(dir: &Path, flag: &str) -> Result<()> {
    let refused = || {
        format!(
            "cannot keep the boots in {}: give {flag} in a directory this user can write",
            dir.display()
        )
    };
    make_dir(dir).with_context(refused)?;
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .with_context(refused)
}

/// Create `dir` (and its parents) readable by its owner alone, if it is not there.
pub fn make_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_directory_that_cannot_exist_is_refused() {
        let err = check_dir(Path::new("/proc/nope/campaigns"), "--state DIR").unwrap_err();
        assert!(format!("{err:#}").contains("--state DIR"), "{err:#}");
    }
}
