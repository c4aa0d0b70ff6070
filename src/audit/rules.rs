//! Audit rules in the kernel's wire format, `struct audit_rule_data`
//! (include/uapi/linux/audit.h), encoded and decoded here rather than by netlink-packet-audit:
//! version 0.7 of that crate decodes the `exe` field as a number, which corrupts every field
//! after it, so a rule list holding a user's `-F exe=` rule cannot be read through it; and
//! deleting a rule takes the exact bytes the kernel listed, which a lossy decode cannot give
//! back. Any rule is carried as its bytes; a user's rules are built by auditctl's own library
//! (`libaudit`), and syscost only adds its key to them ([`with_key`]).

/// Filter lists (AUDIT_FILTER_*).
/// AUDIT_FILTER_USER: rules for messages user space sends to audit.
pub(crate) const FILTER_USER: u32 = 0;
pub(crate) const FILTER_TASK: u32 = 1;
pub const FILTER_EXIT: u32 = 4;
/// Actions.
pub const ACTION_NEVER: u32 = 0;
pub const ACTION_ALWAYS: u32 = 2;
/// Field types.
pub const FIELD_PID: u32 = 0;
pub(crate) const FIELD_ARCH: u32 = 11;
pub(crate) const FIELD_FILTERKEY: u32 = 210;
/// Operator `=`.
pub(crate) const OP_EQUAL: u32 = 0x4000_0000;
/// What separates a rule's keys (auditctl's AUDIT_KEY_SEPARATOR): `-k a -k b` is `a\x01b`.
pub(crate) const KEY_SEPARATOR: char = '\x01';
/// The longest key string the kernel takes (AUDIT_MAX_KEY_LEN).
pub(crate) const MAX_KEY_LEN: usize = 256;

const BITMASK_WORDS: usize = 64;
const MAX_FIELDS: usize = 64;
/// flags, action, field_count, mask[64], fields[64], values[64], fieldflags[64], buflen.
const HEADER_WORDS: usize = 3 + BITMASK_WORDS + 3 * MAX_FIELDS + 1;
pub(crate) const HEADER_LEN: usize = HEADER_WORDS * 4;

/// Field types whose value is a string in `buf` (its length in `values`), in the order the
/// kernel writes them.
const STRING_FIELDS: &[u32] = &[
    13,
    14,
    15,
    16,
    17, // AUDIT_SUBJ_USER .. AUDIT_SUBJ_CLR
    19,
    20,
    21,
    22,
    23, // AUDIT_OBJ_USER .. AUDIT_OBJ_LEV_HIGH
    FIELD_WATCH,
    FIELD_DIR,
    112, // AUDIT_EXE
    FIELD_FILTERKEY,
];

/// The AUDIT_ARCH_* value of this build's native syscall ABI.
pub(crate) fn native_arch() -> Option<u32> {
    match std::env::consts::ARCH {
        "x86_64" => Some(0xc000_003e),
        "aarch64" => Some(0xc000_00b7),
        "riscv64" => Some(0xc000_00f3),
        "powerpc64" => Some(0x8000_0015),
        "s390x" => Some(0x8000_0016),
        _ => None,
    }
}

/// A rule as the kernel lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The exact bytes (what AUDIT_DEL_RULE must be given to delete it).
    pub bytes: Vec<u8>,
    pub list: u32,
    pub action: u32,
    /// The rule's key (`-k`), if it has one: several keys are joined by [`KEY_SEPARATOR`].
    pub key: Option<String>,
}

/// The word offsets of a rule's parts.
const FIELDS_AT: usize = 3 + BITMASK_WORDS;
const VALUES_AT: usize = FIELDS_AT + MAX_FIELDS;
const FLAGS_AT: usize = VALUES_AT + MAX_FIELDS;

fn word(b: &[u8], i: usize) -> Option<u32> {
    b.get(4 * i..4 * i + 4)
        .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
}

impl Rule {
    /// Decode a listed rule; `None` if it is shorter than the fixed header says.
    pub fn decode(bytes: &[u8]) -> Option<Rule> {
        if bytes.len() < HEADER_LEN {
            return None;
        }
        let buflen = word(bytes, HEADER_WORDS - 1)? as usize;
        let key = strings(bytes)?
            .into_iter()
            .find(|(f, _)| *f == FIELD_FILTERKEY)
            .map(|(_, s)| String::from_utf8_lossy(s).into_owned());
        Some(Rule {
            bytes: bytes[..HEADER_LEN + buflen].to_vec(),
            list: word(bytes, 0)? & 0x07,
            action: word(bytes, 1)?,
            key,
        })
    }

    /// The rule's keys, one by one.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.key.iter().flat_map(|k| k.split(KEY_SEPARATOR))
    }

    /// The first of the rule's keys that starts with `prefix` (syscost's own, among a user's).
    pub fn key_starting(&self, prefix: &str) -> Option<&str> {
        self.keys().find(|k| k.starts_with(prefix))
    }

    /// The syscalls the rule names: whether its mask holds syscall `nr` (of its arch's table).
    pub fn names_syscall(&self, nr: u32) -> bool {
        word(&self.bytes, 3 + (nr / 32) as usize).is_some_and(|w| w & (1 << (nr % 32)) != 0)
    }

    /// Whether the rule names every syscall (`-S all`, or no `-S` on the exit list).
    pub(crate) fn every_syscall(&self) -> bool {
        (0..BITMASK_WORDS).all(|i| word(&self.bytes, 3 + i) == Some(u32::MAX))
    }

    /// The rule's fields: (type, operator, value) in order (a string field's value is its
    /// length).
    pub(crate) fn fields(&self) -> Vec<(u32, u32, u32)> {
        let count = word(&self.bytes, 2).unwrap_or(0) as usize;
        (0..count.min(MAX_FIELDS))
            .filter_map(|i| {
                Some((
                    word(&self.bytes, FIELDS_AT + i)?,
                    word(&self.bytes, FLAGS_AT + i)?,
                    word(&self.bytes, VALUES_AT + i)?,
                ))
            })
            .collect()
    }
}

/// Field types naming a path: a watch (`-w PATH`, `-F path=`: its parent directory must
/// exist) and a directory tree (`-F dir=`: the directory itself must exist).
pub(crate) const FIELD_WATCH: u32 = 105;
pub(crate) const FIELD_DIR: u32 = 107;

/// A rule's string fields, (field type, its bytes in `buf`), in field order; `None` when the
/// rule is shorter than its header says.
fn strings(bytes: &[u8]) -> Option<Vec<(u32, &[u8])>> {
    let count = (word(bytes, 2)? as usize).min(MAX_FIELDS);
    let buflen = word(bytes, HEADER_WORDS - 1)? as usize;
    let buf = bytes.get(HEADER_LEN..HEADER_LEN + buflen)?;
    let mut off = 0usize;
    let mut out = Vec::new();
    for i in 0..count {
        let f = word(bytes, FIELDS_AT + i)?;
        if STRING_FIELDS.contains(&f) {
            let len = word(bytes, VALUES_AT + i)? as usize;
            out.push((f, buf.get(off..off + len)?));
            off += len;
        }
    }
    Some(out)
}

/// The paths a rule names, (field type, path), in field order: what must exist where the
/// rule is loaded.
pub(crate) fn paths(bytes: &[u8]) -> Vec<(u32, String)> {
    strings(bytes)
        .unwrap_or_default()
        .into_iter()
        .filter(|(f, _)| matches!(*f, FIELD_WATCH | FIELD_DIR))
        .map(|(f, s)| (f, String::from_utf8_lossy(s).into_owned()))
        .collect()
}

/// `bytes` with `key` added as one more key (after the user's, which stay), or as the rule's
/// key when it has none: how syscost finds the rules it loaded for a user.
pub(crate) fn with_key(bytes: &[u8], key: &str) -> Result<Vec<u8>, String> {
    rewrite_key(bytes, |old| match old {
        Some(k) => Some(format!("{k}{KEY_SEPARATOR}{key}")),
        None => Some(key.to_string()),
    })
}

/// `bytes` without the keys that start with `prefix` (the rule as it was given).
pub fn without_key(bytes: &[u8], prefix: &str) -> Result<Vec<u8>, String> {
    rewrite_key(bytes, |old| {
        let kept: Vec<&str> = old?
            .split(KEY_SEPARATOR)
            .filter(|k| !k.starts_with(prefix))
            .collect();
        (!kept.is_empty()).then(|| kept.join(&KEY_SEPARATOR.to_string()))
    })
}

/// The rule with its key string replaced by `f(old)` (`None`: no key field).
fn rewrite_key(
    bytes: &[u8],
    f: impl FnOnce(Option<&str>) -> Option<String>,
) -> Result<Vec<u8>, String> {
    let bad = || "not an audit rule".to_string();
    let mut words: Vec<u32> = (0..HEADER_WORDS)
        .map(|i| word(bytes, i))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let count = (words[2] as usize).min(MAX_FIELDS);
    let buf = bytes
        .get(HEADER_LEN..HEADER_LEN + words[HEADER_WORDS - 1] as usize)
        .ok_or_else(bad)?;
    // Each string field's place in buf, in field order.
    let (mut at, mut key) = (0usize, None);
    for i in 0..count {
        let ty = words[FIELDS_AT + i];
        if STRING_FIELDS.contains(&ty) {
            let len = words[VALUES_AT + i] as usize;
            if ty == FIELD_FILTERKEY {
                key = Some((i, at, len));
            }
            at += len;
        }
    }
    let old = key
        .map(|(_, at, len)| buf.get(at..at + len).map(String::from_utf8_lossy))
        .map(|s| s.ok_or_else(bad))
        .transpose()?;
    let new = f(old.as_deref());
    if new.as_ref().is_some_and(|k| k.len() > MAX_KEY_LEN) {
        return Err(format!(
            "the rule's keys and syscost's own come to more than the kernel's {MAX_KEY_LEN} \
             characters: shorten the rule's -k"
        ));
    }
    let mut out_buf = buf.to_vec();
    match (key, new) {
        (Some((i, at, len)), Some(k)) => {
            out_buf.splice(at..at + len, k.bytes());
            words[VALUES_AT + i] = k.len() as u32;
        }
        (Some((i, at, len)), None) => {
            out_buf.drain(at..at + len);
            for w in [FIELDS_AT, VALUES_AT, FLAGS_AT] {
                words.copy_within(w + i + 1..w + count, w + i);
                words[w + count - 1] = 0;
            }
            words[2] -= 1;
        }
        (None, Some(k)) => {
            if count >= MAX_FIELDS {
                return Err(format!(
                    "the rule has the kernel's {MAX_FIELDS} fields: no room for syscost's key"
                ));
            }
            out_buf.extend_from_slice(k.as_bytes());
            words[FIELDS_AT + count] = FIELD_FILTERKEY;
            words[VALUES_AT + count] = k.len() as u32;
            words[FLAGS_AT + count] = OP_EQUAL;
            words[2] += 1;
        }
        (None, None) => {}
    }
    words[HEADER_WORDS - 1] = out_buf.len() as u32;
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    out.extend_from_slice(&out_buf);
    Ok(out)
}

/// Build a rule: `list`, `action`, the syscalls of `mask` (empty: none), numeric fields
/// (type, value) compared with `=`, and a key.
pub fn encode(
    list: u32,
    action: u32,
    syscalls: &[u32],
    numeric: &[(u32, u32)],
    key: &str,
) -> Vec<u8> {
    let mut words = vec![0u32; HEADER_WORDS];
    words[0] = list;
    words[1] = action;
    words[2] = (numeric.len() + 1) as u32;
    for &nr in syscalls {
        words[3 + (nr / 32) as usize] |= 1 << (nr % 32);
    }
    let fields = 3 + BITMASK_WORDS;
    let values = fields + MAX_FIELDS;
    let flags = values + MAX_FIELDS;
    for (i, (f, v)) in numeric
        .iter()
        .copied()
        .chain([(FIELD_FILTERKEY, key.len() as u32)])
        .enumerate()
    {
        words[fields + i] = f;
        words[values + i] = v;
        words[flags + i] = OP_EQUAL;
    }
    words[HEADER_WORDS - 1] = key.len() as u32;
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    out.extend_from_slice(key.as_bytes());
    out
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn layout_matches_the_uapi_struct() {
        // 3 + 64 + 3 * 64 + 1 words of u32
        assert_eq!(HEADER_LEN, 1040);
    }

    #[test]
    fn round_trip_keeps_bytes_list_action_and_key() {
        let b = encode(
            FILTER_EXIT,
            ACTION_ALWAYS,
            &[39, 110],
            &[(FIELD_PID, 7)],
            "syscost-1-2-3",
        );
        assert_eq!(b.len(), HEADER_LEN + 13);
        // getpid is syscall 39 on x86-64: word 1, bit 7
        assert_eq!(word(&b, 3 + 1), Some(1 << 7));
        let r = Rule::decode(&b).unwrap();
        assert_eq!(r.list, FILTER_EXIT);
        assert_eq!(r.action, ACTION_ALWAYS);
        assert_eq!(r.key.as_deref(), Some("syscost-1-2-3"));
        assert_eq!(r.bytes, b);
    }

    /// A rule with its string fields' bytes in `buf`: `numeric` gives each field and the
    /// length of its string (see `encode`), `key` comes last.
    fn with_strings(numeric: &[(u32, u32)], buf: &str) -> Vec<u8> {
        let mut r = encode(FILTER_EXIT, ACTION_ALWAYS, &[], numeric, "k");
        r.truncate(HEADER_LEN);
        let at = (HEADER_WORDS - 1) * 4;
        r[at..at + 4].copy_from_slice(&(buf.len() as u32 + 1).to_ne_bytes());
        r.extend_from_slice(buf.as_bytes());
        r.push(b'k');
        r
    }

    /// The paths a rule names are read from its string fields, beside the others (an exe
    /// before, the key after).
    #[test]
    fn a_rule_s_watched_paths_and_directories_are_read_back() {
        let watch = with_strings(&[(FIELD_WATCH, 13)], "/etc/hostname");
        assert_eq!(paths(&watch), [(FIELD_WATCH, "/etc/hostname".to_string())]);
        let dir = with_strings(
            &[(112, 9), (FIELD_DIR, 8), (FIELD_PID, 4)],
            "/bin/true/var/log",
        );
        assert_eq!(paths(&dir), [(FIELD_DIR, "/var/log".to_string())]);
        assert!(paths(&encode(FILTER_EXIT, ACTION_ALWAYS, &[39], &[], "k")).is_empty());
    }

    #[test]
    fn syscost_s_key_is_added_after_the_user_s_and_taken_off_again() {
        // A user's rule with an exe string before its key, and one with no key at all.
        let mut user = encode(FILTER_EXIT, ACTION_ALWAYS, &[1], &[(112, 9)], "mine");
        let buflen_at = (HEADER_WORDS - 1) * 4;
        user[buflen_at..buflen_at + 4].copy_from_slice(&(13u32).to_ne_bytes());
        user.truncate(HEADER_LEN);
        user.extend_from_slice(b"/bin/truemine");
        let tagged = with_key(&user, "syscost-1-2-3").unwrap();
        let r = Rule::decode(&tagged).unwrap();
        assert_eq!(r.keys().collect::<Vec<_>>(), ["mine", "syscost-1-2-3"]);
        assert_eq!(r.key_starting("syscost-"), Some("syscost-1-2-3"));
        assert_eq!(without_key(&tagged, "syscost-").unwrap(), user);

        let bare = encode(FILTER_EXIT, ACTION_ALWAYS, &[1], &[(0, 5)], "x");
        let bare = without_key(&bare, "x").unwrap();
        assert_eq!(Rule::decode(&bare).unwrap().key, None);
        assert_eq!(word(&bare, 2), Some(1), "the key field is gone");
        let tagged = with_key(&bare, "syscost-1-2-3").unwrap();
        assert_eq!(
            Rule::decode(&tagged).unwrap().key.as_deref(),
            Some("syscost-1-2-3")
        );
        assert_eq!(without_key(&tagged, "syscost-").unwrap(), bare);

        let long = encode(FILTER_EXIT, ACTION_ALWAYS, &[1], &[], &"k".repeat(250));
        assert!(
            with_key(&long, "syscost-1-2-3")
                .unwrap_err()
                .contains("256")
        );
    }

    #[test]
    fn keys_after_other_string_fields_are_found() {
        // A user's rule: -F exe=/bin/true -k mine (exe is a string before the key).
        let mut b = encode(FILTER_EXIT, ACTION_ALWAYS, &[1], &[(112, 9)], "mine");
        // put the exe string before the key in buf and fix buflen
        let buflen_at = (HEADER_WORDS - 1) * 4;
        b[buflen_at..buflen_at + 4].copy_from_slice(&(13u32).to_ne_bytes());
        b.truncate(HEADER_LEN);
        b.extend_from_slice(b"/bin/truemine");
        let r = Rule::decode(&b).unwrap();
        assert_eq!(r.key.as_deref(), Some("mine"));
        assert!(Rule::decode(&b[..100]).is_none());
    }
}
