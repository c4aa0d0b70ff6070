//! A result file of any kind, read through the one loader (`results::load`) and decoded into
//! its type: what `syscost report` takes.

use crate::compare::Comparison;
use crate::compare::correlate::CorrelationResult;
use crate::compare::merge::Merged;
use crate::core::Kind;
use crate::experiments::audit_sweep::Sweep;
use crate::experiments::probe::ProbeResult;
use crate::experiments::scale::Scale;
use crate::layout::Analysis;
use crate::results::RunResult;
use crate::results::load::{self, Accept, LoadError};
use std::path::Path;

/// A loaded result of any kind.
pub enum Loaded {
    Run(Box<RunResult>),
    Compare(Box<Comparison>),
    Merged(Box<Merged>),
    Sweep(Box<Sweep>),
    Scale(Box<Scale>),
    Correlate(Box<CorrelationResult>),
    Cachesets(Box<Analysis>),
    Probe(Box<ProbeResult>),
    Trend(Box<crate::compare::trend::Trend>),
}

/// The chart kinds `--svg` can draw.
pub const KINDS: &[&str] = &[
    "run",
    "profile",
    "compare",
    "ranking",
    "merge",
    "sweep",
    "scale",
    "correlate",
    "cachesets",
    "trend",
];

impl Loaded {
    pub fn kind(&self) -> &'static str {
        match self {
            Loaded::Run(_) => Kind::Run,
            Loaded::Compare(_) => Kind::Compare,
            Loaded::Merged(_) => Kind::Merged,
            Loaded::Sweep(_) => Kind::AuditSweep,
            Loaded::Scale(_) => Kind::Scale,
            Loaded::Correlate(_) => Kind::Correlate,
            Loaded::Cachesets(_) => Kind::Cachesets,
            Loaded::Probe(_) => Kind::Probe,
            Loaded::Trend(_) => Kind::Trend,
        }
        .name()
    }
}

/// Dots drawn per run: at most twice this many of its raw samples are read (see
/// `results::thin`); a strip of a million dots says no more than one of a thousand.
pub const SAMPLES_DRAWN: usize = 500;

/// Read a result of any kind, with one clear error naming the file. A run result's raw samples
/// are read only as far as the page draws them.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let checked = load::open_checked(path, Accept::ANY)?;
    let name = path.display().to_string();
    let loaded = match checked.kind {
        Kind::Run => Loaded::Run(Box::new(RunResult::decode(&checked, Some(SAMPLES_DRAWN))?)),
        _ => decode(&checked)?,
    };
    undamaged(&name, checked.kind, loaded)
}

/// A result of any kind from its JSON text (`name` names it in errors).
pub fn parse(name: &str, text: &str) -> Result<Loaded, LoadError> {
    let checked = load::Checked::from_text(name, text.to_string(), Accept::ANY)?;
    undamaged(name, checked.kind, decode(&checked)?)
}

fn decode(c: &load::Checked) -> Result<Loaded, LoadError> {
    Ok(match c.kind {
        Kind::Run => Loaded::Run(Box::new(c.decode()?)),
        Kind::Compare => Loaded::Compare(Box::new(c.decode()?)),
        Kind::Merged => Loaded::Merged(Box::new(c.decode()?)),
        Kind::AuditSweep => Loaded::Sweep(Box::new(c.decode()?)),
        Kind::Scale => Loaded::Scale(Box::new(c.decode()?)),
        Kind::Correlate => Loaded::Correlate(Box::new(c.decode()?)),
        Kind::Cachesets => Loaded::Cachesets(Box::new(c.decode()?)),
        Kind::Probe => Loaded::Probe(Box::new(c.decode()?)),
        Kind::Trend => Loaded::Trend(Box::new(c.decode()?)),
    })
}

fn undamaged(name: &str, kind: Kind, loaded: Loaded) -> Result<Loaded, LoadError> {
    match loaded.damage() {
        Some(what) => Err(LoadError::Damaged {
            path: name.into(),
            kind: kind.name().into(),
            detail: what,
        }),
        None => Ok(loaded),
    }
}

/// What a comparison needs to be drawn: a baseline, and deltas and ranks that name variants.
fn comparison_damage(c: &Comparison) -> Option<String> {
    let n = c.variants.len();
    if n == 0 {
        return Some("it has no variants".into());
    }
    if c.deltas.iter().any(|d| d.variant >= n) || c.ranking.iter().any(|r| r.variant >= n) {
        return Some(format!("a delta or rank names a variant beyond its {n}"));
    }
    None
}

impl Loaded {
    /// What makes a decoded result unusable for the page, if anything: the structure serde
    /// cannot check (empty lists that every chart starts from, indices into other lists).
    fn damage(&self) -> Option<String> {
        match self {
            Loaded::Compare(c) => comparison_damage(c),
            Loaded::Probe(p) => comparison_damage(&p.comparison),
            Loaded::Sweep(s) if s.steps.is_empty() => Some("it has no steps".into()),
            Loaded::Merged(m) if m.groups.is_empty() => Some("it has no groups".into()),
            Loaded::Trend(t) if t.points.is_empty() => Some("it has no groups".into()),
            Loaded::Trend(t) if t.steps.iter().any(|s| s.to >= t.points.len()) => {
                Some("a step names a group beyond its list".into())
            }
            _ => None,
        }
    }
}

impl Loaded {
    /// The result as text in `format`, as its own kind renders it.
    pub fn text(&self, format: super::format::Format) -> String {
        use super::Render;
        match self {
            Loaded::Run(r) => r.text(format),
            Loaded::Compare(c) => c.text(format),
            Loaded::Merged(m) => super::merge::MergeTables {
                merged: m,
                metric: "time",
            }
            .text(format),
            Loaded::Sweep(s) => s.text(format),
            Loaded::Scale(s) => s.text(format),
            Loaded::Correlate(c) => c.text(format),
            Loaded::Cachesets(a) => a.text(format),
            Loaded::Probe(p) => p.text(format),
            Loaded::Trend(t) => t.text(format),
        }
    }
}
