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
        if !(1..=64).contains(&ways) {
            return Err(format!("'{s}': 1 to 64 ways"));
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
}

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
                Ok(named(
                    "custom",
                    Geometry::parse(d)?,
                    Geometry::parse(i)?,
                    l2,
                ))
            }
        }
    }

    /// The plugin's arguments, e.g. `l1d=64:8:64,l1i=64:8:64,l2=1024:16:64`.
    pub(crate) fn plugin_args(&self) -> String {
        let l2 = self.l2.map(|g| format!(",{}", g.arg("l2")));
        format!(
            "{},{}{}",
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
    pub(crate) fn event(self) -> &'static str {
        match self {
            Count::Instructions => "instructions",
            Count::ConditionalBranches => "conditional-branches",
            Count::Branches => "branches",
            Count::Loads => "L1-dcache-loads",
            Count::Stores => "L1-dcache-stores",
            Count::L1dLoadMisses => "L1-dcache-load-misses",
            Count::L1dStoreMisses => "L1-dcache-store-misses",
            Count::L1iMisses => "L1-icache-load-misses",
            Count::L2Misses => "L2-misses",
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
            Count::Instructions | Count::Branches | Count::L1dLoadMisses | Count::L1iMisses => {
                &[Part::User, Part::Kernel, Part::All]
            }
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
}

impl Window {
    /// The window's count of `c`, `[user, kernel]`, if the plugin counted it.
    pub(crate) fn count(&self, c: Count) -> Option<[u64; 2]> {
        let i = Count::ALL.iter().position(|x| *x == c)?;
        self.counts.get(i).copied()
    }
}

/// The windows of a plugin log, in the order they closed: each `W NAME COUNTS...` line, with
/// the `D NAME MISSES...`, `I NAME MISSES...`, `L NAME LINE:MISSES...` and `B NAME
/// ADDR:INSNS...` lines that follow it; other lines (QEMU's own) are skipped.
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
        if tag == "B" || tag == "L" {
            if let Some(last) = out.last_mut().filter(|x| x.name == name)
                && let Some(pairs) = w.map(hex_pair).collect::<Option<Vec<_>>>()
            {
                let to = if tag == "B" {
                    &mut last.blocks
                } else {
                    &mut last.missed_lines
                };
                if to.is_empty() {
                    *to = pairs;
                }
            }
            continue;
        }
        let Ok(numbers) = w.map(str::parse).collect::<Result<Vec<u64>, _>>() else {
            continue;
        };
        match (tag, out.last_mut()) {
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
        let log = "W 7 1 2 3 4\nL 7 ffff888004123440:2a 7ffc10:1\nL 7 1:1\nL 8 2:2";
        let w = windows(log);
        assert_eq!(w[0].missed_lines, [(0xffff888004123440, 42), (0x7ffc10, 1)]);
        assert!(w[0].blocks.is_empty());
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
        assert!(CacheModel::parse("64x0x64").is_err());
        assert!(
            CacheModel::parse("big")
                .unwrap_err()
                .contains("SETSxWAYSxLINE")
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
