//! A call through the vDSO, the kernel's user-space fast path: `getcpu` or `clock_gettime`
//! answered without entering the kernel. Beside `syscall --syscall getcpu` (the same call
//! through the kernel) it shows what the syscall entry and exit themselves cost.
//!
//! The function is found in the vDSO image the kernel maps into every process (its address
//! from `getauxval(AT_SYSINFO_EHDR)`, its extent from /proc/self/maps, its symbols read with
//! `object`), not through libc, whose wrappers may answer from elsewhere (glibc's
//! `sched_getcpu` reads rseq's cpu_id).

use super::{Spec, Workload};
use anyhow::{Context, Result, bail};
use object::{Object, ObjectSegment, ObjectSymbol};
use serde::{Deserialize, Serialize};

/// The calls `--call` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    /// getcpu(&cpu, &node, NULL).
    Getcpu,
    /// clock_gettime(CLOCK_MONOTONIC, &ts).
    ClockGettime,
}

impl Call {
    fn symbol(self) -> &'static str {
        match self {
            Call::Getcpu => "__vdso_getcpu",
            Call::ClockGettime => "__vdso_clock_gettime",
        }
    }
}

/// Options of `syscost run vdso`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// The vDSO function to call.
    #[arg(long, value_enum, default_value_t = Call::Getcpu)]
    pub call: Call,
}

impl Spec for Params {
    const NAME: &'static str = "vdso";
    const OP_NAME: &'static str = "call";
    const ABOUT: &'static str = "A call through the vDSO (getcpu or clock_gettime), answered in \
        user space: beside `syscall --syscall getcpu` it shows the cost of entering the kernel";
    const EXAMPLES: &'static str = "Examples:
  syscost ab --variant 'vdso --call getcpu' --variant 'syscall --syscall getcpu' -- --cpu 1
      the same question answered in user space and in the kernel, interleaved
  syscost run vdso --call clock-gettime --cpu 1
      what reading the clock costs (the harness's own clock reads go through it too)";

    fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(Box::new(VdsoLoop {
            call: self.call,
            func: 0,
        }))
    }

    fn describe(&self) -> String {
        format!("vDSO {}", self.call.symbol().trim_start_matches("__vdso_"))
    }
}

/// The address of `symbol` in this process's vDSO.
fn vdso_symbol(symbol: &str) -> Result<usize> {
    // SAFETY: getauxval reads the auxiliary vector; 0 means there is no vDSO.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    if base == 0 {
        bail!("this process has no vDSO (AT_SYSINFO_EHDR is 0)");
    }
    let maps = std::fs::read_to_string("/proc/self/maps").context("cannot read /proc/self/maps")?;
    let end = maps
        .lines()
        .filter(|l| l.ends_with("[vdso]"))
        .find_map(|l| {
            let (range, _) = l.split_once(' ')?;
            let (lo, hi) = range.split_once('-')?;
            let lo = usize::from_str_radix(lo, 16).ok()?;
            (lo == base).then(|| usize::from_str_radix(hi, 16).ok())?
        })
        .ok_or_else(|| anyhow::anyhow!("the vDSO at {base:#x} is not in /proc/self/maps"))?;
    // SAFETY: the kernel maps the whole vDSO image readable at [base, end) for the life of
    // the process.
    let image = unsafe { std::slice::from_raw_parts(base as *const u8, end - base) };
    let file = object::File::parse(image).context("cannot parse the vDSO image")?;
    let load = file.segments().map(|s| s.address()).min().unwrap_or(0);
    let sym = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(symbol))
        .ok_or_else(|| anyhow::anyhow!("this kernel's vDSO has no {symbol}"))?;
    Ok(base + (sym.address() - load) as usize)
}

pub(crate) struct VdsoLoop {
    call: Call,
    /// The function's address, found in `setup`.
    func: usize,
}

type GetcpuFn = unsafe extern "C" fn(*mut u32, *mut u32, *mut libc::c_void) -> libc::c_int;
type ClockGettimeFn = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;

impl VdsoLoop {
    /// One call; its return value (0 on success).
    fn once(&self) -> libc::c_int {
        // SAFETY: `func` is the vDSO's own function of this signature (found by its symbol);
        // the pointers are to locals that outlive the call.
        unsafe {
            match self.call {
                Call::Getcpu => {
                    let f: GetcpuFn = std::mem::transmute(self.func);
                    let (mut cpu, mut node) = (0u32, 0u32);
                    f(&mut cpu, &mut node, std::ptr::null_mut())
                }
                Call::ClockGettime => {
                    let f: ClockGettimeFn = std::mem::transmute(self.func);
                    let mut ts = std::mem::zeroed();
                    f(libc::CLOCK_MONOTONIC, &mut ts)
                }
            }
        }
    }
}

impl Workload for VdsoLoop {
    fn setup(&mut self) -> Result<()> {
        self.func = vdso_symbol(self.call.symbol())?;
        if self.once() != 0 {
            bail!("{} failed before measuring", self.call.symbol());
        }
        Ok(())
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        for _ in 0..ops {
            std::hint::black_box(self.once());
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_vdso_answers_like_the_kernel() {
        let mut w = VdsoLoop {
            call: Call::Getcpu,
            func: 0,
        };
        w.setup().unwrap();
        let f: GetcpuFn = unsafe { std::mem::transmute(w.func) };
        let (mut cpu, mut node) = (u32::MAX, u32::MAX);
        assert_eq!(unsafe { f(&mut cpu, &mut node, std::ptr::null_mut()) }, 0);
        let allowed = crate::core::cpus::allowed_cpus().unwrap();
        assert!(allowed.iter().any(|c| c == cpu as usize), "cpu {cpu}");
        assert!(vdso_symbol("__vdso_no_such_function").is_err());
        let mut c = VdsoLoop {
            call: Call::ClockGettime,
            func: 0,
        };
        c.setup().unwrap();
        c.run_batch(1000).unwrap();
    }
}
