//! A boot's emulated profile: the kernel instructions of each block syscost's plugin counted in
//! a run's sample windows (`campaign --emulated-profile`), as instructions per operation by
//! function, drawn through the same windows as the run's `instructions:k (emulated)` so that
//! the profile accounts for every kernel instruction of the count.
//!
//! Three things keep the total equal to the count. A block translated twice in one window (QEMU
//! translates the same code again under other flags, as a uprobe's single step sets them, or
//! after a flush of its translations) is listed twice by the plugin and summed here. Each block's
//! figure is its least-squares slope over exactly the windows the count's line is drawn through
//! (`stats::slope::on_the_line`): a slope is linear in the counts, so the blocks' slopes add up
//! to the count's, whole where the count is, and other work in a window (kept off the line)
//! counts for nothing in either. And with several runs, the profile is the run (or the mean of
//! the two runs) whose total is the runs' median, as the count's figure is.
//!
//! With the profile, the plugin also counts the kernel's atomic read-modify-writes by
//! instruction (`atomics=1`), and on more than one vCPU the lines the measured vCPU took from
//! the others (`lines=`): each site's figure is drawn through the same windows, named
//! `function+0xOFFSET`, with what memory it touched.

use crate::counters::emulated::{Count, Sites, Window};
use crate::profile::symbols::Kallsyms;
use crate::results::functions::{EmulatedAtomics, EmulatedFunctions};
use crate::stats::slope;
use std::collections::{BTreeSet, HashMap};

/// One sample window's operations, kernel instructions and instructions by block.
struct BlockWindow {
    ops: u64,
    kernel: u64,
    blocks: HashMap<u64, u64>,
    /// What the plugin counted by site ([`LISTED`]): the kernel's count and its sites.
    sites: [Option<(u64, HashMap<u64, u64>)>; 2],
}

/// What a window counts by site: its atomics, and the lines it took from other vCPUs.
const LISTED: [Count; 2] = [Count::Atomics, Count::LinesMoved];

fn listed(w: &Window, kind: usize) -> Option<&Sites> {
    [&w.atomics, &w.moved][kind].as_ref()
}

/// One run's profile: its blocks per operation and their total, and what it counted by site
/// ([`LISTED`]) per operation, by site and in all.
struct RunProfile {
    blocks: HashMap<u64, f64>,
    total: f64,
    sites: [Option<(HashMap<u64, f64>, f64)>; 2],
}

/// Where an atomic's line lies: in the kernel's image (its static data: the top 2 GiB, as
/// x86-64 maps it, modules too), elsewhere in the kernel's half (allocated: slab, pages,
/// stacks, per-CPU areas) or in user space.
fn region(line: u64) -> u8 {
    match line {
        0xffff_ffff_8000_0000.. => 1,
        0xffff_8000_0000_0000.. => 2,
        _ => 4,
    }
}

fn regions(bits: u8) -> String {
    let names = [(1, "kernel image"), (2, "allocated"), (4, "user")];
    let named: Vec<&str> = (names.iter())
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    named.join(" and ")
}

/// The lines of the kernel's image a site's accesses are named by, at most.
const IMAGE_LINES: usize = 4;

/// What names a boot's kernel addresses: its text symbols, its data symbols where it sent
/// them, and what to add to the boot's addresses to look them up (its KASLR shift: the image,
/// text and data, moves as a whole).
#[derive(Clone, Copy)]
pub(crate) struct Names<'a> {
    pub text: &'a Kallsyms,
    pub data: Option<&'a Kallsyms>,
    pub shift: u64,
}

impl Names<'_> {
    /// A line of the kernel's image by the data symbols in it: the one its first byte is in
    /// (with its offset when inside it) and the next that starts in it, `a/b` (two objects
    /// that share a line: a lock beside what it guards, or false sharing), then how many more
    /// (`a/b and 5 more`: Debian's 6.1 keeps uprobes_treelock in one line with 6 others).
    fn line(&self, line: u64) -> Option<String> {
        let data = self.data?;
        let at = line.wrapping_add(self.shift);
        // A line past every symbol of its section would take the last one below it, perhaps
        // in another (a per-CPU symbol's address is an offset): far from it, none is named.
        let (first, off) = data.resolve_offset(at).filter(|(_, off)| *off < 1 << 20)?;
        let mut names = vec![match off {
            0 => first.to_string(),
            _ => format!("{first}+{off:#x}"),
        }];
        names.extend(data.starting_in(at + 1, at + 64).map(str::to_string));
        // The first two (what an access there most likely means), and how many more.
        let more = names.len().saturating_sub(2);
        names.truncate(2);
        let named = names.join("/");
        Some(match more {
            0 => named,
            _ => format!("{named} and {more} more"),
        })
    }

    /// A site's memory: its regions, the kernel image's lines named where they can be.
    fn memory(&self, bits: u8, image: Option<&BTreeSet<u64>>) -> String {
        let named: Vec<String> = image
            .into_iter()
            .flatten()
            .filter_map(|l| self.line(*l))
            .collect();
        if bits & 1 == 0 || named.is_empty() {
            return regions(bits);
        }
        let rest = regions(bits & !1);
        let image = format!("kernel image ({})", named.join(", "));
        match rest.is_empty() {
            true => image,
            false => format!("{image} and {rest}"),
        }
    }
}

/// The sample windows of each run, for the profile.
#[derive(Default)]
pub(super) struct BlockSums {
    runs: Vec<Vec<BlockWindow>>,
    /// The plugin counted blocks in some window.
    seen: bool,
    /// Sample windows whose blocks do not add up to their kernel instructions: (run index,
    /// window, kernel instructions, the blocks' sum).
    short: Vec<(u32, usize, u64, u64)>,
    /// Each site's memory, as [`region`] bits, of each kind ([`LISTED`]).
    memory: [HashMap<u64, u8>; 2],
    /// The lines of the kernel's image each site touched, of each kind (at most
    /// [`IMAGE_LINES`] a site).
    image: [HashMap<u64, BTreeSet<u64>>; 2],
    /// What the plugin's tables had no room for, of each kind.
    dropped: [u64; 2],
}

impl BlockSums {
    /// A run begins: its windows follow.
    pub(super) fn run(&mut self) {
        self.runs.push(Vec::new());
    }

    /// A window of the run; `kept`: it is a sample window the count keeps.
    pub(super) fn window(&mut self, run: u32, k: usize, w: &Window, ops: u64, kept: bool) {
        self.seen |= !w.blocks.is_empty();
        if !kept || !self.seen {
            return;
        }
        let kernel = w.count(Count::Instructions).map_or(0, |c| c[1]);
        let mut blocks: HashMap<u64, u64> = HashMap::new();
        for (a, n) in &w.blocks {
            *blocks.entry(*a).or_default() += n;
        }
        let sum: u64 = blocks.values().sum();
        if sum != kernel {
            self.short.push((run, k, kernel, sum));
            return;
        }
        let sites = [0, 1].map(|kind| {
            listed(w, kind).map(|a| {
                self.dropped[kind] += a.dropped;
                let mut sites: HashMap<u64, u64> = HashMap::new();
                for &(insn, line, n) in &a.sites {
                    *sites.entry(insn).or_default() += n;
                    *self.memory[kind].entry(insn).or_default() |= region(line);
                    if region(line) == 1 {
                        let lines = self.image[kind].entry(insn).or_default();
                        if lines.len() < IMAGE_LINES {
                            lines.insert(line);
                        }
                    }
                }
                (a.counts[1], sites)
            })
        });
        if let Some(windows) = self.runs.last_mut() {
            windows.push(BlockWindow {
                ops,
                kernel,
                blocks,
                sites,
            });
        }
    }

    /// What the result must say: why there is no profile though the plugin counted blocks,
    /// or which windows the profile lacks.
    pub(super) fn warnings(&self, symbols: bool) -> Vec<String> {
        let mut out = Vec::new();
        let windows: usize = self.runs.iter().map(Vec::len).sum();
        if self.seen && windows == 0 && self.short.is_empty() {
            out.push(
                "no emulated profile: another task ran in every sample window (use more samples)"
                    .into(),
            );
        } else if self.seen && windows > 0 && !symbols {
            out.push("no emulated profile: the guest sent no kernel symbols".into());
        }
        for (kind, dropped) in self.dropped.iter().enumerate() {
            if *dropped > 0 {
                out.push(format!(
                    "emulated profile: {dropped} {} left out of its sites (more distinct sites \
                     and lines in a window than the plugin's table holds); their count has them",
                    LISTED[kind].event()
                ));
            }
        }
        if let Some(&(run, k, kernel, sum)) = self.short.first() {
            out.push(format!(
                "emulated profile: {} sample window(s) left out of it, their blocks not adding \
                 up to their kernel instructions (run {run}'s window {k}: {sum} of {kernel}; the \
                 plugin's block lines were cut short or lost)",
                self.short.len()
            ));
        }
        out
    }

    /// The profile of the run whose total is the median (the mean of the middle two).
    fn per_op(&self) -> Option<RunProfile> {
        let mut runs: Vec<RunProfile> = self.runs.iter().filter_map(|w| run_per_op(w)).collect();
        runs.sort_by(|a, b| a.total.total_cmp(&b.total));
        let n = runs.len();
        let middle = match n {
            0 => return None,
            _ if n % 2 == 1 => &runs[n / 2..=n / 2],
            _ => &runs[n / 2 - 1..=n / 2],
        };
        let mean = |maps: &mut dyn Iterator<Item = &HashMap<u64, f64>>| {
            let mut out: HashMap<u64, f64> = HashMap::new();
            for m in maps {
                for (a, v) in m {
                    *out.entry(*a).or_default() += v / middle.len() as f64;
                }
            }
            out
        };
        let sites = [0, 1].map(|kind| {
            (middle.iter().all(|r| r.sites[kind].is_some())).then(|| {
                let of = middle.iter().filter_map(|r| r.sites[kind].as_ref());
                let total = of.clone().map(|a| a.1).sum::<f64>() / middle.len() as f64;
                (mean(&mut of.map(|a| &a.0)), total)
            })
        });
        Some(RunProfile {
            blocks: mean(&mut middle.iter().map(|r| &r.blocks)),
            total: middle.iter().map(|r| r.total).sum::<f64>() / middle.len() as f64,
            sites,
        })
    }

    /// The profile, named by `names`.
    pub(super) fn named(&self, names: Option<Names>) -> Option<EmulatedFunctions> {
        let names = names?;
        let (table, shift) = (names.text, names.shift);
        let p = self.per_op()?;
        let rebased = (p.blocks.into_iter())
            .map(|(a, n)| (a.wrapping_add(shift), n))
            .collect();
        let mut f = EmulatedFunctions::of(&rebased, table);
        // The blocks' slopes add up to the count's, but in floating point: the total is the
        // count's own, whole where it is.
        f.total_per_op = p.total;
        let [atomics, moved] = p.sites;
        let name = |kind: usize, s: Option<(HashMap<u64, f64>, f64)>| {
            s.map(|(sites, total)| {
                let sites = (sites.into_iter())
                    .map(|(a, n)| {
                        let bits = self.memory[kind].get(&a).copied().unwrap_or(0);
                        let memory = names.memory(bits, self.image[kind].get(&a));
                        (a.wrapping_add(shift), (n, memory))
                    })
                    .collect();
                EmulatedAtomics::of(&sites, table, total)
            })
        };
        f.atomics = name(0, atomics);
        f.moved = name(1, moved);
        Some(f)
    }
}

/// Each key's figure over `chosen` by `figure` (their operations, and the key's count in
/// each, 0 where absent), leaving out those that come to nothing.
fn per_key<'a>(
    chosen: &[&'a BlockWindow],
    of: impl Fn(&'a BlockWindow) -> Option<&'a HashMap<u64, u64>>,
    figure: impl Fn(&[(u64, u64)]) -> Option<f64>,
) -> HashMap<u64, f64> {
    let mut keys: Vec<u64> = (chosen.iter())
        .filter_map(|w| of(w))
        .flat_map(|m| m.keys().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter_map(|a| {
            let w: Vec<(u64, u64)> = (chosen.iter())
                .map(|w| (w.ops, of(w).and_then(|m| m.get(&a)).copied().unwrap_or(0)))
                .collect();
            let v = figure(&w)?;
            (v != 0.0).then_some((a, v))
        })
        .collect()
}

/// Every window's count over every window's operations; `None` without operations.
fn ratio(counts: &[(u64, u64)]) -> Option<f64> {
    let (ops, n) = (counts.iter()).fold((0u64, 0u64), |(o, n), w| (o + w.0, n + w.1));
    (ops > 0).then(|| n as f64 / ops as f64)
}

/// One run's profile over the windows its kernel instructions' line is drawn through;
/// `None` without windows.
fn run_per_op(windows: &[BlockWindow]) -> Option<RunProfile> {
    let points: Vec<(u64, u64)> = windows.iter().map(|w| (w.ops, w.kernel)).collect();
    let chosen: Vec<&BlockWindow> = slope::on_the_line_at(&points)
        .into_iter()
        .map(|i| &windows[i])
        .collect();
    let total = slope::per_op(&chosen.iter().map(|w| (w.ops, w.kernel)).collect::<Vec<_>>())?;
    let sites = [0, 1].map(|kind| {
        (chosen.iter().all(|w| w.sites[kind].is_some())).then(|| {
            let counts: Vec<(u64, u64)> = (chosen.iter())
                .filter_map(|w| Some((w.ops, w.sites[kind].as_ref()?.0)))
                .collect();
            // Lines moved follow the host's slices, not the operations: a ratio of sums, as
            // their count's figure (results::metrics); the atomics, a slope.
            let figure = if LISTED[kind] == Count::LinesMoved {
                ratio
            } else {
                slope::per_op
            };
            let sites = per_key(&chosen, |w| w.sites[kind].as_ref().map(|a| &a.1), figure);
            (sites, figure(&counts).unwrap_or(0.0))
        })
    });
    Some(RunProfile {
        blocks: per_key(&chosen, |w| Some(&w.blocks), slope::per_op),
        total,
        sites,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A window of `ops` operations whose kernel instructions are its blocks' sum.
    fn window(ops: u64, blocks: &[(u64, u64)]) -> (Window, u64) {
        let kernel = blocks.iter().map(|b| b.1).sum();
        let w = Window {
            counts: vec![[0, kernel]],
            blocks: blocks.to_vec(),
            ..Window::default()
        };
        (w, ops)
    }

    const A: u64 = 0xffffffff81000000;
    const B: u64 = 0xffffffff81000100;

    fn names(text: &Kallsyms) -> Names<'_> {
        Names {
            text,
            data: None,
            shift: 0,
        }
    }

    fn symbols() -> Kallsyms {
        Kallsyms::parse("ffffffff81000000 uprobe_notify_resume\nffffffff81000100 mtree_load\n")
    }

    /// A block translated twice in a window is listed twice: both count. The same code split
    /// into blocks differently from window to window (a translation begun mid-function) still
    /// comes to its function's instructions, and a window with other work in it (a slab
    /// refill) is off the count's line and counts for neither.
    #[test]
    fn the_profile_adds_up_to_the_count_whatever_the_translations() {
        let mut s = BlockSums::default();
        s.run();
        let windows = [
            window(256, &[(A, 100 * 256 + 7), (B, 40 * 256)]),
            // A split at A+0x10, its first block listed twice; B in two translations.
            window(
                512,
                &[
                    (A, 60 * 512),
                    (A + 0x10, 20 * 512),
                    (A, 20 * 512 + 7),
                    (B + 0x20, 10 * 512),
                    (B, 30 * 512),
                ],
            ),
            window(1024, &[(A, 100 * 1024 + 7), (B, 40 * 1024)]),
            // Other work: 900 more instructions in B.
            window(1024, &[(A, 100 * 1024 + 7), (B, 40 * 1024 + 900)]),
        ];
        for (k, (w, ops)) in windows.iter().enumerate() {
            s.window(0, k, w, *ops, true);
        }
        let f = s.named(Some(names(&symbols()))).unwrap();
        assert_eq!(f.total_per_op, 140.0);
        assert_eq!(f.per_op("uprobe_notify_resume"), 100.0);
        assert_eq!(f.per_op("mtree_load"), 40.0);
        assert!(s.warnings(true).is_empty(), "{:?}", s.warnings(true));
    }

    /// Blocks that do not add up to the window's kernel instructions leave it out, said; the
    /// middle run of three is the profile, as the median is the count's figure.
    #[test]
    fn a_short_window_is_said_and_the_median_run_is_the_profile() {
        let mut s = BlockSums::default();
        for (run, per) in [(0u32, 150), (1, 140), (2, 145)] {
            s.run();
            for (k, ops) in [256u64, 512, 1024].into_iter().enumerate() {
                let (w, ops) = window(ops, &[(A, (per - 40) * ops), (B, 40 * ops)]);
                s.window(run, k, &w, ops, true);
            }
        }
        let (mut w, ops) = window(256, &[(A, 100)]);
        w.counts[0][1] = 300;
        s.window(2, 3, &w, ops, true);
        let f = s.named(Some(names(&symbols()))).unwrap();
        assert_eq!(f.total_per_op, 145.0);
        assert_eq!(f.per_op("uprobe_notify_resume"), 105.0);
        let said = s.warnings(true).join("; ");
        assert!(said.contains("1 sample window(s) left out"), "{said}");
        assert!(said.contains("run 2's window 3: 100 of 300"), "{said}");
        let mut even = BlockSums::default();
        for per in [150u64, 140] {
            even.run();
            for (k, ops) in [256u64, 512].into_iter().enumerate() {
                let (w, ops) = window(ops, &[(A, (per - 40) * ops), (B, 40 * ops)]);
                even.window(0, k, &w, ops, true);
            }
        }
        let f = even.named(Some(names(&symbols()))).unwrap();
        assert_eq!(f.total_per_op, 145.0);
        assert_eq!(f.per_op("uprobe_notify_resume"), 105.0);
        assert_eq!(f.atomics, None, "not counted");
    }

    /// The atomics by site are drawn through the windows of the instructions' line too, each
    /// named function+offset with the memory its lines were in.
    #[test]
    fn atomics_are_named_by_site_with_their_memory() {
        use crate::counters::emulated::Sites;
        let mut s = BlockSums::default();
        s.run();
        let heap = 0xffff888004123440;
        for (k, ops) in [256u64, 512, 1024, 1024].into_iter().enumerate() {
            let (mut w, ops) = window(ops, &[(A, 100 * ops), (B, 40 * ops)]);
            // The last window had other work: 3 more atomics, 30 more instructions.
            let extra = u64::from(k == 3) * 3;
            w.blocks[0].1 += extra * 10;
            w.counts[0][1] += extra * 10;
            let sites = vec![
                (A + 0x2f, heap, 2 * ops + extra),
                (A + 0x38, 0xffffffff82000000, 3),
                (B + 0x10, heap + 64, ops),
            ];
            w.atomics = Some(Sites {
                counts: [0, 3 * ops + 3 + extra],
                sites,
                dropped: 0,
            });
            s.window(0, k, &w, ops, true);
        }
        let f = s.named(Some(names(&symbols()))).unwrap();
        let a = f.atomics.unwrap();
        assert_eq!(a.total_per_op, 3.0, "a window's own 3 cancel");
        let sites: Vec<(&str, f64, &str)> = (a.sites.iter())
            .map(|x| (x.site.as_str(), x.per_op, x.memory.as_str()))
            .collect();
        let want = [
            ("uprobe_notify_resume+0x2f", 2.0, "allocated"),
            ("mtree_load+0x10", 1.0, "allocated"),
        ];
        assert_eq!(sites, want);
        assert_eq!(
            a.by_function(),
            [("uprobe_notify_resume", 2.0), ("mtree_load", 1.0)]
        );
        assert_eq!(super::regions(1 | 2), "kernel image and allocated");
    }

    /// A line of the kernel's image is named by the data symbols in it, moved by the boot's
    /// KASLR shift: Debian's 6.1 keeps the uprobes' tree beside its lock, one line for both.
    #[test]
    fn image_lines_are_named_by_the_data_symbols_in_them() {
        let text = symbols();
        let data = Kallsyms::parse(
            "ffffffff82a10000 uprobes_tree\nffffffff82a10008 uprobes_treelock\n\
             ffffffff82a10040 uprobes_mmap_mutex\n",
        );
        let shift = 0x200000;
        let n = Names {
            text: &text,
            data: Some(&data),
            shift,
        };
        let line = 0xffffffff82a10000 - shift;
        assert_eq!(n.line(line).unwrap(), "uprobes_tree/uprobes_treelock");
        assert_eq!(n.line(line + 64).unwrap(), "uprobes_mmap_mutex");
        let crowded = Kallsyms::parse(
            "ffffffff82a10000 a\nffffffff82a10008 b\nffffffff82a10010 c\nffffffff82a10018 d\n",
        );
        let c = Names {
            data: Some(&crowded),
            ..n
        };
        assert_eq!(c.line(line).unwrap(), "a/b and 2 more");
        let lines: BTreeSet<u64> = [line].into();
        assert_eq!(
            n.memory(1 | 2, Some(&lines)),
            "kernel image (uprobes_tree/uprobes_treelock) and allocated"
        );
        assert_eq!(n.memory(2, Some(&lines)), "allocated");
        let unnamed = Names { data: None, ..n };
        assert_eq!(unnamed.memory(1, Some(&lines)), "kernel image");
        assert_eq!(n.line(line + (2 << 20)), None, "far past the last symbol");
    }
}
