//! Probe targets whose first instruction no compiler can change: written in assembly, in this
//! binary, with symbols of their own so the uprobe offset comes from the ELF file like any
//! other target's.

use super::elf;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// The instruction the probe sits on (the uprobe thread's nop, push and ret cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Insn {
    /// `nop; ret`: the probe sits on a nop.
    Nop,
    /// `push %rbp; pop %rbp; ret`: the probe sits on a push.
    Push,
    /// `ret`: the probe sits on the return itself.
    Ret,
}

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".text",
    ".globl syscost_probe_nop",
    ".type syscost_probe_nop, @function",
    ".p2align 4",
    "syscost_probe_nop:",
    "    nop",
    "    ret",
    ".size syscost_probe_nop, . - syscost_probe_nop",
    ".globl syscost_probe_push",
    ".type syscost_probe_push, @function",
    ".p2align 4",
    "syscost_probe_push:",
    "    push rbp",
    "    pop rbp",
    "    ret",
    ".size syscost_probe_push, . - syscost_probe_push",
    ".globl syscost_probe_ret",
    ".type syscost_probe_ret, @function",
    ".p2align 4",
    "syscost_probe_ret:",
    "    ret",
    ".size syscost_probe_ret, . - syscost_probe_ret",
);

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn syscost_probe_nop();
    fn syscost_probe_push();
    fn syscost_probe_ret();
}

impl Insn {
    /// The symbol of the target function.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Insn::Nop => "syscost_probe_nop",
            Insn::Push => "syscost_probe_push",
            Insn::Ret => "syscost_probe_ret",
        }
    }

    /// The first instruction's bytes, as assembled.
    pub fn first_bytes(self) -> &'static [u8] {
        match self {
            Insn::Nop => &[0x90],
            Insn::Push => &[0x55],
            Insn::Ret => &[0xc3],
        }
    }

    /// The function to call.
    pub(crate) fn function(self) -> unsafe extern "C" fn() {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Insn::Nop => syscost_probe_nop,
                Insn::Push => syscost_probe_push,
                Insn::Ret => syscost_probe_ret,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            compile_error!("the uprobe targets are written for x86-64")
        }
    }

    /// (path of this executable, file offset of the target).
    pub(crate) fn location(self) -> Result<(std::path::PathBuf, u64)> {
        let exe = std::env::current_exe()?;
        let off = elf::symbol_offset(&exe, self.symbol())?;
        Ok((exe, off))
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn targets_start_with_the_promised_instruction() {
        for insn in [Insn::Nop, Insn::Push, Insn::Ret] {
            let f = insn.function() as *const u8;
            // SAFETY: reading the first byte of our own function's code.
            let first = unsafe { f.read() };
            assert_eq!([first], insn.first_bytes(), "{insn:?}");
            unsafe { insn.function()() };
        }
    }

    #[test]
    fn the_file_offset_holds_the_same_instruction() {
        for insn in [Insn::Nop, Insn::Push, Insn::Ret] {
            let (exe, off) = insn.location().unwrap();
            let bytes = std::fs::read(&exe).unwrap();
            assert_eq!(
                &bytes[off as usize..off as usize + 1],
                insn.first_bytes(),
                "{insn:?}"
            );
        }
    }
}
