//! Firing a schedule: claim the fire once across processes, then submit one task per rack and
//! record what each submission did.

use chrono::{DateTime, SecondsFormat, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::model::{OverlapPolicy, RackOutcome, RackResult, Run, RunTrigger, Schedule};
use super::service::{ScheduleService, refuse_consumed};
use super::store;
use crate::error::{Code, Error, Result};
use crate::ids::{RackId, ScheduleId, TaskId};
use crate::tasks::TaskStatus;
use crate::tasks::submission::blast;

/// The name each fired task carries: `<schedule> — <fire time>`.
fn task_description(schedule: &Schedule, fired_at: DateTime<Utc>) -> String {
    format!(
        "{} — {}",
        schedule.name,
        fired_at.to_rfc3339_opts(SecondsFormat::Secs, true)
    )
}

impl ScheduleService {
    /// Fires now, whatever the timer says (also when paused): a recurring schedule keeps its
    /// next fire time, a one-time schedule is consumed. The overlap policy applies as usual.
    pub async fn trigger(&self, id: ScheduleId) -> Result<Run> {
        for _ in 0..5 {
            let schedule = store::get(&self.db, id).await?;
            refuse_consumed(&schedule)?;
            let now = self.clock.now();
            let mut next = schedule.clone();
            next.last_run_at = Some(now);
            next.updated_at = now;
            if schedule.timer.kind == super::model::SpecKind::OneTime {
                next.next_run_at = None;
                next.enabled = false;
            }
            if let Some(run) = self.claim(&schedule, next, RunTrigger::Manual, now).await? {
                return self.submit_run(&schedule, run).await;
            }
        }
        Err(Error::conflict(
            Code::ScheduleBusy,
            format!("schedule {id} kept changing; retry"),
        ))
    }

    /// Writes `next` over `current` if `current` is still what is stored, and records the run
    /// with the overlap check's verdict for each rack, all in one transaction. Only the caller
    /// whose write lands gets the run: that is what makes a fire happen once across processes.
    pub(super) async fn claim(
        &self,
        current: &Schedule,
        next: Schedule,
        trigger: RunTrigger,
        now: DateTime<Utc>,
    ) -> Result<Option<Run>> {
        let txn = crate::db::begin_write(&self.db).await?;
        if !store::update(&txn, &next).await? {
            return Ok(None);
        }
        // Domain racks are whatever the domain holds now, not when the schedule was made.
        super::domains::follow(&txn, current.id, now).await?;
        let mut results = Vec::new();
        for scope in store::scopes(&txn, current.id).await? {
            let outcome = match (current.overlap, scope.last_task_id) {
                (OverlapPolicy::Skip, Some(task)) => match still_active(&txn, task).await? {
                    Some(status) => RackOutcome::Skipped {
                        reason: format!("the previous task {task} is still {}", status.as_str()),
                    },
                    None => RackOutcome::Pending,
                },
                _ => RackOutcome::Pending,
            };
            results.push(RackResult {
                rack_id: scope.rack_id,
                outcome,
            });
        }
        let run = Run {
            id: Uuid::now_v7(),
            schedule_id: current.id,
            trigger,
            fired_at: now,
            done: false,
            results,
            finished_at: None,
        };
        store::insert_run(&txn, &run).await?;
        let fired =
            serde_json::json!({"run_id": run.id, "fired_at": now, "racks": run.results.len()});
        let change = crate::audit::Change::new("schedule", current.id).after(Some(fired));
        crate::audit::record(&txn, change, now).await?;
        txn.commit().await?;
        Ok(Some(run))
    }

    /// Submits the run's pending racks, one task each, and records every outcome. Each rack's
    /// submission carries an idempotency key derived from the run, so finishing a run that a
    /// dead process left half done never creates a second task for a rack.
    pub(super) async fn submit_run(&self, schedule: &Schedule, mut run: Run) -> Result<Run> {
        let scopes = store::scopes(&self.db, schedule.id).await?;
        let description = task_description(schedule, run.fired_at);
        self.refuse_over_cap(&mut run);
        // The schedule's racks together may cover an NVLink domain whole even though each is
        // submitted alone: those go with `allow_split_domain` (the others meet the domain rule).
        let all: Vec<RackId> = run.results.iter().map(|r| r.rack_id).collect();
        let whole = crate::tasks::submission::domain_split::covered_whole(&self.db, &all).await?;
        for result in run.results.iter_mut() {
            if result.outcome != RackOutcome::Pending {
                continue;
            }
            let types = scopes
                .iter()
                .find(|s| s.rack_id == result.rack_id)
                .map(|s| s.component_types.clone())
                .unwrap_or_default();
            let spec = schedule.template.spec_for(
                description.clone(),
                schedule.overlap.conflict_strategy(),
                result.rack_id,
                &types,
            );
            let mut spec = spec;
            spec.allow_split_domain = whole.contains(&result.rack_id);
            let key = format!("schedule-run:{}:{}", run.id, result.rack_id);
            result.outcome = match self.tasks.submit(&spec, Some(&key)).await {
                Ok(submission) => match submission.task_ids.first() {
                    Some(task) => {
                        store::set_last_task(&self.db, schedule.id, result.rack_id, *task).await?;
                        RackOutcome::Created { task_id: (*task) }
                    }
                    None => RackOutcome::Failed {
                        error: "no task was created".into(),
                    },
                },
                Err(Error::Conflict {
                    code: Code::RackBusy,
                    errors,
                    message,
                }) if schedule.overlap == OverlapPolicy::Skip => RackOutcome::Skipped {
                    reason: errors.first().map(|e| e.message.clone()).unwrap_or(message),
                },
                Err(e @ (Error::Db(_) | Error::Unavailable { .. })) => {
                    // Leave the rack pending: the run is finished later by recovery.
                    tracing::warn!(schedule = %schedule.id, rack = %result.rack_id, error = %e, "scheduled submission failed; will retry");
                    crate::telemetry::metrics::schedule_fired("deferred");
                    continue;
                }
                Err(e) => RackOutcome::Failed {
                    error: problem_text(&e),
                },
            };
            crate::telemetry::metrics::schedule_fired(match result.outcome {
                RackOutcome::Created { .. } => "created",
                RackOutcome::Skipped { .. } => "skipped",
                RackOutcome::Failed { .. } => "failed",
                RackOutcome::Pending => "pending",
            });
        }
        run.done = run
            .results
            .iter()
            .all(|r| r.outcome != RackOutcome::Pending);
        if run.done {
            run.finished_at = Some(self.clock.now());
        }
        store::save_run(&self.db, &run).await?;
        Ok(run)
    }
}

impl ScheduleService {
    /// A fire whose pending racks are more than the schedule's role may touch in one request
    /// (the scope grew, or the cap shrank, since it was created) submits none of them: each is
    /// recorded failed with the `blast_radius` refusal.
    fn refuse_over_cap(&self, run: &mut Run) {
        let pending = run
            .results
            .iter()
            .filter(|r| r.outcome == RackOutcome::Pending)
            .count();
        let radius = self.radius(pending);
        let Err(e) = blast::check(radius, "this fire", "scope") else {
            return;
        };
        let error = format!("{}: {e}", Code::BlastRadius);
        tracing::warn!(schedule = %run.schedule_id, racks = pending, "schedule fire refused: over its blast-radius cap");
        for result in run
            .results
            .iter_mut()
            .filter(|r| r.outcome == RackOutcome::Pending)
        {
            result.outcome = RackOutcome::Failed {
                error: error.clone(),
            };
            crate::telemetry::metrics::schedule_fired("failed");
        }
    }
}

/// A submission error as one line, with the fields it names.
fn problem_text(e: &Error) -> String {
    match e {
        Error::Invalid(errors)
        | Error::Conflict { errors, .. }
        | Error::Unprocessable { errors, .. }
        | Error::Forbidden { errors, .. }
            if !errors.is_empty() =>
        {
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        }
        other => other.to_string(),
    }
}

/// The task's status when it still holds or waits for its rack.
async fn still_active(db: &impl ConnectionTrait, task: TaskId) -> Result<Option<TaskStatus>> {
    match crate::tasks::store::get(db, task).await {
        Ok(t) if !t.status.is_terminal() => Ok(Some(t.status)),
        Ok(_) | Err(Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
