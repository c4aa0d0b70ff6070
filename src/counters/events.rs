//! Event specifications in `perf`'s own syntax.
//!
//! `perf stat -e` accepts a comma-separated list of event names, each optionally followed by
//! `:modifiers`, and `{...}` to put several events into one group. syscost accepts the same
//! spelling for the generic events the kernel defines (hardware, software and hardware-cache
//! events) plus raw `rNNNN` events, so a command line can be pasted from a perf invocation.
//!
//! Written here rather than taken from a crate: no crate parses perf's event syntax into
//! `perf_event_attr` values (perf itself does it in C, inside tools/perf/util/parse-events.y).

use serde::{Deserialize, Serialize};
use std::fmt;

/// `perf_event_attr.type` values (include/uapi/linux/perf_event.h).
pub(crate) const PERF_TYPE_HARDWARE: u32 = 0;
pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(crate) const PERF_TYPE_HW_CACHE: u32 = 3;
pub(crate) const PERF_TYPE_RAW: u32 = 4;

/// One counter to open: the `type`/`config` pair the kernel understands, and the privilege
/// levels to count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSpec {
    /// The name as perf prints it, with the modifiers, e.g. `cycles:u`.
    pub name: String,
    /// `perf_event_attr.type`.
    #[serde(rename = "type")]
    pub type_: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// Do not count user-space execution (`:k`).
    pub exclude_user: bool,
    /// Do not count kernel execution (`:u`).
    pub exclude_kernel: bool,
}

impl EventSpec {
    /// Name without the modifiers (`cycles` for `cycles:u`).
    pub(crate) fn base_name(&self) -> &str {
        self.name.split(':').next().unwrap_or(&self.name)
    }

    /// True for software events: the kernel can always count those, no PMU needed.
    pub(crate) fn is_software(&self) -> bool {
        self.type_ == PERF_TYPE_SOFTWARE
    }

    /// An event counted by syscost's QEMU plugin, not by perf: an emulator's count, opened by
    /// nobody (`counters::emulated`).
    pub(crate) fn emulated(name: impl Into<String>, exclude_user: bool) -> EventSpec {
        EventSpec {
            name: name.into(),
            type_: EMULATED_TYPE,
            config: 0,
            exclude_user,
            exclude_kernel: !exclude_user,
        }
    }

    /// Counted by syscost's QEMU plugin in user space and the kernel together.
    pub(crate) fn emulated_all(name: impl Into<String>) -> EventSpec {
        EventSpec {
            exclude_kernel: false,
            ..EventSpec::emulated(name, false)
        }
    }

    /// Counted by syscost's QEMU plugin (see [`EventSpec::emulated`]).
    pub(crate) fn is_emulated(&self) -> bool {
        self.type_ == EMULATED_TYPE
    }
}

/// The `type` of an emulated event: no `perf_event_attr.type` the kernel defines.
const EMULATED_TYPE: u32 = u32::MAX;

/// Events to open, in groups: the events of one group are scheduled on the PMU together, so
/// ratios between them (instructions per cycle, miss rates) are taken over the same instants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventList {
    pub groups: Vec<Vec<EventSpec>>,
}

impl EventList {
    /// Every event, in the order given.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &EventSpec> {
        self.groups.iter().flatten()
    }

    pub(crate) fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What `perf stat -d` counts, plus the software events of a plain `perf stat`. Grouped so that
/// each derived ratio is computed from events counted at the same time; task-clock stands
/// alone (see `CounterSet::open`).
pub(crate) const DEFAULT_EVENTS: &str = "{cycles,instructions,branches,branch-misses},\
{L1-dcache-loads,L1-dcache-load-misses},\
task-clock,{context-switches,cpu-migrations,page-faults}";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EventParseError {
    #[error(
        "unknown event '{0}': use a perf event name such as cycles, instructions, task-clock, \
         L1-dcache-load-misses or a raw rNNNN (run `syscost run syscall {list}`)",
        list = crate::core::input::spelled(crate::core::input::Opt::ListEvents)
    )]
    Unknown(String),
    #[error("event '{event}': unknown modifier '{modifier}' (syscost accepts u and k)")]
    Modifier { event: String, modifier: char },
    #[error("event '{0}': {1}; write it as NAME, NAME:u, NAME:k or NAME:uk")]
    Modifiers(String, &'static str),
    #[error("event list '{0}': unbalanced '{{' or '}}'")]
    Braces(String),
    #[error("event list '{0}': empty event name (two commas in a row, or a trailing comma?)")]
    Empty(String),
    #[error("event list '{0}': groups cannot be nested")]
    Nested(String),
    #[error("event '{0}' is given twice")]
    Duplicate(String),
}

/// perf's generic hardware event names (`perf list hw`).
const HARDWARE: &[(&str, u64)] = &[
    ("cpu-cycles", 0),
    ("cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branches", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// perf's software event names (`perf list sw`).
const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
];

/// Hardware-cache ids as perf spells them (`perf list cache`).
const CACHE_IDS: &[(&str, u64)] = &[
    ("L1-dcache", 0),
    ("L1-icache", 1),
    ("LLC", 2),
    ("dTLB", 3),
    ("iTLB", 4),
    ("branch", 5),
    ("node", 6),
];

/// Cache operation and result suffixes: `-loads` is (read, access), `-load-misses` is
/// (read, miss), and so on.
const CACHE_OPS: &[(&str, u64, u64)] = &[
    ("loads", 0, 0),
    ("load-misses", 0, 1),
    ("stores", 1, 0),
    ("store-misses", 1, 1),
    ("prefetches", 2, 0),
    ("prefetch-misses", 2, 1),
];

fn lookup(name: &str) -> Option<(u32, u64)> {
    if let Some((_, c)) = HARDWARE.iter().find(|(n, _)| *n == name) {
        return Some((PERF_TYPE_HARDWARE, *c));
    }
    if let Some((_, c)) = SOFTWARE.iter().find(|(n, _)| *n == name) {
        return Some((PERF_TYPE_SOFTWARE, *c));
    }
    for (id_name, id) in CACHE_IDS {
        if let Some(rest) = name.strip_prefix(id_name).and_then(|r| r.strip_prefix('-'))
            && let Some((_, op, res)) = CACHE_OPS.iter().find(|(n, _, _)| *n == rest)
        {
            return Some((PERF_TYPE_HW_CACHE, id | (op << 8) | (res << 16)));
        }
    }
    if let Some(hex) = name.strip_prefix('r')
        && !hex.is_empty()
        && hex.len() <= 16
        && hex.chars().all(|c| c.is_ascii_hexdigit())
    {
        return u64::from_str_radix(hex, 16)
            .ok()
            .map(|c| (PERF_TYPE_RAW, c));
    }
    None
}

/// Parse one event such as `cycles`, `L1-dcache-load-misses:u` or `r01c2:k`.
pub(crate) fn parse_event(token: &str) -> Result<EventSpec, EventParseError> {
    let token = token.trim();
    let (name, mods) = match token.split_once(':') {
        Some((n, m)) => (n, m),
        None => (token, ""),
    };
    let (type_, config) = lookup(name).ok_or_else(|| EventParseError::Unknown(name.into()))?;
    if token.contains(':') && mods.is_empty() {
        return Err(EventParseError::Modifiers(
            token.into(),
            "nothing after ':'",
        ));
    }
    let (mut user, mut kernel) = (false, false);
    for m in mods.chars() {
        let seen = match m {
            'u' => std::mem::replace(&mut user, true),
            'k' => std::mem::replace(&mut kernel, true),
            other => {
                return Err(EventParseError::Modifier {
                    event: token.into(),
                    modifier: other,
                });
            }
        };
        if seen {
            return Err(EventParseError::Modifiers(
                token.into(),
                "a modifier is repeated",
            ));
        }
    }
    // perf: no modifier means both; `:u` alone excludes the kernel, `:k` alone excludes user.
    let (exclude_user, exclude_kernel) = if user || kernel {
        (!user, !kernel)
    } else {
        (false, false)
    };
    let mut canonical = name.to_string();
    if !mods.is_empty() {
        canonical.push(':');
        if user {
            canonical.push('u');
        }
        if kernel {
            canonical.push('k');
        }
    }
    Ok(EventSpec {
        name: canonical,
        type_,
        config,
        exclude_user,
        exclude_kernel,
    })
}

/// Parse perf's event list syntax. Each `-e` argument may hold several comma-separated events;
/// `{a,b}` makes a group, an event outside braces is a group of its own (as in perf stat).
pub fn parse_event_list<S: AsRef<str>>(args: &[S]) -> Result<EventList, EventParseError> {
    let mut groups: Vec<Vec<EventSpec>> = Vec::new();
    for arg in args {
        let arg = arg.as_ref();
        let mut current: Option<Vec<EventSpec>> = None;
        let mut token = String::new();
        let flush = |token: &mut String,
                     current: &mut Option<Vec<EventSpec>>,
                     groups: &mut Vec<Vec<EventSpec>>,
                     must: bool|
         -> Result<(), EventParseError> {
            let t = token.trim().to_string();
            token.clear();
            if t.is_empty() {
                return if must {
                    Err(EventParseError::Empty(arg.into()))
                } else {
                    Ok(())
                };
            }
            let ev = parse_event(&t)?;
            match current {
                Some(g) => g.push(ev),
                None => groups.push(vec![ev]),
            }
            Ok(())
        };
        let mut after_group = false;
        for c in arg.chars() {
            match c {
                '{' => {
                    if current.is_some() {
                        return Err(EventParseError::Nested(arg.into()));
                    }
                    if !token.trim().is_empty() {
                        return Err(EventParseError::Braces(arg.into()));
                    }
                    current = Some(Vec::new());
                    after_group = false;
                }
                '}' => {
                    let Some(_) = current else {
                        return Err(EventParseError::Braces(arg.into()));
                    };
                    flush(&mut token, &mut current, &mut groups, true)?;
                    groups.push(current.take().unwrap_or_default());
                    after_group = true;
                }
                ',' => {
                    if after_group && token.trim().is_empty() {
                        after_group = false;
                        continue;
                    }
                    flush(&mut token, &mut current, &mut groups, true)?;
                }
                c => {
                    if after_group && !c.is_whitespace() {
                        return Err(EventParseError::Braces(arg.into()));
                    }
                    token.push(c)
                }
            }
        }
        if current.is_some() {
            return Err(EventParseError::Braces(arg.into()));
        }
        flush(&mut token, &mut current, &mut groups, !after_group)?;
    }
    let mut seen = std::collections::HashSet::new();
    for ev in groups.iter().flatten() {
        if !seen.insert(ev.name.clone()) {
            return Err(EventParseError::Duplicate(ev.name.clone()));
        }
    }
    Ok(EventList { groups })
}

/// The default event list (see [`DEFAULT_EVENTS`]).
pub fn default_events() -> EventList {
    parse_event_list(&[DEFAULT_EVENTS]).expect("the built-in default event list parses")
}

/// Every event name syscost knows, for `--list-events`.
pub(crate) fn known_event_names() -> Vec<String> {
    let mut out: Vec<String> = HARDWARE.iter().map(|(n, _)| n.to_string()).collect();
    out.extend(SOFTWARE.iter().map(|(n, _)| n.to_string()));
    for (id, _) in CACHE_IDS {
        for (op, _, _) in CACHE_OPS {
            out.push(format!("{id}-{op}"));
        }
    }
    out.push("rNNNN (raw PMU event, hex)".into());
    out
}

impl fmt::Display for EventList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let names: Vec<&str> = g.iter().map(|e| e.name.as_str()).collect();
                if g.len() == 1 {
                    names[0].to_string()
                } else {
                    format!("{{{}}}", names.join(","))
                }
            })
            .collect();
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_and_software_names() {
        let e = parse_event("cycles").unwrap();
        assert_eq!((e.type_, e.config), (PERF_TYPE_HARDWARE, 0));
        assert!(!e.exclude_user && !e.exclude_kernel);
        let e = parse_event("task-clock").unwrap();
        assert_eq!((e.type_, e.config), (PERF_TYPE_SOFTWARE, 1));
        assert_eq!(parse_event("cs").unwrap().config, 3);
    }

    #[test]
    fn cache_events_encode_id_op_result() {
        // L1D = 0, READ = 0, MISS = 1: config = 0 | 0 << 8 | 1 << 16
        let e = parse_event("L1-dcache-load-misses").unwrap();
        assert_eq!((e.type_, e.config), (PERF_TYPE_HW_CACHE, 0x10000));
        // LLC = 2, WRITE = 1, ACCESS = 0
        assert_eq!(parse_event("LLC-stores").unwrap().config, 0x102);
        // iTLB = 4, READ, MISS
        assert_eq!(parse_event("iTLB-load-misses").unwrap().config, 0x10004);
    }

    #[test]
    fn modifiers() {
        let u = parse_event("cycles:u").unwrap();
        assert!(u.exclude_kernel && !u.exclude_user);
        assert_eq!(u.name, "cycles:u");
        let k = parse_event("instructions:k").unwrap();
        assert!(k.exclude_user && !k.exclude_kernel);
        let uk = parse_event("branches:ku").unwrap();
        assert!(!uk.exclude_user && !uk.exclude_kernel);
        assert_eq!(uk.name, "branches:uk");
        assert!(matches!(
            parse_event("cycles:x"),
            Err(EventParseError::Modifier { modifier: 'x', .. })
        ));
    }

    #[test]
    fn raw_events() {
        let e = parse_event("r01c2").unwrap();
        assert_eq!((e.type_, e.config), (PERF_TYPE_RAW, 0x1c2));
        assert!(parse_event("rxyz").is_err());
        assert!(parse_event("r").is_err());
    }

    #[test]
    fn unknown_event() {
        assert_eq!(
            parse_event("cyclez"),
            Err(EventParseError::Unknown("cyclez".into()))
        );
    }

    #[test]
    fn lists_and_groups() {
        let l = parse_event_list(&["cycles,instructions"]).unwrap();
        assert_eq!(
            l.groups.len(),
            2,
            "ungrouped events are groups of their own"
        );
        let l = parse_event_list(&["{cycles,instructions},task-clock", "page-faults"]).unwrap();
        assert_eq!(l.groups.len(), 3);
        assert_eq!(l.groups[0].len(), 2);
        assert_eq!(
            l.to_string(),
            "{cycles,instructions},task-clock,page-faults"
        );
        let d = default_events();
        assert_eq!(d.len(), 10);
        assert_eq!(d.groups.len(), 4);
    }

    #[test]
    fn bad_lists() {
        assert!(matches!(
            parse_event_list(&["{cycles"]),
            Err(EventParseError::Braces(_))
        ));
        assert!(matches!(
            parse_event_list(&["cycles}"]),
            Err(EventParseError::Braces(_))
        ));
        assert!(matches!(
            parse_event_list(&["{cycles,{instructions}}"]),
            Err(EventParseError::Nested(_))
        ));
        assert!(matches!(
            parse_event_list(&["cycles,,instructions"]),
            Err(EventParseError::Empty(_))
        ));
        assert!(matches!(
            parse_event_list(&["cycles,"]),
            Err(EventParseError::Empty(_))
        ));
        assert!(matches!(
            parse_event_list(&["cycles", "cycles"]),
            Err(EventParseError::Duplicate(_))
        ));
        assert!(matches!(
            parse_event_list(&["{cycles}x"]),
            Err(EventParseError::Braces(_))
        ));
    }
}
