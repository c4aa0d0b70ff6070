//! The one loader of result files, for every kind, with one error type.
//!
//! Every reader goes through the same steps and says the same things: open the file (a regular
//! file, a pipe or /dev/stdin), refuse an empty one, parse the JSON (truncated or invalid said
//! as such), then check the envelope — the schema, a version this build reads, and a kind the
//! command accepts — before the rest is decoded, so a damaged file is named as damaged, not as
//! a puzzling field error. Two strategies share those checks: [`open_checked`] checks the
//! envelope (any kind; the typed result is then decoded, as a stream from a regular file, from
//! the whole text from a pipe), and [`stream`] deserialises straight from the file into a light type of the caller's that
//! skips what it does not need (the comparison commands read files of millions of samples that
//! way, in little memory).

use crate::core::{Kind, SCHEMA, VERSION};
use serde::de::DeserializeOwned;
use std::io::Read;
use std::path::Path;

/// Why a result file could not be read: always names the file and the problem.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    // The I/O error is said in the message, not chained as its source: `{:#}` would say it
    // twice.
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: the file is empty, not a syscost result")]
    Empty { path: String },
    #[error("{path}: the JSON is truncated ({detail}); the file was cut short")]
    Truncated { path: String, detail: String },
    #[error("{path}: not valid JSON ({detail})")]
    Syntax { path: String, detail: String },
    #[error("{path}: not a syscost result: it has no \"schema\": \"{SCHEMA}\" field")]
    NoSchema { path: String },
    #[error("{path}: schema '{found}' is not a syscost result ('{SCHEMA}')")]
    Schema { path: String, found: String },
    #[error("{path}: the result has no schema version (a whole number)")]
    NoVersion { path: String },
    #[error(
        "{path}: written by a newer syscost (schema version {version}; this syscost reads up \
         to {VERSION}): upgrade syscost to read it"
    )]
    Newer { path: String, version: u64 },
    #[error("{path}: the result has no kind")]
    NoKind { path: String },
    #[error("{path}: '{found}' is not a kind of result syscost can read")]
    UnknownKind { path: String, found: String },
    #[error("{path}: a '{found}' result cannot be used here; give {wanted}")]
    WrongKind {
        path: String,
        found: Kind,
        wanted: String,
    },
    #[error("{path}: the result is incomplete: it has no \"{field}\"")]
    Incomplete { path: String, field: &'static str },
    #[error("{path}: metric '{metric}': {problem}")]
    BadMetric {
        path: String,
        metric: String,
        problem: String,
    },
    #[error("{path}: a '{kind}' result, damaged or incomplete: {detail}")]
    Damaged {
        path: String,
        kind: String,
        detail: String,
    },
}

/// Which kinds a command reads, and how to say so when it gets another.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Accept {
    /// Empty: every kind.
    pub kinds: &'static [Kind],
    /// What to give instead, e.g. "results of `syscost run` or `syscost merge`".
    pub wanted: &'static str,
}

impl Accept {
    /// Any kind of result.
    pub(crate) const ANY: Accept = Accept {
        kinds: &[],
        wanted: "a syscost result",
    };
}

fn name(path: &Path) -> String {
    path.display().to_string()
}

/// A JSON error as the loader reports it.
fn json_error(path: &str, e: serde_json::Error) -> LoadError {
    let detail = crate::core::printable(&e.to_string());
    let path = path.to_string();
    if e.is_eof() {
        if e.line() == 1 && e.column() == 0 {
            return LoadError::Empty { path };
        }
        LoadError::Truncated { path, detail }
    } else if e.is_syntax() {
        LoadError::Syntax { path, detail }
    } else {
        LoadError::Damaged {
            path,
            kind: "syscost".into(),
            detail,
        }
    }
}

/// Check the envelope's fields, as found in the file, against what the command accepts.
pub(crate) fn check_envelope(
    path: &str,
    schema: Option<&str>,
    version: Option<u64>,
    kind: Option<&str>,
    accept: Accept,
) -> Result<Kind, LoadError> {
    let path = path.to_string();
    match schema {
        Some(SCHEMA) => {}
        Some(found) => {
            return Err(LoadError::Schema {
                path,
                found: crate::core::printable(found),
            });
        }
        None => return Err(LoadError::NoSchema { path }),
    }
    let Some(version) = version else {
        return Err(LoadError::NoVersion { path });
    };
    if version > VERSION as u64 {
        return Err(LoadError::Newer { path, version });
    }
    let Some(found) = kind else {
        return Err(LoadError::NoKind { path });
    };
    let Some(k) = Kind::parse(found) else {
        return Err(LoadError::UnknownKind {
            path,
            found: crate::core::printable(found),
        });
    };
    if !accept.kinds.is_empty() && !accept.kinds.contains(&k) {
        return Err(LoadError::WrongKind {
            path,
            found: k,
            wanted: accept.wanted.into(),
        });
    }
    Ok(k)
}

/// The envelope's fields as found in a file, read without building the rest of the document.
#[derive(serde::Deserialize)]
struct Probe {
    schema: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
    kind: Option<serde_json::Value>,
}

/// The envelope of a document as first read, or why it could not be read, said as the loader
/// says it.
fn probe_kind(
    path: &str,
    probe: Result<Probe, serde_json::Error>,
    accept: Accept,
) -> Result<Kind, LoadError> {
    let probe: Probe = probe.map_err(|e| {
        if e.is_data() {
            // Valid JSON, but not an object: no envelope at all.
            LoadError::NoSchema { path: path.into() }
        } else {
            json_error(path, e)
        }
    })?;
    check_envelope(
        path,
        probe
            .schema
            .as_ref()
            .map(|s| s.as_str().unwrap_or("(not a string)")),
        probe.version.and_then(|v| v.as_u64()),
        probe
            .kind
            .as_ref()
            .map(|k| k.as_str().unwrap_or("(not a string)")),
        accept,
    )
}

/// Check JSON text (from a file named `path`): not empty, valid, and an envelope `accept`
/// allows. Only the envelope is decoded here; the document is decoded once, by [`decode`].
pub(crate) fn check_text(path: &str, text: &str, accept: Accept) -> Result<Kind, LoadError> {
    if text.trim().is_empty() {
        return Err(LoadError::Empty { path: path.into() });
    }
    probe_kind(path, serde_json::from_str(text), accept)
}

/// Read a whole result file, checked: its kind and its text.
pub(crate) fn read_checked(path: &Path, accept: Accept) -> Result<(Kind, String), LoadError> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|error| LoadError::Read {
            path: name(path),
            error,
        })?;
    let kind = check_text(&name(path), &text, accept)?;
    Ok((kind, text))
}

/// A result file whose envelope has been checked, ready to be decoded into its type.
pub(crate) struct Checked {
    pub kind: Kind,
    name: String,
    source: Source,
}

enum Source {
    /// A regular file, decoded as a stream: never held whole in memory.
    File(std::path::PathBuf),
    /// A pipe or a device, read once, whole.
    Text(String),
}

/// Files from this size on are decoded as a stream.
const STREAM_FROM_BYTES: u64 = 8 << 20;

/// Open a result file and check its envelope. A regular file is read twice as a stream (the
/// envelope, then the document), so a file of hundreds of megabytes is never held whole in
/// memory; a pipe (`<(...)`, /dev/stdin) can be read only once, so it is read whole, as is a
/// file under 8 MB.
pub(crate) fn open_checked(path: &Path, accept: Accept) -> Result<Checked, LoadError> {
    let read_error = |error| LoadError::Read {
        path: name(path),
        error,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    // Small files (every result but those of millions of raw samples) are read whole: one
    // read, and the text's checks (an all-blank file is empty, not truncated).
    if !meta.is_file() || meta.len() < STREAM_FROM_BYTES {
        drop(file);
        let (kind, text) = read_checked(path, accept)?;
        return Ok(Checked {
            kind,
            name: name(path),
            source: Source::Text(text),
        });
    }
    let kind = probe_kind(
        &name(path),
        serde_json::from_reader(std::io::BufReader::with_capacity(1 << 20, file)),
        accept,
    )?;
    Ok(Checked {
        kind,
        name: name(path),
        source: Source::File(path.to_path_buf()),
    })
}

impl Checked {
    /// JSON text already in memory (named `name` in errors), its envelope checked.
    pub(crate) fn from_text(
        name: &str,
        text: String,
        accept: Accept,
    ) -> Result<Checked, LoadError> {
        let kind = check_text(name, &text, accept)?;
        Ok(Checked {
            kind,
            name: name.into(),
            source: Source::Text(text),
        })
    }

    /// The file's name, as errors give it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Decode the document into its type, straight from the file or the text.
    pub(crate) fn decode<T: DeserializeOwned>(&self) -> Result<T, LoadError> {
        match &self.source {
            Source::Text(text) => decode(&self.name, self.kind, text),
            Source::File(path) => {
                let file = std::fs::File::open(path).map_err(|error| LoadError::Read {
                    path: self.name.clone(),
                    error,
                })?;
                serde_json::from_reader(std::io::BufReader::with_capacity(1 << 20, file)).map_err(
                    |e| LoadError::Damaged {
                        path: self.name.clone(),
                        kind: self.kind.name().into(),
                        detail: crate::core::printable(&e.to_string()),
                    },
                )
            }
        }
    }
}

/// The typed result of checked text, decoded straight from it (no intermediate tree).
pub(crate) fn decode<T: DeserializeOwned>(
    path: &str,
    kind: Kind,
    text: &str,
) -> Result<T, LoadError> {
    serde_json::from_str(text).map_err(|e| LoadError::Damaged {
        path: path.into(),
        kind: kind.name().into(),
        detail: crate::core::printable(&e.to_string()),
    })
}

/// Check the metrics read from a file and summarise them again from their values: a value
/// that is not a finite number, or a list of units that does not match the values, is refused
/// with the file and the metric named; a stored summary is never trusted (an edited or stale
/// one would print a delta its own interval contradicts).
pub(crate) fn resummarise(
    path: &str,
    metrics: &mut [crate::results::Metric],
) -> Result<(), LoadError> {
    for m in metrics.iter_mut() {
        let bad = |problem: String| LoadError::BadMetric {
            path: path.into(),
            metric: crate::core::printable(&m.name),
            problem,
        };
        if let Some(x) = m.values.iter().find(|x| !x.is_finite()) {
            return Err(bad(format!(
                "the value {x} is not a finite number; the file is damaged"
            )));
        }
        if m.units.len() != m.values.len() {
            return Err(bad(format!(
                "{} values but {} units; the file is damaged",
                m.values.len(),
                m.units.len()
            )));
        }
        if !m.values.is_empty() {
            m.summary = crate::stats::Summary::of(&m.values);
        }
    }
    Ok(())
}

/// Deserialise a file straight into `T`, a light reading type whose envelope fields are
/// optional: the caller then checks them with [`check_envelope`].
pub(crate) fn stream<T: DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    let read_error = |error| LoadError::Read {
        path: name(path),
        error,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
        return Err(LoadError::Empty { path: name(path) });
    }
    let reader = std::io::BufReader::with_capacity(1 << 20, file);
    serde_json::from_reader(reader).map_err(|e| match json_error(&name(path), e) {
        LoadError::Damaged { path, detail, .. } => LoadError::Damaged {
            path,
            kind: "syscost".into(),
            detail: format!("not a syscost result, or a damaged one: {detail}"),
        },
        other => other,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    const RUN: Accept = Accept {
        kinds: &[Kind::Run],
        wanted: "a result of `syscost run`",
    };

    fn msg(text: &str) -> String {
        check_text("f.json", text, RUN).unwrap_err().to_string()
    }

    #[test]
    fn every_problem_is_named_with_the_file() {
        for (text, says) in [
            ("", "empty"),
            ("  \n", "empty"),
            ("{\"schema\": \"syscost-res", "truncated"),
            ("not json", "not valid JSON"),
            ("[1,2]", "not a syscost result"),
            ("{\"schema\":\"other\"}", "not a syscost result"),
            ("{\"schema\":\"syscost-result\"}", "no schema version"),
            (
                "{\"schema\":\"syscost-result\",\"version\":\"1\"}",
                "no schema version",
            ),
            (
                "{\"schema\":\"syscost-result\",\"version\":99,\"kind\":\"run\"}",
                "newer syscost",
            ),
            (
                "{\"schema\":\"syscost-result\",\"version\":1}",
                "has no kind",
            ),
            (
                "{\"schema\":\"syscost-result\",\"version\":1,\"kind\":\"weird\"}",
                "not a kind of result",
            ),
            (
                "{\"schema\":\"syscost-result\",\"version\":1,\"kind\":\"probe\"}",
                "a 'probe' result cannot be used here; give a result of `syscost run`",
            ),
        ] {
            let m = msg(text);
            assert!(m.starts_with("f.json: "), "{m}");
            assert!(m.contains(says), "{text:?}: {m}");
        }
    }

    #[test]
    fn damaged_results_say_their_kind() {
        #[derive(Debug, serde::Deserialize)]
        struct Needs {
            #[allow(dead_code)]
            runs: Vec<u32>,
        }
        let text = "{\"schema\":\"syscost-result\",\"version\":1,\"kind\":\"run\"}";
        let k = check_text("f.json", text, RUN).unwrap();
        let e = decode::<Needs>("f.json", k, text).unwrap_err().to_string();
        assert!(e.contains("a 'run' result, damaged or incomplete"), "{e}");
    }

    #[test]
    fn files_are_read_and_streamed_alike() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, "").unwrap();
        let e = stream::<serde_json::Value>(&empty).unwrap_err().to_string();
        assert!(e.contains("empty.json: the file is empty"), "{e}");
        let e = read_checked(&empty, Accept::ANY).unwrap_err().to_string();
        assert!(e.contains("empty.json: the file is empty"), "{e}");
        let e = read_checked(&dir.path().join("none.json"), Accept::ANY)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot read "), "{e}");
    }

    /// A file too large to read whole is streamed twice (envelope, then document), with the
    /// messages of a small one.
    #[test]
    fn large_files_are_streamed_with_the_same_checks() {
        let dir = tempfile::tempdir().unwrap();
        let pad = "x".repeat(STREAM_FROM_BYTES as usize + 1);
        let write = |name: &str, text: String| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let head = format!(r#""schema":"{SCHEMA}","version":{VERSION}"#);
        let good = write(
            "good.json",
            format!(r#"{{"pad":"{pad}",{head},"kind":"run","n":7}}"#),
        );
        let c = open_checked(&good, RUN).unwrap();
        assert!(
            matches!(c.source, Source::File(_)),
            "streamed, not read whole"
        );
        let v: serde_json::Value = c.decode().unwrap();
        assert_eq!(v["n"], 7);
        let wrong = write(
            "wrong.json",
            format!(r#"{{{head},"kind":"compare","pad":"{pad}"}}"#),
        );
        let e = open_checked(&wrong, RUN).err().unwrap().to_string();
        assert!(
            e.contains("wrong.json: a 'compare' result cannot be used here"),
            "{e}"
        );
        let cut = write("cut.json", format!(r#"{{{head},"kind":"run","pad":"{pad}"#));
        let e = open_checked(&cut, RUN).err().unwrap().to_string();
        assert!(e.contains("cut.json: the JSON is truncated"), "{e}");
        let damaged = write(
            "damaged.json",
            format!(r#"{{{head},"kind":"run","n":"seven","pad":"{pad}"}}"#),
        );
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Needs {
            n: u32,
        }
        let e = open_checked(&damaged, RUN)
            .unwrap()
            .decode::<Needs>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("damaged.json: a 'run' result, damaged or incomplete"),
            "{e}"
        );
    }
}
