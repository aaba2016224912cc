//! The dispatcher every Flow process runs: fires due schedules and finishes runs a dead process
//! left half done.
//!
//! Exactly-once comes from the database, not from running a single dispatcher: each process
//! reads the due schedules, and for each one writes the advanced schedule (next fire computed
//! from now, last fire = now) together with the run record in one transaction, on condition
//! that the schedule's revision is still the one it read. Only the process whose conditional
//! write lands submits that fire; the others see zero rows changed and move on. A fire missed
//! while every process was down is therefore taken once, by whoever comes up first, and the
//! following fire is counted from then: no burst of catch-up fires.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::model::{RunTrigger, Schedule};
use super::service::ScheduleService;
use super::store;
use super::timing::Timer;
use crate::audit;
use crate::db::lease;
use crate::error::Result;

/// Most schedules fired per tick; the rest wait for the next tick.
const BATCH: u64 = 10;
/// A run still submitting after this long lost its process; another one finishes it.
const STALL_AFTER: chrono::Duration = chrono::Duration::minutes(2);
const RECOVERY_LEASE: &str = "schedule-run-recovery";

impl ScheduleService {
    /// Fires every schedule due at this moment that this process wins. Returns how many fired.
    pub async fn tick(&self) -> Result<usize> {
        let now = self.clock.now();
        let mut fired = 0;
        for schedule in store::due(&self.db, now, BATCH).await? {
            // The schedule acts on its own: its audit entries and tasks say `schedule:<name>`.
            let actor = Arc::new(audit::Context::schedule(&schedule.name, "fire"));
            match audit::scope(actor, self.fire_due(&schedule, now)).await {
                Ok(true) => fired += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(schedule = %schedule.id, error = %e, "firing a schedule failed")
                }
            }
        }
        Ok(fired)
    }

    async fn fire_due(&self, schedule: &Schedule, now: DateTime<Utc>) -> Result<bool> {
        let mut next = schedule.clone();
        next.last_run_at = Some(now);
        next.updated_at = now;
        match Timer::parse(&schedule.timer) {
            Ok(timer) => {
                let due = schedule.next_run_at.unwrap_or(now);
                next.next_run_at = timer.next_due(due, now);
            }
            Err(e) => {
                // Cannot happen for specs checked on write; never spin on it.
                tracing::error!(schedule = %schedule.id, error = %e, "stored spec unreadable; pausing the schedule");
                next.next_run_at = None;
            }
        }
        if next.next_run_at.is_none() {
            next.enabled = false;
        }
        let Some(run) = self
            .claim(schedule, next, RunTrigger::Schedule, now)
            .await?
        else {
            return Ok(false);
        };
        let run = self.submit_run(schedule, run).await?;
        tracing::info!(schedule = %schedule.name, run = %run.id, tasks = run.task_ids().len(), "schedule fired");
        Ok(true)
    }

    /// Finishes runs whose process died between claiming and submitting, if this process holds
    /// the recovery lease. The runs' idempotency keys keep already created tasks from doubling.
    pub async fn recover(&self, holder: &str) -> Result<usize> {
        let now = self.clock.now();
        if !lease::acquire(
            &self.db,
            RECOVERY_LEASE,
            holder,
            chrono::Duration::seconds(60),
            now,
        )
        .await?
        {
            return Ok(0);
        }
        let mut finished = 0;
        for run in store::stalled_runs(&self.db, now - STALL_AFTER).await? {
            let schedule = store::get(&self.db, run.schedule_id).await?;
            let actor = Arc::new(audit::Context::schedule(&schedule.name, "recover"));
            if audit::scope(actor, self.submit_run(&schedule, run))
                .await?
                .done
            {
                finished += 1;
            }
        }
        Ok(finished)
    }

    /// Gives up the recovery lease (on shutdown).
    pub async fn release(&self, holder: &str) -> Result<()> {
        lease::release(&self.db, RECOVERY_LEASE, holder).await
    }
}

/// Ticks every `interval` until the process ends; errors are logged and retried next tick.
pub async fn dispatch_loop(schedules: Arc<ScheduleService>, holder: String, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u64 = 0;
    loop {
        ticker.tick().await;
        if let Err(e) = schedules.tick().await {
            tracing::warn!(error = %e, "schedule dispatch failed; retrying next tick");
        }
        // Recovery is rare work: look about every 30 ticks.
        if ticks.is_multiple_of(30)
            && let Err(e) = schedules.recover(&holder).await
        {
            tracing::warn!(error = %e, "schedule run recovery failed");
        }
        ticks += 1;
    }
}
