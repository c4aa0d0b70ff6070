//! Performance counters: open perf_event_open groups for the calling thread and read them with
//! `time_enabled`/`time_running`, so multiplexed counts can be scaled the way perf stat does.
//!
//! An event the machine cannot count is never reported as zero: it carries an [`EventStatus`]
//! that says why (no PMU, not permitted, rejected), and its samples hold no value.

mod decode;
pub(crate) mod emulated;
pub(crate) mod events;

pub use crate::core::perf::{hardware_pmu_present, perf_event_paranoid};
pub use events::{EventList, EventSpec, default_events, parse_event_list};

use perf_event::{Builder, Counter, ReadFormat};
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
    pub(crate) fn is_counting(&self) -> bool {
        matches!(self, EventStatus::Counting)
    }

    /// The short label perf prints in place of a value.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            EventStatus::Counting => "counting",
            EventStatus::NotSupported(_) => "<not supported>",
            EventStatus::NotPermitted(_) => "<not permitted>",
            EventStatus::Failed(_) => "<failed>",
        }
    }

    pub(crate) fn reason(&self) -> Option<&str> {
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
    pub(crate) fn since(&self, before: &RawCount) -> RawCount {
        RawCount {
            value: self.value.wrapping_sub(before.value),
            enabled: self.enabled.wrapping_sub(before.enabled),
            running: self.running.wrapping_sub(before.running),
        }
    }

    /// The value scaled for multiplexing (`value * enabled / running`), as perf stat does.
    /// `None` when the counter never ran in the interval ("not counted").
    pub(crate) fn scaled(&self) -> Option<f64> {
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
    /// The first event of the group that opened; it reads the whole group.
    leader: Counter,
    /// (index into the flat event list, counter); the leader is the first entry.
    members: Vec<(usize, Option<Counter>)>,
}

/// Counters for the calling thread (and, with `inherit`, the children it creates afterwards).
pub(crate) struct CounterSet {
    groups: Vec<OpenGroup>,
    statuses: Vec<EventStatus>,
}

/// Options for opening counters.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpenOptions {
    /// Count the children the thread creates after opening (for whole-command workloads).
    pub inherit: bool,
}

fn builder<'a>(spec: &'a EventSpec, opts: OpenOptions) -> Builder<'a> {
    let mut b = Builder::new(Attr(spec));
    b.inherit(opts.inherit)
        .exclude_user(spec.exclude_user)
        .exclude_kernel(spec.exclude_kernel)
        .exclude_hv(true)
        .read_format(
            ReadFormat::GROUP
                | ReadFormat::TOTAL_TIME_ENABLED
                | ReadFormat::TOTAL_TIME_RUNNING
                | ReadFormat::ID,
        );
    b
}

impl CounterSet {
    /// Open every event of `events`, group by group, the way perf does: the first event of a
    /// group that the kernel accepts leads it and the others join it. This never fails as a
    /// whole: an event that cannot be opened gets a status saying why, and the rest are
    /// counted.
    ///
    /// The clock events (task-clock, cpu-clock) are always opened as groups of their own. On
    /// this project's test kernel (6.18) they do not share a group correctly with the other
    /// software events, in either direction: under a clock leader, page-faults read 0 for 1024
    /// faults; under any other leader (perf-event2's `Group` puts a `dummy` there), task-clock
    /// read 0 or a fraction of the truth; each alone read exactly (trials here). Software
    /// events are never multiplexed, so counting a clock apart loses nothing. perf-event2's
    /// `Group` is not used for the same reason.
    pub(crate) fn open(events: &EventList, opts: OpenOptions) -> CounterSet {
        let mut set = CounterSet {
            groups: Vec::new(),
            statuses: vec![EventStatus::Counting; events.len()],
        };
        let mut index = 0usize;
        for specs in &events.groups {
            let indexed: Vec<(usize, &EventSpec)> = specs
                .iter()
                .enumerate()
                .map(|(i, s)| (index + i, s))
                .collect();
            let (clocks, others): (Vec<_>, Vec<_>) =
                indexed.into_iter().partition(|(_, s)| is_clock(s));
            for c in clocks {
                set.open_group(&[c], opts);
            }
            set.open_group(&others, opts);
            index += specs.len();
        }
        set
    }

    fn open_group(&mut self, specs: &[(usize, &EventSpec)], opts: OpenOptions) {
        let mut leader: Option<Counter> = None;
        let mut members = Vec::new();
        for &(index, spec) in specs {
            let b = builder(spec, opts);
            let opened = match leader.as_mut() {
                None => b.build(),
                Some(l) => b.build_with_group(l),
            };
            self.statuses[index] = match opened {
                Ok(c) => {
                    if leader.is_none() {
                        leader = Some(c);
                        members.push((index, None));
                    } else {
                        members.push((index, Some(c)));
                    }
                    EventStatus::Counting
                }
                Err(e) => classify(&e, Some(spec)),
            };
        }
        if let Some(leader) = leader {
            self.groups.push(OpenGroup { leader, members });
        }
    }

    /// One status per event, in the order of the event list.
    pub(crate) fn statuses(&self) -> &[EventStatus] {
        &self.statuses
    }

    /// Start counting.
    pub(crate) fn enable(&mut self) -> io::Result<()> {
        for g in &mut self.groups {
            g.leader.enable_group()?;
        }
        Ok(())
    }

    /// Stop counting.
    pub(crate) fn disable(&mut self) -> io::Result<()> {
        for g in &mut self.groups {
            g.leader.disable_group()?;
        }
        Ok(())
    }

    /// Read every counting event into `out` (one slot per event; events not counting are left
    /// `None`). One read(2) per group.
    pub(crate) fn read_into(&mut self, out: &mut [Option<RawCount>]) -> io::Result<()> {
        for g in &mut self.groups {
            let data = g.leader.read_group()?;
            let enabled = data
                .time_enabled()
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let running = data
                .time_running()
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            for (idx, counter) in &g.members {
                let counter = counter.as_ref().unwrap_or(&g.leader);
                // An entry missing from the kernel's answer is "not counted", never zero.
                out[*idx] = data.get(counter).map(|e| RawCount {
                    value: e.value(),
                    enabled,
                    running,
                });
            }
        }
        Ok(())
    }

    /// Number of events (counting or not).
    pub(crate) fn len(&self) -> usize {
        self.statuses.len()
    }
}

/// task-clock and cpu-clock: always a group of their own (see [`CounterSet::open`]).
fn is_clock(spec: &EventSpec) -> bool {
    spec.type_ == events::PERF_TYPE_SOFTWARE && (spec.config == 0 || spec.config == 1)
}

/// Why an event could not be opened. The reason does not repeat the event's name (the table
/// row that shows it names the event), so events refused for one reason share one footnote.
fn classify(e: &io::Error, spec: Option<&EventSpec>) -> EventStatus {
    let errno = e.raw_os_error().unwrap_or(0);
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
            EventStatus::NotPermitted(format!("{paranoid}; {hint} ({e})"))
        }
        libc::EINVAL => EventStatus::NotSupported(format!(
            "the kernel rejected the event on this machine: perf_event_open returned {e}"
        )),
        libc::EMFILE => EventStatus::Failed(format!("out of file descriptors (ulimit -n): {e}")),
        _ => EventStatus::Failed(format!("perf_event_open failed: {e}")),
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
    fn task_clock_is_right_in_every_group_a_process_opens() {
        // Grouped with another software event, task-clock misread on the test kernel, from the
        // third group a process opened on: open several in turn.
        for round in 0..5 {
            let events =
                parse_event_list(&["{context-switches,task-clock,page-faults}", "cpu-clock"])
                    .unwrap();
            let mut set = CounterSet::open(&events, OpenOptions::default());
            if !set.statuses().iter().all(|s| s.is_counting()) {
                eprintln!("skipped: perf events unavailable: {:?}", set.statuses());
                return;
            }
            set.enable().unwrap();
            let mut a = vec![None; 4];
            let mut b = vec![None; 4];
            set.read_into(&mut a).unwrap();
            let mut x = 0u64;
            for i in 0..3_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            set.read_into(&mut b).unwrap();
            let task = b[1].unwrap().since(&a[1].unwrap());
            let cpu = b[3].unwrap().since(&a[3].unwrap());
            let ratio = task.value as f64 / cpu.value as f64;
            assert!(
                (0.8..1.25).contains(&ratio),
                "round {round}: task-clock {task:?} against cpu-clock {cpu:?}"
            );
        }
    }

    #[test]
    fn software_counters_count_this_thread() {
        // Grouped as the user wrote it; the clock is split off internally.
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
        // A fresh anonymous mapping: malloc could hand back memory already faulted in.
        let len = 4 << 20;
        // SAFETY: anonymous private mapping, written within its length, then unmapped.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            ) as *mut u8;
            assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
            for off in (0..len).step_by(4096) {
                std::ptr::write_volatile(p.add(off), 1);
            }
            libc::munmap(p as *mut libc::c_void, len);
        }
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        set.read_into(&mut b).unwrap();
        let clock = b[0].unwrap().since(&a[0].unwrap());
        assert!(
            clock.value as f64 > 0.5 * clock.enabled as f64,
            "a busy thread's task-clock follows the enabled time: {clock:?}"
        );
        assert_eq!(
            clock.enabled, clock.running,
            "software events are never multiplexed"
        );
        let faults = b[1].unwrap().since(&a[1].unwrap());
        assert!(
            faults.value >= 1024,
            "touching 1024 fresh pages faults each in: {faults:?}"
        );
    }
}
