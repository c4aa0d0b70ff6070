//! syscost as the init of a campaign's guest: mount what a measurement needs, set up the
//! arm's state (its audit rules), run the measuring command exactly as on a host (a child
//! process of this binary, its result written to a file), send the result back over the
//! second serial port (never mixed with the console on the first), and power off. Whatever
//! fails is sent back as the reason instead; a panic of the kernel ends QEMU by itself
//! (`panic=-1` with `-no-reboot`).

use super::counts_port::CountsPort;
use super::mount::{mount, unmount};
use crate::counters::emulated::{Entry, Window};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Where the campaign's plan for the guest is in the initramfs.
pub(crate) const PLAN_PATH: &str = "/campaign/plan.json";
/// The kernel command-line parameter naming the arm of this boot.
pub(crate) const ARM_PARAM: &str = crate::core::ARM_PARAM;
/// On a boot's command line: send the kernel's whole symbol table (once per arm: reading it
/// under the emulator takes seconds; later boots send only where their text starts).
pub(crate) const KALLSYMS_PARAM: &str = "syscost.kallsyms";
/// The kernel command-line parameter naming a disk to keep state on (see [`mount_disk`]).
pub(crate) const DISK_PARAM: &str = "syscost.disk";
/// The kernel command-line parameter naming a fresh ext4 disk to measure on, mounted on
/// [`SCRATCH_DIR`] (`campaign --guest-disk`).
pub(crate) const SCRATCH_PARAM: &str = "syscost.scratch";
/// Where the guest mounts the disk [`SCRATCH_PARAM`] names.
pub(crate) const SCRATCH_DIR: &str = "/disk";
/// The result channel: the second serial port.
const CHANNEL: &str = "/dev/ttyS1";

/// What every boot of a campaign is told: the measuring command and what each arm sets up
/// (its audit rules, encoded, at paths inside the initramfs), by the arm's name, which each
/// boot's command line gives.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GuestPlan {
    pub measure: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arms: BTreeMap<String, GuestArm>,
    /// The arm's rules are placed anew before each run, run `i`'s ageing seeded with this
    /// plus `i` (see `audit::anew`); `None`: once, as the init loads them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place_per_run: Option<u64>,
    /// The file sent back, when the measuring command writes it itself (its own `-o`);
    /// otherwise `-o` is added to the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The measuring workers mark their batches for syscost's TCG plugin
    /// (`counters::emulated`).
    #[serde(default)]
    pub mark: bool,
    /// And record where their kernel objects are (the plugin models the caches).
    #[serde(default)]
    pub objects: bool,
    /// Wait up to this many seconds for the boot's own work to end before measuring
    /// (`settle`); `None`: measure at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
    /// Send the kernel's text symbols (its kallsyms, for the emulated profile) with the result.
    #[serde(default)]
    pub kallsyms: bool,
    /// Send everything back as text lines on the console (`console`), for a lab that keeps
    /// only the console's log (LAVA), instead of on the second serial port.
    #[serde(default)]
    pub console: bool,
    /// The plugin's counts come in on the second serial port (a LAVA job counting exactly):
    /// the guest reports them among its test cases.
    #[serde(default)]
    pub counts_port: bool,
}

/// What one arm's guest sets up and measures by, beside the plan's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestArm {
    /// Its audit rules (encoded), a path inside the initramfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// Its own measuring command instead of the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<Vec<String>>,
    /// Its rules load into a slab aged with this many objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aged: Option<usize>,
}

/// The frames on the channel: the guest's clock, then a result or why there is none.
const CLOCK: &str = "SYSCOST-CLOCK";
const RESULT: &str = "SYSCOST-RESULT";
const FAILED: &str = "SYSCOST-FAILED";
const SYMBOLS: &str = "SYSCOST-SYMBOLS";

/// The guest's own clock (CLOCK_BOOTTIME: seconds since its kernel started counting, early
/// in its boot) where a boot's time splits: the init started, the measurement began and
/// ended, the result was sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestClock {
    pub init: f64,
    /// When the wait for the boot's own work began (0: there was none).
    #[serde(default)]
    pub settle_from: f64,
    pub measure_from: f64,
    pub measure_to: f64,
    pub sent: f64,
}

/// CLOCK_BOOTTIME now, in seconds.
pub(crate) fn boottime() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: t is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// What a boot sent back.
#[derive(Debug, PartialEq)]
pub(crate) enum Sent {
    Clock(GuestClock),
    /// Where the guest kernel's text starts, and with `syscost.kallsyms` its text symbols.
    Symbols(GuestSymbols),
    Result(Vec<u8>),
    Failed(String),
}

/// A guest kernel's symbols as it sent them: the address of `_text` in this boot (KASLR moves
/// it from boot to boot, and every text symbol with it), and, when asked, its text symbols as
/// `ADDR NAME` lines, gzipped (empty otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct GuestSymbols {
    pub text: u64,
    pub table: Vec<u8>,
}

impl GuestSymbols {
    /// On the channel: the address in 16 hexadecimal digits, a newline, the table.
    fn bytes(&self) -> Vec<u8> {
        let mut out = format!("{:016x}\n", self.text).into_bytes();
        out.extend_from_slice(&self.table);
        out
    }

    fn of_bytes(b: &[u8]) -> Option<GuestSymbols> {
        let text = u64::from_str_radix(std::str::from_utf8(b.get(..16)?).ok()?, 16).ok()?;
        Some(GuestSymbols {
            text,
            table: b.get(17..)?.to_vec(),
        })
    }
}

/// `tag length\n bytes \n`.
pub(crate) fn frame(sent: &Sent) -> Vec<u8> {
    let (clock, symbols);
    let (tag, body) = match sent {
        Sent::Clock(c) => {
            clock = serde_json::to_vec(c).expect("a clock serialises");
            (CLOCK, clock.as_slice())
        }
        Sent::Symbols(s) => {
            symbols = s.bytes();
            (SYMBOLS, symbols.as_slice())
        }
        Sent::Result(b) => (RESULT, b.as_slice()),
        Sent::Failed(s) => (FAILED, s.as_bytes()),
    };
    let mut out = format!("{tag} {}\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.push(b'\n');
    out
}

/// The first whole frame in what the channel received, if any, and the bytes it took.
fn next_frame(bytes: &[u8]) -> Option<(Sent, usize)> {
    let text_end = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..text_end]).ok()?;
    let (tag, len) = header.trim().split_once(' ')?;
    let len: usize = len.parse().ok()?;
    let body = bytes.get(text_end + 1..text_end + 1 + len)?.to_vec();
    let sent = match tag {
        CLOCK => Sent::Clock(serde_json::from_slice(&body).ok()?),
        SYMBOLS => Sent::Symbols(GuestSymbols::of_bytes(&body)?),
        RESULT => Sent::Result(body),
        FAILED => Sent::Failed(String::from_utf8_lossy(&body).into()),
        _ => return None,
    };
    Some((sent, text_end + 2 + len))
}

/// Every whole frame, in order, up to the first that is not.
pub(crate) fn unframe_all(mut bytes: &[u8]) -> Vec<Sent> {
    let mut out = Vec::new();
    while let Some((s, used)) = next_frame(bytes) {
        out.push(s);
        bytes = bytes.get(used..).unwrap_or_default();
    }
    out
}

/// Whether this process is a campaign guest's init: process 1, with the campaign's plan in
/// its initramfs and syscost's mark on the kernel command line (a `syscost.` parameter: the
/// arm of a QEMU boot, the disk of a kexec campaign's guest). A container whose entrypoint is
/// syscost (`docker run IMAGE syscost ...`, `unshare --pid --fork`) is process 1 too, with
/// neither: it runs the command it was given.
pub fn is_init() -> bool {
    std::process::id() == 1
        && Path::new(PLAN_PATH).is_file()
        && kernel_cmdline().is_some_and(|c| marked(&c))
}

/// Whether a kernel command line carries a parameter of syscost's (`syscost.NAME=...`).
fn marked(cmdline: &str) -> bool {
    cmdline
        .split_whitespace()
        .any(|w| w.starts_with("syscost.") && w.contains('='))
}

/// The kernel's command line. A guest's init starts before anything is mounted: then /proc is
/// mounted for the reading and unmounted after it (the init mounts what it needs itself).
fn kernel_cmdline() -> Option<String> {
    if let Ok(c) = std::fs::read_to_string("/proc/cmdline") {
        return Some(c);
    }
    mount("proc", "/proc", "proc", 0).ok()?;
    let c = std::fs::read_to_string("/proc/cmdline").ok();
    unmount("/proc");
    c
}

/// A boot's figures as a lab's test cases, from its result and the plugin's windows the guest
/// received, if any (given by the caller: decoding a result is a layer above the guest's).
pub(crate) type Cases =
    fn(&[u8], &[crate::counters::emulated::Window]) -> Vec<super::console::Case>;

/// What a guest in a lab reports besides its result, given by the caller (decoding a result is
/// a layer above the guest's): its figures as test cases, and whether the plugin's windows
/// received so far are all that its result's batches opened.
#[derive(Clone, Copy)]
pub struct LabCases {
    pub cases: Cases,
    pub complete: fn(&[u8], &[crate::counters::emulated::Window]) -> bool,
}

/// The lab's start mark went out before the measurement.
static BEGUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Run as init: measure, send, power off. Never returns.
pub fn init(lab: LabCases) -> ! {
    let mut clock = GuestClock {
        init: boottime(),
        ..GuestClock::default()
    };
    let mut port = None;
    let (sent, symbols) = match measure(&mut clock, &mut port) {
        Ok((bytes, symbols)) => (Sent::Result(bytes), symbols),
        Err(e) => (Sent::Failed(format!("{e:#}")), None),
    };
    clock.sent = boottime();
    let frames: Vec<Sent> = [
        Some(Sent::Clock(clock)),
        symbols.map(Sent::Symbols),
        Some(sent),
    ]
    .into_iter()
    .flatten()
    .collect();
    let console = plan_here().is_some_and(|p| p.console);
    let result = frames.iter().find_map(|f| match f {
        Sent::Result(r) => Some(r.as_slice()),
        _ => None,
    });
    let complete = |w: &[Window]| result.is_some_and(|r| (lab.complete)(r, w));
    let windows = port.map(|p| p.windows(complete)).unwrap_or_default();
    if let Err(e) = send(&frames, console.then_some((lab.cases, windows))) {
        eprintln!("syscost (guest): cannot send the result: {e:#}");
    }
    // A kernel without ACPI (syscost's own builds leave it out) cannot power off: it
    // reboots instead, which ends QEMU as well (it runs with -no-reboot).
    let how = match Path::new("/sys/firmware/acpi").exists() {
        true => libc::RB_POWER_OFF,
        false => libc::RB_AUTOBOOT,
    };
    // SAFETY: sync and reboot take no pointers; as init this ends the guest.
    unsafe {
        libc::sync();
        libc::reboot(how);
    }
    std::process::exit(1)
}

/// The guest made ready to measure: its file systems mounted, the campaign's plan read, the
/// counts' port open and the console begun when the plan says; its command line and plan.
fn prepared(port: &mut Option<CountsPort>) -> Result<(String, GuestPlan)> {
    mount_all()?;
    let cmdline = std::fs::read_to_string("/proc/cmdline")?;
    mount_disk(&cmdline)?;
    if let Some(dev) = param(&cmdline, SCRATCH_PARAM) {
        mount_ext4(dev, SCRATCH_DIR)?;
    }
    let plan: GuestPlan = serde_json::from_slice(&std::fs::read(PLAN_PATH)?)
        .context("the campaign's plan in the initramfs")?;
    if plan.counts_port {
        *port = Some(CountsPort::open()?);
    }
    if plan.console
        && let Ok(mut c) = std::fs::OpenOptions::new().write(true).open("/dev/console")
    {
        // The plugin's lines (QEMU's log) share the console in a lab, after the firmware's
        // last line; the lab's monitor starts now (see console::BEGIN_EARLY).
        BEGUN.store(
            c.write_all(super::console::BEGIN_EARLY.as_bytes()).is_ok(),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    Ok((cmdline, plan))
}

/// The result, and the kernel's symbols when the plan asks for them; `port`: the plugin's
/// counts, read from before the measurement when the plan says they come.
fn measure(
    clock: &mut GuestClock,
    port: &mut Option<CountsPort>,
) -> Result<(Vec<u8>, Option<GuestSymbols>)> {
    let (cmdline, plan) = prepared(port)?;
    let state = Path::new(super::hook::STATE_DIR).join(super::hook::STATE_NAME);
    if state.exists() {
        return Ok((resume_kexec_campaign(&plan)?, None));
    }
    let arm = param(&cmdline, ARM_PARAM).and_then(|a| plan.arms.get(a));
    let aged = arm.and_then(|a| a.aged);
    let words = arm
        .and_then(|a| a.measure.as_ref())
        .unwrap_or(&plan.measure);
    let rules = arm
        .and_then(|a| a.rules.as_ref())
        .map(|path| Ok::<_, std::io::Error>((std::fs::read_to_string(path)?, path.clone())))
        .transpose()?;
    // The kernel's symbols are read before the guest settles: the reading's own aftermath (a
    // whole /proc/kallsyms for the profile is megabytes formatted, copied and freed) must end
    // before the measurement, as the boot's does.
    let whole = param(&cmdline, KALLSYMS_PARAM).is_some();
    let read = plan
        .mark
        .then(|| kernel_symbols(plan.kallsyms.then_some(whole)));
    let settled = plan.settle_s.map(|limit| {
        clock.settle_from = boottime();
        super::settle::settle(std::time::Duration::from_secs_f64(limit))
    });
    // Counting: no other task may run in the measured windows (see `alone`), once the boot's
    // own work has ended. Measured at once (--settle 0) or still busy at the limit, that work
    // must run (held off, its timers and softirqs would land in every window), and the
    // windows it runs in are left out.
    let quiet = settled.is_some_and(|s| s.quiet);
    let symbols_read = read.and_then(|(entries, symbols)| {
        if !entries.is_empty() {
            crate::counters::emulated::declare(&entries);
        }
        symbols
    });
    let alone = match plan.mark && quiet {
        true => super::alone::take_the_cpu(),
        false => Vec::new(),
    };
    clock.measure_from = boottime();
    let result = match &plan.result {
        None => super::measure_here(
            words,
            rules.as_ref().map(|(t, p)| (t.as_str(), p.as_str())),
            (aged, plan.place_per_run),
            (plan.mark, plan.objects),
            super::After::PowerOff,
        ),
        Some(path) => run_here(words).and_then(|()| {
            std::fs::read(path).with_context(|| format!("the measurement wrote no {path}"))
        }),
    };
    clock.measure_to = boottime();
    if plan.mark {
        crate::counters::emulated::doze();
    }
    let warnings = settled.and_then(|s| s.warning()).into_iter().chain(alone);
    let result = warnings.fold(result?, |r, w| with_warning(r, &w));
    Ok((result, symbols_read))
}

/// This kernel's interrupt entries, for the plugin to leave the interrupts out of every window
/// (a kernel whose symbols cannot be read is counted with its interrupts, and the joined result
/// says so): here 0.2 s of a Debian 6.1 boot and 0.45 s of a 6.12 one, nearly all of it the
/// kernel formatting /proc/kallsyms up to .entry.text. With `symbols` (whether whole), also
/// its symbols for the profile, from the same reading of the whole file: read before the
/// measurement, not after it, where code translated while the plugin was awake still runs its
/// callbacks (a 2-vCPU boot with the coherence model spent 0.4 s more there than one
/// without). The plugin, asleep while the kernel booted, is told the entries asleep; the
/// measurement's first span wakes it (`emulated::Span`).
fn kernel_symbols(symbols: Option<bool>) -> (Vec<Entry>, Option<GuestSymbols>) {
    use crate::counters::emulated::interrupt_entries;
    use std::io::BufRead as _;
    if symbols == Some(true) {
        let Ok(all) = std::fs::read_to_string("/proc/kallsyms") else {
            return (Vec::new(), None);
        };
        return (interrupt_entries(all.lines()), kallsyms_text(&all));
    }
    // Else read only as far as .entry.text's end, which `_text` comes before: the kernel
    // formats the file as it is read, a symbol at a time.
    let Ok(f) = std::fs::File::open("/proc/kallsyms") else {
        return (Vec::new(), None);
    };
    let mut head = Vec::new();
    for l in std::io::BufReader::new(f).lines().map_while(Result::ok) {
        let end = l.ends_with(" __entry_text_end");
        head.push(l);
        if end {
            break;
        }
    }
    let text = symbols.and_then(|_| head.iter().find_map(|l| text_start(l)));
    let symbols = text.map(|text| GuestSymbols {
        text,
        table: Vec::new(),
    });
    (interrupt_entries(head.iter()), symbols)
}

/// A result with `warning` added to its warnings (a result without any is sent as it is).
pub(super) fn with_warning(bytes: Vec<u8>, warning: &str) -> Vec<u8> {
    edited(bytes, |v| {
        v.get_mut("warnings")?.as_array_mut()?.push(warning.into());
        Some(())
    })
}

/// A result with `field` set to `value` (a result that is not a JSON object is sent as it is).
pub(super) fn with_field(bytes: Vec<u8>, field: &str, value: serde_json::Value) -> Vec<u8> {
    edited(bytes, |v| {
        v.as_object_mut()?.insert(field.to_string(), value);
        Some(())
    })
}

/// The result JSON in `bytes` as `edit` changes it; unchanged when it is not JSON or `edit`
/// finds nothing to change (`None`).
fn edited(bytes: Vec<u8>, edit: impl FnOnce(&mut serde_json::Value) -> Option<()>) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return bytes;
    };
    match edit(&mut v) {
        Some(()) => serde_json::to_vec(&v).unwrap_or(bytes),
        None => bytes,
    }
}

/// The init is a kexec campaign's boot hook: resume it (the resume reboots into the next arm,
/// so it returns only after the last boot), then send back what the plan names.
fn resume_kexec_campaign(plan: &GuestPlan) -> Result<Vec<u8>> {
    run_here(&["campaign".to_string(), "resume".to_string()])?;
    let path = plan
        .result
        .as_deref()
        .context("a kexec campaign ended, but the guest's plan names no result file")?;
    std::fs::read(path).with_context(|| format!("the campaign wrote no {path}"))
}

/// `_text`'s address, when a /proc/kallsyms line is its.
fn text_start(l: &str) -> Option<u64> {
    let mut w = l.split_whitespace();
    let (addr, _, name) = (w.next()?, w.next()?, w.next()?);
    (name == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
}

/// This kernel's text symbols from /proc/kallsyms (`ADDR NAME` lines, the module symbols left
/// out: a campaign's guest loads no module), then, after a line [`DATA_SYMBOLS`], its data
/// symbols (.data and .bss: the locks, trees and counters a profile's lines are in), gzipped
/// for the serial channel, and where its `_text` is, from the same reading.
fn kallsyms_text(all: &str) -> Option<GuestSymbols> {
    use std::io::Write as _;
    let (mut text, mut data) = (String::with_capacity(all.len()), String::new());
    let mut start = None;
    for l in all.lines() {
        let mut f = l.split_whitespace();
        let (Some(addr), Some(kind), Some(name), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        match kind {
            "t" | "T" | "w" | "W" => {
                if name == "_text" {
                    start = u64::from_str_radix(addr, 16).ok();
                }
                text.extend([addr, " ", name, "\n"]);
            }
            "d" | "D" | "b" | "B" => data.extend([addr, " ", name, "\n"]),
            _ => {}
        }
    }
    text.extend([DATA_SYMBOLS, "\n"]);
    text.push_str(&data);
    // One write: the encoder's cost per write call, 87,000 of them, took 11 s under TCG.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).ok()?;
    Some(GuestSymbols {
        text: start?,
        table: gz.finish().ok()?,
    })
}

/// The line between a sent table's text symbols and its data symbols.
pub(crate) const DATA_SYMBOLS: &str = "data";

/// Run syscost's `words` in this boot, its output on the console.
fn run_here(words: &[String]) -> Result<()> {
    let mut c = std::process::Command::new("/init");
    c.args(words).env("SYSCOST_HISTORY", "/tmp/history.sqlite");
    let st = crate::signals::Guarded::spawn_told(&mut c)
        .and_then(|mut g| g.wait_end())
        .context("cannot start syscost")?;
    if !st.success() && st.code() != Some(4) {
        bail!("`syscost {}` failed ({st})", words.join(" "));
    }
    Ok(())
}

/// `syscost.disk=DEV`: a disk holding what must outlive a kexec (a kexec campaign's state and
/// the kernels it boots), an ext4 file system mounted on /disk whose `boot` and
/// `var/lib/syscost` are bound on /boot and /var/lib/syscost.
fn mount_disk(cmdline: &str) -> Result<()> {
    let Some(dev) = param(cmdline, DISK_PARAM) else {
        return Ok(());
    };
    mount_ext4(dev, "/disk")?;
    for (from, to) in [
        ("/disk/boot", "/boot"),
        ("/disk/var/lib/syscost", "/var/lib/syscost"),
    ] {
        std::fs::create_dir_all(from)?;
        std::fs::create_dir_all(to)?;
        mount(from, to, "none", libc::MS_BIND).with_context(|| format!("bind {from} on {to}"))?;
    }
    Ok(())
}

/// Mount the ext4 file system of `dev` on `dir`, once the device is there: a disk controller
/// is probed after the init starts.
fn mount_ext4(dev: &str, dir: &str) -> Result<()> {
    let waited = std::time::Instant::now();
    while !Path::new(dev).exists() {
        if waited.elapsed() > std::time::Duration::from_secs(20) {
            bail!(
                "{dev}: no such device after 20 s (does the kernel have its driver built in? \
                 QEMU attaches it as NVMe)"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::create_dir_all(dir)?;
    mount(dev, dir, "ext4", 0).with_context(|| format!("mount {dev} on {dir}"))
}

/// `name=value` of a kernel command line.
pub(crate) fn param<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

/// The file systems the guest mounts, (source, directory, type), in order: a file of the
/// initramfs under a tmpfs's directory is copied into the new file system (a rules file a
/// measuring command names under the host's /tmp, say); under one of the others it is hidden.
pub(crate) const MOUNTS: &[(&str, &str, &str)] = &[
    ("proc", "/proc", "proc"),
    ("sysfs", "/sys", "sysfs"),
    ("devtmpfs", "/dev", "devtmpfs"),
    ("tmpfs", "/tmp", "tmpfs"),
    ("tmpfs", "/run", "tmpfs"),
    ("tracefs", "/sys/kernel/tracing", "tracefs"),
];

fn mount_all() -> Result<()> {
    for &(what, dir, fs) in MOUNTS {
        let aside = match fs {
            "tmpfs" => set_aside(Path::new(dir))?,
            _ => None,
        };
        mount(what, dir, fs, 0).with_context(|| format!("mount {fs} on {dir}"))?;
        if let Some(a) = aside {
            copy_tree(&a, Path::new(dir)).with_context(|| format!("copy the initramfs's {dir}"))?;
            std::fs::remove_dir_all(&a)?;
        }
    }
    let _ = std::fs::create_dir_all("/dev/shm");
    mount("tmpfs", "/dev/shm", "tmpfs", 0).context("mount tmpfs on /dev/shm")
}

/// What the initramfs put under `dir`, moved aside before a file system is mounted there (the
/// directory made again, empty): `None` when it held nothing.
fn set_aside(dir: &Path) -> Result<Option<std::path::PathBuf>> {
    let held = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if !held {
        return Ok(None);
    }
    let aside = dir.with_extension("initramfs");
    std::fs::rename(dir, &aside).with_context(|| format!("move {} aside", dir.display()))?;
    std::fs::create_dir(dir)?;
    Ok(Some(aside))
}

/// Copy the directory tree `from` into `to`: directories, files (with their modes) and
/// symbolic links.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir_all(&dst)?;
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Write the frames to the channel in raw mode (no newline translation) and wait until the
/// port has sent them.
/// The campaign's plan in this guest's initramfs, if it reads.
fn plan_here() -> Option<GuestPlan> {
    serde_json::from_slice(&std::fs::read(PLAN_PATH).ok()?).ok()
}

/// Send `frames` on the second serial port, or with `cases` (of the windows received) as
/// lines on the console.
fn send(frames: &[Sent], cases: Option<(Cases, Vec<Window>)>) -> Result<()> {
    if let Some((cases, windows)) = cases {
        return send_on_console(frames, cases, &windows);
    }
    let mut port = std::fs::OpenOptions::new()
        .write(true)
        .open(CHANNEL)
        .with_context(|| format!("cannot open {CHANNEL}"))?;
    let fd = port.as_raw_fd();
    super::counts_port::raw(fd);
    port.write_all(&frames.iter().flat_map(frame).collect::<Vec<u8>>())?;
    port.flush()?;
    // SAFETY: fd is open.
    unsafe { libc::tcdrain(fd) };
    Ok(())
}

/// `frames` as lines on the console, the result's figures first as test cases, with the
/// kernel's own messages to the console turned off (a line of the kernel's in the middle of
/// one of these would damage it).
fn send_on_console(frames: &[Sent], cases: Cases, windows: &[Window]) -> Result<()> {
    let figures = match frames.iter().find_map(|f| match f {
        Sent::Result(r) => Some(r),
        _ => None,
    }) {
        Some(r) => cases(r, windows),
        None => Vec::new(),
    };
    let bytes: Vec<u8> = frames.iter().flat_map(frame).collect();
    // SAFETY: SYSLOG_ACTION_CONSOLE_OFF (6) takes no buffer.
    unsafe { libc::klogctl(6, std::ptr::null_mut(), 0) };
    let mut console = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/console")
        .context("cannot open /dev/console")?;
    let lines = super::console::lines(&bytes, &figures);
    let begun = BEGUN.load(std::sync::atomic::Ordering::Relaxed);
    for (text, pause) in super::console::writes(&lines, begun) {
        console.write_all(text.as_bytes())?;
        console.flush()?;
        // SAFETY: the descriptor is open.
        unsafe { libc::tcdrain(console.as_raw_fd()) };
        std::thread::sleep(pause);
    }
    Ok(())
}

#[cfg(test)]
mod tree_copy {
    /// A tree set aside and copied back keeps its directories, files, modes and links.
    #[test]
    fn a_tree_is_copied_whole() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let from = t.path().join("from");
        std::fs::create_dir_all(from.join("a/b")).unwrap();
        std::fs::write(from.join("a/b/rules"), "-a always,exit -S acct\n").unwrap();
        std::fs::set_permissions(
            from.join("a/b/rules"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("b/rules", from.join("a/link")).unwrap();
        let to = t.path().join("to");
        std::fs::create_dir(&to).unwrap();
        super::copy_tree(&from, &to).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.join("a/link")).unwrap(),
            "-a always,exit -S acct\n"
        );
        let mode = std::fs::metadata(to.join("a/b/rules"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn frames_round_trip_and_partial_ones_are_none() {
        for s in [
            Sent::Symbols(GuestSymbols {
                text: 0xffffffff81000000,
                table: vec![0x1f, 0x8b, b'\n', 0],
            }),
            Sent::Result(b"{\"a\":\n1}".to_vec()),
            Sent::Failed("why".into()),
        ] {
            let f = frame(&s);
            assert_eq!(unframe_all(&f[..f.len() - 3]), []);
            assert_eq!(unframe_all(&f), [s]);
        }
        assert_eq!(unframe_all(b"noise"), []);
    }

    #[test]
    fn the_clock_comes_before_the_result_and_both_are_read() {
        let clock = GuestClock {
            init: 0.9,
            settle_from: 0.95,
            measure_from: 1.0,
            measure_to: 2.5,
            sent: 2.6,
        };
        let mut bytes = frame(&Sent::Clock(clock));
        bytes.extend(frame(&Sent::Result(b"{}".to_vec())));
        assert_eq!(
            unframe_all(&bytes),
            [Sent::Clock(clock), Sent::Result(b"{}".to_vec())]
        );
        assert_eq!(unframe_all(&bytes[..bytes.len() - 2]), [Sent::Clock(clock)]);
    }

    #[test]
    fn the_arm_comes_from_the_command_line_and_the_output_before_the_command() {
        let cmdline = "console=ttyS0 panic=-1 syscost.arm=audit1 audit=1";
        assert_eq!(param(cmdline, ARM_PARAM), Some("audit1"));
        assert!(marked(cmdline));
        assert!(marked("console=ttyS0 syscost.disk=/dev/vda"));
        let host = "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet syscost";
        assert!(!marked(host), "a word alone is no parameter of syscost's");
        assert_eq!(param(cmdline, "syscost.boot"), None);
        let words: Vec<String> = ["run", "exec", "--ops", "1", "--", "true"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            super::super::with_output(&words, "/r.json").join(" "),
            "run exec --ops 1 -o /r.json -- true"
        );
    }
}
