//! The initramfs a campaign boots: syscost's own binary as `/init`, the shared libraries it
//! needs (read from its ELF's DT_NEEDED entries, found in the loader's default directories,
//! followed transitively, plus the loader named by PT_INTERP), extra files at their host paths
//! (an `exec` or `probe` target, `--guest-file`s), and named files of the campaign (its plan,
//! the arms' audit rules). A newc cpio archive, uncompressed: the kernel unpacks it as is, and
//! it is built once per campaign.

use anyhow::{Context, Result, anyhow};
use object::read::elf::{ElfFile64, ProgramHeader};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the loader looks for libraries without a cache (Debian's multiarch paths first).
const LIBRARY_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// Where to read `p` from: syscost's own executable, replaced on disk while this process runs
/// (a rebuild or an upgrade during a long campaign: the kernel names it `PATH (deleted)`), is
/// read from the file this process runs, /proc/self/exe.
fn readable(p: &Path) -> &Path {
    let own = std::env::current_exe().ok();
    match !p.exists() && own.as_deref() == Some(p) {
        true => Path::new("/proc/self/exe"),
        false => p,
    }
}

/// The interpreter and the libraries `exe` needs, transitively, as host paths.
pub(crate) fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>> {
    let mut found = BTreeSet::new();
    let mut todo = vec![readable(exe).to_path_buf()];
    while let Some(path) = todo.pop() {
        let data =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let Ok(elf) = ElfFile64::<object::Endianness>::parse(&*data) else {
            continue; // not a 64-bit ELF (a script): nothing to follow
        };
        let endian = elf.endian();
        for ph in elf.elf_program_headers() {
            if let Ok(Some(interp)) = ph.interpreter(endian, &*data) {
                let p = PathBuf::from(String::from_utf8_lossy(interp).to_string());
                if found.insert(p.clone()) {
                    todo.push(p);
                }
            }
        }
        let table = elf
            .elf_dynamic_table()
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        for d in &table {
            if d.tag != object::elf::DT_NEEDED as _ {
                continue;
            }
            let name = String::from_utf8_lossy(table.string(d).unwrap_or_default()).to_string();
            let lib = LIBRARY_DIRS
                .iter()
                .map(|dir| Path::new(dir).join(&name))
                .find(|p| p.exists())
                .ok_or_else(|| {
                    anyhow!(
                        "{} needs {name}, which is in none of {LIBRARY_DIRS:?}",
                        path.display()
                    )
                })?;
            if found.insert(lib.clone()) {
                todo.push(lib);
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// What goes into the archive.
#[derive(Default)]
pub struct Contents {
    /// Host files copied to the same path in the guest (symbolic links followed).
    pub files: Vec<PathBuf>,
    /// Named contents: guest path and bytes.
    pub named: Vec<(String, Vec<u8>)>,
}

const DIR: u32 = 0o040_755;
const EXECUTABLE: u32 = 0o100_755;

/// Where a host file lands in the guest: at its absolute path (a relative `--guest-file` is
/// taken from the current directory, as the measuring command would open it on the host).
pub(crate) fn guest_path(host: &Path) -> Result<PathBuf> {
    std::path::absolute(host).with_context(|| format!("cannot resolve {}", host.display()))
}

/// The host files the archive copies (their guest paths are the same): `exe`'s libraries,
/// the extra files and theirs.
fn host_files(exe: &Path, extra: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = shared_libraries(exe)?;
    for f in extra {
        files.push(guest_path(f)?);
        files.extend(shared_libraries(f)?);
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The directories standing at the root of every guest: the archive's own, and the mount
/// points the init fills ([`super::guest::MOUNTS`]).
const STANDARD_DIRS: [&str; 5] = ["dev", "proc", "sys", "tmp", "run"];

/// The directories a guest booted from the archive has before its measurement starts: what
/// a rule that names a path needs to find there.
pub(crate) struct Tree {
    dirs: BTreeSet<PathBuf>,
}

impl Tree {
    /// The tree of the archive [`build`] makes of `exe` and `contents`.
    pub(crate) fn of(exe: &Path, contents: &Contents) -> Result<Tree> {
        let files = host_files(exe, &contents.files)?;
        let names = files
            .iter()
            .map(|f| f.to_string_lossy().trim_start_matches('/').to_string())
            .chain(
                contents
                    .named
                    .iter()
                    .map(|(n, _)| n.trim_start_matches('/').into()),
            )
            .chain(["init".to_string()])
            .collect::<Vec<_>>();
        let dirs = parents(names.iter().map(String::as_str))
            .into_iter()
            .chain(STANDARD_DIRS.map(String::from))
            .map(|d| Path::new("/").join(d))
            .chain([PathBuf::from("/")])
            .collect();
        Ok(Tree { dirs })
    }

    /// Whether `dir` is a directory there: one of the archive's, or any path under /proc,
    /// /sys or /dev (the kernel's own file systems, not known here; /tmp and /run start empty).
    pub(crate) fn has_dir(&self, dir: &Path) -> bool {
        let kernel_fs = ["/proc", "/sys", "/dev"].iter().any(|m| dir.starts_with(m));
        kernel_fs || self.dirs.contains(&normal(dir))
    }
}

/// `p` without `.` parts and a trailing `/` (the kernel resolves them; `..` is kept, and then
/// found in no tree).
fn normal(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

/// Write the archive with `exe` as `/init` to `out`.
pub fn build(exe: &Path, contents: &Contents, out: &Path) -> Result<()> {
    let mut entries: Vec<(String, u32, Vec<u8>)> = Vec::new();
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    entries.push(("init".into(), EXECUTABLE, read(readable(exe))?));
    let files = host_files(exe, &contents.files)?;
    for f in &files {
        let name = f.to_string_lossy().trim_start_matches('/').to_string();
        entries.push((name, EXECUTABLE, read(f)?));
    }
    for (name, bytes) in &contents.named {
        entries.push((
            name.trim_start_matches('/').into(),
            0o100_644,
            bytes.clone(),
        ));
    }
    let dirs = parents(entries.iter().map(|e| e.0.as_str()));
    let file =
        std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let standard = STANDARD_DIRS.map(String::from);
    let all_dirs = dirs.iter().chain(standard.iter()).collect::<BTreeSet<_>>();
    for (ino, d) in all_dirs.iter().enumerate() {
        w = cpio::NewcBuilder::new(d)
            .ino(ino as u32 + 1)
            .mode(DIR)
            .nlink(2)
            .write(w, 0)
            .finish()?;
    }
    for (i, (name, mode, bytes)) in entries.iter().enumerate() {
        let size = u32::try_from(bytes.len()).map_err(|_| anyhow!("{name} is over 4 GiB"))?;
        let mut fw = cpio::NewcBuilder::new(name)
            .ino((all_dirs.len() + i + 1) as u32)
            .mode(*mode)
            .nlink(1)
            .write(w, size);
        fw.write_all(bytes)?;
        w = fw.finish()?;
    }
    let mut w = cpio::newc::trailer(w)?;
    w.flush()?;
    Ok(())
}

/// Every directory above the given archive paths, parents first.
fn parents<'a>(names: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    let mut dirs = BTreeSet::new();
    for n in names {
        let mut p = Path::new(n).parent();
        while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_string_lossy().to_string());
            p = d.parent();
        }
    }
    dirs
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn this_binary_s_libraries_include_the_loader_and_libc() {
        let exe = std::env::current_exe().unwrap();
        let libs = shared_libraries(&exe).unwrap();
        let names: Vec<String> = libs
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        assert!(names.iter().any(|n| n.starts_with("ld-linux")), "{names:?}");
        assert!(names.iter().any(|n| n == "libc.so.6"), "{names:?}");
    }

    #[test]
    fn the_archive_holds_init_its_libraries_and_named_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("initramfs.cpio");
        let exe = std::env::current_exe().unwrap();
        let contents = Contents {
            files: Vec::new(),
            named: vec![("campaign/plan.json".into(), b"{}".to_vec())],
        };
        build(&exe, &contents, &out).unwrap();
        let mut r = std::fs::File::open(&out).unwrap();
        let mut names = Vec::new();
        loop {
            let e = cpio::NewcReader::new(r).unwrap();
            if e.entry().is_trailer() {
                break;
            }
            names.push(e.entry().name().to_string());
            r = e.finish().unwrap();
        }
        for want in [
            "init",
            "campaign",
            "campaign/plan.json",
            "dev",
            "proc",
            "lib64",
        ] {
            assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
        }
        // Directories come before the files in them.
        let pos = |n: &str| names.iter().position(|x| x == n).unwrap();
        assert!(pos("campaign") < pos("campaign/plan.json"));
    }

    #[test]
    fn the_guest_tree_has_the_archive_s_directories_and_the_kernel_s_file_systems() {
        let exe = std::env::current_exe().unwrap();
        let contents = Contents {
            files: Vec::new(),
            named: vec![("/campaign/rules/a.json".into(), b"{}".to_vec())],
        };
        let tree = Tree::of(&exe, &contents).unwrap();
        for there in [
            "/",
            "/campaign",
            "/campaign/rules/",
            "/tmp",
            "/proc/sys/kernel",
            "/dev",
        ] {
            assert!(tree.has_dir(Path::new(there)), "{there}");
        }
        let libc = shared_libraries(&exe).unwrap();
        let libc = libc.iter().find(|p| p.ends_with("libc.so.6")).unwrap();
        assert!(tree.has_dir(libc.parent().unwrap()), "{}", libc.display());
        for not in ["/etc", "/var/log", "/tmp/a", "/campaign/../etc"] {
            assert!(!tree.has_dir(Path::new(not)), "{not}");
        }
    }
}
