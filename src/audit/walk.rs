//! What a rule costs a syscall, by how the kernel walks it (kernel/auditsc.c): at every
//! syscall's exit, `audit_filter_syscall` walks the exit list and tests each rule's syscall
//! mask; only a rule whose mask holds the syscall's number has its fields tested
//! (`audit_filter_rules`). A path watch (`-w` on a file) hangs off the watched inode instead
//! and is tested only for syscalls that touch a name; task rules run at fork, user, exclude and
//! filesystem rules on records and mounts, not at a syscall's exit.

use super::libaudit::{FIELD_DIR, FIELD_WATCH};
use super::rules::{FILTER_EXIT, Rule};
use serde::{Deserialize, Serialize};

/// How a rule weighs on one syscall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Walk {
    /// Its fields are tested at every syscall's exit: `-S all`, no `-S`, or a `dir=`
    /// (including `-w` on a directory).
    EverySyscall,
    /// Its mask holds the measured syscall's number (in its arch's table): its fields are
    /// tested at each call.
    NamesIt,
    /// A mask test per syscall, nothing more.
    OtherSyscalls,
    /// A path watch, tested only for syscalls that touch its file.
    Watch,
    /// Not on the exit list: not walked at a syscall's exit.
    OtherList,
}

impl Walk {
    /// The kind of `rule` for a workload making syscalls `measured` (their numbers).
    pub(crate) fn of(rule: &Rule, measured: &[u32]) -> Walk {
        let fields = rule.fields();
        if rule.list != FILTER_EXIT {
            Walk::OtherList
        } else if fields.iter().any(|f| f.0 == FIELD_WATCH) {
            Walk::Watch
        } else if rule.every_syscall() || fields.iter().any(|f| f.0 == FIELD_DIR) {
            Walk::EverySyscall
        } else if measured.iter().any(|&nr| rule.names_syscall(nr)) {
            Walk::NamesIt
        } else {
            Walk::OtherSyscalls
        }
    }

    /// In words, for the ranking's column.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Walk::EverySyscall => "every syscall: fields tested at each exit",
            Walk::NamesIt => "names the measured syscall's number: fields tested",
            Walk::OtherSyscalls => "other syscalls: a mask test",
            Walk::Watch => "a file watch: only syscalls that touch it",
            Walk::OtherList => "not on the exit list",
        }
    }

    /// The cheaper rule auditctl allows, where there is one.
    pub(crate) fn advice(self, rule: &Rule) -> Option<String> {
        let dir = rule.fields().iter().any(|f| f.0 == FIELD_DIR);
        match self {
            Walk::EverySyscall if dir => Some(
                "a directory rule is walked at every syscall's exit: add -S with the syscalls \
                 it is for (with -F arch=b64 and b32), so that the others pass it on a mask test"
                    .into(),
            ),
            Walk::EverySyscall => Some(
                "name the syscalls it is for with -S (a -S list, with -F arch=b64 and b32): \
                 the others then pass it on a mask test"
                    .into(),
            ),
            Walk::NamesIt => Some(
                "if the measured syscall is not what it is for, give its -S list an -F arch \
                 (b32 and b64 number syscalls differently) or drop that syscall from it"
                    .into(),
            ),
            _ => None,
        }
    }
}
