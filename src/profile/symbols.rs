//! Addresses to function names: the kernel through /proc/kallsyms, user space through the ELF
//! symbol tables (symtab and dynsym, read with the `object` crate) of the files mapped at the
//! sampled addresses.

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::path::Path;

/// Kernel symbols, sorted by address.
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
    /// Why kernel addresses cannot be named, when they cannot.
    pub hidden: Option<String>,
}

impl Kallsyms {
    pub fn load() -> Kallsyms {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let ty = it.next()?;
                let name = it.next()?;
                // Text symbols only.
                matches!(ty, "t" | "T" | "w" | "W").then(|| (addr, name.to_string()))
            })
            .collect();
        let hidden = Self::hidden(&syms);
        if hidden.is_some() {
            syms.clear();
        }
        syms.sort_by_key(|s| s.0);
        Kallsyms { syms, hidden }
    }

    /// Text symbols given as `ADDR NAME` lines (another kernel's, such as a guest's sent
    /// with its result).
    pub(crate) fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let (addr, name) = l.split_once(' ')?;
                Some((u64::from_str_radix(addr, 16).ok()?, name.to_string()))
            })
            .collect();
        syms.sort_by_key(|s| s.0);
        let hidden = Self::hidden(&syms);
        Kallsyms { syms, hidden }
    }

    /// Why the symbols cannot name kernel addresses, when they cannot.
    fn hidden(syms: &[(u64, String)]) -> Option<String> {
        if syms.is_empty() {
            Some("/proc/kallsyms is unreadable".to_string())
        } else if syms.iter().all(|(a, _)| *a == 0) {
            let restrict = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            Some(format!(
                "kernel addresses are hidden by kernel.kptr_restrict={restrict} (set it to 0, or \
                 run as root with CAP_SYSLOG when it is 1)"
            ))
        } else {
            None
        }
    }

    pub(crate) fn resolve(&self, addr: u64) -> Option<&str> {
        self.resolve_offset(addr).map(|(name, _)| name)
    }

    /// The symbol `addr` is in, and how far into it.
    pub(crate) fn resolve_offset(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        (i > 0).then(|| (self.syms[i - 1].1.as_str(), addr - self.syms[i - 1].0))
    }

    /// The symbols that start in `lo..hi`, in address order.
    pub(crate) fn starting_in(&self, lo: u64, hi: u64) -> impl Iterator<Item = &str> {
        let from = self.syms.partition_point(|(a, _)| *a < lo);
        let to = self.syms.partition_point(|(a, _)| *a < hi);
        self.syms[from..to.max(from)]
            .iter()
            .map(|(_, n)| n.as_str())
    }
}

/// One executable mapping of a process.
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// The executable mappings of a live process, from /proc/PID/maps.
pub(crate) fn maps_of(pid: u32) -> Vec<Mapping> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (a, b) = it.next()?.split_once('-')?;
            let perms = it.next()?;
            let offset = u64::from_str_radix(it.next()?, 16).ok()?;
            let _dev = it.next()?;
            let _inode = it.next()?;
            let path = it.next()?.to_string();
            if !(perms.contains('x') && path.starts_with('/')) {
                return None;
            }
            Some(Mapping {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                offset,
                path,
            })
        })
        .collect()
}

/// Function symbols of one ELF file by file offset.
struct ElfSymbols {
    /// (file offset, size, name), sorted by offset.
    syms: Vec<(u64, u64, String)>,
}

impl ElfSymbols {
    fn load(path: &Path) -> Option<ElfSymbols> {
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        // (vaddr, size, file offset) of each loaded segment, to turn addresses into offsets.
        let segs: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| (s.address(), s.size(), s.file_range().0))
            .collect();
        let mut syms = Vec::new();
        for sym in file.symbols().chain(file.dynamic_symbols()) {
            if sym.kind() != SymbolKind::Text || sym.address() == 0 {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            let addr = sym.address();
            if let Some((va, _, off)) = segs
                .iter()
                .find(|(va, sz, _)| addr >= *va && addr < va + sz)
            {
                let name = rustc_demangle::demangle(name).to_string();
                // Drop the hash suffix of Rust symbols: `::h0123456789abcdef`.
                let name = match name.rfind("::h") {
                    Some(i) if name.len() - i == 19 => name[..i].to_string(),
                    _ => name,
                };
                syms.push((addr - va + off, sym.size(), name));
            }
        }
        syms.sort_by_key(|s| s.0);
        syms.dedup_by_key(|s| s.0);
        Some(ElfSymbols { syms })
    }

    fn resolve(&self, offset: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= offset);
        if i == 0 {
            return None;
        }
        let (start, size, name) = &self.syms[i - 1];
        (size == &0 || offset < start + size).then_some(name.as_str())
    }
}

/// Resolves user addresses of any process whose mappings it has been told about.
#[derive(Default)]
pub(crate) struct UserSymbols {
    maps: HashMap<u32, Vec<Mapping>>,
    files: HashMap<String, Option<ElfSymbols>>,
}

impl UserSymbols {
    pub(crate) fn add_mapping(&mut self, pid: u32, m: Mapping) {
        self.maps.entry(pid).or_default().push(m);
    }

    /// `function` (or `[file]` when the file has no symbol there), or None when the address is
    /// in no known mapping.
    pub(crate) fn resolve(&mut self, pid: u32, addr: u64) -> Option<String> {
        let m = self
            .maps
            .get(&pid)?
            .iter()
            .rev()
            .find(|m| addr >= m.start && addr < m.end)?
            .clone();
        let offset = addr - m.start + m.offset;
        let syms = self
            .files
            .entry(m.path.clone())
            .or_insert_with(|| ElfSymbols::load(Path::new(&m.path)));
        let file = Path::new(&m.path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        Some(match syms.as_ref().and_then(|s| s.resolve(offset)) {
            Some(name) => name.to_string(),
            None => format!("[{file}]"),
        })
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[inline(never)]
    fn marker_function_for_symbols() -> u64 {
        std::hint::black_box(42)
    }

    #[test]
    fn resolves_this_test_binary_s_own_function() {
        let pid = std::process::id();
        let mut u = UserSymbols::default();
        for m in maps_of(pid) {
            u.add_mapping(pid, m);
        }
        let addr = marker_function_for_symbols as *const () as u64;
        let name = u.resolve(pid, addr).expect("the address is in a mapping");
        assert!(name.contains("marker_function_for_symbols"), "{name}");
    }

    #[test]
    fn kernel_symbols_resolve_when_visible() {
        let k = Kallsyms::load();
        if let Some(why) = &k.hidden {
            println!("skipped: {why}");
            return;
        }
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
        let line = text
            .lines()
            .find(|l| l.ends_with(" T __x64_sys_getpid") || l.ends_with(" T sys_getpid"))
            .or_else(|| text.lines().find(|l| l.contains(" T ")))
            .unwrap();
        let addr = u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
        let name = line.split_whitespace().nth(2).unwrap();
        assert_eq!(k.resolve(addr + 1), Some(name));
    }
}
