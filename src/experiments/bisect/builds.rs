//! The builds a bisection searches, in order: from a list file, one build per line
//! (`[NAME=]KERNEL [kernel command-line words...]`, `#` comments), or from a directory of
//! kernel images (`vmlinuz-*`, `bzImage*`) sorted by the versions in their names.

use crate::core::input::Opt;
use crate::experiments::boots::Arm;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The longest list file read: a list of builds, not a data file.
const MAX_LIST: u64 = 1 << 20;

/// The builds in `path` (a list file or a directory), named by their `NAME=` or their file
/// name.
pub(crate) fn read(path: &Path) -> Result<Vec<Arm>> {
    let meta = std::fs::metadata(path).with_context(|| builds_said(path, ": cannot read it"))?;
    let builds = if meta.is_dir() {
        from_dir(path)?
    } else if meta.is_file() && meta.len() > MAX_LIST {
        let why = format!(
            ": {} KiB is more than a list of builds holds (syscost reads at most {} KiB)",
            meta.len() >> 10,
            MAX_LIST >> 10
        );
        return Err(builds_said(path, why));
    } else if meta.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| builds_said(path, ": cannot read it as text"))?;
        let base = path.parent().unwrap_or(Path::new("."));
        from_list(&text, base).with_context(|| builds_said(path, ""))?
    } else {
        let why = ": give a list file (one build per line) or a directory of kernel images";
        return Err(builds_said(path, why));
    };
    if builds.len() < 2 {
        let why = format!(
            ": {} build(s); a bisection needs at least the two ends",
            builds.len()
        );
        return Err(builds_said(path, why));
    }
    Ok(builds)
}

/// One build per line: `[NAME=]KERNEL [words...]`; the words are added to its kernel command
/// line. A relative KERNEL is relative to the list's directory.
pub(crate) fn from_list(text: &str, base: &Path) -> Result<Vec<Arm>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().expect("not empty");
        let (name, kernel) = match first.split_once('=') {
            Some((name, kernel)) if !name.contains('/') && !kernel.is_empty() => {
                (Some(name.to_string()), kernel)
            }
            _ => (None, first),
        };
        let kernel = base.join(kernel);
        let name = match name {
            Some(n) => n,
            None => file_name(&kernel).with_context(|| format!("line {}", n + 1))?,
        };
        out.push(Arm {
            name,
            kernel,
            append: words.collect::<Vec<_>>().join(" "),
            rules: None,
            ..Arm::default()
        });
    }
    Ok(out)
}

fn file_name(p: &Path) -> Result<String> {
    p.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .with_context(|| format!("{} names no file", p.display()))
}

/// A refusal of the builds given at `path`: `why` follows the option and the path.
fn builds_said(path: &Path, why: impl std::fmt::Display) -> anyhow::Error {
    crate::refused!(Opt::Builds, " ", path.display(), why)
}

/// The kernel images of a directory, by version.
fn from_dir(dir: &Path) -> Result<Vec<Arm>> {
    let mut images: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| builds_said(dir, ": cannot list it"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("vmlinuz") || n.starts_with("bzImage")
        })
        .collect();
    images.sort_by(|a, b| version_order(&a.to_string_lossy(), &b.to_string_lossy()));
    images
        .into_iter()
        .map(|kernel| {
            Ok(Arm {
                name: file_name(&kernel)?,
                kernel,
                append: String::new(),
                rules: None,
                ..Arm::default()
            })
        })
        .collect()
}

/// Names in version order: runs of digits compare as numbers (6.12.9 before 6.12.10).
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let key = |(digits, run): (bool, &str)| match digits {
        true => (
            run.trim_start_matches('0').len(),
            run.trim_start_matches('0').to_string(),
        ),
        false => (0, run.to_string()),
    };
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let o = match (x.0, y.0) {
            (true, true) => key(*x).cmp(&key(*y)),
            _ => x.1.cmp(y.1),
        };
        if o.is_ne() {
            return o;
        }
    }
    ra.len().cmp(&rb.len())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn versions_sort_as_numbers() {
        let mut v = vec![
            "vmlinuz-6.12.117+deb12-cloud-amd64",
            "vmlinuz-6.12.9+deb12-cloud-amd64",
            "vmlinuz-6.12.100+deb12-cloud-amd64",
            "vmlinuz-6.1.0-56-cloud-amd64",
        ];
        v.sort_by(|a, b| version_order(a, b));
        assert_eq!(
            v,
            [
                "vmlinuz-6.1.0-56-cloud-amd64",
                "vmlinuz-6.12.9+deb12-cloud-amd64",
                "vmlinuz-6.12.100+deb12-cloud-amd64",
                "vmlinuz-6.12.117+deb12-cloud-amd64",
            ]
        );
    }

    #[test]
    fn a_list_names_builds_and_adds_their_command_lines() {
        let text = "# builds of the series\nvmlinuz-a\nfix=/boot/vmlinuz-b audit=1 quiet\n\n";
        let b = from_list(text, Path::new("/k")).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].name.as_str(), b[0].kernel.as_path()),
            ("vmlinuz-a", Path::new("/k/vmlinuz-a"))
        );
        assert_eq!(
            (b[1].name.as_str(), b[1].append.as_str()),
            ("fix", "audit=1 quiet")
        );
        assert_eq!(b[1].kernel, Path::new("/boot/vmlinuz-b"));
    }
}
