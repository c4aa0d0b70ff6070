//! The kernels the investigations build ([`crate::kbuild`]): Debian's linux-source-6.1 as it
//! is (the code the 2022 audit syscall-exit series changed: it was written against 6.0-rc5,
//! and went in after 6.1), with the series' patches 1, 1-2 and 1-3 (`papers/audit-series/`,
//! written to the hunks and descriptions the series and the 2023 syscall-latency post print),
//! and the function-alignment RFC's builds of that source (-Os, -falign-functions=1 to 512).

use crate::kbuild::config::Optimize;
use crate::kbuild::{Change, LINUX_SOURCE_61, Recipe};

const PATCH1: Change = Change {
    name: "patch1",
    diff: include_str!("../../../papers/audit-series/1-cache-major.patch"),
};
const PATCH2: Change = Change {
    name: "patch2",
    diff: include_str!("../../../papers/audit-series/2-annotate-branch.patch"),
};
const PATCH3: Change = Change {
    name: "patch3",
    diff: include_str!("../../../papers/audit-series/3-unify-filters.patch"),
};

/// A build of Debian's linux-source-6.1 with `changes`.
const fn series(name: &'static str, changes: &'static [Change]) -> Recipe {
    Recipe {
        name,
        source: LINUX_SOURCE_61,
        changes,
        optimize: Optimize::Performance,
        kcflags: "",
    }
}

/// linux-source-6.1 as Debian ships it: the series' baseline.
pub(crate) const BASELINE: Recipe = series("baseline", &[]);
pub(crate) const PATCH_1: Recipe = series("patch1", &[PATCH1]);
pub(crate) const PATCH_1_2: Recipe = series("patch1-2", &[PATCH1, PATCH2]);
pub(crate) const PATCH_1_3: Recipe = series("patch1-3", &[PATCH1, PATCH2, PATCH3]);

/// One of the RFC's builds: `-falign-functions=BYTES` last on gcc's line.
pub(crate) const fn aligned(name: &'static str, kcflags: &'static str) -> Recipe {
    Recipe {
        kcflags,
        ..series(name, &[])
    }
}

/// The RFC's 16-byte build, its vanilla kernel: the source as it is, which is the series'
/// baseline (one build, kept once), since gcc aligns functions to 16 bytes at -O2 unless told
/// otherwise (`.p2align 4`, as -falign-functions=16 gives: the builds' alignment claim reads
/// it from the vmlinux).
pub(crate) const VANILLA: Recipe = Recipe {
    name: "align-16",
    ..BASELINE
};

/// The RFC's -Os build.
pub(crate) const SIZE: Recipe = Recipe {
    optimize: Optimize::Size,
    ..series("align-os", &[])
};

#[cfg(test)]
mod unit {
    use super::*;

    /// The auditsc.c of Debian's linux-source-6.1 (6.1.192) the series' changes apply to, as
    /// far as they touch it: its filter functions, from audit_in_mask() to
    /// audit_filter_inodes().
    fn source_61() -> Option<String> {
        let tarball = std::path::Path::new(LINUX_SOURCE_61.tarball);
        if !tarball.is_file() {
            return None;
        }
        let out = std::process::Command::new("tar")
            .arg("-xaOf")
            .arg(tarball)
            .arg("linux-source-6.1/kernel/auditsc.c")
            .output()
            .unwrap();
        assert!(out.status.success());
        Some(String::from_utf8(out.stdout).unwrap())
    }

    #[test]
    fn each_change_of_the_series_applies_to_debian_s_6_1_in_turn() {
        let Some(text) = source_61() else {
            // scripts/test.sh installs linux-source-6.1 (and fails here without it); a bare
            // `cargo test` may lack it.
            let why = format!("no {} to apply the changes to", LINUX_SOURCE_61.tarball);
            assert!(
                std::env::var_os("SYSCOST_TEST_REQUIRE_ALL").is_none(),
                "{why}"
            );
            println!("skipped: {why}");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kernel")).unwrap();
        let file = dir.path().join("kernel/auditsc.c");
        std::fs::write(&file, &text).unwrap();
        for c in PATCH_1_3.changes {
            let out = std::process::Command::new("patch")
                .args(["-p1", "--forward", "-F0", "-d"])
                .arg(dir.path())
                .stdin(std::process::Stdio::piped())
                .output_with(c.diff);
            assert!(out, "{} applies exactly", c.name);
        }
        let patched = std::fs::read_to_string(&file).unwrap();
        // Patch 1's local, patch 2's annotation and patch 3's one walk, as the kernel merged it.
        assert!(!text.contains("__audit_filter_op"));
        for walk in [
            "list_for_each_entry_rcu(e, &audit_filter_list[AUDIT_FILTER_EXIT], list) {",
            "list_for_each_entry_rcu(e, &audit_filter_list[AUDIT_FILTER_URING_EXIT],",
        ] {
            assert!(text.contains(walk) && !patched.contains(walk), "{walk}");
        }
        let one = "list_for_each_entry_rcu(e, list, list) {\n\t\tif (unlikely(audit_in_mask(&e->rule, op))) {";
        assert_eq!(patched.matches(one).count(), 1);
        assert!(patched.contains("NULL, ctx->major);"));
        assert!(!patched.contains("audit_in_mask(&e->rule, ctx->major) &&"));
    }

    trait OutputWith {
        fn output_with(&mut self, input: &str) -> bool;
    }

    impl OutputWith for std::process::Command {
        fn output_with(&mut self, input: &str) -> bool {
            use std::io::Write;
            let mut child = self.spawn().unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
            child.wait().unwrap().success()
        }
    }

    #[test]
    fn the_series_builds_differ_by_their_changes_only() {
        let keys: Vec<String> = [BASELINE, PATCH_1, PATCH_1_2, PATCH_1_3]
            .iter()
            .map(|b| b.key("source"))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(!keys[i + 1..].contains(k), "{k}");
        }
        let base = |b: Recipe| b.base().key("source");
        assert_eq!(base(PATCH_1_3), base(BASELINE), "one base for the series");
        assert_eq!(base(BASELINE), BASELINE.key("source"));
    }
}
