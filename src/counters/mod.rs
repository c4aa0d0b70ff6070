//! Performance counters: open perf_event_open groups for the calling thread and read them with
//! `time_enabled`/`time_running`, so multiplexed counts can be scaled the way perf stat does.
//!
//! An event the machine cannot count is never reported as zero: it carries an [`EventStatus`]
//! that says why (no PMU, not permitted, rejected), and its samples hold no value.

pub mod events;

pub use events::{EventList, EventSpec, default_events, parse_event_list};

use perf_event::{Builder, Counter, Group};
use perf_event_open_sys::bindings::perf_event_attr;
use serde::{Deserialize, Serialize};
use std::io;

/// Whether an event is being counted, and if not, why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "reason", rename_all = "kebab-case")]
pub enum EventStatus {
    Counting,
    /// The kernel has no such event on this machine (no hardware PMU, or the PMU lacks it).
    NotSupported(String),
    /// The event exists but this process may not open it.
    NotPermitted(String),
    /// Any other failure of perf_event_open.
    Failed(String),
}

impl EventStatus {
    pub fn is_counting(&self) -> bool {
        matches!(self, EventStatus::Counting)
    }

    /// The short label perf prints in place of a value.
    pub fn label(&self) -> &'static str {
        match self {
            EventStatus::Counting => "counting",
            EventStatus::NotSupported(_) => "<not supported>",
            EventStatus::NotPermitted(_) => "<not permitted>",
            EventStatus::Failed(_) => "<failed>",
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            EventStatus::Counting => None,
            EventStatus::NotSupported(r)
            | EventStatus::NotPermitted(r)
            | EventStatus::Failed(r) => Some(r),
        }
    }
}

/// One reading of one counter: its value and the group's enabled and running times (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawCount {
    pub value: u64,
    pub enabled: u64,
    pub running: u64,
}

impl RawCount {
    /// The counts between two readings.
    pub fn since(&self, before: &RawCount) -> RawCount {
        RawCount {
            value: self.value.wrapping_sub(before.value),
            enabled: self.enabled.wrapping_sub(before.enabled),
            running: self.running.wrapping_sub(before.running),
        }
    }

    /// The value scaled for multiplexing (`value * enabled / running`), as perf stat does.
    /// `None` when the counter never ran in the interval ("not counted").
    pub fn scaled(&self) -> Option<f64> {
        if self.running == 0 {
            if self.enabled == 0 && self.value == 0 {
                // An empty interval: nothing happened and nothing was missed.
                return Some(0.0);
            }
            return None;
        }
        Some(self.value as f64 * self.enabled as f64 / self.running as f64)
    }
}

/// A perf event as syscost describes it, handed to perf-event2's builder.
struct Attr<'a>(&'a EventSpec);

impl perf_event::events::Event for Attr<'_> {
    fn update_attrs(self, attr: &mut perf_event_attr) {
        attr.type_ = self.0.type_;
        attr.config = self.0.config;
    }
}

struct OpenGroup {
    group: Group,
    /// (index into the flat event list, counter)
    members: Vec<(usize, Counter)>,
}

/// Counters for the calling thread (and, with `inherit`, the children it creates afterwards).
pub struct CounterSet {
    groups: Vec<OpenGroup>,
    statuses: Vec<EventStatus>,
}

/// Options for opening counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// Count the children the thread creates after opening (for whole-command workloads).
    pub inherit: bool,
}

impl CounterSet {
    /// Open every event of `events`. This never fails as a whole: an event that cannot be opened
    /// gets a status saying why, and the rest are counted.
    pub fn open(events: &EventList, opts: OpenOptions) -> CounterSet {
        let mut groups = Vec::new();
        let mut statuses = Vec::new();
        let mut index = 0usize;
        for specs in &events.groups {
            // The leader is a software dummy that counts nothing; it excludes the kernel so an
            // unprivileged user (perf_event_paranoid 2) can still open `:u` members under it.
            let leader = Group::builder().inherit(opts.inherit).build_group();
            let mut group = match leader {
                Ok(g) => Some(g),
                Err(e) => {
                    // The group leader is a software dummy event: if even that fails, perf
                    // events as a whole are unavailable to this process.
                    for _ in specs {
                        statuses.push(classify(&e, None));
                        index += 1;
                    }
                    None
                }
            };
            let Some(g) = group.as_mut() else { continue };
            let mut members = Vec::new();
            for spec in specs {
                let mut b = Builder::new(Attr(spec));
                b.inherit(opts.inherit)
                    .exclude_user(spec.exclude_user)
                    .exclude_kernel(spec.exclude_kernel)
                    .exclude_hv(true);
                match g.add(&b) {
                    Ok(c) => {
                        statuses.push(EventStatus::Counting);
                        members.push((index, c));
                    }
                    Err(e) => statuses.push(classify(&e, Some(spec))),
                }
                index += 1;
            }
            if let Some(group) = group
                && !members.is_empty()
            {
                groups.push(OpenGroup { group, members });
            }
        }
        CounterSet { groups, statuses }
    }

    /// One status per event, in the order of the event list.
    pub fn statuses(&self) -> &[EventStatus] {
        &self.statuses
    }

    /// Start counting.
    pub fn enable(&mut self) -> io::Result<()> {
        for g in &mut self.groups {
            g.group.enable()?;
        }
        Ok(())
    }

    /// Stop counting.
    pub fn disable(&mut self) -> io::Result<()> {
        for g in &mut self.groups {
            g.group.disable()?;
        }
        Ok(())
    }

    /// Read every counting event into `out` (one slot per event; events not counting are left
    /// `None`). One read(2) per group.
    pub fn read_into(&mut self, out: &mut [Option<RawCount>]) -> io::Result<()> {
        for g in &mut self.groups {
            let data = g.group.read()?;
            let enabled = data
                .time_enabled()
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let running = data
                .time_running()
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            for (idx, counter) in &g.members {
                let value = data.get(counter).map(|e| e.value()).unwrap_or(0);
                out[*idx] = Some(RawCount {
                    value,
                    enabled,
                    running,
                });
            }
        }
        Ok(())
    }

    /// Number of events (counting or not).
    pub fn len(&self) -> usize {
        self.statuses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.statuses.is_empty()
    }
}

/// The current `kernel.perf_event_paranoid`, if readable.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// True when the kernel exposes a hardware PMU for the CPU (`cpu`, or `cpu_core`/`cpu_atom` on
/// hybrid parts) under /sys/bus/event_source/devices.
pub fn hardware_pmu_present() -> bool {
    [
        "cpu",
        "cpu_core",
        "cpu_atom",
        "armv8_pmuv3",
        "armv8_pmuv3_0",
    ]
    .iter()
    .any(|d| {
        std::path::Path::new("/sys/bus/event_source/devices")
            .join(d)
            .exists()
    })
}

fn classify(e: &io::Error, spec: Option<&EventSpec>) -> EventStatus {
    let errno = e.raw_os_error().unwrap_or(0);
    let what = spec.map(|s| s.name.as_str()).unwrap_or("perf events");
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            let why = if spec.is_some_and(|s| !s.is_software()) && !hardware_pmu_present() {
                "no hardware PMU on this machine (a VM without a virtual PMU?)"
            } else {
                "the kernel has no such event for this CPU"
            };
            EventStatus::NotSupported(format!("{why}: perf_event_open returned {e}"))
        }
        libc::EACCES | libc::EPERM => {
            let paranoid = perf_event_paranoid()
                .map(|p| format!("kernel.perf_event_paranoid is {p}"))
                .unwrap_or_else(|| "kernel.perf_event_paranoid is unreadable".into());
            let counts_kernel = spec.is_none_or(|s| !s.exclude_kernel);
            let hint = if counts_kernel {
                "counting kernel execution needs CAP_PERFMON (or CAP_SYS_ADMIN) or \
                 perf_event_paranoid <= 1 (sysctl kernel.perf_event_paranoid=1); \
                 add ':u' to count user space only"
            } else {
                "needs CAP_PERFMON (or CAP_SYS_ADMIN) or perf_event_paranoid <= 2"
            };
            EventStatus::NotPermitted(format!("{what}: {paranoid}; {hint} ({e})"))
        }
        libc::EINVAL => EventStatus::NotSupported(format!(
            "the kernel rejected {what} on this machine: perf_event_open returned {e}"
        )),
        libc::EMFILE => {
            EventStatus::Failed(format!("{what}: out of file descriptors (ulimit -n): {e}"))
        }
        _ => EventStatus::Failed(format!("{what}: perf_event_open failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_like_perf() {
        let c = RawCount {
            value: 100,
            enabled: 1000,
            running: 250,
        };
        assert_eq!(c.scaled(), Some(400.0));
        let never = RawCount {
            value: 0,
            enabled: 1000,
            running: 0,
        };
        assert_eq!(never.scaled(), None, "a counter that never ran is not zero");
        assert_eq!(RawCount::default().scaled(), Some(0.0));
    }

    #[test]
    fn deltas_wrap() {
        let a = RawCount {
            value: 10,
            enabled: 5,
            running: 5,
        };
        let b = RawCount {
            value: 25,
            enabled: 9,
            running: 7,
        };
        assert_eq!(
            b.since(&a),
            RawCount {
                value: 15,
                enabled: 4,
                running: 2
            }
        );
    }

    #[test]
    fn software_counters_count_this_thread() {
        let events = parse_event_list(&["{task-clock,page-faults}"]).unwrap();
        let mut set = CounterSet::open(&events, OpenOptions::default());
        if !set.statuses()[0].is_counting() {
            eprintln!(
                "skipped: perf events unavailable here: {:?}",
                set.statuses()[0]
            );
            return;
        }
        set.enable().unwrap();
        let mut a = vec![None; 2];
        let mut b = vec![None; 2];
        set.read_into(&mut a).unwrap();
        let v: Vec<u8> = vec![1; 1 << 22];
        std::hint::black_box(&v);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        set.read_into(&mut b).unwrap();
        let clock = b[0].unwrap().since(&a[0].unwrap());
        assert!(clock.value > 0, "task-clock advanced");
        assert_eq!(
            clock.enabled, clock.running,
            "software events are never multiplexed"
        );
        let faults = b[1].unwrap().since(&a[1].unwrap());
        assert!(faults.value > 0, "touching 4 MiB faults pages in");
    }
}
