//! auditctl's own rule builder: the functions of libaudit (the library every Debian system
//! ships as libaudit1, which auditctl links) that turn `-S`, `-F`, `-C`, `-w` and `-p` into a
//! `struct audit_rule_data`. Calling them, rather than growing an encoder of syscost's own,
//! gives the bytes auditctl gives by construction: every field and operator, named values
//! (users, groups, errno names, message and file types, `b32`/`b64` with each architecture's
//! syscall table, `unset`) and the kernel-feature checks (`exe`, `sessionid`, exclude and
//! filesystem lists). netlink-packet-audit's rule message has the fields but none of the
//! names: errno, syscall and user names would have to be written again.
//!
//! The library is opened at run time (libloading), not linked: syscost builds and runs where it
//! is missing, and only reading a rules file then says what to install. No header is needed:
//! the few signatures are declared here, from libaudit.h (audit 3.0). The library keeps its
//! parsing state in globals (`_audit_elf`, `_audit_syscalladded`, ...), so every use holds one
//! lock and starts by clearing them, as auditctl does before each line (`reset_vars`).
//!
//! Loading it loads libcap-ng, whose constructor registers a fork handler that frees memory in
//! the child: a process that forks with its heap wiped in the child (the `proc` workload's
//! MADV_WIPEONFORK batches) must never have loaded it. Only syscost's main process reads
//! rules files; its workers are fresh processes. For the same reason the tests that load it
//! live among the end-to-end tests (`tests/all/audit_grammar.rs`), whose process forks no
//! workload itself, not among the unit tests.

use super::rules::HEADER_LEN;
use anyhow::{Result, anyhow, bail};
use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The names the library is found under: the soname, then Debian's and other distributions'
/// paths (a campaign guest has no ld.so cache).
const CANDIDATES: &[&str] = &[
    "libaudit.so.1",
    "/usr/lib/x86_64-linux-gnu/libaudit.so.1",
    "/lib/x86_64-linux-gnu/libaudit.so.1",
    "/usr/lib/aarch64-linux-gnu/libaudit.so.1",
    "/usr/lib64/libaudit.so.1",
    "/usr/lib/libaudit.so.1",
];

type Rule = c_void;

/// The library's functions and parsing globals.
struct Lib {
    _lib: libloading::Library,
    path: String,
    create: unsafe extern "C" fn() -> *mut Rule,
    free: unsafe extern "C" fn(*mut Rule),
    syscall: unsafe extern "C" fn(*mut Rule, *const c_char) -> c_int,
    fieldpair: unsafe extern "C" fn(*mut *mut Rule, *mut c_char, c_int) -> c_int,
    compare: unsafe extern "C" fn(*mut *mut Rule, *mut c_char, c_int) -> c_int,
    watch: unsafe extern "C" fn(c_int, *mut *mut Rule, *const c_char) -> c_int,
    perms: unsafe extern "C" fn(*mut Rule, c_int) -> c_int,
    detect_machine: unsafe extern "C" fn() -> c_int,
    machine_to_elf: unsafe extern "C" fn(c_int) -> c_uint,
    message_mode: unsafe extern "C" fn(c_int, c_int),
    elf: *mut c_uint,
    flags: [*mut c_int; 5],
}

// SAFETY: the raw pointers are the library's globals, used only under LOCK.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
static LOCK: Mutex<()> = Mutex::new(());

/// Where the library was found, or why it cannot be used.
pub fn available() -> Result<String> {
    lib().map(|l| l.path.clone())
}

/// The library's file on this machine, for a campaign's guest (which has no ld.so cache).
pub(crate) fn library_path() -> Result<std::path::PathBuf> {
    available()?;
    CANDIDATES[1..]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| anyhow!("libaudit.so.1 is in none of {:?}", &CANDIDATES[1..]))
}

fn lib() -> Result<&'static Lib> {
    LIB.get_or_init(open).as_ref().map_err(|e| anyhow!("{e}"))
}

fn open() -> Result<Lib, String> {
    let mut last = String::new();
    for path in CANDIDATES {
        // SAFETY: libaudit's initialisers only set up its tables.
        match unsafe { libloading::Library::new(path) } {
            Ok(l) => return symbols(l, path).map_err(|e| format!("{path}: {e}")),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!(
        "reading audit rules uses libaudit, the library auditctl uses, and it was not found \
         ({last}): install it (apt-get install libaudit1, dnf install audit-libs)"
    ))
}

fn symbols(l: libloading::Library, path: &str) -> Result<Lib, libloading::Error> {
    // SAFETY: the types are libaudit.h's (audit 3.0) for these names.
    unsafe {
        let flag = |name: &[u8]| l.get::<*mut c_int>(name).map(|s| *s);
        let lib = Lib {
            path: path.to_string(),
            create: *l.get(b"audit_rule_create_data\0")?,
            free: *l.get(b"audit_rule_free_data\0")?,
            syscall: *l.get(b"audit_rule_syscallbyname_data\0")?,
            fieldpair: *l.get(b"audit_rule_fieldpair_data\0")?,
            compare: *l.get(b"audit_rule_interfield_comp_data\0")?,
            watch: *l.get(b"audit_add_watch_dir\0")?,
            perms: *l.get(b"audit_update_watch_perms\0")?,
            detect_machine: *l.get(b"audit_detect_machine\0")?,
            machine_to_elf: *l.get(b"audit_machine_to_elf\0")?,
            message_mode: *l.get(b"set_aumessage_mode\0")?,
            elf: *l.get::<*mut c_uint>(b"_audit_elf\0")?,
            flags: [
                flag(b"_audit_syscalladded\0")?,
                flag(b"_audit_permadded\0")?,
                flag(b"_audit_archadded\0")?,
                flag(b"_audit_exeadded\0")?,
                flag(b"_audit_filterfsadded\0")?,
            ],
            _lib: l,
        };
        // MSG_QUIET: syscost says what went wrong itself, with the line.
        (lib.message_mode)(2, 0);
        Ok(lib)
    }
}

/// AUDIT_WATCH and AUDIT_DIR, the two kinds of watch.
pub(crate) const FIELD_WATCH: u32 = 105;
pub(crate) const FIELD_DIR: u32 = 107;

/// One rule being built, holding the library's lock.
pub struct Builder {
    lib: &'static Lib,
    rule: *mut Rule,
    _held: MutexGuard<'static, ()>,
}

impl Builder {
    /// An empty rule, with the library's parsing state cleared (auditctl's `reset_vars`).
    pub fn new() -> Result<Builder> {
        let lib = lib()?;
        let held = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the globals are plain ints of the library, and we hold the lock.
        let rule = unsafe {
            *lib.elf = 0;
            for f in lib.flags {
                *f = 0;
            }
            (lib.create)()
        };
        if rule.is_null() {
            bail!("libaudit could not allocate a rule");
        }
        Ok(Builder {
            lib,
            rule,
            _held: held,
        })
    }

    /// Whether a `-S`, a watch or another field that a key may follow has been given
    /// (auditctl's check before `-k`).
    pub(crate) fn keyable(&self) -> bool {
        // SAFETY: as in `new`.
        unsafe { [0, 1, 3, 4].iter().any(|&i| *self.lib.flags[i] != 0) }
    }

    /// Whether a syscall has been added (`-S`, a watch).
    pub(crate) fn has_syscalls(&self) -> bool {
        // SAFETY: as in `new`.
        unsafe { *self.lib.flags[0] != 0 }
    }

    /// `-S NAME`: one syscall by name or number, or `all`, in the table of the rule's `arch`
    /// (this machine's when none was given, as auditctl does).
    pub fn syscall(&mut self, name: &str) -> Result<()> {
        let c = CString::new(name).map_err(|_| anyhow!("a syscall name holds a NUL"))?;
        // SAFETY: rule is the library's allocation; the globals are ours under the lock.
        let rc = unsafe {
            if *self.lib.elf == 0 {
                let machine = (self.lib.detect_machine)();
                *self.lib.elf = if machine < 0 {
                    0
                } else {
                    (self.lib.machine_to_elf)(machine)
                };
            }
            (self.lib.syscall)(self.rule, c.as_ptr())
        };
        match rc {
            0 => {
                // SAFETY: as above.
                unsafe { *self.lib.flags[0] = 1 };
                Ok(())
            }
            -2 => bail!("the rule's arch has no syscall table in libaudit"),
            _ => bail!("syscall name unknown: {name}"),
        }
    }

    /// `-F PAIR` on list `list` (field, operator, value, as auditctl reads it).
    pub fn field(&mut self, pair: &str, list: u32) -> Result<()> {
        let f = self.lib.fieldpair;
        self.pair(f, pair, list, "-F")
    }

    /// `-C PAIR`: a comparison of two fields.
    pub(crate) fn compare(&mut self, pair: &str, list: u32) -> Result<()> {
        let f = self.lib.compare;
        self.pair(f, pair, list, "-C")
    }

    fn pair(
        &mut self,
        f: unsafe extern "C" fn(*mut *mut Rule, *mut c_char, c_int) -> c_int,
        pair: &str,
        list: u32,
        option: &str,
    ) -> Result<()> {
        // The library writes NULs over the operator: it gets a copy of its own.
        let c = CString::new(pair).map_err(|_| anyhow!("{option} {pair}: holds a NUL"))?;
        let raw = c.into_raw();
        // SAFETY: raw is a writable NUL-terminated copy; rule may be reallocated through the
        // pointer, which is why it is passed by address.
        let rc = unsafe { f(&mut self.rule, raw, list as c_int) };
        // SAFETY: raw came from into_raw above.
        drop(unsafe { CString::from_raw(raw) });
        if rc != 0 {
            bail!("{}", error_message(rc, option, pair));
        }
        Ok(())
    }

    /// `-w PATH`: a watch (a directory watch when `dir`), on the exit list, all permissions
    /// until `-p` narrows them.
    pub(crate) fn watch(&mut self, path: &str, dir: bool) -> Result<()> {
        let c = CString::new(path).map_err(|_| anyhow!("-w {path}: holds a NUL"))?;
        let ty = if dir { FIELD_DIR } else { FIELD_WATCH };
        // SAFETY: as in `pair`.
        let rc = unsafe { (self.lib.watch)(ty as c_int, &mut self.rule, c.as_ptr()) };
        if rc != 0 {
            bail!("-w {path}: libaudit could not make the watch");
        }
        // SAFETY: as in `new`.
        unsafe { *self.lib.flags[0] = 1 };
        Ok(())
    }

    /// `-p PERMS` of a watch (AUDIT_PERM_* bits).
    pub(crate) fn perms(&mut self, bits: u32) -> Result<()> {
        // SAFETY: as in `pair`.
        let rc = unsafe { (self.lib.perms)(self.rule, bits as c_int) };
        if rc != 0 {
            bail!("-p needs a watch or another field before it");
        }
        Ok(())
    }

    /// The rule's bytes as the kernel takes them, for `list` (with AUDIT_FILTER_PREPEND for
    /// `-A`) and `action`.
    pub fn finish(self, flags: u32, action: u32) -> Vec<u8> {
        // SAFETY: the rule holds HEADER_LEN bytes and then buflen more (the last header word).
        unsafe {
            let header = std::slice::from_raw_parts(self.rule as *const u8, HEADER_LEN);
            let buflen = u32::from_ne_bytes(header[HEADER_LEN - 4..].try_into().unwrap());
            let all =
                std::slice::from_raw_parts(self.rule as *const u8, HEADER_LEN + buflen as usize);
            let mut out = all.to_vec();
            out[..4].copy_from_slice(&flags.to_ne_bytes());
            out[4..8].copy_from_slice(&action.to_ne_bytes());
            out
        }
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        // SAFETY: rule is the library's allocation, freed once.
        unsafe { (self.lib.free)(self.rule) }
    }
}

/// libaudit's error codes (lib/errormsg.h, EAU_*) in words.
fn error_message(rc: c_int, option: &str, pair: &str) -> String {
    let field = pair.split(['=', '!', '<', '>', '&']).next().unwrap_or(pair);
    let says = match -rc {
        1 => "no operator (=, !=, <, >, <=, >=, &, &=)",
        2 => "unknown field",
        3 => "arch must be given before -S",
        4 | 5 => "unknown arch",
        6 => "this machine does not have that arch's bit width",
        7 => "only on the exit list",
        8 => "unknown message type",
        9 => "msgtype only on the exclude or user list",
        11 => "the value is too long",
        12 => "the exclude list takes only msgtype, *uid, *gid, pid, subj_* and exe",
        13 => "takes only = or !=",
        14 => "permissions are r, w, x and a",
        15 => "unknown errno name",
        16 => "unknown file type",
        17 => "only on the exit and entry lists",
        19 => "a key needs a syscall, watch or exe before it",
        20 => "no value after the operator",
        21 => "the value must be a number",
        22 | 24 => "no field name before the operator",
        25 => "no value after the operator",
        26 => "unknown field to compare",
        27 => "unknown field to compare with",
        28 => "too many fields in one rule (the kernel takes 64)",
        29 => "takes only =",
        30 => "not supported by this kernel",
        31 => "only on the exclude, user or exit list",
        32 => "the rule has no list",
        33 => "these two fields cannot be compared",
        34 => "not valid on this list",
        35 => "this list is not supported by this kernel",
        36 => "unknown file system type",
        37 => "the value is too large",
        38 => "unknown user or group name",
        39 => "the syscalls of the permission filter could not be added",
        _ => "libaudit refused it",
    };
    format!("{option} {pair}: {says} (field '{field}')")
}
