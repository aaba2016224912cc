//! Following a task or a rollout live, for the API's event streams and the console's live
//! pages alike: a slot among `FLOW_MAX_EVENT_STREAMS` (or `429 too_many_streams`), then the
//! resource now and after every change the process's one watcher reports, ending when the
//! resource ends or the process starts shutting down (so no stream holds up a shutdown).

use axum::http::StatusCode;
use futures::Stream;

use super::problem::Problem;
use super::schema::rollout_view::RolloutDoc;
use super::schema::task::TaskDoc;
use super::tasks::{has_ended, load as load_task};
use crate::app::AppState;
use crate::app::streams::{Follow, Key, RETRY_AFTER_SECS, Wake};
use crate::auth::Identity;
use crate::error::{Code, Result};
use crate::rollouts::progress::rollout_task_statuses;
use crate::rollouts::store as rollout_store;

/// A stream slot for `identity` (anonymous without auth), following `keys`.
pub(crate) fn open(
    state: &AppState,
    identity: Option<&Identity>,
    keys: &[Key],
) -> std::result::Result<Follow, Problem> {
    let actor = identity.map_or("anonymous", |i| i.actor.as_str());
    state.streams().open(actor, keys).map_err(|refused| {
        Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            Code::TooManyStreams,
            refused.to_string(),
        )
        .retry_after(RETRY_AFTER_SECS)
    })
}

/// One item of a task's change stream.
pub(crate) enum TaskChange {
    /// The task as it is now.
    Task(Box<TaskDoc>),
    /// The process is shutting down: the stream ends here, before the task does.
    ShuttingDown,
}

/// One item of a rollout's change stream.
pub(crate) enum RolloutChange {
    /// The rollout (with its tasks' statuses) as it is now.
    Rollout(Box<RolloutDoc>),
    /// The process is shutting down: the stream ends here, before the rollout does.
    ShuttingDown,
}

/// Where a stream is: its slot, what it showed last, whether it is over.
struct Cursor {
    state: AppState,
    follow: Follow,
    draining: tokio::sync::watch::Receiver<bool>,
    seen: String,
    first: bool,
    done: bool,
}

impl Cursor {
    fn new(state: AppState, follow: Follow) -> Self {
        Self {
            draining: state.draining(),
            state,
            follow,
            seen: String::new(),
            first: true,
            done: false,
        }
    }

    /// Waits for the next look (none before the first); false when shutting down.
    async fn look_again(&mut self) -> bool {
        if std::mem::take(&mut self.first) {
            return true;
        }
        self.follow.next(&mut self.draining).await == Wake::Changed
    }

    /// Whether `doc` differs from what the stream last sent (and remembers it).
    fn is_new(&mut self, doc: &impl serde::Serialize) -> bool {
        let data = serde_json::to_string(doc).unwrap_or_default();
        if data == self.seen {
            return false;
        }
        self.seen = data;
        true
    }
}

/// The task now and after every change, ending after the task ends, after the first error,
/// or when the process starts shutting down.
pub(crate) fn task_changes(
    state: AppState,
    id: uuid::Uuid,
    follow: Follow,
) -> impl Stream<Item = Result<TaskChange>> {
    futures::stream::unfold(Cursor::new(state, follow), move |mut c| async move {
        if c.done {
            return None;
        }
        loop {
            if !c.look_again().await {
                c.done = true;
                return Some((Ok(TaskChange::ShuttingDown), c));
            }
            match load_task(&c.state, id).await {
                Ok(doc) if c.is_new(&doc) => {
                    c.done = has_ended(&doc);
                    return Some((Ok(TaskChange::Task(Box::new(doc))), c));
                }
                Ok(_) => {}
                Err(e) => {
                    c.done = true;
                    return Some((Err(e), c));
                }
            }
        }
    })
}

/// The rollout now and after every change of it or one of its tasks, ending as
/// [`task_changes`] does.
pub(crate) fn rollout_changes(
    state: AppState,
    id: uuid::Uuid,
    follow: Follow,
) -> impl Stream<Item = Result<RolloutChange>> {
    futures::stream::unfold(Cursor::new(state, follow), move |mut c| async move {
        if c.done {
            return None;
        }
        loop {
            if !c.look_again().await {
                c.done = true;
                return Some((Ok(RolloutChange::ShuttingDown), c));
            }
            match load_rollout(&c.state, id).await {
                Ok((doc, tasks)) => {
                    // Its tasks appear wave by wave: follow each from when it exists.
                    let mut keys = vec![Key::Rollout(id)];
                    keys.extend(tasks.into_iter().map(Key::Task));
                    c.follow.watch(&keys);
                    if c.is_new(&doc) {
                        c.done = doc.ended();
                        return Some((Ok(RolloutChange::Rollout(Box::new(doc))), c));
                    }
                }
                Err(e) => {
                    c.done = true;
                    return Some((Err(e), c));
                }
            }
        }
    })
}

/// The rollout with its tasks' live statuses, and those tasks' ids.
async fn load_rollout(state: &AppState, id: uuid::Uuid) -> Result<(RolloutDoc, Vec<uuid::Uuid>)> {
    let rollout = rollout_store::get(state.db(), id.into()).await?;
    let statuses = rollout_task_statuses(state.db(), &rollout).await?;
    let tasks = rollout
        .racks()
        .filter_map(|r| r.task_id)
        .map(uuid::Uuid::from)
        .collect();
    Ok((RolloutDoc::new(rollout, &statuses), tasks))
}
