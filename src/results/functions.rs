//! Kernel instructions per operation by function: what syscost's QEMU plugin counted block by
//! block in a run's sample windows (`campaign --emulated-profile`), named from the guest
//! kernel's own kallsyms. Exact counts, not samples: the emulated counterpart of a sampled
//! profile, and what finds where a kernel's extra instructions are (the trap of a boot's
//! asynchronous work in the windows was found this way).

use crate::profile::symbols::Kallsyms;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Functions kept in a result, the most instructions first.
const KEEP: usize = 200;

/// One function's kernel instructions per operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCount {
    pub name: String,
    pub per_op: f64,
}

/// A result's kernel instructions per operation, by function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmulatedFunctions {
    /// Every kernel instruction the profile counted, per operation.
    pub total_per_op: f64,
    /// The functions with the most, most first (at most 200).
    pub functions: Vec<FunctionCount>,
    /// What addresses no symbol names came to, per operation.
    pub unnamed_per_op: f64,
    /// The kernel's atomic read-modify-writes per operation, by instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomics: Option<EmulatedAtomics>,
    /// The cache lines the measured vCPU took from other vCPUs per operation, by the kernel
    /// instruction that took them (on more than one vCPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<EmulatedAtomics>,
}

/// A result's kernel atomic read-modify-writes per operation (a LOCK prefix, or XCHG with
/// memory): the locks, reference counts and bitmaps its path takes, by the instruction that
/// takes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmulatedAtomics {
    pub total_per_op: f64,
    /// The sites, most first (at most 200).
    pub sites: Vec<AtomicSite>,
}

/// One atomic instruction of the kernel: `function+0xOFFSET`, how often per operation, and
/// what memory it touched (in the kernel's image, allocated, or both).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AtomicSite {
    pub site: String,
    pub function: String,
    pub per_op: f64,
    pub memory: String,
}

impl EmulatedAtomics {
    /// The atomics of `functions`' profile per function, most first.
    pub(crate) fn by_function(&self) -> Vec<(&str, f64)> {
        let mut by: Vec<(&str, f64)> = Vec::new();
        for s in &self.sites {
            match by.iter_mut().find(|(f, _)| *f == s.function) {
                Some(x) => x.1 += s.per_op,
                None => by.push((&s.function, s.per_op)),
            }
        }
        by.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        by
    }

    /// The site's atomics per operation (0 when it is not among those kept).
    pub(crate) fn per_op(&self, site: &str) -> f64 {
        (self.sites.iter())
            .find(|s| s.site == site)
            .map_or(0.0, |s| s.per_op)
    }

    /// Each site's median over `all` (several boots), and the median total.
    fn median(all: &[&EmulatedAtomics]) -> Option<EmulatedAtomics> {
        let median = |f: &dyn Fn(&EmulatedAtomics) -> f64| {
            crate::stats::median(&all.iter().map(|a| f(a)).collect::<Vec<f64>>())
        };
        let mut sites: Vec<AtomicSite> = Vec::new();
        for s in all.iter().flat_map(|a| &a.sites) {
            if !sites.iter().any(|x| x.site == s.site) {
                sites.push(AtomicSite {
                    per_op: median(&|a| a.per_op(&s.site)),
                    ..s.clone()
                });
            }
        }
        sites.sort_by(|a, b| b.per_op.total_cmp(&a.per_op).then(a.site.cmp(&b.site)));
        sites.truncate(KEEP);
        (!all.is_empty()).then(|| EmulatedAtomics {
            total_per_op: median(&|a| a.total_per_op),
            sites,
        })
    }

    /// The sites' atomics per operation (`address -> (atomics, memory)`), named by `symbols`;
    /// `total`: the count's own.
    pub(crate) fn of(
        sites: &HashMap<u64, (f64, String)>,
        symbols: &Kallsyms,
        total: f64,
    ) -> EmulatedAtomics {
        let mut out: Vec<AtomicSite> = (sites.iter())
            .map(|(&addr, (n, memory))| {
                let (function, site) = match symbols.resolve_offset(addr) {
                    Some((name, off)) => (name.to_string(), format!("{name}+{off:#x}")),
                    None => ("(unnamed)".to_string(), format!("{addr:#x}")),
                };
                AtomicSite {
                    site,
                    function,
                    per_op: *n,
                    memory: memory.clone(),
                }
            })
            .collect();
        out.sort_by(|a, b| b.per_op.total_cmp(&a.per_op).then(a.site.cmp(&b.site)));
        out.truncate(KEEP);
        EmulatedAtomics {
            total_per_op: total,
            sites: out,
        }
    }
}

impl EmulatedFunctions {
    /// The blocks' instructions per operation (`address -> instructions`), each block
    /// credited to the function its first address is in.
    pub(crate) fn of(blocks: &HashMap<u64, f64>, symbols: &Kallsyms) -> EmulatedFunctions {
        let per_op = |n: f64| n;
        let mut by_name: HashMap<&str, f64> = HashMap::new();
        let mut unnamed = 0.0;
        for (&addr, &n) in blocks {
            match symbols.resolve(addr) {
                Some(name) => *by_name.entry(name).or_default() += n,
                None => unnamed += n,
            }
        }
        let mut functions: Vec<FunctionCount> = by_name
            .into_iter()
            .map(|(name, n)| FunctionCount {
                name: name.to_string(),
                per_op: per_op(n),
            })
            .collect();
        functions.sort_by(|a, b| b.per_op.total_cmp(&a.per_op).then(a.name.cmp(&b.name)));
        functions.truncate(KEEP);
        EmulatedFunctions {
            total_per_op: per_op(blocks.values().sum()),
            functions,
            unnamed_per_op: per_op(unnamed),
            atomics: None,
            moved: None,
        }
    }

    /// Each function's median over `profiles` (several boots of one kernel), and the median
    /// total; a function missing from a profile counts 0 there.
    pub(crate) fn median(profiles: &[EmulatedFunctions]) -> Option<EmulatedFunctions> {
        let median = |f: &dyn Fn(&EmulatedFunctions) -> f64| {
            crate::stats::median(&profiles.iter().map(f).collect::<Vec<f64>>())
        };
        let mut names: Vec<&str> = profiles
            .iter()
            .flat_map(|p| p.functions.iter().map(|f| f.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut functions: Vec<FunctionCount> = names
            .into_iter()
            .map(|name| FunctionCount {
                name: name.to_string(),
                per_op: median(&|p| p.per_op(name)),
            })
            .collect();
        functions.sort_by(|a, b| b.per_op.total_cmp(&a.per_op).then(a.name.cmp(&b.name)));
        functions.truncate(KEEP);
        (!profiles.is_empty()).then(|| EmulatedFunctions {
            total_per_op: median(&|p| p.total_per_op),
            functions,
            unnamed_per_op: median(&|p| p.unnamed_per_op),
            atomics: EmulatedAtomics::median(
                &profiles
                    .iter()
                    .filter_map(|p| p.atomics.as_ref())
                    .collect::<Vec<_>>(),
            ),
            moved: EmulatedAtomics::median(
                &profiles
                    .iter()
                    .filter_map(|p| p.moved.as_ref())
                    .collect::<Vec<_>>(),
            ),
        })
    }

    /// The function's instructions per operation (0 when it is not among those kept).
    pub(crate) fn per_op(&self, name: &str) -> f64 {
        self.functions
            .iter()
            .find(|f| f.name == name)
            .map_or(0.0, |f| f.per_op)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn blocks_are_credited_to_the_function_they_start_in() {
        let symbols = Kallsyms::parse(
            "ffffffff81000000 do_syscall_64\nffffffff81000100 \
             __x64_sys_getpid\nffffffff81000200 audit_filter_syscall\n",
        );
        let blocks = HashMap::from([
            (0xffffffff81000010, 300),
            (0xffffffff81000040, 100),
            (0xffffffff81000100, 50),
            (0xffffffff81000280, 550),
            (0xffffffff80000000, 10),
        ]);
        let blocks = blocks
            .into_iter()
            .map(|(a, n)| (a, n as f64 / 10.0))
            .collect();
        let f = EmulatedFunctions::of(&blocks, &symbols);
        assert_eq!(f.total_per_op, 101.0);
        assert_eq!(f.unnamed_per_op, 1.0, "below the first symbol");
        let names: Vec<(&str, f64)> = f
            .functions
            .iter()
            .map(|x| (x.name.as_str(), x.per_op))
            .collect();
        assert_eq!(
            names,
            [
                ("audit_filter_syscall", 55.0),
                ("do_syscall_64", 40.0),
                ("__x64_sys_getpid", 5.0)
            ]
        );
        assert_eq!(f.per_op("do_syscall_64"), 40.0);
        assert_eq!(f.per_op("nothing"), 0.0);
        let mut other = f.clone();
        other.functions.retain(|x| x.name != "do_syscall_64");
        other.total_per_op = 61.0;
        let m = EmulatedFunctions::median(&[f.clone(), other.clone(), other]).unwrap();
        assert_eq!(m.per_op("do_syscall_64"), 0.0, "missing in two of three");
        assert_eq!(m.per_op("audit_filter_syscall"), 55.0);
        assert_eq!(m.total_per_op, 61.0);
        assert_eq!(EmulatedFunctions::median(&[]), None);
    }
}
