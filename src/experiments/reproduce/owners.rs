//! Whose lines a run's modelled L1d misses were in: the rule entries', the worker's own
//! kernel objects' (its task, audit context, credentials, stack), another kernel object's or
//! user memory's. Each run of a boot is a fresh worker process over the same entries, so what
//! differs between a run that misses and one that does not is where that process's objects
//! fell: this names them, line by line, from the lines the emulator saw miss and the
//! addresses the guest recorded.

use crate::audit::own::{ObjectKind, OwnObjects};
use crate::layout::Geometry;
use crate::results::sets::MissedLine;
use serde::{Deserialize, Serialize};

/// The slab slot of an exit-rule entry: a `struct audit_entry` is a kmalloc-512 object, and
/// nothing else lives in its slot.
const ENTRY_SLOT: u64 = 512;
/// Where user space ends on x86-64 (canonical lower half).
const USER_END: u64 = 1 << 47;
/// Where the kernel image (text, static data) and modules are mapped on x86-64
/// (`__START_KERNEL_map`, Documentation/arch/x86/x86_64/mm.rst): the same lines in every
/// process, such as the rule lists' heads.
const KERNEL_IMAGE: u64 = 0xffff_ffff_8000_0000;

/// What a missed line belonged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Owner {
    RuleEntry,
    Own(ObjectKind),
    KernelImage,
    OtherKernel,
    User,
}

impl Owner {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Owner::RuleEntry => "rule entries",
            Owner::Own(k) => k.label(),
            Owner::KernelImage => "kernel image",
            Owner::OtherKernel => "other kernel",
            Owner::User => "user",
        }
    }

    /// Every owner, in the order tables show them.
    pub(crate) const ALL: [Owner; 10] = [
        Owner::RuleEntry,
        Owner::Own(ObjectKind::AuditContext),
        Owner::Own(ObjectKind::Task),
        Owner::Own(ObjectKind::Pid),
        Owner::Own(ObjectKind::Signal),
        Owner::Own(ObjectKind::Cred),
        Owner::Own(ObjectKind::KernelStack),
        Owner::KernelImage,
        Owner::OtherKernel,
        Owner::User,
    ];
}

/// One run's misses by owner, per operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunOwners {
    pub run: u32,
    /// The misses of the lines listed (a run keeps its 32 most missed), by owner, most first.
    pub owners: Vec<(Owner, f64)>,
    /// The set whose listed lines missed most, and those lines' owners with their misses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_set: Option<(u64, Vec<(Owner, f64)>)>,
    /// The L1d set of the worker's `task_struct`'s first line: where its hot fields fall
    /// follows from it (the object is page-sized, its start moves from one task to the next).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_set: Option<u64>,
    /// Why the worker's objects could not be read (then they count as other kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// What a boot's result keeps of a run for this.
#[derive(Deserialize)]
struct RunLines {
    index: u32,
    #[serde(default)]
    missed_lines: Vec<MissedLine>,
    #[serde(default)]
    own_objects: Option<OwnObjects>,
}

/// Each run of `result` that kept missed lines, with `entries` the boot's rule entries.
pub(crate) fn runs_of(result: &serde_json::Value, entries: &[u64], g: Geometry) -> Vec<RunOwners> {
    let Some(runs) = result.get("runs").and_then(|r| r.as_array()) else {
        return Vec::new();
    };
    runs.iter()
        .filter_map(|r| serde_json::from_value::<RunLines>(r.clone()).ok())
        .filter(|r| !r.missed_lines.is_empty())
        .map(|r| owners_of(&r, entries, g))
        .collect()
}

fn owners_of(r: &RunLines, entries: &[u64], g: Geometry) -> RunOwners {
    let own = r.own_objects.clone().unwrap_or_default();
    let owner = |line: u64| {
        if line < USER_END {
            Owner::User
        } else if entries.iter().any(|e| line >= *e && line - e < ENTRY_SLOT) {
            Owner::RuleEntry
        } else if let Some(kind) = own.owner_of(line) {
            Owner::Own(kind)
        } else if line >= KERNEL_IMAGE {
            Owner::KernelImage
        } else {
            Owner::OtherKernel
        }
    };
    let lines: Vec<(u64, Owner, f64)> = (r.missed_lines.iter())
        .filter_map(|m| Some((m.address()?, owner(m.address()?), m.per_op)))
        .collect();
    let set_of = |line: u64| (line / g.line) % g.sets;
    let mut by_set: Vec<(u64, f64)> = Vec::new();
    for (line, _, n) in &lines {
        add(&mut by_set, set_of(*line), *n);
    }
    let top = by_set
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    RunOwners {
        run: r.index,
        owners: totals(lines.iter().map(|(_, o, n)| (*o, *n))),
        top_set: top.map(|(set, _)| {
            let in_set = lines.iter().filter(|(l, _, _)| set_of(*l) == set);
            (set, totals(in_set.map(|(_, o, n)| (*o, *n))))
        }),
        task_set: (own.objects.iter())
            .find(|o| o.kind == ObjectKind::Task)
            .and_then(|o| o.start())
            .map(set_of),
        unreadable: match &r.own_objects {
            None => Some("the worker did not record its objects".into()),
            Some(o) => o.unreadable.clone(),
        },
    }
}

/// Each key's values added, most first.
fn totals<K: Copy + PartialEq + Ord>(items: impl Iterator<Item = (K, f64)>) -> Vec<(K, f64)> {
    let mut out: Vec<(K, f64)> = Vec::new();
    for (k, n) in items {
        add(&mut out, k, n);
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

fn add<K: PartialEq>(to: &mut Vec<(K, f64)>, k: K, n: f64) {
    match to.iter_mut().find(|(x, _)| *x == k) {
        Some((_, v)) => *v += n,
        None => to.push((k, n)),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    const G: Geometry = Geometry {
        sets: 64,
        ways: 8,
        line: 64,
    };

    /// A run whose misses are in set 48: two entries' first lines and its audit context's
    /// line there, beside a stack line and a user line elsewhere.
    #[test]
    fn each_missed_line_is_named_by_the_object_holding_it() {
        let entries = [0xffff_8880_0412_3c00u64, 0xffff_8880_0412_4c00];
        let ctx = 0xffff_8880_0500_0a00u64;
        let result = serde_json::json!({"runs": [{
            "index": 2,
            "missed_lines": [
                {"line": "0xffff888004123c00", "per_op": 3.0},
                {"line": "0xffff888004124c00", "per_op": 2.5},
                {"line": "0xffff888005000c00", "per_op": 2.0},
                {"line": "0xffffc90000403f40", "per_op": 0.5},
                {"line": "0xffff888009999000", "per_op": 0.25},
                {"line": "0xffffffff82a1b000", "per_op": 0.1875},
                {"line": "0x7ffc1000", "per_op": 0.125},
            ],
            "own_objects": {"objects": [
                {"kind": "audit_context", "address": format!("{ctx:#x}"), "size": 928},
                {"kind": "kernel_stack", "address": "0xffffc90000400000", "size": 16384},
                {"kind": "task", "address": "0xffff8880055a20c0", "size": 9536},
            ]},
        }, {"index": 3}]});
        let runs = runs_of(&result, &entries, G);
        assert_eq!(runs.len(), 1, "a run without lines is left out");
        let r = &runs[0];
        assert_eq!(r.run, 2);
        let ctx_owner = Owner::Own(ObjectKind::AuditContext);
        let stack = Owner::Own(ObjectKind::KernelStack);
        assert_eq!(
            r.owners,
            [
                (Owner::RuleEntry, 5.5),
                (ctx_owner, 2.0),
                (stack, 0.5),
                (Owner::OtherKernel, 0.25),
                (Owner::KernelImage, 0.1875),
                (Owner::User, 0.125)
            ]
        );
        let (set, in_set) = r.top_set.clone().unwrap();
        assert_eq!(set, 48, "0x...c00 / 64 % 64");
        assert_eq!(in_set, [(Owner::RuleEntry, 5.5), (ctx_owner, 2.0)]);
        assert_eq!(r.unreadable, None);
        assert_eq!(r.task_set, Some(3), "0x...20c0 / 64 % 64");
    }
}
