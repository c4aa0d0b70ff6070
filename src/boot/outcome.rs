//! How a boot ended, whatever booted it (QEMU here, a LAVA job, a kexec reboot): measured or
//! failed and of what kind ([`Ended`], [`Failure`]), read from what the guest sent back
//! ([`sent_back`]) or from the kernel's last words on its console ([`kernel_panic`]).

use super::guest::{GuestClock, GuestSymbols, Sent};
use crate::counters::emulated::{self, Window};
use serde::{Deserialize, Serialize};

/// A vCPU pinned to a host CPU, and how often its thread was seen there while the guest ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pinned {
    pub vcpu: u32,
    /// The host thread that runs it.
    pub thread: i32,
    pub host_cpu: usize,
    /// Looks at the CPU the thread last ran on (every 50 ms), and how many found it there.
    pub looks: u32,
    pub seen_there: u32,
}

/// How a boot ended.
#[derive(Debug)]
pub enum Ended {
    /// The guest sent its result, and its clock where the boot's time splits; with the
    /// plugin, the windows it counted.
    Measured {
        result: Vec<u8>,
        clock: Option<GuestClock>,
        pinned: Vec<Pinned>,
        windows: Option<Vec<Window>>,
        /// Where the guest kernel's text started, and maybe its symbols (`Sent::Symbols`).
        kallsyms: Option<GuestSymbols>,
    },
    /// It did not: why, in words and in kind, and the console's last lines.
    Failed {
        reason: String,
        console: Vec<String>,
        failure: Failure,
    },
}

/// What kind of failure a boot without a result had. Only the guest's own report repeats in
/// every boot of the arm; the others may not happen again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// The guest reported it: setting up the arm or the measuring command failed.
    InGuest,
    /// The kernel panicked; the reason is its console's own words.
    Panicked,
    /// Nothing came back within the boot's time limit.
    TimedOut,
    /// The guest ended without a result, or the host could not start or load it.
    #[default]
    NoResult,
    /// kexec: the kernel could not be loaded to boot into.
    NotLoaded,
    /// kexec: another kernel than the planned one came up (the firmware's default after the
    /// planned one failed to boot, or a reboot by hand), or the arm's image changed.
    OtherKernel,
}

impl Failure {
    /// Whether every boot of the arm would fail the same way: not worth another try.
    pub(crate) fn repeats(self) -> bool {
        self == Failure::InGuest
    }
}

/// How a boot ended, from the frames its guest sent back, when they hold a result or why there
/// is none; `plugin_log`: what the plugin wrote, when it counted.
pub(crate) fn sent_back(
    frames: Vec<Sent>,
    plugin_log: Option<&str>,
    pinned: Vec<Pinned>,
    console: &[String],
) -> Option<Ended> {
    let clock = frames.iter().find_map(|f| match f {
        Sent::Clock(c) => Some(*c),
        _ => None,
    });
    let kallsyms = frames.iter().find_map(|f| match f {
        Sent::Symbols(s) => Some(s.clone()),
        _ => None,
    });
    let sent = frames
        .into_iter()
        .find(|f| matches!(f, Sent::Result(_) | Sent::Failed(_)))?;
    Some(match sent {
        Sent::Result(result) => Ended::Measured {
            result,
            clock,
            pinned,
            windows: plugin_log.map(emulated::windows),
            kallsyms,
        },
        Sent::Failed(reason) => Ended::Failed {
            reason,
            console: console.to_vec(),
            failure: Failure::InGuest,
        },
        _ => return None,
    })
}

/// From a console: the last "Kernel panic - not syncing" message, with the oops that led to
/// it ("BUG: ...", "general protection fault ...", "Oops: ...") and its RIP line, if any.
pub(crate) fn kernel_panic(console: &str) -> Option<String> {
    let lines: Vec<&str> = console.lines().map(without_timestamp).collect();
    let at = lines
        .iter()
        .rposition(|l| l.starts_with("Kernel panic - not syncing:"))?;
    let message = lines[at]["Kernel panic - not syncing:".len()..].trim();
    let oops_at = lines[..at].iter().rposition(|l| {
        ["BUG: ", "general protection fault", "Oops: "]
            .iter()
            .any(|p| l.starts_with(p))
    });
    let Some(o) = oops_at else {
        return Some(message.to_string());
    };
    let rip = lines[o..at].iter().find(|l| l.starts_with("RIP: "));
    let rip = rip.map(|r| format!("; {r}")).unwrap_or_default();
    Some(format!("{message} ({}{rip})", lines[o].trim()))
}

/// A console line without its `[    0.930129] ` timestamp.
fn without_timestamp(line: &str) -> &str {
    let l = line.trim_end_matches('\r');
    match l
        .trim_start()
        .strip_prefix('[')
        .and_then(|r| r.split_once("] "))
    {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest,
        _ => l,
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_panic_is_told_by_its_message_its_oops_and_where() {
        let console = "[    0.91] Run /init as init process\r
[    0.92] BUG: kernel NULL pointer dereference, address: 0000000000000000\r
[    0.92] #PF: supervisor read access in kernel mode\r
[    0.93] RIP: 0010:update_load_avg+0x7e/0x7a0\r
[    0.93] RSP: 0018:ff71809e00013ba0 EFLAGS: 00000046\r
[    0.94] Kernel panic - not syncing: Fatal exception in interrupt\r
[    0.94] Kernel Offset: 0x18000000 from 0xffffffff81000000\r
";
        assert_eq!(
            kernel_panic(console).unwrap(),
            "Fatal exception in interrupt (BUG: kernel NULL pointer dereference, address: \
             0000000000000000; RIP: 0010:update_load_avg+0x7e/0x7a0)"
        );
        let no_init =
            "[    1.0] Kernel panic - not syncing: Requested init /nonexistent failed (error -2).";
        assert_eq!(
            kernel_panic(no_init).unwrap(),
            "Requested init /nonexistent failed (error -2)."
        );
        assert_eq!(kernel_panic("[    1.0] reboot: Power down"), None);
    }
}
