//! The one small configuration every kernel syscost builds starts from: tinyconfig and what
//! syscost's guest needs (a serial console, an uncompressed initramfs, proc, sysfs, devtmpfs,
//! tmpfs, tracefs, netlink for audit, audit itself, perf events, kallsyms with data symbols
//! and /proc/kcore for the rule entries' addresses, a PVH entry), what the function-alignment
//! RFC's loop runs through on a disk (NVMe and ext4), in a kernel shaped like the
//! distributions' (SMP, so tree RCU; SLUB; voluntary preemption): tinyconfig alone gives a UP
//! kernel with tiny RCU, SLOB and no preemption, whose allocator and RCU paths are not those a
//! syscall or a VFS loop runs through on the kernels the papers or syscost's users measure.
//! Left out: ACPI, whose interpreter was 210 of a build's 1,205 objects for nothing but the
//! guest's power-off (without it the guest reboots, which ends QEMU: it runs with
//! -no-reboot), the virtual terminal and input devices a serial console does not use,
//! ethtool's netlink interface and the initramfs decompressors. A build takes two to three
//! minutes here and boots in seconds under QEMU's TCG.

use serde::{Deserialize, Serialize};

/// Options turned on over tinyconfig (`scripts/config --enable`), then completed by
/// `olddefconfig`.
pub(crate) const ENABLED: &[&str] = &[
    "64BIT",
    "SMP",
    "SLUB",
    "PREEMPT_VOLUNTARY",
    "NO_HZ_IDLE",
    "EXPERT",
    "DEBUG_KERNEL",
    "PRINTK",
    "TTY",
    "SERIAL_8250",
    "SERIAL_8250_CONSOLE",
    "BLK_DEV_INITRD",
    "BINFMT_ELF",
    "BINFMT_SCRIPT",
    "PROC_FS",
    "PROC_SYSCTL",
    "SYSFS",
    "DEVTMPFS",
    "DEVTMPFS_MOUNT",
    "TMPFS",
    "SHMEM",
    "MULTIUSER",
    "FUTEX",
    "EPOLL",
    "SIGNALFD",
    "TIMERFD",
    "EVENTFD",
    "FILE_LOCKING",
    "POSIX_TIMERS",
    "HIGH_RES_TIMERS",
    "NET",
    "UNIX",
    "AUDIT",
    "AUDITSYSCALL",
    "PERF_EVENTS",
    "KALLSYMS",
    "KALLSYMS_ALL",
    "PROC_KCORE",
    "FTRACE",
    "ENABLE_DEFAULT_TRACERS",
    "HYPERVISOR_GUEST",
    "PARAVIRT",
    "PVH",
    "PCI",
    "BLK_DEV",
    "BLOCK",
    "NVME_CORE",
    "BLK_DEV_NVME",
    "EXT4_FS",
];

/// Turned off over tinyconfig: its allocator and its preemption model, and what its defaults
/// bring that the guest never runs: the terminal and input devices, ethtool's netlink
/// interface (26 objects), and the initramfs decompressors (syscost's initramfs is not
/// compressed; 30 objects).
pub(crate) const DISABLED: &[&str] = &[
    "SLOB",
    "PREEMPT_NONE",
    "VT",
    "INPUT",
    "HID",
    "ETHTOOL_NETLINK",
    "RD_GZIP",
    "RD_BZIP2",
    "RD_LZMA",
    "RD_XZ",
    "RD_LZO",
    "RD_LZ4",
    "RD_ZSTD",
];

/// What gcc optimises a build for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Optimize {
    /// `-O2`, the distributions' choice.
    Performance,
    /// `-Os` (CONFIG_CC_OPTIMIZE_FOR_SIZE).
    Size,
}

impl Optimize {
    /// The `scripts/config` arguments that choose it.
    pub(crate) fn args(self) -> [&'static str; 4] {
        match self {
            Optimize::Performance => [
                "--enable",
                "CC_OPTIMIZE_FOR_PERFORMANCE",
                "--disable",
                "CC_OPTIMIZE_FOR_SIZE",
            ],
            Optimize::Size => [
                "--enable",
                "CC_OPTIMIZE_FOR_SIZE",
                "--disable",
                "CC_OPTIMIZE_FOR_PERFORMANCE",
            ],
        }
    }
}

/// Every `scripts/config` argument of a build optimised for `o`, in order.
pub(crate) fn script_args(o: Optimize) -> Vec<&'static str> {
    let mut args = Vec::new();
    for d in DISABLED {
        args.extend(["--disable", d]);
    }
    for e in ENABLED {
        args.extend(["--enable", e]);
    }
    args.extend(o.args());
    args
}
