//! Figures a command prints about itself, captured as metrics: `--capture NAME=REGEX` on
//! `run exec` and `probe` (e.g. redis-benchmark's requests per second, as the uprobe thread reports a
//! probe's effect on Redis throughput). The first group of the regex is the number; each run
//! records its value like any other per-run metric, so it is compared, correlated and charted.
//! regex-lite, not regex: a pattern applied to a few lines of output once per run needs no
//! fast engine, and regex's took 14 s of CPU in a fresh build; its classes are ASCII.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// One `--capture NAME=REGEX`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    pub name: String,
    pub pattern: String,
}

impl std::str::FromStr for Capture {
    type Err = String;

    fn from_str(s: &str) -> Result<Capture, String> {
        let Some((name, pattern)) = s.split_once('=') else {
            return Err(format!(
                "--capture '{s}': give NAME=REGEX, e.g. rps='([0-9.]+) requests per second'"
            ));
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "--capture '{s}': the name '{name}' must be letters, digits, - or _"
            ));
        }
        let re = regex_lite::Regex::new(pattern)
            .map_err(|e| format!("--capture {name}: the regex does not compile: {e}"))?;
        if re.captures_len() < 2 {
            return Err(format!(
                "--capture {name}: the regex needs a group around the number, e.g. '([0-9.]+) \
                 requests per second'"
            ));
        }
        Ok(Capture {
            name: name.into(),
            pattern: pattern.into(),
        })
    }
}

/// Compiled captures, applied to each output.
pub(crate) struct Captor {
    captures: Vec<(String, regex_lite::Regex)>,
}

impl Captor {
    pub(crate) fn new(captures: &[Capture]) -> Result<Captor> {
        let captures = captures
            .iter()
            .map(|c| Ok((c.name.clone(), regex_lite::Regex::new(&c.pattern)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Captor { captures })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.captures.is_empty()
    }

    /// Each capture's number in `output` (the first match, its first group; thousands
    /// separators allowed), or an error naming the capture and showing the output's last lines.
    pub(crate) fn apply(&self, output: &str) -> Result<Vec<(String, f64)>> {
        let mut out = Vec::new();
        for (name, re) in &self.captures {
            let found = re
                .captures(output)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().replace(',', ""));
            let value = found.as_deref().and_then(|t| t.trim().parse::<f64>().ok());
            match value {
                Some(v) if v.is_finite() => out.push((name.clone(), v)),
                _ => {
                    let tail: Vec<&str> = output.lines().rev().take(5).collect();
                    let tail: Vec<&str> = tail.into_iter().rev().collect();
                    bail!(
                        "--capture {name}: /{}/ {} in the command's output; its last lines:\n{}",
                        re.as_str(),
                        match found {
                            Some(t) => format!("matched '{t}', which is not a number"),
                            None => "matched nothing".into(),
                        },
                        if tail.is_empty() {
                            "  (no output)".to_string()
                        } else {
                            tail.iter()
                                .map(|l| format!("  {l}"))
                                .collect::<Vec<_>>()
                                .join("\n")
                        }
                    );
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn numbers_are_captured_and_misses_show_the_output() {
        let c: Capture = "rps=([0-9.,]+) requests per second".parse().unwrap();
        let captor = Captor::new(&[c]).unwrap();
        let out =
            "====== SET ======\n  100000 requests completed\n  45,248.87 requests per second\n";
        assert_eq!(captor.apply(out).unwrap(), vec![("rps".into(), 45248.87)]);
        let e = captor
            .apply("connection refused\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("matched nothing") && e.contains("connection refused"),
            "{e}"
        );
        let e = Captor::new(&["n=(x+)".parse().unwrap()])
            .unwrap()
            .apply("xxx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a number"), "{e}");
        for bad in ["rps", "=(1)", "r ps=(1)", "rps=([0-9]+", "rps=[0-9]+"] {
            assert!(bad.parse::<Capture>().is_err(), "{bad}");
        }
    }
}
