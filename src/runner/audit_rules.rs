//! The audit rules a plan measures under (`--audit-rules FILE`): loaded for its runs and
//! removed for the runs of plans without them, so `run` measures a syscall under a user's rule
//! set and `ab` compares "my rules" with audit as found, interleaved. Each set is loaded once
//! before measuring, where what the kernel refuses is reported with its line; the session
//! ([`crate::audit::session`]) undoes everything on every exit path and after a SIGKILL.

use super::Plan;
use crate::audit::rules_file::RuleSet;
use crate::audit::session::Session;
use anyhow::Result;

/// A plan's audit state: the rules the kernel took (line, rule) and the enabled flag.
type State = (Vec<(usize, Vec<u8>)>, u32);

/// The audit state of each plan of a design.
pub(crate) struct AuditArms {
    session: Session,
    /// Per plan: the rules the kernel took (line, rule) and the enabled flag, or none (audit
    /// as found).
    arms: Vec<Option<State>>,
    /// Per plan: what its result should say.
    pub notes: Vec<Vec<String>>,
}

impl AuditArms {
    /// `None` when no plan has rules; else every plan's set loaded once (its refusals
    /// reported, or recorded to go on), and the machine in the first plan's state (the one
    /// every arm shares when their runs are paced together, see [`blocker`]).
    pub(crate) fn prepare(plans: &[Plan]) -> Result<Option<AuditArms>> {
        if plans.iter().all(|p| p.audit_rules.is_none()) {
            return Ok(None);
        }
        let mut session = Session::begin()?;
        let original = session.original_enabled();
        let mut arms = Vec::new();
        let mut notes = Vec::new();
        for p in plans {
            let Some(set) = &p.audit_rules else {
                arms.push(None);
                notes.push(Vec::new());
                continue;
            };
            let mut set = set.clone();
            let mut said = session.notes.clone();
            said.extend(session.load_file(&mut set)?);
            let enabled = set.enable().unwrap_or(1).min(1);
            said.insert(
                0,
                summary(&set, session.file_rules().len(), enabled, original),
            );
            said.extend(
                set.refused
                    .iter()
                    .map(|r| format!("{} line {} left out: {}", set.source, r.number, r.reason)),
            );
            arms.push(Some((session.file_rules().to_vec(), enabled)));
            notes.push(said);
        }
        session.hold_rules(&[])?;
        let mut me = AuditArms {
            session,
            arms,
            notes,
        };
        me.apply(0)?;
        Ok(Some(me))
    }

    /// Put the machine in plan `k`'s audit state.
    pub(crate) fn apply(&mut self, k: usize) -> Result<()> {
        match &self.arms[k] {
            Some((rules, enabled)) => {
                self.session.hold_rules(rules)?;
                self.session.set_enabled(*enabled)
            }
            None => {
                self.session.hold_rules(&[])?;
                let original = self.session.original_enabled();
                self.session.set_enabled(original)
            }
        }
    }

    /// Each plan's notes in its result, and every change undone now (it is undone on drop
    /// too, where an error can only be printed).
    pub(crate) fn finish(mut self, results: &mut [crate::results::RunResult]) -> Result<()> {
        for (r, notes) in results.iter_mut().zip(&self.notes) {
            r.notes.extend(notes.iter().cloned());
        }
        self.session.restore()
    }
}

fn summary(set: &RuleSet, loaded: usize, enabled: u32, original: u32) -> String {
    let flag = match (enabled, original) {
        (1, 0) => "audit enabled for these runs (it was off)",
        (1, _) => "audit enabled",
        _ => "audit disabled (the file's -e 0)",
    };
    format!(
        "audit rules of {}: {loaded} rule(s) loaded in its order, {} line(s) left out; {flag}",
        set.source,
        set.refused.len()
    )
}

/// Why plans cannot share the machine sample by sample: their audit rules differ.
pub(crate) fn blocker(plans: &[Plan]) -> Option<&'static str> {
    let first = &plans.first()?.audit_rules;
    plans
        .iter()
        .any(|p| &p.audit_rules != first)
        .then_some("the configurations differ in audit rules, which apply to the whole machine")
}
