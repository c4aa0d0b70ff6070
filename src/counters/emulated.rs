//! Counting without a PMU, under QEMU's emulator: syscost's TCG plugin (csrc/tcg_count.c,
//! built by build.rs and carried in this binary) counts the guest's instructions, user and
//! kernel apart, in windows the measured program marks. Here: the marks a measured batch
//! leaves (a one-byte load whose address names the window, then a `nopl` no processor acts
//! on: outside the emulator they cost two instructions), and the windows the plugin reports.

use std::sync::atomic::AtomicU8;

/// The plugin, as a shared object QEMU loads (`-plugin file=...`).
pub const PLUGIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tcg_count.so"));

/// Set in a measuring process's environment (by a campaign guest's init): its workers mark
/// every measured batch.
pub const MARK_ENV: &str = "SYSCOST_MARK_WINDOWS";

/// Whether this process marks its batches.
pub fn marking() -> bool {
    std::env::var_os(MARK_ENV).is_some()
}

/// The bytes whose addresses name the windows: batch `k` of a run loads slot `k % SLOTS`.
const SLOTS: usize = 4096;
static SLOT: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];

/// Mark the start of batch `k`'s window.
#[inline(always)]
pub fn begin(k: usize) {
    mark::<1>(k)
}

/// Mark the end of batch `k`'s window.
#[inline(always)]
pub fn end(k: usize) {
    mark::<2>(k)
}

/// `mov al, [slot k]; nop dword ptr [rax + 0x5c05c0KIND]`: the plugin knows the nop by its
/// bytes (0f 1f 80 KIND c0 05 5c) and the window by the load's address.
#[inline(always)]
fn mark<const KIND: u8>(k: usize) {
    let slot = SLOT[k % SLOTS].as_ptr();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a one-byte load from a static, and a no-op; rax (its low byte) is clobbered.
    unsafe {
        std::arch::asm!(
            "mov al, byte ptr [{slot}]",
            "nop dword ptr [rax + 0x5c05c000 + {kind}]",
            slot = in(reg) slot,
            kind = const KIND,
            out("rax") _,
            options(nostack, readonly, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// One window the plugin counted: the address that named it, and the instructions executed in
/// it in user space and in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub name: u64,
    pub user: u64,
    pub kernel: u64,
}

/// The windows of a plugin log (`W NAME USER KERNEL` lines, in the order they closed); other
/// lines (QEMU's own) are skipped.
pub fn windows(log: &str) -> Vec<Window> {
    log.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("W ")?.split_whitespace();
            Some(Window {
                name: u64::from_str_radix(w.next()?, 16).ok()?,
                user: w.next()?.parse().ok()?,
                kernel: w.next()?.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn windows_are_read_in_order_and_other_lines_skipped() {
        let log = "W 4a62d0 1600002 30551400\nsome QEMU line\nW 4a62d1 1600002 30539600\nW x";
        let w = windows(log);
        assert_eq!(w.len(), 2);
        assert_eq!(
            w[1],
            Window {
                name: 0x4a62d1,
                user: 1600002,
                kernel: 30539600
            }
        );
    }

    #[test]
    fn a_mark_is_harmless_outside_the_emulator() {
        for k in 0..3 * SLOTS {
            begin(k);
            end(k);
        }
    }
}
