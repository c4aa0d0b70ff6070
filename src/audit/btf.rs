//! The kernel's own description of its types (BTF, /sys/kernel/btf/vmlinux with
//! CONFIG_DEBUG_INFO_BTF=y): the sizes of structures and the offsets of their members, which
//! reading a task's objects through kernel memory needs and which differ between builds.
//!
//! Read by hand from the format (Documentation/bpf/btf.rst): only sizes and member offsets are
//! wanted, and the one well-kept reader on crates.io (btf-rs) is LGPL, which this statically
//! linked binary does not take on for some 150 lines.

use anyhow::{Context, Result, bail};

/// Where a running kernel publishes its BTF.
pub(crate) const VMLINUX: &str = "/sys/kernel/btf/vmlinux";
const MAGIC: u16 = 0xeb9f;
/// Kinds (include/uapi/linux/btf.h) this reader looks into or passes over with their data.
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
/// `struct btf_type`: name_off, info, size or type.
const TYPE_BYTES: usize = 12;
/// `struct btf_member`: name_off, type, offset.
const MEMBER_BYTES: usize = 12;

/// A BTF blob, its types indexed by id.
pub(crate) struct Btf {
    data: Vec<u8>,
    /// Where each type's `struct btf_type` starts in `data`: id 1 first (id 0 is void).
    types: Vec<usize>,
    strings: std::ops::Range<usize>,
}

/// A structure of a BTF blob.
#[derive(Clone, Copy)]
pub(crate) struct Struct<'a> {
    btf: &'a Btf,
    t: Type,
}

impl Struct<'_> {
    pub(crate) fn size(&self) -> u64 {
        self.t.size_or_type.into()
    }

    /// `offsetof` a member in bytes, looking into anonymous structures and unions.
    pub(crate) fn offset_of(&self, member: &str) -> Option<u64> {
        (self.btf.member_in(self.t, member.as_bytes(), 0)).map(|bits| bits / 8)
    }
}

/// One `struct btf_type`, decoded.
#[derive(Clone, Copy)]
struct Type {
    at: usize,
    name: u32,
    kind: u32,
    vlen: usize,
    kind_flag: bool,
    size_or_type: u32,
}

impl Btf {
    /// The running kernel's.
    pub(crate) fn load() -> Result<Btf> {
        let data = std::fs::read(VMLINUX).with_context(|| {
            format!("reading {VMLINUX} (the kernel's types: CONFIG_DEBUG_INFO_BTF=y)")
        })?;
        Btf::parse(data).with_context(|| format!("reading {VMLINUX}"))
    }

    pub(crate) fn parse(data: Vec<u8>) -> Result<Btf> {
        let u32_at = |o: usize| {
            data.get(o..o + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        };
        if data.len() < 24 || u16::from_le_bytes([data[0], data[1]]) != MAGIC {
            bail!("not little-endian BTF");
        }
        let field = |o| u32_at(o).unwrap_or(0) as usize;
        let (hdr, type_off, type_len, str_off, str_len) =
            (field(4), field(8), field(12), field(16), field(20));
        let (types_at, strings_at) = (hdr + type_off, hdr + str_off);
        if types_at + type_len > data.len() || strings_at + str_len > data.len() {
            bail!("its sections run past its {} bytes", data.len());
        }
        let mut types = Vec::new();
        let mut at = types_at;
        while at < types_at + type_len {
            types.push(at);
            let info = u32_at(at + 4).context("a type cut short")?;
            at += TYPE_BYTES + extra_bytes(kind_of(info), (info & 0xffff) as usize)?;
        }
        Ok(Btf {
            data,
            types,
            strings: strings_at..strings_at + str_len,
        })
    }

    fn u32_at(&self, o: usize) -> u32 {
        u32::from_le_bytes(self.data[o..o + 4].try_into().unwrap())
    }

    fn ty(&self, id: u32) -> Option<Type> {
        let at = *self.types.get((id as usize).checked_sub(1)?)?;
        let info = self.u32_at(at + 4);
        Some(Type {
            at,
            name: self.u32_at(at),
            kind: kind_of(info),
            vlen: (info & 0xffff) as usize,
            kind_flag: info >> 31 == 1,
            size_or_type: self.u32_at(at + 8),
        })
    }

    fn name(&self, off: u32) -> &[u8] {
        let from = self.strings.start + off as usize;
        let rest = &self.data[from.min(self.strings.end)..self.strings.end];
        &rest[..rest.iter().position(|b| *b == 0).unwrap_or(rest.len())]
    }

    /// The first structure of each of `names` that has members (not a forward declaration), in
    /// one pass over the types (a pass is seconds under the emulator).
    pub(crate) fn structures<const N: usize>(&self, names: [&str; N]) -> [Option<Struct<'_>>; N] {
        let mut out = [None; N];
        for id in 1..=self.types.len() as u32 {
            let Some(t) = self.ty(id).filter(|t| t.kind == KIND_STRUCT && t.vlen > 0) else {
                continue;
            };
            let name = self.name(t.name);
            if let Some(i) = names.iter().position(|n| n.as_bytes() == name)
                && out[i].is_none()
            {
                out[i] = Some(Struct { btf: self, t });
            }
            if out.iter().all(Option::is_some) {
                break;
            }
        }
        out
    }

    /// `sizeof(struct NAME)`.
    #[cfg(test)]
    pub(crate) fn size_of(&self, name: &str) -> Option<u64> {
        let [s] = self.structures([name]);
        s.map(|s| s.size())
    }

    /// `offsetof(struct NAME, MEMBER)` in bytes, looking into anonymous structures and unions.
    #[cfg(test)]
    pub(crate) fn offset_of(&self, name: &str, member: &str) -> Option<u64> {
        let [s] = self.structures([name]);
        s?.offset_of(member)
    }

    fn member_in(&self, t: Type, member: &[u8], base: u64) -> Option<u64> {
        for i in 0..t.vlen {
            let m = t.at + TYPE_BYTES + i * MEMBER_BYTES;
            let (name, id, offset) = (self.u32_at(m), self.u32_at(m + 4), self.u32_at(m + 8));
            let bits = base
                + u64::from(if t.kind_flag {
                    offset & 0xff_ffff
                } else {
                    offset
                });
            if self.name(name) == member {
                return Some(bits);
            }
            if name == 0
                && let Some(inner) = self.aggregate(id)
                && let Some(found) = self.member_in(inner, member, bits)
            {
                return Some(found);
            }
        }
        None
    }

    /// The structure or union `id` names, through typedefs and qualifiers.
    fn aggregate(&self, mut id: u32) -> Option<Type> {
        for _ in 0..16 {
            let t = self.ty(id)?;
            match t.kind {
                KIND_STRUCT | KIND_UNION => return Some(t),
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST => id = t.size_or_type,
                _ => return None,
            }
        }
        None
    }
}

fn kind_of(info: u32) -> u32 {
    (info >> 24) & 0x1f
}

/// The bytes that follow a `struct btf_type` of `kind` with `vlen` items.
fn extra_bytes(kind: u32, vlen: usize) -> Result<usize> {
    Ok(match kind {
        // INT's encoding, VAR's linkage, DECL_TAG's component index.
        1 | 14 | 17 => 4,
        // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG.
        2 | 7..=12 | 16 | 18 => 0,
        3 => 12,                      // btf_array
        4 | 5 | 15 | 19 => 12 * vlen, // members, DATASEC's vars, ENUM64's values
        6 | 13 => 8 * vlen,           // enum values, FUNC_PROTO's params
        k => bail!("a type of kind {k}, which this reader does not know"),
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A blob of one `struct pair { int a; union { long b; struct { char c; } }; }` as the
    /// format lays it out: the reader's arithmetic checked on bytes whose offsets are known.
    fn blob() -> Vec<u8> {
        let strings = b"\0pair\0a\0b\0c\0int\0".to_vec();
        let name = |s: &str| {
            let at = strings
                .windows(s.len() + 1)
                .position(|w| &w[..s.len()] == s.as_bytes() && w[s.len()] == 0);
            at.unwrap() as u32
        };
        let mut types: Vec<u32> = Vec::new();
        // 1: int, 4 bytes.
        types.extend([name("int"), 1 << 24, 4, 32]);
        // 2: struct { char c; } (anonymous), 1 byte; its member of type int at 0 bits.
        types.extend([0, (KIND_STRUCT << 24) | 1, 1, name("c"), 1, 0]);
        // 3: union { long b; struct 2; }, 8 bytes.
        types.extend([0, (KIND_UNION << 24) | 2, 8, name("b"), 1, 0, 0, 2, 0]);
        // 4: struct pair, 16 bytes: a at 0, the union at 64 bits.
        types.extend([
            name("pair"),
            (KIND_STRUCT << 24) | 2,
            16,
            name("a"),
            1,
            0,
            0,
            3,
            64,
        ]);
        let type_bytes: Vec<u8> = types.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut out = Vec::new();
        out.extend(MAGIC.to_le_bytes());
        out.extend([1, 0]);
        for w in [24u32, 0, type_bytes.len() as u32, type_bytes.len() as u32] {
            out.extend(w.to_le_bytes());
        }
        out.extend((strings.len() as u32).to_le_bytes());
        out.extend(type_bytes);
        out.extend(strings);
        out
    }

    #[test]
    fn members_are_found_in_anonymous_unions_and_structures() {
        let btf = Btf::parse(blob()).unwrap();
        assert_eq!(btf.size_of("pair"), Some(16));
        assert_eq!(btf.offset_of("pair", "a"), Some(0));
        assert_eq!(btf.offset_of("pair", "b"), Some(8));
        assert_eq!(btf.offset_of("pair", "c"), Some(8));
        assert_eq!(btf.offset_of("pair", "d"), None);
        assert_eq!(btf.size_of("nosuch"), None);
        let mut bad = blob();
        bad[0] = 0;
        assert!(Btf::parse(bad).is_err());
        let mut cut = blob();
        cut.truncate(40);
        assert!(Btf::parse(cut).is_err());
    }

    /// This machine's kernel, against layouts its source fixes: `struct list_head` is two
    /// pointers, and `struct audit_entry` is a list head, an rcu head, then the rule.
    #[test]
    fn this_kernel_s_types_have_the_source_s_layout() {
        let btf = match Btf::load() {
            Ok(b) => b,
            Err(e) if std::env::var_os("SYSCOST_TEST_REQUIRE_ALL").is_none() => {
                return println!("skipped: {e:#}");
            }
            Err(e) => panic!("{e:#}"),
        };
        assert_eq!(btf.size_of("list_head"), Some(16));
        assert_eq!(btf.offset_of("list_head", "prev"), Some(8));
        assert_eq!(btf.offset_of("audit_entry", "rule"), Some(32));
        for m in ["tasks", "pid", "cred", "stack"] {
            assert!(btf.offset_of("task_struct", m).is_some(), "task_struct.{m}");
        }
    }
}
