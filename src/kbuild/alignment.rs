//! Whether a build's alignment took: how many of a kernel's functions start on each
//! power-of-two boundary, read from the symbols of its vmlinux. gcc's `-falign-functions=N`
//! does not align every function: it leaves the ones it takes for cold (`__cold`, and code it
//! moves to `.text.unlikely`) as they fall, and it aligns nothing more at `-Os` (the kernel
//! later worked around both, c27cd083cfb9), so a build named for N is measured, not assumed.
//!
//! The symbols are read with the `object` crate; what is syscost's is which count as a
//! function: every `FUNC` symbol of a positive size in an executable section, but gcc's split
//! cold parts (`NAME.cold`), which are blocks moved out of a function, not its entry.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The largest boundary counted: a page.
const MOST: u64 = 4096;

/// A kernel's functions by the boundaries they start on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Alignment {
    pub functions: u64,
    /// For each boundary 1, 2, 4 ... 4096 bytes, the functions starting on it.
    pub on: Vec<(u64, u64)>,
}

impl Alignment {
    /// The share of the functions that start on a `bytes` boundary (0 for a boundary not
    /// counted).
    pub(crate) fn share(&self, bytes: u64) -> f64 {
        let on = self.on.iter().find(|(b, _)| *b == bytes).map_or(0, |x| x.1);
        on as f64 / self.functions.max(1) as f64
    }

    /// Of functions at `addrs`.
    pub(crate) fn of(addrs: impl IntoIterator<Item = u64>) -> Alignment {
        let boundaries: Vec<u64> = (0..=MOST.trailing_zeros()).map(|k| 1u64 << k).collect();
        let mut on = vec![0u64; boundaries.len()];
        let mut functions = 0;
        for a in addrs {
            functions += 1;
            for (i, b) in boundaries.iter().enumerate() {
                on[i] += u64::from(a % b == 0);
            }
        }
        Alignment {
            functions,
            on: boundaries.into_iter().zip(on).collect(),
        }
    }

    /// The functions of the vmlinux (an ELF with its symbols) at `path`.
    pub(crate) fn of_vmlinux(path: &Path) -> Result<Alignment> {
        use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let file = object::File::parse(&*bytes)
            .with_context(|| format!("{} is not an ELF file", path.display()))?;
        let text: Vec<object::SectionIndex> = (file.sections())
            .filter(|s| s.kind() == SectionKind::Text)
            .map(|s| s.index())
            .collect();
        let addrs = file.symbols().filter_map(|s| {
            let entry = s.kind() == SymbolKind::Text
                && s.size() > 0
                && s.section_index().is_some_and(|i| text.contains(&i))
                && !s.name().is_ok_and(|n| n.contains(".cold"));
            entry.then(|| s.address())
        });
        let a = Alignment::of(addrs);
        if a.functions == 0 {
            anyhow::bail!("{} has no function symbols (stripped?)", path.display());
        }
        Ok(a)
    }
}

/// The vmlinux kept beside a build's bzImage in the store (`KEY/bzImage`, `KEY/vmlinux`).
pub(crate) fn vmlinux_beside(image: &Path) -> Option<std::path::PathBuf> {
    let v = image.with_file_name("vmlinux");
    v.is_file().then_some(v)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn functions_are_counted_on_every_boundary_they_start_on() {
        let a = Alignment::of([0x1000, 0x1040, 0x1010, 0x1003]);
        assert_eq!(a.functions, 4);
        assert_eq!(a.share(1), 1.0);
        assert_eq!(a.share(16), 0.75);
        assert_eq!(a.share(64), 0.5);
        assert_eq!(a.share(4096), 0.25);
        assert_eq!(a.share(3), 0.0, "not a boundary counted");
    }

    /// This test binary's own functions: rustc aligns most x86-64 functions to 16 bytes, and
    /// about half of those fall on 32 by chance, a quarter on 64.
    #[test]
    fn an_elf_s_functions_are_read() {
        let a = Alignment::of_vmlinux(&std::env::current_exe().unwrap()).unwrap();
        assert!(a.functions > 1000, "{a:?}");
        assert!(a.share(1) == 1.0 && a.share(16) > 0.8, "{a:?}");
        let chance = a.share(64) / a.share(16);
        assert!((0.2..0.3).contains(&chance), "{a:?}");
        assert!(Alignment::of_vmlinux(Path::new("/proc/self/status")).is_err());
    }
}
