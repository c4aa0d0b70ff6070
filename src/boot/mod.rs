//! Booting kernels for a campaign: the initramfs syscost builds from its own binary
//! ([`initramfs`]), syscost as the guest's init ([`guest`]), and one boot in QEMU ([`qemu`]).
//! A campaign's files live in one temporary directory of its own ([`workdir`]), removed on
//! every exit path; one left by a SIGKILLed syscost is removed by the next campaign.

pub mod guest;
pub mod initramfs;
pub mod qemu;

use anyhow::{Context, Result};
use std::path::Path;

const PREFIX: &str = "syscost-campaign-";

/// A campaign's temporary directory, named with this process's id, after removing those of
/// campaigns whose syscost is gone.
pub fn workdir() -> Result<tempfile::TempDir> {
    remove_leftovers(&std::env::temp_dir());
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir()
        .context("cannot create the campaign's temporary directory")
}

/// Remove `syscost-campaign-PID-*` directories under `dir` whose PID is not running; returns
/// how many.
pub fn remove_leftovers(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn only_directories_of_dead_campaigns_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PREFIX}{}-x", i32::MAX));
        let live = tmp.path().join(format!("{PREFIX}{}-y", std::process::id()));
        let other = tmp.path().join("syscost-something-else");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        assert_eq!(remove_leftovers(tmp.path()), 1);
        assert!(!dead.exists() && live.exists() && other.exists());
    }
}
