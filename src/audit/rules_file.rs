//! Audit rules written as `auditctl -R` reads them, for the state of a campaign's arm (the
//! audit series' "audit=1 with 42 production rules"). The subset is what [`rules::encode`]
//! writes: `-a`/`-A` with an action (always, never) and a list (exit, task), `-S` syscalls by
//! name or number, `-F` numeric fields compared with `=` (arch, pid, ppid, uid, euid, gid,
//! auid), `-k KEY` (or `-F key=KEY`), and `-D` (a fresh boot has no rules to delete). Any
//! other line is refused with its number, before anything boots.

use super::rules::{self, ACTION_ALWAYS, ACTION_NEVER, FIELD_ARCH, FILTER_EXIT, FILTER_TASK};
use anyhow::{Result, anyhow, bail};
use std::str::FromStr;

/// AUDIT_ARCH_I386, for `-F arch=b32`.
const ARCH_I386: u32 = 0x4000_0003;

/// The numeric `-F` fields this subset takes, by auditctl's names (AUDIT_* in
/// include/uapi/linux/audit.h).
const FIELDS: &[(&str, u32)] = &[
    ("pid", 0),
    ("uid", 1),
    ("euid", 2),
    ("gid", 5),
    ("auid", 9),
    ("ppid", 18),
];

/// One rule of a file: its list, action, syscalls, fields and key.
#[derive(Debug, Default, PartialEq)]
struct Rule {
    list: u32,
    action: u32,
    syscalls: Vec<u32>,
    fields: Vec<(u32, u32)>,
    key: String,
}

/// The encoded rules of a rules file's text, in order; `what` names the file in errors.
/// A rule the kernel already has is refused ("File exists"), so a rule written twice, as
/// happens when rule sets are merged, is refused here with both lines. Errors quote the file
/// with its control characters escaped (an escape sequence would restyle the terminal).
pub fn parse(text: &str, what: &str) -> Result<Vec<Vec<u8>>> {
    let what = crate::core::printable(what);
    let mut out: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line == "-D" {
            continue;
        }
        let r = parse_line(line).map_err(|e| {
            anyhow!(
                "{what}, line {}: {} (syscost takes -a/-A with -S, -F field=value and -k; \
                 -D is ignored)",
                i + 1,
                crate::core::printable(&e.to_string())
            )
        })?;
        let key = if r.key.is_empty() {
            "syscost-campaign"
        } else {
            &r.key
        };
        let rule = rules::encode(r.list, r.action, &r.syscalls, &r.fields, key);
        if let Some((first, _)) = out.iter().find(|(_, r)| *r == rule) {
            bail!(
                "{what}, line {}: the same rule as line {first}; the kernel refuses a rule it \
                 already has (File exists): remove one of them",
                i + 1
            );
        }
        out.push((i + 1, rule));
    }
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

fn parse_line(line: &str) -> Result<Rule> {
    let words = shlex::split(line).ok_or_else(|| anyhow!("unbalanced quotes"))?;
    let mut r = Rule::default();
    let mut added = false;
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let mut value = || it.next().ok_or_else(|| anyhow!("{w} needs a value"));
        match w.as_str() {
            "-a" | "-A" => {
                (r.list, r.action) = list_action(value()?)?;
                added = true;
            }
            "-S" => {
                for s in value()?.split(',') {
                    r.syscalls.push(syscall(s)?);
                }
            }
            "-F" => field(&mut r, value()?)?,
            "-k" => r.key = value()?.clone(),
            other => bail!("'{other}' is not supported"),
        }
    }
    if !added {
        bail!("not a rule (no -a)");
    }
    if r.list == FILTER_EXIT && r.syscalls.is_empty() {
        bail!("an exit rule needs -S: a rule for every syscall is not supported");
    }
    Ok(r)
}

/// `always,exit` or `exit,always`.
fn list_action(s: &str) -> Result<(u32, u32)> {
    let (mut list, mut action) = (None, None);
    for part in s.split(',') {
        match part {
            "exit" => list = Some(FILTER_EXIT),
            "task" => list = Some(FILTER_TASK),
            "always" => action = Some(ACTION_ALWAYS),
            "never" => action = Some(ACTION_NEVER),
            other => bail!("'-a {s}': '{other}' is not supported (exit, task; always, never)"),
        }
    }
    match (list, action) {
        (Some(l), Some(a)) => Ok((l, a)),
        _ => bail!("'-a {s}' needs a list and an action, e.g. always,exit"),
    }
}

fn syscall(s: &str) -> Result<u32> {
    if let Ok(n) = s.parse::<u32>() {
        return Ok(n);
    }
    syscalls::Sysno::from_str(s)
        .map(|n| n.id() as u32)
        .map_err(|_| anyhow!("unknown syscall '{s}'"))
}

fn field(r: &mut Rule, f: &str) -> Result<()> {
    let Some((name, value)) = f.split_once('=') else {
        bail!("-F {f}: only field=value is supported");
    };
    if name.ends_with(['!', '<', '>', '&']) {
        bail!("-F {f}: only the operator = is supported");
    }
    if name == "key" {
        r.key = value.to_string();
        return Ok(());
    }
    if name == "arch" {
        let arch = match value {
            "b64" => rules::native_arch().ok_or_else(|| anyhow!("no native arch here"))?,
            "b32" => ARCH_I386,
            _ => bail!("-F {f}: arch is b64 or b32"),
        };
        r.fields.push((FIELD_ARCH, arch));
        return Ok(());
    }
    let Some(&(_, ty)) = FIELDS.iter().find(|(n, _)| *n == name) else {
        bail!("-F {f}: the field '{name}' is not supported");
    };
    let v = match value {
        "unset" | "-1" => u32::MAX,
        v => v
            .parse::<u32>()
            .map_err(|_| anyhow!("-F {f}: '{v}' is not a number"))?,
    };
    r.fields.push((ty, v));
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn auditctl_lines_encode_as_the_session_s_rules() {
        let text = "# production rules\n-D\n\
                    -a always,exit -F arch=b64 -S openat,unlinkat -F auid=unset -k files\n\
                    -A exit,never -S 39 -F pid=7\n";
        let rules = parse(text, "rules.txt").unwrap();
        assert_eq!(rules.len(), 2);
        let first = rules::Rule::decode(&rules[0]).unwrap();
        assert_eq!(first.list, FILTER_EXIT);
        assert_eq!(first.key.as_deref(), Some("files"));
        let second = rules::Rule::decode(&rules[1]).unwrap();
        assert_eq!(second.action, ACTION_NEVER);
        assert_eq!(second.key.as_deref(), Some("syscost-campaign"));
    }

    #[test]
    fn other_lines_are_refused_with_their_number() {
        for (text, says) in [
            ("-a always,exit -S getpid\n-w /etc/passwd -p wa", "line 2"),
            ("-a always,exit -S getpid -F uid!=0", "operator"),
            ("-a always,exit -S no_such_call", "unknown syscall"),
            ("-a always,exclude -S getpid", "exclude"),
            ("-e 2", "line 1"),
            ("-a always,exit -F pid=1", "needs -S"),
        ] {
            let e = parse(text, "r").unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_rule_written_twice_is_refused_with_both_lines() {
        let text = "-a always,exit -S unlinkat -k a\n# merged\n-a always,exit -S unlinkat -k a\n";
        let e = parse(text, "merged.rules").unwrap_err().to_string();
        assert!(e.contains("line 3: the same rule as line 1"), "{e}");
        // Another key makes another rule for the kernel: both are kept.
        parse(
            "-a always,exit -S unlinkat -k a\n-a always,exit -S unlinkat -k b",
            "r",
        )
        .unwrap();
    }

    #[test]
    fn a_line_s_escape_sequence_is_shown_escaped() {
        let e = parse("-a always,exit -S getpid \u{1b}[31m", "r")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\u{1b}'), "{e:?}");
        assert!(e.contains("\\u{1b}[31m"), "{e}");
    }
}
