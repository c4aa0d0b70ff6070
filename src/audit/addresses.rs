//! Where the kernel keeps its audit syscall-exit rule entries: the addresses of the `struct
//! audit_entry` objects on `audit_filter_list[AUDIT_FILTER_EXIT]`, for `syscost cachesets
//! --addresses` (the syscall-latency post found them with drgn).
//!
//! Reading them needs two things the kernel may withhold: the list head's address
//! (`audit_filter_list` is a data symbol, in /proc/kallsyms only with CONFIG_KALLSYMS_ALL=y,
//! and shown as zeros under kernel.kptr_restrict) and a way to read kernel memory
//! (/proc/kcore, CONFIG_PROC_KCORE=y; root). Where either is missing, [`locate`] says which.
//! The list is walked through `next` pointers: `list` is the first member of `struct
//! audit_entry`, so a node's address is its entry's.

use crate::core::input::Opt;
use anyhow::{Context, Result, bail};
use std::io::{Read, Seek, SeekFrom};

/// AUDIT_FILTER_EXIT (include/uapi/linux/audit.h): the index of the syscall-exit list.
pub(crate) const AUDIT_FILTER_EXIT: u64 = 4;
/// sizeof(struct list_head) on a 64-bit kernel.
const LIST_HEAD: u64 = 16;
/// No real rule list is this long (audit_filter_list entries are admin-added rules); a walk
/// that gets this far is reading something else.
const MAX_ENTRIES: usize = 1 << 20;

// The few ELF values the core's headers are read with (the System V ABI's): the object crate
// parses whole files, but kcore is as large as the kernel's address space and only its header
// and program headers are wanted.
const ELF_MAGIC: [u8; 4] = *b"\x7fELF";
const ELF_CLASS_64: u8 = 2;
const ELF_DATA_LSB: u8 = 1;
const PT_LOAD: u32 = 1;

/// Eight bytes of kernel memory at a kernel virtual address.
pub(crate) trait KernelMemory {
    fn read_u64(&mut self, addr: u64) -> Result<u64>;
}

/// The addresses of the entries on the list whose head is at `head`, in list order.
pub(crate) fn walk_list(mem: &mut dyn KernelMemory, head: u64) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut node = mem
        .read_u64(head)
        .with_context(|| format!("reading the list head at {head:#x}"))?;
    while node != head {
        if out.len() >= MAX_ENTRIES || out.contains(&node) || node == 0 {
            bail!(
                "the list at {head:#x} does not close after {} entries (at {node:#x}): not an \
                 audit list, or it changed while being read",
                out.len()
            );
        }
        out.push(node);
        node = mem
            .read_u64(node)
            .with_context(|| format!("reading entry {} at {node:#x}", out.len()))?;
    }
    Ok(out)
}

/// The address of `symbol` in kallsyms text (`ffffffff82a1b2c0 d audit_filter_list`).
/// `Ok(None)` when it is not listed; an error when addresses are hidden (all zero).
pub(crate) fn symbol_address(kallsyms: &str, symbol: &str) -> Result<Option<u64>> {
    let mut hidden = false;
    // Only the lines that end with the name are split: the whole file is 100,000 lines and
    // more, read by every measuring process of a guest that names its objects' lines.
    for line in kallsyms.lines() {
        let Some(rest) = line.strip_suffix(symbol) else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let (Some(addr), Some(_kind), None, true) =
            (f.next(), f.next(), f.next(), rest.ends_with(' '))
        else {
            continue;
        };
        let a = u64::from_str_radix(addr, 16)
            .with_context(|| format!("/proc/kallsyms: '{addr}' is not an address"))?;
        if a == 0 {
            hidden = true;
            continue;
        }
        return Ok(Some(a));
    }
    if hidden {
        bail!(
            "/proc/kallsyms shows {symbol} at address 0: kernel.kptr_restrict hides kernel \
             addresses; run as root (CAP_SYSLOG) with kernel.kptr_restrict <= 1 (sysctl \
             kernel.kptr_restrict=1)"
        );
    }
    Ok(None)
}

/// Kernel memory through /proc/kcore, an ELF core file of the running kernel whose PT_LOAD
/// segments map kernel virtual addresses to file offsets. Only the ELF header and program
/// headers are parsed, by hand (see the constants above).
pub(crate) struct Kcore {
    file: std::fs::File,
    /// (virtual address, size, file offset) of each PT_LOAD segment.
    segments: Vec<(u64, u64, u64)>,
}

impl Kcore {
    pub(crate) const PATH: &'static str = "/proc/kcore";

    pub(crate) fn open() -> Result<Kcore> {
        let mut file =
            std::fs::File::open(Self::PATH).with_context(|| format!("opening {}", Self::PATH))?;
        let mut head = [0u8; 64];
        file.read_exact(&mut head)
            .with_context(|| format!("reading {}'s ELF header", Self::PATH))?;
        let segments = Self::segments(&head, |off, buf| {
            file.seek(SeekFrom::Start(off))?;
            file.read_exact(buf)
        })?;
        Ok(Kcore { file, segments })
    }

    /// The PT_LOAD segments of a 64-bit little-endian ELF core, its header given and its
    /// program headers read through `read_at`.
    fn segments(
        head: &[u8; 64],
        mut read_at: impl FnMut(u64, &mut [u8]) -> std::io::Result<()>,
    ) -> Result<Vec<(u64, u64, u64)>> {
        let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        if head[..4] != ELF_MAGIC || head[4] != ELF_CLASS_64 || head[5] != ELF_DATA_LSB {
            bail!("{} is not a 64-bit little-endian ELF core", Self::PATH);
        }
        // e_phoff at 32, e_phentsize at 54, e_phnum at 56 (Elf64_Ehdr).
        let (phoff, phentsize, phnum) = (u64_at(head, 32), u16_at(head, 54), u16_at(head, 56));
        if phentsize < 56 {
            bail!("{}: program headers of {phentsize} bytes", Self::PATH);
        }
        let mut out = Vec::new();
        let mut ph = vec![0u8; phentsize as usize];
        for i in 0..phnum as u64 {
            read_at(phoff + i * phentsize as u64, &mut ph)
                .with_context(|| format!("reading {}'s program header {i}", Self::PATH))?;
            // p_type at 0, p_offset at 8, p_vaddr at 16, p_memsz at 40 (Elf64_Phdr).
            if u32_at(&ph, 0) == PT_LOAD {
                out.push((u64_at(&ph, 16), u64_at(&ph, 40), u64_at(&ph, 8)));
            }
        }
        Ok(out)
    }
}

impl KernelMemory for Kcore {
    fn read_u64(&mut self, addr: u64) -> Result<u64> {
        let Some(&(vaddr, _, offset)) = self
            .segments
            .iter()
            .find(|(v, size, _)| addr >= *v && addr - v + 8 <= *size)
        else {
            bail!("{addr:#x} is in no segment of {}", Self::PATH);
        };
        let mut b = [0u8; 8];
        self.file.seek(SeekFrom::Start(offset + (addr - vaddr)))?;
        self.file.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}

/// This kernel's /proc/kallsyms, read once by this process: the kernel formats it a symbol at a
/// time, 0.6 s of a guest's time under the emulator, and the data symbols syscost reads
/// (`audit_filter_list`, `init_task`) do not move while the kernel runs. Empty where it
/// cannot be read.
pub(crate) fn kallsyms() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())
}

/// The exit list's head address and a reader of kernel memory, or one message naming every
/// setting that is missing on this kernel.
pub(crate) fn locate() -> Result<(u64, Kcore)> {
    let symbol = symbol_address(kallsyms(), "audit_filter_list")?;
    let kcore = std::path::Path::new(Kcore::PATH).exists();
    let mut missing = Vec::new();
    if symbol.is_none() {
        missing.push(
            "audit_filter_list is not in /proc/kallsyms (it is a data symbol: listed only \
             with CONFIG_KALLSYMS_ALL=y)",
        );
    }
    if !kcore {
        missing.push(
            "/proc/kcore does not exist (CONFIG_PROC_KCORE=y is needed to read kernel memory; \
             reading through BPF is not implemented)",
        );
    }
    if !missing.is_empty() {
        return Err(crate::refused!(
            format!(
                "cannot read the kernel's audit rule entries on this kernel: {}. Without them, \
                 model the placement instead: syscost cachesets ",
                missing.join("; and ")
            ),
            Opt::Objects,
            " N ",
            Opt::Size,
            " 408, or syscost run audit-replica"
        ));
    }
    let head = symbol.expect("checked above") + AUDIT_FILTER_EXIT * LIST_HEAD;
    let kcore = Kcore::open().context(
        "/proc/kcore exists but cannot be read: it needs root (CAP_SYS_RAWIO) and no \
         kernel lockdown",
    )?;
    Ok((head, kcore))
}

/// The exit-list entries' addresses on this kernel.
pub(crate) fn exit_rule_addresses() -> Result<Vec<u64>> {
    let (head, mut kcore) = locate()?;
    walk_list(&mut kcore, head)
}

/// Where a boot's exit-rule entries were when it measured, as its result records them (the
/// syscall-latency post's placement, read from inside each guest).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    /// Each entry's address, hexadecimal (`0xffff...`: beyond a double's exact integers), in
    /// list order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// Why they could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// How their slab was aged before they were allocated (none: a fresh boot's slab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aged: Option<Aged>,
    /// How a run placed them anew (`campaign --placement run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anew: Option<Anewed>,
}

impl Placement {
    /// The entries on this kernel now, or why they cannot be read.
    pub(crate) fn here() -> Placement {
        match exit_rule_addresses() {
            Ok(a) => Placement {
                addresses: a.iter().map(|x| format!("{x:#x}")).collect(),
                unreadable: None,
                aged: None,
                anew: None,
            },
            Err(e) => Placement {
                addresses: Vec::new(),
                unreadable: Some(format!("{e:#}")),
                aged: None,
                anew: None,
            },
        }
    }

    /// The addresses as numbers (any that do not parse left out).
    pub(crate) fn addresses(&self) -> Vec<u64> {
        self.addresses
            .iter()
            .filter_map(|a| crate::core::num::parse_hex(a))
            .collect()
    }
}

/// How a run's rules were placed anew, kept with where they landed.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Anewed {
    pub run: u32,
    pub seed: u64,
    /// Fillers added between the rules.
    pub fillers: u32,
    /// How long placing them took, the entries' reading included.
    #[serde(default)]
    pub seconds: f64,
}

/// What an ageing of the entries' slab did (the age module's), kept in the boot's result
/// beside the entries' placement.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Aged {
    /// Filler entries allocated.
    pub objects: usize,
    /// Of them, freed before the rules loaded, in an order drawn from `seed`.
    pub freed: usize,
    pub seed: u64,
    /// The freed fillers' addresses could be read, each rule entry placed in one of their slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused: Option<usize>,
}

#[cfg(test)]
pub(crate) mod unit {
    use super::*;
    use std::collections::HashMap;

    /// Memory recorded from a kernel: a map of addresses to the words there.
    pub(crate) struct Recorded(pub(crate) HashMap<u64, u64>);

    impl KernelMemory for Recorded {
        fn read_u64(&mut self, addr: u64) -> Result<u64> {
            self.0
                .get(&addr)
                .copied()
                .with_context(|| format!("{addr:#x} not recorded"))
        }
    }

    const HEAD: u64 = 0xffff_ffff_8300_1040;

    fn list(entries: &[u64]) -> Recorded {
        let mut m = HashMap::new();
        let mut prev = HEAD;
        for e in entries {
            m.insert(prev, *e);
            prev = *e;
        }
        m.insert(prev, HEAD);
        Recorded(m)
    }

    #[test]
    fn a_recorded_list_is_walked_in_order() {
        let entries = [
            0xffff_8880_0412_3400,
            0xffff_8880_0412_3600,
            0xffff_8880_07a1_0200,
        ];
        assert_eq!(walk_list(&mut list(&entries), HEAD).unwrap(), entries);
        assert!(walk_list(&mut list(&[]), HEAD).unwrap().is_empty());
    }

    #[test]
    fn a_list_that_does_not_close_is_refused() {
        let mut m = list(&[0x1000, 0x2000]).0;
        m.insert(0x2000, 0x1000); // a cycle that misses the head
        let e = walk_list(&mut Recorded(m), HEAD).unwrap_err().to_string();
        assert!(e.contains("does not close"), "{e}");
        let mut m = list(&[0x1000]).0;
        m.remove(&0x1000);
        let e = format!("{:#}", walk_list(&mut Recorded(m), HEAD).unwrap_err());
        assert!(e.contains("reading entry 1"), "{e}");
    }

    #[test]
    fn kallsyms_lines() {
        let text = "ffffffff81000000 T _stext\nffffffff83001000 d audit_filter_list\n";
        assert_eq!(
            symbol_address(text, "audit_filter_list").unwrap(),
            Some(0xffff_ffff_8300_1000)
        );
        assert_eq!(symbol_address(text, "nosuch").unwrap(), None);
        // A name that only ends the same, and a module's symbol, are not it.
        let others = "ffffffff83001000 d my_audit_filter_list
ffffffffc0001000 t \
                      audit_filter_list\t[mod]\nffffffff83002000 d audit_filter_list\n";
        assert_eq!(
            symbol_address(others, "audit_filter_list").unwrap(),
            Some(0xffff_ffff_8300_2000)
        );
        let hidden = "0000000000000000 d audit_filter_list\n";
        let e = symbol_address(hidden, "audit_filter_list").unwrap_err();
        assert!(e.to_string().contains("kptr_restrict"), "{e}");
    }

    #[test]
    fn kcore_segments_are_read_from_the_program_headers() {
        // An ELF header and two program headers (a PT_NOTE and a PT_LOAD), as kcore has.
        let mut file = [0u8; 64 + 2 * 56];
        file[..4].copy_from_slice(&ELF_MAGIC);
        file[4] = ELF_CLASS_64;
        file[5] = ELF_DATA_LSB;
        file[32..40].copy_from_slice(&64u64.to_le_bytes());
        file[54..56].copy_from_slice(&56u16.to_le_bytes());
        file[56..58].copy_from_slice(&2u16.to_le_bytes());
        let ph = 64 + 56;
        file[64..68].copy_from_slice(&4u32.to_le_bytes()); // PT_NOTE
        file[ph..ph + 4].copy_from_slice(&PT_LOAD.to_le_bytes());
        file[ph + 8..ph + 16].copy_from_slice(&0x2000u64.to_le_bytes());
        file[ph + 16..ph + 24].copy_from_slice(&0xffff_8880_0000_0000u64.to_le_bytes());
        file[ph + 40..ph + 48].copy_from_slice(&(1u64 << 30).to_le_bytes());
        let head: [u8; 64] = file[..64].try_into().unwrap();
        let segs = Kcore::segments(&head, |off, buf| {
            let o = off as usize;
            buf.copy_from_slice(&file[o..o + buf.len()]);
            Ok(())
        })
        .unwrap();
        assert_eq!(segs, vec![(0xffff_8880_0000_0000, 1 << 30, 0x2000)]);
        let mut bad = head;
        bad[4] = 1; // ELFCLASS32
        assert!(Kcore::segments(&bad, |_, _| Ok(())).is_err());
    }

    /// This machine: whatever it lacks is named, and nothing is read when it lacks something.
    #[test]
    fn this_kernel_says_what_it_lacks() {
        match locate() {
            Ok((head, _)) => println!("this kernel exposes the exit list at {head:#x}"),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("CONFIG_KALLSYMS_ALL")
                        || e.contains("CONFIG_PROC_KCORE")
                        || e.contains("kptr_restrict")
                        || e.contains("/proc/kcore"),
                    "{e}"
                );
            }
        }
    }
}
