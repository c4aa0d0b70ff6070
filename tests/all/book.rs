//! End-to-end: the book (docs/, mdBook) and the README stay true. Every `syscost` command of
//! their code blocks is parsed by syscost's own argument parser (a renamed or removed option
//! fails here), the measuring command a campaign or a bisection boots included; and the book
//! builds with mdBook, which scripts/test.sh installs.

use crate::common::*;
use std::path::{Path, PathBuf};

crate::tests! {
    Shared every_command_line_of_the_documentation_parses,
    Shared the_book_builds_and_every_chapter_is_in_it,
}

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A document: its path from the root, and its text.
pub struct Doc {
    pub path: String,
    pub text: String,
}

/// The README and every chapter of the book, README first, chapters in name order.
pub fn documents() -> Vec<Doc> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .expect("docs/src holds the book")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths.insert(0, root().join("README.md"));
    let doc = |p: PathBuf| Doc {
        path: p.strip_prefix(root()).unwrap().display().to_string(),
        text: std::fs::read_to_string(&p).unwrap(),
    };
    paths.into_iter().map(doc).collect()
}

/// Where an example stands: its document and line.
#[derive(Clone, Debug)]
pub struct At {
    pub path: String,
    pub line: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{} line {}", self.path, self.line)
    }
}

/// Every command of the documents' code blocks that starts `syscost` (a `$ ` prompt dropped,
/// `\` continuations joined, a trailing `# comment` dropped), with where it is.
pub fn examples() -> Vec<(At, String)> {
    documents().iter().flat_map(examples_of).collect()
}

fn examples_of(doc: &Doc) -> Vec<(At, String)> {
    let mut out = Vec::new();
    let (mut in_block, mut open): (bool, Option<(usize, String)>) = (false, None);
    for (i, line) in doc.text.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let text = line.trim();
        let text = text.strip_prefix("$ ").unwrap_or(text);
        let (body, more) = match text.strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (text, false),
        };
        let current = match open.take() {
            Some((at, so_far)) => Some((at, format!("{so_far} {body}"))),
            None if in_block && body.starts_with("syscost ") => Some((i + 1, body.to_string())),
            None => None,
        };
        match (current, more) {
            (Some(c), true) => open = Some(c),
            (Some((line, c)), false) => {
                let at = At {
                    path: doc.path.clone(),
                    line,
                };
                out.push((at, without_comment(&c)));
            }
            (None, _) => {}
        }
    }
    out
}

/// `cmd` without a trailing `  # comment`.
fn without_comment(cmd: &str) -> String {
    match cmd.find("  #") {
        Some(at) => cmd[..at].trim_end().to_string(),
        None => cmd.to_string(),
    }
}

/// `cmd` with each shell command substitution, `$(uname -r)`, one word.
fn substituted(cmd: &str) -> String {
    let mut out = cmd.to_string();
    while let Some(at) = out.find("$(") {
        let Some(len) = out[at..].find(')') else {
            break;
        };
        out.replace_range(at..at + len + 1, "SUBSTITUTED");
    }
    out
}

/// Parse `words` (without the program's name) as syscost does; the error's first line.
fn parses(words: &[String]) -> Result<(), String> {
    use clap::Parser;
    let argv = std::iter::once("syscost".to_string()).chain(words.iter().cloned());
    syscost::cli::Cli::try_parse_from(argv)
        .map(|_| ())
        .map_err(|e| {
            e.render()
                .to_string()
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
}

/// A campaign's or a bisection's measuring command (after its first `--`), which each boot
/// parses with the same parser.
fn measuring(words: &[String]) -> Option<&[String]> {
    let boots = matches!(
        words.first().map(String::as_str),
        Some("campaign" | "bisect")
    );
    let at = words.iter().position(|w| w == "--")?;
    boots.then(|| &words[at + 1..])
}

/// Every documented command line parses, and so does the command each of its boots runs.
fn every_command_line_of_the_documentation_parses() {
    let all = examples();
    assert!(all.len() >= 30, "{} examples: {all:?}", all.len());
    let mut wrong = Vec::new();
    for (at, cmd) in &all {
        let Some(words) = shlex::split(&substituted(cmd)) else {
            wrong.push(format!("{at}: `{cmd}` is not a shell command line"));
            continue;
        };
        let words = &words[1..];
        if let Err(e) = parses(words) {
            wrong.push(format!("{at}: `{cmd}`: {e}"));
        }
        if let Some(Err(e)) = measuring(words).map(parses) {
            wrong.push(format!("{at}: the measuring command of `{cmd}`: {e}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// mdBook, as scripts/test.sh installs it (target/tools), or on the PATH.
fn mdbook() -> Option<PathBuf> {
    let local = root().join("target/tools/bin/mdbook");
    if local.exists() {
        return Some(local);
    }
    let found = std::process::Command::new("mdbook")
        .arg("--version")
        .output();
    found
        .is_ok_and(|o| o.status.success())
        .then(|| "mdbook".into())
}

/// The book builds, and every chapter in docs/src is in its table of contents (a chapter left
/// out would be tested here and never read).
fn the_book_builds_and_every_chapter_is_in_it() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    for doc in documents().iter().skip(1) {
        let name = doc.path.trim_start_matches("docs/src/");
        if name != "SUMMARY.md" {
            assert!(
                summary.contains(&format!("({name})")),
                "{name} is not in SUMMARY.md"
            );
        }
    }
    let Some(mdbook) = mdbook() else {
        return skip("mdbook is not installed (scripts/test.sh installs it into target/tools)");
    };
    let out_dir = scratch();
    let out = std::process::Command::new(mdbook)
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(out_dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mdbook build: {err}");
    assert!(!err.contains("WARN") && !err.contains("ERROR"), "{err}");
    let page = std::fs::read_to_string(out_dir.path().join("campaign.html")).unwrap();
    assert!(
        page.contains("syscost campaign"),
        "the campaign chapter's page"
    );
}
