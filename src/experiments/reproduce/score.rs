//! A reproduction's scoring: each cell of the paper's tables beside syscost's figure from the
//! campaign's boots, classed and scored ([`agreement`] says when two agree), and the result.

use super::*;

/// One cell: the paper's figure beside syscost's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Row {
    pub table: String,
    pub row: String,
    pub column: String,
    /// As printed.
    pub written: String,
    pub unit: String,
    /// The paper's figure per operation (a ratio's: over its `over` column).
    pub paper: f64,
    /// syscost's: the median over the arm's boots of each boot's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ours: Option<f64>,
    /// The lowest and highest boot's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_range: Option<(f64, f64)>,
    /// syscost's over the paper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    pub class: Class,
    /// An exact cell's band: syscost's figure agrees within it of the paper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<f64>,
    /// A repeat's scored cell, `TABLE / ROW / COLUMN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<String>,
    pub why: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
    /// The range a modelled cell is scored by: the middle 80% of its figures in the paper's
    /// unit, or the interval of a mean over many boots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middle_range: Option<(f64, f64)>,
    /// What that range is, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_of: Option<String>,
    /// The values a modelled cell's range is taken over: boots, or placements where each run
    /// was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// Why a measured cell of a scored class is not scored (its test could not have failed,
    /// or its boots cannot decide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscored: Option<String>,
}

/// The result of `syscost reproduce` (kind `reproduction`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Reproduction {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub investigation: String,
    pub title: String,
    pub document: String,
    pub question: String,
    /// Each table's caption, source, conditions and scale, by id.
    pub tables: Vec<TableInfo>,
    /// The campaign command it ran, for a reader to run again or change.
    pub campaign_command: Vec<String>,
    pub rows: Vec<Row>,
    pub summary: Vec<ClassSummary>,
    /// The claims of the paper's text, each put to its test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<claims::Tested>,
    /// Arms the paper's cells name that the campaign did not boot (builds not made).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_booted: Vec<String>,
    /// Where each boot with rules put their entries, beside its modelled misses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<placement::ArmPlacement>,
    /// The placements of the arms that boot one kernel, pooled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_placements: Vec<placement::KernelPlacement>,
    /// The investigation's series of changes, build by build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<steps::Step>,
    /// Each arm's kernel's sections, where a cell compares them (kept, so that scoring again
    /// does not need the kernels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<(String, Sizes)>,
    /// Each arm's kernel's functions by the boundaries they start on, where a claim asks
    /// (from the vmlinux syscost's build kept; kept here for the same reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alignments: Vec<(String, crate::kbuild::alignment::Alignment)>,
    pub seconds: f64,
    pub campaign: Campaign,
}

/// A table's heading and conditions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TableInfo {
    pub id: String,
    pub caption: String,
    pub source: String,
    pub conditions: String,
    pub scale: String,
}

/// The modelled L1d misses, user and kernel, as the placement table sets them beside.
pub(super) const L1D_MISSES: [&str; 2] = [
    "L1-dcache-load-misses:u (emulated)",
    "L1-dcache-load-misses:k (emulated)",
];

/// The paper's cells beside the campaign's figures, and where each boot's rule entries were
/// in an L1d of `l1d`.
pub(crate) fn compare(
    p: &Paper,
    series: &[steps::SeriesBuild],
    c: Campaign,
    l1d: crate::layout::Geometry,
    campaign_command: Vec<String>,
    seconds: f64,
) -> Reproduction {
    let kept = Kept {
        sizes: kernel_sizes(p, &c),
        alignments: kernel_alignments(p, &c),
    };
    compare_sized(p, series, c, l1d, campaign_command, seconds, kept)
}

/// What a reproduction keeps of its arms' kernels, so that scoring it again needs none.
#[derive(Clone, Debug, Default)]
pub(crate) struct Kept {
    pub sizes: Vec<(String, Sizes)>,
    pub alignments: Vec<(String, crate::kbuild::alignment::Alignment)>,
}

/// A saved reproduction scored again with its investigation's tables and scorer as they are
/// now: its campaign's boots, and the kernel sizes it kept, compared cell by cell (nothing is
/// booted).
pub(crate) fn rescored(r: Reproduction) -> Result<Reproduction, String> {
    let inv = named(&r.investigation)?;
    let p = inv.paper()?;
    let l1d = inv.l1d()?;
    let kept = Kept {
        sizes: r.sizes,
        alignments: r.alignments,
    };
    let (c, command, seconds) = (r.campaign, r.campaign_command, r.seconds);
    Ok(compare_sized(
        &p, inv.series, c, l1d, command, seconds, kept,
    ))
}

/// Each arm's uniform placement, with the paper's cacheline-spread for the arm placed among
/// its draws where the paper gives one.
pub(super) fn with_papers_spreads(
    p: &Paper,
    mut placed: Vec<placement::ArmPlacement>,
) -> Vec<placement::ArmPlacement> {
    for a in &mut placed {
        let paper = p
            .cells()
            .find(|(_, c)| c.arm.as_deref() == Some(a.arm.as_str()) && c.metrics == [SPREAD])
            .map(|(t, c)| t.value(c));
        a.uniform =
            (a.boots.first()).map(|b| placement::UniformSpread::of(b.entries, b.reachable, paper));
    }
    placed
}

/// [`compare`], with each arm's kernel's sections given.
pub(super) fn compare_sized(
    p: &Paper,
    series: &[steps::SeriesBuild],
    c: Campaign,
    l1d: crate::layout::Geometry,
    campaign_command: Vec<String>,
    seconds: f64,
    kept: Kept,
) -> Reproduction {
    let arms: Vec<&str> = c.arms.iter().map(|a| a.name.as_str()).collect();
    let misses = L1D_MISSES.map(String::from);
    // Each measured boot's result decoded once, for every cell and the placements.
    let decoded: Vec<Measured> = c
        .boots
        .iter()
        .filter_map(|b| Some((b, b.decoded()?.ok()?)))
        .collect();
    let placements = with_papers_spreads(p, placement::placements(&decoded, &arms, l1d, &misses));
    let kernel_placements = placement::by_kernel(&placements, |arm| {
        let a = c.arms.iter().find(|a| a.name == arm)?;
        Some(a.kernel.file_name()?.to_string_lossy().into_owned())
    });
    let figures = Figures {
        boots: &decoded,
        placements: &placements,
        sizes: &kept.sizes,
        alignments: &kept.alignments,
    };
    let rows: Vec<Row> = p
        .cells()
        .map(|(t, cell)| row(p, t, cell, &figures))
        .collect();
    let steps = steps::steps(series, &figures);
    let claims = claims::tested(p, &figures);
    let classes: Vec<agreement::Counted> = rows
        .iter()
        .map(|r| (r.class, r.ours.is_some(), r.agrees))
        .collect();
    let mut not_booted: Vec<String> = Vec::new();
    for (_, cell) in p.cells() {
        if let Some(a) = &cell.arm
            && !arms.contains(&a.as_str())
            && !not_booted.contains(a)
        {
            not_booted.push(a.clone());
        }
    }
    Reproduction {
        envelope: Envelope::new(Kind::Reproduction),
        investigation: p.name.clone(),
        title: p.title.clone(),
        document: p.document.clone(),
        question: p.question.clone(),
        tables: p
            .tables
            .iter()
            .map(|t| TableInfo {
                id: t.id.clone(),
                caption: t.caption.clone(),
                source: t.source.clone(),
                conditions: t.conditions.clone(),
                scale: t.scale.clone(),
            })
            .collect(),
        campaign_command,
        summary: agreement::summarise(&classes),
        claims,
        not_booted,
        rows,
        placements,
        kernel_placements,
        steps,
        sizes: kept.sizes.clone(),
        alignments: kept.alignments.clone(),
        seconds,
        campaign: c,
    }
}

/// A measured boot and its result, decoded.
pub(crate) type Measured<'a> = (&'a BootRecord, Decoded);

/// What a cell's figure is read from: the campaign's measured boots, where their entries
/// were, and each arm's kernel's sections.
pub(crate) struct Figures<'a> {
    pub(super) boots: &'a [Measured<'a>],
    pub(super) placements: &'a [placement::ArmPlacement],
    pub(super) sizes: &'a [(String, Sizes)],
    pub(super) alignments: &'a [(String, crate::kbuild::alignment::Alignment)],
}

/// The figures a kernel's sections give a cell, as size(1) prints them (text, data, bss, dec),
/// but text and dec without the linker's padding around the entry code (2 MiB steps in
/// kernels since 4.15; the RFC's had none).
pub(crate) const KERNEL_SIZES: [&str; 4] = [
    "kernel text without padding (bytes)",
    "kernel data (bytes)",
    "kernel bss (bytes)",
    "kernel size without padding (bytes)",
];

/// Each arm's kernel's sections, for those whose vmlinux can be read, when a cell of `p`
/// compares them (each kernel is decompressed again for it).
pub(super) fn kernel_sizes(p: &Paper, c: &Campaign) -> Vec<(String, Sizes)> {
    let compared = p.cells().any(|(_, cell)| {
        let m = cell.metrics.as_slice();
        KERNEL_SIZES.iter().any(|k| m == [*k])
    });
    if !compared {
        return Vec::new();
    }
    c.arms
        .iter()
        .filter_map(|a| Some((a.name.clone(), crate::boot::bzimage::sizes(&a.kernel).ok()?)))
        .collect()
}

/// Each arm's kernel's function alignment, for the arms booting syscost's builds (whose
/// vmlinux the store keeps), when a claim of `p` asks for it.
pub(super) fn kernel_alignments(
    p: &Paper,
    c: &Campaign,
) -> Vec<(String, crate::kbuild::alignment::Alignment)> {
    use crate::kbuild::alignment::{Alignment, vmlinux_beside};
    if !p.claims.iter().any(|cl| cl.test.needs_alignment()) {
        return Vec::new();
    }
    c.arms
        .iter()
        .filter_map(|a| {
            let v = vmlinux_beside(&a.kernel)?;
            Some((a.name.clone(), Alignment::of_vmlinux(&v).ok()?))
        })
        .collect()
}

/// The figure a placement gives a cell: the syscall-latency post's cacheline-spread.
pub(crate) const SPREAD: &str = "cacheline-spread";

/// The figure the per-function profile gives a cell: the kernel instructions per operation of
/// the functions whose name says audit (the syscall-latency post's audit-only share).
pub(crate) const AUDIT_FUNCTIONS: &str = "audit functions' instructions";

impl Figures<'_> {
    /// An arm's figure for `metrics` added together, per measured boot in round order (a boot
    /// lacking one of them is left out).
    ///
    /// A figure placement decides (the entries' spread, the modelled L1d misses) is given per
    /// placement: each run's where the boots placed the entries anew before every run.
    pub(super) fn per_boot(&self, arm: &str, metrics: &[String]) -> Vec<f64> {
        if metrics == L1D_MISSES && self.placed(arm).is_some_and(|p| p.per_run()) {
            return self.keyed_misses(arm).into_iter().map(|(_, v)| v).collect();
        }
        let placed = self.placements.iter().find(|p| p.arm == arm);
        let units = || placed.map_or(Vec::new(), |p| placement::units(&p.boots));
        if metrics == [SPREAD] {
            return units().iter().map(|u| u.0).collect();
        }
        if let Some(i) = KERNEL_SIZES.iter().position(|k| metrics == [*k]) {
            let sizes = self.sizes.iter().find(|(a, _)| a == arm);
            return sizes.map_or(Vec::new(), |(_, s)| {
                vec![[s.code(), s.data, s.bss, s.total() - s.padding][i] as f64]
            });
        }
        let boots = self.boots.iter().filter(|(b, _)| b.arm == arm);
        if metrics == [AUDIT_FUNCTIONS] {
            return boots.filter_map(|(_, d)| audit_functions(d)).collect();
        }
        boots.filter_map(|(_, d)| sum_of(d, metrics)).collect()
    }
}

impl Figures<'_> {
    /// The median over an arm's boots of the share of its modelled L1i misses in the sets
    /// `chosen` picks (`None` without sets).
    pub(super) fn l1i_share(&self, arm: &str, chosen: impl Fn(usize) -> bool) -> Option<f64> {
        let shares: Vec<f64> = (self.boots.iter())
            .filter(|(b, _)| b.arm == arm)
            .filter_map(|(_, d)| {
                let sets = &d.sets.as_ref()?.l1i;
                let total: f64 = sets.iter().sum();
                let there: f64 = (sets.iter().enumerate())
                    .filter(|(i, _)| chosen(*i))
                    .map(|x| x.1)
                    .sum();
                (total > 0.0).then(|| there / total)
            })
            .collect();
        (!shares.is_empty()).then(|| crate::stats::median(&shares))
    }

    pub(super) fn placed(&self, arm: &str) -> Option<&placement::ArmPlacement> {
        self.placements.iter().find(|p| p.arm == arm)
    }

    /// An arm's modelled misses in each run placed anew, by (round, run).
    pub(super) fn keyed_misses(&self, arm: &str) -> Vec<((u32, u32), f64)> {
        let Some(p) = self.placed(arm) else {
            return Vec::new();
        };
        let runs = p.boots.iter().flat_map(|b| {
            (b.placed_runs.iter()).filter_map(|r| Some(((b.round, r.run), r.misses?)))
        });
        runs.collect()
    }

    /// The misses of `arm`'s placements less `base`'s placed with the same seed (the same
    /// round and run): empty unless both placed their entries anew each run.
    pub(super) fn pairs(&self, arm: &str, base: &str) -> Vec<f64> {
        let b = self.keyed_misses(base);
        (self.keyed_misses(arm).into_iter())
            .filter_map(|(k, v)| Some(v - b.iter().find(|x| x.0 == k)?.1))
            .collect()
    }
}

/// `metrics` of a boot added together: the median over its runs of their sums (user and
/// kernel parts vary from run to run, and a sum of their medians mixes runs, so it would
/// disagree with the cache sets' median run); `None` when it lacks one.
pub(crate) fn sum_of(d: &Decoded, metrics: &[String]) -> Option<f64> {
    let runs = per_run(d, metrics);
    (!runs.is_empty()).then(|| crate::stats::median(&runs))
}

/// `metrics` added together in each run of a boot, in run order; empty when a run lacks one
/// (the metrics must have figures from the same runs).
pub(crate) fn per_run(d: &Decoded, metrics: &[String]) -> Vec<f64> {
    let runs: Vec<&crate::results::Metric> =
        metrics.iter().filter_map(|m| d.view.metric(m)).collect();
    let n = runs.first().map_or(0, |r| r.values.len());
    let same_runs = runs
        .iter()
        .all(|r| r.units == runs[0].units && r.values.len() == n);
    if runs.len() != metrics.len() || !same_runs {
        return Vec::new();
    }
    (0..n)
        .map(|i| runs.iter().map(|r| r.values[i]).sum())
        .collect()
}

/// A boot's kernel instructions per operation in functions named audit-something.
pub(super) fn audit_functions(d: &Decoded) -> Option<f64> {
    let f = d.functions.as_ref()?;
    Some(
        f.functions
            .iter()
            .filter(|x| x.name.contains("audit"))
            .map(|x| x.per_op)
            .sum(),
    )
}

pub(super) fn row(p: &Paper, t: &Table, cell: &PaperCell, f: &Figures) -> Row {
    let (paper, ours_boots, over) = paper_and_boots(t, cell, f);
    let ours = (!ours_boots.is_empty()).then(|| crate::stats::median(&ours_boots));
    let slack = agreement::rounding(&cell.written) * if over { 0.0 } else { t.factor };
    let band = cell
        .within
        .unwrap_or(0.0)
        .max(cell.within_share.unwrap_or(0.0) * paper.abs());
    let model = agreement::Model {
        class: cell.class,
        band,
        slack,
    };
    let per_boot = |arm: &str| f.per_boot(arm, &cell.metrics);
    let arm = cell.arm.as_deref().map(per_boot).unwrap_or_default();
    let base = cell.from.as_deref().map(per_boot).unwrap_or_default();
    let (rivals, rivals_boots) = match cell.class {
        Class::Modelled => rivals(p, cell, f),
        _ => Default::default(),
    };
    let pairs = match (cell.class, cell.arm.as_deref(), cell.from.as_deref()) {
        (Class::Direction, Some(a), Some(b)) if cell.metrics == L1D_MISSES => f.pairs(a, b),
        _ => Vec::new(),
    };
    let summary = match (cell.class, cell.arm.as_deref()) {
        (Class::Modelled, Some(a)) => units::summarised(t.unit, a, &cell.metrics, f, &ours_boots),
        _ => None,
    };
    let unestablished = (cell.class == Class::Direction)
        .then(|| papers_direction(p, cell).err())
        .flatten();
    let evidence = agreement::Evidence {
        boots: &ours_boots,
        arms: (&arm, &base),
        rivals: &rivals,
        rivals_boots: &rivals_boots,
        pairs: &pairs,
        summary: summary.as_ref(),
        unestablished: unestablished.as_deref(),
        ratio_range: (cell.class == Class::Ratio)
            .then(|| ratio_range(t, cell, f))
            .flatten(),
    };
    let score = ours.map(|o| agreement::score(model, paper, o, &evidence));
    let range = summary.as_ref().and_then(|s| s.range());
    Row {
        table: t.id.clone(),
        row: cell.row.clone(),
        column: cell.column.clone(),
        written: cell.written.clone(),
        unit: cell.unit.clone(),
        paper,
        ours,
        boots_range: range_of(&ours_boots),
        ratio: ours.filter(|_| paper != 0.0).map(|o| o / paper),
        class: cell.class,
        band: (cell.class == Class::Exact).then_some(band.max(slack)),
        repeats: cell.repeats.clone(),
        why: p.reasons.get(&cell.why).cloned().unwrap_or_default(),
        agrees: score.as_ref().and_then(|s| s.agrees()),
        middle_range: range.as_ref().map(|r| r.0),
        range_of: range.map(|r| r.1),
        over: taken_over(cell, f, (&ours_boots, &arm, &base), &pairs),
        unscored: score.and_then(|s| s.unscored()),
    }
}

/// A ratio cell's range over every pairing of its arm's boots with its denominator arm's.
fn ratio_range(t: &Table, cell: &PaperCell, f: &Figures) -> Option<(f64, f64)> {
    let (row, column) = cell.denominator()?;
    let over = t.cell(row, column)?;
    let arm = f.per_boot(cell.arm.as_deref()?, &cell.metrics);
    let base = f.per_boot(over.arm.as_deref()?, &over.metrics);
    claims::cross_ratio(&arm, &base).map(|r| r.1)
}

/// Whether the paper's own figures establish a direction cell's direction: its two figures
/// (`of`) with the spreads printed beside them.
fn papers_direction(p: &Paper, cell: &PaperCell) -> Result<(), String> {
    let [a, b] = &cell.of[..] else {
        return Err("the paper's two figures are not named".into());
    };
    let figure = |at: &str| -> Result<(f64, f64), String> {
        let (t, c) = p.cell_at(at).ok_or(format!("no cell {at}"))?;
        let se = p.standard_error(at).ok_or(format!(
            "the paper prints no spread beside {at}: it cannot establish a direction; shown"
        ))?;
        Ok((t.value(c), se))
    };
    agreement::established(figure(a)?, figure(b)?)
}

/// What a modelled or direction cell's figures are taken over: boots, or placements where the
/// arm placed its entries anew each run (`values`: the cell's, its arm's and its base arm's).
pub(super) fn taken_over(
    cell: &PaperCell,
    f: &Figures,
    values: (&[f64], &[f64], &[f64]),
    pairs: &[f64],
) -> Option<String> {
    let (ours, arm, base) = values;
    let per_run = |a: Option<&str>| {
        let placed = a.and_then(|a| f.placed(a)).is_some_and(|p| p.per_run());
        placed && (cell.metrics == L1D_MISSES || cell.metrics == [SPREAD])
    };
    let count = |n: usize, placed: bool| {
        let unit = if placed { "placement" } else { "boot" };
        format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
    };
    match cell.class {
        Class::Direction if !pairs.is_empty() => {
            Some(format!("{} placements paired run by run", pairs.len()))
        }
        Class::Direction if !arm.is_empty() && !base.is_empty() => Some(format!(
            "{} and {}",
            count(arm.len(), per_run(cell.arm.as_deref())),
            count(base.len(), per_run(cell.from.as_deref()))
        )),
        Class::Modelled if !ours.is_empty() => {
            Some(count(ours.len(), per_run(cell.arm.as_deref())))
        }
        _ => None,
    }
}

/// The paper's figure for `cell` per operation and syscost's figure in each boot (a ratio's
/// over its denominator's median boot, a change's less its base arm's median boot); whether the
/// cell is a ratio.
pub(super) fn paper_and_boots(t: &Table, cell: &PaperCell, f: &Figures) -> (f64, Vec<f64>, bool) {
    let per_boot = |arm: &str| f.per_boot(arm, &cell.metrics);
    let median_of = |arm: &str| {
        let v = per_boot(arm);
        (!v.is_empty()).then(|| crate::stats::median(&v))
    };
    let over = cell
        .denominator()
        .and_then(|(row, column)| t.cell(row, column));
    let mut paper = t.value(cell);
    let mut ours_boots = cell.arm.as_deref().map(per_boot).unwrap_or_default();
    if let Some(o) = over {
        paper /= t.value(o);
        let base = o.arm.as_deref().map(|a| f.per_boot(a, &o.metrics));
        let base = base.unwrap_or_default();
        let base = (!base.is_empty()).then(|| crate::stats::median(&base));
        ours_boots = match base {
            Some(b) if b > 0.0 => ours_boots.iter().map(|v| v / b).collect(),
            _ => Vec::new(),
        };
    }
    if let Some(from) = &cell.from {
        ours_boots = match median_of(from) {
            Some(b) => ours_boots.iter().map(|v| v - b).collect(),
            None => Vec::new(),
        };
    }
    // The denominator of a ratio row is not compared: its figure is another machine's.
    if matches!(cell.class, Class::Ratio | Class::Time) && over.is_none() {
        ours_boots.clear();
    }
    (paper, ours_boots, over.is_some())
}

/// The paper's figures of the same metrics in other arms, anywhere in the paper (a repeat's arm
/// is its scored cell's; none a change or a ratio), and every boot figure those arms
/// measured: what a modelled cell must tell itself apart from. A value drawn over a range wide
/// enough to hold another arm's figure from another table would pass too.
pub(super) fn rivals(p: &Paper, cell: &PaperCell, f: &Figures) -> (Vec<f64>, Vec<f64>) {
    let arm_of = |c: &PaperCell| -> Option<(String, Vec<String>)> {
        let repeated = c.repeats.as_deref().and_then(|at| p.cell_at(at));
        let of = c.arm.clone().map(|a| (a, c.metrics.clone()));
        of.or_else(|| repeated.and_then(|(_, r)| Some((r.arm.clone()?, r.metrics.clone()))))
    };
    let (mut paper, mut boots) = (Vec::new(), Vec::new());
    let mut arms: Vec<String> = Vec::new();
    for (t, c) in p.cells().filter(|(_, c)| {
        c.from.is_none()
            && c.denominator().is_none()
            && matches!(c.class, Class::Modelled | Class::Repeat)
    }) {
        let Some((arm, metrics)) = arm_of(c) else {
            continue;
        };
        if Some(&arm) == cell.arm.as_ref() || metrics != cell.metrics {
            continue;
        }
        paper.push(t.value(c));
        if !arms.contains(&arm) {
            boots.extend(f.per_boot(&arm, &cell.metrics));
            arms.push(arm);
        }
    }
    (paper, boots)
}

pub(super) fn range_of(xs: &[f64]) -> Option<(f64, f64)> {
    let lo = xs.iter().copied().reduce(f64::min)?;
    let hi = xs.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}
