//! The background sampler of the gauges read from the database (tasks not yet ended, recorded
//! drift, components in maintenance): one round every `FLOW_METRICS_SAMPLE_SECS`, so a scrape of `/metrics` — public by
//! default — costs the database nothing however often it comes. Every replica reads the same
//! database, so each reports the same truth.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio::sync::OnceCell;
use tokio::time::MissedTickBehavior;

use crate::drift::DiffKind;
use crate::tasks::maintenance::Labels;
use crate::tasks::model::TaskStatus;
use crate::telemetry::metrics::{self, METRICS};

/// Refreshes the database-backed gauges in the background once started.
#[derive(Clone)]
pub struct Sampler(Arc<Inner>);

struct Inner {
    db: DatabaseConnection,
    interval: Duration,
    started: OnceCell<()>,
    /// The maintenance series this sampler set last round: removed when their task ends. Only
    /// its own, so samplers of several applications in one process (tests) leave each other's.
    maintenance: Mutex<HashSet<Labels>>,
}

impl Sampler {
    pub fn new(db: DatabaseConnection, interval: Duration) -> Self {
        Self(Arc::new(Inner {
            db,
            interval,
            started: OnceCell::new(),
            maintenance: Mutex::new(HashSet::new()),
        }))
    }

    /// Starts the sampler unless it runs: the first call waits for the first round (so the
    /// first scrape already shows values), every later one returns at once.
    pub async fn ensure_started(&self) {
        self.0
            .started
            .get_or_init(|| async {
                sample(&self.0).await;
                tokio::spawn(run(Arc::downgrade(&self.0)));
            })
            .await;
    }
}

/// A round every interval until the application is gone.
async fn run(inner: Weak<Inner>) {
    let Some(interval) = inner.upgrade().map(|i| i.interval) else {
        return;
    };
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first tick is immediate, and `ensure_started` has just sampled.
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        sample(&inner).await;
    }
}

/// One round. A failed read keeps the last values (and is logged): scrapes still work.
async fn sample(inner: &Inner) {
    let db = &inner.db;
    match crate::tasks::maintenance::labels(db).await {
        Ok(now) => mark_maintenance(inner, now.into_iter().collect()),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: reading the components in maintenance failed")
        }
    }
    let active = [
        TaskStatus::Waiting,
        TaskStatus::Pending,
        TaskStatus::Running,
    ];
    match crate::tasks::store::count_by_status(db, &active).await {
        Ok(counts) => {
            let known: Vec<&str> = active.iter().map(|s| s.as_str()).collect();
            metrics::set_gauges(&METRICS.tasks_active, &known, &counts);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: counting active tasks failed"),
    }
    match crate::drift::store::count_by_kind(db).await {
        Ok(counts) => {
            let known = [
                DiffKind::Missing,
                DiffKind::Unexpected,
                DiffKind::Mismatch,
                DiffKind::Unreachable,
                DiffKind::Rejected,
                DiffKind::DomainMixed,
            ]
            .map(DiffKind::as_str);
            metrics::set_gauges(&METRICS.drift_components, &known, &counts);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: counting drift failed"),
    }
}

/// Sets `flow_component_in_maintenance` to 1 for each component in `now`, and removes the series
/// of those that were in the last round but are no longer.
fn mark_maintenance(inner: &Inner, now: HashSet<Labels>) {
    let family = &METRICS.component_in_maintenance;
    let Ok(mut last) = inner.maintenance.lock() else {
        return;
    };
    for gone in last.difference(&now) {
        let _ = family.remove_label_values(&gone.values());
    }
    for labels in &now {
        family.with_label_values(&labels.values()).set(1);
    }
    *last = now;
}
