//! The periodic drift sync: walk the inventory page by page recording observed values, then in
//! one transaction replace each answering source's drift and keep a silent source's (stale). A
//! database lease makes it run in one Flow process at a time, however many run the loop.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{DatabaseConnection, DatabaseTransaction};

use super::observe::Observer;
use super::store;
use super::walk::{PAGE, Walk};
use crate::clock::Clock;
use crate::db;
use crate::db::lease;
use crate::error::Result;

/// The lease every process running the sync competes for.
pub const LEASE: &str = "drift-sync";

/// What one call of [`DriftSync::run_once`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncRun {
    /// Another process holds the lease: it syncs, this one does not.
    Skipped,
    Ran {
        /// Sources that answered, and those that did not (their drift was kept, stale).
        answered: Vec<String>,
        unreachable: Vec<String>,
        /// Drift rows written for the sources that answered.
        drift: usize,
    },
}

/// Runs drift syncs against one database with one set of managers.
pub struct DriftSync {
    db: DatabaseConnection,
    observer: Observer,
    clock: Arc<dyn Clock>,
    /// How long a holder keeps the lease without renewing it.
    lease_ttl: Duration,
    /// Expected devices compared (and their sightings written) per round.
    page: u64,
}

impl DriftSync {
    pub fn new(
        db: DatabaseConnection,
        observer: Observer,
        clock: Arc<dyn Clock>,
        lease_ttl: Duration,
    ) -> Self {
        Self {
            db,
            observer,
            clock,
            lease_ttl,
            page: PAGE,
        }
    }

    /// Walks the inventory `page` devices at a time instead of [`PAGE`].
    pub fn with_page(mut self, page: u64) -> Self {
        self.page = page;
        self
    }

    fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.lease_ttl).unwrap_or_else(|_| chrono::Duration::minutes(5))
    }

    /// One sync, if `holder` gets (or already has) the lease. Observed values are written a
    /// page at a time, each in a short transaction that renews the lease; drift is replaced at
    /// the end, per source, in one transaction. A holder whose lease lapsed (and was taken over)
    /// stops at its next write, so two processes never both record a cycle.
    pub async fn run_once(&self, holder: &str) -> Result<SyncRun> {
        if !lease::acquire(&self.db, LEASE, holder, self.ttl(), self.clock.now()).await? {
            return Ok(SyncRun::Skipped);
        }
        let mut walk = Walk::start(&self.db, &self.observer, self.page).await;
        // Components whose reported external id another one holds: each is reported as its
        // own `rejected` drift row while every other sighting is recorded.
        let mut clashes = Vec::new();
        while let Some(sightings) = walk.next_page().await? {
            if sightings.is_empty() {
                continue;
            }
            let now = self.clock.now();
            let Some(txn) = self.write_holding(holder, now).await? else {
                return Ok(SyncRun::Skipped);
            };
            clashes.extend(super::sightings::record_sightings(&txn, &sightings, now).await?);
            txn.commit().await?;
        }
        let outcome = walk.finish();
        let now = self.clock.now();
        let Some(txn) = self.write_holding(holder, now).await? else {
            return Ok(SyncRun::Skipped);
        };
        let (mut answered, mut unreachable, mut drift) = (Vec::new(), Vec::new(), 0);
        for mut source in outcome.sources {
            match &source.error {
                None => {
                    for clash in clashes.iter().filter(|c| c.kind == source.kind) {
                        tracing::warn!(source = %source.source, error = %clash.error(), "drift sync: external id clash");
                        source.diffs.push(clash.diff());
                    }
                    store::replace_source(&txn, &source.source, &source.diffs, now).await?;
                    drift += source.diffs.len();
                    answered.push(source.source);
                }
                Some(error) => {
                    tracing::warn!(source = %source.source, %error, "drift sync: source did not answer; keeping its previous drift");
                    store::mark_unreachable(
                        &txn,
                        &source.source,
                        source.kind,
                        &error.to_string(),
                        now,
                    )
                    .await?;
                    unreachable.push(source.source);
                }
            }
        }
        // Domain consistency from the observed versions just recorded: replaced every cycle.
        let mixes = super::domains::mixed(&txn, None, &Default::default()).await?;
        let mixed: Vec<_> = mixes.iter().map(super::domains::DomainMix::diff).collect();
        store::replace_source(&txn, super::domains::SOURCE, &mixed, now).await?;
        drift += mixed.len();
        let mut sources = self.observer.sources();
        sources.push(super::domains::SOURCE.to_string());
        store::keep_only_sources(&txn, &sources).await?;
        txn.commit().await?;
        Ok(SyncRun::Ran {
            answered,
            unreachable,
            drift,
        })
    }

    /// A write transaction in which `holder` has renewed the lease, or `None` when the lease
    /// lapsed and another process took it (then nothing may be written).
    async fn write_holding(
        &self,
        holder: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<DatabaseTransaction>> {
        let txn = db::begin_write(&self.db).await?;
        if lease::acquire(&txn, LEASE, holder, self.ttl(), now).await? {
            Ok(Some(txn))
        } else {
            txn.rollback().await?;
            Ok(None)
        }
    }

    /// Gives the lease up (shutdown), so another process takes over at its next tick.
    pub async fn release(&self, holder: &str) -> Result<()> {
        lease::release(&self.db, LEASE, holder).await
    }
}

/// Syncs every `interval` until the process ends; errors are logged and retried next tick.
pub async fn sync_loop(sync: Arc<DriftSync>, holder: String, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticker.tick().await;
        // The cycle's duration is logged for operators and read by `scripts/bench --scale`.
        let started = std::time::Instant::now();
        match sync.run_once(&holder).await {
            Ok(SyncRun::Ran {
                answered,
                unreachable,
                drift,
            }) => tracing::info!(
                ?answered,
                ?unreachable,
                drift,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "drift sync done"
            ),
            Ok(SyncRun::Skipped) => {}
            Err(e) => tracing::warn!(error = %e, "drift sync failed; retrying next tick"),
        }
    }
}
