//! The one change watcher of a process: every poll, one statement reads the change markers of
//! every task and rollout some open stream follows (a task's own row and its steps' latest
//! update; a rollout's revision) and the keys whose marker moved go out to all streams at once.
//! The database stays the source of truth, so every replica serves every stream.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Func, JoinType, Query, SelectStatement, UnionType};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use tokio::time::MissedTickBehavior;

use super::streams::{Inner, Key};
use crate::db::entities::{rollouts, task_steps, tasks};
use crate::error::Result;
use crate::telemetry::metrics::METRICS;

/// How often the watcher looks (what each stream used to wait between its own looks).
pub const POLL: Duration = Duration::from_millis(500);

/// A row's change marker: it moves whenever what a stream shows of the row may have changed.
type Marker = (DateTime<Utc>, Option<DateTime<Utc>>, i64);

/// Polls until the application is gone.
pub(super) async fn run(inner: Weak<Inner>) {
    let mut last: HashMap<Key, Option<Marker>> = HashMap::new();
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let watched = inner.watched();
        last.retain(|key, _| watched.contains(key));
        if watched.is_empty() {
            continue;
        }
        match markers(&inner.db, &watched).await {
            Ok(now) => {
                let changed = moved(&mut last, &watched, &now);
                if !changed.is_empty() {
                    let _ = inner.changes.send(Arc::new(changed));
                }
            }
            // Streams keep waiting; the next poll tries again.
            Err(e) => tracing::warn!(error = %e, "event streams: looking for changes failed"),
        }
    }
}

/// The keys whose marker differs from the last one seen (a key seen first counts as moved).
fn moved(
    last: &mut HashMap<Key, Option<Marker>>,
    watched: &HashSet<Key>,
    now: &HashMap<uuid::Uuid, Marker>,
) -> HashSet<Key> {
    let mut changed = HashSet::new();
    for key in watched {
        let (Key::Task(id) | Key::Rollout(id)) = key;
        let marker = now.get(id).copied();
        if last.get(key) != Some(&marker) {
            last.insert(*key, marker);
            changed.insert(*key);
        }
    }
    changed
}

/// One statement for every followed task and rollout.
async fn markers(
    db: &DatabaseConnection,
    watched: &HashSet<Key>,
) -> Result<HashMap<uuid::Uuid, Marker>> {
    let task_ids: Vec<uuid::Uuid> = watched
        .iter()
        .filter_map(|k| match k {
            Key::Task(id) => Some(*id),
            Key::Rollout(_) => None,
        })
        .collect();
    let rollout_ids: Vec<uuid::Uuid> = watched
        .iter()
        .filter_map(|k| match k {
            Key::Rollout(id) => Some(*id),
            Key::Task(_) => None,
        })
        .collect();
    let statement = match (task_ids.is_empty(), rollout_ids.is_empty()) {
        (_, true) => task_markers(task_ids),
        (true, false) => rollout_markers(rollout_ids),
        (false, false) => task_markers(task_ids)
            .union(UnionType::All, rollout_markers(rollout_ids))
            .to_owned(),
    };
    METRICS.event_watch_queries.inc();
    let rows = db
        .query_all_raw(db.get_database_backend().build(&statement))
        .await?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let id: uuid::Uuid = row.try_get_by_index(0)?;
        let marker = (
            row.try_get_by_index(1)?,
            row.try_get_by_index(2)?,
            row.try_get_by_index(3)?,
        );
        out.insert(id, marker);
    }
    Ok(out)
}

/// Each task's own update time and its steps' latest.
fn task_markers(ids: Vec<uuid::Uuid>) -> SelectStatement {
    Query::select()
        .column((tasks::Entity, tasks::Column::Id))
        .column((tasks::Entity, tasks::Column::UpdatedAt))
        .expr(Func::max(Expr::col((
            task_steps::Entity,
            task_steps::Column::UpdatedAt,
        ))))
        .expr(Expr::val(0_i64))
        .from(tasks::Entity)
        .join(
            JoinType::LeftJoin,
            task_steps::Entity,
            Expr::col((task_steps::Entity, task_steps::Column::TaskId))
                .equals((tasks::Entity, tasks::Column::Id)),
        )
        .and_where(Expr::col((tasks::Entity, tasks::Column::Id)).is_in(ids))
        .group_by_col((tasks::Entity, tasks::Column::Id))
        .group_by_col((tasks::Entity, tasks::Column::UpdatedAt))
        .to_owned()
}

/// Each rollout's revision (every write bumps it).
fn rollout_markers(ids: Vec<uuid::Uuid>) -> SelectStatement {
    Query::select()
        .column((rollouts::Entity, rollouts::Column::Id))
        .column((rollouts::Entity, rollouts::Column::UpdatedAt))
        .column((rollouts::Entity, rollouts::Column::UpdatedAt))
        .column((rollouts::Entity, rollouts::Column::Revision))
        .from(rollouts::Entity)
        .and_where(Expr::col((rollouts::Entity, rollouts::Column::Id)).is_in(ids))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_seen_first_or_moved_or_gone_is_reported_once() {
        let a = uuid::Uuid::from_u128(1);
        let b = uuid::Uuid::from_u128(2);
        let watched: HashSet<Key> = [Key::Task(a), Key::Rollout(b)].into();
        let t = DateTime::<Utc>::UNIX_EPOCH;
        let mut last = HashMap::new();
        let mut now = HashMap::from([(a, (t, None, 0)), (b, (t, Some(t), 1))]);
        assert_eq!(moved(&mut last, &watched, &now), watched);
        assert!(moved(&mut last, &watched, &now).is_empty());
        now.insert(b, (t, Some(t), 2));
        assert_eq!(
            moved(&mut last, &watched, &now),
            HashSet::from([Key::Rollout(b)])
        );
        now.remove(&a);
        assert_eq!(
            moved(&mut last, &watched, &now),
            HashSet::from([Key::Task(a)])
        );
    }
}
