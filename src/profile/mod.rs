//! Where the time goes: on-CPU sampling with perf_event_open (cycles where a PMU exists,
//! cpu-clock where it does not, as in VMs), kernel and user call chains, resolved to function
//! names and folded into a flat profile (self and total share per function).
//!
//! The profile is taken in a run of its own after the measured runs, so its sampling
//! interrupts never perturb the figures the statistics use.

pub mod symbols;

use anyhow::{Context, Result};
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, SampleFlag, Sampler};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use symbols::{Kallsyms, Mapping, UserSymbols};

/// Sampling period of cpu-clock: 4 kHz, perf record's default rate.
const CPU_CLOCK_PERIOD_NS: u64 = 250_000;
/// Sampling frequency where cycles can be sampled.
const CYCLES_FREQ: u64 = 4000;
/// Ring buffer size: room for many thousand call chains between two drains.
const RING_BYTES: usize = 8 << 20;
/// Functions kept in a result.
const KEEP: usize = 200;
/// Markers perf puts into call chains (PERF_CONTEXT_*), all above this value.
const CONTEXT_MARKERS: u64 = u64::MAX - 4095;

/// One function's share of the samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionShare {
    pub name: String,
    /// `kernel` or `user`.
    pub space: String,
    /// Samples with this function at the top of the stack.
    pub self_samples: u64,
    /// Samples with this function anywhere on the stack.
    pub total_samples: u64,
    pub self_pct: f64,
    pub total_pct: f64,
}

/// A flat profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// What was sampled, e.g. `cpu-clock every 250000 ns`.
    pub event: String,
    pub samples: u64,
    /// Samples the kernel dropped (ring buffer full).
    pub lost: u64,
    /// The functions with the most samples, by self share.
    pub functions: Vec<FunctionShare>,
    /// What limited the profile (hidden kernel symbols, user-space only, ...).
    pub notes: Vec<String>,
}

/// A running sampler and the raw call chains it has collected.
pub(crate) struct Recorder {
    sampler: Sampler,
    event: String,
    notes: Vec<String>,
    /// (pid, call chain) -> samples
    chains: HashMap<(u32, Vec<u64>), u64>,
    mappings: Vec<(u32, Mapping)>,
    lost: u64,
}

fn builder_for(hardware: bool, kernel: bool, inherit: bool) -> Builder<'static> {
    let mut b = if hardware {
        let mut b = Builder::new(Hardware::CPU_CYCLES);
        b.sample_frequency(CYCLES_FREQ);
        b
    } else {
        let mut b = Builder::new(Software::CPU_CLOCK);
        b.sample_period(CPU_CLOCK_PERIOD_NS);
        b
    };
    b.sample(SampleFlag::IP | SampleFlag::TID | SampleFlag::CALLCHAIN)
        .exclude_kernel(!kernel)
        .exclude_hv(true)
        .inherit(inherit)
        .mmap(true)
        .mmap2(true)
        .sample_id_all(true);
    b
}

impl Recorder {
    /// Start sampling the calling thread (and, with `inherit`, the processes it starts).
    pub(crate) fn start(inherit: bool) -> Result<Recorder> {
        let mut notes = Vec::new();
        let mut attempt = None;
        'found: for hardware in [true, false] {
            for kernel in [true, false] {
                if let Ok(c) = builder_for(hardware, kernel, inherit).build() {
                    attempt = Some((c, hardware, kernel));
                    break 'found;
                }
            }
        }
        let (counter, hardware, kernel) = attempt.ok_or_else(|| {
            anyhow::anyhow!(
                "cannot sample on-CPU time: perf_event_open refused cpu-clock sampling \
                 (kernel.perf_event_paranoid={}; needs CAP_PERFMON or a lower setting)",
                crate::core::perf::perf_event_paranoid()
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "?".into())
            )
        })?;
        if !kernel {
            notes.push(format!(
                "kernel frames not sampled: kernel.perf_event_paranoid={} hides the kernel from \
                 this user (needs <= 1, or CAP_PERFMON)",
                crate::core::perf::perf_event_paranoid()
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "?".into())
            ));
        }
        let event = if hardware {
            format!("cycles at {CYCLES_FREQ} Hz")
        } else {
            format!("cpu-clock every {CPU_CLOCK_PERIOD_NS} ns (no hardware PMU)")
        };
        let mut sampler = counter
            .sampled(RING_BYTES)
            .context("cannot map the sampling ring buffer")?;
        sampler.enable().context("cannot start sampling")?;
        Ok(Recorder {
            sampler,
            event,
            notes,
            chains: HashMap::new(),
            mappings: Vec::new(),
            lost: 0,
        })
    }

    /// Move the samples out of the ring buffer (call between timed batches).
    pub(crate) fn drain(&mut self) {
        use perf_event::data::Record as R;
        while let Some(rec) = self.sampler.next_record() {
            match rec.parse_record() {
                Ok(R::Sample(s)) => {
                    let pid = s.pid().unwrap_or(0);
                    let chain = match s.callchain() {
                        Some(c) => c.to_vec(),
                        None => s.ip().into_iter().collect(),
                    };
                    *self.chains.entry((pid, chain)).or_insert(0) += 1;
                }
                Ok(R::Mmap(m)) => self.mappings.push((
                    m.pid,
                    Mapping {
                        start: m.addr,
                        end: m.addr + m.len,
                        offset: m.pgoff,
                        path: String::from_utf8_lossy(&m.filename).into_owned(),
                    },
                )),
                Ok(R::Mmap2(m2)) => {
                    let m = m2.to_mmap();
                    self.mappings.push((
                        m.pid,
                        Mapping {
                            start: m.addr,
                            end: m.addr + m.len,
                            offset: m.pgoff,
                            path: String::from_utf8_lossy(&m.filename).into_owned(),
                        },
                    ));
                }
                Ok(R::Lost(l)) => self.lost += l.lost,
                _ => {}
            }
        }
    }

    /// Stop sampling and fold the chains into a flat profile.
    pub(crate) fn finish(mut self) -> Profile {
        let _ = self.sampler.disable();
        self.drain();
        let kernel = Kallsyms::load();
        let mut notes = self.notes;
        if let Some(h) = &kernel.hidden {
            notes.push(h.clone());
        }
        let mut user = UserSymbols::default();
        let me = std::process::id();
        for m in symbols::maps_of(me) {
            user.add_mapping(me, m);
        }
        for (pid, m) in self.mappings {
            user.add_mapping(pid, m);
        }
        let (selfs, totals, samples) = fold(self.chains, &kernel, &mut user);
        let mut functions = shares(&selfs, totals, samples);
        functions.sort_by(|a, b| {
            b.self_samples
                .cmp(&a.self_samples)
                .then(b.total_samples.cmp(&a.total_samples))
                .then(a.name.cmp(&b.name))
        });
        functions.truncate(KEEP);
        if self.lost > 0 {
            notes.push(format!(
                "{} samples were lost (ring buffer full)",
                self.lost
            ));
        }
        Profile {
            event: self.event,
            samples,
            lost: self.lost,
            functions,
            notes,
        }
    }
}

/// A function's samples: (name, "kernel" or "user").
type Frame = (String, &'static str);

/// The sampled call chains, by process, folded into each function's samples as the leaf
/// (self) and anywhere in the chain (total, once a chain), and the samples in all.
fn fold(
    chains: HashMap<(u32, Vec<u64>), u64>,
    kernel: &Kallsyms,
    user: &mut UserSymbols,
) -> (HashMap<Frame, u64>, HashMap<Frame, u64>, u64) {
    let mut selfs: HashMap<Frame, u64> = HashMap::new();
    let mut totals: HashMap<Frame, u64> = HashMap::new();
    let mut samples = 0u64;
    for ((pid, chain), n) in chains {
        samples += n;
        let mut kernel_ctx = true;
        let mut seen = HashSet::new();
        let mut leaf = true;
        for addr in chain {
            if addr >= CONTEXT_MARKERS {
                // PERF_CONTEXT_KERNEL is -128, PERF_CONTEXT_USER -512.
                kernel_ctx = addr == (-128i64) as u64;
                continue;
            }
            let frame = if kernel_ctx && addr >= 0xffff_8000_0000_0000 {
                let name = kernel.resolve(addr).map(String::from);
                (name.unwrap_or_else(|| "[kernel]".into()), "kernel")
            } else {
                let name = user.resolve(pid, addr);
                (name.unwrap_or_else(|| "[unknown]".into()), "user")
            };
            if leaf {
                *selfs.entry(frame.clone()).or_insert(0) += n;
                leaf = false;
            }
            if seen.insert(frame.clone()) {
                *totals.entry(frame).or_insert(0) += n;
            }
        }
    }
    (selfs, totals, samples)
}

/// Each function's share of `samples`, self and total, unordered.
fn shares(
    selfs: &HashMap<Frame, u64>,
    totals: HashMap<Frame, u64>,
    samples: u64,
) -> Vec<FunctionShare> {
    let pct = |x: u64| {
        if samples == 0 {
            0.0
        } else {
            100.0 * x as f64 / samples as f64
        }
    };
    totals
        .into_iter()
        .map(|((name, space), total)| {
            let s = selfs.get(&(name.clone(), space)).copied().unwrap_or(0);
            FunctionShare {
                name,
                space: space.to_string(),
                self_samples: s,
                total_samples: total,
                self_pct: pct(s),
                total_pct: pct(total),
            }
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    /// `n` turns of a loop that calls nothing, in any build: a Rust loop's iterator and
    /// black_box are functions of their own in a debug build, and took most of the samples.
    #[cfg(target_arch = "x86_64")]
    #[inline(never)]
    fn spin_for_the_profiler(n: u64) {
        // SAFETY: counts a register down to zero; touches no memory.
        unsafe {
            std::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) n => _, options(nomem, nostack));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_busy_function_leads_the_profile() {
        let r = match Recorder::start(false) {
            Ok(r) => r,
            Err(e) => {
                println!("skipped: {e:#}");
                return;
            }
        };
        spin_for_the_profiler(1_000_000_000);
        let p = r.finish();
        assert!(p.samples > 20, "{} samples", p.samples);
        let top = &p.functions[0];
        assert!(
            top.name.contains("spin_for_the_profiler"),
            "{:?}",
            &p.functions[..3]
        );
        assert!(top.self_pct > 50.0);
        assert!(p.functions.iter().all(|f| f.total_pct >= f.self_pct));
    }
}
