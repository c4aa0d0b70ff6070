//! An x86 kernel image as the boot protocol describes it (Documentation/arch/x86/boot.rst):
//! its setup header (the protocol version, the longest command line the kernel keeps, where
//! the compressed kernel lies), and the uncompressed kernel (vmlinux) taken out of it on the
//! host, so that QEMU can start it at its PVH entry.
//!
//! Why: under TCG the bzImage's own decompressor runs emulated before the kernel's clock
//! starts. Debian's generic 6.1 image (xz with the x86 branch filter) spent 3.1-3.5 s of each
//! boot there; its vmlinux started at the PVH entry spends about 0.2 s outside the guest's
//! clock. The host decompresses it once per campaign, with the crates below, in well under a
//! second. A kernel built without CONFIG_PVH, or compressed in a format syscost does not read
//! (bzip2, lzma, lzo), boots as a bzImage, as before, and the campaign says why.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::Path;

/// The header's fields a campaign uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The boot protocol version, e.g. 0x020f.
    pub version: u16,
    /// The longest command line the kernel keeps, without its terminating NUL (protocol 2.06
    /// and later; 255 before).
    pub cmdline_size: u32,
    /// The compressed kernel: its offset in the file and its length (protocol 2.08 and later).
    payload: Option<(usize, usize)>,
}

/// The setup header's offsets (boot.rst, "THE REAL-MODE KERNEL HEADER").
const SETUP_SECTS: usize = 0x1f1;
const MAGIC: usize = 0x202;
const VERSION: usize = 0x206;
const CMDLINE_SIZE: usize = 0x238;
const PAYLOAD_OFFSET: usize = 0x248;
const PAYLOAD_LENGTH: usize = 0x24c;
/// Where the kernel_version string is, less 0x200 (protocol 2.00 and later).
const KERNEL_VERSION: usize = 0x20e;

/// An uncompressed kernel larger than this is not taken out (a corrupt size field).
const VMLINUX_MAX: usize = 1 << 30;

/// XEN_ELFNOTE_PHYS32_ENTRY: the note of a kernel that QEMU can start at its PVH entry.
const PVH_NOTE: u32 = 18;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

impl Header {
    /// The header of the bzImage bytes `b`, or why they are not one.
    pub(crate) fn parse(b: &[u8]) -> Option<Header> {
        if b.get(MAGIC..MAGIC + 4)? != b"HdrS" {
            return None;
        }
        let version = u16_at(b, VERSION)?;
        let cmdline_size = match version {
            v if v >= 0x0206 => u32_at(b, CMDLINE_SIZE)?,
            _ => 255,
        };
        let payload = (version >= 0x0208).then(|| {
            let sects = match b[SETUP_SECTS] {
                0 => 4,
                n => n as usize,
            };
            let at = (sects + 1) * 512 + u32_at(b, PAYLOAD_OFFSET)? as usize;
            Some((at, u32_at(b, PAYLOAD_LENGTH)? as usize))
        });
        Some(Header {
            version,
            cmdline_size,
            payload: payload.flatten(),
        })
    }

    /// The header of the kernel image at `path`; refuses a file that is not a bzImage, and one
    /// cut short of the compressed kernel its header places (a partial copy boots and fails).
    pub(crate) fn read(path: &Path) -> Result<Header> {
        let mut head = Vec::with_capacity(0x270);
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot open the kernel {}", path.display()))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        file.take(0x270)
            .read_to_end(&mut head)
            .with_context(|| format!("cannot read the kernel {}", path.display()))?;
        let header = Header::parse(&head).with_context(|| {
            format!(
                "{} is not a kernel image (no bzImage \"HdrS\" header at 0x202): give a \
                 build's arch/x86/boot/bzImage or a /boot/vmlinuz-VERSION",
                path.display()
            )
        })?;
        if let Some((at, n)) = header.payload
            && (at as u64).saturating_add(n as u64) > len
        {
            bail!(
                "{} is cut short: its header puts the compressed kernel at bytes {at} to {} but \
                 the file has {len} (a partial copy or download?): copy it again",
                path.display(),
                at + n
            );
        }
        Ok(header)
    }
}

/// The release the bzImage at `path` says it is (the string its header's kernel_version
/// points to), when it says.
pub(crate) fn release(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Header::parse(&bytes).filter(|h| h.version >= 0x0200)?;
    let at = u16_at(&bytes, KERNEL_VERSION)? as usize + 0x200;
    let text = bytes.get(at..(at + 256).min(bytes.len()))?;
    let end = text.iter().position(|&b| b == 0 || b == b' ')?;
    String::from_utf8(text[..end].to_vec()).ok()
}

/// How a campaign starts a kernel.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Entry {
    /// Its vmlinux, taken out to this file, at the PVH entry.
    Pvh(std::path::PathBuf),
    /// The bzImage itself, and why not its vmlinux.
    BzImage(String),
}

/// Take the vmlinux out of the bzImage at `path` into `out` when QEMU can start it at its PVH
/// entry; otherwise say why the bzImage boots instead.
pub(crate) fn vmlinux_entry(path: &Path, out: &Path) -> Result<Entry> {
    let image = std::fs::read(path)
        .with_context(|| format!("cannot read the kernel {}", path.display()))?;
    let vmlinux = match vmlinux(&image) {
        Ok(v) => v,
        Err(why) => return Ok(Entry::BzImage(why)),
    };
    if !has_pvh_entry(&vmlinux) {
        return Ok(Entry::BzImage(
            "the kernel has no PVH entry (built without CONFIG_PVH)".into(),
        ));
    }
    // The same memory without its zero pages in the file: Debian's 6.12 is 38 MB, not 57.6.
    let vmlinux = super::sparse_elf::without_zero_pages(&vmlinux).unwrap_or(vmlinux);
    std::fs::write(out, &vmlinux)
        .with_context(|| format!("cannot write the kernel's vmlinux to {}", out.display()))?;
    Ok(Entry::Pvh(out.to_path_buf()))
}

/// The uncompressed kernel inside bzImage bytes, or why it cannot be had.
fn vmlinux(image: &[u8]) -> Result<Vec<u8>, String> {
    let h = Header::parse(image).ok_or("not a bzImage")?;
    let (at, len) = h.payload.ok_or_else(|| {
        format!(
            "boot protocol {:#06x} does not locate the kernel",
            h.version
        )
    })?;
    let payload = image
        .get(at..at + len)
        .filter(|p| p.len() > 8)
        .ok_or("the header's payload lies outside the file")?;
    // The build appends the uncompressed size (scripts/Makefile.lib, size_append).
    let (stream, size) = payload.split_at(payload.len() - 4);
    let size = u32::from_le_bytes(size.try_into().expect("4 bytes")) as usize;
    if size > VMLINUX_MAX {
        return Err(format!("the kernel claims {size} bytes uncompressed"));
    }
    let out = decompress(stream, size).map_err(|e| format!("cannot decompress the kernel: {e}"))?;
    if out.len() != size {
        return Err(format!(
            "the kernel decompressed to {} bytes, its image says {size}",
            out.len()
        ));
    }
    Ok(out)
}

/// Decompress by the stream's magic: the formats distributions build kernels with.
fn decompress(s: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(size);
    let limit = size as u64 + 1;
    let read = |r: &mut dyn Read, out: &mut Vec<u8>| {
        r.take(limit)
            .read_to_end(out)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    match s {
        [0x1f, 0x8b, ..] => read(&mut flate2::read::GzDecoder::new(s), &mut out)?,
        [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => {
            read(&mut lzma_rust2::XzReader::new(s, true), &mut out)?
        }
        [0x28, 0xb5, 0x2f, 0xfd, ..] => {
            let mut d = ruzstd::decoding::StreamingDecoder::new(s).map_err(|e| e.to_string())?;
            read(&mut d, &mut out)?
        }
        [0x02, 0x21, 0x4c, 0x18, ..] => out = lz4_legacy(s, size)?,
        [b'B', b'Z', b'h', ..] => return Err("it is compressed with bzip2".into()),
        [0x89, b'L', b'Z', b'O', ..] => return Err("it is compressed with lzo".into()),
        _ => return Err("its compression is not gzip, xz, zstd or lz4".into()),
    }
    Ok(out)
}

/// LZ4's legacy frame, as the kernel's build writes it (`lz4 -l`): the magic, then blocks of
/// at most 8 MiB each behind their compressed length. Written here: lz4_flex reads LZ4's
/// current frame format and raw blocks, not this framing around them.
fn lz4_legacy(s: &[u8], size: usize) -> Result<Vec<u8>, String> {
    const MAGIC: u32 = 0x184c_2102;
    const BLOCK: usize = 8 << 20;
    let mut out = vec![0u8; size];
    let (mut at, mut filled) = (0, 0);
    while at + 4 <= s.len() && filled < size {
        let n = u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"));
        at += 4;
        if n == MAGIC {
            continue;
        }
        let block = s
            .get(at..at + n as usize)
            .ok_or("an lz4 block runs past the end")?;
        let room = &mut out[filled..(filled + BLOCK).min(size)];
        filled += lz4_flex::block::decompress_into(block, room).map_err(|e| e.to_string())?;
        at += n as usize;
    }
    out.truncate(filled);
    Ok(out)
}

/// A kernel's sections in size(1)'s Berkeley totals: what the 2015 alignment RFC printed per
/// build, and what a function alignment changes (its text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Sizes {
    /// Allocated sections that are code or read-only.
    pub text: u64,
    /// Allocated, writable sections with contents.
    pub data: u64,
    /// Allocated, writable sections without (NOBITS).
    pub bss: u64,
    /// Of the text, the linker's padding: runs of int3 (0xcc) of 4 KiB or more in code. Since
    /// page-table isolation (4.15) an x86-64 kernel's entry code starts and ends on a 2 MiB
    /// boundary inside .text, so size(1)'s text moves in 2 MiB steps: the 16- and 64-byte
    /// builds of linux-source-6.1 print the same text. No function pads itself by that much.
    pub padding: u64,
}

impl Sizes {
    /// size(1)'s `dec`: the three added.
    pub(crate) fn total(&self) -> u64 {
        self.text + self.data + self.bss
    }

    /// The text without the linker's padding: what the functions and their alignment take.
    pub(crate) fn code(&self) -> u64 {
        self.text - self.padding
    }
}

/// Runs of int3 of at least this many bytes are the linker's padding, not a function's.
const PADDING_RUN: usize = 4096;

/// The bytes of `code` in runs of int3 (0xcc) of [`PADDING_RUN`] or more.
fn int3_padding(code: &[u8]) -> u64 {
    code.split(|&b| b != 0xcc)
        .map(<[u8]>::len)
        .filter(|&n| n >= PADDING_RUN)
        .sum::<usize>() as u64
}

/// The section sizes of the vmlinux inside the bzImage at `path` (its section headers survive
/// the build's `objcopy -S`: size(1) of the vmlinux taken out prints the build's own line).
pub(crate) fn sizes(path: &Path) -> Result<Sizes> {
    let image = std::fs::read(path)
        .with_context(|| format!("cannot read the kernel {}", path.display()))?;
    let vmlinux = vmlinux(&image).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    elf_sizes(&vmlinux).map_err(|e| anyhow::anyhow!("{}'s vmlinux: {e}", path.display()))
}

/// Berkeley totals of a 64-bit ELF, as binutils' size.c sums them: an allocated section is
/// text when it is code or not writable, else data when it has contents, else bss. Written
/// here: `object` reads the section headers, and nothing in a crate sums them this way.
fn elf_sizes(elf: &[u8]) -> Result<Sizes, String> {
    use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, SHT_NOBITS};
    use object::read::elf::{ElfFile64, SectionHeader};
    let file = ElfFile64::<object::Endianness>::parse(elf).map_err(|e| e.to_string())?;
    let e = file.endian();
    let mut s = Sizes {
        text: 0,
        data: 0,
        bss: 0,
        padding: 0,
    };
    for h in file.elf_section_table().iter() {
        let flags = h.sh_flags(e).0;
        if flags & SHF_ALLOC.0 == 0 {
            continue;
        }
        let size = h.sh_size(e);
        if flags & SHF_EXECINSTR.0 != 0 || flags & SHF_WRITE.0 == 0 {
            s.text += size;
            if flags & SHF_EXECINSTR.0 != 0 && h.sh_type(e) != SHT_NOBITS {
                let bytes = h.data(e, elf).map_err(|e| e.to_string())?;
                s.padding += int3_padding(bytes);
            }
        } else if h.sh_type(e) != SHT_NOBITS {
            s.data += size;
        } else {
            s.bss += size;
        }
    }
    Ok(s)
}

/// Whether an ELF kernel carries the PVH entry note.
fn has_pvh_entry(elf: &[u8]) -> bool {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let Ok(file) = ElfFile64::<object::Endianness>::parse(elf) else {
        return false;
    };
    let endian = file.endian();
    file.elf_program_headers().iter().any(|ph| {
        let Ok(Some(mut notes)) = ph.notes(endian, elf) else {
            return false;
        };
        while let Ok(Some(n)) = notes.next() {
            if n.name() == b"Xen" && n.n_type(endian).0 == PVH_NOTE {
                return true;
            }
        }
        false
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A bzImage-shaped buffer: setup header, protocol 2.15, cmdline_size and a payload.
    fn image(payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 5 * 512];
        b[SETUP_SECTS] = 4;
        b[MAGIC..MAGIC + 4].copy_from_slice(b"HdrS");
        b[VERSION..VERSION + 2].copy_from_slice(&0x020fu16.to_le_bytes());
        b[CMDLINE_SIZE..CMDLINE_SIZE + 4].copy_from_slice(&2047u32.to_le_bytes());
        b[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4].copy_from_slice(&0u32.to_le_bytes());
        b[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4]
            .copy_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn a_file_without_the_setup_header_is_not_a_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notakernel");
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = Header::read(&p).unwrap_err().to_string();
        assert!(e.contains("not a kernel image"), "{e}");
        let mut image = vec![0u8; 4096];
        image[0x202..0x206].copy_from_slice(b"HdrS");
        std::fs::write(&p, image).unwrap();
        Header::read(&p).unwrap();
    }

    #[test]
    fn an_image_cut_short_of_its_payload_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("vmlinuz");
        let whole = image(&[7u8; 3000]);
        std::fs::write(&p, &whole).unwrap();
        Header::read(&p).unwrap();
        std::fs::write(&p, &whole[..4096]).unwrap();
        let e = Header::read(&p).unwrap_err().to_string();
        assert!(e.contains("is cut short") && e.contains("has 4096"), "{e}");
    }

    #[test]
    fn the_header_gives_the_command_line_limit() {
        let h = Header::parse(&image(b"x")).unwrap();
        assert_eq!((h.version, h.cmdline_size), (0x020f, 2047));
        assert_eq!(Header::parse(&[0u8; 1024]), None);
        let mut old = image(b"x");
        old[VERSION..VERSION + 2].copy_from_slice(&0x0204u16.to_le_bytes());
        assert_eq!(Header::parse(&old).unwrap().cmdline_size, 255);
    }

    #[test]
    fn a_gzip_payload_is_taken_out_and_checked_against_its_size() {
        use std::io::Write;
        let kernel = b"\x7fELF not really a kernel, but bytes to get back".repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&kernel).unwrap();
        let mut payload = gz.finish().unwrap();
        payload.extend_from_slice(&(kernel.len() as u32).to_le_bytes());
        assert_eq!(vmlinux(&image(&payload)).unwrap(), kernel);
        let n = payload.len();
        payload[n - 4..].copy_from_slice(&7u32.to_le_bytes());
        assert!(
            vmlinux(&image(&payload))
                .unwrap_err()
                .contains("its image says 7")
        );
        assert!(!has_pvh_entry(&kernel), "not an ELF: no PVH entry");
    }

    #[test]
    fn section_sizes_are_size_1_s() {
        // This test's own executable, against binutils' size(1) on it.
        let exe = std::env::current_exe().unwrap();
        let ours = elf_sizes(&std::fs::read(&exe).unwrap()).unwrap();
        let out = std::process::Command::new("size").arg(&exe).output();
        let out = out.expect("size(1) from binutils (gcc's dependency)");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().nth(1).expect("size(1) prints a line");
        let said: Vec<u64> = line
            .split_whitespace()
            .take(4)
            .map(|w| w.parse().unwrap())
            .collect();
        assert_eq!(
            vec![ours.text, ours.data, ours.bss, ours.total()],
            said,
            "{line}"
        );
        assert!(elf_sizes(b"not an elf").is_err());
    }

    #[test]
    fn only_long_runs_of_int3_are_padding() {
        let mut code = vec![0x90u8; 100];
        code.extend([0xcc; 63]); // a function's own alignment
        code.push(0xc3);
        code.extend([0xcc; 5000]); // the linker's, before a 2 MiB boundary
        code.push(0x55);
        code.extend([0xcc; 4096]);
        assert_eq!(int3_padding(&code), 9096);
        assert_eq!(int3_padding(&[]), 0);
    }

    #[test]
    fn bzip2_is_named_as_the_reason_to_boot_the_bzimage() {
        let e = vmlinux(&image(b"BZh91AY&SY0000")).unwrap_err();
        assert!(e.contains("bzip2"), "{e}");
    }
}
