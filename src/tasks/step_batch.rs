//! Step reports, coalesced: on PostgreSQL, reports that arrive while an earlier statement is in
//! flight share the next one.
//!
//! Every device step reports twice (it runs, it ended), so a hundred racks powering on send
//! thousands of one-row updates at once, each its own statement and commit. Each is a
//! compare-and-set (as SQLite's [`update_step`] is), so under load the waiting reports go
//! together in one `UPDATE … FROM UNNEST(…)`: one round trip and one commit for many steps. A lone report goes
//! at once, alone, with no added wait. A report is answered only once its statement has
//! committed. SQLite (one writer, in process) writes each report alone. Each statement records
//! how many reports it carried in the `flow_step_report_batch_size` histogram.
//!
//! [`update_step`]: super::steps::update_step

use std::collections::HashSet;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbBackend};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::model::StepUpdate;
use super::steps::{self, StepRow};
use crate::error::{Error, Result};

/// Most reports one statement carries.
const MAX_BATCH: usize = 256;

/// The coalesced compare-and-set: each given row changes only while its step is unfinished,
/// and the statement names the steps it changed. The power a report carries is recorded on its
/// component in the same statement, as a sighting (`drift::store` writes the same two columns).
///
/// The arrays reach `UNNEST` through a sub-select that is not flattened (`OFFSET 0`), so the
/// planner cannot see their length. Given the arrays themselves, it priced a custom plan for the
/// batch's own rows (usually one to three) below the prepared statement's generic plan (priced
/// for ten) and planned every execution afresh. Now both are priced alike, and PostgreSQL keeps
/// the generic plan after its first five executions per connection. Over 100-rack rollouts
/// (`pg_stat_statements`, 2026-12-06): about one plan per statement before, 96 plans for some
/// 3,500 statements after; 0.7–1.0 s of planning per rollout down to 0.04 s. The generic plan
/// executes about a quarter slower per statement, so the net is about 0.5 s less per rollout.
const UPDATE_STEPS_POSTGRES: &str = "\
WITH u AS (SELECT u.* FROM (SELECT $1::text[] AS status, $2::int4[] AS attempts, \
$3::text[] AS error, $4::text[] AS event, $5::timestamptz[] AS now, $6::timestamptz[] AS started, \
$7::timestamptz[] AS finished, $8::uuid[] AS task_id, $9::int4[] AS stage, \
$10::uuid[] AS component_id, $11::text[] AS power OFFSET 0) AS a, \
UNNEST(a.status, a.attempts, a.error, a.event, a.now, a.started, a.finished, a.task_id, a.stage, \
a.component_id, a.power) AS u(status, attempts, error, event, now, started, finished, task_id, \
stage, component_id, power)), \
seen AS (UPDATE components AS c SET power_state = u.power, last_seen_at = u.now FROM u \
WHERE c.id = u.component_id AND u.power IS NOT NULL AND c.deleted_at IS NULL) \
UPDATE task_steps AS s SET status = u.status, attempts = u.attempts, error = u.error, \
events = s.events || jsonb_build_array(u.event::jsonb), \
started_at = COALESCE(s.started_at, u.started), finished_at = COALESCE(u.finished, s.finished_at), \
updated_at = u.now FROM u \
WHERE s.task_id = u.task_id AND s.stage = u.stage AND s.component_id = u.component_id \
AND s.status NOT IN ('succeeded', 'failed', 'cancelled') \
RETURNING s.task_id, s.stage, s.component_id";

/// Which step a report is for.
type StepKey = (Uuid, i32, Uuid);

struct Pending {
    row: StepRow,
    reply: oneshot::Sender<Result<()>>,
}

impl Pending {
    fn key(&self) -> StepKey {
        (self.row.task_id, self.row.stage, self.row.component_id)
    }
}

/// The writer of step reports, batched on PostgreSQL.
pub(in crate::tasks) struct StepReports {
    db: DatabaseConnection,
    /// Started on first use, inside whatever runtime runs the activities.
    queue: OnceLock<mpsc::UnboundedSender<Pending>>,
}

impl StepReports {
    pub fn new(db: DatabaseConnection) -> Self {
        Self {
            db,
            queue: OnceLock::new(),
        }
    }

    /// Writes one report; answers once it is committed.
    pub async fn record(&self, update: &StepUpdate, now: DateTime<Utc>) -> Result<()> {
        let row = StepRow::of(update, now)?;
        if self.db.get_database_backend() != DbBackend::Postgres {
            return steps::update_step(&self.db, &row).await;
        }
        let (reply, answer) = oneshot::channel();
        if let Err(refused) = self.queue().send(Pending { row, reply }) {
            return alone(&self.db, &refused.0.row).await;
        }
        match answer.await {
            Ok(answer) => answer,
            // The shared statement failed: this report goes alone, to get its own error.
            Err(_) => alone(&self.db, &StepRow::of(update, now)?).await,
        }
    }

    fn queue(&self) -> &mpsc::UnboundedSender<Pending> {
        self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(dispatch(self.db.clone(), rx));
            tx
        })
    }
}

/// Takes reports off the queue one statement at a time: whatever queued meanwhile goes in the
/// next statement.
async fn dispatch(db: DatabaseConnection, mut queue: mpsc::UnboundedReceiver<Pending>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        for round in rounds(batch) {
            write(&db, round).await;
        }
    }
}

/// Splits a batch so that no step appears twice in one statement (PostgreSQL updates a row
/// once per statement, whatever joins to it): reports racing on one step go in successive
/// statements, in the order they arrived.
fn rounds(batch: Vec<Pending>) -> Vec<Vec<Pending>> {
    let mut rounds: Vec<(HashSet<StepKey>, Vec<Pending>)> = Vec::new();
    for pending in batch {
        let key = pending.key();
        // After the last round that already has this step: its reports keep their order.
        let after = rounds.iter().rposition(|(keys, _)| keys.contains(&key));
        let at = after.map_or(0, |i| i + 1);
        if at == rounds.len() {
            rounds.push((HashSet::new(), Vec::new()));
        }
        rounds[at].0.insert(key);
        rounds[at].1.push(pending);
    }
    rounds.into_iter().map(|(_, round)| round).collect()
}

/// Writes one round and answers its reports. A report whose step did not change is checked
/// alone (ended: fine; missing: `NotFound`). On a failed statement the replies are dropped and
/// each report goes alone, to get its own error — unless the database is out of reach: then all
/// hear so at once, rather than queue behind one another's connection timeouts.
async fn write(db: &DatabaseConnection, round: Vec<Pending>) {
    crate::telemetry::metrics::step_report_batch(round.len());
    let rows: Vec<&StepRow> = round.iter().map(|p| &p.row).collect();
    let changed = match update_many(db, &rows).await {
        Ok(changed) => changed,
        Err(error) if crate::db::is_outage(&error) => {
            for pending in round {
                let _ = pending.reply.send(Err(Error::Unavailable {
                    service: "database",
                    message: error.to_string(),
                }));
            }
            return;
        }
        Err(error) => {
            tracing::debug!(%error, "batched step reports failed; each goes alone");
            return;
        }
    };
    for pending in round {
        let answer = if changed.contains(&pending.key()) {
            Ok(())
        } else {
            steps::unchanged(db, &pending.row).await
        };
        let _ = pending.reply.send(answer);
    }
}

/// One report in a statement of its own (the queue is gone, or its shared statement failed).
async fn alone(db: &DatabaseConnection, row: &StepRow) -> Result<()> {
    if update_many(db, &[row]).await?.is_empty() {
        return steps::unchanged(db, row).await;
    }
    Ok(())
}

/// The rows of a round as one statement's arrays; the steps it changed.
async fn update_many(
    db: &DatabaseConnection,
    rows: &[&StepRow],
) -> std::result::Result<HashSet<StepKey>, sea_orm::DbErr> {
    let changed: Vec<StepKey> = sea_orm::sqlx::query_as(UPDATE_STEPS_POSTGRES)
        .bind(rows.iter().map(|r| r.status).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.attempts).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.error.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.event.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.now).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.started).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.finished).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.task_id).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.stage).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.component_id).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.power).collect::<Vec<_>>())
        .fetch_all(db.get_postgres_connection_pool())
        .await
        .map_err(crate::db::sqlx_error)?;
    Ok(changed.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(task: u128, stage: i32, component: u128) -> Pending {
        let (reply, _) = oneshot::channel();
        let row = StepRow {
            status: "running",
            attempts: 1,
            error: None,
            event: String::new(),
            now: Utc::now(),
            started: None,
            finished: None,
            task_id: Uuid::from_u128(task),
            stage,
            component_id: Uuid::from_u128(component),
            power: None,
        };
        Pending { row, reply }
    }

    #[test]
    fn reports_on_one_step_go_in_successive_rounds_in_their_order() {
        let batch = vec![
            pending(1, 1, 10),
            pending(1, 1, 11),
            pending(1, 1, 10),
            pending(2, 1, 10),
            pending(1, 1, 10),
        ];
        let rounds = rounds(batch);
        let keys: Vec<Vec<StepKey>> = rounds
            .iter()
            .map(|r| r.iter().map(Pending::key).collect())
            .collect();
        let (a, b, c) = (
            (Uuid::from_u128(1), 1, Uuid::from_u128(10)),
            (Uuid::from_u128(1), 1, Uuid::from_u128(11)),
            (Uuid::from_u128(2), 1, Uuid::from_u128(10)),
        );
        assert_eq!(keys, vec![vec![a, b, c], vec![a], vec![a]]);
    }
}
