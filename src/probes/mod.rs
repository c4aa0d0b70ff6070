//! Uprobes through perf_event_open's `uprobe` PMU (the uprobe thread): the probe lives as long as its
//! file descriptor, so nothing is left in tracefs, and it vanishes with the process.
//!
//! - [`targets`]: functions whose first instruction is guaranteed (assembly);
//! - [`elf`]: the file offset of any ELF symbol, where a uprobe is placed;
//! - [`Uprobe`]: the perf event, counting hits, optionally with a minimal BPF program attached
//!   (how the 2024 uprobe thread's numbers were taken).
//!
//! perf-event2's own uprobe event type could not be opened as released (trial note in the
//! issue), so the event is a small type of our own; the BPF program (return 0, counting its
//! hits in a per-CPU array) is a dozen instructions loaded with a raw bpf(2): aya needs a newer
//! Rust, libbpf-rs needs libelf, neither worth it for so little.

pub mod elf;
pub(crate) mod targets;

use anyhow::{Context, Result};
use perf_event::Builder;
use perf_event_open_sys::bindings::perf_event_attr;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

const PMU: &str = "/sys/bus/event_source/devices/uprobe";

/// Entry probe or return probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeKind {
    /// No probe: the same loop, the baseline.
    None,
    /// A uprobe at the function's first instruction.
    Uprobe,
    /// A uretprobe: fires when the function returns.
    Uretprobe,
}

/// The uprobe PMU's type and the bit of `config` that makes a return probe.
pub(crate) fn pmu() -> Result<(u32, u32)> {
    let ty: u32 = std::fs::read_to_string(format!("{PMU}/type"))
        .map_err(|_| {
            anyhow::anyhow!(
                "this kernel has no uprobe PMU ({PMU} is missing): it needs CONFIG_UPROBE_EVENTS"
            )
        })?
        .trim()
        .parse()
        .context("malformed uprobe PMU type")?;
    let fmt = std::fs::read_to_string(format!("{PMU}/format/retprobe"))
        .context("the uprobe PMU has no retprobe format")?;
    let bit: u32 = fmt
        .trim()
        .strip_prefix("config:")
        .and_then(|b| b.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unexpected uprobe retprobe format '{}'", fmt.trim()))?;
    Ok((ty, bit))
}

/// A uprobe as a perf-event2 event: `config1` points at the path, `config2` is the offset.
struct UprobeAttr {
    ty: u32,
    config: u64,
    path: Arc<CString>,
    offset: u64,
}

impl perf_event::events::Event for UprobeAttr {
    fn update_attrs(self, attr: &mut perf_event_attr) {
        self.update_attrs_with_data(attr);
    }

    fn update_attrs_with_data(
        self,
        attr: &mut perf_event_attr,
    ) -> Option<Arc<dyn perf_event::events::EventData>> {
        attr.type_ = self.ty;
        attr.config = self.config;
        attr.__bindgen_anon_3.config1 = self.path.as_ptr() as u64;
        attr.__bindgen_anon_4.config2 = self.offset;
        // Keeps the path alive as long as the builder that points at it.
        Some(self.path)
    }
}

/// Who a probe watches.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope {
    /// The calling thread, and (inherited) the threads it starts afterwards.
    ThisProcess,
    /// Every process, on this CPU (system-wide: needs CAP_PERFMON or CAP_SYS_ADMIN).
    Cpu(usize),
}

/// An attached uprobe (or uretprobe), counting its hits.
pub(crate) struct Uprobe {
    counter: perf_event::Counter,
    /// The BPF program and its per-CPU hit counter map, with --bpf.
    bpf: Option<(OwnedFd, OwnedFd)>,
    /// The path `config1` points at. The kernel reads it again whenever the event is inherited
    /// (at every clone of a probed process), so it must live as long as the event.
    _path: Arc<CString>,
}

impl Uprobe {
    /// Place a probe at `offset` of the file `path`.
    pub(crate) fn attach(
        path: &Path,
        offset: u64,
        kind: ProbeKind,
        bpf: bool,
        scope: Scope,
    ) -> Result<Uprobe> {
        let (ty, bit) = pmu()?;
        let config = match kind {
            ProbeKind::Uretprobe => 1u64 << bit,
            _ => 0,
        };
        let cpath = Arc::new(
            CString::new(path.as_os_str().as_encoded_bytes())
                .context("the target path contains a NUL byte")?,
        );
        let mut b = Builder::new(UprobeAttr {
            ty,
            config,
            path: cpath.clone(),
            offset,
        });
        b.exclude_kernel(false);
        match scope {
            Scope::ThisProcess => {
                b.observe_self().any_cpu().inherit(true);
            }
            Scope::Cpu(c) => {
                b.any_pid().one_cpu(c);
            }
        }
        let mut counter = b.build().map_err(|e| explain(e, path, offset))?;
        let bpf = if bpf {
            let map = bpf::percpu_counter()?;
            let prog = bpf::load_counting_return_zero(&map)?;
            counter
                .set_bpf(prog.as_raw_fd())
                .context("cannot attach the BPF program to the uprobe (PERF_EVENT_IOC_SET_BPF)")?;
            Some((prog, map))
        } else {
            None
        };
        counter.enable().context("cannot enable the uprobe")?;
        Ok(Uprobe {
            counter,
            bpf,
            _path: cpath,
        })
    }

    /// Hits so far (for an inherited probe: those of finished threads too, once joined). With a
    /// BPF program attached the perf event does not count (the program returns 0, which tells
    /// the kernel to skip the event): the program's own per-CPU count is read instead.
    pub(crate) fn hits(&mut self) -> Result<u64> {
        match &self.bpf {
            Some((_, map)) => bpf::read_percpu_counter(map),
            None => self
                .counter
                .read()
                .context("cannot read the uprobe's count"),
        }
    }
}

fn explain(e: std::io::Error, path: &Path, offset: u64) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => anyhow::anyhow!(
            "perf_event_open refused the uprobe on {} ({e}): uprobes need CAP_PERFMON (or \
             CAP_SYS_ADMIN), or kernel.perf_event_paranoid <= 1 for a probe on one's own process",
            path.display()
        ),
        Some(libc::EINVAL) => anyhow::anyhow!(
            "the kernel refused a uprobe at offset {offset:#x} of {} ({e}): not an instruction \
             boundary, or an instruction it cannot probe",
            path.display()
        ),
        _ => anyhow::anyhow!("cannot place a uprobe on {}: {e}", path.display()),
    }
}

/// The BPF side, by raw bpf(2): a per-CPU counter map and the program.
pub(crate) mod bpf {
    use anyhow::{Result, bail};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    fn sys(cmd: libc::c_long, attr: &mut [u8; 128], what: &str) -> Result<i64> {
        // SAFETY: bpf(2) with a fully initialised attr that outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                attr.as_mut_ptr(),
                attr.len() as libc::c_uint,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) {
                bail!(
                    "{what} was refused ({e}): BPF needs CAP_BPF and CAP_PERFMON (or \
                     CAP_SYS_ADMIN), or kernel.unprivileged_bpf_disabled=0"
                );
            }
            bail!("{what} failed: {e}");
        }
        Ok(r as i64)
    }

    /// A BPF_MAP_TYPE_PERCPU_ARRAY of one u64.
    pub(crate) fn percpu_counter() -> Result<OwnedFd> {
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&6u32.to_ne_bytes()); // BPF_MAP_TYPE_PERCPU_ARRAY
        attr[4..8].copy_from_slice(&4u32.to_ne_bytes()); // key_size
        attr[8..12].copy_from_slice(&8u32.to_ne_bytes()); // value_size
        attr[12..16].copy_from_slice(&1u32.to_ne_bytes()); // max_entries
        let fd = sys(0, &mut attr, "creating the BPF counter map")?; // BPF_MAP_CREATE
        // SAFETY: a new file descriptor owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// The sum over CPUs of the counter.
    pub(crate) fn read_percpu_counter(map: &OwnedFd) -> Result<u64> {
        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|s| crate::core::CpuList::parse(s.trim()).ok())
            .and_then(|c| c.iter().max())
            .map(|m| m + 1)
            .unwrap_or(1024);
        let key = 0u32;
        let mut values = vec![0u64; possible];
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&(map.as_raw_fd() as u32).to_ne_bytes());
        attr[8..16].copy_from_slice(&(&key as *const u32 as u64).to_ne_bytes());
        attr[16..24].copy_from_slice(&(values.as_mut_ptr() as u64).to_ne_bytes());
        sys(1, &mut attr, "reading the BPF counter map")?; // BPF_MAP_LOOKUP_ELEM
        Ok(values.iter().sum())
    }

    fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
        let o = off.to_le_bytes();
        let i = imm.to_le_bytes();
        [code, (src << 4) | dst, o[0], o[1], i[0], i[1], i[2], i[3]]
    }

    /// A kprobe-type program (what uprobes run) that adds one to its CPU's slot of `map` and
    /// returns 0, like the 2024 uprobe thread's minimal program, plus the count that checks
    /// the hits.
    pub(crate) fn load_counting_return_zero(map: &OwnedFd) -> Result<OwnedFd> {
        let fd = map.as_raw_fd();
        let prog: Vec<[u8; 8]> = vec![
            insn(0xb7, 1, 0, 0, 0),   // r1 = 0
            insn(0x63, 10, 1, -4, 0), // *(u32 *)(r10 - 4) = r1
            insn(0xbf, 2, 10, 0, 0),  // r2 = r10
            insn(0x07, 2, 0, 0, -4),  // r2 += -4
            insn(0x18, 1, 1, 0, fd),  // r1 = map (ld_imm64, BPF_PSEUDO_MAP_FD)
            insn(0x00, 0, 0, 0, 0),   //   (second half of ld_imm64)
            insn(0x85, 0, 0, 0, 1),   // call bpf_map_lookup_elem
            insn(0x15, 0, 0, 3, 0),   // if r0 == 0 goto +3
            insn(0x79, 1, 0, 0, 0),   // r1 = *(u64 *)(r0 + 0)
            insn(0x07, 1, 0, 0, 1),   // r1 += 1
            insn(0x7b, 0, 1, 0, 0),   // *(u64 *)(r0 + 0) = r1
            insn(0xb7, 0, 0, 0, 0),   // r0 = 0
            insn(0x95, 0, 0, 0, 0),   // exit
        ];
        let code: Vec<u8> = prog.concat();
        let license = c"GPL";
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&2u32.to_ne_bytes()); // BPF_PROG_TYPE_KPROBE
        attr[4..8].copy_from_slice(&(prog.len() as u32).to_ne_bytes());
        attr[8..16].copy_from_slice(&(code.as_ptr() as u64).to_ne_bytes());
        attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_ne_bytes());
        attr[48..58].copy_from_slice(b"syscost_rz");
        let fd = sys(5, &mut attr, "loading the BPF program")?; // BPF_PROG_LOAD
        // SAFETY: a new file descriptor owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
}
