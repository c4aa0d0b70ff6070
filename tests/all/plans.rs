//! Commands hand each other typed plans, never words: no code outside the command line's own
//! parse gives syscost's parser words to read (a command that wrote another's words and
//! parsed them back, as a reproduction once did with its campaign's, fails here), and no code
//! gathers a command's words from the process's arguments by hand but where it records its own
//! command line. The measuring command a guest runs is words by nature (the guest's syscost is
//! another process): it is checked by the same parser in one place, listed below.

use std::path::Path;

crate::tests! {
    Shared no_command_composes_another_command_s_words,
}

/// Where syscost's own parser may read words, and why.
const PARSED_AT: &[(&str, &str)] = &[
    ("src/cli/mod.rs", "the process's own command line"),
    (
        "src/cli/boots.rs",
        "the measuring command each guest runs, checked before anything boots",
    ),
];

/// Where the process's arguments may be read, and why.
const ARGUMENTS_AT: &[(&str, &str)] = &[
    ("src/cli/mod.rs", "the parse of the command line"),
    (
        "src/cli/campaign.rs",
        "a campaign keeps its own command line, for `campaign status`",
    ),
    (
        "src/cli/bisect/mod.rs",
        "a bisection keeps its own command line, for `bisect status`",
    ),
];

/// What calls syscost's parser on words.
const PARSE_CALLS: &[&str] = &[
    "Cli::try_parse_from",
    "Cli::parse_from",
    "try_get_matches_from",
    "get_matches_from",
    "Cli::from_arg_matches",
];

/// `src` before its unit tests, comment lines left out.
fn code(src: &str) -> String {
    let end = src.find("#[cfg(test)]\nmod ").unwrap_or(src.len());
    (src[..end].lines())
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The places in `files` (path relative to the root, code) naming one of `calls` outside
/// `allowed`.
fn outside(files: &[(String, String)], calls: &[&str], allowed: &[(&str, &str)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in files {
        if allowed.iter().any(|(p, _)| p == path) {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            if let Some(c) = calls.iter().find(|c| line.contains(*c)) {
                found.push(format!("{path}:{}: {c}", n + 1));
            }
        }
    }
    found
}

fn no_command_composes_another_command_s_words() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    crate::layers::sources(&root.join("src"), &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            (rel, code(&std::fs::read_to_string(p).unwrap()))
        })
        .collect();
    assert!(files.len() > 150, "{}", files.len());
    // The checks see what they look for: the allowed places hold it.
    for (path, _) in PARSED_AT {
        let (_, c) = files.iter().find(|(p, _)| p == path).unwrap();
        assert!(PARSE_CALLS.iter().any(|call| c.contains(call)), "{path}");
    }
    let parsed = outside(&files, PARSE_CALLS, PARSED_AT);
    assert!(
        parsed.is_empty(),
        "syscost's parser reads words composed by a command: hand the other command a typed \
         plan instead (experiments/*/ask.rs), and render the words a user would type from it \
         (cli/rerun.rs): {parsed:#?}"
    );
    let gathered = outside(&files, &["env::args("], ARGUMENTS_AT);
    assert!(
        gathered.is_empty(),
        "a command's words gathered from the process's arguments by hand: {gathered:#?}"
    );
    // The check fails where it must: a composed parse, as `reproduce` once made.
    let composed = vec![(
        "src/cli/reproduce.rs".to_string(),
        "let args = Cli::try_parse_from(words)?;".to_string(),
    )];
    assert_eq!(outside(&composed, PARSE_CALLS, PARSED_AT).len(), 1);
}
