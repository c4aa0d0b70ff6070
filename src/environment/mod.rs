//! What makes two results comparable: kernel, configuration, CPU, caches, frequency policy,
//! clock, isolation, audit and perf settings. Collected by `syscost env` and embedded in every
//! result, with warnings for a set-up that adds noise (in the spirit of `pyperf system show`).
//!
//! Every field is best effort: a value that cannot be read is `None` and never stops a run.

use crate::audit;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::Path;

pub(crate) use crate::core::caches::Cache;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    pub model_name: Option<String>,
    pub vendor: Option<String>,
    pub family: Option<String>,
    pub model: Option<String>,
    pub stepping: Option<String>,
    pub microcode: Option<String>,
    /// The `hypervisor` cpuinfo flag: running in a virtual machine.
    pub virtualized: bool,
    pub online: Option<String>,
    /// SMT (hyper-threading) active.
    pub smt_active: Option<bool>,
    /// Scaling governors in use, with the CPUs using each.
    pub governors: BTreeMap<String, String>,
    /// Turbo/boost: `Some(true)` when enabled.
    pub boost: Option<bool>,
    pub caches: Vec<Cache>,
}

/// The audit subsystem's state, or why it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Audit {
    pub status: Option<audit::AuditStatus>,
    pub error: Option<String>,
    /// Known: audit has been enabled in this boot, so new processes carry per-task audit work
    /// even with audit off (the residue). Only knowable when audit is on now or syscost
    /// enabled it; otherwise `None` (measure with `syscost audit residue`).
    #[serde(default)]
    pub residue: Option<bool>,
    /// syscost rules whose owner is gone (a killed sweep).
    #[serde(default)]
    pub leftover_rules: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: Option<String>,
    /// /proc/sys/kernel/random/boot_id: tells results of one boot from another.
    #[serde(default)]
    pub boot_id: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub machine: Option<String>,
    pub cmdline: Option<String>,
    /// Where the kernel configuration was read from.
    pub config_source: Option<String>,
    /// Selected kernel configuration options (absent: not set).
    pub config: BTreeMap<String, String>,
    pub cpu: Cpu,
    /// Per-vulnerability mitigation state from sysfs.
    pub vulnerabilities: BTreeMap<String, String>,
    pub clocksource: Option<String>,
    pub isolated_cpus: Option<String>,
    pub nohz_full: Option<String>,
    pub audit: Audit,
    pub perf_event_paranoid: Option<i32>,
    pub kptr_restrict: Option<i32>,
    pub perf_event_max_sample_rate: Option<u64>,
    pub hardware_pmu: bool,
    /// sched_rt_runtime_us / sched_rt_period_us: how long SCHED_FIFO may run per period.
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
    pub loadavg: Option<String>,
    pub aslr: Option<i32>,
    pub warnings: Vec<String>,
}

/// The configuration options `syscost env` reports.
const CONFIG_KEYS: &[&str] = &[
    "CONFIG_FUNCTION_ALIGNMENT",
    "CONFIG_AUDIT",
    "CONFIG_AUDITSYSCALL",
    "CONFIG_PREEMPT",
    "CONFIG_PREEMPT_VOLUNTARY",
    "CONFIG_PREEMPT_NONE",
    "CONFIG_PREEMPT_DYNAMIC",
    "CONFIG_PREEMPT_RT",
    "CONFIG_HZ",
    "CONFIG_NO_HZ_FULL",
    "CONFIG_CPU_MITIGATIONS",
    "CONFIG_SPECULATION_MITIGATIONS",
    "CONFIG_MITIGATION_PAGE_TABLE_ISOLATION",
    "CONFIG_PAGE_TABLE_ISOLATION",
    "CONFIG_MITIGATION_RETPOLINE",
    "CONFIG_RETPOLINE",
    "CONFIG_MITIGATION_RETHUNK",
    "CONFIG_MITIGATION_IBRS_ENTRY",
    "CONFIG_MITIGATION_SRSO",
    "CONFIG_SLUB",
    "CONFIG_SLAB_FREELIST_RANDOM",
    "CONFIG_RANDOMIZE_BASE",
    "CONFIG_UPROBES",
    "CONFIG_UPROBE_EVENTS",
    "CONFIG_BPF_SYSCALL",
    "CONFIG_DEBUG_INFO_BTF",
    "CONFIG_KPROBES",
    "CONFIG_PERF_EVENTS",
];

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_num<T: std::str::FromStr>(path: impl AsRef<Path>) -> Option<T> {
    read(path).and_then(|s| s.parse().ok())
}

/// Parse `KEY=value` lines of a kernel .config, keeping `keys`.
pub(crate) fn parse_config(text: &str, keys: &[&str]) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| keys.contains(k))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

fn kernel_config(release: Option<&str>) -> (Option<String>, BTreeMap<String, String>) {
    if let Ok(f) = fs::File::open("/proc/config.gz") {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .is_ok()
        {
            return (
                Some("/proc/config.gz".into()),
                parse_config(&text, CONFIG_KEYS),
            );
        }
    }
    if let Some(r) = release {
        let p = format!("/boot/config-{r}");
        if let Some(text) = read(&p) {
            return (Some(p), parse_config(&text, CONFIG_KEYS));
        }
    }
    (None, BTreeMap::new())
}

/// First value of `key` in /proc/cpuinfo text.
fn cpuinfo_field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_string())
}

/// Audit status, read-only: leftovers are counted, not removed.
fn audit_state() -> Audit {
    let marker = Path::new(audit::session::ENABLED_MARKER).exists();
    let mut sock = match audit::AuditSocket::open() {
        Ok(s) => s,
        Err(e) => {
            return Audit {
                error: Some(format!("{e:#}")),
                residue: marker.then_some(true),
                ..Audit::default()
            };
        }
    };
    match sock.status() {
        Ok(s) => {
            let leftover_rules = sock
                .list_rules()
                .map(|rules| {
                    rules
                        .iter()
                        .filter(|r| {
                            r.key_starting(audit::session::KEY_PREFIX)
                                .and_then(audit::session::owner_of)
                                .is_some_and(|(p, st)| !audit::session::alive(p, st))
                        })
                        .count()
                })
                .unwrap_or(0);
            Audit {
                residue: (s.enabled != 0 || marker).then_some(true),
                status: Some(s),
                error: None,
                leftover_rules,
            }
        }
        Err(e) => Audit {
            error: Some(format!("{e:#}")),
            residue: marker.then_some(true),
            ..Audit::default()
        },
    }
}

fn governors() -> BTreeMap<String, String> {
    let mut by_gov: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    if let Ok(dir) = fs::read_dir("/sys/devices/system/cpu") {
        for e in dir.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(n) = name
                .strip_prefix("cpu")
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if let Some(g) = read(e.path().join("cpufreq/scaling_governor")) {
                by_gov.entry(g).or_default().push(n);
            }
        }
    }
    by_gov
        .into_iter()
        .map(|(g, cpus)| {
            let list = crate::core::CpuList(cpus.into_iter().collect());
            (g, list.to_string())
        })
        .collect()
}

fn boost() -> Option<bool> {
    if let Some(b) = read_num::<u32>("/sys/devices/system/cpu/cpufreq/boost") {
        return Some(b == 1);
    }
    read_num::<u32>("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|n| n == 0)
}

fn vulnerabilities() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(dir) = fs::read_dir("/sys/devices/system/cpu/vulnerabilities") {
        for e in dir.filter_map(|e| e.ok()) {
            if let Some(v) = read(e.path()) {
                out.insert(e.file_name().to_string_lossy().to_string(), v);
            }
        }
    }
    out
}

fn uname() -> (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    // SAFETY: utsname is plain data filled by uname(2).
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return (None, None, None, None);
        }
        let s = |f: &[libc::c_char]| {
            Some(
                std::ffi::CStr::from_ptr(f.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        (s(&u.nodename), s(&u.release), s(&u.version), s(&u.machine))
    }
}

/// An empty list in sysfs reads as an empty string: treat it as "none".
fn nonempty(s: Option<String>) -> Option<String> {
    s.filter(|v| !v.is_empty())
}

impl Environment {
    /// Read everything from this machine.
    pub(crate) fn collect() -> Environment {
        let (hostname, release, version, machine) = uname();
        let (config_source, config) = kernel_config(release.as_deref());
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let flags = cpuinfo_field(&cpuinfo, "flags").unwrap_or_default();
        let cpu = Cpu {
            model_name: cpuinfo_field(&cpuinfo, "model name"),
            vendor: cpuinfo_field(&cpuinfo, "vendor_id"),
            family: cpuinfo_field(&cpuinfo, "cpu family"),
            model: cpuinfo_field(&cpuinfo, "model"),
            stepping: cpuinfo_field(&cpuinfo, "stepping"),
            microcode: cpuinfo_field(&cpuinfo, "microcode"),
            virtualized: flags.split_whitespace().any(|f| f == "hypervisor"),
            online: read("/sys/devices/system/cpu/online"),
            smt_active: read_num::<u32>("/sys/devices/system/cpu/smt/active").map(|v| v == 1),
            governors: governors(),
            boost: boost(),
            caches: crate::core::caches::caches(),
        };
        let audit = audit_state();
        let mut env = Environment {
            hostname,
            boot_id: read("/proc/sys/kernel/random/boot_id"),
            kernel_release: release,
            kernel_version: version,
            machine,
            cmdline: read("/proc/cmdline"),
            config_source,
            config,
            cpu,
            vulnerabilities: vulnerabilities(),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            isolated_cpus: nonempty(read("/sys/devices/system/cpu/isolated")),
            nohz_full: nonempty(read("/sys/devices/system/cpu/nohz_full"))
                .filter(|s| s != "(null)"),
            audit,
            perf_event_paranoid: crate::core::perf::perf_event_paranoid(),
            kptr_restrict: read_num("/proc/sys/kernel/kptr_restrict"),
            perf_event_max_sample_rate: read_num("/proc/sys/kernel/perf_event_max_sample_rate"),
            hardware_pmu: crate::core::perf::hardware_pmu_present(),
            sched_rt_runtime_us: read_num("/proc/sys/kernel/sched_rt_runtime_us"),
            sched_rt_period_us: read_num("/proc/sys/kernel/sched_rt_period_us"),
            loadavg: read("/proc/loadavg"),
            aslr: read_num("/proc/sys/kernel/randomize_va_space"),
            warnings: Vec::new(),
        };
        env.warnings = env.noise_warnings();
        env
    }

    /// Set-up choices that add noise or change what is measured, each with what to do.
    pub(crate) fn noise_warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.cpu.virtualized {
            w.push(
                "running in a virtual machine: the host's scheduling and frequency policy add \
                 noise; compare runs taken in one session, interleaved"
                    .into(),
            );
        }
        if !self.hardware_pmu {
            w.push(
                "no hardware PMU: cycles, instructions, branches and cache events cannot be \
                 counted here (software events and time still are)"
                    .into(),
            );
        }
        for (g, cpus) in &self.cpu.governors {
            if g != "performance" {
                w.push(format!(
                    "CPU frequency governor '{g}' on CPUs {cpus}: use 'performance' for stable \
                     clocks (cpupower frequency-set -g performance)"
                ));
            }
        }
        if self.cpu.boost == Some(true) {
            w.push("turbo/boost is enabled: clock speed varies with temperature and load".into());
        }
        if self.cpu.smt_active == Some(true) {
            w.push(
                "SMT is active: a sibling hyper-thread shares the core's caches and ports".into(),
            );
        }
        if self.isolated_cpus.is_none() {
            w.push("no isolated CPUs (isolcpus=): other tasks may share the measured CPU".into());
        }
        if let Some(cs) = &self.clocksource
            && cs != "tsc"
            && self.machine.as_deref() == Some("x86_64")
        {
            w.push(format!(
                "clocksource is '{cs}', not tsc: reading the clock costs more and its \
                     resolution may be coarser"
            ));
        }
        w.extend(self.load_warning());
        w.extend(self.audit_warnings());
        w
    }

    /// A load average above half the online CPUs: other work competes.
    fn load_warning(&self) -> Option<String> {
        if let Some(load) = self
            .loadavg
            .as_deref()
            .and_then(|l| l.split_whitespace().next())
            && let Ok(l) = load.parse::<f64>()
        {
            let online = self
                .cpu
                .online
                .as_deref()
                .and_then(|o| crate::core::CpuList::parse(o).ok())
                .map(|c| c.len())
                .unwrap_or(1);
            if l > 0.5 * online as f64 {
                return Some(format!(
                    "load average {l:.2} on {online} CPUs: other work competes for the machine"
                ));
            }
        }
        None
    }

    /// Audit's state: enabled, its residue in this boot, or rules a killed syscost left.
    fn audit_warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        match (&self.audit.status, self.audit.residue) {
            (Some(s), _) if s.enabled != 0 => {}
            (_, Some(true)) => w.push(
                "audit has been enabled in this boot (by a syscost sweep): new processes keep \
                 per-task audit work on every syscall even with audit off, until reboot or a \
                 never,task rule (`syscost audit residue` measures it)"
                    .into(),
            ),
            _ => {}
        }
        if self.audit.leftover_rules > 0 {
            w.push(format!(
                "{} audit rule(s) left by a killed syscost: `syscost audit cleanup` removes them",
                self.audit.leftover_rules
            ));
        }
        if let Some(s) = &self.audit.status
            && s.enabled != 0
        {
            w.push(format!(
                "audit is enabled with {} rule(s): every syscall pays for the audit hooks \
                     (that is what `syscost audit` measures)",
                s.rule_count()
            ));
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parsing_keeps_selected_keys() {
        let text = "# comment\nCONFIG_AUDIT=y\nCONFIG_HZ=250\nCONFIG_OTHER=y\n\
                    # CONFIG_PREEMPT is not set\nCONFIG_FUNCTION_ALIGNMENT=16\n";
        let c = parse_config(text, CONFIG_KEYS);
        assert_eq!(c.get("CONFIG_AUDIT").map(String::as_str), Some("y"));
        assert_eq!(c.get("CONFIG_HZ").map(String::as_str), Some("250"));
        assert_eq!(
            c.get("CONFIG_FUNCTION_ALIGNMENT").map(String::as_str),
            Some("16")
        );
        assert!(!c.contains_key("CONFIG_OTHER"));
        assert!(!c.contains_key("CONFIG_PREEMPT"));
    }

    #[test]
    fn cpuinfo_fields() {
        let t = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\
                 model name\t: Intel(R) Xeon(R)\nflags\t\t: fpu hypervisor\n";
        assert_eq!(cpuinfo_field(t, "model").as_deref(), Some("85"));
        assert_eq!(
            cpuinfo_field(t, "model name").as_deref(),
            Some("Intel(R) Xeon(R)")
        );
        assert_eq!(cpuinfo_field(t, "cpu family").as_deref(), Some("6"));
        assert_eq!(cpuinfo_field(t, "microcode"), None);
    }

    #[test]
    fn collects_this_machine() {
        let e = Environment::collect();
        assert!(e.kernel_release.is_some());
        assert!(
            !e.cpu.caches.is_empty() || !Path::new("/sys/devices/system/cpu/cpu0/cache").exists()
        );
    }
}
