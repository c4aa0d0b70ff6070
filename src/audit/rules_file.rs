//! Audit rules files, read as `auditctl -R` reads them: every line auditctl takes, split as it
//! splits them (on spaces, `\ ` for a space), with each rule built by auditctl's own library
//! ([`super::libaudit`]), so the kernel is sent the bytes auditctl would send.
//!
//! Rules: `-a`/`-A` (append, prepend) and `-d` (delete) on the exit, task, user, exclude and
//! filesystem lists, `-S` (names, numbers, `all`, in the table of the rule's `-F arch`), `-F`
//! (every field, every operator), `-C`, `-w`/`-W` with `-p`, `-k` (several). Settings: `-D`,
//! `-e`, `-f`, `-b`, `-r`, `--backlog_wait_time`, `--loginuid-immutable`; `-i` and `-c` (go on
//! past errors). Where a setting is honoured is the loader's business ([`Op`]): syscost never
//! deletes rules it did not add, never locks audit and leaves a host's settings as found.

use super::libaudit::Builder;
use super::rules::{ACTION_ALWAYS, ACTION_NEVER, KEY_SEPARATOR, MAX_KEY_LEN};
use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

/// AUDIT_FILTER_PREPEND: `-A` puts the rule first on its list.
const PREPEND: u32 = 0x10;
/// AUDIT_FILTER_USER, _TASK, _EXIT, _EXCLUDE and _FS.
const LISTS: &[(&str, u32)] = &[
    ("user", 0),
    ("task", 1),
    ("exit", 4),
    ("exclude", 5),
    ("filesystem", 6),
];
/// auditctl's AUDIT_FILTER_UNSET: `-C` given before a list.
const LIST_UNSET: u32 = 0x80;

/// What one line of a rules file does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `-a`, `-A`, `-w`: add this rule (the bytes auditctl sends, without syscost's key).
    Add(Vec<u8>),
    /// `-d`, `-W`: delete this rule.
    Delete(Vec<u8>),
    /// `-D`: delete every rule.
    DeleteAll,
    /// `-e N`: the enabled flag (2 locks audit until reboot).
    Enable(u32),
    /// `-f N`: what the kernel does on a failure (0 silent, 1 printk, 2 panic).
    Failure(u32),
    /// `-b N`: the backlog limit.
    Backlog(u32),
    /// `-r N`: the rate limit, records per second.
    Rate(u32),
    /// `--backlog_wait_time N`.
    BacklogWaitTime(u32),
    /// `--loginuid-immutable` (irreversible until reboot).
    LoginuidImmutable,
    /// `-i` or `-c`: go on past the lines that fail.
    IgnoreErrors,
}

/// A line of the file and what it does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub number: usize,
    pub text: String,
    pub op: Op,
}

/// A line that was not taken, and why (the parser's or the kernel's words).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub number: usize,
    pub text: String,
    pub reason: String,
}

/// What to do with a line that cannot be taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum OnError {
    /// Stop, naming the line (auditctl -R).
    #[default]
    Stop,
    /// Report the line and go on (auditctl -i).
    Continue,
}

/// A rules file, read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSet {
    /// The file, as named in messages.
    pub source: String,
    pub lines: Vec<Line>,
    /// The lines left out (only with [`OnError::Continue`] or a `-i` line before them).
    pub refused: Vec<Refused>,
    /// What to do with a line that cannot be taken, here or by the kernel.
    #[serde(default)]
    pub on_error: OnError,
}

impl RuleSet {
    /// The rules to add, with their lines.
    pub fn rules(&self) -> impl Iterator<Item = (&Line, &[u8])> {
        self.lines.iter().filter_map(|l| match &l.op {
            Op::Add(r) => Some((l, r.as_slice())),
            _ => None,
        })
    }

    /// The enabled flag the file asks for, the last `-e`.
    pub fn enable(&self) -> Option<u32> {
        self.lines.iter().rev().find_map(|l| match l.op {
            Op::Enable(e) => Some(e),
            _ => None,
        })
    }

    /// `line`'s refusal: an error to stop at, or recorded to go on.
    pub(crate) fn refuse(&mut self, line: &Line, reason: String) -> Result<()> {
        let on_error = self.on_error;
        let ignoring = self
            .lines
            .iter()
            .any(|l| l.op == Op::IgnoreErrors && l.number < line.number);
        if on_error == OnError::Stop && !ignoring {
            bail!(
                "{}, line {}: {} (the line: {}); {} continue goes on past such lines, as \
                 auditctl -i does",
                self.source,
                line.number,
                reason,
                crate::core::printable(&line.text),
                crate::core::input::spelled(crate::core::input::Opt::AuditRulesErrors)
            );
        }
        self.refused.push(Refused {
            number: line.number,
            text: line.text.clone(),
            reason,
        });
        Ok(())
    }
}

/// The largest rules file read (auditd's own sets are a few KiB; a production set of 1,000
/// rules is about 100 KiB): a larger one, or one that is not a regular file (/dev/zero), is
/// refused before it is read.
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;

/// Read the rules file at `path` and [`parse`] it; `flag` names the option in messages.
pub(crate) fn read(path: &std::path::Path, flag: &str, on_error: OnError) -> Result<RuleSet> {
    let what = crate::core::printable(&path.display().to_string());
    let meta =
        std::fs::metadata(path).map_err(|e| anyhow!("{flag} {what}: cannot read it: {e}"))?;
    if !meta.is_file() {
        bail!("{flag} {what}: not a regular file; give a rules file as auditctl -R reads them");
    }
    if meta.len() > MAX_FILE_BYTES {
        bail!(
            "{flag} {what}: {} MiB is more than a rules file holds (syscost reads at most {} MiB)",
            meta.len() >> 20,
            MAX_FILE_BYTES >> 20
        );
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("{flag} {what}: cannot read it: {e}"))?;
    parse(&text, &path.display().to_string(), on_error)
}

/// Read a rules file's text; `source` names it in messages. A line auditctl would refuse is an
/// error naming it, or with `on_error` Continue (or after a `-i` line) is left out and recorded.
/// A rule written twice is refused at its second line, as the kernel refuses a rule it already
/// has (File exists). Messages quote the file with its control characters escaped.
pub fn parse(text: &str, source: &str, on_error: OnError) -> Result<RuleSet> {
    let mut set = RuleSet {
        source: crate::core::printable(source),
        on_error,
        ..RuleSet::default()
    };
    for (i, raw) in text.lines().enumerate() {
        let line = Line {
            number: i + 1,
            text: raw.trim().to_string(),
            op: Op::IgnoreErrors,
        };
        let words = split(raw);
        if words.first().is_none_or(|w| w.starts_with('#')) {
            continue;
        }
        let op = match parse_line(&words) {
            Ok(op) => op,
            Err(e) => {
                set.refuse(&line, crate::core::printable(&e.to_string()))?;
                continue;
            }
        };
        let twice = match &op {
            Op::Add(r) => set.rules().find(|(_, b)| b == r).map(|(l, _)| l.number),
            _ => None,
        };
        if let Some(first) = twice {
            let reason = format!(
                "the same rule as line {first}; the kernel refuses a rule it already has (File \
                 exists): remove one of them"
            );
            set.refuse(&line, reason)?;
            continue;
        }
        set.lines.push(Line { op, ..line });
    }
    Ok(set)
}

/// auditctl's words of a line: split on spaces, where `\ ` is a space and `\\` a backslash.
fn split(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(' ') | Some('\\')) => {
                word.push(chars.next().expect("peeked"))
            }
            ' ' => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// One rule line's state while its options are read (auditctl's `setopt`).
struct Draft {
    b: Builder,
    /// List (with PREPEND) and action, once `-a`, `-A`, `-d`, `-w` or `-W` gave them.
    list: Option<(u32, u32)>,
    delete: bool,
    keys: Vec<String>,
}

fn parse_line(words: &[String]) -> Result<Op> {
    let mut it = words.iter().peekable();
    let first = it.peek().map(|w| w.as_str()).unwrap_or("");
    if let Some(op) = setting(first, words)? {
        return Ok(op);
    }
    let mut d = Draft {
        b: Builder::new()?,
        list: None,
        delete: false,
        keys: Vec::new(),
    };
    while let Some(w) = it.next() {
        let (opt, attached) = match w.strip_prefix("--") {
            Some(_) => bail!("'{w}' must be alone on its line"),
            None if w.len() > 2 && w.starts_with('-') => (&w[..2], Some(w[2..].to_string())),
            None => (w.as_str(), None),
        };
        let mut value = || {
            attached
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| anyhow!("{opt} needs a value"))
        };
        match opt {
            "-a" | "-A" | "-d" => d.list_action(opt, &value()?)?,
            "-S" => d.syscalls(&value()?)?,
            "-F" => d.field(&value()?)?,
            "-C" => {
                d.b.compare(&value()?, d.list.map_or(LIST_UNSET, |l| l.0 & 7))?
            }
            "-w" | "-W" => d.watch(opt, &value()?)?,
            "-p" => d.perms(&value()?)?,
            "-k" => d.key(&value()?, true)?,
            "-D" | "-e" | "-f" | "-b" | "-r" | "-i" | "-c" => {
                bail!("{opt} must be alone on its line")
            }
            "-l" | "-s" | "-v" | "-h" | "-m" | "-R" | "-q" | "-t" => bail!(
                "{opt} is not a rule or a setting (it lists, reports, sends a message or \
                 changes tree watches): syscost loads rules only"
            ),
            other => bail!("option {other} is invalid"),
        }
    }
    d.finish()
}

/// A line that is one setting: `-D`, `-e N`, `-i`, ...; `None` for a rule line.
fn setting(first: &str, words: &[String]) -> Result<Option<Op>> {
    let number = |what: &str, max: Option<u32>| -> Result<u32> {
        let v = words
            .get(1)
            .ok_or_else(|| anyhow!("{first} needs a value"))?;
        let n: u32 = v
            .parse()
            .map_err(|_| anyhow!("{what} must be a number, was {v}"))?;
        if max.is_some_and(|m| n > m) {
            bail!("{what} must be 0, 1 or 2, was {n}");
        }
        if words.len() > 2 {
            bail!("{first} takes one value");
        }
        Ok(n)
    };
    let alone = |op: Op| -> Result<Option<Op>> {
        if words.len() > 1 {
            bail!("{first} must be alone on its line");
        }
        Ok(Some(op))
    };
    Ok(match first {
        "-D" => alone(Op::DeleteAll)?,
        "-i" | "-c" => alone(Op::IgnoreErrors)?,
        "--loginuid-immutable" => alone(Op::LoginuidImmutable)?,
        "-e" => Some(Op::Enable(number("enable", Some(2))?)),
        "-f" => Some(Op::Failure(number("failure", Some(2))?)),
        "-b" => Some(Op::Backlog(number("backlog", None)?)),
        "-r" => Some(Op::Rate(number("rate", None)?)),
        "--backlog_wait_time" => Some(Op::BacklogWaitTime(number("backlog_wait_time", None)?)),
        w if w.starts_with("--") => bail!("option {w} is not one a rules file takes"),
        _ => None,
    })
}

impl Draft {
    /// `-a exit,always` (either order), `-A`, `-d`.
    fn list_action(&mut self, opt: &str, s: &str) -> Result<()> {
        if self.list.is_some() {
            bail!("one -a, -A, -d or -w per rule");
        }
        let (mut list, mut action) = (None, None);
        for part in s.split(',') {
            match part {
                "always" => action = Some(ACTION_ALWAYS),
                "never" => action = Some(ACTION_NEVER),
                "possible" => bail!("{opt} {s}: the action 'possible' is deprecated"),
                p => match LISTS.iter().find(|(n, _)| *n == p) {
                    Some(&(_, l)) => list = Some(l),
                    None => bail!(
                        "{opt} {s}: bad keyword '{p}' (lists: exit, task, user, exclude, filesystem; actions: always, never)"
                    ),
                },
            }
        }
        let (Some(list), Some(action), 2) = (list, action, s.split(',').count()) else {
            bail!("{opt} {s}: give one list and one action, e.g. always,exit");
        };
        if list == 1 && self.b.has_syscalls() {
            bail!("{opt} {s}: syscall auditing requested for the task list");
        }
        let prepend = if opt == "-A" { PREPEND } else { 0 };
        self.list = Some((list | prepend, action));
        self.delete = opt == "-d";
        Ok(())
    }

    fn syscalls(&mut self, names: &str) -> Result<()> {
        match self.list.map(|l| l.0 & 7) {
            Some(0) | Some(1) | Some(6) => {
                bail!("-S {names}: syscalls are audited on the exit list only")
            }
            Some(5) => bail!("-S {names}: syscall auditing cannot be put on the exclude list"),
            _ => {}
        }
        names.split(',').try_for_each(|n| self.b.syscall(n))
    }

    fn field(&mut self, pair: &str) -> Result<()> {
        let Some((list, _)) = self.list else {
            bail!("-F {pair}: the list must be given before fields (-a always,exit ...)");
        };
        match pair.strip_prefix("key=") {
            Some(k) => self.key(k, false),
            None => self.b.field(pair, list & 7),
        }
    }

    /// `-w PATH` or `-W PATH`: checked and trimmed as auditctl does; a directory on this
    /// machine is watched as one (`dir`).
    fn watch(&mut self, opt: &str, path: &str) -> Result<()> {
        if self.list.is_some() {
            bail!("{opt} {path}: a watch cannot be given with -a, -A or -d");
        }
        if !path.starts_with('/') {
            bail!("{opt} {path}: the path must start with '/'");
        }
        let path = match path.trim_end_matches('/') {
            p if path.len() > 2 && !p.is_empty() => p,
            _ => path,
        };
        let dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        self.b.watch(path, dir)?;
        self.list = Some((4, ACTION_ALWAYS));
        self.delete = opt == "-W";
        Ok(())
    }

    fn perms(&mut self, p: &str) -> Result<()> {
        if self.list.is_none() {
            bail!("-p {p}: the permission option needs a watch before it");
        }
        if p.len() > 4 {
            bail!("-p {p}: permission is too long");
        }
        let mut bits = 0;
        for c in p.chars() {
            bits |= match c.to_ascii_lowercase() {
                'x' => 1,
                'w' => 2,
                'r' => 4,
                'a' => 8,
                c => bail!("-p {p}: permission {c} isn't supported (r, w, x, a)"),
            };
        }
        self.b.perms(bits)
    }

    /// `-k KEY`, or `-F key=KEY` (`checked`: -k's own check that a syscall or watch came first).
    fn key(&mut self, k: &str, checked: bool) -> Result<()> {
        if checked && (!self.b.keyable() || self.list.is_none()) {
            bail!("-k {k}: the key option needs a watch or syscall given before it");
        }
        if k.contains(KEY_SEPARATOR) {
            bail!("-k {k}: the key holds an illegal character");
        }
        let len: usize = self.keys.iter().map(|k| k.len() + 1).sum::<usize>() + k.len();
        if len > MAX_KEY_LEN {
            bail!("-k {k}: the keys exceed the kernel's {MAX_KEY_LEN} characters");
        }
        self.keys.push(k.to_string());
        Ok(())
    }

    /// The rule's bytes, as auditctl's `handle_request` sends them: the keys last, and a rule
    /// on a list other than task without -S names every syscall.
    fn finish(mut self) -> Result<Op> {
        let Some((list, action)) = self.list else {
            bail!("no -a, -A, -d or -w: not a rule");
        };
        if !self.keys.is_empty() {
            let keys = self.keys.join(&KEY_SEPARATOR.to_string());
            self.b.field(&format!("key={keys}"), list & 7)?;
        }
        if list & 7 != 1 && !self.b.has_syscalls() {
            self.b.syscall("all")?;
        }
        let bytes = self.b.finish(list, action);
        Ok(if self.delete {
            Op::Delete(bytes)
        } else {
            Op::Add(bytes)
        })
    }
}

/// Why a rules file's setting is not applied where syscost loads it, or `None` where it is.
/// On a host only the enabled flag is (`-e 0`, `-e 1`: the measurement's); in a campaign's
/// guest, which is thrown away after its boot, every setting but `--loginuid-immutable`. `-D`
/// deletes nothing of a user's, and `-e 2` is measured as `-e 1` (the lock costs no syscall
/// anything).
pub(crate) fn setting_note(op: &Op, host: bool) -> Option<&'static str> {
    match (op, host) {
        (Op::Add(_) | Op::Delete(_) | Op::IgnoreErrors | Op::Enable(0 | 1), _) => None,
        (Op::Enable(_), _) => Some("measured as -e 1: syscost never locks audit"),
        (Op::DeleteAll, true) => Some("ignored: syscost never deletes rules it did not add"),
        (Op::LoginuidImmutable, _) => Some("not applied: it holds until reboot"),
        (_, true) => {
            Some("left as found: syscost changes no setting of a host's audit but the enabled flag")
        }
        (_, false) => None,
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn words_split_on_spaces_with_auditctl_s_escapes() {
        assert_eq!(split(r"-w /a\ b  -k x\\y"), ["-w", "/a b", "-k", r"x\y"]);
    }
}
