//! The steps a rollout's durable run takes, each one database write (the run's activities are
//! the rollout's only writer): start, gate states, submitting and following a wave's racks
//! through the normal task submission, verification, and the end.

use std::collections::HashMap;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::model::{OnRefused, RackState, Rollout, RolloutStatus, Strategy, WaveStatus, Window};
use super::progress::{Counts, rollout_task_statuses, task_statuses};
use super::service::{RolloutService, task_spec};
use super::store;
use crate::drift::observe::Observer;
use crate::error::{Code, Error, Result};
use crate::ids::{RolloutId, TaskId};
use crate::tasks::TaskStatus;

/// How often [`RolloutService::advance_waiting`] reads a wave's counts while it waits: two
/// small reads, a tenth of a second after a task ended at worst.
const WAIT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Racks of a wave submitted side by side: enough to hide each submission's round trips, few
/// enough to leave the connection pool to the API.
const SUBMIT_AT_ONCE: usize = 8;

/// What the run needs to drive the rollout, read once at its start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunPlan {
    pub status: RolloutStatus,
    pub waves: u32,
    pub canary: bool,
    pub total: u32,
    pub strategy: Strategy,
    pub window: Option<Window>,
}

/// A wave's racks and the whole rollout's, after one step; `closed` once the wave is closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaveProgress {
    pub wave: Counts,
    pub overall: Counts,
    #[serde(default)]
    pub closed: bool,
}

/// One advance step of a wave, as [`RolloutService::advance_waiting`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct WaveStep {
    pub wave: u32,
    /// Start tasks for pending racks (and record the wave as running the first time).
    pub submit: bool,
    /// How long to wait for the wave's counts to change.
    pub wait: std::time::Duration,
    /// The run has approved the rollout (recorded when the wave starts).
    pub approved: bool,
    /// Close the wave once it is done (no verification follows).
    pub close: bool,
}

/// The rollout's message while wave `wave` (from 0) of `waves` runs: one text for the step that
/// starts the wave and for the workflow's status after a pause.
pub fn wave_running(wave: u32, waves: u32) -> String {
    format!("wave {} of {waves} running", wave + 1)
}

impl WaveProgress {
    /// Every rack of the wave submitted (or refused) and every task ended.
    pub fn done(&self) -> bool {
        self.wave.pending == 0 && self.wave.running == 0
    }
}

/// Refusals of the normal submission path that are the rack's, not the system's.
fn refusal(e: &Error) -> Option<String> {
    match e {
        Error::Conflict {
            code: Code::RackBusy | Code::QueueFull,
            message,
            errors,
        }
        | Error::Unprocessable {
            code: Code::NoComponents | Code::Unsupported,
            message,
            errors,
        } => Some(
            errors
                .first()
                .map_or(message.clone(), |e| e.message.clone()),
        ),
        Error::Invalid(errors) | Error::Unprocessable { errors, .. } => Some(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        ),
        _ => None,
    }
}

impl RolloutService {
    /// Reads, changes and writes the rollout, retrying when the compare-and-set loses. An
    /// ended rollout is answered as is.
    async fn mutate(&self, id: RolloutId, change: impl Fn(&mut Rollout)) -> Result<Rollout> {
        for _ in 0..5 {
            let mut r = store::get(&self.db, id).await?;
            if r.status.is_terminal() {
                return Ok(r);
            }
            change(&mut r);
            r.updated_at = self.clock.now();
            if store::update(&self.db, &r).await? {
                r.revision += 1;
                return Ok(r);
            }
        }
        Err(Error::Internal(format!("rollout {id} kept changing")))
    }

    /// The run has begun: pending -> running.
    pub async fn begin(&self, id: RolloutId) -> Result<RunPlan> {
        let now = self.clock.now();
        let r = self
            .mutate(id, |r| {
                if r.status == RolloutStatus::Pending {
                    r.status = RolloutStatus::Running;
                    r.started_at = Some(now);
                    r.message = "running".into();
                }
            })
            .await?;
        Ok(RunPlan {
            status: r.status,
            waves: r.waves.len() as u32,
            canary: r.waves.first().is_some_and(|w| w.canary),
            total: r.total_racks(),
            strategy: r.spec.strategy.clone(),
            window: r.spec.window,
        })
    }

    /// Records where the run is (a gate, or running a wave).
    pub async fn set_status(
        &self,
        id: RolloutId,
        status: RolloutStatus,
        wave: Option<u32>,
        message: &str,
        approved: bool,
    ) -> Result<()> {
        self.mutate(id, |r| {
            r.status = status;
            r.current_wave = wave.or(r.current_wave);
            r.message = message.to_string();
            r.approved |= approved;
        })
        .await
        .map(drop)
    }

    /// One step of a wave: when `submit`, starts tasks for pending racks up to the wave's
    /// concurrency, and the first time records the wave, and the rollout, as running (with the
    /// run's `approved`); then counts. Each rack's submission carries a key derived from the
    /// rollout and the rack, so a repeated step never creates a second task for a rack.
    /// Answers the rollout as written, with the counts.
    async fn advance(
        &self,
        id: RolloutId,
        wave: u32,
        submit: bool,
        approved: bool,
    ) -> Result<(Rollout, WaveProgress)> {
        let mut r = store::get(&self.db, id).await?;
        let index = wave as usize;
        if index >= r.waves.len() {
            return Err(Error::invalid(
                "wave",
                format!("rollout {id} has no wave {wave}"),
            ));
        }
        let mut statuses = rollout_task_statuses(&self.db, &r).await?;
        let mut changed = false;
        let mut deferred = None;
        if submit && !r.status.is_terminal() {
            (changed, deferred) = self.submit_pending(&mut r, index, &statuses).await;
            let w = &mut r.waves[index];
            if w.status == WaveStatus::Pending {
                w.status = WaveStatus::Running;
                w.started_at = Some(self.clock.now());
                r.status = RolloutStatus::Running;
                r.message = wave_running(wave, r.waves.len() as u32);
                r.approved |= approved;
                changed = true;
            }
        }
        if changed {
            r.current_wave = Some(wave);
            r.updated_at = self.clock.now();
            if !store::update(&self.db, &r).await? {
                return Err(Error::Internal(format!("rollout {id} changed meanwhile")));
            }
            statuses = rollout_task_statuses(&self.db, &r).await?;
        }
        if let Some(e) = deferred {
            return Err(e);
        }
        let progress = counted(&r, index, &statuses);
        Ok((r, progress))
    }

    /// Starts tasks for the wave's pending racks, up to its concurrency, [`SUBMIT_AT_ONCE`]
    /// submissions side by side: each is the normal submission path (a dozen statements and a
    /// workflow start), and one after the other they took half a second per wave of ten. A
    /// rack refused for its own reason frees its slot for the next pending one. Answers whether
    /// the wave changed and the first error that is the system's: the racks it hit stay
    /// pending, and their keys keep the next step's retry from creating a second task.
    async fn submit_pending(
        &self,
        r: &mut Rollout,
        index: usize,
        statuses: &HashMap<TaskId, TaskStatus>,
    ) -> (bool, Option<Error>) {
        let limit = r.spec.strategy.max_concurrent_racks.unwrap_or(u32::MAX);
        let mut active = Counts::of(r.waves[index].racks.iter(), statuses).running;
        let description = format!("rollout {} — wave {}", r.spec.name, index + 1);
        let mut changed = false;
        loop {
            let free = limit.saturating_sub(active) as usize;
            let chosen: Vec<usize> = (r.waves[index].racks.iter().enumerate())
                .filter(|(_, rack)| rack.state == RackState::Pending)
                .map(|(i, _)| i)
                .take(free)
                .collect();
            if chosen.is_empty() {
                return (changed, None);
            }
            let mut submissions = Vec::with_capacity(chosen.len());
            for &i in &chosen {
                let rack_id = r.waves[index].racks[i].rack_id;
                let key = format!("rollout:{}:{rack_id}", r.id);
                let spec = task_spec(&r.spec, vec![rack_id], description.clone());
                submissions.push(async move { self.tasks.submit(&spec, Some(&key)).await });
            }
            let results: Vec<_> = futures::stream::iter(submissions)
                .buffered(SUBMIT_AT_ONCE)
                .collect()
                .await;
            let mut deferred = None;
            for (i, result) in chosen.into_iter().zip(results) {
                let rack = &mut r.waves[index].racks[i];
                match result {
                    Ok(submission) => match submission.task_ids.first() {
                        Some(task) => {
                            rack.state = RackState::Submitted;
                            rack.task_id = Some(*task);
                            active += 1;
                        }
                        None => {
                            rack.state = RackState::Refused;
                            rack.reason = Some("no task was created".into());
                        }
                    },
                    Err(e) => match refusal(&e) {
                        Some(reason) => {
                            rack.state = match r.spec.on_refused {
                                OnRefused::Skip => RackState::Skipped,
                                OnRefused::Fail => RackState::Refused,
                            };
                            rack.reason = Some(reason);
                        }
                        // Temporal or the database is away: keep what was done, retry later.
                        None => {
                            deferred.get_or_insert(e);
                            continue;
                        }
                    },
                }
                changed = true;
            }
            if deferred.is_some() {
                return (changed, deferred);
            }
        }
    }

    /// `advance` (submit and count), then, unless the wave is done, a long poll: reads the
    /// wave's counts at each end of a task in this process, and every `WAIT_EVERY` (for ends
    /// on other replicas), until the wave is done, `wait` passed, or a rack ended while others
    /// still wait to start (a `max_concurrent_racks` slot freed). A wave of running racks is
    /// so followed by one activity per `wait` or per wave end, answered as its last task ends,
    /// instead of one per rack that ends (each a round trip through Temporal). Only the first
    /// step submits, so a pause that arrives meanwhile starts no rack: the workflow's next
    /// step carries it. With `close`, a wave found done is closed here too ([`end_wave`]).
    ///
    /// [`end_wave`]: Self::end_wave
    pub async fn advance_waiting(&self, id: RolloutId, step: WaveStep) -> Result<WaveProgress> {
        let WaveStep {
            wave,
            submit,
            wait,
            approved,
            close,
        } = step;
        let mut ended = std::pin::pin!(crate::tasks::lifecycle::next_task_end());
        let (r, mut now) = self.advance(id, wave, submit, approved).await?;
        let deadline = tokio::time::Instant::now() + wait;
        while !now.done() && tokio::time::Instant::now() < deadline {
            tokio::select! {
                () = tokio::time::sleep(WAIT_EVERY) => {}
                () = &mut ended => {}
            }
            ended.set(crate::tasks::lifecycle::next_task_end());
            // Only the tasks' statuses change meanwhile: this step is the rollout row's writer
            // until it returns, so the row is not read again for each end.
            let statuses = rollout_task_statuses(&self.db, &r).await?;
            let next = counted(&r, wave as usize, &statuses);
            let freed = next != now && next.wave.pending > 0;
            now = next;
            if freed {
                break;
            }
        }
        if close && now.done() {
            return self.end_wave(id, wave).await;
        }
        Ok(now)
    }

    /// Validates each rack of the wave whose task succeeded against its component managers;
    /// a rack that does not validate clean counts as failed. Returns how many did not.
    pub async fn verify(&self, id: RolloutId, wave: u32, observer: &Observer) -> Result<u32> {
        let r = store::get(&self.db, id).await?;
        let Some(w) = r.waves.get(wave as usize) else {
            return Ok(0);
        };
        let statuses = task_statuses(&self.db, w.racks.iter().filter_map(|r| r.task_id)).await?;
        let mut findings = Vec::new();
        for rack in &w.racks {
            let succeeded = rack
                .task_id
                .and_then(|t| statuses.get(&t))
                .is_some_and(|s| *s == crate::tasks::TaskStatus::Succeeded);
            if !succeeded {
                continue;
            }
            let v = crate::drift::validate::validate_rack(&self.db, observer, rack.rack_id).await?;
            let s = v.summary;
            let diffs = s.missing + s.unexpected + s.mismatch + s.unreachable + s.rejected;
            if diffs > 0 {
                findings.push((
                    rack.rack_id,
                    format!(
                        "validation found {diffs} difference(s): {} missing, {} unexpected, {} mismatched, {} unreachable, {} rejected",
                        s.missing, s.unexpected, s.mismatch, s.unreachable, s.rejected
                    ),
                ));
            }
        }
        let failed = findings.len() as u32;
        self.mutate(id, |r| {
            for rack in r.waves[wave as usize].racks.iter_mut() {
                if let Some((_, reason)) = findings.iter().find(|(id, _)| *id == rack.rack_id) {
                    rack.verify_failed = true;
                    rack.reason = Some(reason.clone());
                }
            }
        })
        .await?;
        Ok(failed)
    }

    /// Closes a wave: failed when any of its racks failed. Answers the final counts.
    pub async fn end_wave(&self, id: RolloutId, wave: u32) -> Result<WaveProgress> {
        let r = store::get(&self.db, id).await?;
        let statuses = rollout_task_statuses(&self.db, &r).await?;
        let wave_counts = Counts::of(r.waves[wave as usize].racks.iter(), &statuses);
        let now = self.clock.now();
        let r = self
            .mutate(id, |r| {
                let w = &mut r.waves[wave as usize];
                w.status = if wave_counts.failed > 0 {
                    WaveStatus::Failed
                } else {
                    WaveStatus::Succeeded
                };
                w.finished_at = Some(now);
            })
            .await?;
        Ok(WaveProgress {
            wave: wave_counts,
            overall: Counts::of(r.racks(), &statuses),
            closed: true,
        })
    }

    /// Ends the rollout; racks never submitted and waves never started are marked not run.
    pub async fn end(&self, id: RolloutId, status: RolloutStatus, message: &str) -> Result<()> {
        let now = self.clock.now();
        self.mutate(id, |r| {
            for w in r.waves.iter_mut() {
                for rack in w.racks.iter_mut() {
                    if rack.state == RackState::Pending {
                        rack.state = RackState::NotRun;
                    }
                }
                if w.status == WaveStatus::Pending {
                    w.status = WaveStatus::NotRun;
                }
                if matches!(w.status, WaveStatus::Running | WaveStatus::Verifying) {
                    w.finished_at = Some(now);
                    w.status = WaveStatus::Failed;
                }
            }
            r.status = status;
            r.message = message.to_string();
            r.finished_at = Some(now);
        })
        .await
        .map(drop)
    }

    /// Cancels every task of the rollout that has not ended. Returns how many were asked to.
    pub async fn cancel_active(&self, id: RolloutId) -> Result<u32> {
        let r = store::get(&self.db, id).await?;
        let statuses = rollout_task_statuses(&self.db, &r).await?;
        let mut cancelled = 0;
        for (task, status) in statuses {
            if !status.is_terminal() {
                match self.tasks.cancel(task).await {
                    Ok(_) => cancelled += 1,
                    // Ended meanwhile: nothing to cancel.
                    Err(Error::Conflict { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(cancelled)
    }
}

/// The counts of wave `index` and of the whole rollout, from its tasks' statuses.
fn counted(r: &Rollout, index: usize, statuses: &HashMap<TaskId, TaskStatus>) -> WaveProgress {
    WaveProgress {
        wave: Counts::of(r.waves[index].racks.iter(), statuses),
        overall: Counts::of(r.racks(), statuses),
        closed: false,
    }
}
