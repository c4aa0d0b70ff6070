//! `syscost env` as text.

use crate::environment::Environment;

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// A list of values, or `none` when there are none.
fn listed(v: Vec<String>, sep: &str, none: &str) -> String {
    if v.is_empty() {
        none.into()
    } else {
        v.join(sep)
    }
}

/// `syscost env` as text: one `key  value` line per field.
pub(crate) fn env_text(e: &Environment) -> String {
    let mut lines: Vec<(String, String)> = Vec::new();
    kernel_rows(e, &mut lines);
    cpu_rows(&e.cpu, &mut lines);
    system_rows(e, &mut lines);
    audit_rows(e, &mut lines);
    perf_rows(e, &mut lines);
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in &lines {
        out.push_str(&format!("{k:<width$}  {v}\n"));
    }
    if !e.warnings.is_empty() {
        out.push_str("\nWarnings (noisy set-up):\n");
        for w in &e.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out
}

type Rows = Vec<(String, String)>;

fn row(lines: &mut Rows, k: &str, v: String) {
    lines.push((k.to_string(), v));
}

fn kernel_rows(e: &Environment, lines: &mut Rows) {
    row(lines, "host", opt(&e.hostname));
    row(lines, "boot id", opt(&e.boot_id));
    let kernel = format!("{} {}", opt(&e.kernel_release), opt(&e.kernel_version));
    row(lines, "kernel", kernel);
    row(lines, "cmdline", opt(&e.cmdline));
    let cfg: Vec<String> = e.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let key = format!("config ({})", opt(&e.config_source));
    row(lines, &key, listed(cfg, " ", "unavailable"));
}

fn cpu_rows(c: &crate::environment::Cpu, lines: &mut Rows) {
    row(lines, "cpu", opt(&c.model_name));
    let id = format!(
        "vendor {} family {} model {} stepping {} microcode {}",
        opt(&c.vendor),
        opt(&c.family),
        opt(&c.model),
        opt(&c.stepping),
        opt(&c.microcode)
    );
    row(lines, "cpu id", id);
    row(lines, "virtualized", c.virtualized.to_string());
    row(lines, "online cpus", opt(&c.online));
    row(lines, "smt active", opt(&c.smt_active));
    for cache in &c.caches {
        let geometry = format!(
            "{}: {} sets x {} ways x {} B lines (shared by CPUs {})",
            opt(&cache.size),
            opt(&cache.sets),
            opt(&cache.ways),
            opt(&cache.line_size),
            opt(&cache.shared_cpus)
        );
        let key = format!("L{} {}", cache.level, cache.type_.to_lowercase());
        row(lines, &key, geometry);
    }
    let gov: Vec<String> = c
        .governors
        .iter()
        .map(|(g, l)| format!("{g} (CPUs {l})"))
        .collect();
    row(lines, "governor", listed(gov, ", ", "none (no cpufreq)"));
    row(lines, "boost", opt(&c.boost));
}

fn system_rows(e: &Environment, lines: &mut Rows) {
    row(lines, "clocksource", opt(&e.clocksource));
    let none = || "none".to_string();
    row(
        lines,
        "isolated cpus",
        e.isolated_cpus.clone().unwrap_or_else(none),
    );
    row(lines, "nohz_full", e.nohz_full.clone().unwrap_or_else(none));
    let vulns: Vec<String> = e
        .vulnerabilities
        .iter()
        .filter(|(_, v)| v.as_str() != "Not affected")
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    row(lines, "mitigations", listed(vulns, "; ", "none needed"));
}

fn audit_rows(e: &Environment, lines: &mut Rows) {
    let Some(s) = &e.audit.status else {
        row(lines, "audit", format!("unknown: {}", opt(&e.audit.error)));
        return;
    };
    let lists: Vec<String> = s.rules.iter().map(|(l, n)| format!("{l} {n}")).collect();
    let lists = if lists.is_empty() {
        String::new()
    } else {
        format!(" ({})", lists.join(", "))
    };
    let status = format!(
        "enabled={}{} rules={}{lists} backlog={} lost={} auditd pid={}",
        s.enabled,
        if s.locked() { " (locked)" } else { "" },
        s.rule_count(),
        s.backlog,
        s.lost,
        s.pid
    );
    row(lines, "audit", status);
    let residue = match e.audit.residue {
        Some(true) => "yes: audit has been enabled in this boot".into(),
        _ => "unknown (`syscost audit residue` measures it)".into(),
    };
    row(lines, "audit residue", residue);
}

fn perf_rows(e: &Environment, lines: &mut Rows) {
    let pmu = if e.hardware_pmu { "present" } else { "absent" };
    row(lines, "hardware PMU", pmu.into());
    row(lines, "perf_event_paranoid", opt(&e.perf_event_paranoid));
    row(lines, "kptr_restrict", opt(&e.kptr_restrict));
    row(
        lines,
        "perf max sample rate",
        opt(&e.perf_event_max_sample_rate),
    );
    let rt = format!(
        "{} / {} us",
        opt(&e.sched_rt_runtime_us),
        opt(&e.sched_rt_period_us)
    );
    row(lines, "sched_rt runtime/period", rt);
    row(lines, "ASLR", opt(&e.aslr));
    row(lines, "load average", opt(&e.loadavg));
}
