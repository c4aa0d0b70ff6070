//! A vmlinux without the zero pages in its file.
//!
//! A distribution kernel's vmlinux holds its memory image whole: Debian's 6.12 is 57.6 MB,
//! of which 19.6 MB are pages of zeros (the .bss, the .brk, the early page tables' scratch,
//! padding between segments). A LAVA job copies and hashes every byte it fetches, and the
//! host writes and hashes it first. Described instead as memory beyond a segment's file size,
//! as a .bss is, the same image takes 38 MB. QEMU's loader reads program headers only and
//! zero-fills each segment from its file size to its memory size, so the guest's memory is
//! the same byte for byte.
//!
//! Written here: `object` (already a dependency) reads ELF but builds a new one only with its
//! `write` feature, a larger writer than these sixty lines need.

use object::Endianness;
use object::elf::{FileHeader64, PT_LOAD, ProgramHeader64};
use object::read::elf::{FileHeader, ProgramHeader};

const PAGE: u64 = 4096;
/// A shorter run of zero pages stays in the file: each run left out costs a program header.
const MIN_RUN: u64 = 64 << 10;

/// A piece of a loaded segment: its bytes at `from` in the old file, `len` of them, then
/// zeros to `mem` bytes of memory.
struct Piece {
    header: ProgramHeader64<Endianness>,
    from: u64,
    len: u64,
}

/// `elf` with each loaded segment split where a run of zero pages of at least `MIN_RUN`
/// begins: a piece's file size ends there, its memory size reaches the next piece's start.
/// Other program headers keep pointing at their bytes; section headers are left out.
pub(crate) fn without_zero_pages(elf: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |e: object::read::Error| e.to_string();
    let header = FileHeader64::<Endianness>::parse(elf).map_err(bad)?;
    let e = header.endian().map_err(bad)?;
    let mut pieces = Vec::new();
    let mut others = Vec::new();
    for ph in header.program_headers(e, elf).map_err(bad)? {
        match ph.p_type(e) == PT_LOAD {
            true => pieces.extend(split(ph, e, elf)?),
            false => others.push(*ph),
        }
    }
    let count = pieces.len() + others.len();
    let phdrs = std::mem::size_of::<FileHeader64<Endianness>>() as u64;
    let mut at = phdrs + (count * std::mem::size_of::<ProgramHeader64<Endianness>>()) as u64;
    for p in &mut pieces {
        // A loaded piece's offset keeps its address's place in a page.
        at = at.next_multiple_of(PAGE) + p.header.p_vaddr.get(e) % PAGE;
        p.header.p_offset.set(e, at);
        at += p.len;
    }
    for o in &mut others {
        let (from, len) = (o.p_offset.get(e), o.p_filesz.get(e));
        if len == 0 {
            o.p_offset.set(e, 0);
            continue;
        }
        let inside = (pieces.iter()).find(|p| p.from <= from && from + len <= p.from + p.len);
        let Some(p) = inside else {
            return Err(format!(
                "a segment of type {} lies outside the loaded data",
                o.p_type(e)
            ));
        };
        o.p_offset
            .set(e, p.header.p_offset.get(e) + (from - p.from));
    }
    let mut h = *header;
    h.e_phoff.set(e, phdrs);
    h.e_phnum.set(e, count as u16);
    h.e_shoff.set(e, 0);
    h.e_shnum.set(e, 0);
    h.e_shstrndx.set(e, object::elf::SHN_UNDEF);
    let mut out = object::pod::bytes_of(&h).to_vec();
    for p in &pieces {
        out.extend_from_slice(object::pod::bytes_of(&p.header));
    }
    out.extend(
        others
            .iter()
            .flat_map(|o| object::pod::bytes_of(o).to_vec()),
    );
    for p in &pieces {
        out.resize(p.header.p_offset.get(e) as usize, 0);
        out.extend_from_slice(&elf[p.from as usize..(p.from + p.len) as usize]);
    }
    Ok(out)
}

/// One loaded segment as pieces, each starting after a long run of zero pages.
fn split(
    ph: &ProgramHeader64<Endianness>,
    e: Endianness,
    elf: &[u8],
) -> Result<Vec<Piece>, String> {
    let data = ph
        .data(e, elf)
        .map_err(|()| "a segment lies outside the file".to_string())?;
    let (size, mem) = (data.len() as u64, ph.p_memsz.get(e));
    let zero = |p: u64| {
        let page = &data[(p * PAGE) as usize..((p + 1) * PAGE).min(size) as usize];
        page.iter().all(|&b| b == 0)
    };
    let pages = size.div_ceil(PAGE);
    // Each piece: where it starts, and where its bytes end (a long zero run, or the data's end).
    let mut cuts: Vec<(u64, u64)> = Vec::new();
    let (mut start, mut p) = (0, 0);
    while p < pages {
        let run = (p..pages).take_while(|&q| zero(q)).count() as u64;
        if run > 0 && (run * PAGE >= MIN_RUN || p + run == pages) {
            cuts.push((start, p * PAGE));
            start = (p + run) * PAGE;
        }
        p += run.max(1);
    }
    if start < size || cuts.is_empty() {
        cuts.push((start, size));
    }
    let ends = (cuts.iter().skip(1).map(|c| c.0)).chain([mem.max(size)]);
    let pieces = cuts.iter().zip(ends).map(|(&(from, to), next)| {
        let mut h = *ph;
        for (field, base) in [
            (&mut h.p_vaddr, ph.p_vaddr.get(e)),
            (&mut h.p_paddr, ph.p_paddr.get(e)),
        ] {
            field.set(e, base + from);
        }
        h.p_filesz.set(e, to - from);
        h.p_memsz.set(e, next - from);
        h.p_align.set(e, PAGE);
        Piece {
            header: h,
            from: ph.p_offset.get(e) + from,
            len: to - from,
        }
    });
    Ok(pieces.collect())
}

#[cfg(test)]
mod unit {
    use super::*;
    use object::elf::{ELFCLASS64, ELFDATA2LSB, EM_X86_64, ET_EXEC, PT_NOTE};
    use std::collections::BTreeMap;

    fn zeroed<T: object::pod::Pod + Copy>() -> T {
        *object::pod::from_bytes::<T>(&vec![0; std::mem::size_of::<T>()])
            .unwrap()
            .0
    }

    /// An ELF64 of the given segments (type, physical address, file bytes, memory size),
    /// each at a file offset of its own page.
    fn elf(segments: &[(object::elf::ProgramType, u64, Vec<u8>, u64)]) -> Vec<u8> {
        let e = Endianness::Little;
        let mut h: FileHeader64<Endianness> = zeroed();
        h.e_ident.magic = object::elf::ELFMAG;
        (h.e_ident.class, h.e_ident.data) = (ELFCLASS64, ELFDATA2LSB);
        h.e_ident.version = object::elf::EV_CURRENT;
        h.e_type.set(e, ET_EXEC);
        h.e_machine.set(e, EM_X86_64);
        h.e_phoff.set(e, 64);
        h.e_phentsize.set(e, 56);
        h.e_ehsize.set(e, 64);
        h.e_phnum.set(e, segments.len() as u16);
        let mut out = object::pod::bytes_of(&h).to_vec();
        let mut at = PAGE;
        let mut body = Vec::new();
        for (kind, addr, bytes, mem) in segments {
            let mut ph: ProgramHeader64<Endianness> = zeroed();
            ph.p_type.set(e, *kind);
            ph.p_offset.set(e, at);
            (ph.p_vaddr, ph.p_paddr) = (object::U64::new(e, *addr), object::U64::new(e, *addr));
            ph.p_filesz.set(e, bytes.len() as u64);
            ph.p_memsz.set(e, *mem);
            out.extend_from_slice(object::pod::bytes_of(&ph));
            body.push((at, bytes));
            at = (at + bytes.len() as u64).next_multiple_of(PAGE);
        }
        for (at, bytes) in body {
            out.resize(at as usize, 0);
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Memory as a loader leaves it: each loaded segment's bytes at its physical address, then
    /// zeros to its memory size; the bytes of every note.
    fn loaded(elf: &[u8]) -> (BTreeMap<u64, u8>, Vec<Vec<u8>>) {
        let h = FileHeader64::<Endianness>::parse(elf).unwrap();
        let e = h.endian().unwrap();
        let (mut memory, mut notes) = (BTreeMap::new(), Vec::new());
        for ph in h.program_headers(e, elf).unwrap() {
            let data = ph.data(e, elf).unwrap();
            if ph.p_type(e) == PT_NOTE {
                notes.push(data.to_vec());
                continue;
            }
            for i in 0..ph.p_memsz.get(e) {
                let byte = data.get(i as usize).copied().unwrap_or(0);
                assert!(
                    memory.insert(ph.p_paddr.get(e) + i, byte).is_none(),
                    "overlap"
                );
            }
        }
        (memory, notes)
    }

    #[test]
    fn zero_runs_leave_the_file_and_the_loaded_memory_is_the_same() {
        let page = |b: u8| vec![b; PAGE as usize];
        // Text, 20 zero pages (80 KiB: left out), data, 2 zero pages (kept), data, zeros.
        let mut text = [page(0x90), vec![0; 20 * PAGE as usize], page(1)].concat();
        text.extend([page(0), page(0), page(2), page(0)].concat());
        let note_at = 100;
        text[note_at..note_at + 8].copy_from_slice(b"Xen\0note");
        let all_zero = vec![0; 3 * PAGE as usize];
        let mut before = elf(&[
            (
                PT_LOAD,
                0x100_0000,
                text.clone(),
                text.len() as u64 + 5 * PAGE,
            ),
            (PT_LOAD, 0x200_0000, all_zero, 4 * PAGE),
            (PT_NOTE, 0x100_0000 + note_at as u64, Vec::new(), 8),
        ]);
        // The note's bytes are the text's, as a kernel's .notes are.
        let e = Endianness::Little;
        let (note, _) =
            object::pod::slice_from_bytes_mut::<ProgramHeader64<Endianness>>(&mut before[64..], 3)
                .unwrap();
        note[2].p_offset.set(e, PAGE + note_at as u64);
        note[2].p_filesz.set(e, 8);
        let after = without_zero_pages(&before).unwrap();
        assert_eq!(loaded(&after), loaded(&before));
        assert!(
            after.len() < before.len() - 20 * PAGE as usize,
            "{} bytes",
            after.len()
        );
        let h = FileHeader64::<Endianness>::parse(&*after).unwrap();
        // The text's two pieces, the all-zero segment's one, the note.
        assert_eq!(h.e_phnum.get(Endianness::Little), 4);
        assert_eq!(h.e_shnum.get(Endianness::Little), 0);
    }

    #[test]
    fn a_note_outside_the_loaded_data_is_refused() {
        let before = elf(&[(PT_NOTE, 0, b"Xen\0note".to_vec(), 8)]);
        assert_eq!(loaded(&before).1, [b"Xen\0note".to_vec()]);
        assert!(without_zero_pages(&before).is_err());
    }
}
