//! Stored results grouped by what they share (a kernel, a host, a boot, a label's value) as
//! the sides of a comparison or the points of a trend: `history compare` and `history trend`.
//! The store's listing is read here, one workload's results are required, and each group is
//! summarised with boots as the units (`compare::groups`).

use crate::compare;
use crate::core::input::{Opt, spelled};
use crate::history::{Entry, Filter, Store};
use anyhow::{Result, bail};

/// What `history compare` groups by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum By {
    Kernel,
    Host,
    Boot,
    Tag(String),
}

impl By {
    /// The grouping's name in messages: `kernel`, `tag build`.
    pub(crate) fn name(&self) -> String {
        match self {
            By::Kernel => "kernel".into(),
            By::Host => "host".into(),
            By::Boot => "boot".into(),
            By::Tag(k) => format!("tag {k}"),
        }
    }

    /// The group a stored result belongs to, if it has one.
    pub(crate) fn of(&self, e: &crate::history::Entry) -> Option<String> {
        match self {
            By::Kernel => e.kernel.clone(),
            By::Host => e.host.clone(),
            By::Boot => e.boot_id.clone(),
            By::Tag(k) => e.tags.iter().find(|(t, _)| t == k).map(|(_, v)| v.clone()),
        }
    }
}

impl std::str::FromStr for By {
    type Err = String;

    fn from_str(s: &str) -> Result<By, String> {
        match s {
            "kernel" => Ok(By::Kernel),
            "host" => Ok(By::Host),
            "boot" => Ok(By::Boot),
            _ => match s.strip_prefix("tag:") {
                Some(k) if !k.is_empty() => Ok(By::Tag(k.to_string())),
                _ => Err(crate::said!(
                    format!("'{s}': give kernel, host, boot or tag:KEY (e.g. tag:build for "),
                    Opt::Tag,
                    " build=...)"
                )
                .spell(spelled)),
            },
        }
    }
}

/// How to select results of one workload's parameters (the workload and each parameter's
/// value, as the options that select them), from the stored parameter object.
fn narrowing(params: Option<&str>) -> String {
    let Some(serde_json::Value::Object(m)) = params.and_then(|p| serde_json::from_str(p).ok())
    else {
        return "(results without workload parameters)".into();
    };
    let mut out = Vec::new();
    for (k, v) in &m {
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => continue,
            other => other.to_string(),
        };
        if k == "workload" {
            out.insert(0, crate::said!(Opt::Workload, " ", v).spell(spelled));
        } else {
            out.push(crate::said!(Opt::Param, format!(" {k}={v}")).spell(spelled));
        }
    }
    out.join(" ")
}

/// Boots per group below which `history compare` says the boot-to-boot spread is unknown.
const FEW_BOOTS: usize = 5;

/// How `history compare` and `trend` group.
pub(crate) struct Grouping<'a> {
    pub by: &'a By,
    /// The baseline group (compare only).
    pub baseline: Option<&'a str>,
    /// Compare results of QEMU's emulator with others all the same.
    pub mix_emulated: bool,
}

/// Results measured under QEMU's emulator (a campaign's `accel=tcg` tag) follow the
/// instructions executed, not the hardware: compared with KVM or bare-metal results they
/// would make the hardware look like the patch.
fn refuse_emulated_with_others(runs: &[Entry]) -> Result<()> {
    let tcg = |e: &&Entry| e.tags.iter().any(|(k, v)| k == "accel" && v == "tcg");
    let emulated = runs.iter().filter(tcg).count();
    if emulated > 0 && emulated < runs.len() {
        return Err(crate::refused!(
            format!(
                "{emulated} of the {} matching results were measured under QEMU's emulator \
                 (tag accel=tcg), the others were not: emulated figures follow the \
                 instructions executed, not the hardware, so they are not compared with KVM or \
                 bare-metal results. Select one kind (",
                runs.len()
            ),
            Opt::Tag,
            " accel=tcg), or give ",
            Opt::MixEmulated,
            " to compare them anyway"
        ));
    }
    Ok(())
}

/// The matching run results grouped by `by`, as the sides of a comparison (the baseline
/// first), with what was left out and why.
pub(crate) fn grouped(
    s: &mut Store,
    f: &Filter,
    g: &Grouping,
) -> Result<(Vec<compare::Variant>, Vec<String>)> {
    use crate::compare::groups::{self, Unit};
    let by = g.by;
    let mut warnings = Vec::new();
    let runs = run_entries(s, f, &mut warnings)?;
    if !g.mix_emulated {
        refuse_emulated_with_others(&runs)?;
    }
    let keyed = keyed(&runs, by, g.baseline, &mut warnings)?;
    let unit = if *by == By::Boot {
        Unit::Run
    } else {
        Unit::Boot
    };
    let mut variants = Vec::new();
    for (label, ids) in &keyed {
        let views = s
            .views(ids)?
            .iter()
            .zip(ids)
            .map(|(text, id)| {
                crate::results::view::ResultView::from_text(&format!("history entry {id}"), text)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&_> = views.iter().collect();
        let boots = groups::boots(&refs);
        if unit == Unit::Boot && boots < FEW_BOOTS {
            warnings.push(format!(
                "{} {label}: {boots} boot(s); {FEW_BOOTS} or more per group show how much boots \
                 differ (docs/src/history.md: boots as a workflow)",
                by.name()
            ));
        }
        let (v, w) = groups::variant(label, &refs, unit)?;
        warnings.extend(w);
        variants.push(v);
    }
    Ok((variants, warnings))
}

/// The matching entries that are run results, all of one workload and parameters.
fn run_entries(s: &mut Store, f: &Filter, warnings: &mut Vec<String>) -> Result<Vec<Entry>> {
    let (runs, others): (Vec<_>, Vec<_>) = s.list(f)?.into_iter().partition(|e| e.kind == "run");
    if !others.is_empty() {
        warnings.push(format!(
            "{} matching result(s) of other kinds (comparisons, sweeps, ...) left out: only run \
             results are grouped",
            others.len()
        ));
    }
    if runs.is_empty() {
        bail!(
            "no stored run result matches (syscost history list shows what {} holds)",
            s.location()
        );
    }
    let mut things: Vec<(Option<String>, usize)> = Vec::new();
    for e in &runs {
        match things.iter_mut().find(|(p, _)| *p == e.params) {
            Some((_, n)) => *n += 1,
            None => things.push((e.params.clone(), 1)),
        }
    }
    if things.len() > 1 {
        let list: Vec<String> = things
            .iter()
            .take(8)
            .map(|(p, n)| format!("  {} ({n} result(s))", narrowing(p.as_deref())))
            .collect();
        return Err(crate::refused!(
            format!(
                "the matching results measure {} different things; narrow them with ",
                things.len()
            ),
            Opt::Workload,
            " and ",
            Opt::Param,
            format!(" KEY=VALUE:\n{}", list.join("\n"))
        ));
    }
    Ok(runs)
}

/// Refuse fewer than two groups, saying what would make more.
fn too_few_groups(keyed: &[(String, Vec<i64>)], by: &By) -> Result<()> {
    if keyed.is_empty() {
        let hint = match by {
            By::Tag(k) => crate::said!(
                " (label results with ",
                Opt::Tag,
                format!(" {k}=VALUE when running or importing)")
            )
            .spell(spelled),
            _ => String::new(),
        };
        bail!("no matching result has a {}{hint}", by.name());
    }
    if keyed.len() < 2 {
        let next = match by {
            By::Kernel => crate::said!(
                "measure another kernel (`syscost campaign ",
                Opt::Arm,
                " NAME=KERNEL ...` boots several and records each boot), or group by something \
                 that differs: ",
                Opt::By,
                " host, ",
                Opt::By,
                " boot, ",
                Opt::By,
                " tag:KEY"
            ),
            _ => crate::said!(
                "group by something that differs among them (",
                Opt::By,
                " kernel, host, boot or tag:KEY)"
            ),
        }
        .spell(spelled);
        bail!(
            "only one {} among the matching results ({}): a comparison needs two or more \
             groups; {next} (`syscost history list` shows what is stored)",
            by.name(),
            keyed[0].0
        );
    }
    Ok(())
}

/// The entries' ids per group of `by`, the baseline first (kernels in version order), two
/// groups or more.
fn keyed(
    runs: &[Entry],
    by: &By,
    baseline: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, Vec<i64>)>> {
    let mut keyed: Vec<(String, Vec<i64>)> = Vec::new();
    let mut unkeyed = 0;
    for e in runs {
        match by.of(e) {
            Some(k) => match keyed.iter_mut().find(|(g, _)| *g == k) {
                Some((_, ids)) => ids.push(e.id),
                None => keyed.push((k, vec![e.id])),
            },
            None => unkeyed += 1,
        }
    }
    if unkeyed > 0 {
        warnings.push(format!(
            "{unkeyed} result(s) have no {}: left out",
            by.name()
        ));
    }
    if *by == By::Kernel {
        keyed.sort_by(|a, b| crate::history::version::order(&a.0, &b.0));
    }
    if let Some(b) = baseline {
        let Some(i) = keyed.iter().position(|(g, _)| g == b) else {
            let names: Vec<&str> = keyed.iter().map(|(g, _)| g.as_str()).collect();
            return Err(crate::refused!(
                Opt::Baseline,
                format!(
                    " '{b}': no such {}; the groups are {}",
                    by.name(),
                    names.join(", ")
                )
            ));
        };
        let base = keyed.remove(i);
        keyed.insert(0, base);
    }
    too_few_groups(&keyed, by)?;
    Ok(keyed)
}
