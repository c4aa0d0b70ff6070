//! The life of a kept run, written once for campaigns, bisections and reproductions: its state
//! claimed before anything is fetched or booted (so no other run shares its files), its plan
//! prepared (kernels fetched into its own files, checked) and its lab opened, each boot handed
//! to the command as it ends (shown, recorded in the history) and then saved in its state, and
//! its state forgotten once the command has shown and written what the boots made. A plan
//! refused leaves nothing of a new run; a run stopped with boots kept keeps them and says how to
//! go on. The order is here, over any way to make the boots ([`Boots`]), as hyperfine's
//! scheduler owns its run loop whatever executes it; the tests drive it with a mock.

use super::kept::{self, KeptRun};
use super::{BootRecord, LavaRun};
use crate::boot::lava::Lab;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Whether a run starts anew (its ID not yet claimed) or goes on from its kept state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    New,
    Resumed,
}

/// A kept run's state as its life handles it: where it is kept, how it takes that place, and
/// the words that go on with it.
pub(crate) trait Keep: KeptRun {
    /// Its state's file.
    fn path(&self) -> PathBuf;
    /// Take its place, before anything is fetched or booted: refused when another run has it.
    fn claim(&mut self) -> Result<()>;
    /// What follows `syscost COMMAND resume` (and `abort`) to name it: ` ID`, or nothing for a
    /// kind kept one at a time.
    fn named(&self) -> String {
        format!(" {}", self.kept().id)
    }
}

/// How a kept run's plan becomes boots, and what they make: a campaign's rounds on QEMU or in a
/// lab (`campaign::Rounds`), a mock in the tests.
pub(crate) trait Boots<P> {
    /// What the plan's boots read, found by [`Boots::prepare`] (each arm's rules).
    type Ready;
    /// What the boots make (a campaign).
    type Made;
    /// Fetch what `plan` needs into `files` (the run's own), check it, and open its lab if it
    /// boots in one: what its boots read, or what is wrong.
    fn prepare(&mut self, plan: &mut P, files: &Path) -> Result<(Self::Ready, Option<Lab>)>;
    /// Boot what `kept` lacks, telling `on_boot` of each as it ends.
    fn boot(
        &mut self,
        plan: &P,
        ready: &Self::Ready,
        kept: &[BootRecord],
        lava: Option<LavaRun>,
        on_boot: &mut dyn FnMut(&BootRecord),
    ) -> Result<Self::Made>;
    /// Whether `e` stops the run for good (no resume could end otherwise): its state is then
    /// forgotten, boots and all (they stay in the history).
    fn fatal(&self, _e: &anyhow::Error) -> bool {
        false
    }
}

/// What the command that runs a kept run does at each point of its life.
pub(crate) trait Watch<K: KeptRun, M> {
    /// The run is claimed and its `plan` ready: say so.
    fn started(&mut self, run: &K, plan: &K::Plan);
    /// A boot ended: say it, record it (it is saved in the state after this).
    fn booted(&mut self, id: &str, b: &BootRecord);
    /// The boots are made: show and write them. The state is forgotten only after this
    /// succeeds.
    fn finish(&mut self, run: &K, made: &mut M) -> Result<()>;
}

/// Run (or go on with) `run` to its end, and return what its boots made: see the module's doc
/// for the order.
pub(crate) fn live<K, B, W>(
    mut run: K,
    start: Start,
    boots: &mut B,
    watch: &mut W,
) -> Result<B::Made>
where
    K: Keep,
    K::Plan: Clone,
    B: Boots<K::Plan>,
    W: Watch<K, B::Made>,
{
    let Some(mut plan) = run.kept().plan.clone() else {
        anyhow::bail!("{} {} keeps no plan", K::KIND.noun(), run.kept().id);
    };
    let path = run.path();
    if start == Start::New {
        // Refused before anything is fetched or booted when the boots cannot be kept.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        kept::check_dir(
            dir.unwrap_or(Path::new(".")),
            crate::core::input::Opt::State,
        )?;
        run.claim()?;
    }
    // A claim may have taken another ID, and so another file.
    let path = run.path();
    let (ready, lab) = match boots.prepare(&mut plan, &kept::files_of(&path)) {
        Ok(p) => p,
        Err(e) => {
            refused(&run, &path, start);
            return Err(e);
        }
    };
    run.kept_mut().plan = Some(plan.clone());
    watch.started(&run, &plan);
    let so_far = run.kept().boots.clone();
    let run = std::cell::RefCell::new(run);
    let lava = lab.map(|lab| kept::lava_run(lab, &run, &path));
    let made = boots.boot(&plan, &ready, &so_far, lava, &mut |b| {
        // Recorded before it is kept: a kill between the two makes the boot again (a second
        // record of its slot), where the other order would keep a boot the history never had.
        let mut r = run.borrow_mut();
        watch.booted(&r.kept().id, b);
        r.kept_mut().boots.push(b.clone());
        if let Err(e) = kept::save(&*r, &path) {
            eprintln!("syscost: warning: {e:#}");
        }
    });
    let run = run.into_inner();
    let nothing_kept = run.kept().boots.is_empty() && run.kept().jobs.is_empty();
    match made {
        Ok(mut made) => {
            watch.finish(&run, &mut made)?;
            kept::forget(&path);
            Ok(made)
        }
        Err(e) if nothing_kept || boots.fatal(&e) => {
            kept::forget(&path);
            Err(e)
        }
        Err(e) => {
            eprintln!("syscost: {}", kept_note(&run));
            Err(e)
        }
    }
}

/// A plan refused leaves nothing of a new run, and of a resumed one its state alone (the
/// files fetched for it go when it has no boot yet).
fn refused<K: Keep>(run: &K, path: &Path, start: Start) {
    match start {
        Start::New => kept::forget(path),
        Start::Resumed if run.kept().boots.is_empty() => {
            let _ = std::fs::remove_dir_all(kept::files_of(path));
        }
        Start::Resumed => {}
    }
}

/// Where a stopped run's boots are, and what to do with them.
pub(crate) fn kept_note<K: Keep>(run: &K) -> String {
    let (k, id, named) = (K::KIND, &run.kept().id, run.named());
    let history = match k.records() {
        true => format!(" and in the history (tag {}={id})", k.tag()),
        false => String::new(),
    };
    format!(
        "{} {id}: its {} boot(s) so far are kept in {}{history}: `syscost {} resume{named}` \
         goes on with them, `syscost {} abort{named}` drops them",
        k.noun(),
        run.kept().boots.len(),
        run.path().display(),
        k.command(),
        k.command(),
    )
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::boots::kept::{Planned, RunKind};
    use crate::experiments::boots::saved::Saved;
    use crate::experiments::boots::{Backend, Outcome};
    use serde::{Deserialize, Serialize};
    use std::cell::RefCell;
    use std::rc::Rc;

    #[derive(Clone, Debug, Serialize, Deserialize)]
    struct Plan {
        boots: u32,
        backend: Backend,
    }

    impl Planned for Plan {
        const KIND: RunKind = RunKind::Reproduction;
        fn backend(&self) -> &Backend {
            &self.backend
        }
    }

    /// What the mock saw, in order: each step, and the boots kept on disk at each boot.
    type Log = Rc<RefCell<Vec<String>>>;

    /// Boots `plan.boots` in all, failing after `stop_after` of them when given; refuses
    /// the plan when `refuse`.
    struct Mock {
        log: Log,
        state: std::path::PathBuf,
        stop_after: Option<usize>,
        refuse: bool,
    }

    impl Mock {
        fn kept_on_disk(&self) -> usize {
            let text = std::fs::read_to_string(&self.state).unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            v["boots"].as_array().map_or(0, Vec::len)
        }
    }

    impl Boots<Plan> for Mock {
        type Ready = ();
        type Made = usize;
        fn prepare(&mut self, _: &mut Plan, files: &Path) -> Result<((), Option<Lab>)> {
            self.log
                .borrow_mut()
                .push(format!("prepare, claimed {}", self.state.exists()));
            std::fs::create_dir_all(files)?;
            anyhow::ensure!(!self.refuse, "refused");
            Ok(((), None))
        }
        fn boot(
            &mut self,
            plan: &Plan,
            _: &(),
            kept: &[BootRecord],
            _: Option<LavaRun>,
            on_boot: &mut dyn FnMut(&BootRecord),
        ) -> Result<usize> {
            for i in kept.len()..plan.boots as usize {
                if self.stop_after.is_some_and(|n| i >= n) {
                    anyhow::bail!("stopped");
                }
                let b = boot(i as u32 + 1);
                on_boot(&b);
                let on_disk = self.kept_on_disk();
                self.log
                    .borrow_mut()
                    .push(format!("boot {}, {on_disk} kept", i + 1));
            }
            Ok(plan.boots as usize)
        }
    }

    struct Seen(Log, std::path::PathBuf);

    impl Watch<Saved<Plan>, usize> for Seen {
        fn started(&mut self, run: &Saved<Plan>, _: &Plan) {
            let n = run.kept.boots.len();
            self.0.borrow_mut().push(format!("started with {n}"));
        }
        fn booted(&mut self, _: &str, b: &BootRecord) {
            let text = std::fs::read_to_string(&self.1).unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let on_disk = v["boots"].as_array().map_or(0, Vec::len);
            (self.0.borrow_mut()).push(format!("shown {} ({on_disk} kept)", b.round));
        }
        fn finish(&mut self, _: &Saved<Plan>, made: &mut usize) -> Result<()> {
            self.0.borrow_mut().push(format!("finished {made}"));
            Ok(())
        }
    }

    fn boot(round: u32) -> BootRecord {
        BootRecord {
            arm: "a".into(),
            round,
            attempt: 0,
            seconds: 1.0,
            split: None,
            pinned: Vec::new(),
            job: None,
            outcome: Outcome::Failed {
                reason: "a mock".into(),
                console: Vec::new(),
                failure: Default::default(),
            },
        }
    }

    fn new_run(home: &Path, boots: u32) -> Saved<Plan> {
        let mut s = Saved::new(home, "1-2".into(), 2).unwrap();
        s.kept.plan = Some(Plan {
            boots,
            backend: Backend::Kexec,
        });
        s
    }

    /// The order: claimed, prepared, started; each boot recorded, then saved; the state
    /// forgotten after the end is shown. A run stopped keeps its boots and goes on from them
    /// (none made twice); a plan refused leaves nothing.
    #[test]
    fn a_kept_run_is_claimed_saved_at_each_boot_resumed_and_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("runs");
        let log = Log::default();
        let state = dir.join("1-2.json");
        let mut mock = Mock {
            log: log.clone(),
            state: state.clone(),
            stop_after: Some(2),
            refuse: false,
        };
        let mut seen = Seen(log.clone(), state.clone());
        let e = live(new_run(&dir, 3), Start::New, &mut mock, &mut seen).unwrap_err();
        assert_eq!(e.to_string(), "stopped");
        let stopped = [
            "prepare, claimed true",
            "started with 0",
            "shown 1 (0 kept)",
            "boot 1, 1 kept",
            "shown 2 (1 kept)",
            "boot 2, 2 kept",
        ];
        assert_eq!(*log.borrow(), stopped);
        assert!(state.exists() && kept::files_of(&state).exists());

        log.borrow_mut().clear();
        mock.stop_after = None;
        let mut run = crate::experiments::boots::saved::pick::<Plan>(&dir, None)
            .unwrap()
            .unwrap();
        run.take_over().unwrap();
        live(run, Start::Resumed, &mut mock, &mut seen).unwrap();
        let resumed = [
            "prepare, claimed true",
            "started with 2",
            "shown 3 (2 kept)",
            "boot 3, 3 kept",
            "finished 3",
        ];
        assert_eq!(*log.borrow(), resumed);
        assert!(!state.exists() && !kept::files_of(&state).exists());

        log.borrow_mut().clear();
        mock.refuse = true;
        assert!(live(new_run(&dir, 3), Start::New, &mut mock, &mut seen).is_err());
        assert_eq!(*log.borrow(), ["prepare, claimed true"]);
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "nothing left"
        );
    }

    #[test]
    fn a_stopped_run_says_how_to_go_on() {
        let mut run = new_run(Path::new("/s"), 3);
        run.kept.boots.push(boot(1));
        let said = kept_note(&run);
        assert_eq!(
            said,
            "reproduction 1-2: its 1 boot(s) so far are kept in /s/1-2.json: `syscost reproduce \
             resume 1-2` goes on with them, `syscost reproduce abort 1-2` drops them"
        );
    }
}
