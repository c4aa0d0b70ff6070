//! The architecture holds: every `crate::` path in `src/` points down the layer table (a module
//! may use only modules of lower layers), so no import cycle can form between modules. The table
//! is the one in `src/lib.rs` and the book's layers chapter (docs/src/layers.md); a new top-level module must be
//! placed in it here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

crate::tests! {
    Shared every_import_points_down_the_layer_table,
    Shared the_checker_sees_imports_in_every_form,
    Shared the_book_and_lib_rs_name_the_layers_this_test_checks,
    Shared no_file_imports_itself_through_its_siblings,
}

/// Bottom first. Modules of one layer may not use each other.
const LAYERS: &[&[&str]] = &[
    &["core"],
    &["stats", "signals"],
    &["counters", "profile", "probes", "audit", "layout"],
    &["environment", "workloads", "kbuild"],
    &["results"],
    &["runner", "boot", "compare", "history"],
    &["experiments"],
    &["report"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `.rs` file below `dir` (the plans test walks the same files).
pub(crate) fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for lib.rs and main.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    if rel.components().count() == 1 {
        let stem = first.trim_end_matches(".rs");
        return (stem != "lib" && stem != "main").then(|| stem.to_string());
    }
    Some(first)
}

/// Every `crate::NAME` in the code of `text` (comments left out), with its line number.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().last();
            rest = &rest[at + "crate::".len()..];
            // `syscost_crate::` or `$crate::` are not this crate's paths.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((i + 1, name));
            }
        }
        // `use crate::{a, b::c}` names several modules at once.
        if let Some(at) = code.find("crate::{") {
            let inner = &code[at + "crate::{".len()..];
            for part in inner.split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push((i + 1, name));
                }
            }
        }
    }
    out
}

/// Each `#[macro_export]` macro of `files` (named at the crate's root), by the module that
/// defines it.
fn exported_macros(src: &Path, files: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for (at, _) in text.match_indices("#[macro_export]") {
            let rest = text[at..]
                .split_once("macro_rules!")
                .map(|(_, r)| r.trim_start());
            let name: String = (rest.unwrap_or("").chars())
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if let (false, Some(m)) = (name.is_empty(), module_of(src, f)) {
                out.insert(name, m);
            }
        }
    }
    out
}

fn every_import_points_down_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "found the sources: {}", files.len());
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let exported = exported_macros(&src, &files);
    for f in &files {
        let Some(from) = module_of(&src, f) else {
            continue;
        };
        let Some(lf) = layer_of(&from) else {
            problems.push(format!(
                "{}: module '{from}' is in no layer: place it in LAYERS (tests/all/layers.rs), \
                 src/lib.rs and docs/src/layers.md",
                f.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for (line, to) in crate_paths(&text) {
            // `crate::said!` is core's: a macro_export'ed macro lives at the crate's root.
            let to = exported.get(&to).cloned().unwrap_or(to);
            if to == from {
                continue;
            }
            edges.entry(from.clone()).or_default().insert(to.clone());
            match layer_of(&to) {
                None => problems.push(format!(
                    "{}:{line}: crate::{to} is in no layer of the table",
                    f.display()
                )),
                Some(lt) if lt >= lf => problems.push(format!(
                    "{}:{line}: `{from}` (layer {}) imports crate::{to} (layer {}): imports must \
                     point down the layer table; move the shared piece down, or this code up",
                    f.display(),
                    lf + 1,
                    lt + 1
                )),
                _ => {}
            }
        }
    }
    // With every import pointing down no cycle can form; the search says so independently of
    // the table, naming the modules of any cycle.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == m) {
            cycles.push(format!("{} -> {m}", path[at..].join(" -> ")));
            return;
        }
        if !done.insert(m.to_string()) {
            return;
        }
        path.push(m.to_string());
        for n in edges.get(m).into_iter().flatten() {
            visit(n, edges, path, done, cycles);
        }
        path.pop();
    }
    let mut cycles = Vec::new();
    let mut done = BTreeSet::new();
    for m in edges.keys() {
        visit(m, &edges, &mut Vec::new(), &mut done, &mut cycles);
    }
    for c in cycles {
        problems.push(format!("import cycle between modules: {c}"));
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

fn the_checker_sees_imports_in_every_form() {
    let code = "use crate::core::fmt_num;\n\
                use crate::{results::Metric, stats};\n\
                // crate::cli in a comment\n\
                let x = crate::report::fmt(1); // and crate::cli\n\
                let y = $crate::nothing; let z = my_crate::nothing;\n";
    let names: Vec<String> = crate_paths(code).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["core", "results", "stats", "report"]);
    assert!(layer_of("core") < layer_of("cli"));
    assert_eq!(layer_of("nonsense"), None);
}

/// The names in backquotes (the book) or doc links (lib.rs) of `text`.
fn names_in(text: &str, open: &str) -> BTreeSet<String> {
    text.split(open)
        .skip(1)
        .filter_map(|r| r.split('`').next())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(String::from)
        .collect()
}

/// The book's layers chapter and lib.rs's layer list say what this test checks: the same
/// modules in the same layers.
fn the_book_and_lib_rs_name_the_layers_this_test_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("docs/src/layers.md")).unwrap();
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    for (i, layer) in LAYERS.iter().enumerate() {
        let want: BTreeSet<String> = layer.iter().map(|m| m.to_string()).collect();
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {} | ", i + 1)))
            .unwrap_or_else(|| panic!("docs/src/layers.md's table has no layer {}", i + 1));
        let modules = row.split('|').nth(2).unwrap();
        assert_eq!(
            names_in(modules, "`"),
            want,
            "docs/src/layers.md, layer {}: {row}",
            i + 1
        );
        let doc: String = lib
            .lines()
            .skip_while(|l| !l.starts_with(&format!("//! {}. ", i + 1)))
            .enumerate()
            .take_while(|(k, l)| *k == 0 || l.starts_with("//!    "))
            .map(|(_, l)| l)
            .collect();
        assert_eq!(
            names_in(&doc, "[`"),
            want,
            "src/lib.rs, layer {}: {doc}",
            i + 1
        );
    }
}

/// The sibling files a file of one folder names by `super::NAME` in its code (its tests, after
/// `#[cfg(test)]`, left out): `NAME` counts when `NAME.rs` or `NAME/` is beside the file.
fn sibling_uses(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let dir = file.parent().unwrap();
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        for part in line.split("super::").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let sibling = dir.join(format!("{name}.rs")).exists() || dir.join(&name).is_dir();
            if sibling && name != "mod" {
                out.insert(name);
            }
        }
    }
    out
}

/// Inside a folder, files import each other without a loop: a trait lives where its
/// implementations import it, and a registry where it imports them (report's result kinds,
/// stats' significance tests).
fn no_file_imports_itself_through_its_siblings() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for f in &files {
        let dir = f.parent().unwrap();
        let to = sibling_uses(f).into_iter().map(|n| {
            let file = dir.join(format!("{n}.rs"));
            if file.exists() {
                file
            } else {
                dir.join(n).join("mod.rs")
            }
        });
        edges.insert(f.clone(), to.collect());
    }
    // Depth-first search: a file met again on the current path closes a loop.
    fn visit(
        f: &PathBuf,
        edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        path: &mut Vec<PathBuf>,
        done: &mut BTreeSet<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        if let Some(at) = path.iter().position(|p| p == f) {
            return Some(path[at..].to_vec());
        }
        if !done.insert(f.clone()) {
            return None;
        }
        path.push(f.clone());
        for g in edges.get(f).into_iter().flatten() {
            if let Some(l) = visit(g, edges, path, done) {
                return Some(l);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for f in edges.keys() {
        if let Some(l) = visit(f, &edges, &mut Vec::new(), &mut done) {
            let names: Vec<String> = l
                .iter()
                .map(|p| p.strip_prefix(&src).unwrap().display().to_string())
                .collect();
            panic!("an import loop: {}", names.join(" -> "));
        }
    }
}
