//! A connection kept across statements by a batcher that sends its statements one after
//! another (the lookup batcher's lanes).
//!
//! The pool hands out its idle connections in turn, so statements taken from it one after
//! another land on a different PostgreSQL backend each time, none of them warm in the CPU's
//! caches. Kept, every statement goes to the same backend. Measured on two cores (2026-12-08,
//! lookups alternating, the pool first filled with idle connections): 14–17.5k lookups/s
//! taking each statement's connection from the pool, 17–21k keeping it; PostgreSQL spent 41–44
//! µs of CPU per lookup against 27–30.

use std::time::Duration;

use sea_orm::DbErr;
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::postgres::{PgConnection, PgPool, Postgres};

/// How long a batcher keeps its connection once nothing comes: then it goes back to the pool.
/// (The step-report batcher, tried the same way, showed no difference in PostgreSQL's CPU over
/// 100-rack rollouts, 2026-12-08, and takes its connections from the pool.)
pub const KEEP: Duration = Duration::from_secs(1);

/// A connection taken from the pool on first use and kept until [`Kept::release`].
#[derive(Default)]
pub struct Kept {
    conn: Option<PoolConnection<Postgres>>,
}

impl Kept {
    /// The kept connection, or one from the pool (kept from now on).
    pub async fn get(&mut self, pool: &PgPool) -> Result<&mut PgConnection, DbErr> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => pool.acquire().await.map_err(super::sqlx_error)?,
        };
        Ok(&mut **self.conn.insert(conn))
    }

    /// Whether a connection is kept.
    pub fn holds(&self) -> bool {
        self.conn.is_some()
    }

    /// Gives the connection back to the pool.
    pub fn release(&mut self) {
        self.conn = None;
    }

    /// After a failed statement: the connection is closed rather than kept or pooled again.
    pub fn discard(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.close_on_drop();
        }
    }
}
