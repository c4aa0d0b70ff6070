//! A LAVA run's jobs through the lab's queue: submitted (or taken up again after a kill) while
//! the queue has room, followed by the event stream or by polling, read back into boots, and
//! submitted again after an infrastructure error.

use super::*;

/// Jobs that end in an infrastructure error (the boot never ran) are submitted again, up to
/// this many times per try.
pub(super) const INFRA_RETRIES: u32 = 3;

/// Between looks at the open jobs without an event stream: a job's end is heard 0.25 s late
/// on average, for a request to the lab each time.
pub(super) const POLL: Duration = Duration::from_millis(500);

/// Between looks at the open jobs while the event stream lasts: a safety net, should an event
/// be lost.
pub(super) const EVENTS_NET: Duration = Duration::from_secs(5);

/// The event stream `at` says, for the lab at `lab`; `None` (said once) when it is off or
/// does not answer.
pub(super) fn follow(at: &EventsAt, lab: &str) -> Option<Events> {
    let url = at.url(lab)?;
    match Events::connect(&url) {
        Ok(e) => Some(e),
        Err(e) => {
            let how = crate::said!(
                "syscost: LAVA's event stream did not answer (",
                format!("{e:#}"),
                format!(
                    "): asking the lab about its jobs every {} s (",
                    POLL.as_secs_f64()
                ),
                Opt::LavaEvents,
                " says where it is)"
            );
            eprintln!("{}", how.spell(crate::core::input::spelled));
            None
        }
    }
}

/// Seconds between looks at a full queue: a job takes minutes, a look costs the lab a query.
pub(super) const QUEUE_POLL_S: u64 = 10;

impl LavaBooter<'_> {
    /// The job of this try: one submitted before (by a run killed since), else a new one.
    pub(super) fn submit(&mut self, a: usize, round: u32, attempt: u32) -> Result<u64> {
        let name = &self.plan.arms[a].name;
        if let Some(p) = (self.pending.iter())
            .find(|p| &p.arm == name && p.round == round && p.attempt == attempt)
        {
            eprintln!(
                "syscost: LAVA job {} was submitted before: waiting for it",
                p.id
            );
            return Ok(p.id);
        }
        // A pinned run's device is checked before each job: taken out of service since the
        // last one, it would keep the job queued until the limit.
        if let Some(pin) = &self.target.pin {
            let health = self.lab.health(&pin.device)?;
            let what = "this run's jobs stay on it";
            if let Some(e) = super::super::pin::unhealthy(&pin.device, health, what) {
                return Err(e);
            }
        }
        self.wait_for_room()?;
        let id = self.lab.submit(&self.definition(a, round, attempt)?)?;
        let p = PendingJob {
            arm: name.clone(),
            round,
            attempt,
            id,
        };
        (self.on_job)(JobEvent::Submitted(&p));
        Ok(id)
    }

    /// Wait while the lab's queue for the device type holds `queue_depth` jobs or more, saying
    /// so once: a lab's other users keep their place.
    pub(super) fn wait_for_room(&self) -> Result<()> {
        let (kind, depth) = (&self.target.device_type, self.target.queue_depth);
        let mut told = false;
        loop {
            let queued = self.lab.queued(kind)?;
            if queued < u64::from(depth) {
                return Ok(());
            }
            if !told {
                let jobs = if queued == 1 { "job" } else { "jobs" };
                let said = crate::said!(
                    format!("syscost: the lab's queue for {kind} devices holds {queued} {jobs} ("),
                    Opt::LavaQueueDepth,
                    format!(" {depth}): waiting for it to shorten before submitting")
                );
                eprintln!("{}", said.spell(crate::core::input::spelled));
                told = true;
            }
            for _ in 0..QUEUE_POLL_S * 2 {
                (self.interrupted)()?;
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }

    /// Where `job` stands: ended, or cancelled after waiting in the queue beyond the limit
    /// (since `since`, its submission), or still under way (`None`).
    pub(super) fn waited(&self, job: Job, since: Instant) -> Result<Option<Waited>> {
        let id = job.id;
        if job.finished() {
            return Ok(Some(Waited::Ended(job)));
        }
        if job.queued() && since.elapsed() > self.target.queue_limit {
            self.lab.cancel(id)?;
            return Ok(Some(Waited::Queued(job)));
        }
        Ok(None)
    }

    /// Where job `id` ran.
    pub(super) fn lab_job(&self, job: &Job) -> LabJob {
        let worker = (job.actual_device.as_deref()).and_then(|d| self.lab.worker_of(d).ok());
        LabJob {
            lab: self.lab.url().to_string(),
            id: job.id,
            url: self.lab.job_url(job.id),
            device: job.actual_device.clone(),
            worker,
        }
    }
}

pub(super) enum Waited {
    Ended(Job),
    Queued(Job),
}

impl Boot for LavaBooter<'_> {
    fn boot(&mut self, a: usize, round: u32, attempt: u32) -> Result<BootRecord> {
        let mut out = None;
        let one = Next {
            arm: a,
            round,
            attempt,
            slot: 0,
        };
        self.boot_all(&[one], &mut |b| out = Some(b))?;
        out.context("the job ended without a record")
    }

    /// Exact counts do not depend on when or where a boot runs: a round's jobs go at once,
    /// up to the limit. Timed boots keep the schedule's order, one job at a time.
    fn in_flight(&self) -> usize {
        match self.target.machine.emulated_counters {
            true => self.target.jobs.max(1) as usize,
            false => 1,
        }
    }

    /// One job per try, all submitted, each read back as it ends; a job LAVA ends with an
    /// infrastructure error (a boot that never ran) is submitted again. Ctrl-C cancels the
    /// jobs under way.
    fn boot_all(&mut self, tries: &[Next], done: &mut dyn FnMut(BootRecord)) -> Result<()> {
        let started = Instant::now();
        // Each job's own submission times its wait in the queue.
        let mut open: Vec<(Next, u64, u32, Instant)> = Vec::new();
        for t in tries {
            open.push((
                *t,
                self.submit(t.arm, t.round, t.attempt)?,
                0,
                Instant::now(),
            ));
        }
        while !open.is_empty() {
            if let Err(i) = (self.interrupted)() {
                // Cancelled, they are no job a resume should wait for.
                for (_, id, ..) in &open {
                    let _ = self.lab.cancel(*id);
                    self.close(*id);
                }
                return Err(i.into());
            }
            let mut jobs = self.lab.jobs(&ids_of(&open))?;
            let mut still = Vec::new();
            for (t, id, infra, submitted) in open {
                // One the list left out is asked for alone, which says why it is missing.
                let job = match jobs.iter().position(|j| j.id == id) {
                    Some(i) => jobs.swap_remove(i),
                    None => self.lab.job(id)?,
                };
                let Some(waited) = self.waited(job, submitted)? else {
                    still.push((t, id, infra, submitted));
                    continue;
                };
                self.close(id);
                let at = (t.round, t.attempt);
                let (record, never_ran) = self.read(t.arm, at, started, waited)?;
                if never_ran && infra < INFRA_RETRIES {
                    eprintln!(
                        "syscost: LAVA job {id} never ran ({}): submitted again",
                        record.failure_reason().unwrap_or_default()
                    );
                    let again = self.submit(t.arm, t.round, t.attempt)?;
                    still.push((t, again, infra + 1, Instant::now()));
                    continue;
                }
                done(record);
            }
            open = still;
            if !open.is_empty() {
                self.pause(&ids_of(&open));
            }
        }
        Ok(())
    }
}

/// The jobs of the open tries (each try, its job, its infrastructure retries, its submission).
pub(super) fn ids_of(open: &[(Next, u64, u32, Instant)]) -> Vec<u64> {
    open.iter().map(|(_, id, ..)| *id).collect()
}

impl LavaBooter<'_> {
    /// Until the next look at the jobs `ids`: the event stream's next word of one of them
    /// (at most [`EVENTS_NET`]) while it lasts, else [`POLL`].
    pub(super) fn pause(&mut self, ids: &[u64]) {
        if let Some(e) = &self.events {
            if e.wait(ids, EVENTS_NET).is_ok() {
                return;
            }
            let every = POLL.as_secs_f64();
            eprintln!("syscost: LAVA's event stream ended: asking the lab every {every} s");
            self.events = None;
        }
        (self.nap)(POLL);
    }

    /// Job `id` is read back (or cancelled): not to be waited for again.
    pub(super) fn close(&mut self, id: u64) {
        self.pending.retain(|p| p.id != id);
        (self.on_job)(JobEvent::Ended(id));
    }

    /// The record of a job that ended, and whether LAVA calls it an infrastructure error.
    pub(super) fn read(
        &mut self,
        a: usize,
        at: (u32, u32),
        started: Instant,
        waited: Waited,
    ) -> Result<(BootRecord, bool)> {
        let arm = &self.plan.arms[a];
        let (job, queued) = match waited {
            Waited::Ended(j) => (j, false),
            Waited::Queued(j) => (j, true),
        };
        let lab_job = self.lab_job(&job);
        let (ended, never_ran) = match queued {
            true => (
                failed(
                    Failure::TimedOut,
                    format!(
                        "LAVA job {} did not leave the queue within {}: cancelled",
                        job.id,
                        humantime::format_duration(self.target.queue_limit)
                    ),
                    Vec::new(),
                ),
                false,
            ),
            false => match self.elsewhere(&job) {
                Some(why) => (failed(Failure::NoResult, why, Vec::new()), false),
                None => self.ended(&job)?,
            },
        };
        let machine = &self.target.machine;
        // Its seconds run from the batch's submission: outside the guest's clock are the
        // lab's queue, the job's start and download, QEMU's start and the job's end.
        let mut record = record_of(ended, arm, at, started, &mut self.symbols[a], machine);
        record.job = Some(lab_job);
        Ok((record, never_ran))
    }

    /// Why job's figures cannot be taken when it ran on another device than the one this
    /// run's jobs stay on (a type of one device, untagged, that gained another).
    pub(super) fn elsewhere(&self, job: &Job) -> Option<String> {
        let pin = self.target.pin.as_ref()?;
        let ran = job.actual_device.as_deref()?;
        (ran != pin.device).then(|| {
            format!(
                "LAVA job {} ran on {ran}, not on {}, where this run's jobs stay: its figures \
                 are left out",
                job.id, pin.device
            )
        })
    }

    /// How a finished job's boot ended, from its log and results, and whether LAVA calls its
    /// failure the infrastructure's.
    pub(super) fn ended(&self, job: &Job) -> Result<(Ended, bool)> {
        let log = self.lab.log(job.id)?;
        let lines = lava::console_lines(&log);
        let tail = tail_of(&lines, 12);
        let text = lines.join("\n");
        let rebuilt = console::rebuild(lines.iter().map(String::as_str));
        if let Ok(bytes) = &rebuilt {
            let frames = guest::unframe_all(bytes);
            // The plugin's lines are QEMU's own log, on the same console.
            let plugin = self.plugin.as_ref().map(|_| text.as_str());
            if let Some(e) = outcome::sent_back(frames, plugin, Vec::new(), &tail) {
                return Ok((e, false));
            }
        }
        let tests = self.lab.tests(job.id)?;
        let words = match job.health {
            // A board's monitor ended at the panic: the job is LAVA's success.
            lava::JobHealth::Complete => format!("LAVA job {}", job.id),
            _ => format!(
                "LAVA job {} ended {}: {}",
                job.id,
                job.health,
                lava::failure_words(job, &tests)
            ),
        };
        if let Some(panic) = outcome::kernel_panic(&text) {
            let why = format!("the kernel panicked: {panic} ({words})");
            return Ok((failed(Failure::Panicked, why, tail), false));
        }
        let why = match (job.health, rebuilt) {
            (lava::JobHealth::Complete, Err(d)) => format!("LAVA job {}: {d}", job.id),
            _ => words,
        };
        let never_ran = lava::never_ran(job, &tests, &lines);
        Ok((failed(Failure::NoResult, why, tail), never_ran))
    }
}

pub(super) fn failed(failure: Failure, reason: String, console: Vec<String>) -> Ended {
    Ended::Failed {
        reason,
        console,
        failure,
    }
}

/// The last `n` lines of a console.
pub(super) fn tail_of(lines: &[String], n: usize) -> Vec<String> {
    lines[lines.len().saturating_sub(n)..].to_vec()
}
