//! The builds are what they say: the share of each build's functions that start on the
//! boundary its name gives, read from its vmlinux (gcc leaves cold functions unaligned, and at
//! -Os aligns nothing more), against the share a build aligned to 16 bytes puts there by chance.

use super::{Build, Check, Detail, Outcome, TOOK, Verdict};
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Aligned {
    pub builds: Vec<Build>,
}

impl Check for Aligned {
    fn rule(&self) -> String {
        format!(
            "each build's functions read from its vmlinux: it is what its name says when at \
             least {:.0}% of the functions gcc aligns at all (the most any build puts on 16 \
             bytes) start on its boundary",
            100.0 * TOOK
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let read: Vec<&Build> = (self.builds.iter())
            .filter(|b| f.alignments.iter().any(|(a, _)| *a == b.arm))
            .collect();
        if read.is_empty() {
            return Outcome::missing(
                "no build's vmlinux was read (the store keeps one beside each build it makes)"
                    .into(),
            );
        }
        let off: Vec<String> = read.iter().filter_map(|b| b.not_aligned(f)).collect();
        let found = match off.is_empty() {
            true => format!("{} builds read, each on its boundary", read.len()),
            false => format!("not what its name says: {}", off.join("; ")),
        };
        let verdict = match off.is_empty() {
            true => Verdict::Agrees,
            false => Verdict::Disagrees,
        };
        Outcome {
            detail: Some(detail(&read, f)),
            ..Outcome::of(found, verdict)
        }
    }
}

/// A row per build: its functions and their shares on its boundary and on 16 and 64 bytes.
fn detail(builds: &[&Build], f: &Figures) -> Detail {
    let mut rows = Vec::new();
    for b in builds {
        let Some((_, a)) = f.alignments.iter().find(|(a, _)| *a == b.arm) else {
            continue;
        };
        let pct = |bytes: u64| format!("{:.1}%", 100.0 * a.share(bytes));
        rows.push(vec![
            b.arm.clone(),
            b.bytes.map_or("-".into(), |n| n.to_string()),
            a.functions.to_string(),
            b.bytes.map_or("-".into(), pct),
            pct(16),
            pct(64),
            match b.not_aligned(f) {
                Some(_) => "did not take".into(),
                None if b.bytes.is_some() => "took".into(),
                None => "-".into(),
            },
        ]);
    }
    Detail {
        title: "Each build's functions by the boundary they start on (its vmlinux's symbols)"
            .into(),
        head: [
            "build",
            "named for",
            "functions",
            "on it",
            "on 16",
            "on 64",
            "alignment",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![
            "a build aligned to 16 bytes puts about a quarter of its functions on 64 by \
             chance; gcc leaves the functions it takes for cold where they fall, in every \
             build"
                .into(),
        ],
    }
}
