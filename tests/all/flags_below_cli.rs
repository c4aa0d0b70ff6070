//! Below the command line, options are named by what they set (`core::input::Opt`) and only
//! `cli/` spells them as flags: no string literal outside tests in the folders held to this
//! names one of syscost's flags. The flags are the parser's own, so a flag added later is
//! looked for too; other programs' flags (`qemu --version`, `systemctl --no-block`) are not.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

crate::tests! {
    Shared no_flag_is_spelled_below_the_command_line,
    Shared the_scan_sees_flags_in_every_kind_of_literal,
}

/// The folders (and files) held to it: all of `src/` outside `cli/`. A workload is one file
/// and a registry line, its options a piece of the parser (`Params` derives `clap::Args`), so
/// `src/workloads` may spell the flags of `syscost run` and its workloads ([`PARSER_PIECES`]),
/// and its help texts (`const ABOUT`, `const EXAMPLES`, shown by `--help`) any flag.
const HELD: &[&str] = &[
    "src/core",
    "src/stats",
    "src/signals",
    "src/audit",
    "src/counters",
    "src/probes",
    "src/profile",
    "src/environment",
    "src/results",
    "src/compare",
    "src/history",
    "src/boot",
    "src/experiments",
    "src/runner",
    "src/layout",
    "src/report",
    "src/workloads",
    "src/lib.rs",
];

/// Folders that define a piece of the parser, with the command whose flags they define.
const PARSER_PIECES: &[(&str, &str)] = &[("src/workloads", "run")];

/// The help constants of a parser piece, whose literals are help text.
const HELP_CONSTANTS: &[&str] = &["const ABOUT", "const EXAMPLES"];

/// Every long flag of syscost's parser, `--` included, but --help and --version, which clap
/// adds and other programs share.
fn syscost_flags() -> BTreeSet<String> {
    use clap::CommandFactory;
    flags_of(&syscost::cli::Cli::command())
}

/// The long flags of `c` and its subcommands, but --help and --version.
fn flags_of(c: &clap::Command) -> BTreeSet<String> {
    fn walk(c: &clap::Command, out: &mut BTreeSet<String>) {
        out.extend(
            c.get_arguments()
                .filter_map(|a| a.get_long())
                .map(|l| format!("--{l}")),
        );
        c.get_subcommands().for_each(|s| walk(s, out));
    }
    let mut out = BTreeSet::new();
    walk(c, &mut out);
    out.remove("--help");
    out.remove("--version");
    out
}

/// The string literals of Rust source `src` before its `#[cfg(test)]` module, with their
/// lines: plain and raw strings; comments, chars and lifetimes skipped. A literal that starts a
/// help constant (`const ABOUT: &str = "..."`) is left out when `skip_help`.
fn literals(src: &str, skip_help: bool) -> Vec<(usize, String)> {
    let tests = src.match_indices("#[cfg(test)]\n").find(|(at, m)| {
        let next = src[at + m.len()..].trim_start();
        ["mod ", "pub mod ", "pub(crate) mod "]
            .iter()
            .any(|m| next.starts_with(m))
    });
    let src = tests.map_or(src, |(at, _)| &src[..at]);
    let help = |i: usize| {
        let line = src[..i].rsplit('\n').next().unwrap_or("");
        skip_help
            && HELP_CONSTANTS
                .iter()
                .any(|c| line.trim_start().starts_with(c))
    };
    let b = src.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let rest = &src[i..];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let len = rest.find("*/").map_or(rest.len(), |e| e + 2);
            line += rest[..len].matches('\n').count();
            i += len;
        } else if b[i] == b'r'
            && !ident_before
            && (rest.starts_with("r\"") || rest.starts_with("r#"))
        {
            let hashes = rest[1..].chars().take_while(|&c| c == '#').count();
            let open = 1 + hashes + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = rest[open..].find(&close).map_or(rest.len(), |e| open + e);
            if !help(i) {
                out.push((line, rest[open..end].to_string()));
            }
            line += rest[..end].matches('\n').count();
            i += end + close.len();
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            if !help(i) {
                out.push((line, src[i + 1..j.min(b.len())].to_string()));
            }
            line += src[i..j.min(b.len())].matches('\n').count();
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('"', '\'') is skipped whole; a lifetime is one quote.
            let char_len = if rest[1..].starts_with('\\') {
                rest[2..].find('\'').map(|e| e + 3)
            } else {
                rest[1..]
                    .chars()
                    .next()
                    .filter(|_| rest[1..].chars().nth(1) == Some('\''))
                    .map(|c| c.len_utf8() + 2)
            };
            i += char_len.unwrap_or(1);
        } else {
            line += usize::from(b[i] == b'\n');
            i += 1;
        }
    }
    out
}

/// The syscost flags `text` names: `--name` not followed by another name character.
fn flags_in(text: &str, flags: &BTreeSet<String>) -> Vec<String> {
    let named = |f: &&String| {
        text.match_indices(f.as_str()).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + f.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
        })
    };
    flags.iter().filter(named).cloned().collect()
}

/// The flags a parser piece defines: those of the command `cmd` and its subcommands.
fn own_flags(cmd: &str) -> BTreeSet<String> {
    use clap::CommandFactory;
    let top = syscost::cli::Cli::command();
    let c = top.find_subcommand(cmd).expect("the piece's command");
    let own = flags_of(c);
    assert!(own.len() > 20, "{cmd}: {own:?}");
    own
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        return out.push(dir.to_path_buf());
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("tests.rs") {
            out.push(p);
        }
    }
}

fn no_flag_is_spelled_below_the_command_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let flags = syscost_flags();
    assert!(
        flags.len() > 100 && flags.contains("--host-cpus"),
        "{flags:?}"
    );
    let mut files = Vec::new();
    HELD.iter().for_each(|d| sources(&root.join(d), &mut files));
    assert!(files.len() > 50, "{files:?}");
    let mut found = Vec::new();
    for f in files {
        let piece = PARSER_PIECES
            .iter()
            .find(|(dir, _)| f.starts_with(root.join(dir)));
        let own = piece.map(|(_, cmd)| own_flags(cmd)).unwrap_or_default();
        let src = std::fs::read_to_string(&f).unwrap();
        for (line, text) in literals(&src, piece.is_some()) {
            for flag in flags_in(&text, &flags)
                .into_iter()
                .filter(|f| !own.contains(f))
            {
                let at = f.strip_prefix(root).unwrap().display();
                found.push(format!("{at}:{line}: {flag}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "flags spelled below cli/ (name the option as core::input::Opt, spelled by \
         core::input::spelled):\n{}",
        found.join("\n")
    );
}

/// The scan finds a flag in a plain string, a continued one and a raw one, and not in
/// comments, chars, tests, other programs' flags or longer names; in a help constant only when
/// asked to.
fn the_scan_sees_flags_in_every_kind_of_literal() {
    let flags: BTreeSet<String> = ["--runs", "--host-cpus"].map(String::from).into();
    let src = "fn f<'a>(c: char) {\n\
               // \"--runs\" in a comment\n\
               let q = '\"';\n\
               bail!(\"give \\\n  --runs 3\");\n\
               let r = r#\"--host-cpus\"#;\n\
               let s = \"--runs-per-cpu --no-block\";\n\
               }\n\
               const EXAMPLES: &str = \"syscost run spin --runs 3\";\n\
               #[cfg(test)]\npub(crate) mod unit { const T: &str = \"--runs\"; }\n";
    let found = |skip_help| -> Vec<(usize, Vec<String>)> {
        literals(src, skip_help)
            .into_iter()
            .map(|(l, t)| (l, flags_in(&t, &flags)))
            .filter(|(_, f)| !f.is_empty())
            .collect()
    };
    let runs = || vec!["--runs".to_string()];
    let held = [(4, runs()), (6, vec!["--host-cpus".to_string()])];
    assert_eq!(found(true), held);
    assert_eq!(
        found(false),
        [held[0].clone(), held[1].clone(), (9, runs())]
    );
}
