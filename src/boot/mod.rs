//! Booting kernels for a campaign: the initramfs syscost builds from its own binary
//! ([`initramfs`]), syscost as the guest's init ([`guest`]), and one boot in QEMU ([`qemu`]);
//! on this machine itself, the next kernel loaded by kexec ([`kexec`]) and the boot hook that
//! resumes the campaign after each boot ([`hook`]). How any boot ended, and why one failed,
//! whatever booted it ([`outcome`]); a kernel fetched from a lab's URL ([`fetch`]).
//! A campaign's files live in one temporary directory of its own ([`workdir`]), removed on
//! every exit path; one left by a SIGKILLed syscost is removed by the next campaign.

pub(crate) mod alone;
pub(crate) mod bzimage;
pub(crate) mod console;
pub(crate) mod counts_port;
pub(crate) mod disk;
pub(crate) mod fetch;
pub mod guest;
pub(crate) mod hook;
pub mod initramfs;
pub(crate) mod kexec;
pub(crate) mod lava;
pub(crate) mod lava_events;
pub(crate) mod mount;
pub mod outcome;
pub mod qemu;
pub(crate) mod qmp;
pub(crate) mod settle;
pub(crate) mod sparse_elf;

use crate::audit::load::ArmAudit;
use anyhow::{Context, Result};
use std::path::Path;

const PREFIX: &str = "syscost-campaign-";

/// A campaign's temporary directory, named with this process's id, after removing those of
/// campaigns whose syscost is gone.
pub(crate) fn workdir() -> Result<tempfile::TempDir> {
    remove_leftovers(&std::env::temp_dir());
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir()
        .context("cannot create the campaign's temporary directory")
}

/// Remove `syscost-campaign-PID-*` directories under `dir` whose PID is not running; returns
/// how many.
pub(crate) fn remove_leftovers(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Measure in this boot, as a campaign's boot does (a QEMU guest's init, or a kexec
/// campaign's resume): set up the arm's audit rules (a [`RuleSet`] as JSON, read on the
/// host), run syscost's measuring
/// `words` as a child of this binary with its result in a temporary file and its history
/// entry thrown away (the campaign records it, tagged), remove the rules (unless the machine
/// powers off next), return the result.
/// `mark`: its workers mark their batches for syscost's TCG plugin; `objects`: and record where
/// their kernel objects are (the plugin models the caches).
/// `aged`: the slab the rules' entries come from is aged first with that many objects (see
/// [`crate::audit::age`]); `anew`: the rules are placed anew before each run, with this seed
/// (see [`crate::audit::anew`]). `after`: what becomes of the machine once measured.
pub(crate) fn measure_here(
    words: &[String],
    rules: Option<(&str, &str)>,
    (aged, anew): (Option<usize>, Option<u64>),
    (mark, objects): (bool, bool),
    after: After,
) -> Result<Vec<u8>> {
    let rules = rules
        .map(|(json, what)| ArmRules::set_up(json, what, aged))
        .transpose()?;
    let anew = rules.as_ref().zip(anew).map(|(r, seed)| r.anew(seed));
    let result = measured(words, (mark, objects), rules.as_ref(), anew.as_ref());
    if after == After::PowerOff {
        // Nothing of this boot outlives it: removing 42 rules one by one took half a second
        // of a guest's measurement under the emulator, for a machine about to power off.
        std::mem::forget(rules);
    }
    result
}

/// What becomes of a machine after [`measure_here`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// It goes on (a kexec campaign's host): the arm's rules are removed, audit put back.
    Goes,
    /// It powers off (a QEMU or lab guest, thrown away): nothing is put back.
    PowerOff,
}

/// The measuring command's result under `rules`, with what the rules and the audit backlog
/// add to it.
fn measured(
    words: &[String],
    (mark, objects): (bool, bool),
    rules: Option<&ArmRules>,
    anew: Option<&crate::audit::anew::Anew>,
) -> Result<Vec<u8>> {
    let backlog = mark.then(alone::audit_backlog_unlimited).flatten();
    let result = measure_child(words, (mark, objects), anew)?;
    let result = match backlog {
        Some(w) => guest::with_warning(result, &w),
        None => result,
    };
    Ok(match rules {
        Some(r) => r.noted(result),
        None => result,
    })
}

/// The measuring command as a child, its result read back.
fn measure_child(
    words: &[String],
    (mark, objects): (bool, bool),
    anew: Option<&crate::audit::anew::Anew>,
) -> Result<Vec<u8>> {
    use crate::counters::emulated::{MARK_ENV, WITH_OBJECTS};
    let marked = if objects { WITH_OBJECTS } else { "1" };
    let tmp = tempfile::tempdir().context("cannot create a temporary directory")?;
    let out = tmp.path().join("result.json");
    let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
    let mut c = std::process::Command::new(exe);
    c.args(unrecorded(with_output(words, &out.to_string_lossy())))
        .env("SYSCOST_HISTORY", tmp.path().join("history.sqlite"))
        .envs(mark.then_some((MARK_ENV, marked)))
        .envs(objects.then(object_map).flatten())
        .envs(anew.and_then(|a| Some((crate::audit::anew::ENV, serde_json::to_string(a).ok()?))))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // Told to stop (SIGTERM) if this syscost dies, so it undoes its own changes first.
    let run = crate::signals::Guarded::spawn_told(&mut c)
        .and_then(|g| g.output())
        .context("cannot start the measurement")?;
    crate::signals::check()?;
    if !run.status.success() {
        let err = String::from_utf8_lossy(&run.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        anyhow::bail!(
            "the measurement failed ({}): {}",
            run.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    std::fs::read(&out).context("the measurement wrote no result")
}

/// Where this kernel keeps a process's objects, for the measurement to find its workers' with
/// (read here with the kallsyms this process read for the arm's rules), as its environment.
fn object_map() -> Option<(&'static str, String)> {
    use crate::audit::own::{OBJECT_MAP_ENV, ObjectMap};
    let map = ObjectMap::here().ok()?;
    Some((OBJECT_MAP_ENV, serde_json::to_string(&map).ok()?))
}

/// The measuring words with `-o PATH` among syscost's options (before a `--`).
pub(crate) fn with_output(words: &[String], path: &str) -> Vec<String> {
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let mut out = words[..split].to_vec();
    out.extend(["-o".to_string(), path.to_string()]);
    out.extend(words[split..].iter().cloned());
    out
}

/// The measuring words with `--no-history` among syscost's options, unless they name a history
/// themselves: the campaign records the result, and a guest's own record (a SQLite file made
/// and thrown away) took 0.3 s of its measurement under the emulator.
fn unrecorded(words: Vec<String>) -> Vec<String> {
    use crate::core::input::{Opt, spelled};
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let (history, none) = (spelled(Opt::History), spelled(Opt::NoHistory));
    let named = |w: &String| *w == none || *w == history || w.starts_with(&format!("{history}="));
    if words[..split].iter().any(named) {
        return words;
    }
    let mut out = words[..split].to_vec();
    out.push(none);
    out.extend(words[split..].iter().cloned());
    out
}

/// An arm's audit rules, set up in this boot (its settings too: the guest is thrown away)
/// and removed when dropped.
struct ArmRules {
    sock: crate::audit::AuditSocket,
    set: crate::audit::rules_file::RuleSet,
    loaded: crate::audit::load::Loaded,
    /// The audit state measured under, once set up.
    audit: Option<ArmAudit>,
    /// Where the exit rules' entries are in this boot.
    placement: crate::audit::addresses::Placement,
    /// The fillers of an aged slab, until they are deleted.
    fillers: crate::audit::age::Fillers,
}

/// Where a boot's result holds the audit state its arm's rules were measured under.
pub(crate) const ARM_AUDIT_FIELD: &str = "arm_audit";

/// Where a boot's result holds where its exit rules' entries were in memory.
pub(crate) const ENTRIES_FIELD: &str = "audit_entries";

impl ArmRules {
    /// The rules loaded and audit turned on for them when it is off and the file has no
    /// `-e` (a rule is walked only with audit on; a kexec boot's flag is put back on drop),
    /// and where their exit-list entries landed (read as `cachesets --addresses` reads them).
    /// `aged`: the entries' slab is aged with that many objects before the first rule.
    fn set_up(json: &str, what: &str, aged: Option<usize>) -> Result<ArmRules> {
        let set = serde_json::from_str(json).with_context(|| format!("the rules of {what}"))?;
        let mut me = ArmRules {
            sock: crate::audit::AuditSocket::open()?,
            set,
            loaded: Default::default(),
            audit: None,
            placement: Default::default(),
            fillers: Default::default(),
        };
        let at_boot = me.sock.status_message()?.enabled;
        let mut fillers = None;
        let objects = aged.unwrap_or_default();
        let mut age = |sock: &mut crate::audit::AuditSocket| {
            fillers = Some(crate::audit::age::age(sock, objects, rand::random())?);
            Ok(())
        };
        let target = crate::audit::load::Target::Guest {
            before_rules: aged.map(|_| &mut age as &mut crate::audit::load::BeforeRules<'_>),
        };
        let loaded = crate::audit::load::load(&mut me.sock, &mut me.set, target, &mut me.loaded);
        me.fillers = fillers.unwrap_or_default();
        loaded?;
        me.fillers.delete(&mut me.sock)?;
        me.placement = crate::audit::addresses::Placement::here();
        if aged.is_some() {
            me.placement.aged = Some(me.fillers.aged(&me.placement.addresses()));
        }
        let audit = crate::audit::load::switch_on_for(&mut me.sock, &me.set, &me.loaded, at_boot);
        me.audit = Some(audit?);
        Ok(me)
    }

    /// What the measurement needs to place these rules anew before each run, drawn from
    /// `seed`.
    fn anew(&self, seed: u64) -> crate::audit::anew::Anew {
        crate::audit::anew::Anew {
            rules: self
                .loaded
                .rules
                .iter()
                .map(|(_, _, b)| b.clone())
                .collect(),
            seed,
        }
    }

    /// The result with the audit state it was measured under, a warning for each line left
    /// out here or on the host, and a note for each setting not applied.
    fn noted(&self, result: Vec<u8>) -> Vec<u8> {
        let result = match &self.audit {
            Some(a) => guest::with_field(result, ARM_AUDIT_FIELD, serde_json::json!(a)),
            None => result,
        };
        let result = guest::with_field(result, ENTRIES_FIELD, serde_json::json!(self.placement));
        let refused = self.set.refused.iter().map(|r| {
            format!(
                "audit rules, {} line {}: left out: {}",
                self.set.source, r.number, r.reason
            )
        });
        let notes = self
            .loaded
            .notes
            .iter()
            .map(|n| format!("audit rules, {}: {n}", self.set.source));
        refused
            .chain(notes)
            .fold(result, |bytes, w| guest::with_warning(bytes, &w))
    }
}

impl Drop for ArmRules {
    fn drop(&mut self) {
        self.fillers.forget(&mut self.sock);
        for (_, _, r) in &self.loaded.rules {
            let _ = self.sock.del_rule(r);
        }
        if let Some(a) = self.audit.as_ref().filter(|a| a.enabled_by_syscost()) {
            let _ = self.sock.set_enabled(a.at_boot);
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn only_directories_of_dead_campaigns_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PREFIX}{}-x", i32::MAX));
        let live = tmp.path().join(format!("{PREFIX}{}-y", std::process::id()));
        let other = tmp.path().join("syscost-something-else");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        assert_eq!(remove_leftovers(tmp.path()), 1);
        assert!(!dead.exists() && live.exists() && other.exists());
    }

    #[test]
    fn a_guest_records_no_history_unless_its_command_names_one() {
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            unrecorded(with_output(
                &w("probe --target /init:f -- run syscall"),
                "/r"
            )),
            w("probe --target /init:f -o /r --no-history -- run syscall")
        );
        for named in [
            "run syscall --history /h.sqlite",
            "run syscall --no-history",
        ] {
            assert_eq!(unrecorded(w(named)), w(named));
        }
    }
}
