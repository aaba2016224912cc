//! Shared application state handed to every handler.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;

use crate::config::Config;

/// Where "now" comes from, so tests and replays can pin time.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Cheap-to-clone handle on everything a request needs.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

/// The state behind [`AppState`].
pub struct AppInner {
    pub db: DatabaseConnection,
    pub config: Config,
    pub clock: Arc<dyn Clock>,
}

impl AppState {
    pub fn new(db: DatabaseConnection, config: Config) -> Self {
        Self(Arc::new(AppInner { db, config, clock: Arc::new(SystemClock) }))
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.0.db
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.0.clock.now()
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("config", &self.0.config).finish_non_exhaustive()
    }
}
