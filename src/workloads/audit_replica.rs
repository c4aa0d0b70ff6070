//! The audit_filter_syscall() list walk (csrc/audit_replica.c) over R rule entries placed in
//! memory like the slab allocator would place them, or crowded into few cache sets: the seed's
//! cache-set effect, reproduced on any CPU without rebooting a hundred times. One operation is
//! one walk of the whole list; each run (a fresh worker) gets a fresh placement, like a fresh
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
pub const ENTRY_SIZE: usize = 408;
pub const CONTEXT_SIZE: usize = 920;
/// kmalloc-512 and kmalloc-1k: where the kernel's entries and contexts come from.
pub const ENTRY_STRIDE: usize = 512;
pub const CONTEXT_ALIGN: usize = 1024;
const MAJOR_OFFSET: usize = 20;
const SERIAL_LO_OFFSET: usize = 12;

/// Which compiled walk to time: the baseline or one of the seed's patches.
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
    /// Distinct random kmalloc-512 slots in a 16 MiB region: the slab allocator's spread.
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
                "placement '{s}': use random, packed, aligned=BYTES (e.g. aligned=4096) or sets=N"
            )
        };
        match s {
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
            Placement::Random => write!(f, "random"),
            Placement::Packed => write!(f, "packed"),
            Placement::Aligned(b) => write!(f, "aligned={b}"),
            Placement::Sets(n) => write!(f, "sets={n}"),
        }
    }
}

/// Options of `syscost run audit-replica`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// Rule entries on the exit list (the seeds: 37 and 42).
    #[arg(long, default_value_t = 37, value_name = "R")]
    pub rules: u32,
    /// Entries whose mask names the syscall: they call the out-of-line filter, which fails on
    /// a field (the seeds: 5).
    #[arg(long, default_value_t = 5, value_name = "M")]
    pub matching: u32,
    /// The compiled walk: baseline or one of the seed's patches.
    #[arg(long, value_enum, default_value_t = Variant::Baseline)]
    pub variant: Variant,
    /// Placement: random (like the slab), packed, aligned=BYTES, or sets=N (crowded).
    #[arg(long, default_value = "random", value_parser = |s: &str| s.parse::<Placement>())]
    pub placement: Placement,
    /// The syscall number in ctx->major (39 is getpid on x86-64).
    #[arg(long, default_value_t = 39)]
    pub major: u32,
}

impl Spec for Params {
    const NAME: &'static str = "audit-replica";
    const OP_NAME: &'static str = "walk";
    const ABOUT: &'static str = "The audit_filter_syscall() list walk in C (seed 000), over R entries placed like the slab places them or crowded into few cache sets; one op is one walk, a fresh placement per run";
    const EXAMPLES: &'static str = "Examples:
  syscost run audit-replica --rules 37 --matching 5 --cpu 1 --runs 20 -o base.json
      20 fresh placements; then: syscost correlate base.json --x cacheline-spread --y time
  syscost ab --variant 'audit-replica --variant baseline' --variant 'audit-replica --variant all-three' -- --cpu 1
      the seed's three patches together against the baseline
  syscost ab --variant 'audit-replica --rules 64 --placement packed' \\
             --variant 'audit-replica --rules 64 --placement sets=1' -- --cpu 1
      the same walk with every entry crowded into one L1 set";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(AuditReplica::new(self)))
    }

    fn describe(&self) -> String {
        format!(
            "audit-replica {:?} walk of {} rules ({} matching), {} placement",
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

/// The arena holding a placed list and its context.
pub struct Replica {
    _lock: MutexGuard<'static, ()>,
    region: *mut u8,
    ctx: *mut u8,
    entries: Vec<usize>,
    matching: u32,
    geometry: Geometry,
}

// The raw pointers are owned by the replica; it is used by one thread at a time.
unsafe impl Send for Replica {}

impl Replica {
    /// Build the list: `rules` entries at offsets chosen by `placement` (`seed` makes it
    /// reproducible), `matching` of them (spread evenly) naming `major`.
    pub fn new(p: &Params, seed: u64) -> Result<Replica> {
        if p.rules == 0 {
            bail!("--rules must be at least 1");
        }
        if p.matching > p.rules {
            bail!("--matching {} is more than --rules {}", p.matching, p.rules);
        }
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
        // SAFETY: a private anonymous mapping, unmapped in Drop.
        let region = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if region == libc::MAP_FAILED {
            bail!(
                "cannot map {} MiB for the replica: {}",
                REGION >> 20,
                std::io::Error::last_os_error()
            );
        }
        let region = region as *mut u8;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let slots = REGION / ENTRY_STRIDE;
        // The context takes the first kmalloc-1k slot (two entry slots).
        let first = CONTEXT_ALIGN / ENTRY_STRIDE;
        let n = p.rules as usize;
        let choose = |cands: Vec<usize>, rng: &mut rand_pcg::Pcg64| -> Result<Vec<usize>> {
            if cands.len() < n {
                bail!(
                    "placement {}: only {} slots for {n} entries",
                    p.placement,
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
        };
        let chosen: Vec<usize> = match p.placement {
            Placement::Random => choose((first..slots).collect(), &mut rng)?,
            Placement::Packed => {
                let start = rng.random_range(first..slots - n);
                (start..start + n).collect()
            }
            Placement::Aligned(b) => {
                let step = b as usize / ENTRY_STRIDE;
                choose((first..slots).filter(|s| s % step == 0).collect(), &mut rng)?
            }
            Placement::Sets(k) => {
                let reach = layout::reachable_sets(&geometry, ENTRY_STRIDE as u64);
                if k as usize > reach.len() {
                    bail!(
                        "placement sets={k}: entries of kmalloc-512 reach only {} sets of this \
                         cache",
                        reach.len()
                    );
                }
                let allowed = &reach[..k as usize];
                let base = region as u64;
                choose(
                    (first..slots)
                        .filter(|s| {
                            allowed.contains(&geometry.set_of(base + (*s * ENTRY_STRIDE) as u64))
                        })
                        .collect(),
                    &mut rng,
                )?
            }
        };
        let ctx = region;
        let entries: Vec<usize> = chosen.iter().map(|s| s * ENTRY_STRIDE).collect();
        // Spread the matching entries evenly over the list.
        let matching: Vec<bool> = (0..n)
            .map(|i| (i * p.matching as usize) / n != ((i + 1) * p.matching as usize) / n)
            .collect();
        // SAFETY: every write is inside the mapping; entries do not overlap (distinct 512-byte
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
            (ctx.add(MAJOR_OFFSET) as *mut i32).write(p.major as i32);
            (ctx.add(SERIAL_LO_OFFSET) as *mut i32).write(1);
            let head = list as *mut *mut u8;
            head.write(at(entries[0]));
            head.add(1)
                .write(at(*entries.last().expect("at least one entry")));
        }
        Ok(Replica {
            _lock: lock,
            region,
            ctx,
            entries,
            matching: p.matching,
            geometry,
        })
    }

    /// `walks` list walks with `variant`: the walk's result and the filter calls it made.
    pub fn walk(&mut self, variant: Variant, walks: u64) -> (i32, u64) {
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
    pub fn addresses(&self) -> Vec<u64> {
        self.entries
            .iter()
            .map(|o| self.region as u64 + *o as u64)
            .collect()
    }

    /// The seed's cacheline-spread of this placement on this machine's L1, and the largest
    /// number of entry lines in one set.
    pub fn spread(&self) -> (f64, u64) {
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
        // SAFETY: unlink the list from the C global before the memory goes, then unmap.
        unsafe {
            let head = std::ptr::addr_of_mut!(replica_list) as *mut *mut u8;
            let list = head as *mut u8;
            head.write(list);
            head.add(1).write(list);
            libc::munmap(self.region as *mut libc::c_void, REGION);
        }
    }
}

/// The workload: one operation is one walk of the list.
pub struct AuditReplica {
    params: Params,
    replica: Option<Replica>,
}

impl AuditReplica {
    pub fn new(p: &Params) -> AuditReplica {
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
        vec![format!(
            "L1d {} sets x {} ways x {} B; one op is one walk of {} rules",
            g.sets, g.ways, g.line, self.params.rules
        )]
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
            major: 39,
        }
    }

    #[test]
    fn every_variant_computes_the_same_answer() {
        for placement in [Placement::Random, Placement::Packed, Placement::Sets(1)] {
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
        assert!("aligned=100".parse::<Placement>().is_err());
        assert!("sets=0".parse::<Placement>().is_err());
        assert!("lumpy".parse::<Placement>().is_err());
    }
}
