//! `syscost ab`: two or more configurations measured interleaved (A B, B A, ...), each run in a
//! fresh worker, then compared as configurations (their parameters differ on purpose).

use crate::compare::{self, Comparison, Variant};
use crate::runner::{self, Plan, Progress};
use anyhow::{Result, bail};
use std::path::Path;

/// The file name a variant's result is saved under in `--save DIR`.
pub fn file_name(label: &str) -> String {
    let name: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{name}.json")
}

/// Measure `plans` interleaved and compare them, the first as the baseline. With `save`, each
/// variant's full result is also written there.
pub fn run(
    plans: &[Plan],
    labels: &[String],
    options: &compare::Options,
    save: Option<&Path>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Comparison> {
    if plans.len() < 2 || labels.len() != plans.len() {
        bail!("ab needs two or more configurations, each with a label");
    }
    let results = runner::run_interleaved(plans, progress)?;
    let mut variants = Vec::new();
    for (r, label) in results.iter().zip(labels) {
        if let Some(dir) = save {
            r.save(&dir.join(file_name(label)))?;
        }
        variants.push(Variant::from_run(label, "ab", r));
    }
    compare::compare(
        variants,
        &compare::Options {
            configurations: true,
            paired: true,
            ..options.clone()
        },
    )
}

#[cfg(test)]
mod unit {
    #[test]
    fn labels_become_safe_file_names() {
        assert_eq!(
            super::file_name("syscall --syscall getpid"),
            "syscall_--syscall_getpid.json"
        );
        assert_eq!(super::file_name("a/b"), "a_b.json");
    }
}
