//! Booting the next kernel of a campaign on this machine: kexec_file_load(2) loads it with
//! its initramfs and command line, then the machine reboots into it (through systemd when
//! systemd is the init, so services stop cleanly). The machine's default boot entry is never
//! touched: a kernel that does not come up leaves the firmware to boot the default one.
//!
//! The checks say, before a campaign starts, why kexec cannot work here: the syscall missing,
//! `kernel.kexec_load_disabled`, CAP_SYS_BOOT, a lockdown that wants signed kernels, or an
//! image someone else loaded (never replaced).

use crate::core::input::Opt;
use anyhow::{Context, Result, bail};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// What to boot next.
#[derive(Clone, Debug)]
pub(crate) struct Target<'a> {
    pub kernel: &'a Path,
    pub initrd: Option<&'a Path>,
    pub cmdline: &'a str,
}

/// CAP_SYS_BOOT's bit in the capability sets.
const CAP_SYS_BOOT: u32 = 22;

/// Refuse, with what to do, a machine where a campaign's kexec cannot work.
pub(crate) fn check_available() -> Result<()> {
    if read_trim("/proc/sys/kernel/kexec_load_disabled").as_deref() == Some("1") {
        return Err(crate::refused!(
            "kexec is disabled on this boot (sysctl kernel.kexec_load_disabled=1 cannot be set \
             back to 0 until a reboot): boot without it, or compare the kernels in QEMU (",
            Opt::Via,
            " qemu)"
        ));
    }
    if !has_capability(CAP_SYS_BOOT) {
        bail!("loading a kernel with kexec needs CAP_SYS_BOOT: run the campaign as root");
    }
    // Flags no kernel accepts: EINVAL says the call exists, ENOSYS that it does not.
    // SAFETY: no pointer is passed; the kernel checks the flags before any descriptor.
    let rc = unsafe { libc::syscall(libc::SYS_kexec_file_load, -1, -1, 0, 0, 0xffff_0000u64) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    if rc != 0 && errno == Some(libc::ENOSYS) {
        return Err(crate::refused!(
            "this kernel has no kexec_file_load(2) (CONFIG_KEXEC_FILE is off): boot a kernel \
             built with it, or compare the kernels in QEMU (",
            Opt::Via,
            " qemu)"
        ));
    }
    if loaded() {
        bail!(
            "a kernel is already loaded for kexec (/sys/kernel/kexec_loaded is 1), not by this \
             campaign: syscost does not replace it. Unload it (kexec -u) and start again"
        );
    }
    Ok(())
}

/// The active lockdown mode, when one is set (`integrity` or `confidentiality`).
pub(crate) fn lockdown() -> Option<String> {
    lockdown_mode(&read_trim("/sys/kernel/security/lockdown")?)
}

/// The bracketed word of /sys/kernel/security/lockdown, unless it is `none`.
fn lockdown_mode(text: &str) -> Option<String> {
    let active = text.split('[').nth(1)?.split(']').next()?.to_string();
    (active != "none").then_some(active)
}

/// Whether a kernel is loaded for the next kexec.
pub(crate) fn loaded() -> bool {
    read_trim("/sys/kernel/kexec_loaded").as_deref() == Some("1")
}

/// Load `t` for the next kexec reboot.
pub(crate) fn load(t: &Target) -> Result<()> {
    let kernel = std::fs::File::open(t.kernel)
        .with_context(|| format!("cannot open the kernel {}", t.kernel.display()))?;
    let initrd = t
        .initrd
        .map(|p| {
            std::fs::File::open(p)
                .with_context(|| format!("cannot open the initramfs {}", p.display()))
        })
        .transpose()?;
    let cmdline = std::ffi::CString::new(t.cmdline).context("a NUL in the kernel command line")?;
    let (initrd_fd, flags) = match &initrd {
        Some(f) => (f.as_raw_fd(), 0),
        None => (-1, libc::KEXEC_FILE_NO_INITRAMFS),
    };
    // SAFETY: the descriptors are open and the command line (with its NUL, counted) lives
    // across the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            kernel.as_raw_fd(),
            initrd_fd,
            cmdline.as_bytes_with_nul().len(),
            cmdline.as_ptr(),
            flags,
        )
    };
    if rc != 0 {
        return Err(load_error(t.kernel, std::io::Error::last_os_error()));
    }
    Ok(())
}

fn load_error(kernel: &Path, e: std::io::Error) -> anyhow::Error {
    let k = kernel.display();
    match (e.raw_os_error(), lockdown()) {
        (Some(libc::EKEYREJECTED | libc::EBADMSG | libc::ENODATA | libc::EPERM), Some(mode)) => {
            crate::refused!(
                format!("kexec_file_load refused {k} ({e}): the kernel is locked down ({mode}), "),
                "so it boots only kernels signed by a key it trusts. Sign the image (sbsign) \
                 with an enrolled key, or compare the kernels in QEMU (",
                Opt::Via,
                " qemu)"
            )
        }
        (Some(libc::ENOEXEC), _) => anyhow::anyhow!(
            "kexec_file_load refused {k} ({e}): not a kernel image this kernel can boot \
             (an x86-64 bzImage is needed)"
        ),
        _ => anyhow::anyhow!("kexec_file_load refused {k}: {e}"),
    }
}

/// Unload what is loaded for kexec (nothing happens when nothing is).
pub(crate) fn unload() -> Result<()> {
    // SAFETY: with KEXEC_FILE_UNLOAD the kernel reads no descriptor and no pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            -1,
            -1,
            0,
            0,
            libc::KEXEC_FILE_UNLOAD,
        )
    };
    if rc != 0 {
        bail!(
            "cannot unload the kexec kernel: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Whether systemd is the init (then reboots go through it).
pub(crate) fn systemd_is_init() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// How the machine is rebooted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Reboot {
    /// Into the kernel loaded for kexec.
    Kexec,
    /// Through the firmware, into the default boot entry.
    Firmware,
}

/// Reboot: under systemd by asking it (services stop, file systems unmount); otherwise, as
/// a campaign guest's init does, sync and reboot at once. Returns only on failure.
pub(crate) fn reboot(how: Reboot) -> Result<()> {
    if systemd_is_init() {
        let verb = match how {
            Reboot::Kexec => "kexec",
            Reboot::Firmware => "reboot",
        };
        // --no-block: the caller is a unit's process the reboot stops; waiting for the job
        // from inside it would wait for itself.
        let st = std::process::Command::new("systemctl")
            .args(["--no-block", verb])
            .status()
            .context("cannot run systemctl")?;
        if !st.success() {
            bail!("systemctl {verb} failed ({st})");
        }
        return Ok(());
    }
    let cmd = match how {
        Reboot::Kexec => libc::RB_KEXEC,
        Reboot::Firmware => libc::RB_AUTOBOOT,
    };
    // SAFETY: sync and reboot take no pointers.
    unsafe {
        libc::sync();
        libc::reboot(cmd);
    }
    bail!("reboot failed: {}", std::io::Error::last_os_error())
}

/// The running kernel's GNU build id, from /sys/kernel/notes (hex).
pub(crate) fn running_build_id() -> Option<String> {
    build_id_of_notes(&std::fs::read("/sys/kernel/notes").ok()?)
}

/// The NT_GNU_BUILD_ID note of an ELF note section. Written here because the section comes
/// from sysfs, not an ELF file the object crate could open.
pub(crate) fn build_id_of_notes(notes: &[u8]) -> Option<String> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |at: usize| Some(u32::from_le_bytes(notes.get(at..at + 4)?.try_into().ok()?));
    let pad = |n: usize| n.div_ceil(4) * 4;
    let mut at = 0;
    while at + 12 <= notes.len() {
        let (namesz, descsz, kind) = (word(at)? as usize, word(at + 4)? as usize, word(at + 8)?);
        let name = notes.get(at + 12..at + 12 + namesz)?;
        let desc_at = at + 12 + pad(namesz);
        if kind == NT_GNU_BUILD_ID && name.starts_with(b"GNU") {
            let desc = notes.get(desc_at..desc_at + descsz)?;
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        at = desc_at + pad(descsz);
    }
    None
}

/// The initramfs Debian installs beside /boot/vmlinuz-VERSION, if there is one.
pub(crate) fn initrd_beside(kernel: &Path) -> Option<PathBuf> {
    let name = kernel.file_name()?.to_str()?;
    let version = name.strip_prefix("vmlinuz-")?;
    let p = kernel.with_file_name(format!("initrd.img-{version}"));
    p.is_file().then_some(p)
}

fn has_capability(cap: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    eff & (1 << cap) != 0
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_build_id_note_is_found_among_others() {
        let mut notes = Vec::new();
        let mut note = |name: &[u8], kind: u32, desc: &[u8]| {
            notes.extend((name.len() as u32).to_le_bytes());
            notes.extend((desc.len() as u32).to_le_bytes());
            notes.extend(kind.to_le_bytes());
            notes.extend(name);
            notes.resize(notes.len().div_ceil(4) * 4, 0);
            notes.extend(desc);
            notes.resize(notes.len().div_ceil(4) * 4, 0);
        };
        note(b"Xen\0", 1, &[1, 2, 3]);
        note(b"GNU\0", 3, &[0xde, 0xad, 0xbe, 0xef, 0x01]);
        assert_eq!(build_id_of_notes(&notes).as_deref(), Some("deadbeef01"));
        assert_eq!(build_id_of_notes(&notes[..20]), None);
    }

    #[test]
    fn this_kernel_has_a_build_id_and_an_image_says_its_release() {
        let Some(id) = running_build_id() else {
            eprintln!("skipped: /sys/kernel/notes has no build id here");
            return;
        };
        assert!(id.len() >= 16 && id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            crate::boot::bzimage::release(Path::new("/proc/self/exe")),
            None
        );
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kernels/boot");
        let images: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("vmlinuz-"))
            .collect();
        if images.is_empty() {
            eprintln!(
                "skipped: no kernel images in {} (scripts/test.sh fetches them)",
                dir.display()
            );
        }
        for image in images {
            let name = image.file_name().unwrap().to_string_lossy().to_string();
            let release = name.strip_prefix("vmlinuz-").unwrap();
            let said = crate::boot::bzimage::release(&image);
            assert_eq!(said.as_deref(), Some(release), "{name}");
        }
    }

    #[test]
    fn the_lockdown_mode_is_the_bracketed_word() {
        assert_eq!(lockdown_mode("[none] integrity confidentiality"), None);
        assert_eq!(
            lockdown_mode("none [integrity] confidentiality").as_deref(),
            Some("integrity")
        );
        assert_eq!(lockdown_mode(""), None);
    }
}
