//! Kernel releases in version order (`uname -r` strings): 6.9 < 6.10 < 6.18-rc1 < 6.18 <
//! 6.18.1, and Debian's 6.1.0-28-amd64 < 6.1.0-30-amd64. Written here because the semver
//! crates refuse most kernel releases (two components, `-rc1` without a dot, local suffixes).

use std::cmp::Ordering;

/// One piece of what follows the version numbers.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Piece {
    Number(u64),
    Text(String),
}

/// What a release sorts by.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    /// major.minor.patch, a missing part being 0 (6.18 is 6.18.0).
    version: [u64; 3],
    /// A release candidate sorts before its release: (0, N) for -rcN, (1, 0) for none.
    candidate: (u8, u64),
    /// The rest (distribution ABI numbers, local versions), numbers as numbers.
    rest: Vec<Piece>,
}

fn key(release: &str) -> Key {
    let pieces: Vec<&str> = release
        .split(['.', '-', '+', '_', '~'])
        .filter(|p| !p.is_empty())
        .collect();
    let mut version = [0u64; 3];
    let mut i = 0;
    while i < 3 && i < pieces.len() {
        match pieces[i].parse() {
            Ok(n) => version[i] = n,
            Err(_) => break,
        }
        i += 1;
    }
    let mut candidate = (1, 0);
    if let Some(n) = pieces
        .get(i)
        .and_then(|p| p.strip_prefix("rc"))
        .and_then(|n| n.parse().ok())
    {
        candidate = (0, n);
        i += 1;
    }
    let rest = pieces[i.min(pieces.len())..]
        .iter()
        .map(|p| match p.parse() {
            Ok(n) => Piece::Number(n),
            Err(_) => Piece::Text(p.to_string()),
        })
        .collect();
    Key {
        version,
        candidate,
        rest,
    }
}

/// Kernel releases in version order; equal keys fall back to the text.
pub(crate) fn order(a: &str, b: &str) -> Ordering {
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn releases_sort_as_kernel_versions() {
        let sorted = [
            "5.15.0-91-generic",
            "6.1.0-28-amd64",
            "6.1.0-30-amd64",
            "6.9.0",
            "6.10",
            "6.18-rc1",
            "6.18.0-rc7+",
            "6.18",
            "6.18.1",
            "6.18.10",
        ];
        let mut shuffled = sorted.to_vec();
        shuffled.reverse();
        shuffled.swap(2, 7);
        shuffled.sort_by(|a, b| order(a, b));
        assert_eq!(shuffled, sorted);
        assert_eq!(
            order("6.18.0", "6.18"),
            Ordering::Greater,
            "ties fall back to the text"
        );
        assert_eq!(order("not a version", "6.1"), Ordering::Less);
    }
}
