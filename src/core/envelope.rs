//! The envelope every syscost result file carries: the schema name, its version, the kind of
//! result, and the tool that wrote it. Each result type holds one [`Envelope`], flattened into
//! its JSON, so the header is filled in one place ([`Envelope::new`]) and checked in one place
//! (the loader in `results::load`).

use serde::{Deserialize, Serialize};

/// The `schema` field of every syscost result file.
pub const SCHEMA: &str = "syscost-result";
/// The schema version this build writes; it reads this version and older ones.
///
/// 2: a comparison's interval is `ci_pct` at 1 - alpha (was `ci95_pct`, still read), with
/// `ci_equivalence_pct`, `n`, `decision` and the comparison's `analysis`.
pub const VERSION: u32 = 2;

/// What a result file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `syscost run`: every raw sample of every run.
    Run,
    /// `syscost compare` or `syscost ab`.
    Compare,
    /// `syscost merge`: results of several boots.
    Merged,
    /// `syscost audit sweep` and `audit residue`.
    AuditSweep,
    /// A thread-count sweep (`run uprobe --threads LIST`).
    Scale,
    /// `syscost correlate`.
    Correlate,
    /// `syscost cachesets`.
    Cachesets,
    /// `syscost probe`.
    Probe,
    /// `syscost history trend`: a metric across groups in order (kernel versions).
    Trend,
    /// `syscost campaign`: kernels booted round after round and compared over boots.
    Campaign,
    /// `syscost bisect`: the first build in order where a figure changed.
    Bisection,
    /// `syscost reproduce`: a public investigation's tables beside syscost's figures.
    Reproduction,
}

impl Kind {
    /// Every kind, in the order `--help` lists them.
    pub(crate) const ALL: [Kind; 12] = [
        Kind::Run,
        Kind::Compare,
        Kind::Merged,
        Kind::AuditSweep,
        Kind::Scale,
        Kind::Correlate,
        Kind::Cachesets,
        Kind::Probe,
        Kind::Trend,
        Kind::Campaign,
        Kind::Bisection,
        Kind::Reproduction,
    ];

    /// The name written in the `kind` field.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Compare => "compare",
            Kind::Merged => "merged",
            Kind::AuditSweep => "audit-sweep",
            Kind::Scale => "scale",
            Kind::Correlate => "correlate",
            Kind::Cachesets => "cachesets",
            Kind::Probe => "probe",
            Kind::Trend => "trend",
            Kind::Campaign => "campaign",
            Kind::Bisection => "bisection",
            Kind::Reproduction => "reproduction",
        }
    }

    /// The kind named `name`, if syscost knows it.
    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The tool that wrote a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    pub(crate) fn this() -> ToolInfo {
        ToolInfo {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

impl Default for ToolInfo {
    /// For files written before every kind recorded its tool.
    fn default() -> ToolInfo {
        ToolInfo {
            name: env!("CARGO_PKG_NAME").into(),
            version: "unknown".into(),
        }
    }
}

/// The header of every result file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema: String,
    pub version: u32,
    pub kind: Kind,
    #[serde(default)]
    pub tool: ToolInfo,
}

impl Envelope {
    /// The header of a result of `kind` written now by this build.
    pub(crate) fn new(kind: Kind) -> Envelope {
        Envelope {
            schema: SCHEMA.into(),
            version: VERSION,
            kind,
            tool: ToolInfo::this(),
        }
    }
}

/// Seconds since the epoch, for the `created_unix` of results.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn kinds_round_trip_by_name_and_json() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert_eq!(Kind::parse("nonsense"), None);
    }
}
