//! The file offset of an ELF symbol: where a uprobe goes. Symbols come from the symbol table
//! and the dynamic symbol table (read with `object`); the address is turned into a file offset
//! through the loadable segment holding it, which works alike for PIE and non-PIE executables
//! and shared libraries.

use crate::core::input::Opt;
use anyhow::{Context, Result, bail};
use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};
use std::path::Path;

const PF_X: u32 = 1;

/// File offset of `symbol` in the ELF file at `path`.
pub fn symbol_offset(path: &Path, symbol: &str) -> Result<u64> {
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file = object::File::parse(&*data).map_err(|e| {
        anyhow::anyhow!(
            "{} is not an ELF file syscost can read ({e})",
            path.display()
        )
    })?;
    if file.format() != object::BinaryFormat::Elf {
        bail!("{} is not an ELF file", path.display());
    }
    let found = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(symbol) && s.address() != 0);
    let Some(sym) = found else {
        let stripped = file.symbols().next().is_none();
        bail!(
            "{} has no symbol '{symbol}'{}",
            path.display(),
            if stripped {
                " (its symbol table is stripped; only exported dynamic symbols can be probed)"
            } else {
                ""
            }
        );
    };
    let addr = sym.address();
    for seg in file.segments() {
        let (va, size) = (seg.address(), seg.size());
        if addr >= va && addr < va + size {
            let exec = match seg.flags() {
                SegmentFlags::Elf { p_flags, .. } => p_flags.0 & PF_X != 0,
                _ => true,
            };
            if !exec {
                bail!(
                    "'{symbol}' in {} is at {addr:#x}, in a segment that is not executable: not \
                     code, nothing to probe",
                    path.display()
                );
            }
            return Ok(addr - va + seg.file_range().0);
        }
    }
    bail!(
        "'{symbol}' in {} is at {addr:#x}, outside every loadable segment",
        path.display()
    )
}

/// Split `PATH:SYMBOL`.
pub(crate) fn parse_target(s: &str) -> Result<(std::path::PathBuf, String)> {
    match s.rsplit_once(':') {
        Some((p, sym)) if !p.is_empty() && !sym.is_empty() => Ok((p.into(), sym.into())),
        _ => Err(crate::refused!(
            Opt::Target,
            format!(" '{s}': write it as PATH:SYMBOL, e.g. /usr/bin/redis-server:processCommand")
        )),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn errors_name_the_problem() {
        let me = std::env::current_exe().unwrap();
        let e = symbol_offset(&me, "no_such_symbol_here")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no symbol 'no_such_symbol_here'"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("x.txt");
        std::fs::write(&txt, "hello").unwrap();
        assert!(
            symbol_offset(&txt, "main")
                .unwrap_err()
                .to_string()
                .contains("not an ELF")
        );
        assert!(parse_target("nocolon").is_err());
        assert_eq!(
            parse_target("/a/b:c").unwrap(),
            ("/a/b".into(), "c".to_string())
        );
    }
}
