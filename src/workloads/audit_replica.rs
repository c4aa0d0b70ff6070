//! The audit_filter_syscall() list walk (csrc/audit_replica.c) over R rule entries placed in
//! memory like the slab allocator would place them, or crowded into few cache sets: the
//! syscall-latency post's cache-set effect, reproduced on any CPU without rebooting a hundred
//! times. One operation is one walk of the whole list; each run (a fresh worker) gets a fresh placement, like a fresh
//! boot, and records its cacheline-spread.

use super::{Spec, Workload};
use crate::layout::{self, Geometry};
use anyhow::{Result, bail};
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use std::sync::{Mutex, MutexGuard};

unsafe extern "C" {
    fn replica_walk(variant: libc::c_int, ctx: *mut u8, walks: libc::c_ulong) -> libc::c_int;
    fn replica_entry_size() -> usize;
    fn replica_context_size() -> usize;
    fn replica_mask_offset() -> usize;
    fn replica_pid_offset() -> usize;
    static mut replica_list: [*mut u8; 2];
    static mut replica_filter_calls: libc::c_ulong;
}

/// The kernel's sizes, checked against the C side's at setup.
pub(crate) const ENTRY_SIZE: usize = 408;
pub(crate) const CONTEXT_SIZE: usize = 920;
/// kmalloc-512 and kmalloc-1k: where the kernel's entries and contexts come from.
pub(crate) const ENTRY_STRIDE: usize = 512;
pub(crate) const CONTEXT_ALIGN: usize = 1024;
const MAJOR_OFFSET: usize = 20;
const SERIAL_LO_OFFSET: usize = 12;

/// Which compiled walk to time: the baseline or one of the 2022 audit syscall-exit series'
/// patches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The kernel's code before the patches.
    Baseline,
    /// Patch 1: ctx->major cached in a local.
    CachedMajor,
    /// Patch 2: unlikely() around the mask test.
    Unlikely,
    /// Patch 3: audit_filter_syscall() without static linkage.
    Nonstatic,
    /// All three patches.
    AllThree,
}

impl Variant {
    fn index(self) -> libc::c_int {
        match self {
            Variant::Baseline => 0,
            Variant::CachedMajor => 1,
            Variant::Unlikely => 2,
            Variant::Nonstatic => 3,
            Variant::AllThree => 4,
        }
    }

    pub const ALL: [Variant; 5] = [
        Variant::Baseline,
        Variant::CachedMajor,
        Variant::Unlikely,
        Variant::Nonstatic,
        Variant::AllThree,
    ];
}

/// Where the entries go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// As SLUB's kmalloc-512 places them: slabs at random page frames of the region, each
    /// filled in the shuffled order of a randomised freelist before the next is taken.
    Slab,
    /// Distinct random kmalloc-512 slots anywhere in the region (every entry on its own page,
    /// as a rule: the placement before `slab`).
    Random,
    /// Consecutive slots: as even over the sets as alignment allows.
    Packed,
    /// Random slots aligned to this many bytes (a power of two, at least 512).
    Aligned(u64),
    /// Random slots whose first line falls in only this many of the reachable sets.
    Sets(u64),
}

impl std::str::FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Placement, String> {
        let bad = || {
            format!(
                "placement '{s}': use slab, random, packed, aligned=BYTES (e.g. aligned=4096) or \
                 sets=N"
            )
        };
        match s {
            "slab" => Ok(Placement::Slab),
            "random" => Ok(Placement::Random),
            "packed" => Ok(Placement::Packed),
            _ => {
                let (k, v) = s.split_once('=').ok_or_else(bad)?;
                let v: u64 = v.parse().map_err(|_| bad())?;
                match k {
                    "aligned" if v.is_power_of_two() && v >= ENTRY_STRIDE as u64 => {
                        Ok(Placement::Aligned(v))
                    }
                    "aligned" => Err(format!(
                        "placement '{s}': the alignment must be a power of two of at least \
                         {ENTRY_STRIDE} (entries are {ENTRY_SIZE} bytes)"
                    )),
                    "sets" if v >= 1 => Ok(Placement::Sets(v)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Slab => write!(f, "slab"),
            Placement::Random => write!(f, "random"),
            Placement::Packed => write!(f, "packed"),
            Placement::Aligned(b) => write!(f, "aligned={b}"),
            Placement::Sets(n) => write!(f, "sets={n}"),
        }
    }
}

/// The pages under the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Pages {
    /// 2 MiB pages, as the kernel's direct map (where slab objects live) is mapped: hugetlb
    /// pages when enough are reserved, else transparent huge pages (MADV_HUGEPAGE).
    #[value(name = "huge")]
    #[serde(rename = "huge")]
    Huge,
    /// 4 KiB pages: every slab page its own TLB entry, to show the TLB's share on its own.
    #[value(name = "4k")]
    #[serde(rename = "4k")]
    Small,
}

impl Pages {
    /// Results written before `--pages` existed used 4 KiB pages.
    fn before_the_option() -> Pages {
        Pages::Small
    }
}

/// Options of `syscost run audit-replica`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// Rule entries on the exit list (the audit syscall-exit investigations had 37 and 42).
    #[arg(long, default_value_t = 37, value_name = "R")]
    pub rules: u32,
    /// Entries whose mask names the syscall: they call the out-of-line filter, which fails on
    /// a field (5 of the 42 rules of the 2022 audit syscall-exit latency series, for getpid).
    #[arg(long, default_value_t = 5, value_name = "M")]
    pub matching: u32,
    /// The compiled walk: baseline or the 2022 audit syscall-exit latency series' patches.
    #[arg(long, value_enum, default_value_t = Variant::Baseline)]
    pub variant: Variant,
    /// Placement: slab (as SLUB's kmalloc-512 would place them), random (distinct random
    /// slots, each on its own page), packed, aligned=BYTES, or sets=N (crowded into N sets).
    #[arg(long, default_value = "slab", value_parser = |s: &str| s.parse::<Placement>())]
    pub placement: Placement,
    /// The pages under the region: huge (2 MiB, as the kernel's direct map) or 4k.
    #[arg(long, value_enum, default_value_t = Pages::Huge)]
    #[serde(default = "Pages::before_the_option")]
    pub pages: Pages,
    /// `--placement slab`: objects per slab [default: kmalloc-512's objs_per_slab from
    /// /sys/kernel/slab, else 16].
    #[arg(long, value_name = "N")]
    #[serde(default)]
    pub slab_objects: Option<u32>,
    /// `--placement slab`: slab order, a slab being 4 KiB << ORDER [default: kmalloc-512's
    /// order from /sys/kernel/slab, else 1].
    #[arg(long, value_name = "ORDER")]
    #[serde(default)]
    pub slab_order: Option<u32>,
    /// `--placement slab`: the percentage of each slab's objects already taken by other
    /// kmalloc-512 users (0 to 90), skipped as the entries are allocated [default: how full
    /// this kernel's partial kmalloc-512 slabs are, where new objects go, from
    /// /sys/kernel/slab (root only), else 0].
    #[arg(long, value_name = "PCT")]
    #[serde(default)]
    pub slab_fill: Option<u32>,
    /// The syscall number in ctx->major (39 is getpid on x86-64).
    #[arg(long, default_value_t = 39)]
    pub major: u32,
}

impl Spec for Params {
    const NAME: &'static str = "audit-replica";
    const OP_NAME: &'static str = "walk";
    const ABOUT: &'static str = "The audit_filter_syscall() list walk in C (as the 2023 'Syscall latency' post on audit rules analysed it), over R entries placed like the slab places them or crowded into few cache sets; one op is one walk, a fresh placement per run";
    const EXAMPLES: &'static str = "Examples:
  syscost run audit-replica --rules 37 --matching 5 --cpu 1 --runs 20 -o base.json
      20 fresh placements; then: syscost correlate base.json --x cacheline-spread --y time
  syscost ab --variant 'audit-replica --variant baseline' --variant 'audit-replica --variant all-three' -- --cpu 1
      the series' three patches together against the baseline
  syscost ab --variant 'audit-replica --rules 64 --placement packed' \\
             --variant 'audit-replica --rules 64 --placement sets=1' -- --cpu 1
      the same walk with every entry crowded into one L1 set";

    const EXTRA_EVENTS: &'static str = "{dTLB-loads,dTLB-load-misses}";

    fn not_as_threads(&self) -> Option<&'static str> {
        Some("the compiled walk keeps one global list per process")
    }

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(AuditReplica::new(self)))
    }

    /// Fill in the slab's shape from this kernel (so the result records what was used) and
    /// check everything that does not need the region.
    fn complete_command_line(&mut self) -> Result<()> {
        if self.placement == Placement::Slab {
            let sysfs = SlabShape::of_kmalloc_512();
            let objects = self
                .slab_objects
                .or(sysfs.map(|s| s.objects))
                .unwrap_or(16);
            let order = self.slab_order.or(sysfs.map(|s| s.order)).unwrap_or(1);
            SlabShape { objects, order }.check()?;
            self.slab_objects = Some(objects);
            self.slab_order = Some(order);
            self.slab_fill = Some(
                self.slab_fill
                    .or_else(SlabShape::partial_fill_pct)
                    .unwrap_or(0),
            );
        } else if self.slab_objects.is_some()
            || self.slab_order.is_some()
            || self.slab_fill.is_some()
        {
            bail!(
                "--slab-objects, --slab-order and --slab-fill describe --placement slab; this is \
                 --placement {}",
                self.placement
            );
        }
        if let Some(fill) = self.slab_fill
            && fill > MAX_SLAB_FILL
        {
            bail!(
                "--slab-fill {fill}: at most {MAX_SLAB_FILL} (% of each slab's objects taken by \
                 others; at 100 no entry would fit)"
            );
        }
        check_counts(self)
    }

    fn describe(&self) -> String {
        let pages = match self.pages {
            Pages::Huge => "2 MiB pages",
            Pages::Small => "4 KiB pages",
        };
        format!(
            "audit-replica {:?} walk of {} rules ({} matching), {} placement, {pages}",
            self.variant, self.rules, self.matching, self.placement
        )
    }

    fn parts(&self) -> Option<(&'static str, f64)> {
        Some(("rule", self.rules as f64))
    }
}

/// The C side keeps one global list: one replica at a time per process.
static ONE_LIST: Mutex<()> = Mutex::new(());

const REGION: usize = 16 << 20;
const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4096;
/// Entry slots of the region (the context takes the first two).
const SLOTS: usize = REGION / ENTRY_STRIDE;
const MAX_SLAB_FILL: u32 = 90;

/// The shape of a kmalloc-512 slab: objects per slab and the slab's page order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlabShape {
    pub objects: u32,
    pub order: u32,
}

impl SlabShape {
    /// kmalloc-512 as this kernel's SLUB has it (/sys/kernel/slab/kmalloc-512), if shown.
    pub(crate) fn of_kmalloc_512() -> Option<SlabShape> {
        let read = |f: &str| -> Option<u32> {
            std::fs::read_to_string(format!("/sys/kernel/slab/kmalloc-512/{f}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some(SlabShape {
            objects: read("objs_per_slab")?,
            order: read("order")?,
        })
    }

    /// How full this kernel's partial kmalloc-512 slabs are, percent: where SLUB puts new
    /// objects. `None` where /sys/kernel/slab is not readable (it is root's) or shows none.
    pub(crate) fn partial_fill_pct() -> Option<u32> {
        let read = |f: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/sys/kernel/slab/kmalloc-512/{f}"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        let (objects, slabs, per) = (
            read("objects_partial")?,
            read("partial")?,
            read("objs_per_slab")?,
        );
        let slots = slabs * per;
        (slots > 0).then(|| ((100 * objects / slots) as u32).min(MAX_SLAB_FILL))
    }

    pub(crate) fn bytes(&self) -> usize {
        PAGE << self.order
    }

    /// A slab must hold its objects of 512 bytes, and fit the region with room to spare.
    pub(crate) fn check(&self) -> Result<()> {
        if self.order > 4 {
            bail!(
                "--slab-order {}: at most 4 (64 KiB slabs; kmalloc-512 uses order 0 to 3)",
                self.order
            );
        }
        if self.objects == 0 || self.objects as usize * ENTRY_STRIDE > self.bytes() {
            bail!(
                "--slab-objects {}: a slab of order {} ({} KiB) holds 1 to {} objects of \
                 {ENTRY_STRIDE} bytes",
                self.objects,
                self.order,
                self.bytes() >> 10,
                self.bytes() / ENTRY_STRIDE
            );
        }
        Ok(())
    }
}

/// Rule counts the region can hold, checked before anything is mapped.
fn check_counts(p: &Params) -> Result<()> {
    if p.rules == 0 {
        bail!("--rules must be at least 1");
    }
    if p.matching > p.rules {
        bail!("--matching {} is more than --rules {}", p.matching, p.rules);
    }
    let capacity = match (p.placement, p.slab_objects, p.slab_order) {
        (Placement::Slab, Some(objects), Some(order)) => {
            let shape = SlabShape { objects, order };
            let slabs = REGION / shape.bytes() - 1;
            let free = objects - objects * p.slab_fill.unwrap_or(0) / 100;
            slabs * free as usize
        }
        _ => SLOTS - CONTEXT_ALIGN / ENTRY_STRIDE,
    };
    if p.rules as usize > capacity {
        bail!(
            "--rules {}: the replica's {} MiB region holds at most {capacity} entries with \
             this placement",
            p.rules,
            REGION >> 20
        );
    }
    Ok(())
}

/// The region's anonymous mapping, unmapped when dropped (on every error path too).
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map_region` mapped.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

/// How the region's pages came out, checked in /proc/self/smaps after it was touched.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Backing {
    pub asked: Pages,
    /// hugetlb (reserved pages) or THP.
    pub hugetlb: bool,
    /// Share of the region on 2 MiB pages, percent.
    pub huge_pct: f64,
}

impl Backing {
    /// One line for the run's notes.
    pub(crate) fn describe(&self) -> String {
        match (self.asked, self.hugetlb) {
            (Pages::Small, _) => format!(
                "region of {} MiB on 4 KiB pages (--pages 4k): each slab page needs its own \
                 TLB entry",
                REGION >> 20
            ),
            (Pages::Huge, true) => format!(
                "region of {} MiB on reserved 2 MiB hugetlb pages ({:.0}%)",
                REGION >> 20,
                self.huge_pct
            ),
            (Pages::Huge, false) if self.huge_pct >= 99.9 => format!(
                "region of {} MiB on 2 MiB transparent huge pages (100%)",
                REGION >> 20
            ),
            (Pages::Huge, false) => format!(
                "huge pages NOT granted: only {:.0}% of the {} MiB region is on 2 MiB pages \
                 (see /sys/kernel/mm/transparent_hugepage/enabled and defrag, or reserve \
                 pages: sysctl vm.nr_hugepages=16); the rest is on 4 KiB pages, so TLB misses \
                 add to the walk",
                self.huge_pct,
                REGION >> 20
            ),
        }
    }
}

/// Map the region, 2 MiB-aligned, and touch every page so it is backed now. With huge
/// pages: hugetlb pages if enough are reserved, else THP asked for with MADV_HUGEPAGE before
/// the first touch. Returns the mapping and where the region starts in it.
fn map_region(pages: Pages) -> Result<(Mapping, *mut u8, bool)> {
    let anon = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    if pages == Pages::Huge && hugetlb_free_bytes() >= REGION {
        // SAFETY: a private anonymous hugetlb mapping, owned by the returned guard.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION,
                libc::PROT_READ | libc::PROT_WRITE,
                anon | libc::MAP_HUGETLB | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            let m = Mapping {
                base: p as *mut u8,
                len: REGION,
            };
            let start = m.base;
            return Ok((m, start, true));
        }
    }
    let len = REGION + HUGE_PAGE;
    // SAFETY: a private anonymous mapping, owned by the returned guard.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            anon,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        bail!(
            "cannot map {} MiB for the replica: {}",
            len >> 20,
            std::io::Error::last_os_error()
        );
    }
    let m = Mapping {
        base: p as *mut u8,
        len,
    };
    let start = (m.base as usize).next_multiple_of(HUGE_PAGE) as *mut u8;
    // SAFETY: [start, start + REGION) lies inside the mapping (len has a huge page of slack);
    // madvise only advises, and every write is inside the region.
    unsafe {
        let advice = match pages {
            Pages::Huge => libc::MADV_HUGEPAGE,
            Pages::Small => libc::MADV_NOHUGEPAGE,
        };
        // Without THP support the advice fails; the backing check says what came of it.
        libc::madvise(start as *mut libc::c_void, REGION, advice);
        for off in (0..REGION).step_by(PAGE) {
            start.add(off).write_volatile(0);
        }
    }
    Ok((m, start, false))
}

/// Bytes of free reserved hugetlb pages of the default size (2 MiB on x86-64).
fn hugetlb_free_bytes() -> usize {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| -> usize {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    field("HugePages_Free:") * field("Hugepagesize:") * 1024
}

/// Kilobytes of [start, start + len) on huge pages, from this process's smaps: the
/// AnonHugePages (THP) or Private_Hugetlb lines of the mappings inside that range.
fn huge_kb(smaps: &str, start: usize, len: usize) -> u64 {
    let mut total = 0;
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        {
            inside = a < start + len && b > start;
            continue;
        }
        if inside
            && let Some(v) = line
                .strip_prefix("AnonHugePages:")
                .or_else(|| line.strip_prefix("Private_Hugetlb:"))
        {
            total += v
                .split_whitespace()
                .next()
                .and_then(|k| k.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// The arena holding a placed list and its context.
pub(crate) struct Replica {
    _lock: MutexGuard<'static, ()>,
    _mapping: Mapping,
    region: *mut u8,
    ctx: *mut u8,
    entries: Vec<usize>,
    matching: u32,
    geometry: Geometry,
    backing: Backing,
}

// The raw pointers are owned by the replica; it is used by one thread at a time.
unsafe impl Send for Replica {}

/// Choose `n` of `cands` at random (a partial Fisher-Yates shuffle), in the order drawn.
fn choose(
    cands: Vec<usize>,
    n: usize,
    placement: Placement,
    rng: &mut rand_pcg::Pcg64,
) -> Result<Vec<usize>> {
    if cands.len() < n {
        bail!(
            "placement {placement}: only {} slots for {n} entries",
            cands.len()
        );
    }
    let mut c = cands;
    for i in 0..n {
        let j = rng.random_range(i..c.len());
        c.swap(i, j);
    }
    c.truncate(n);
    Ok(c)
}

/// SLUB's placement of `n` kmalloc-512 objects allocated one after another, as entry slots of
/// the region: each new slab at a random free slab frame (the page allocator's choice), its
/// objects handed out in the order of a shuffled freelist (CONFIG_SLAB_FREELIST_RANDOM),
/// skipping the `fill_pct` of them other users hold, and the next slab taken only when this one
/// is full. Frame 0 holds the context.
pub(crate) fn slab_slots(
    n: usize,
    shape: SlabShape,
    fill_pct: u32,
    rng: &mut rand_pcg::Pcg64,
) -> Result<Vec<usize>> {
    let per_slab = shape.objects as usize;
    let stride = shape.bytes() / ENTRY_STRIDE;
    let frames: Vec<usize> = (1..REGION / shape.bytes()).collect();
    let taken_per_slab = per_slab * fill_pct as usize / 100;
    let free_per_slab = per_slab - taken_per_slab;
    let slabs_needed = n.div_ceil(free_per_slab.max(1));
    if free_per_slab == 0 || slabs_needed > frames.len() {
        bail!(
            "placement slab: {n} entries need {slabs_needed} slabs of {per_slab} objects \
             ({taken_per_slab} taken by others), more than the {} the region holds",
            frames.len()
        );
    }
    let frames = choose(frames, slabs_needed, Placement::Slab, rng)?;
    let mut out = Vec::with_capacity(n);
    for frame in frames {
        let mut freelist: Vec<usize> = (0..per_slab).collect();
        for i in (1..per_slab).rev() {
            freelist.swap(i, rng.random_range(0..=i));
        }
        // Other users took some objects before ours (which ones is as random as the rest).
        for obj in freelist.into_iter().skip(taken_per_slab) {
            if out.len() == n {
                break;
            }
            out.push(frame * stride + obj);
        }
    }
    Ok(out)
}

/// The slots (of ENTRY_STRIDE bytes from the region's start) the `rules` entries take, as
/// `p.placement` chooses them.
fn slots_for(
    p: &Params,
    geometry: &Geometry,
    base: u64,
    rng: &mut rand_pcg::Pcg64,
) -> Result<Vec<usize>> {
    // The context takes the first kmalloc-1k slot (two entry slots).
    let first = CONTEXT_ALIGN / ENTRY_STRIDE;
    let n = p.rules as usize;
    Ok(match p.placement {
        Placement::Slab => {
            let shape = SlabShape {
                objects: p.slab_objects.unwrap_or(16),
                order: p.slab_order.unwrap_or(1),
            };
            slab_slots(n, shape, p.slab_fill.unwrap_or(0), rng)?
        }
        Placement::Random => choose((first..SLOTS).collect(), n, p.placement, rng)?,
        Placement::Packed => {
            let start = rng.random_range(first..=SLOTS - n);
            (start..start + n).collect()
        }
        Placement::Aligned(b) => {
            let step = b as usize / ENTRY_STRIDE;
            let slots = (first..SLOTS).filter(|s| s % step == 0).collect();
            choose(slots, n, p.placement, rng)?
        }
        Placement::Sets(k) => {
            let reach = layout::reachable_sets(geometry, ENTRY_STRIDE as u64);
            if k as usize > reach.len() {
                bail!(
                    "placement sets={k}: entries of kmalloc-512 reach only {} sets of this cache",
                    reach.len()
                );
            }
            let allowed = &reach[..k as usize];
            let in_allowed = |s: &usize| {
                allowed.contains(&geometry.set_of(base + (*s * ENTRY_STRIDE) as u64))
            };
            let slots = (first..SLOTS).filter(in_allowed).collect();
            choose(slots, n, p.placement, rng)?
        }
    })
}

/// Write the list into the region: each entry linked to its neighbours and to the list head,
/// its mask naming `p.major` for the matching ones (spread evenly) and another syscall for the
/// rest; the context names `p.major`.
///
/// # Safety
/// `region` must be a writable mapping of REGION bytes and `entries` distinct offsets of
/// ENTRY_STRIDE-byte slots inside it, clear of the context's 1 KiB slot, at least one.
unsafe fn link(region: *mut u8, entries: &[usize], p: &Params) {
    let n = entries.len();
    let matching: Vec<bool> = (0..n)
        .map(|i| (i * p.matching as usize) / n != ((i + 1) * p.matching as usize) / n)
        .collect();
    // SAFETY: every write is inside the region; entries do not overlap (distinct 512-byte
    // slots of 408-byte entries, clear of the context's 1 KiB slot).
    unsafe {
        let list = std::ptr::addr_of_mut!(replica_list) as *mut u8;
        let at = |off: usize| region.add(off);
        for (i, off) in entries.iter().enumerate() {
            let e = at(*off);
            let next: *mut u8 = match entries.get(i + 1) {
                Some(o) => at(*o),
                None => list,
            };
            let prev: *mut u8 = if i == 0 { list } else { at(entries[i - 1]) };
            (e as *mut *mut u8).write(next);
            (e.add(8) as *mut *mut u8).write(prev);
            let nr = if matching[i] {
                p.major
            } else {
                // another syscall, never the benchmarked one
                (p.major + 1 + (i as u32 % 300)) % 2048
            };
            let word = e.add(replica_mask_offset() + 4 * (nr / 32) as usize) as *mut u32;
            word.write(word.read() | 1 << (nr % 32));
            (e.add(replica_pid_offset()) as *mut u32).write(0xdead_beef);
        }
        (region.add(MAJOR_OFFSET) as *mut i32).write(p.major as i32);
        (region.add(SERIAL_LO_OFFSET) as *mut i32).write(1);
        let head = list as *mut *mut u8;
        head.write(at(entries[0]));
        head.add(1)
            .write(at(*entries.last().expect("at least one entry")));
    }
}

impl Replica {
    /// Build the list: `rules` entries at offsets chosen by `placement` (`seed` makes it
    /// reproducible), `matching` of them (spread evenly) naming `major`.
    pub(crate) fn new(p: &Params, seed: u64) -> Result<Replica> {
        let mut p = p.clone();
        p.complete_command_line()?;
        if p.major >= 64 * 32 {
            bail!(
                "--major {} is beyond the 2048 syscalls a 64-word mask covers",
                p.major
            );
        }
        // SAFETY: plain size queries.
        unsafe {
            if replica_entry_size() != ENTRY_SIZE
                || replica_context_size() != CONTEXT_SIZE
                || replica_mask_offset() != 48
            {
                bail!("the compiled replica's layout does not match the kernel's");
            }
        }
        let geometry = Geometry::l1d().unwrap_or(Geometry {
            sets: 64,
            ways: 8,
            line: 64,
        });
        let lock = ONE_LIST.lock().unwrap_or_else(|e| e.into_inner());
        let (mapping, region, hugetlb) = map_region(p.pages)?;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let huge = huge_kb(&smaps, region as usize, REGION).min((REGION >> 10) as u64);
        let backing = Backing {
            asked: p.pages,
            hugetlb,
            huge_pct: 100.0 * huge as f64 / (REGION >> 10) as f64,
        };
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let chosen = slots_for(&p, &geometry, region as u64, &mut rng)?;
        let entries: Vec<usize> = chosen.iter().map(|s| s * ENTRY_STRIDE).collect();
        // SAFETY: `region` is the mapping just made, REGION bytes long, and every entry is a
        // distinct slot inside it (see `link`).
        unsafe { link(region, &entries, &p) };
        Ok(Replica {
            _lock: lock,
            _mapping: mapping,
            region,
            ctx: region,
            entries,
            matching: p.matching,
            geometry,
            backing,
        })
    }

    /// How the region's pages came out.
    #[cfg(test)]
    pub(crate) fn backing(&self) -> &Backing {
        &self.backing
    }

    /// `walks` list walks with `variant`: the walk's result and the filter calls it made.
    pub(crate) fn walk(&mut self, variant: Variant, walks: u64) -> (i32, u64) {
        // SAFETY: the list and context were built by `new` and stay valid while self lives;
        // the lock keeps other replicas of this process away from the global list.
        unsafe {
            let before = std::ptr::addr_of!(replica_filter_calls).read();
            let r = replica_walk(variant.index(), self.ctx, walks as libc::c_ulong);
            let after = std::ptr::addr_of!(replica_filter_calls).read();
            (r, after - before)
        }
    }

    /// First-line addresses of the entries.
    pub(crate) fn addresses(&self) -> Vec<u64> {
        self.entries
            .iter()
            .map(|o| self.region as u64 + *o as u64)
            .collect()
    }

    /// Distinct 4 KiB pages the entries' first lines are on: the TLB entries a walk needs
    /// on 4 KiB pages.
    pub(crate) fn pages_touched(&self) -> usize {
        let mut pages: Vec<usize> = self.entries.iter().map(|o| o / PAGE).collect();
        pages.sort_unstable();
        pages.dedup();
        pages.len()
    }

    /// The set of this machine's L1 that holds the most entry lines (the lowest on a tie).
    pub(crate) fn fullest_set(&self) -> usize {
        let pop = layout::populations(&self.geometry, &self.addresses(), 1);
        let most = pop.iter().copied().max().unwrap_or(0);
        pop.iter().position(|&p| p == most).unwrap_or(0)
    }

    /// The syscall-latency post's cacheline-spread of this placement on this machine's L1, and
    /// the largest number of entry lines in one set.
    pub(crate) fn spread(&self) -> (f64, u64) {
        let g = &self.geometry;
        let pop = layout::populations(g, &self.addresses(), 1);
        let reach = layout::reachable_sets(g, ENTRY_STRIDE as u64);
        (
            layout::spread(&pop, &reach),
            pop.iter().copied().max().unwrap_or(0),
        )
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        // SAFETY: unlink the list from the C global before the memory goes (the mapping is
        // unmapped when `_mapping` drops, after this).
        unsafe {
            let head = std::ptr::addr_of_mut!(replica_list) as *mut *mut u8;
            let list = head as *mut u8;
            head.write(list);
            head.add(1).write(list);
        }
    }
}

/// The workload: one operation is one walk of the list.
pub(crate) struct AuditReplica {
    params: Params,
    replica: Option<Replica>,
}

impl AuditReplica {
    pub(crate) fn new(p: &Params) -> AuditReplica {
        AuditReplica {
            params: p.clone(),
            replica: None,
        }
    }
}

impl Workload for AuditReplica {
    fn setup(&mut self) -> Result<()> {
        // A fresh placement per run, like a fresh boot.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ (std::process::id() as u64) << 32;
        self.replica = Some(Replica::new(&self.params, seed)?);
        Ok(())
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        let r = self.replica.as_mut().expect("setup ran");
        let (state, calls) = r.walk(self.params.variant, ops);
        if state != 0 || calls != ops * r.matching as u64 {
            bail!(
                "the replica's walk went wrong: state {state}, {calls} filter calls for {ops} \
                 walks of {} matching rules",
                r.matching
            );
        }
        Ok(())
    }

    fn run_metrics(&self) -> Vec<(String, f64)> {
        let Some(r) = &self.replica else {
            return Vec::new();
        };
        let (spread, max) = r.spread();
        vec![
            ("cacheline-spread".into(), spread),
            ("max-set-population".into(), max as f64),
            // An index, not a quantity: which set the placement crowds (a model of the L1,
            // such as a campaign's --cache-model, shows its misses there).
            ("fullest-set".into(), r.fullest_set() as f64),
            ("huge-page-share".into(), r.backing.huge_pct),
            ("pages-touched".into(), r.pages_touched() as f64),
        ]
    }

    fn notes(&self) -> Vec<String> {
        let g = self
            .replica
            .as_ref()
            .map(|r| r.geometry)
            .unwrap_or(Geometry {
                sets: 0,
                ways: 0,
                line: 0,
            });
        let mut notes = vec![format!(
            "L1d {} sets x {} ways x {} B; one op is one walk of {} rules",
            g.sets, g.ways, g.line, self.params.rules
        )];
        if let Some(r) = &self.replica {
            notes.push(r.backing.describe());
        }
        if let (Placement::Slab, Some(o), Some(k)) = (
            self.params.placement,
            self.params.slab_objects,
            self.params.slab_order,
        ) {
            let kernel = match SlabShape::of_kmalloc_512() {
                Some(s) if s.objects == o && s.order == k => "as this kernel's kmalloc-512".into(),
                Some(s) => format!(
                    "this kernel's kmalloc-512: {} objects, order {}",
                    s.objects, s.order
                ),
                None => "/sys/kernel/slab/kmalloc-512 not readable".into(),
            };
            notes.push(format!(
                "slab placement: {o} objects per {} KiB slab (order {k}; {kernel}), {}% taken by \
                 others, freelist shuffled",
                (PAGE << k) >> 10,
                self.params.slab_fill.unwrap_or(0)
            ));
        }
        notes
    }

    fn teardown(&mut self) -> Result<()> {
        self.replica = None;
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn params(placement: Placement) -> Params {
        Params {
            rules: 40,
            matching: 5,
            variant: Variant::Baseline,
            placement,
            pages: Pages::Small,
            slab_objects: None,
            slab_order: None,
            slab_fill: None,
            major: 39,
        }
    }

    #[test]
    fn slab_placement_fills_shuffled_slabs_one_at_a_time() {
        let shape = SlabShape {
            objects: 16,
            order: 1,
        };
        let mut rng = rand_pcg::Pcg64::seed_from_u64(9);
        let slots = slab_slots(40, shape, 0, &mut rng).unwrap();
        let per_frame = shape.bytes() / ENTRY_STRIDE;
        let frames: Vec<usize> = slots.iter().map(|s| s / per_frame).collect();
        // 16, 16 and 8 consecutive entries share a slab; three distinct frames, never frame 0.
        assert!(frames[..16].iter().all(|f| *f == frames[0]));
        assert!(frames[16..32].iter().all(|f| *f == frames[16]));
        assert!(frames[32..].iter().all(|f| *f == frames[32]));
        let mut distinct = vec![frames[0], frames[16], frames[32]];
        distinct.dedup();
        assert_eq!(distinct.len(), 3);
        assert!(!frames.contains(&0), "frame 0 holds the context");
        // Within a slab, every object once, in shuffled order.
        let mut objs: Vec<usize> = slots[..16].iter().map(|s| s % per_frame).collect();
        assert_ne!(objs, (0..16).collect::<Vec<_>>(), "a shuffled freelist");
        objs.sort();
        assert_eq!(objs, (0..16).collect::<Vec<_>>());
        // Half of each slab taken by others: 8 of ours per slab.
        let half = slab_slots(40, shape, 50, &mut rng).unwrap();
        let f: Vec<usize> = half.iter().map(|s| s / per_frame).collect();
        assert!(f[..8].iter().all(|x| *x == f[0]) && f[8] != f[0]);
    }

    #[test]
    fn slab_and_region_limits_are_refused_before_mapping() {
        let mut p = params(Placement::Slab);
        p.slab_objects = Some(17);
        p.slab_order = Some(1);
        let e = p.complete_command_line().unwrap_err().to_string();
        assert!(e.contains("holds 1 to 16 objects"), "{e}");
        p.slab_objects = Some(8);
        p.slab_order = Some(0);
        p.slab_fill = Some(95);
        let e = p.complete_command_line().unwrap_err().to_string();
        assert!(e.contains("at most 90"), "{e}");
        p.slab_fill = Some(0);
        p.rules = 40_000;
        let e = p.complete_command_line().unwrap_err().to_string();
        assert!(e.contains("holds at most"), "{e}");
        let mut q = params(Placement::Random);
        q.slab_fill = Some(10);
        let e = q.complete_command_line().unwrap_err().to_string();
        assert!(e.contains("--placement slab"), "{e}");
        let mut r = params(Placement::Packed);
        r.rules = (SLOTS - 2) as u32;
        r.matching = 0;
        assert!(Replica::new(&r, 1).is_ok(), "a region full of entries");
    }

    #[test]
    fn a_refused_region_is_said_and_a_failed_setup_leaves_nothing_mapped() {
        let refused = Backing {
            asked: Pages::Huge,
            hugetlb: false,
            huge_pct: 12.5,
        };
        let said = refused.describe();
        assert!(said.contains("NOT granted") && said.contains("12%"), "{said}");
        assert!(said.contains("vm.nr_hugepages"), "says what to do: {said}");
        let vm_size = || -> u64 {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap()
        };
        let before = vm_size();
        for _ in 0..20 {
            // Fails after mapping: only 8 sets are reachable.
            assert!(Replica::new(&params(Placement::Sets(9)), 1).is_err());
        }
        let grown_kb = vm_size().saturating_sub(before);
        assert!(
            grown_kb < 100 << 10,
            "20 failed setups left {grown_kb} kB mapped"
        );
    }

    #[test]
    fn huge_pages_are_read_from_smaps() {
        let smaps = "\
7f0000000000-7f0001000000 rw-p 00000000 00:00 0
Size:              16384 kB
AnonHugePages:     14336 kB
7f0001000000-7f0001200000 rw-p 00000000 00:00 0
AnonHugePages:      2048 kB
7f0002000000-7f0002200000 rw-p 00000000 00:00 0
Private_Hugetlb:    2048 kB
";
        assert_eq!(huge_kb(smaps, 0x7f00_0000_0000, 16 << 20), 14336);
        assert_eq!(huge_kb(smaps, 0x7f00_0000_0000, 18 << 20), 16384);
        assert_eq!(huge_kb(smaps, 0x7f00_0200_0000, 2 << 20), 2048);
        assert_eq!(huge_kb("", 0, 1), 0);
    }

    #[test]
    fn the_backing_is_checked_and_said() {
        let r = Replica::new(&params(Placement::Slab), 5).unwrap();
        assert_eq!(r.backing().asked, Pages::Small);
        assert!(r.backing().describe().contains("4 KiB pages"));
        drop(r);
        let mut p = params(Placement::Slab);
        p.pages = Pages::Huge;
        let r = Replica::new(&p, 5).unwrap();
        let b = r.backing().clone();
        assert!((0.0..=100.0).contains(&b.huge_pct), "{b:?}");
        let said = b.describe();
        assert!(
            said.contains("2 MiB") || said.contains("NOT granted"),
            "{said}"
        );
        println!("this machine: {said}");
    }

    #[test]
    fn every_variant_computes_the_same_answer() {
        for placement in [
            Placement::Slab,
            Placement::Random,
            Placement::Packed,
            Placement::Sets(1),
        ] {
            let mut r = Replica::new(&params(placement), 11).unwrap();
            let answers: Vec<(i32, u64)> = Variant::ALL.iter().map(|v| r.walk(*v, 7)).collect();
            assert!(
                answers.iter().all(|a| *a == (0, 35)),
                "{placement}: {answers:?}"
            );
        }
    }

    #[test]
    fn placements_land_where_asked() {
        let r = Replica::new(&params(Placement::Sets(1)), 3).unwrap();
        let g = r.geometry;
        let sets: std::collections::HashSet<u64> =
            r.addresses().iter().map(|a| g.set_of(*a)).collect();
        assert_eq!(sets.len(), 1, "crowded into one set");
        assert_eq!(r.spread().1, 40);
        drop(r);
        let r = Replica::new(&params(Placement::Packed), 3).unwrap();
        assert!(r.spread().0 < 1.0, "packed is even: {:?}", r.spread());
        drop(r);
        let r = Replica::new(&params(Placement::Aligned(4096)), 3).unwrap();
        assert!(r.addresses().iter().all(|a| a % 4096 == 0));
    }

    #[test]
    fn placement_syntax() {
        assert_eq!(
            "aligned=4096".parse::<Placement>(),
            Ok(Placement::Aligned(4096))
        );
        assert_eq!("sets=2".parse::<Placement>(), Ok(Placement::Sets(2)));
        assert_eq!("slab".parse::<Placement>(), Ok(Placement::Slab));
        assert!("aligned=100".parse::<Placement>().is_err());
        assert!("sets=0".parse::<Placement>().is_err());
        assert!("lumpy".parse::<Placement>().is_err());
    }
}
