//! The changes syscost makes to audit, owned and undone.
//!
//! Every rule syscost adds carries a key `syscost-<pid>-<starttime>-<n>` naming the invocation
//! that added it, and a state file `/run/syscost/audit-<pid>-<starttime>.json` records the
//! enabled flag found at the start and the one syscost set. A [`Session`] removes its own rules
//! and restores the flag when it is dropped: on return, on error, on panic, and after SIGINT or
//! SIGTERM (which unwind through it, see `signals`). After a SIGKILL, the next audit command
//! finds rules and state files whose owner is gone and undoes them ([`cleanup_leftovers`]).
//! Rules that are not syscost's are never touched.

use super::rules::{
    self, ACTION_ALWAYS, ACTION_NEVER, FIELD_ARCH, FIELD_PID, FILTER_EXIT, FILTER_TASK,
};
use super::{AuditSocket, AuditStatus, ensure_unlocked};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Every syscost audit key starts with this.
pub(crate) const KEY_PREFIX: &str = "syscost-";
/// Where syscost records the audit state it must restore (tmpfs: gone at reboot, as the audit
/// state itself).
pub(crate) const STATE_DIR: &str = "/run/syscost";
/// Created when syscost enables audit on a machine where it was off: from then until reboot,
/// new processes carry per-task audit work (the residue). `syscost env` reports it.
pub const ENABLED_MARKER: &str = "/run/syscost/audit-enabled-this-boot";

/// A pid no process can have (above the kernel's PID_MAX_LIMIT of 2^22): a `pid=` field with it
/// makes a rule fail for every task, so syscost's rules never generate a record.
pub(crate) const IMPOSSIBLE_PID: u32 = 0x7fff_fffe;

/// Rarely called system calls that syscost's non-matching rules name (never the benchmarked
/// one): every syscall of every process that a rule names reaches the rule's field checks.
fn quiet_syscalls() -> Vec<u32> {
    [
        libc::SYS_acct,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_init_module,
        libc::SYS_delete_module,
        libc::SYS_quotactl,
        libc::SYS_pivot_root,
        libc::SYS_kexec_load,
        libc::SYS_syslog,
        libc::SYS_vhangup,
        libc::SYS_settimeofday,
        libc::SYS_adjtimex,
        libc::SYS_personality,
    ]
    .iter()
    .map(|&n| n as u32)
    .collect()
}

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    pid: u32,
    start: u64,
    original_enabled: u32,
    /// The flag as syscost last set it (None: not changed).
    set_to: Option<u32>,
}

/// `(pid, starttime)` of this process: together unique for the boot.
pub(crate) fn me() -> (u32, u64) {
    let pid = std::process::id();
    (pid, start_time(pid).unwrap_or(0))
}

/// A process's start time in clock ticks since boot (/proc/PID/stat field 22).
fn start_time(pid: u32) -> Option<u64> {
    crate::core::proc_stat_field(&format!("/proc/{pid}/stat"), 22)
}

pub(crate) fn alive(pid: u32, start: u64) -> bool {
    start_time(pid) == Some(start)
}

/// The owner `(pid, start)` encoded in a syscost key.
pub(crate) fn owner_of(key: &str) -> Option<(u32, u64)> {
    let mut parts = key.strip_prefix(KEY_PREFIX)?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    Some((pid, start))
}

/// The key of the `n`-th rule of the invocation `(pid, start)`.
fn key_of(pid: u32, start: u64, n: u64) -> String {
    format!("{KEY_PREFIX}{pid}-{start}-{n}")
}

fn state_path(pid: u32, start: u64) -> PathBuf {
    Path::new(STATE_DIR).join(format!("audit-{pid}-{start}.json"))
}

/// Remove what killed syscost invocations left: their keyed rules, and the enabled flag they
/// set (restored only if it still holds the value syscost set). Returns what was done.
pub(crate) fn cleanup_leftovers(sock: &mut AuditSocket) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let mut removed = 0;
    for r in sock.list_rules()? {
        let Some(key) = r.key_starting(KEY_PREFIX) else {
            continue;
        };
        let Some((pid, start)) = owner_of(key) else {
            continue;
        };
        if alive(pid, start) {
            continue;
        }
        sock.del_rule(&r.bytes)
            .with_context(|| format!("removing the leftover rule {key}"))?;
        removed += 1;
    }
    if removed > 0 {
        notes.push(format!(
            "removed {removed} audit rule(s) left by a syscost that was killed"
        ));
    }
    if let Ok(dir) = std::fs::read_dir(STATE_DIR) {
        for e in dir.filter_map(|e| e.ok()) {
            let path = e.path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(st) = serde_json::from_str::<StateFile>(&text) else {
                continue;
            };
            if alive(st.pid, st.start) {
                continue;
            }
            if let Some(set) = st.set_to {
                let now = sock.status_message()?.enabled;
                if now == set && now != st.original_enabled && now != 2 {
                    sock.set_enabled(st.original_enabled)?;
                    notes.push(format!(
                        "restored audit enabled={} (a killed syscost had set {set})",
                        st.original_enabled
                    ));
                }
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(notes)
}

/// syscost's changes to audit for one invocation.
pub struct Session {
    sock: AuditSocket,
    pid: u32,
    start: u64,
    next: u64,
    original_enabled: u32,
    enabled: u32,
    /// Exit rules added, in order, with whether each names the benchmarked syscall.
    exit_rules: Vec<Vec<u8>>,
    task_never: Option<Vec<u8>>,
    /// A rules file's rules that the kernel took (as given, in order), and how many of them
    /// are loaded now (with syscost's keys: the bytes to delete).
    file_rules: Vec<(usize, Vec<u8>)>,
    file_loaded: Vec<Vec<u8>>,
    /// The index in `file_rules` of the first rule loaded.
    file_from: usize,
    state: PathBuf,
    restored: bool,
    /// What cleaning up earlier leftovers did.
    pub notes: Vec<String>,
}

impl Session {
    /// Start: refuse locked audit before changing anything, clean leftovers of killed runs,
    /// and record the state to restore.
    pub fn begin() -> Result<Session> {
        let mut sock = AuditSocket::open()?;
        let status = sock.status()?;
        ensure_unlocked(&status)?;
        let notes = cleanup_leftovers(&mut sock)?;
        let (pid, start) = me();
        let state = state_path(pid, start);
        let s = Session {
            original_enabled: status.enabled,
            enabled: status.enabled,
            sock,
            pid,
            start,
            next: 0,
            exit_rules: Vec::new(),
            task_never: None,
            file_rules: Vec::new(),
            file_loaded: Vec::new(),
            file_from: 0,
            state,
            restored: false,
            notes,
        };
        s.save_state(None)?;
        Ok(s)
    }

    fn save_state(&self, set_to: Option<u32>) -> Result<()> {
        std::fs::create_dir_all(STATE_DIR).with_context(|| format!("cannot create {STATE_DIR}"))?;
        let st = StateFile {
            pid: self.pid,
            start: self.start,
            original_enabled: self.original_enabled,
            set_to,
        };
        crate::core::write_atomic(&self.state, serde_json::to_string(&st)?.as_bytes())
    }

    fn key(&mut self) -> String {
        self.next += 1;
        key_of(self.pid, self.start, self.next)
    }

    /// The status now.
    pub(crate) fn status(&mut self) -> Result<AuditStatus> {
        self.sock.status()
    }

    /// The enabled flag found at the start.
    pub(crate) fn original_enabled(&self) -> u32 {
        self.original_enabled
    }

    /// Set the enabled flag (0 or 1).
    pub fn set_enabled(&mut self, enabled: u32) -> Result<()> {
        if self.enabled == enabled {
            return Ok(());
        }
        // Record first: if syscost dies right after, the next run knows what to restore.
        self.save_state(Some(enabled))?;
        if enabled == 1 && self.original_enabled == 0 {
            let _ = std::fs::write(
                ENABLED_MARKER,
                format!("enabled by syscost pid {} (audit was off)\n", self.pid),
            );
        }
        self.sock.set_enabled(enabled)?;
        self.enabled = enabled;
        Ok(())
    }

    /// Load or remove syscost's `never,task` rule, which gives new tasks no audit context.
    pub fn set_task_never(&mut self, on: bool) -> Result<()> {
        match (on, self.task_never.take()) {
            (true, None) => {
                let key = self.key();
                let r = rules::encode(FILTER_TASK, ACTION_NEVER, &[], &[], &key);
                self.sock
                    .add_rule(&r)
                    .context("the kernel refused syscost's never,task rule")?;
                self.task_never = Some(r);
            }
            (false, Some(r)) => self.sock.del_rule(&r)?,
            (_, keep) => self.task_never = keep,
        }
        Ok(())
    }

    /// Hold exactly `n` syscost exit rules: the first `matching` name the syscalls of `targets`
    /// in turn and fail on their pid field, the others name rarely used syscalls (never a
    /// target); none ever produces a record.
    pub fn set_exit_rules(&mut self, n: usize, matching: usize, targets: &[u32]) -> Result<()> {
        while self.exit_rules.len() > n {
            let r = self.exit_rules.pop().expect("non-empty");
            self.sock.del_rule(&r)?;
        }
        let quiet: Vec<u32> = quiet_syscalls()
            .into_iter()
            .filter(|s| !targets.contains(s))
            .collect();
        if matching > 0 && targets.is_empty() {
            bail!("{matching} matching rules need the syscalls they should name");
        }
        let arch = rules::native_arch();
        while self.exit_rules.len() < n {
            let i = self.exit_rules.len();
            let key = self.key();
            let syscall = if i < matching {
                targets[i % targets.len()]
            } else {
                quiet[i % quiet.len()]
            };
            let mut fields = Vec::new();
            if let Some(a) = arch {
                fields.push((FIELD_ARCH, a));
            }
            fields.push((FIELD_PID, IMPOSSIBLE_PID));
            let r = rules::encode(FILTER_EXIT, ACTION_ALWAYS, &[syscall], &fields, &key);
            if let Err(e) = self.sock.add_rule(&r) {
                bail!(
                    "the kernel refused audit rule {} of {n} ({e:#}): stopping; the rules added \
                     so far are removed",
                    i + 1
                );
            }
            self.exit_rules.push(r);
        }
        Ok(())
    }

    /// Load a rules file's rules, each tagged with a key of this invocation, all of them: what
    /// the kernel refuses stops here or is recorded in `set` (see [`super::load`]). Rules of an
    /// earlier file are removed first. Returns what was not done.
    pub fn load_file(&mut self, set: &mut super::rules_file::RuleSet) -> Result<Vec<String>> {
        self.set_file_rules(0)?;
        self.file_rules.clear();
        let mut loaded = super::load::Loaded::default();
        let (pid, start, next) = (self.pid, self.start, self.next);
        let mut used = 0u64;
        let result = {
            let mut tag = || {
                used += 1;
                key_of(pid, start, next + used)
            };
            let target = super::load::Target::Host { tag: &mut tag };
            super::load::load(&mut self.sock, set, target, &mut loaded)
        };
        self.next += used;
        for (line, rule, bytes) in loaded.rules {
            self.file_rules.push((line, rule));
            self.file_loaded.push(bytes);
        }
        result?;
        Ok(loaded.notes)
    }

    /// The loaded file's rules the kernel took: (line, rule as given), in order.
    pub fn file_rules(&self) -> &[(usize, Vec<u8>)] {
        &self.file_rules
    }

    /// Hold exactly `rules` (line, rule as given) as the file's rules, all loaded.
    pub(crate) fn hold_rules(&mut self, rules: &[(usize, Vec<u8>)]) -> Result<()> {
        if self.file_rules != rules {
            self.set_file_rules(0)?;
            self.file_rules = rules.to_vec();
        }
        self.set_file_rules(rules.len())
    }

    /// Hold exactly the first `n` rules of the loaded file.
    pub(crate) fn set_file_rules(&mut self, n: usize) -> Result<()> {
        self.set_file_window(0, n)
    }

    /// Hold exactly the loaded file's rules `from..to` (in order).
    pub(crate) fn set_file_window(&mut self, from: usize, to: usize) -> Result<()> {
        let keep = if from == self.file_from {
            to.saturating_sub(from)
        } else {
            0
        };
        while self.file_loaded.len() > keep {
            let r = self.file_loaded.pop().expect("non-empty");
            self.sock.del_rule(&r)?;
        }
        self.file_from = from;
        let to = to.min(self.file_rules.len());
        while from + self.file_loaded.len() < to {
            let (line, rule) = self.file_rules[from + self.file_loaded.len()].clone();
            let key = self.key();
            let bytes = rules::with_key(&rule, &key).map_err(anyhow::Error::msg)?;
            self.sock
                .add_rule(&bytes)
                .with_context(|| format!("the kernel refused the rule of line {line} again"))?;
            self.file_loaded.push(bytes);
        }
        Ok(())
    }

    /// Undo everything: every rule with this invocation's key (listed afresh, so none is
    /// missed) and the enabled flag. Idempotent.
    pub fn restore(&mut self) -> Result<()> {
        if self.restored {
            return Ok(());
        }
        let mine = format!("{KEY_PREFIX}{}-{}-", self.pid, self.start);
        let mut first_err = None;
        match self.sock.list_rules() {
            Ok(all) => {
                for r in all {
                    if r.key_starting(&mine).is_some()
                        && let Err(e) = self.sock.del_rule(&r.bytes)
                    {
                        first_err.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
        self.exit_rules.clear();
        self.task_never = None;
        self.file_loaded.clear();
        self.file_from = 0;
        if self.enabled != self.original_enabled {
            match self.sock.set_enabled(self.original_enabled) {
                Ok(()) => self.enabled = self.original_enabled,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e.context(
                "could not undo every audit change: run `syscost audit cleanup` as root",
            ));
        }
        let _ = std::fs::remove_file(&self.state);
        self.restored = true;
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("syscost: error: {e:#}");
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn keys_name_their_owner() {
        assert_eq!(owner_of("syscost-123-456-7"), Some((123, 456)));
        assert_eq!(owner_of("syscost-x-1-1"), None);
        assert_eq!(owner_of("other-123-456-7"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_not() {
        let (pid, start) = me();
        assert!(start > 0);
        assert!(alive(pid, start));
        assert!(
            !alive(pid, start + 1),
            "same pid, other start time: a different process"
        );
    }

    #[test]
    fn quiet_syscalls_are_not_the_benchmarked_ones() {
        let q = quiet_syscalls();
        for s in [libc::SYS_getpid, libc::SYS_getppid, libc::SYS_gettid] {
            assert!(!q.contains(&(s as u32)));
        }
    }
}
