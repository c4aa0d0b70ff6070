//! A rules file loaded into a kernel: each rule added in the file's order, what the kernel
//! refuses reported with its line and the kernel's reason (or, when the user goes on, left out
//! and recorded), and the file's settings honoured where syscost may change them (see
//! [`super::rules_file::setting_note`]).

use super::AuditSocket;
use super::rules::with_key;
use super::rules_file::{Line, Op, RuleSet, setting_note};
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// Work done once in a guest before its first rule is added (an aged slab's fillers).
pub(crate) type BeforeRules<'a> = dyn FnMut(&mut AuditSocket) -> Result<()> + 'a;

/// Where rules are loaded: a host (syscost tags each rule with a key of its own, deletes only
/// rules it added and changes no setting) or a campaign's guest (rules as given, settings
/// applied: the machine is thrown away after the boot). A guest's `before_rules` runs once,
/// before the first rule is added (after the file's `-D` and settings before it).
pub(crate) enum Target<'a> {
    Host {
        tag: &'a mut dyn FnMut() -> String,
    },
    Guest {
        before_rules: Option<&'a mut BeforeRules<'a>>,
    },
}

/// The rules now in the kernel from one file.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// (line, the rule as given, the bytes added to the kernel), in order.
    pub rules: Vec<(usize, Vec<u8>, Vec<u8>)>,
    /// What was not done, and why.
    pub notes: Vec<String>,
}

/// The audit state a boot measured its arm's rules under: rules are walked only while audit
/// is on, so a table of a boot with rules says which it was. Kept in the boot's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ArmAudit {
    /// The rules file, as named in messages.
    pub source: String,
    /// The rules the kernel took.
    pub rules: usize,
    /// audit's enabled flag at boot, before the rules were set up (0 off, 1 on, 2 locked).
    pub at_boot: u32,
    /// The flag while the boot measured.
    pub measured: u32,
}

impl ArmAudit {
    /// Whether audit was turned on for the measurement (off at boot, on while measuring: by
    /// syscost, or by the file's own `-e 1`), and so is put back when the rules go.
    pub(crate) fn enabled_by_syscost(&self) -> bool {
        self.at_boot == 0 && self.measured != 0
    }

    /// `3 rule(s) of prod.rules, audit on (off at boot: turned on for the measurement)`.
    pub(crate) fn describe(&self) -> String {
        let state = match (self.at_boot, self.measured) {
            (0, 0) => "audit off (the file's -e 0): its rules were never walked",
            (_, 0) => {
                "audit off (the file's -e 0, though it was on at boot): its rules were \
                       never walked"
            }
            (0, _) => "audit on (off at boot: turned on for the measurement)",
            _ => "audit on (on at boot)",
        };
        format!("{} rule(s) of {}, {state}", self.rules, self.source)
    }
}

/// In a boot that measures under `set` (loaded already): turn audit on when it is off and the
/// file does not say otherwise (`-e`), as `run --audit-rules` does on a host, so the rules are
/// walked; `at_boot` is the flag before anything was set up, `loaded` what the load took.
pub(crate) fn switch_on_for(
    sock: &mut AuditSocket,
    set: &RuleSet,
    loaded: &Loaded,
    at_boot: u32,
) -> Result<ArmAudit> {
    let now = sock.status_message()?.enabled;
    if set.enable().is_none() && now == 0 {
        sock.set_enabled(1)?;
    }
    Ok(ArmAudit {
        source: set.source.clone(),
        rules: loaded.rules.len(),
        at_boot,
        measured: sock.status_message()?.enabled,
    })
}

/// Load `set` through `sock`. A rule the kernel refuses stops the load (the set's `on_error`
/// Stop, and no `-i` line before it) or is recorded in `set.refused`. On an error, the rules
/// added so far are in the caller's hands: `added` holds them as they went in.
pub(crate) fn load(
    sock: &mut AuditSocket,
    set: &mut RuleSet,
    mut target: Target,
    added: &mut Loaded,
) -> Result<()> {
    let host = matches!(target, Target::Host { .. });
    for line in set.lines.clone() {
        if let Some(why) = setting_note(&line.op, host) {
            let text = crate::core::printable(&line.text);
            added
                .notes
                .push(format!("line {} ({text}): {why}", line.number));
        }
        match &line.op {
            Op::Add(rule) => {
                if let Target::Guest { before_rules } = &mut target
                    && let Some(hook) = before_rules.take()
                {
                    hook(sock)?;
                }
                let bytes = match &mut target {
                    Target::Host { tag } => match with_key(rule, &tag()) {
                        Ok(b) => b,
                        Err(e) => {
                            set.refuse(&line, e)?;
                            continue;
                        }
                    },
                    Target::Guest { .. } => rule.clone(),
                };
                match sock.add_rule(&bytes) {
                    Ok(()) => added.rules.push((line.number, rule.clone(), bytes)),
                    Err(e) => set.refuse(&line, kernel_reason(&e))?,
                }
            }
            Op::Delete(rule) => delete(sock, set, &line, rule, host, added)?,
            op if !host => settle(sock, op)?,
            _ => {}
        }
    }
    Ok(())
}

/// `-d`/`-W`: a rule this file added is deleted; on a host, any other is left alone.
fn delete(
    sock: &mut AuditSocket,
    set: &mut RuleSet,
    line: &Line,
    rule: &[u8],
    host: bool,
    added: &mut Loaded,
) -> Result<()> {
    if let Some(i) = added.rules.iter().position(|(_, r, _)| r == rule) {
        let (_, _, bytes) = added.rules.remove(i);
        return sock.del_rule(&bytes);
    }
    if host {
        added.notes.push(format!(
            "line {}: not deleted: not a rule this file added (syscost deletes only its own)",
            line.number
        ));
        return Ok(());
    }
    if let Err(e) = sock.del_rule(rule) {
        set.refuse(line, kernel_reason(&e))?;
    }
    Ok(())
}

/// A setting applied in a guest.
fn settle(sock: &mut AuditSocket, op: &Op) -> Result<()> {
    match *op {
        Op::Enable(e) => sock.set_enabled(e.min(1)),
        Op::Failure(v) => sock.set_status(2, v),
        Op::Rate(v) => sock.set_status(8, v),
        Op::Backlog(v) => sock.set_status(16, v),
        Op::BacklogWaitTime(v) => sock.set_status(32, v),
        _ => Ok(()),
    }
}

/// The kernel's refusal in words a user can act on.
pub(crate) fn kernel_reason(e: &anyhow::Error) -> String {
    let errno = (e.chain())
        .find_map(|c| c.downcast_ref::<super::KernelRefused>())
        .and_then(|r| r.error.raw_os_error());
    let hint = match errno {
        Some(libc::EEXIST) => "the kernel already has this rule",
        Some(libc::ENOENT) => {
            "a path it names does not exist (a dir= directory, or a watch's parent directory)"
        }
        Some(libc::EINVAL) => {
            "the kernel finds it invalid (a field this kernel or its security module does not \
             support on this list?)"
        }
        _ => "the kernel refused it",
    };
    format!("{hint}: {e:#}")
}

#[cfg(test)]
mod unit {
    use super::*;

    /// The kernel's errno, not the words of its message, says why a rule was refused.
    #[test]
    fn a_refusal_is_explained_by_the_kernel_s_errno() {
        let refused = |errno| {
            let e: anyhow::Error = super::super::KernelRefused {
                what: "audit request".into(),
                error: std::io::Error::from_raw_os_error(errno),
            }
            .into();
            kernel_reason(&e.context("line 3"))
        };
        assert!(refused(libc::EEXIST).starts_with("the kernel already has this rule: line 3"));
        assert!(refused(libc::ENOENT).starts_with("a path it names does not exist"));
        assert!(refused(libc::EINVAL).starts_with("the kernel finds it invalid"));
        assert!(refused(libc::EBUSY).starts_with("the kernel refused it"));
        // Words alone are not an errno.
        let e = anyhow::anyhow!("os error 17");
        assert!(kernel_reason(&e).starts_with("the kernel refused it"));
    }
}
