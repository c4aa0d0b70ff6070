//! CPU lists in taskset/cpuset syntax (`1`, `0-3,8`, `0-15:2`) and CPU affinity.
//!
//! The list syntax is small enough that a crate would add more than it saves; affinity goes
//! through libc's sched_{get,set}affinity directly, and a process's scheduling policy through
//! sched_getscheduler.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// A set of CPU numbers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuList(pub BTreeSet<usize>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuListError {
    #[error("CPU list is empty: give CPU numbers such as '1' or '0-3,8'")]
    Empty,
    #[error(
        "CPU list '{list}': '{part}' is not a CPU number or range (taskset syntax: 1, 0-3,8, 0-15:2)"
    )]
    Syntax { list: String, part: String },
    #[error("CPU list '{list}': range '{part}' ends before it starts")]
    Backwards { list: String, part: String },
    #[error(
        "CPU list '{list}': CPU {cpu} is beyond the largest CPU number syscost handles ({max})"
    )]
    TooLarge {
        list: String,
        cpu: usize,
        max: usize,
    },
}

const MAX_CPU: usize = 8191;

impl CpuList {
    pub fn parse(s: &str) -> Result<CpuList, CpuListError> {
        let list = s.trim();
        if list.is_empty() {
            return Err(CpuListError::Empty);
        }
        let syntax = |part: &str| CpuListError::Syntax {
            list: list.into(),
            part: part.into(),
        };
        let num = |t: &str, part: &str| -> Result<usize, CpuListError> {
            let t = t.trim();
            if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
                return Err(syntax(part));
            }
            let v: usize = t.parse().map_err(|_| syntax(part))?;
            if v > MAX_CPU {
                return Err(CpuListError::TooLarge {
                    list: list.into(),
                    cpu: v,
                    max: MAX_CPU,
                });
            }
            Ok(v)
        };
        let mut set = BTreeSet::new();
        for part in list.split(',') {
            let (range, stride) = match part.split_once(':') {
                Some((r, s)) => (r, num(s, part)?),
                None => (part, 1),
            };
            if stride == 0 {
                return Err(syntax(part));
            }
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (num(a, part)?, num(b, part)?),
                None => {
                    if part.contains(':') {
                        return Err(syntax(part));
                    }
                    let v = num(range, part)?;
                    (v, v)
                }
            };
            if hi < lo {
                return Err(CpuListError::Backwards {
                    list: list.into(),
                    part: part.into(),
                });
            }
            set.extend((lo..=hi).step_by(stride));
        }
        Ok(CpuList(set))
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// CPUs of `self` that are not in `other`.
    pub(crate) fn difference(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.difference(&other.0).copied().collect())
    }
}

impl fmt::Display for CpuList {
    /// Compact form: `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v: Vec<usize> = self.0.iter().copied().collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            parts.push(if i == j {
                v[i].to_string()
            } else {
                format!("{}-{}", v[i], v[j])
            });
            i = j + 1;
        }
        write!(f, "{}", parts.join(","))
    }
}

impl From<CpuList> for String {
    fn from(c: CpuList) -> String {
        c.to_string()
    }
}

impl TryFrom<String> for CpuList {
    type Error = CpuListError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        CpuList::parse(&s)
    }
}

/// The CPUs this process may run on (sched_getaffinity).
pub fn allowed_cpus() -> std::io::Result<CpuList> {
    affinity_of(0)
}

/// The CPUs thread `tid` (0: the calling one) may run on.
pub(crate) fn affinity_of(tid: i32) -> std::io::Result<CpuList> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        Ok(CpuList(
            (0..max).filter(|&c| libc::CPU_ISSET(c, &set)).collect(),
        ))
    }
}

/// Pin the calling thread to `cpus`.
pub(crate) fn set_affinity(cpus: &CpuList) -> std::io::Result<()> {
    set_affinity_of(0, cpus)
}

/// Pin thread `tid` (0: the calling one) to `cpus`.
pub(crate) fn set_affinity_of(tid: i32, cpus: &CpuList) -> std::io::Result<()> {
    // SAFETY: as above; CPU_SET stays within the set because `CpuList` caps CPU numbers below
    // the size of cpu_set_t (1024) only after this check.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        for c in cpus.iter() {
            if c >= max {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("CPU {c} is beyond the {max} CPUs sched_setaffinity takes here"),
                ));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU thread `tid` of process `pid` last ran on (field 39 of /proc/PID/task/TID/stat).
pub(crate) fn last_cpu_of(pid: u32, tid: i32) -> Option<usize> {
    let cpu = super::proc_stat_field(&format!("/proc/{pid}/task/{tid}/stat"), 39)?;
    usize::try_from(cpu).ok()
}

/// The CPU the calling thread runs on now.
pub(crate) fn current_cpu() -> Option<usize> {
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// Check that `wanted` (given with `flag`) is inside the allowed set; the error names the
/// CPUs that are not.
pub(crate) fn check_allowed(wanted: &CpuList, opt: crate::core::input::Opt) -> Result<(), String> {
    let flag = crate::core::input::spelled(opt);
    let allowed = allowed_cpus().map_err(|e| format!("cannot read CPU affinity: {e}"))?;
    let outside = wanted.difference(&allowed);
    if outside.is_empty() {
        return Ok(());
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Err(format!(
        "{flag} {wanted}: CPU {} not available: this process may run on CPUs {allowed} \
         (online: {online}); choose {flag} from those",
        outside
    ))
}

/// This process's scheduling policy as `ps` names it, e.g. `SCHED_FIFO 99` or `SCHED_OTHER`.
pub(crate) fn policy_of_this_process() -> String {
    // SAFETY: plain syscalls on this process with a valid pointer.
    let (policy, prio) = unsafe {
        let mut p = libc::sched_param { sched_priority: 0 };
        let policy = libc::sched_getscheduler(0);
        libc::sched_getparam(0, &mut p);
        (policy, p.sched_priority)
    };
    match policy {
        libc::SCHED_FIFO => format!("SCHED_FIFO {prio}"),
        libc::SCHED_RR => format!("SCHED_RR {prio}"),
        libc::SCHED_BATCH => "SCHED_BATCH".into(),
        libc::SCHED_IDLE => "SCHED_IDLE".into(),
        _ => "SCHED_OTHER".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_s_policy_is_named_as_ps_names_it() {
        let p = policy_of_this_process();
        assert!(p.starts_with("SCHED_"), "{p}");
    }

    fn set(v: &[usize]) -> CpuList {
        CpuList(v.iter().copied().collect())
    }

    #[test]
    fn a_thread_is_pinned_and_seen_on_its_cpu() {
        let cpu = *allowed_cpus().unwrap().0.iter().next().unwrap();
        let one = set(&[cpu]);
        let t = std::thread::spawn(move || {
            // SAFETY: gettid has no arguments.
            let tid = unsafe { libc::gettid() };
            set_affinity_of(tid, &one).unwrap();
            let spin = std::time::Instant::now();
            while spin.elapsed() < std::time::Duration::from_millis(20) {}
            (
                tid,
                affinity_of(tid).unwrap(),
                last_cpu_of(std::process::id(), tid),
            )
        });
        let (tid, affinity, last) = t.join().unwrap();
        assert!(tid > 0);
        assert_eq!(affinity, set(&[cpu]));
        assert_eq!(last, Some(cpu));
        assert_eq!(last_cpu_of(std::process::id(), i32::MAX), None);
    }

    #[test]
    fn taskset_syntax() {
        assert_eq!(CpuList::parse("1").unwrap(), set(&[1]));
        assert_eq!(CpuList::parse("0-3,8").unwrap(), set(&[0, 1, 2, 3, 8]));
        assert_eq!(CpuList::parse("0-9:3").unwrap(), set(&[0, 3, 6, 9]));
        assert_eq!(CpuList::parse(" 2 , 1 ").unwrap(), set(&[1, 2]));
        assert_eq!(CpuList::parse("3,3").unwrap(), set(&[3]));
    }

    #[test]
    fn bad_lists() {
        assert_eq!(CpuList::parse(""), Err(CpuListError::Empty));
        assert!(matches!(
            CpuList::parse("a"),
            Err(CpuListError::Syntax { .. })
        ));
        assert!(matches!(
            CpuList::parse("-1"),
            Err(CpuListError::Syntax { .. })
        ));
        assert!(matches!(
            CpuList::parse("1,"),
            Err(CpuListError::Syntax { .. })
        ));
        assert!(matches!(
            CpuList::parse("0-3:0"),
            Err(CpuListError::Syntax { .. })
        ));
        assert!(matches!(
            CpuList::parse("3:2"),
            Err(CpuListError::Syntax { .. })
        ));
        assert!(matches!(
            CpuList::parse("5-2"),
            Err(CpuListError::Backwards { .. })
        ));
        assert!(matches!(
            CpuList::parse("99999"),
            Err(CpuListError::TooLarge { .. })
        ));
    }

    #[test]
    fn display_is_compact_and_round_trips() {
        let l = CpuList::parse("8,0-3,5").unwrap();
        assert_eq!(l.to_string(), "0-3,5,8");
        assert_eq!(CpuList::parse(&l.to_string()).unwrap(), l);
    }

    #[test]
    fn allowed_set_is_nonempty_and_checked() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        assert!(check_allowed(&allowed, crate::core::input::Opt::Cpu).is_ok());
        let msg = check_allowed(&set(&[4000]), crate::core::input::Opt::Cpu).unwrap_err();
        assert!(msg.contains("4000") && msg.contains("--cpu"), "{msg}");
    }
}
