//! Where a measuring process's own kernel objects are: its `task_struct`, the audit context
//! the audit walk fills on every syscall, its credentials (which a rule's uid or gid fields
//! read), its `struct pid` and `signal_struct` (which getpid() reads) and its kernel stack. The syscall-latency post's misses depend on where the rule
//! entries sit, and on what else crowds their cache sets: these are the objects that differ
//! from one process to the next, read so that each missed line can be named.
//!
//! Read as the entries are ([`super::addresses`]): kernel memory through /proc/kcore, and the
//! task list from `init_task` in /proc/kallsyms; the offsets from the kernel's BTF.

use super::addresses::{Kcore, KernelMemory, symbol_address};
use super::btf::Btf;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// THREAD_SIZE on x86-64 without KASAN (arch/x86/include/asm/page_64_types.h): 16 KiB.
const KERNEL_STACK_BYTES: u64 = 16 << 10;
/// No guest has this many tasks: a walk that gets this far is reading something else.
const MAX_TASKS: usize = 1 << 16;

/// What a kernel object is to the process that owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Task,
    AuditContext,
    Cred,
    Pid,
    Signal,
    KernelStack,
}

impl ObjectKind {
    /// The kernel's name for it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ObjectKind::Task => "task_struct",
            ObjectKind::AuditContext => "audit_context",
            ObjectKind::Cred => "cred",
            ObjectKind::Pid => "struct pid",
            ObjectKind::Signal => "signal_struct",
            ObjectKind::KernelStack => "kernel stack",
        }
    }
}

/// One object: its kind, its address (hexadecimal, as the entries' are) and its size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelObject {
    pub kind: ObjectKind,
    pub address: String,
    pub size: u64,
}

impl KernelObject {
    fn new(kind: ObjectKind, address: u64, size: u64) -> KernelObject {
        KernelObject {
            kind,
            address: format!("{address:#x}"),
            size,
        }
    }

    /// Its address, if it parses.
    pub(crate) fn start(&self) -> Option<u64> {
        crate::core::num::parse_hex(&self.address)
    }

    /// Whether `addr` is inside it.
    pub(crate) fn holds(&self, addr: u64) -> bool {
        self.start()
            .is_some_and(|a| addr >= a && addr - a < self.size)
    }
}

/// A process's objects, or why they could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnObjects {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<KernelObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// Where a campaign guest's init hands its measurement the [`ObjectMap`] (as JSON), read with
/// the kallsyms it read for the arm's rules: the measurement then reads none.
pub(crate) const OBJECT_MAP_ENV: &str = "SYSCOST_OBJECT_MAP";

/// Where a process's objects are found in this kernel: `init_task` and the layout of the
/// structures a walk reads. Reading them (the whole /proc/kallsyms, the kernel's BTF) took most
/// of a second of each measuring process under the emulator, so a measurement reads them once
/// and hands them to every worker.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct ObjectMap {
    init_task: u64,
    layout: TaskLayout,
}

impl ObjectMap {
    /// The map a guest's init handed this process ([`OBJECT_MAP_ENV`]), else this kernel's
    /// read here.
    pub(crate) fn given_or_here() -> Result<ObjectMap> {
        let given = std::env::var(OBJECT_MAP_ENV).ok();
        match given.and_then(|g| serde_json::from_str(&g).ok()) {
            Some(map) => Ok(map),
            None => ObjectMap::here(),
        }
    }

    /// This kernel's.
    pub(crate) fn here() -> Result<ObjectMap> {
        let init_task = symbol_address(super::addresses::kallsyms(), "init_task")?.context(
            "init_task is not in /proc/kallsyms (a data symbol: listed only with \
             CONFIG_KALLSYMS_ALL=y)",
        )?;
        let layout = TaskLayout::of(&Btf::load()?)?;
        Ok(ObjectMap { init_task, layout })
    }
}

impl OwnObjects {
    /// This process's (its main thread's: the task list holds group leaders), found through
    /// `map` when given (read once for a measurement's workers), else read here.
    pub(crate) fn here(map: Option<&ObjectMap>) -> OwnObjects {
        match read(std::process::id(), map) {
            Ok(objects) => OwnObjects {
                objects,
                unreadable: None,
            },
            Err(e) => OwnObjects {
                objects: Vec::new(),
                unreadable: Some(format!("{e:#}")),
            },
        }
    }

    /// The kind of the object holding `addr`, if one does.
    pub(crate) fn owner_of(&self, addr: u64) -> Option<ObjectKind> {
        self.objects.iter().find(|o| o.holds(addr)).map(|o| o.kind)
    }
}

/// The offsets of `struct task_struct` a walk needs, from the kernel's BTF.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct TaskLayout {
    pub size: u64,
    pub tasks: u64,
    pub pid: u64,
    pub stack: u64,
    pub cred: u64,
    pub thread_pid: u64,
    pub signal: u64,
    /// With CONFIG_AUDITSYSCALL only: the audit context and its size.
    pub audit_context: Option<(u64, u64)>,
    pub cred_size: u64,
    pub pid_size: u64,
    pub signal_size: u64,
}

impl TaskLayout {
    pub(crate) fn of(btf: &Btf) -> Result<TaskLayout> {
        let names = [
            "task_struct",
            "audit_context",
            "cred",
            "pid",
            "signal_struct",
        ];
        let [task, context, cred, pid, signal] = btf.structures(names);
        let missing = |s: &str| format!("the kernel's BTF has no struct {s}");
        let task = task.with_context(|| missing("task_struct"))?;
        let member = |m: &str| {
            task.offset_of(m)
                .with_context(|| format!("the kernel's BTF has no task_struct.{m}"))
        };
        let size = |s: Option<super::btf::Struct>, name| {
            s.map(|s| s.size()).with_context(|| missing(name))
        };
        Ok(TaskLayout {
            size: task.size(),
            tasks: member("tasks")?,
            pid: member("pid")?,
            stack: member("stack")?,
            cred: member("cred")?,
            thread_pid: member("thread_pid")?,
            signal: member("signal")?,
            audit_context: task
                .offset_of("audit_context")
                .zip(context.map(|c| c.size())),
            cred_size: size(cred, "cred")?,
            pid_size: size(pid, "pid")?,
            signal_size: size(signal, "signal_struct")?,
        })
    }
}

/// The objects of the task whose pid is `pid`, found on the task list from `init_task`.
pub(crate) fn objects_of(
    mem: &mut dyn KernelMemory,
    init_task: u64,
    l: &TaskLayout,
    pid: u32,
) -> Result<Vec<KernelObject>> {
    let head = init_task + l.tasks;
    let mut node = mem.read_u64(head)?;
    for _ in 0..MAX_TASKS {
        if node == head {
            bail!("no task of pid {pid} on the kernel's task list");
        }
        let task = node - l.tasks;
        if mem.read_u64(task + l.pid)? as u32 == pid {
            return task_objects(mem, task, l);
        }
        node = mem.read_u64(node)?;
    }
    bail!("the task list from {init_task:#x} does not close: not a task list")
}

fn task_objects(
    mem: &mut dyn KernelMemory,
    task: u64,
    l: &TaskLayout,
) -> Result<Vec<KernelObject>> {
    let mut out = vec![
        KernelObject::new(ObjectKind::Task, task, l.size),
        KernelObject::new(
            ObjectKind::KernelStack,
            mem.read_u64(task + l.stack)?,
            KERNEL_STACK_BYTES,
        ),
        KernelObject::new(ObjectKind::Cred, mem.read_u64(task + l.cred)?, l.cred_size),
        KernelObject::new(
            ObjectKind::Pid,
            mem.read_u64(task + l.thread_pid)?,
            l.pid_size,
        ),
        KernelObject::new(
            ObjectKind::Signal,
            mem.read_u64(task + l.signal)?,
            l.signal_size,
        ),
    ];
    if let Some((at, size)) = l.audit_context {
        let ctx = mem.read_u64(task + at)?;
        if ctx != 0 {
            out.push(KernelObject::new(ObjectKind::AuditContext, ctx, size));
        }
    }
    Ok(out)
}

fn read(pid: u32, map: Option<&ObjectMap>) -> Result<Vec<KernelObject>> {
    let ObjectMap { init_task, layout } = match map {
        Some(m) => *m,
        None => ObjectMap::here()?,
    };
    let mut kcore = Kcore::open().context(
        "/proc/kcore cannot be read: it needs CONFIG_PROC_KCORE=y, root (CAP_SYS_RAWIO) and no \
         kernel lockdown",
    )?;
    objects_of(&mut kcore, init_task, &layout, pid)
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::audit::addresses::unit::Recorded;
    use std::collections::HashMap;

    const LAYOUT: TaskLayout = TaskLayout {
        size: 0x2000,
        tasks: 0x500,
        pid: 0x600,
        stack: 0x20,
        cred: 0x800,
        thread_pid: 0x808,
        signal: 0x810,
        audit_context: Some((0x900, 0x3a0)),
        cred_size: 0xb8,
        pid_size: 0x60,
        signal_size: 0x400,
    };
    const INIT: u64 = 0xffff_ffff_8300_0000;

    /// init_task and two tasks on its list, pids 1 and 77 (77's objects recorded).
    fn memory(close: bool) -> Recorded {
        let (a, b) = (0xffff_8880_0100_0000u64, 0xffff_8880_0200_4000u64);
        let mut m = HashMap::new();
        m.insert(INIT + LAYOUT.tasks, a + LAYOUT.tasks);
        m.insert(a + LAYOUT.tasks, b + LAYOUT.tasks);
        let last = if close { INIT } else { a };
        m.insert(b + LAYOUT.tasks, last + LAYOUT.tasks);
        m.insert(a + LAYOUT.pid, 1);
        m.insert(b + LAYOUT.pid, 0xdead_0000_0000_0000 | 77);
        m.insert(b + LAYOUT.stack, 0xffff_c900_0040_0000);
        m.insert(b + LAYOUT.cred, 0xffff_8880_0300_00c0);
        m.insert(b + LAYOUT.thread_pid, 0xffff_8880_0300_0200);
        m.insert(b + LAYOUT.signal, 0xffff_8880_0600_0000);
        m.insert(b + 0x900, 0xffff_8880_0400_0400);
        Recorded(m)
    }

    #[test]
    fn a_task_is_found_by_pid_and_its_objects_named() {
        let objs = objects_of(&mut memory(true), INIT, &LAYOUT, 77).unwrap();
        let own = OwnObjects {
            objects: objs,
            unreadable: None,
        };
        let at = |a| own.owner_of(a);
        assert_eq!(at(0xffff_8880_0200_4000 + 0x1fff), Some(ObjectKind::Task));
        assert_eq!(at(0xffff_8880_0200_6000), None, "just past the task");
        assert_eq!(at(0xffff_c900_0040_3f40), Some(ObjectKind::KernelStack));
        assert_eq!(at(0xffff_8880_0300_0100), Some(ObjectKind::Cred));
        assert_eq!(at(0xffff_8880_0300_0240), Some(ObjectKind::Pid));
        assert_eq!(at(0xffff_8880_0600_03c0), Some(ObjectKind::Signal));
        assert_eq!(at(0xffff_8880_0400_0780), Some(ObjectKind::AuditContext));
        let e = objects_of(&mut memory(true), INIT, &LAYOUT, 5).unwrap_err();
        assert!(e.to_string().contains("no task of pid 5"), "{e}");
        let e = objects_of(&mut memory(false), INIT, &LAYOUT, 5).unwrap_err();
        assert!(e.to_string().contains("does not close"), "{e}");
    }

    /// This machine: the offsets come from its BTF, and reading says what it lacks.
    #[test]
    fn this_kernel_gives_the_layout_or_says_what_it_lacks() {
        if let Ok(btf) = Btf::load() {
            let l = TaskLayout::of(&btf).unwrap();
            assert!(
                l.size > l.tasks && l.size > l.pid && l.cred_size >= 100,
                "{l:?}"
            );
        }
        let own = OwnObjects::here(None);
        match own.unreadable {
            None => {
                assert_eq!(own.objects[0].kind, ObjectKind::Task);
                // Through a map read once, as a measurement's workers find theirs: the same.
                let map = ObjectMap::here().unwrap();
                let json = serde_json::to_string(&map).unwrap();
                let map: ObjectMap = serde_json::from_str(&json).unwrap();
                assert_eq!(OwnObjects::here(Some(&map)), own);
            }
            Some(e) => assert!(
                e.contains("kallsyms") || e.contains("kcore") || e.contains("BTF"),
                "{e}"
            ),
        }
    }
}
