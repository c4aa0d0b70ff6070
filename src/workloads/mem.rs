//! Memory-management paths, as lmbench's lat_pagefault and lat_mmap time them: a page fault on
//! a fresh anonymous page or on a page-cache page of a file, mmap+munmap of a region, and brk
//! up and down. For the faults, the mapping is made before the batch and removed after it,
//! outside the timed region (`Workload::before_batch`), so one operation is one fault.

use super::scratch::ScratchFile;
use super::{Spec, Workload};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

const PAGE: usize = 4096;
/// The file fault-file maps, read into the page cache at setup.
const FILE_BYTES: usize = 64 << 20;

/// What one operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum MemOp {
    /// A write fault on a fresh private anonymous page: allocate, zero and map it.
    FaultAnon,
    /// A read of one page of a file already in the page cache, through a fresh shared mapping
    /// (lat_pagefault: every page touched once). The kernel maps more than one page per fault
    /// (fault-around, large folios), so an operation is a page mapped, and the page-faults
    /// counter per op says how many faults it took.
    FaultFile,
    /// mmap(2) of --size bytes of anonymous memory and munmap(2) of it, untouched (lat_mmap
    /// without the touch).
    Mmap,
    /// brk(2) up by --size bytes and back down: two calls.
    Brk,
}

impl MemOp {
    fn name(self) -> &'static str {
        match self {
            MemOp::FaultAnon => "anonymous page fault",
            MemOp::FaultFile => "file page fault",
            MemOp::Mmap => "mmap+munmap",
            MemOp::Brk => "brk up+down",
        }
    }
}

/// Options of `syscost run mem`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
pub struct Params {
    /// What one operation is.
    #[arg(long, value_enum, default_value_t = MemOp::FaultAnon)]
    pub op: MemOp,
    /// `--op mmap` and `brk`: bytes per operation (a multiple of 4096).
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    #[serde(default)]
    pub size: u64,
    /// `--op fault-file`: directory of the file (its file system is measured) [default:
    /// $TMPDIR or /tmp].
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

impl Spec for Params {
    const NAME: &'static str = "mem";
    const OP_NAME: &'static str = "op";
    const ABOUT: &'static str = "Memory-management paths as lmbench's lat_pagefault and lat_mmap \
        time them: anonymous and file page faults, mmap+munmap, brk";
    const EXAMPLES: &'static str = "Examples:
  syscost run mem --op fault-anon --cpu 1
      one write fault on a fresh anonymous page per op (page-faults per op: 1)
  syscost run mem --op fault-file --dir /dev/shm --cpu 1
      one read fault on a page-cache page of a tmpfs file
  syscost run mem --op mmap --size 1048576
      mmap+munmap of 1 MiB, untouched";

    fn build(&self) -> Result<Box<dyn Workload>> {
        if self.size == 0 || !(self.size as usize).is_multiple_of(PAGE) || self.size > 1 << 40 {
            bail!(
                "--size {}: a multiple of {PAGE} bytes, at most 1 TiB",
                self.size
            );
        }
        Ok(Box::new(Mem {
            op: self.op,
            size: self.size as usize,
            dir: self.dir.clone(),
            file: None,
            maps: Vec::new(),
        }))
    }

    fn not_as_threads(&self) -> Option<&'static str> {
        (self.op == MemOp::Brk).then_some("a process has one break")
    }

    /// Page faults are not system calls: the fault operations make none.
    fn syscalls(&self) -> Vec<u32> {
        let nrs: &[libc::c_long] = match self.op {
            MemOp::FaultAnon | MemOp::FaultFile => &[],
            MemOp::Mmap => &[libc::SYS_mmap, libc::SYS_munmap],
            MemOp::Brk => &[libc::SYS_brk],
        };
        nrs.iter().map(|&n| n as u32).collect()
    }

    fn describe(&self) -> String {
        match self.op {
            MemOp::Mmap | MemOp::Brk => format!("mem {} of {} bytes", self.op.name(), self.size),
            op => format!("mem {}", op.name()),
        }
    }
}

pub(crate) struct Mem {
    op: MemOp,
    size: usize,
    dir: Option<PathBuf>,
    file: Option<(ScratchFile, std::fs::File)>,
    /// The mappings the next batch faults in: (address, length).
    maps: Vec<(*mut u8, usize)>,
}

fn errno(what: &str) -> anyhow::Error {
    anyhow::anyhow!("mem: {what} failed: {}", std::io::Error::last_os_error())
}

impl Mem {
    fn unmap_all(&mut self) {
        for (addr, len) in self.maps.drain(..) {
            // SAFETY: unmapping what before_batch mapped.
            unsafe { libc::munmap(addr as *mut libc::c_void, len) };
        }
    }
}

impl Workload for Mem {
    fn setup(&mut self) -> Result<()> {
        if self.op == MemOp::FaultFile {
            let f = ScratchFile::create("mem", self.dir.as_deref(), 0)?;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&f.path)?;
            // Real data (not a hole), read back so every page is in the page cache.
            let chunk = vec![1u8; 1 << 20];
            use std::io::{Read, Write};
            let mut w = &file;
            for _ in 0..FILE_BYTES / chunk.len() {
                w.write_all(&chunk).map_err(|e| {
                    anyhow::anyhow!("mem: writing {}: {e}", f.path.display())
                })?;
            }
            let mut r = std::fs::File::open(&f.path)?;
            let mut sink = vec![0u8; 1 << 20];
            while r.read(&mut sink)? > 0 {}
            self.file = Some((f, file));
        }
        self.before_batch(1)?;
        let r = self.run_batch(1);
        self.after_batch()?;
        r
    }

    fn before_batch(&mut self, ops: u64) -> Result<()> {
        let need = ops as usize * PAGE;
        match self.op {
            MemOp::FaultAnon => {
                // SAFETY: a fresh private anonymous mapping, unmapped in after_batch.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        need,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                        -1,
                        0,
                    )
                };
                if p == libc::MAP_FAILED {
                    return Err(errno(&format!("mmap of {need} bytes for the faults")));
                }
                // No huge page: one fault per 4 KiB page.
                unsafe { libc::madvise(p, need, libc::MADV_NOHUGEPAGE) };
                self.maps.push((p as *mut u8, need));
            }
            MemOp::FaultFile => {
                let fd = self.file.as_ref().expect("setup made it").1.as_raw_fd();
                let mut left = need;
                while left > 0 {
                    let len = left.min(FILE_BYTES);
                    // SAFETY: a shared read-only mapping of our file, unmapped in after_batch.
                    let p = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            len,
                            libc::PROT_READ,
                            libc::MAP_SHARED,
                            fd,
                            0,
                        )
                    };
                    if p == libc::MAP_FAILED {
                        return Err(errno("mmap of the file for the faults"));
                    }
                    self.maps.push((p as *mut u8, len));
                    left -= len;
                }
            }
            MemOp::Mmap | MemOp::Brk => {}
        }
        Ok(())
    }

    fn run_batch(&mut self, ops: u64) -> Result<()> {
        match self.op {
            MemOp::FaultAnon | MemOp::FaultFile => {
                let mut done = 0u64;
                let mut sum = 0u8;
                for &(addr, len) in &self.maps {
                    let mut off = 0;
                    while off < len && done < ops {
                        // SAFETY: inside a mapping before_batch made.
                        unsafe {
                            if self.op == MemOp::FaultAnon {
                                addr.add(off).write_volatile(1);
                            } else {
                                sum = sum.wrapping_add(addr.add(off).read_volatile());
                            }
                        }
                        off += PAGE;
                        done += 1;
                    }
                }
                std::hint::black_box(sum);
                if done != ops {
                    bail!("mem: {done} pages mapped for {ops} faults");
                }
            }
            MemOp::Mmap => {
                for _ in 0..ops {
                    // SAFETY: map and unmap a private anonymous region, untouched.
                    unsafe {
                        let p = libc::mmap(
                            std::ptr::null_mut(),
                            self.size,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                            -1,
                            0,
                        );
                        if p == libc::MAP_FAILED {
                            return Err(errno(&format!("mmap of {} bytes", self.size)));
                        }
                        if libc::munmap(p, self.size) != 0 {
                            return Err(errno("munmap"));
                        }
                    }
                }
            }
            MemOp::Brk => {
                let inc = self.size as libc::intptr_t;
                for _ in 0..ops {
                    // SAFETY: moving the break up and back to where it was. glibc's malloc also
                    // grows its main arena with brk, but nothing allocates on this thread
                    // between the two calls, and the worker measures on one thread.
                    unsafe {
                        if libc::sbrk(inc) as isize == -1 {
                            return Err(errno(&format!("brk up by {} bytes", self.size)));
                        }
                        if libc::sbrk(-inc) as isize == -1 {
                            return Err(errno("brk back down"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn after_batch(&mut self) -> Result<()> {
        self.unmap_all();
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        match (&self.file, self.op) {
            (Some((f, _)), MemOp::FaultFile) => vec![format!(
                "file {} on {}, in the page cache; every page read once through a fresh \
                 mapping (page-faults per op: faults per page)",
                f.path.display(),
                super::vfs_mix::fs_type(f.path.parent().unwrap_or(&f.path)),
            )],
            _ => Vec::new(),
        }
    }

    fn teardown(&mut self) -> Result<()> {
        self.unmap_all();
        self.file = None;
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn minor_faults() -> i64 {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        u.ru_minflt
    }

    #[test]
    fn one_fault_per_op_and_nothing_left() {
        let dir = tempfile::tempdir().unwrap();
        for op in [MemOp::FaultAnon, MemOp::FaultFile] {
            let mut w = Params {
                op,
                size: 4096,
                dir: Some(dir.path().to_path_buf()),
            }
            .build()
            .unwrap();
            w.setup().unwrap();
            w.before_batch(1000).unwrap();
            let before = minor_faults();
            w.run_batch(1000).unwrap();
            let faults = minor_faults() - before;
            w.after_batch().unwrap();
            w.teardown().unwrap();
            if op == MemOp::FaultAnon {
                assert!(
                    (950..=1100).contains(&faults),
                    "{op:?}: {faults} faults for 1000 ops"
                );
            } else {
                // Fault-around and large folios map several pages per fault.
                assert!((1..=1100).contains(&faults), "{op:?}: {faults} faults");
            }
        }
        for op in [MemOp::Mmap, MemOp::Brk] {
            let mut w = Params {
                op,
                size: 1 << 16,
                dir: None,
            }
            .build()
            .unwrap();
            w.setup().unwrap();
            w.run_batch(100).unwrap();
            w.teardown().unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let bad = Params {
            op: MemOp::Mmap,
            size: 100,
            dir: None,
        };
        assert!(bad.build().is_err());
    }
}
