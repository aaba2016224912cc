//! Following a task or a rollout live, for the API's event streams and the console's live
//! pages alike: a slot among `FLOW_MAX_EVENT_STREAMS` (or `429 too_many_streams`), then the
//! resource now and after every change the process's one watcher reports, ending when the
//! resource ends or the process starts shutting down (so no stream holds up a shutdown).

use axum::http::StatusCode;
use std::future::Future;

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

/// One item of a change stream.
pub(crate) enum Change<D> {
    /// The resource as it is now.
    Now(Box<D>),
    /// The process is shutting down: the stream ends here, before the resource does.
    ShuttingDown,
}

/// One item of a task's change stream.
pub(crate) type TaskChange = Change<TaskDoc>;

/// One item of a rollout's change stream: the rollout with its tasks' statuses.
pub(crate) type RolloutChange = Change<RolloutDoc>;

/// What one look found: the resource, and the keys to follow from now on (`None`: the same).
type Look<D> = (D, Option<Vec<Key>>);

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

/// The resource `load` finds now and after every change, ending after `ended` says it has
/// ended, after the first error, or when the process starts shutting down.
fn changes<D, L, F>(
    state: AppState,
    follow: Follow,
    load: L,
    ended: fn(&D) -> bool,
) -> impl Stream<Item = Result<Change<D>>>
where
    D: serde::Serialize,
    L: Fn(AppState) -> F,
    F: Future<Output = Result<Look<D>>>,
{
    let start = (Cursor::new(state, follow), load);
    futures::stream::unfold(start, move |(mut c, load)| async move {
        if c.done {
            return None;
        }
        loop {
            if !c.look_again().await {
                c.done = true;
                return Some((Ok(Change::ShuttingDown), (c, load)));
            }
            match load(c.state.clone()).await {
                Ok((doc, keys)) => {
                    if let Some(keys) = keys {
                        c.follow.watch(&keys);
                    }
                    if c.is_new(&doc) {
                        c.done = ended(&doc);
                        return Some((Ok(Change::Now(Box::new(doc))), (c, load)));
                    }
                }
                Err(e) => {
                    c.done = true;
                    return Some((Err(e), (c, load)));
                }
            }
        }
    })
}

/// The task now and after every change, ending after the task ends, after the first error,
/// or when the process starts shutting down.
pub(crate) fn task_changes(
    state: AppState,
    id: uuid::Uuid,
    follow: Follow,
) -> impl Stream<Item = Result<TaskChange>> {
    let load = move |state: AppState| async move {
        let doc = load_task(&state, id).await?;
        Result::Ok((doc, None))
    };
    changes(state, follow, load, has_ended)
}

/// The rollout now and after every change of it or one of its tasks, ending as
/// [`task_changes`] does.
pub(crate) fn rollout_changes(
    state: AppState,
    id: uuid::Uuid,
    follow: Follow,
) -> impl Stream<Item = Result<RolloutChange>> {
    let load = move |state: AppState| async move {
        let (doc, tasks) = load_rollout(&state, id).await?;
        // Its tasks appear wave by wave: follow each from when it exists.
        let mut keys = vec![Key::Rollout(id)];
        keys.extend(tasks.into_iter().map(Key::Task));
        Result::Ok((doc, Some(keys)))
    };
    changes(state, follow, load, RolloutDoc::ended)
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
