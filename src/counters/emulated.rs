//! Counting without a PMU, under QEMU's emulator: syscost's TCG plugin (csrc/tcg_count.c,
//! built by build.rs and carried in this binary) counts the guest's instructions, conditional
//! branches and all branches, and with its L1 models loads, stores and misses, user and kernel
//! apart, in windows the measured program marks. Here: the marks a measured batch
//! leaves (a one-byte load whose address names the window, then a `nopl` no processor acts
//! on: outside the emulator they cost two instructions), and the windows the plugin reports.

use crate::core::input::{Opt, spelled};
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicU8;

/// The plugin, as a shared object QEMU loads (`-plugin file=...`).
pub(crate) const PLUGIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tcg_count.so"));

/// Set in a measuring process's environment (by a campaign guest's init): its workers mark
/// every measured batch.
pub(crate) const MARK_ENV: &str = "SYSCOST_MARK_WINDOWS";

/// Whether this process marks its batches.
pub(crate) fn marking() -> bool {
    std::env::var_os(MARK_ENV).is_some()
}

/// [`MARK_ENV`]'s value when the plugin models the caches: the workers also record where their
/// kernel objects are, to name the lines that missed (reading them costs seconds under TCG,
/// for nothing without the models).
pub(crate) const WITH_OBJECTS: &str = "objects";

/// Whether this process also records where its kernel objects are.
pub(crate) fn naming_objects() -> bool {
    std::env::var_os(MARK_ENV).is_some_and(|v| v == WITH_OBJECTS)
}

/// The bytes whose addresses name the windows: batch `k` of a run loads slot `k % SLOTS`.
const SLOTS: usize = 4096;
static SLOT: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];

/// Mark the start of batch `k`'s window.
#[inline(always)]
pub(crate) fn begin(k: usize) {
    mark::<1>(k)
}

/// Mark the end of batch `k`'s window.
#[inline(always)]
pub(crate) fn end(k: usize) {
    mark::<2>(k)
}

/// `mov al, [slot k]; nop dword ptr [rax + 0x5c05c0KIND]`: the plugin knows the nop by its
/// bytes (0f 1f 80 KIND c0 05 5c) and the window by the load's address.
#[inline(always)]
fn mark<const KIND: u8>(k: usize) {
    mark_at::<KIND>(SLOT[k % SLOTS].as_ptr())
}

/// The mark of `KIND` naming the address `slot`.
#[inline(always)]
fn mark_at<const KIND: u8>(slot: *mut u8) {
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

/// What an entry point of the guest kernel's interrupt table starts: an interrupt (a device's,
/// the local APIC timer's, an IPI, an NMI), which the plugin leaves out of the windows, or an
/// exception, which is the measured task's own work (a page fault, a uprobe's int3) unless it
/// happens inside an interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Exception = 1,
    Interrupt = 2,
}

/// Where the kernel's code for one kind of entry starts: a block that starts in `lo..hi` is
/// that entry's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub kind: EntryKind,
    pub lo: u64,
    pub hi: u64,
}

/// The interrupt table's entry points of the kernel whose /proc/kallsyms lines are `lines`
/// (in its order, by address), by the names x86-64 Linux gives them
/// (arch/x86/include/asm/idtentry.h): the system vectors (`asm_sysvec_*`: the APIC timer,
/// IPIs) and the NMI are interrupts, as are the external vectors' stubs (`irq_entries_start`
/// and `spurious_entries_start`, up to the next symbol: one stub per vector, each a push and a
/// jump); the other `asm_exc_*` and the int 0x80 entries are exceptions. All of them are in
/// .entry.text (page-table isolation maps it for user space): the lines are read only up to
/// `__entry_text_end`, since the kernel formats the file a symbol at a time (under TCG, 0.1 s
/// for 30,000 lines).
pub(crate) fn interrupt_entries(lines: impl Iterator<Item = impl AsRef<str>>) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    // The stubs' ranges still open: they end at the next text symbol beyond them.
    let mut open: Vec<usize> = Vec::new();
    for l in lines {
        let mut f = l.as_ref().split_whitespace();
        let (Some(addr), Some(kind), Some(name), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        if name == "__entry_text_end" {
            break;
        }
        let a = match u64::from_str_radix(addr, 16) {
            Ok(a) if a != 0 && matches!(kind, "t" | "T") => a,
            _ => continue,
        };
        open.retain(|&i| {
            let beyond = a > out[i].lo;
            if beyond {
                out[i].hi = a;
            }
            !beyond
        });
        let kind = match name {
            "irq_entries_start" | "spurious_entries_start" => {
                open.push(out.len());
                EntryKind::Interrupt
            }
            "asm_exc_nmi" => EntryKind::Interrupt,
            n if n.starts_with("asm_sysvec_") => EntryKind::Interrupt,
            n if n.starts_with("asm_exc_")
                || n == "asm_int80_emulation"
                || n == "entry_INT80_compat" =>
            {
                EntryKind::Exception
            }
            _ => continue,
        };
        out.push(Entry {
            kind,
            lo: a,
            hi: a + 1,
        });
    }
    // A stub range never closed is not known to end: left out rather than guessed.
    let unclosed: Vec<u64> = open.iter().map(|&i| out[i].lo).collect();
    out.retain(|e| !unclosed.contains(&e.lo));
    out
}

/// Tell the plugin where the kernel's interrupt and exception entries are, so that it leaves
/// the interrupts out of every window from now on (marks 3 and 4: the words (kind, lo, hi) of
/// each entry and a check word, 16 bits a mark, each named by a byte of a 64 KiB-aligned
/// table; a declaration the plugin reads wrong, by its check word, is dropped). Outside the
/// emulator it costs a few thousand instructions.
pub(crate) fn declare(entries: &[Entry]) {
    let words: Vec<u64> = entries
        .iter()
        .flat_map(|e| [e.kind as u64, e.lo, e.hi])
        .collect();
    for w in words.iter().copied().chain([check_word(&words)]) {
        for shift in [48, 32, 16, 0] {
            mark_at::<3>(PIECES.0[((w >> shift) & 0xffff) as usize].as_ptr());
        }
    }
    mark_at::<4>(PIECES.0[0].as_ptr());
}

/// Put the plugin back to sleep after the measurement: what the guest does after it (sending
/// the result) runs at the emulator's own speed, not under the models (under the coherence
/// model of a 2-vCPU guest, 5 s of a boot's 20 here, when the profile's symbols were read
/// after it).
pub(crate) fn doze() {
    mark_at::<6>(PIECES.0[0].as_ptr());
}

/// A measurement span, open while it lives (marks 7 and 8): a loop's windows lie in one, after
/// the loop's warm-up (a worker's batches, a probe's runs). The first span wakes a plugin
/// started `asleep=1` (the kernel's boot, syscost's start, its rules and objects, a worker's
/// exec and set-up run at the emulator's speed before it), and on more than one vCPU with the
/// profile the coherence model follows the vCPUs' accesses inside the spans alone: between
/// them it cost more than the measurement itself (4.4 s against 1.6 s of a 2-vCPU uprobe
/// loop's boot).
pub(crate) struct Span;

impl Span {
    pub(crate) fn open() -> Span {
        mark_at::<7>(PIECES.0[0].as_ptr());
        Span
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        mark_at::<8>(PIECES.0[0].as_ptr());
    }
}

/// The last word of a declaration: FNV-1a over the words, as the plugin computes it.
fn check_word(words: &[u64]) -> u64 {
    words.iter().fold(0xcbf29ce484222325, |h, w| {
        (h ^ w).wrapping_mul(0x100000001b3)
    })
}

/// The bytes whose addresses' low 16 bits are a declaration's pieces.
#[repr(C, align(65536))]
struct Pieces([AtomicU8; 1 << 16]);
static PIECES: Pieces = Pieces([const { AtomicU8::new(0) }; 1 << 16]);

/// A modelled cache's shape: sets, ways (LRU) and line size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub sets: u32,
    pub ways: u32,
    pub line: u32,
}

impl Geometry {
    /// An L1's `SETSxWAYSxLINE`, e.g. 64x8x64 (32 KiB, 8-way, 64-byte lines).
    fn parse(s: &str) -> Result<Geometry, String> {
        Geometry::parse_within(
            s,
            4096,
            "a 4 KiB page (an L1 indexed by virtual address, as x86's are)",
        )
    }

    /// An L1i's, e.g. 64x8x64, 512x2x64 (the Opteron 6278's 64 KiB 2-way) or 1x512x64 (32 KiB
    /// fully associative): indexed by virtual address like an L2's instruction lines.
    fn parse_l1i(s: &str) -> Result<Geometry, String> {
        Geometry::parse_within(
            s,
            2 << 20,
            "2 MiB (instruction lines are indexed by their virtual address, the same bits as \
             the physical one within the kernel's 2 MiB text pages)",
        )
    }

    /// An L2's, e.g. 1024x16x64 (Skylake-X's 1 MiB, 16-way).
    fn parse_l2(s: &str) -> Result<Geometry, String> {
        Geometry::parse_within(
            s,
            2 << 20,
            "2 MiB (instruction lines are indexed by their virtual address, the same bits as \
             the physical one within the kernel's 2 MiB text pages)",
        )
    }

    /// A geometry whose sets times line is at most `span` bytes, `within` saying why.
    fn parse_within(s: &str, span: u64, within: &str) -> Result<Geometry, String> {
        let n: Vec<u32> = s.split('x').filter_map(|x| x.parse().ok()).collect();
        let [sets, ways, line] = n[..] else {
            return Err(format!("'{s}' is not SETSxWAYSxLINE, e.g. 64x8x64"));
        };
        let g = Geometry { sets, ways, line };
        let pow2 = |x: u32| x.is_power_of_two();
        if !pow2(sets) || !pow2(line) || u64::from(sets) * u64::from(line) > span {
            return Err(format!(
                "'{s}': sets and line size must be powers of two whose product fits in {within}"
            ));
        }
        // One set of many ways is a fully associative cache: the plugin keeps it in a list.
        let most = if sets == 1 { 4096 } else { 64 };
        if !(1..=most).contains(&ways) {
            return Err(format!("'{s}': 1 to 64 ways (to 4096 in one set)"));
        }
        Ok(g)
    }

    pub(crate) fn bytes(self) -> u64 {
        u64::from(self.sets) * u64::from(self.ways) * u64::from(self.line)
    }

    /// The plugin's argument for this geometry, e.g. `l1d=64:8:64`.
    fn arg(self, key: &str) -> String {
        format!("{key}={}:{}:{}", self.sets, self.ways, self.line)
    }
}

/// The L1 caches the plugin models: where the geometry came from, and each cache's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheModel {
    /// `host` (this machine's L1s, from sysfs), `skylake-x`, or `custom`.
    pub name: String,
    pub l1d: Geometry,
    pub l1i: Geometry,
    /// An L2 behind both, when modelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<Geometry>,
    /// Other L1i geometries fed the same fetches beside the L1i (a fully associative one of the
    /// same size, another CPU's), each its misses alone: `L1I+OTHER+...` in a custom model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_l1i: Vec<Geometry>,
}

/// The most other L1i geometries a model feeds beside its L1i (the plugin's `ALSO_MAX`).
pub(crate) const ALSO_L1I_MAX: usize = 4;

/// Skylake-X's L1d and L1i: 32 KiB, 8-way, 64-byte lines (the audit series' machine).
const SKYLAKE_X: Geometry = Geometry {
    sets: 64,
    ways: 8,
    line: 64,
};

/// Skylake-X's L2: 1 MiB, 16-way, 64-byte lines.
const SKYLAKE_X_L2: Geometry = Geometry {
    sets: 1024,
    ways: 16,
    line: 64,
};

impl CacheModel {
    /// `host`, `skylake-x` (their L1s and L2), or `L1D[,L1I[,L2]]` as SETSxWAYSxLINE (the
    /// L1i as the L1d if not given; no L2 if not given).
    pub(crate) fn parse(s: &str) -> Result<CacheModel, String> {
        let named = |name: &str, l1d, l1i, l2| CacheModel {
            name: name.into(),
            l1d,
            l1i,
            l2,
            also_l1i: Vec::new(),
        };
        match s {
            "skylake-x" => Ok(named(s, SKYLAKE_X, SKYLAKE_X, Some(SKYLAKE_X_L2))),
            "host" => {
                let l1 = |type_: &str| -> Result<Geometry, String> {
                    let c = crate::core::caches::caches()
                        .into_iter()
                        .find(|c| c.level == 1 && c.type_ == type_);
                    let c = c.ok_or(format!("sysfs describes no L1 {type_} cache here"))?;
                    match (c.sets, c.ways, c.line_size) {
                        (Some(s), Some(w), Some(l)) => Geometry::parse(&format!("{s}x{w}x{l}")),
                        _ => Err(format!(
                            "sysfs gives no sets, ways or line size of L1 {type_}"
                        )),
                    }
                };
                let why = |e: String| {
                    let model = spelled(Opt::CacheModel);
                    format!("{model} host: {e}; name one, e.g. skylake-x")
                };
                Ok(named(
                    s,
                    l1("Data").map_err(why)?,
                    l1("Instruction").map_err(why)?,
                    host_l2(),
                ))
            }
            _ => {
                let parts: Vec<&str> = s.split(',').collect();
                let (d, i, l2) = match parts[..] {
                    [d] => (d, d, None),
                    [d, i] => (d, i, None),
                    [d, i, l2] => (d, i, Some(Geometry::parse_l2(l2)?)),
                    _ => return Err(format!("'{s}': at most three geometries: L1D,L1I,L2")),
                };
                let mut i = i.split('+');
                let l1i = Geometry::parse_l1i(i.next().unwrap_or_default())?;
                let also_l1i = i.map(Geometry::parse_l1i).collect::<Result<Vec<_>, _>>()?;
                if also_l1i.len() > ALSO_L1I_MAX || also_l1i.iter().any(|g| g.line != l1i.line) {
                    return Err(format!(
                        "'{s}': at most {ALSO_L1I_MAX} other L1i geometries after the L1i's \
                         (L1I+OTHER), each with its line size"
                    ));
                }
                Ok(CacheModel {
                    also_l1i,
                    ..named("custom", Geometry::parse(d)?, l1i, l2)
                })
            }
        }
    }

    /// The model as [`CacheModel::parse`] reads it: its name, or its geometries.
    pub(crate) fn spec(&self) -> String {
        let g = |g: Geometry| format!("{}x{}x{}", g.sets, g.ways, g.line);
        match self.name.as_str() {
            "custom" => {
                let l2 = self.l2.map(|l| format!(",{}", g(l))).unwrap_or_default();
                let also: String = self
                    .also_l1i
                    .iter()
                    .map(|a| format!("+{}", g(*a)))
                    .collect();
                format!("{},{}{also}{l2}", g(self.l1d), g(self.l1i))
            }
            name => name.to_string(),
        }
    }

    /// The plugin's arguments, e.g. `l1d=64:8:64,l1i=64:8:64,l2=1024:16:64`.
    pub(crate) fn plugin_args(&self) -> String {
        let l2 = self.l2.map(|g| format!(",{}", g.arg("l2")));
        let also: String = (self.also_l1i.iter())
            .map(|g| format!(",{}", g.arg("l1i_also")))
            .collect();
        format!(
            "{},{}{also}{}",
            self.l1d.arg("l1d"),
            self.l1i.arg("l1i"),
            l2.unwrap_or_default()
        )
    }
}

/// This machine's unified L2 from sysfs, if it describes one a model can take.
fn host_l2() -> Option<Geometry> {
    let c = crate::core::caches::caches()
        .into_iter()
        .find(|c| c.level == 2 && c.type_ == "Unified")?;
    let (s, w, l) = (c.sets?, c.ways?, c.line_size?);
    Geometry::parse_l2(&format!("{s}x{w}x{l}")).ok()
}

/// What the plugin counts in a window, each in user space and in the kernel apart, in the
/// order of its log's `W` lines: the first three always, the rest with the cache models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Count {
    Instructions,
    /// Jcc, LOOP and JrCXZ, taken or not.
    ConditionalBranches,
    /// Every branch: conditional, jumps, calls, returns and far transfers (perf's `branches`).
    Branches,
    Loads,
    Stores,
    L1dLoadMisses,
    L1dStoreMisses,
    L1iMisses,
    /// Misses of the modelled L2 (its data and instruction lines together).
    L2Misses,
    /// Misses of another L1i geometry fed the same fetches (`CacheModel::also_l1i`).
    L1iMissesOf(Geometry),
    /// Atomic read-modify-writes (a LOCK prefix, or XCHG with memory), with the emulated
    /// profile (the plugin's `atomics=1`): the locks, reference counts and bitmaps a path takes.
    Atomics,
    /// Cache lines taken from other vCPUs (a read of a line another vCPU wrote since this one
    /// last held it, or a write to a line another vCPU holds), with the emulated profile on
    /// more than one vCPU (the plugin's `lines=`): what hardware calls HITMs and
    /// invalidations. How many follows how the host interleaves the vCPUs: a measurement.
    LinesMoved,
}

impl Count {
    pub(crate) const ALL: [Count; 9] = [
        Count::Instructions,
        Count::ConditionalBranches,
        Count::Branches,
        Count::Loads,
        Count::Stores,
        Count::L1dLoadMisses,
        Count::L1dStoreMisses,
        Count::L1iMisses,
        Count::L2Misses,
    ];

    /// The count as an event name, perf's where perf has one (so `L1-dcache-miss-%` is
    /// derived from the emulated loads and their misses as from perf's).
    pub(crate) fn event(self) -> std::borrow::Cow<'static, str> {
        match self {
            Count::Instructions => "instructions".into(),
            Count::ConditionalBranches => "conditional-branches".into(),
            Count::Branches => "branches".into(),
            Count::Loads => "L1-dcache-loads".into(),
            Count::Stores => "L1-dcache-stores".into(),
            Count::L1dLoadMisses => "L1-dcache-load-misses".into(),
            Count::L1dStoreMisses => "L1-dcache-store-misses".into(),
            Count::L1iMisses => "L1-icache-load-misses".into(),
            Count::L2Misses => "L2-misses".into(),
            Count::L1iMissesOf(g) => {
                format!("L1-icache-load-misses-{}x{}x{}", g.sets, g.ways, g.line).into()
            }
            Count::Atomics => "atomics".into(),
            Count::LinesMoved => "lines-moved".into(),
        }
    }

    /// The emulated event of this count in user space or in the kernel, e.g.
    /// `instructions:k (emulated)`.
    pub(crate) fn event_name(self, kernel: bool) -> String {
        format!(
            "{}:{} (emulated)",
            self.event(),
            if kernel { 'k' } else { 'u' }
        )
    }

    /// What a window's count of this becomes: user, kernel, and for instructions, all
    /// branches and the L1 load misses the two together (`instructions (emulated)`: the audit
    /// series' instructions per getpid, as perf counts them without :u or :k;
    /// `L1-dcache-load-misses (emulated)`: what the misses by set add up to).
    pub(crate) fn parts(self) -> &'static [Part] {
        match self {
            Count::Instructions
            | Count::Branches
            | Count::L1dLoadMisses
            | Count::L1iMisses
            | Count::L1iMissesOf(_) => &[Part::User, Part::Kernel, Part::All],
            _ => &[Part::User, Part::Kernel],
        }
    }

    /// The event of one part of this count.
    pub(crate) fn part_name(self, part: Part) -> String {
        match part {
            Part::User => self.event_name(false),
            Part::Kernel => self.event_name(true),
            Part::All => format!("{} (emulated)", self.event()),
        }
    }
}

/// Whether the emulated figure `name` is a cache model's misses (or their share of the
/// accesses), which vary from call to call with where each call's lines land (the kernel
/// randomises its stack's offset every syscall) and from run to run with where the objects
/// were placed, rather than a count of what the code executes, which only what else runs in a
/// window adds to; or the lines taken from other vCPUs, which follow how the host interleaves
/// the vCPUs. Such a figure is compared as a measurement, never by the exact range rule.
pub(crate) fn is_modelled(name: &str) -> bool {
    is_emulated(name) && (name.contains("-misses") || name.contains("miss-%"))
        || is_lines_moved(name)
}

/// Whether a metric named `name` is the lines taken from other vCPUs
/// (`lines-moved:k (emulated)` and its parts).
pub(crate) fn is_lines_moved(name: &str) -> bool {
    is_emulated(name) && name.starts_with(&*Count::LinesMoved.event())
}

/// Whether a metric named `name` is an exact count: the plugin's count of what the code
/// executes (or a ratio of two), not a cache model's misses.
pub(crate) fn is_exact_count(name: &str) -> bool {
    is_emulated(name) && !is_modelled(name)
}

/// Whether a metric named `name` is one of the plugin's counts (or a ratio of two): every
/// emulated event's name ends so (`instructions:k (emulated)`), and only theirs.
pub(crate) fn is_emulated(name: &str) -> bool {
    name.ends_with(" (emulated)")
}

/// Which instructions of a window a count covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    User,
    Kernel,
    All,
}

impl Part {
    /// Its value in a `[user, kernel]` count.
    pub(crate) fn of(self, [user, kernel]: [u64; 2]) -> u64 {
        match self {
            Part::User => user,
            Part::Kernel => kernel,
            Part::All => user + kernel,
        }
    }
}

/// One window the plugin counted: the address that named it, its counts (in the order of
/// [`Count::ALL`], as many as the plugin counted), each `[user, kernel]`, and with the cache
/// models the load misses of each L1d set and the misses of each L1i set (user and kernel
/// together; an L1d set's add up to the window's `L1-dcache-load-misses`), and with the
/// emulated profile the kernel instructions of each block executed, by its first address.
/// With the models too, the L1d lines whose loads missed most (by virtual address, most
/// first, at most 32): whose objects the misses were in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub name: u64,
    pub counts: Vec<[u64; 2]>,
    pub l1d_sets: Vec<u64>,
    pub l1i_sets: Vec<u64>,
    pub blocks: Vec<(u64, u64)>,
    pub missed_lines: Vec<(u64, u64)>,
    /// Each other L1i geometry's misses, `[user, kernel]`, in the model's order.
    pub also_l1i: Vec<(Geometry, [u64; 2])>,
    /// The atomic read-modify-writes, with the emulated profile.
    pub atomics: Option<Sites>,
    /// The lines taken from other vCPUs (the plugin's coherence model, with the emulated
    /// profile on more than one vCPU).
    pub moved: Option<Sites>,
    /// The interrupts the plugin left out of the window, once the guest declared its entries
    /// ([`declare`]); `None`: they are in its counts.
    pub interrupts: Option<Interrupts>,
    /// Why the plugin refused the window, if it did: nothing of it was counted.
    pub refused: Option<Refused>,
}

/// Why the plugin refused a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// It began while the plugin was asleep (before the guest woke it).
    Asleep,
    /// It ended on another vCPU than it began on: its task moved.
    Moved,
    /// It began outside every measurement span ([`Span`]), where the coherence model does not
    /// follow the vCPUs' accesses: its lines taken could not be counted.
    Unspanned,
}

/// What a window counts by site (its atomic read-modify-writes, or the lines it took from
/// other vCPUs): how many, `[user, kernel]`, and the kernel's by site: (the instruction's
/// address, the 64-byte line it touched, how often), all of them but `dropped` (past the
/// plugin's table of 512 pairs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sites {
    pub counts: [u64; 2],
    pub sites: Vec<(u64, u64, u64)>,
    pub dropped: u64,
}

/// The interrupts left out of a window: how many, what they counted (instructions,
/// conditional branches and branches, each `[user, kernel]`), and whether one was still open
/// when the window closed (its return never seen: the window's counts cannot be trusted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupts {
    pub n: u64,
    pub counts: [[u64; 2]; 3],
    pub open: bool,
}

impl Window {
    /// The window's count of `c`, `[user, kernel]`, if the plugin counted it.
    pub(crate) fn count(&self, c: Count) -> Option<[u64; 2]> {
        if let Count::L1iMissesOf(g) = c {
            return self.also_l1i.iter().find(|(x, _)| *x == g).map(|(_, m)| *m);
        }
        if c == Count::Atomics {
            return self.atomics.as_ref().map(|a| a.counts);
        }
        if c == Count::LinesMoved {
            return self.moved.as_ref().map(|a| a.counts);
        }
        let i = Count::ALL.iter().position(|x| *x == c)?;
        self.counts.get(i).copied()
    }
}

/// The windows of a plugin log, in the order they closed: each `W NAME COUNTS...` line, with
/// the `D NAME MISSES...`, `I NAME MISSES...`, `L NAME LINE:MISSES...` and `B NAME
/// ADDR:INSNS...` lines that follow it, and its `Q NAME IRQS COUNTS... OPEN` line when the
/// interrupts were left out; a window the plugin refused (`R NAME asleep`, then `R NAME
/// unopened` at its end) is one without counts; other lines (QEMU's own) are skipped.
pub(crate) fn windows(log: &str) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    for l in log.lines() {
        let mut w = l.split_whitespace();
        let (Some(tag), Some(name)) = (w.next(), w.next()) else {
            continue;
        };
        let Ok(name) = u64::from_str_radix(name, 16) else {
            continue;
        };
        if tag == "R" {
            // A refused window: `R NAME asleep` or `R NAME unspanned` at its begin, `R NAME
            // unopened` at its end;
            // `R NAME moved` at the end of one whose task moved to another vCPU.
            if out
                .last()
                .is_none_or(|x| x.name != name || x.refused.is_none())
            {
                let why = match w.next() {
                    Some("moved") => Refused::Moved,
                    Some("unspanned") => Refused::Unspanned,
                    _ => Refused::Asleep,
                };
                out.push(Window {
                    name,
                    refused: Some(why),
                    ..Window::default()
                });
            }
            continue;
        }
        if matches!(tag, "J" | "A" | "M" | "B" | "L") {
            if let Some(last) = out.last_mut().filter(|x| x.name == name) {
                add_listed(last, tag, w);
            }
            continue;
        }
        let Ok(numbers) = w.map(str::parse).collect::<Result<Vec<u64>, _>>() else {
            continue;
        };
        match (tag, out.last_mut()) {
            ("Q", Some(last)) if last.name == name && numbers.len() == 8 => {
                last.interrupts.get_or_insert(Interrupts {
                    n: numbers[0],
                    counts: [1, 3, 5].map(|i| [numbers[i], numbers[i + 1]]),
                    open: numbers[7] != 0,
                });
            }
            ("W", _) if numbers.len() >= 2 && numbers.len() % 2 == 0 => out.push(Window {
                name,
                counts: numbers.chunks(2).map(|c| [c[0], c[1]]).collect(),
                ..Window::default()
            }),
            ("D", Some(last)) if last.name == name && last.l1d_sets.is_empty() => {
                last.l1d_sets = numbers
            }
            ("I", Some(last)) if last.name == name && last.l1i_sets.is_empty() => {
                last.l1i_sets = numbers
            }
            _ => {}
        }
    }
    out
}

/// A window's line of what it lists (`J`: the other L1i models' misses, `A`: its atomics, `M`:
/// the lines it took from other vCPUs, `B`: its blocks, `L`: its missed lines), unless it has
/// that list already.
fn add_listed<'a>(last: &mut Window, tag: &str, w: impl Iterator<Item = &'a str>) {
    match tag {
        "J" if last.also_l1i.is_empty() => last.also_l1i = also_l1i(w).unwrap_or_default(),
        "A" if last.atomics.is_none() => last.atomics = sites(w),
        "M" if last.moved.is_none() => last.moved = sites(w),
        "B" | "L" => {
            let to = if tag == "B" {
                &mut last.blocks
            } else {
                &mut last.missed_lines
            };
            if to.is_empty()
                && let Some(pairs) = w.map(hex_pair).collect::<Option<Vec<_>>>()
            {
                *to = pairs;
            }
        }
        _ => {}
    }
}

/// A `J` line's `SETS:WAYS:LINE U K` triples.
fn also_l1i<'a>(words: impl Iterator<Item = &'a str>) -> Option<Vec<(Geometry, [u64; 2])>> {
    let words: Vec<&str> = words.collect();
    if !words.len().is_multiple_of(3) {
        return None;
    }
    (words.chunks(3))
        .map(|w| {
            let g: Vec<u32> = w[0].split(':').filter_map(|x| x.parse().ok()).collect();
            let [sets, ways, line] = g[..] else {
                return None;
            };
            Some((
                Geometry { sets, ways, line },
                [w[1].parse().ok()?, w[2].parse().ok()?],
            ))
        })
        .collect()
}

/// An `A` or `M` line's `U K DROPPED INSN:LINE:N ...` (the triples hexadecimal).
fn sites<'a>(mut words: impl Iterator<Item = &'a str>) -> Option<Sites> {
    let mut number = || words.next()?.parse::<u64>().ok();
    let (user, kernel, dropped) = (number()?, number()?, number()?);
    let sites = words
        .map(|t| {
            let mut x = t.split(':').map(|h| u64::from_str_radix(h, 16).ok());
            let site = (x.next()??, x.next()??, x.next()??);
            x.next().is_none().then_some(site)
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Sites {
        counts: [user, kernel],
        sites,
        dropped,
    })
}

/// `ADDR:N`, both hexadecimal.
fn hex_pair(pair: &str) -> Option<(u64, u64)> {
    let (a, n) = pair.split_once(':')?;
    Some((
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(n, 16).ok()?,
    ))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn windows_are_read_in_order_and_other_lines_skipped() {
        let log = "W 4a62d0 1600002 30551400 2 3 4 5\nsome QEMU line\nW 4a62d1 1600002 \
                   30539600 1 2 3 4 5 6 7 8 9 10 11 12 13 14\nD 4a62d1 0 5 1\nI 4a62d1 7 0 0\nW \
                   x\nD 4a62d1 9";
        let w = windows(log);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].count(Count::Instructions), Some([1600002, 30551400]));
        assert_eq!(w[0].count(Count::Loads), None, "counted without the models");
        assert_eq!(w[0].count(Count::Branches), Some([4, 5]));
        assert_eq!(w[1].count(Count::L1iMisses), Some([13, 14]));
        assert_eq!(w[1].l1d_sets, [0, 5, 1]);
        assert_eq!(w[1].l1i_sets, [7, 0, 0]);
        assert!(w[0].l1d_sets.is_empty());
        let log = "W 7 1 2 3 4\nB 7 ffffffff81000010:1f ffffffff81000040:3\nB 7 1:1";
        let w = windows(log);
        let want = [(0xffffffff81000010, 31), (0xffffffff81000040, 3)];
        assert_eq!(w[0].blocks, want);
        let log = "W 7 1 2 3 4 5 6\nQ 7 2 0 4100 0 300 0 410 0\nW 8 1 2 3 4 5 6\nQ 8 1 0 9 0 \
                   1 0 2 1";
        let w = windows(log);
        let q = w[0].interrupts.as_ref().unwrap();
        assert_eq!(
            (q.n, q.counts, q.open),
            (2, [[0, 4100], [0, 300], [0, 410]], false)
        );
        assert!(w[1].interrupts.as_ref().unwrap().open);
        // A window begun asleep is refused at both ends, one window; an end never begun too.
        let log = "E 45\nR 6 asleep\nR 6 unopened\nW 7 1 2 3 4\nR 8 unopened\nW 9 1 2";
        let w = windows(log);
        let refused: Vec<(u64, bool)> = w.iter().map(|w| (w.name, w.refused.is_some())).collect();
        assert_eq!(refused, [(6, true), (7, false), (8, true), (9, false)]);
        assert!(w[0].counts.is_empty());
        let log = "W 7 1 2 3 4\nJ 7 1:512:64 3 40 512:2:64 5 60\nJ 7 1:1:64 9 9";
        let w = windows(log);
        let fa = Geometry {
            sets: 1,
            ways: 512,
            line: 64,
        };
        assert_eq!(w[0].count(Count::L1iMissesOf(fa)), Some([3, 40]));
        assert_eq!(
            w[0].also_l1i.len(),
            2,
            "the first J line of a window is its"
        );
        let log = "W 7 1 2 3 4\nL 7 ffff888004123440:2a 7ffc10:1\nL 7 1:1\nL 8 2:2";
        let w = windows(log);
        assert_eq!(w[0].missed_lines, [(0xffff888004123440, 42), (0x7ffc10, 1)]);
        assert!(w[0].blocks.is_empty());
        assert_eq!(w[0].count(Count::Atomics), None, "not counted");
        // Atomics: the counts, what the table dropped, then the kernel's sites.
        let log = "W 7 1 2 3 4\nA 7 1 5 2 ffffffff81000010:ffff888004123440:3 \
                   ffffffff81000020:ffff888004123440:a\nA 7 9 9 9\nA 8 1 1 1\nW 9 1 2\nA 9 1 x 0";
        let w = windows(log);
        let a = w[0].atomics.as_ref().unwrap();
        assert_eq!((a.counts, a.dropped), ([1, 5], 2));
        let line = 0xffff888004123440;
        let sites = [
            (0xffffffff81000010, line, 3),
            (0xffffffff81000020, line, 10),
        ];
        assert_eq!(a.sites, sites);
        assert_eq!(w[0].count(Count::Atomics), Some([1, 5]));
        assert_eq!(w[1].atomics, None, "a damaged line is no count");
        // The lines taken from other vCPUs: an M line, as an A line; a window whose task
        // moved to another vCPU is refused at its end and says so.
        let log = "W 7 1 2 3 4\nA 7 0 1 0\nM 7 0 2 0 ffffffff81000010:ffffffff82a06000:2\n\
                   R 8 moved\nW 9 1 2\nR a asleep\nR a unopened";
        let w = windows(log);
        assert_eq!(w[0].count(Count::LinesMoved), Some([0, 2]));
        let m = w[0].moved.as_ref().unwrap();
        assert_eq!(m.sites, [(0xffffffff81000010, 0xffffffff82a06000, 2)]);
        assert_eq!(
            w[0].count(Count::Atomics),
            Some([0, 1]),
            "apart from the atomics"
        );
        let refused: Vec<(u64, bool, bool)> = (w.iter().map(|w| {
            (
                w.name,
                w.refused.is_some(),
                w.refused == Some(Refused::Moved),
            )
        }))
        .collect();
        assert_eq!(
            refused,
            [
                (7, false, false),
                (8, true, true),
                (9, false, false),
                (10, true, false)
            ]
        );
        assert_eq!(w[2].count(Count::LinesMoved), None, "not counted");
        // A window begun outside every span of a coherence model's measurement.
        let w = windows("R b unspanned\nR b unopened\nW c 1 2");
        let why: Vec<_> = w.iter().map(|w| (w.name, w.refused)).collect();
        assert_eq!(why, [(11, Some(Refused::Unspanned)), (12, None)]);
    }

    #[test]
    fn cache_models_are_named_or_given_and_checked() {
        let sk = CacheModel::parse("skylake-x").unwrap();
        assert_eq!(sk.plugin_args(), "l1d=64:8:64,l1i=64:8:64,l2=1024:16:64");
        assert_eq!(sk.l2.unwrap().bytes(), 1 << 20);
        let c = CacheModel::parse("64x8x64,64x8x64,2048x16x64").unwrap();
        assert_eq!(c.l2.map(|g| g.sets), Some(2048));
        assert!(CacheModel::parse("64x8x64,64x8x64,65536x16x64").is_err());
        assert!(CacheModel::parse("64x8x64").unwrap().l2.is_none());
        assert_eq!(sk.l1d.bytes(), 32 * 1024);
        let c = CacheModel::parse("64x12x64,64x8x64").unwrap();
        assert_eq!((c.l1d.ways, c.l1i.ways), (12, 8));
        assert!(
            CacheModel::parse("128x8x64")
                .unwrap_err()
                .contains("4 KiB page")
        );
        assert!(CacheModel::parse("48x8x64").is_err());
        // The RFC's Xeon, with a fully associative L1i of its size and the Opteron's 64 KiB
        // 2-way beside it (an L1i may index up to 2 MiB: instruction lines are virtual).
        let c = CacheModel::parse("64x8x64,64x8x64+1x512x64+512x2x64,512x8x64").unwrap();
        assert_eq!(c.also_l1i.len(), 2);
        assert_eq!(
            c.plugin_args(),
            "l1d=64:8:64,l1i=64:8:64,l1i_also=1:512:64,l1i_also=512:2:64,l2=512:8:64"
        );
        assert_eq!(
            CacheModel::parse(&c.spec()).unwrap(),
            c,
            "the spec reads back"
        );
        assert_eq!(
            Count::L1iMissesOf(c.also_l1i[0]).part_name(Part::Kernel),
            "L1-icache-load-misses-1x512x64:k (emulated)"
        );
        assert!(is_modelled("L1-icache-load-misses-512x2x64 (emulated)"));
        assert!(
            CacheModel::parse("64x8x64,64x8x64+1x512x32").is_err(),
            "one line size"
        );
        assert!(
            CacheModel::parse("512x2x64").is_err(),
            "an L1d within a page"
        );
        assert!(CacheModel::parse("64x8x64,1x8192x64").is_err());
        assert!(CacheModel::parse("64x0x64").is_err());
        assert!(
            CacheModel::parse("big")
                .unwrap_err()
                .contains("SETSxWAYSxLINE")
        );
    }

    #[test]
    fn interrupt_entries_are_read_from_kallsyms() {
        // Lines of this machine's /proc/kallsyms (6.18), with a data symbol, a hidden one and
        // a module's after .entry.text's end, which are not read.
        let k = "ffffffff81000000 T _text\nffffffff81000300 T irq_entries_start\n\
                 ffffffff81000960 T spurious_entries_start\nffffffff81000980 d some_data\n\
                 ffffffff81000a10 T asm_exc_divide_error\nffffffff81000c60 T asm_exc_page_fault\n\
                 0000000000000000 T asm_sysvec_hidden\n\
                 ffffffff81000df0 T asm_sysvec_apic_timer_interrupt\nffffffff810015b0 T asm_exc_nmi\n\
                 ffffffff81001600 T __entry_text_end\nffffffff81002000 T asm_sysvec_after\n\
                 ffffffffc0000000 t asm_exc_mod [some_module]";
        let e = interrupt_entries(k.lines());
        let at = |lo| e.iter().find(|e| e.lo == lo).copied();
        let irq = |lo, hi| {
            Some(Entry {
                kind: EntryKind::Interrupt,
                lo,
                hi,
            })
        };
        assert_eq!(
            at(0xffffffff81000300),
            irq(0xffffffff81000300, 0xffffffff81000960)
        );
        assert_eq!(
            at(0xffffffff81000960),
            irq(0xffffffff81000960, 0xffffffff81000a10)
        );
        assert_eq!(
            at(0xffffffff81000df0),
            irq(0xffffffff81000df0, 0xffffffff81000df1)
        );
        assert_eq!(
            at(0xffffffff810015b0).map(|e| e.kind),
            Some(EntryKind::Interrupt)
        );
        assert_eq!(
            at(0xffffffff81000c60).map(|e| e.kind),
            Some(EntryKind::Exception)
        );
        assert_eq!(e.len(), 6, "no data, hidden or later symbol: {e:?}");
        // A stub range that nothing after it ends is not guessed.
        let e = interrupt_entries(["ffffffff81000300 T irq_entries_start"].iter());
        assert!(e.is_empty());
    }

    #[test]
    fn the_check_word_is_fnv_1a_over_the_words() {
        // FNV-1a of no words is its offset basis; of one, as the plugin computes it in C.
        assert_eq!(check_word(&[]), 0xcbf29ce484222325);
        assert_eq!(
            check_word(&[1]),
            (0xcbf29ce484222325u64 ^ 1).wrapping_mul(0x100000001b3)
        );
    }

    #[test]
    fn a_mark_is_harmless_outside_the_emulator() {
        declare(&[Entry {
            kind: EntryKind::Interrupt,
            lo: 1,
            hi: 2,
        }]);
        let span = Span::open();
        for k in 0..3 * SLOTS {
            begin(k);
            end(k);
        }
        drop(span);
        doze();
    }
}
