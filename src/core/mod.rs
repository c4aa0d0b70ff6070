//! The ground floor: small things every other module may use, importing nothing of the crate.
//!
//! - [`cpus`]: CPU lists in taskset syntax, and affinity; [`caches`]: the CPU's caches;
//! - [`num`]: numbers as the tables print them;
//! - [`files`]: atomic file writing, a file's SHA-256;
//! - [`envelope`]: the header every result file carries (schema, version, kind, tool);
//! - [`perf`]: two facts about perf_event_open on this machine;
//! - [`input`]: the options a user gives, named by what they set ([`input::Opt`]).

pub(crate) mod caches;
pub mod cpus;
pub(crate) mod envelope;
pub(crate) mod files;
pub(crate) mod input;
pub(crate) mod limits;
pub(crate) mod num;
pub(crate) mod perf;
pub(crate) mod places;

/// The kernel command-line parameter that names the arm of a guest syscost booted
/// (`boot::guest`).
pub(crate) const ARM_PARAM: &str = "syscost.arm";

/// Whether this machine is a guest syscost booted to measure in (its kernel's command line
/// names an arm): nobody stops its measurement but its boot's timeout.
pub(crate) fn in_syscost_guest() -> bool {
    let line = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let arm = format!("{ARM_PARAM}=");
    line.split_whitespace().any(|w| w.starts_with(&arm))
}

pub use cpus::CpuList;
pub use envelope::{Envelope, Kind, SCHEMA, ToolInfo, VERSION, now_unix};
pub(crate) use files::{check_writable, sha256_hex, write_atomic};
pub(crate) use num::{fmt_num, fmt_p, plural};

/// `url` with any password replaced by `***`: in the authority (`user:secret@`) and in a
/// `password=` parameter.
pub(crate) fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    // The authority follows `scheme:` and its slashes (`postgres://`, or a mistyped `x:/`).
    if let Some(scheme_end) = out.find(':').filter(|&i| out[i + 1..].starts_with('/')) {
        let rest = scheme_end + 1 + out[scheme_end + 1..].len()
            - out[scheme_end + 1..].trim_start_matches('/').len();
        let authority_end = out[rest..]
            .find(['/', '?'])
            .map(|i| rest + i)
            .unwrap_or(out.len());
        if let Some(at) = out[rest..authority_end].rfind('@').map(|i| rest + i)
            && let Some(colon) = out[rest..at].find(':').map(|i| rest + i)
        {
            out.replace_range(colon + 1..at, "***");
        }
    }
    let lower = out.to_ascii_lowercase();
    if let Some(p) = lower.find("password=") {
        let start = p + "password=".len();
        let end = out[start..]
            .find('&')
            .map(|i| start + i)
            .unwrap_or(out.len());
        out.replace_range(start..end, "***");
    }
    out
}

/// Text from a user's file or a damaged result on one line and harmless to a terminal: every
/// control character (a newline, an escape that would start a terminal sequence) is shown
/// escaped, as `\n` or `\u{1b}`.
pub(crate) fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Field `n` (numbered from 1, as proc(5) numbers them) of a /proc/.../stat file, as a number.
/// The command name (field 2) may hold spaces and parentheses: fields are counted after its
/// last ')'.
pub(crate) fn proc_stat_field(path: &str, n: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after
        .split_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            redact_url("postgres://lab:s3cr:et@db.example:5432/syscost"),
            "postgres://lab:***@db.example:5432/syscost"
        );
        assert_eq!(
            redact_url("postgresql:///syscost?host=/run/postgresql&password=hunter2&user=x"),
            "postgresql:///syscost?host=/run/postgresql&password=***&user=x"
        );
        assert_eq!(
            redact_url("postgres://lab@db/syscost"),
            "postgres://lab@db/syscost"
        );
    }
}
