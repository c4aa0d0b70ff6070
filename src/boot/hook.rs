//! The boot hook of a kexec campaign: what runs `syscost campaign resume` after each boot.
//! Under systemd it is a oneshot unit syscost writes, enables and removes; in a campaign's
//! own guest (syscost is the init) the init is the hook and nothing is installed.

use crate::core::input::Opt;
use anyhow::{Context, Result};
use std::path::Path;

/// Where a kexec campaign's state lives while it runs (the unit runs only when it exists).
pub(crate) const STATE_DIR: &str = "/var/lib/syscost/campaign";
/// The state file's name in [`STATE_DIR`]: while it exists, a campaign is in progress.
pub(crate) const STATE_NAME: &str = "state.json";
/// The unit's name; nothing else on the machine is named so.
pub(crate) const UNIT: &str = "syscost-campaign.service";
const UNITS: &str = "/etc/systemd/system";
const WANTS: &str = "multi-user.target.wants";

/// What resumes the campaign after a boot.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Hook {
    /// A systemd unit in /etc/systemd/system, enabled for multi-user.target.
    Systemd,
    /// syscost itself is the init (a campaign guest): it resumes when it finds the plan.
    Init,
}

impl Hook {
    /// The hook this machine can have, or why it has none.
    pub(crate) fn detect() -> Result<Hook> {
        if is_syscost_init() {
            Ok(Hook::Init)
        } else if super::kexec::systemd_is_init() {
            Ok(Hook::Systemd)
        } else {
            Err(crate::refused!(
                "no boot hook: the init is not systemd, so nothing would resume the campaign \
                 after a reboot. Boot with systemd, or compare the kernels in QEMU (",
                Opt::Via,
                " qemu)"
            ))
        }
    }

    /// Install the hook running `exe campaign resume`.
    pub(crate) fn install(self, exe: &Path) -> Result<()> {
        match self {
            Hook::Init => Ok(()),
            Hook::Systemd => install_unit(Path::new(UNITS), exe),
        }
    }

    /// Remove what [`install`](Hook::install) put on the machine (nothing when absent).
    pub(crate) fn remove(self) -> Result<()> {
        match self {
            Hook::Init => Ok(()),
            Hook::Systemd => remove_unit(Path::new(UNITS)),
        }
    }
}

/// Whether PID 1 is this very binary (a campaign guest's init).
fn is_syscost_init() -> bool {
    let one = std::fs::read_link("/proc/1/exe").ok();
    one.is_some() && one == std::env::current_exe().ok()
}

/// The unit's text.
pub(crate) fn unit_text(exe: &Path) -> String {
    format!(
        "# Written by a syscost campaign that boots its kernels by kexec; removed when the\n\
         # campaign ends or by `syscost campaign abort`.\n\
         [Unit]\n\
         Description=syscost campaign: measure this boot, then boot the next kernel\n\
         After=multi-user.target\n\
         ConditionPathExists={STATE_DIR}/{STATE_NAME}\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         ExecStart={} campaign resume\n\
         StandardOutput=journal+console\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        exe.display(),
    )
}

fn install_unit(units: &Path, exe: &Path) -> Result<()> {
    let unit = units.join(UNIT);
    crate::core::write_atomic(&unit, unit_text(exe).as_bytes())
        .with_context(|| format!("cannot write the boot hook {}", unit.display()))?;
    let wants = units.join(WANTS);
    std::fs::create_dir_all(&wants)?;
    let link = wants.join(UNIT);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&unit, &link)
        .with_context(|| format!("cannot enable the boot hook ({})", link.display()))?;
    daemon_reload();
    Ok(())
}

fn remove_unit(units: &Path) -> Result<()> {
    for p in [units.join(WANTS).join(UNIT), units.join(UNIT)] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", p.display())),
        }
    }
    daemon_reload();
    Ok(())
}

/// Tell a running systemd the units changed (nothing to tell without one).
fn daemon_reload() {
    if super::kexec::systemd_is_init() {
        let _ = std::process::Command::new("systemctl")
            .arg("daemon-reload")
            .status();
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_unit_is_installed_enabled_and_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        install_unit(dir.path(), Path::new("/var/lib/syscost/campaign/syscost")).unwrap();
        let text = std::fs::read_to_string(dir.path().join(UNIT)).unwrap();
        assert!(text.contains("ExecStart=/var/lib/syscost/campaign/syscost campaign resume"));
        let link = dir.path().join(WANTS).join(UNIT);
        assert_eq!(std::fs::read_link(&link).unwrap(), dir.path().join(UNIT));
        remove_unit(dir.path()).unwrap();
        assert!(!link.exists() && !dir.path().join(UNIT).exists());
        assert!(
            dir.path().join(WANTS).is_dir(),
            "the wants directory may hold others' units"
        );
        remove_unit(dir.path()).unwrap();
    }

    #[test]
    fn systemd_accepts_the_unit() {
        let dir = tempfile::tempdir().unwrap();
        let unit = dir.path().join(UNIT);
        std::fs::write(&unit, unit_text(Path::new("/bin/true"))).unwrap();
        let Ok(out) = std::process::Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&unit)
            .output()
        else {
            eprintln!("skipped: no systemd-analyze here");
            return;
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !err.contains(UNIT),
            "systemd-analyze verify: {err}"
        );
    }
}
