//! `syscost env` as text.

use crate::environment::Environment;

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// `syscost env` as text: one `key  value` line per field.
pub fn env_text(e: &Environment) -> String {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| lines.push((k.to_string(), v));
    row("host", opt(&e.hostname));
    row("boot id", opt(&e.boot_id));
    row(
        "kernel",
        format!("{} {}", opt(&e.kernel_release), opt(&e.kernel_version)),
    );
    row("cmdline", opt(&e.cmdline));
    let cfg: Vec<String> = e.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
    row(
        &format!("config ({})", opt(&e.config_source)),
        if cfg.is_empty() {
            "unavailable".into()
        } else {
            cfg.join(" ")
        },
    );
    let c = &e.cpu;
    row("cpu", opt(&c.model_name));
    row(
        "cpu id",
        format!(
            "vendor {} family {} model {} stepping {} microcode {}",
            opt(&c.vendor),
            opt(&c.family),
            opt(&c.model),
            opt(&c.stepping),
            opt(&c.microcode)
        ),
    );
    row("virtualized", c.virtualized.to_string());
    row("online cpus", opt(&c.online));
    row("smt active", opt(&c.smt_active));
    for cache in &c.caches {
        row(
            &format!("L{} {}", cache.level, cache.type_.to_lowercase()),
            format!(
                "{}: {} sets x {} ways x {} B lines (shared by CPUs {})",
                opt(&cache.size),
                opt(&cache.sets),
                opt(&cache.ways),
                opt(&cache.line_size),
                opt(&cache.shared_cpus)
            ),
        );
    }
    let gov: Vec<String> = c
        .governors
        .iter()
        .map(|(g, l)| format!("{g} (CPUs {l})"))
        .collect();
    row(
        "governor",
        if gov.is_empty() {
            "none (no cpufreq)".into()
        } else {
            gov.join(", ")
        },
    );
    row("boost", opt(&c.boost));
    row("clocksource", opt(&e.clocksource));
    row(
        "isolated cpus",
        e.isolated_cpus.clone().unwrap_or_else(|| "none".into()),
    );
    row(
        "nohz_full",
        e.nohz_full.clone().unwrap_or_else(|| "none".into()),
    );
    let vulns: Vec<String> = e
        .vulnerabilities
        .iter()
        .filter(|(_, v)| v.as_str() != "Not affected")
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    row(
        "mitigations",
        if vulns.is_empty() {
            "none needed".into()
        } else {
            vulns.join("; ")
        },
    );
    match (&e.audit.status, &e.audit.error) {
        (Some(s), _) => {
            let lists: Vec<String> = s.rules.iter().map(|(l, n)| format!("{l} {n}")).collect();
            row(
                "audit",
                format!(
                    "enabled={}{} rules={}{} backlog={} lost={} auditd pid={}",
                    s.enabled,
                    if s.locked() { " (locked)" } else { "" },
                    s.rule_count(),
                    if lists.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", lists.join(", "))
                    },
                    s.backlog,
                    s.lost,
                    s.pid
                ),
            );
            row(
                "audit residue",
                match e.audit.residue {
                    Some(true) => "yes: audit has been enabled in this boot".into(),
                    _ => "unknown (`syscost audit residue` measures it)".into(),
                },
            );
        }
        (None, err) => row("audit", format!("unknown: {}", opt(err))),
    }
    row(
        "hardware PMU",
        if e.hardware_pmu {
            "present".into()
        } else {
            "absent".into()
        },
    );
    row("perf_event_paranoid", opt(&e.perf_event_paranoid));
    row("kptr_restrict", opt(&e.kptr_restrict));
    row("perf max sample rate", opt(&e.perf_event_max_sample_rate));
    row(
        "sched_rt runtime/period",
        format!(
            "{} / {} us",
            opt(&e.sched_rt_runtime_us),
            opt(&e.sched_rt_period_us)
        ),
    );
    row("ASLR", opt(&e.aslr));
    row("load average", opt(&e.loadavg));
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
