//! One boot of a kernel in QEMU: the console on the first serial port (kept for the failure's
//! last lines), the result channel on the second, `panic=-1` with `-no-reboot` so a panic ends
//! QEMU, a timeout, and QEMU killed with syscost (PR_SET_PDEATHSIG) and on an interruption.

use super::guest::{self, Sent};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The QEMU binary and the Debian package that has it.
pub const QEMU: &str = "qemu-system-x86_64";
const PACKAGE: &str = "qemu-system-x86";

/// How the guest's CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Accel {
    /// Hardware virtualisation: figures of this machine's CPU.
    Kvm,
    /// QEMU's emulator: figures follow the instructions executed, not the hardware.
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// The virtual machine every boot gets.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    pub accel: Accel,
    pub cpus: u32,
    pub memory_mib: u32,
    /// A boot that has not powered off after this long is stopped and recorded as failed.
    pub timeout: Duration,
}

/// What one boot runs.
pub struct Boot<'a> {
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    /// The whole kernel command line.
    pub append: String,
    /// Where the console and the channel are written.
    pub dir: &'a Path,
    /// A raw disk image attached as an NVMe disk (/dev/nvme0n1 in the guest: the driver is
    /// built into distribution kernels), for what must outlive a kexec.
    pub disk: Option<&'a Path>,
    /// A reboot restarts the guest from QEMU's own kernel and command line, as firmware boots
    /// a machine's default entry (how a failed kexec boot falls back); otherwise a reboot or
    /// a panic ends QEMU (`-no-reboot`).
    pub firmware_reboot: bool,
}

/// How a boot ended.
#[derive(Debug)]
pub enum Ended {
    /// The guest sent its result.
    Measured(Vec<u8>),
    /// It did not: why, and the console's last lines.
    Failed {
        reason: String,
        console: Vec<String>,
    },
}

/// Refuse a file that is not an x86 bzImage (no "HdrS" setup header at 0x202).
pub fn check_bzimage(path: &Path) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)
        .with_context(|| format!("cannot open the kernel {}", path.display()))?;
    let mut magic = [0u8; 4];
    let ok = f.seek(SeekFrom::Start(0x202)).is_ok() && f.read_exact(&mut magic).is_ok();
    if !ok || &magic != b"HdrS" {
        bail!(
            "{} is not a kernel image (no bzImage \"HdrS\" header at 0x202): give a build's \
             arch/x86/boot/bzImage or a /boot/vmlinuz-VERSION",
            path.display()
        );
    }
    Ok(())
}

/// Fail with the package to install when QEMU is missing.
pub fn check_installed() -> Result<()> {
    match Command::new(QEMU).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!("{QEMU} is not installed: apt-get install {PACKAGE} (Debian, Ubuntu)"),
    }
}

fn command(m: &Machine, b: &Boot) -> Command {
    let mut c = Command::new(QEMU);
    let cpu = match m.accel {
        Accel::Kvm => "host",
        Accel::Tcg => "max",
    };
    let serial = |name: &str| format!("file:{}", b.dir.join(name).display());
    c.args(["-nodefaults", "-no-user-config", "-display", "none"])
        .args((!b.firmware_reboot).then_some("-no-reboot"))
        .args(["-accel", m.accel.name(), "-cpu", cpu])
        .args([
            "-smp",
            &m.cpus.to_string(),
            "-m",
            &format!("{}M", m.memory_mib),
        ])
        .args([
            "-serial",
            &serial("console.log"),
            "-serial",
            &serial("channel"),
        ])
        .arg("-kernel")
        .arg(b.kernel)
        .arg("-initrd")
        .arg(b.initrd)
        .args(["-append", &b.append]);
    if let Some(d) = b.disk {
        // QEMU's option syntax doubles a comma inside a value.
        let file = d.to_string_lossy().replace(',', ",,");
        c.arg("-drive")
            .arg(format!("if=none,id=disk,format=raw,file={file}"))
            .args(["-device", "nvme,drive=disk,serial=syscost"]);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; QEMU then dies with syscost, even by SIGKILL.
    unsafe {
        c.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

/// Boot once and wait for the guest to power off, the timeout, or an interruption (then QEMU
/// is killed and the interruption returned as the error).
pub fn boot(m: &Machine, b: &Boot) -> Result<Ended> {
    let _ = std::fs::remove_file(b.dir.join("channel"));
    let mut child = command(m, b)
        .spawn()
        .with_context(|| format!("cannot start {QEMU}"))?;
    let _guard = crate::signals::ChildGuard::new(child.id());
    let started = Instant::now();
    let status = loop {
        if let Err(i) = crate::signals::check() {
            kill(&mut child);
            return Err(i.into());
        }
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if started.elapsed() > m.timeout {
            kill(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let console = console_tail(&b.dir.join("console.log"), 12);
    let sent = std::fs::read(b.dir.join("channel"))
        .ok()
        .and_then(|bytes| guest::unframe(&bytes));
    Ok(match (sent, status) {
        (Some(Sent::Result(r)), _) => Ended::Measured(r),
        (Some(Sent::Failed(reason)), _) => Ended::Failed { reason, console },
        (None, None) => Ended::Failed {
            reason: format!("timed out after {}", humantime::format_duration(m.timeout)),
            console,
        },
        (None, Some(s)) => Ended::Failed {
            reason: format!(
                "the guest ended without a result (a kernel panic, or an init that never ran; \
                 QEMU {s}{})",
                stderr_of(&mut child)
            ),
            console,
        },
    })
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(e) = child.stderr.as_mut() {
        let _ = e.read_to_string(&mut s);
    }
    let s = s.trim();
    if s.is_empty() {
        String::new()
    } else {
        format!(": {}", s.lines().last().unwrap_or(s))
    }
}

/// The last `n` non-empty lines of the console.
pub fn console_tail(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// Whether KVM runs a guest here: a kernel booted under KVM without an initramfs must print
/// its banner within seconds (it then panics for want of a root, which ends QEMU). Where
/// nested virtualisation is missing the guest hangs at "Booting from ROM", or `-cpu host`
/// aborts: the reason is returned.
pub fn kvm_works(kernel: &Path, dir: &Path) -> std::result::Result<(), String> {
    if !Path::new("/dev/kvm").exists() {
        return Err("/dev/kvm does not exist".into());
    }
    let m = Machine {
        accel: Accel::Kvm,
        cpus: 1,
        memory_mib: 256,
        timeout: Duration::from_secs(8),
    };
    let empty: PathBuf = dir.join("empty.cpio");
    let _ = std::fs::write(&empty, b"");
    let b = Boot {
        kernel,
        initrd: &empty,
        append: "console=ttyS0 earlyprintk=serial panic=-1".into(),
        dir,
        disk: None,
        firmware_reboot: false,
    };
    let ended = boot(&m, &b).map_err(|e| format!("{e:#}"))?;
    let console = std::fs::read(dir.join("console.log")).unwrap_or_default();
    if String::from_utf8_lossy(&console).contains("Linux version") {
        return Ok(());
    }
    match ended {
        Ended::Failed { reason, .. } if reason.starts_with("timed out") => Err(format!(
            "a KVM guest printed nothing in {} s (no nested virtualisation?)",
            m.timeout.as_secs()
        )),
        Ended::Failed { reason, .. } => Err(format!("a KVM guest did not start: {reason}")),
        Ended::Measured(_) => Err("a KVM probe boot sent a result it cannot have".into()),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_file_without_the_setup_header_is_not_a_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notakernel");
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = check_bzimage(&p).unwrap_err().to_string();
        assert!(e.contains("not a kernel image"), "{e}");
        let mut image = vec![0u8; 4096];
        image[0x202..0x206].copy_from_slice(b"HdrS");
        std::fs::write(&p, image).unwrap();
        check_bzimage(&p).unwrap();
    }
}
