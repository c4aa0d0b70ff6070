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
