//! One boot of a kernel in QEMU: the console on the first serial port (kept for the failure's
//! last lines), the result channel on the second, `panic=-1` with `-no-reboot` so a panic ends
//! QEMU, a timeout, and QEMU killed with syscost (PR_SET_PDEATHSIG) and on an interruption.

use super::guest;
use super::outcome::{Ended, Failure, Pinned, kernel_panic, sent_back};
use super::qmp::Qmp;
use crate::core::cpus::{self, CpuList};
use crate::core::input::Opt;
use crate::counters::emulated;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The QEMU binary and the Debian package that has it.
pub(crate) const QEMU: &str = "qemu-system-x86_64";
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
    pub(crate) fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Where QEMU starts a campaign's kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum KernelEntry {
    /// Its vmlinux, taken out of the bzImage on the host, at the PVH entry: no decompression
    /// in the guest (falls back to the bzImage where the kernel has no PVH entry).
    #[default]
    Pvh,
    /// The bzImage, as a boot loader starts it: the guest decompresses it (slow under TCG).
    Bzimage,
}

/// The virtual machine every boot gets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub accel: Accel,
    pub cpus: u32,
    pub memory_mib: u32,
    /// A boot that has not powered off after this long is stopped and recorded as failed.
    pub timeout: Duration,
    /// Host CPUs the vCPU threads are pinned to: vCPU i to the i-th of the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<CpuList>,
    /// Where the kernels start.
    #[serde(default)]
    pub entry: KernelEntry,
    /// syscost's TCG plugin counts the guest's instructions in the measurement's batches.
    #[serde(default)]
    pub emulated_counters: bool,
    /// The L1 caches the plugin models (loads, stores and misses by set), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<emulated::CacheModel>,
    /// The plugin counts the kernel instructions of each block too, for a profile by function.
    #[serde(default)]
    pub emulated_profile: bool,
    /// QEMU's `-icount shift=N,sleep=off`: the guest's clock follows the instructions
    /// executed (2^N ns each) instead of the host's, so its timer interrupts land at the same
    /// instructions in every boot (tcg only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icount: Option<u8>,
    /// A fresh disk of this file system in every boot, mounted on the guest's
    /// [`super::guest::SCRATCH_DIR`] (`--guest-disk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_disk: Option<super::disk::GuestDisk>,
}

/// The file name of QEMU's control socket in a boot's directory (short: a unix socket's path
/// has at most 107 bytes).
const QMP_SOCKET: &str = "qmp";

/// Where the plugin's windows are written in a boot's directory.
const PLUGIN_LOG: &str = "plugin.log";

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
    /// syscost's TCG plugin (`counters::emulated`), loaded to count the guest's instructions
    /// in the windows its measurement marks; its log is the boot directory's plugin.log.
    pub plugin: Option<&'a Path>,
}

/// Refuse host CPUs that are not one per vCPU, or that syscost may not run on.
pub(crate) fn check_pinning(m: &Machine) -> Result<()> {
    let Some(list) = &m.host_cpus else {
        return Ok(());
    };
    if list.len() != m.cpus as usize {
        return Err(crate::refused!(
            Opt::HostCpus,
            format!(
                " {list} names {} CPU(s) for {} vCPU(s): ",
                list.len(),
                m.cpus
            ),
            "give one host CPU per vCPU (or change ",
            Opt::GuestCpus,
            ")"
        ));
    }
    cpus::check_allowed(list, Opt::HostCpus).map_err(anyhow::Error::msg)
}

/// Fail with the package to install when QEMU is missing.
pub(crate) fn check_installed() -> Result<()> {
    match Command::new(QEMU).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!("{QEMU} is not installed: apt-get install {PACKAGE} (Debian, Ubuntu)"),
    }
}

/// `-plugin`'s value: syscost's plugin at `file`, with the machine's cache model, asleep (the
/// marks alone instrumented) until the measured loop's first span wakes it: the kernel's boot
/// and syscost's start run at the emulator's speed and the models see the loop's accesses.
pub(crate) fn plugin_arg(m: &Machine, file: &Path) -> String {
    let file = file.to_string_lossy().replace(',', ",,");
    let args = m
        .cache_model
        .as_ref()
        .map(|c| format!(",{}", c.plugin_args()));
    // The profile: kernel instructions by block, and atomics by site.
    let blocks = if m.emulated_profile {
        ",blocks=1,atomics=1"
    } else {
        ""
    };
    format!(
        "file={file},asleep=1{}{blocks}{}",
        args.unwrap_or_default(),
        vcpus_arg(m)
    )
}

/// On more than one vCPU, the plugin counts the measured vCPU's windows alone (`vcpus=`), and
/// with the profile runs its coherence model over the guest's memory (`lines=`, in MiB: the
/// memory and, above 2 GiB, the PCI hole below 4 GiB that x86 machines map it around).
fn vcpus_arg(m: &Machine) -> String {
    if m.cpus < 2 {
        return String::new();
    }
    let lines = m.emulated_profile.then(|| {
        let hole = if m.memory_mib > 2048 { 2048 } else { 0 };
        format!(",lines={}", m.memory_mib + hole)
    });
    format!(",vcpus={}{}", m.cpus, lines.unwrap_or_default())
}

/// Load syscost's plugin at `file` into a QEMU that runs nothing (no machine, paused, told to
/// quit), before any boot: a QEMU built without plugin support, one whose plugin API no
/// longer offers version 1, or a plugin that refuses its arguments is refused here, in QEMU's
/// words, not in every boot.
pub(crate) fn check_plugin(m: &Machine, file: &Path) -> Result<()> {
    use std::io::Write;
    let mut c = Command::new(QEMU);
    c.args([
        "-machine",
        "none",
        "-accel",
        "tcg",
        "-nodefaults",
        "-display",
        "none",
    ])
    .args(["-S", "-monitor", "stdio", "-plugin", &plugin_arg(m, file)])
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = crate::signals::Guarded::spawn(&mut c, false)
        .with_context(|| format!("cannot run {QEMU}"))?;
    // QEMU has exited already if the plugin did not load: a closed pipe is no error here.
    let _ = child
        .child()
        .stdin
        .take()
        .expect("piped")
        .write_all(b"quit\n");
    let out = child.output()?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = crate::core::printable(said.trim());
    if said.contains("invalid option") {
        bail!(
            "this {QEMU} cannot load TCG plugins ({said}): counting needs a QEMU built with \
             plugin support (Debian's is, from 6.0 on)"
        );
    }
    bail!("{QEMU} does not load syscost's TCG plugin: {said}")
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
    if let Some(shift) = m.icount {
        c.args(["-icount", &format!("shift={shift},sleep=off")]);
    }
    if let Some(p) = b.plugin {
        c.arg("-plugin")
            .arg(plugin_arg(m, p))
            .args(["-d", "plugin", "-D"])
            .arg(b.dir.join(PLUGIN_LOG));
    }
    if m.host_cpus.is_some() {
        // Paused until its vCPU threads are pinned, then `cont` over QMP.
        let socket = b.dir.join(QMP_SOCKET);
        c.arg("-S").arg("-qmp").arg(format!(
            "unix:{},server=on,wait=off",
            socket.to_string_lossy().replace(',', ",,")
        ));
    }
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
    c
}

/// Boot once and wait for the guest to power off, the timeout, or an interruption (then QEMU
/// is killed and the interruption returned as the error). With host CPUs, the vCPUs are
/// pinned before the guest runs its first instruction; a pinning that fails is the error.
/// QEMU dies with syscost, even by SIGKILL ([`crate::signals::Guarded`]).
pub fn boot(m: &Machine, b: &Boot) -> Result<Ended> {
    use crate::signals::Guarded;
    let _ = std::fs::remove_file(b.dir.join("channel"));
    let _ = std::fs::remove_file(b.dir.join(QMP_SOCKET));
    let mut qemu = Guarded::spawn(&mut command(m, b), false)
        .with_context(|| format!("cannot start {QEMU}"))?;
    let mut pinned = match &m.host_cpus {
        Some(list) => pin_and_start(b.dir, qemu.child(), list)?,
        None => Vec::new(),
    };
    let waited = qemu.wait(Duration::from_millis(50), Some(m.timeout), &mut |c| {
        look_where_they_run(c.id(), &mut pinned)
    })?;
    let status = match waited {
        Ok(s) => Some(s),
        Err(crate::signals::Stopped::TimedOut) => None,
        Err(crate::signals::Stopped::Interrupted(i)) => return Err(i.into()),
    };
    Ok(ended(m, b, status, qemu.child(), pinned))
}

/// How the boot ended, from what the guest sent and how QEMU ended.
fn ended(
    m: &Machine,
    b: &Boot,
    status: Option<std::process::ExitStatus>,
    child: &mut Child,
    pinned: Vec<Pinned>,
) -> Ended {
    let console = console_tail(&b.dir.join("console.log"), 12);
    let frames = std::fs::read(b.dir.join("channel"))
        .map(|bytes| guest::unframe_all(&bytes))
        .unwrap_or_default();
    let plugin_log = b
        .plugin
        .map(|_| std::fs::read_to_string(b.dir.join(PLUGIN_LOG)).unwrap_or_default());
    if let Some(e) = sent_back(frames, plugin_log.as_deref(), pinned, &console) {
        return e;
    }
    match status {
        None => Ended::Failed {
            reason: format!("timed out after {}", humantime::format_duration(m.timeout)),
            console,
            failure: Failure::TimedOut,
        },
        Some(s) => {
            let (failure, reason) = no_result_reason(&b.dir.join("console.log"), s, child);
            Ended::Failed {
                reason,
                console,
                failure,
            }
        }
    }
}

/// Pin each vCPU thread of the paused QEMU to its host CPU, check that the kernel kept each
/// affinity, and let the guest run.
fn pin_and_start(dir: &Path, child: &mut Child, list: &CpuList) -> Result<Vec<Pinned>> {
    let mut q = match Qmp::connect(&dir.join(QMP_SOCKET), child, Duration::from_secs(10)) {
        Ok(q) => q,
        // QEMU said why on its standard error if it ended (read only then: it blocks).
        Err(e) if matches!(child.try_wait(), Ok(Some(_))) => bail!("{e:#}{}", stderr_of(child)),
        Err(e) => return Err(e),
    };
    let vcpus = q.vcpus()?;
    if vcpus.len() != list.len() {
        return Err(crate::refused!(
            Opt::HostCpus,
            format!(
                " {list} names {} CPU(s) for the guest's {} vCPU(s)",
                list.len(),
                vcpus.len()
            )
        ));
    }
    let mut threads: Vec<i32> = vcpus.iter().map(|v| v.thread).collect();
    threads.sort();
    threads.dedup();
    if threads.len() != vcpus.len() {
        bail!(
            "QEMU runs the guest's {} vCPUs on {} thread(s) (single-threaded TCG?): they \
             cannot be pinned one to a CPU",
            vcpus.len(),
            threads.len()
        );
    }
    let mut pinned = Vec::new();
    for (v, cpu) in vcpus.iter().zip(list.iter()) {
        let one = CpuList([cpu].into_iter().collect());
        cpus::set_affinity_of(v.thread, &one).with_context(|| {
            format!(
                "cannot pin vCPU {} (thread {}) to CPU {cpu}",
                v.index, v.thread
            )
        })?;
        let kept = cpus::affinity_of(v.thread)?;
        if kept != one {
            bail!(
                "vCPU {} was pinned to CPU {cpu} but may run on CPUs {kept}",
                v.index
            );
        }
        pinned.push(Pinned {
            vcpu: v.index,
            thread: v.thread,
            host_cpu: cpu,
            looks: 0,
            seen_there: 0,
        });
    }
    q.execute("cont")?;
    Ok(pinned)
}

/// Count, for each pinned vCPU thread, whether it last ran on its host CPU.
fn look_where_they_run(pid: u32, pinned: &mut [Pinned]) {
    for p in pinned {
        if let Some(cpu) = cpus::last_cpu_of(pid, p.thread) {
            p.looks += 1;
            p.seen_there += u32::from(cpu == p.host_cpu);
        }
    }
}

/// Why a guest ended without sending anything: the kernel's panic message and the oops
/// before it when the console has one, else what QEMU said.
fn no_result_reason(
    console: &Path,
    status: std::process::ExitStatus,
    child: &mut Child,
) -> (Failure, String) {
    let text = std::fs::read(console).unwrap_or_default();
    match kernel_panic(&String::from_utf8_lossy(&text)) {
        Some(panic) => (Failure::Panicked, format!("the kernel panicked: {panic}")),
        None => (
            Failure::NoResult,
            format!(
                "the guest ended without a result (a kernel panic, or an init that never ran; \
                 QEMU {status}{})",
                stderr_of(child)
            ),
        ),
    }
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
pub(crate) fn console_tail(path: &Path, n: usize) -> Vec<String> {
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
pub(crate) fn kvm_works(kernel: &Path, dir: &Path) -> std::result::Result<(), String> {
    if !Path::new("/dev/kvm").exists() {
        return Err("/dev/kvm does not exist".into());
    }
    let m = Machine {
        accel: Accel::Kvm,
        cpus: 1,
        memory_mib: 256,
        timeout: Duration::from_secs(8),
        host_cpus: None,
        entry: KernelEntry::Bzimage,
        emulated_counters: false,
        cache_model: None,
        emulated_profile: false,
        icount: None,
        guest_disk: None,
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
        plugin: None,
    };
    let ended = boot(&m, &b).map_err(|e| format!("{e:#}"))?;
    let console = std::fs::read(dir.join("console.log")).unwrap_or_default();
    if String::from_utf8_lossy(&console).contains("Linux version") {
        return Ok(());
    }
    match ended {
        Ended::Failed {
            failure: Failure::TimedOut,
            ..
        } => Err(format!(
            "a KVM guest printed nothing in {} s (no nested virtualisation?)",
            m.timeout.as_secs()
        )),
        Ended::Failed { reason, .. } => Err(format!("a KVM guest did not start: {reason}")),
        Ended::Measured { .. } => Err("a KVM probe boot sent a result it cannot have".into()),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// QEMU loads syscost's plugin, with and without cache models; a file that is no plugin
    /// is refused in QEMU's words before any boot.
    #[test]
    fn the_plugin_is_loaded_once_before_any_boot() {
        if check_installed().is_err() {
            println!("skipped: no {QEMU} here (scripts/test.sh installs it)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("tcg_count.so");
        std::fs::write(&plugin, emulated::PLUGIN).unwrap();
        let mut m = counting_machine();
        check_plugin(&m, &plugin).unwrap();
        m.cache_model = Some(emulated::CacheModel::parse("skylake-x").unwrap());
        check_plugin(&m, &plugin).unwrap();
        std::fs::write(&plugin, b"not a shared object").unwrap();
        let err = check_plugin(&m, &plugin).unwrap_err().to_string();
        assert!(err.contains("does not load syscost's TCG plugin"), "{err}");
        assert!(err.contains("Could not load plugin"), "{err}");
    }

    /// A small TCG machine whose plugin counts, with the profile's blocks.
    fn counting_machine() -> Machine {
        Machine {
            accel: Accel::Tcg,
            cpus: 1,
            memory_mib: 128,
            timeout: Duration::from_secs(8),
            host_cpus: None,
            entry: KernelEntry::Pvh,
            emulated_counters: true,
            cache_model: None,
            emulated_profile: true,
            icount: None,
            guest_disk: None,
        }
    }

    #[test]
    fn icount_and_the_profile_s_blocks_reach_qemu_s_command_line() {
        let m = Machine {
            icount: Some(0),
            ..counting_machine()
        };
        let dir = Path::new("/nonexistent");
        let b = Boot {
            kernel: dir,
            initrd: dir,
            append: String::new(),
            dir,
            disk: None,
            firmware_reboot: false,
            plugin: Some(Path::new("/x/tcg_count.so")),
        };
        let args: Vec<String> = command(&m, &b)
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let after = |flag: &str| {
            let i = args.iter().position(|a| a == flag).unwrap();
            args[i + 1].clone()
        };
        assert_eq!(after("-icount"), "shift=0,sleep=off");
        assert_eq!(
            after("-plugin"),
            "file=/x/tcg_count.so,asleep=1,blocks=1,atomics=1"
        );
        let plain = Machine { icount: None, ..m };
        let args: Vec<_> = command(&plain, &b)
            .get_args()
            .map(|a| a.to_owned())
            .collect();
        assert!(!args.iter().any(|a| a == "-icount"));
        let two = Machine { cpus: 2, ..plain };
        let arg = plugin_arg(&two, Path::new("/x/tcg_count.so"));
        assert!(arg.ends_with(",atomics=1,vcpus=2,lines=128"), "{arg}");
    }
}
