//! Audit rules in the kernel's wire format, `struct audit_rule_data`
//! (include/uapi/linux/audit.h), encoded and decoded here rather than by netlink-packet-audit:
//! version 0.7 of that crate decodes the `exe` field as a number, which corrupts every field
//! after it, so a rule list holding a user's `-F exe=` rule cannot be read through it; and
//! deleting a rule takes the exact bytes the kernel listed, which a lossy decode cannot give
//! back. Only the fields syscost writes are interpreted; any rule is carried as its bytes.

/// Filter lists (AUDIT_FILTER_*).
pub const FILTER_TASK: u32 = 1;
pub const FILTER_EXIT: u32 = 4;
/// Actions.
pub const ACTION_NEVER: u32 = 0;
pub const ACTION_ALWAYS: u32 = 2;
/// Field types.
pub const FIELD_PID: u32 = 0;
pub const FIELD_ARCH: u32 = 11;
pub const FIELD_FILTERKEY: u32 = 210;
/// Operator `=`.
pub const OP_EQUAL: u32 = 0x4000_0000;

const BITMASK_WORDS: usize = 64;
const MAX_FIELDS: usize = 64;
/// flags, action, field_count, mask[64], fields[64], values[64], fieldflags[64], buflen.
const HEADER_WORDS: usize = 3 + BITMASK_WORDS + 3 * MAX_FIELDS + 1;
pub const HEADER_LEN: usize = HEADER_WORDS * 4;

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
    23,  // AUDIT_OBJ_USER .. AUDIT_OBJ_LEV_HIGH
    105, // AUDIT_WATCH
    107, // AUDIT_DIR
    112, // AUDIT_EXE
    FIELD_FILTERKEY,
];

/// The AUDIT_ARCH_* value of this build's native syscall ABI.
pub fn native_arch() -> Option<u32> {
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
    /// The rule's key (`-k`), if it has one.
    pub key: Option<String>,
}

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
        let list = word(bytes, 0)? & 0x07;
        let action = word(bytes, 1)?;
        let count = (word(bytes, 2)? as usize).min(MAX_FIELDS);
        let buflen = word(bytes, HEADER_WORDS - 1)? as usize;
        let fields = 3 + BITMASK_WORDS;
        let values = fields + MAX_FIELDS;
        let buf = bytes.get(HEADER_LEN..HEADER_LEN + buflen)?;
        let mut off = 0usize;
        let mut key = None;
        for i in 0..count {
            let f = word(bytes, fields + i)?;
            if STRING_FIELDS.contains(&f) {
                let len = word(bytes, values + i)? as usize;
                let s = buf.get(off..off + len)?;
                if f == FIELD_FILTERKEY {
                    key = Some(String::from_utf8_lossy(s).into_owned());
                }
                off += len;
            }
        }
        Some(Rule {
            bytes: bytes[..HEADER_LEN + buflen].to_vec(),
            list,
            action,
            key,
        })
    }
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
