//! syscost as the init of a campaign's guest: mount what a measurement needs, set up the
//! arm's state (its audit rules), run the measuring command exactly as on a host (a child
//! process of this binary, its result written to a file), send the result back over the
//! second serial port (never mixed with the console on the first), and power off. Whatever
//! fails is sent back as the reason instead; a panic of the kernel ends QEMU by itself
//! (`panic=-1` with `-no-reboot`).

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::AsRawFd;

/// Where the campaign's plan for the guest is in the initramfs.
pub const PLAN_PATH: &str = "/campaign/plan.json";
/// The kernel command-line parameter naming the arm of this boot.
pub const ARM_PARAM: &str = "syscost.arm";
/// The result channel: the second serial port.
const CHANNEL: &str = "/dev/ttyS1";
const RESULT_FILE: &str = "/tmp/syscost-result.json";

/// What every boot of a campaign is told: the measuring command and each arm's audit rules
/// (encoded, paths inside the initramfs).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GuestPlan {
    pub measure: Vec<String>,
    pub rules: BTreeMap<String, String>,
}

/// The frames on the channel: a result, or why there is none.
const RESULT: &str = "SYSCOST-RESULT";
const FAILED: &str = "SYSCOST-FAILED";

/// What a boot sent back.
#[derive(Debug, PartialEq)]
pub enum Sent {
    Result(Vec<u8>),
    Failed(String),
}

/// `tag length\n bytes \n`.
pub fn frame(sent: &Sent) -> Vec<u8> {
    let (tag, body) = match sent {
        Sent::Result(b) => (RESULT, b.as_slice()),
        Sent::Failed(s) => (FAILED, s.as_bytes()),
    };
    let mut out = format!("{tag} {}\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.push(b'\n');
    out
}

/// The first whole frame in what the channel received, if any.
pub fn unframe(bytes: &[u8]) -> Option<Sent> {
    let text_end = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..text_end]).ok()?;
    let (tag, len) = header.trim().split_once(' ')?;
    let len: usize = len.parse().ok()?;
    let body = bytes.get(text_end + 1..text_end + 1 + len)?.to_vec();
    match tag {
        RESULT => Some(Sent::Result(body)),
        FAILED => Some(Sent::Failed(String::from_utf8_lossy(&body).into())),
        _ => None,
    }
}

/// Whether this process is a guest's init.
pub fn is_init() -> bool {
    std::process::id() == 1
}

/// Run as init: measure, send, power off. Never returns.
pub fn init() -> ! {
    let sent = match measure() {
        Ok(bytes) => Sent::Result(bytes),
        Err(e) => Sent::Failed(format!("{e:#}")),
    };
    if let Err(e) = send(&sent) {
        eprintln!("syscost (guest): cannot send the result: {e:#}");
    }
    // SAFETY: sync and reboot take no pointers; as init this powers the guest off.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    std::process::exit(1)
}

fn measure() -> Result<Vec<u8>> {
    mount_all()?;
    let cmdline = std::fs::read_to_string("/proc/cmdline")?;
    let arm = param(&cmdline, ARM_PARAM)
        .ok_or_else(|| anyhow!("no {ARM_PARAM}= on the kernel command line"))?;
    let plan: GuestPlan = serde_json::from_slice(&std::fs::read(PLAN_PATH)?)
        .context("the campaign's plan in the initramfs")?;
    if let Some(path) = plan.rules.get(arm) {
        load_rules(path)?;
    }
    let out = std::process::Command::new("/init")
        .args(with_output(&plan.measure))
        .env("SYSCOST_HISTORY", "/tmp/history.sqlite")
        .output()
        .context("cannot start the measurement")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        bail!(
            "the measurement failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    std::fs::read(RESULT_FILE).context("the measurement wrote no result")
}

/// The measuring words with `-o RESULT_FILE` among syscost's options (before a `--`).
fn with_output(words: &[String]) -> Vec<String> {
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let mut out = words[..split].to_vec();
    out.extend(["-o".to_string(), RESULT_FILE.to_string()]);
    out.extend(words[split..].iter().cloned());
    out
}

/// `name=value` of a kernel command line.
pub fn param<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

fn mount_all() -> Result<()> {
    for (what, dir, fs) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
        ("tmpfs", "/tmp", "tmpfs"),
        ("tmpfs", "/run", "tmpfs"),
        ("tracefs", "/sys/kernel/tracing", "tracefs"),
    ] {
        mount(what, dir, fs).with_context(|| format!("mount {fs} on {dir}"))?;
    }
    let _ = std::fs::create_dir_all("/dev/shm");
    mount("tmpfs", "/dev/shm", "tmpfs").context("mount tmpfs on /dev/shm")
}

fn mount(what: &str, dir: &str, fs: &str) -> Result<()> {
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in a mount argument");
    let (what, dir_c, fs) = (c(what), c(dir), c(fs));
    // SAFETY: the strings live across the call; no mount data is passed.
    let rc = unsafe {
        libc::mount(
            what.as_ptr(),
            dir_c.as_ptr(),
            fs.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

fn load_rules(path: &str) -> Result<()> {
    let text = std::fs::read_to_string(path)?;
    let rules = crate::audit::rules_file::parse(&text, path)?;
    let mut sock = crate::audit::AuditSocket::open()?;
    for (i, r) in rules.iter().enumerate() {
        sock.add_rule(r)
            .with_context(|| format!("the guest kernel refused audit rule {} of {path}", i + 1))?;
    }
    Ok(())
}

/// Write the frame to the channel in raw mode (no newline translation) and wait until the
/// port has sent it.
fn send(sent: &Sent) -> Result<()> {
    let mut port = std::fs::OpenOptions::new()
        .write(true)
        .open(CHANNEL)
        .with_context(|| format!("cannot open {CHANNEL}"))?;
    let fd = port.as_raw_fd();
    // SAFETY: a termios filled by tcgetattr on an open descriptor.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
    port.write_all(&frame(sent))?;
    port.flush()?;
    // SAFETY: fd is open.
    unsafe { libc::tcdrain(fd) };
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn frames_round_trip_and_partial_ones_are_none() {
        for s in [
            Sent::Result(b"{\"a\":\n1}".to_vec()),
            Sent::Failed("why".into()),
        ] {
            let f = frame(&s);
            assert_eq!(unframe(&f), Some(s));
            assert_eq!(unframe(&f[..f.len() - 3]), None);
        }
        assert_eq!(unframe(b"noise"), None);
    }

    #[test]
    fn the_arm_comes_from_the_command_line_and_the_output_before_the_command() {
        let cmdline = "console=ttyS0 panic=-1 syscost.arm=audit1 audit=1";
        assert_eq!(param(cmdline, ARM_PARAM), Some("audit1"));
        assert_eq!(param(cmdline, "syscost.boot"), None);
        let words: Vec<String> = ["run", "exec", "--ops", "1", "--", "true"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            with_output(&words).join(" "),
            format!("run exec --ops 1 -o {RESULT_FILE} -- true")
        );
    }
}
