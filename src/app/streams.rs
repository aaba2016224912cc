//! Event streams, bounded and fed together: a process holds at most `FLOW_MAX_EVENT_STREAMS`
//! open task and rollout streams (a tenth of that per identity), and one shared watcher looks
//! for changes of everything they follow with one statement per poll (the `watcher` module), so a
//! thousand open streams cost the database what one does.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use sea_orm::DatabaseConnection;
use tokio::sync::{broadcast, watch};

use crate::telemetry::metrics::METRICS;

/// `Retry-After` of a refused stream: streams end when what they follow ends, typically soon.
pub const RETRY_AFTER_SECS: u64 = 10;

/// What a stream follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Task(uuid::Uuid),
    Rollout(uuid::Uuid),
}

/// Why a stream was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The process holds `FLOW_MAX_EVENT_STREAMS` streams.
    Total(usize),
    /// This identity holds its share.
    Identity(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Total(n) => write!(
                f,
                "this server already serves {n} event streams (FLOW_MAX_EVENT_STREAMS); retry later"
            ),
            Self::Identity(n) => write!(
                f,
                "you already hold {n} open event streams, the most one identity may; close one or retry later"
            ),
        }
    }
}

/// The open streams, in all and per identity. Pure bookkeeping, so it is tested alone.
#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_actor: HashMap<String, usize>,
}

impl Open {
    fn try_open(&mut self, actor: &str, max: usize) -> Result<(), Refused> {
        let per_actor = (max / 10).max(1);
        let mine = self.by_actor.get(actor).copied().unwrap_or(0);
        if self.total >= max {
            return Err(Refused::Total(max));
        }
        if mine >= per_actor {
            return Err(Refused::Identity(per_actor));
        }
        self.total += 1;
        *self.by_actor.entry(actor.to_string()).or_default() += 1;
        Ok(())
    }

    fn close(&mut self, actor: &str) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.by_actor.get_mut(actor) {
            *n -= 1;
            if *n == 0 {
                self.by_actor.remove(actor);
            }
        }
    }
}

/// The process's streams: their count and what they follow.
#[derive(Clone)]
pub struct Streams(Arc<Inner>);

pub(super) struct Inner {
    pub(super) db: DatabaseConnection,
    max: usize,
    open: Mutex<Open>,
    /// How many open streams follow each key: the watcher's list.
    interest: Mutex<HashMap<Key, usize>>,
    /// Each poll that found changes sends the keys that changed.
    pub(super) changes: broadcast::Sender<Arc<HashSet<Key>>>,
    watcher: Once,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded maps stay consistent at every await-free step, so a poisoned lock is usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inner {
    /// Every key some open stream follows.
    pub(super) fn watched(&self) -> HashSet<Key> {
        lock(&self.interest).keys().copied().collect()
    }
}

/// What woke a following stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    /// Something it follows may have changed: look again.
    Changed,
    /// The process is shutting down: end the stream.
    ShuttingDown,
}

impl Streams {
    pub fn new(db: DatabaseConnection, max: usize) -> Self {
        Self(Arc::new(Inner {
            db,
            max,
            open: Mutex::default(),
            interest: Mutex::default(),
            changes: broadcast::channel(64).0,
            watcher: Once::new(),
        }))
    }

    /// A new stream for `actor` following `keys`, or why not. The slot is held until the
    /// returned [`Follow`] is dropped (the client went away or the stream ended).
    pub fn open(&self, actor: &str, keys: &[Key]) -> Result<Follow, Refused> {
        lock(&self.0.open).try_open(actor, self.0.max)?;
        METRICS.event_streams_open.inc();
        let inner = self.0.clone();
        // Started by the first stream, so a process nobody follows runs no watcher; it ends
        // when the application is dropped.
        self.0.watcher.call_once(|| {
            tokio::spawn(super::watcher::run(Arc::downgrade(&inner)));
        });
        let mut follow = Follow {
            rx: inner.changes.subscribe(),
            inner,
            actor: actor.to_string(),
            keys: HashSet::new(),
        };
        follow.watch(keys);
        Ok(follow)
    }

    /// Open streams in all.
    pub fn open_count(&self) -> usize {
        lock(&self.0.open).total
    }
}

/// One open stream: its slot and what it follows.
pub struct Follow {
    inner: Arc<Inner>,
    actor: String,
    keys: HashSet<Key>,
    rx: broadcast::Receiver<Arc<HashSet<Key>>>,
}

impl Follow {
    /// Follows `keys` from now on instead of what it followed (a rollout's tasks appear as its
    /// waves start).
    pub fn watch(&mut self, keys: &[Key]) {
        let new: HashSet<Key> = keys.iter().copied().collect();
        let mut interest = lock(&self.inner.interest);
        for key in new.difference(&self.keys) {
            *interest.entry(*key).or_default() += 1;
        }
        for key in self.keys.difference(&new) {
            release(&mut interest, key);
        }
        drop(interest);
        self.keys = new;
    }

    /// Waits until the watcher reports a change of something this stream follows, or the
    /// process starts shutting down.
    pub async fn next(&mut self, draining: &mut watch::Receiver<bool>) -> Wake {
        loop {
            tokio::select! {
                batch = self.rx.recv() => match batch {
                    Ok(changed) if changed.iter().any(|k| self.keys.contains(k)) => return Wake::Changed,
                    Ok(_) => {}
                    // Missed batches may have named ours: look again rather than miss a change.
                    Err(broadcast::error::RecvError::Lagged(_)) => return Wake::Changed,
                    Err(broadcast::error::RecvError::Closed) => return Wake::ShuttingDown,
                },
                _ = draining.wait_for(|d| *d) => return Wake::ShuttingDown,
            }
        }
    }
}

fn release(interest: &mut HashMap<Key, usize>, key: &Key) {
    if let Some(n) = interest.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            interest.remove(key);
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let mut interest = lock(&self.inner.interest);
        for key in &self.keys {
            release(&mut interest, key);
        }
        drop(interest);
        lock(&self.inner.open).close(&self.actor);
        METRICS.event_streams_open.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_identity_gets_a_tenth_of_the_streams_and_all_together_get_the_limit() {
        let mut open = Open::default();
        for _ in 0..10 {
            open.try_open("alice", 100).unwrap();
        }
        assert_eq!(open.try_open("alice", 100), Err(Refused::Identity(10)));
        for i in 0..90 {
            open.try_open(&format!("user-{}", i / 9), 100).unwrap();
        }
        assert_eq!(open.try_open("bob", 100), Err(Refused::Total(100)));
        open.close("alice");
        assert_eq!(open.try_open("bob", 100), Ok(()));
        assert_eq!(open.try_open("alice", 100), Err(Refused::Total(100)));
    }

    #[test]
    fn closing_every_stream_forgets_the_identity() {
        let mut open = Open::default();
        open.try_open("alice", 20).unwrap();
        open.try_open("alice", 20).unwrap();
        assert_eq!(open.try_open("alice", 20), Err(Refused::Identity(2)));
        open.close("alice");
        open.close("alice");
        assert_eq!(open.total, 0);
        assert!(open.by_actor.is_empty());
    }
}
